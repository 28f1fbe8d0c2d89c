"""AMaze dynamics and observations against hand-worked MiniGrid behaviour."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.envs.maze import AMaze, Level, MazeParams
from minimax.envs.maze.env import DONE, DROP, FORWARD, LEFT, PICKUP, RIGHT, TOGGLE

ENV = AMaze()

# y\x 0 1 2 3 4 5
LEVEL_TEXT = """
agent_dir: 0
..#...
.A..#.
...G..
#.....
...#..
"""
LEVEL = Level.from_text(LEVEL_TEXT)
PARAMS = MazeParams(height=5, width=6, max_steps=20)

step = jax.jit(ENV.step)
reset = jax.jit(ENV.reset_to_level)


def run(level, actions, params=PARAMS):
    """Play actions from the level's start; return per-step (pos, dir, reward, done, info)."""
    _, state = reset(None, level, params)
    out = []
    for a in actions:
        _, state, reward, done, info = step(None, state, a, params)
        out.append((tuple(np.asarray(state.agent_pos)), int(state.agent_dir), float(reward), bool(done),
                    {k: bool(v) for k, v in info.items()}))
    return out


def test_turns_moves_walls_and_goal_reward():
    trace = run(LEVEL, [FORWARD, FORWARD, FORWARD, RIGHT, FORWARD])
    assert [t[0] for t in trace] == [(2, 1), (3, 1), (3, 1), (3, 1), (3, 1)]  # (4,1) is a wall
    assert [t[1] for t in trace] == [0, 0, 0, 1, 1]
    assert [t[3] for t in trace] == [False] * 4 + [True]
    # Fifth step (t = 4 before it) steps into the goal: reward 1 - 0.9 * 5 / 20, position unchanged.
    assert trace[-1][2] == pytest.approx(1 - 0.9 * 5 / 20, abs=1e-6)  # float32
    assert trace[-1][4] == {"terminated": True, "truncated": False, "solved": True}
    assert all(t[2] == 0.0 for t in trace[:-1])


def test_rotation_cycle_and_noop_actions():
    trace = run(LEVEL, [LEFT, LEFT, LEFT, LEFT, RIGHT, RIGHT, PICKUP, DROP, TOGGLE, DONE])
    assert [t[1] for t in trace] == [3, 2, 1, 0, 1, 2, 2, 2, 2, 2]
    assert all(t[0] == (1, 1) and t[2] == 0.0 and not t[3] for t in trace)


def test_borders_block_like_walls():
    # Facing up at (1,1): (1,0) is free, then the implicit outer wall.
    trace = run(LEVEL, [LEFT, FORWARD, FORWARD, LEFT, FORWARD, FORWARD])
    assert [t[0] for t in trace] == [(1, 1), (1, 0), (1, 0), (1, 0), (0, 0), (0, 0)]


def test_time_limit_truncates_and_goal_on_last_step_still_pays():
    params = MazeParams(height=5, width=6, max_steps=4)
    trace = run(LEVEL, [LEFT] * 4, params)
    assert [t[3] for t in trace] == [False, False, False, True]
    assert trace[-1][2] == 0.0 and trace[-1][4] == {"terminated": False, "truncated": True, "solved": False}
    # Reach the goal on exactly the 4th step: down, forward, forward (to (1,2)? no): use a level
    # where the goal is 3 forwards away: agent (1,1) facing right, goal at (3,1) after 1 move.
    near = Level.create(np.asarray(LEVEL.wall_map), goal_pos=(3, 1), agent_pos=(1, 1), agent_dir=0)
    trace = run(near, [LEFT, RIGHT, FORWARD, FORWARD], params)
    assert trace[-1][3] and trace[-1][4] == {"terminated": True, "truncated": False, "solved": True}
    assert trace[-1][2] == pytest.approx(1 - 0.9 * 4 / 4, abs=1e-6)  # float32 0.1: 2e-7 relative off


def _image(rows):
    """Object-index view from characters: '#' wall, '.' empty, 'G' goal, '?' unseen."""
    obj = {"#": 2, ".": 1, "G": 8, "?": 0}
    col = {"#": 5, ".": 0, "G": 1, "?": 0}
    return np.array([[[obj[c], col[c], 0] for c in row] for row in rows], dtype=np.uint8)


# Written out by hand from MiniGrid's gen_obs_grid (slice, rotate_left dir+1 times) for the
# agent at (1,1) of LEVEL: row 0 is 4 cells ahead, the agent sits at row 4, column 2.
EXPECTED_VIEWS = {
    0: ["#....", "#.#..", "#..G.", "##...", "#...."],
    1: ["#####", "#...#", "...##", "G...#", "....#"],
    2: ["#####", "#####", "#####", "#...#", "....#"],
    3: ["#####", "#####", "#####", "#..#.", "#...."],
}


@pytest.mark.parametrize("direction", [0, 1, 2, 3])
def test_egocentric_view_each_direction(direction):
    level = LEVEL.replace(agent_dir=jnp.int32(direction))
    obs, _ = reset(None, level, PARAMS)
    np.testing.assert_array_equal(np.asarray(obs["image"]), _image(EXPECTED_VIEWS[direction]))
    assert obs["image"].dtype == jnp.uint8 and int(obs["agent_dir"]) == direction


def test_see_agent_normalize_and_full_view():
    obs, _ = reset(None, LEVEL.replace(agent_dir=jnp.int32(3)), MazeParams(height=5, width=6, see_agent=True))
    np.testing.assert_array_equal(np.asarray(obs["image"][4, 2]), [10, 0, 3])
    obs, _ = reset(None, LEVEL, MazeParams(height=5, width=6, normalize_obs=True))
    assert obs["image"].dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(obs["image"]), _image(EXPECTED_VIEWS[0]) / 10.0, rtol=1e-6)  # float32
    obs, _ = reset(None, LEVEL, MazeParams(height=5, width=6, full_view=True))
    full = np.asarray(obs["image"])
    assert full.shape == (5, 6, 3)
    expected = _image(["..#...", "....#.", "...G..", "#.....", "...#.."])
    expected[1, 1] = [10, 0, 0]  # the agent, facing right
    np.testing.assert_array_equal(full, expected)


# y\x 0 1 2 3 4 ; agent (2,2) facing up, a wall row ahead of it.
OCCLUDED = """
.....
#####
..A..
.....
....G
"""


def test_walls_hide_cells_when_not_seeing_through():
    level = Level.from_text(OCCLUDED, agent_dir=3)
    params = MazeParams(height=5, width=5, see_through_walls=False)
    obs, _ = reset(None, level, params)
    np.testing.assert_array_equal(np.asarray(obs["image"]), _image(["?????", "?????", "?????", "#####", "....."]))
    # With the default see-through view the row behind the wall is visible.
    obs, _ = reset(None, level, MazeParams(height=5, width=5))
    np.testing.assert_array_equal(np.asarray(obs["image"]), _image(["#####", "#####", ".....", "#####", "....."]))
    # A gap at x=3 lets visibility through: the row behind spreads sideways, the border
    # row beyond it is seen (walls), and what lies behind the border stays hidden.
    gap = Level.from_text(OCCLUDED.replace("#####", "###.#"), agent_dir=3)
    obs, _ = reset(None, gap, params)
    np.testing.assert_array_equal(np.asarray(obs["image"]), _image(["?????", "#####", ".....", "###.#", "....."]))


def test_visibility_diagonal_rule_against_minigrid_process_vis():
    """Check the unrolled mask against a direct transcription of MiniGrid's loop on random views."""
    from minimax.envs.maze.env import visibility_mask

    def process_vis(transparent):  # transparent[y][x], agent at (2, 4)
        v = len(transparent)
        mask = np.zeros((v, v), bool)  # [x, y]
        mask[v // 2, v - 1] = True
        for j in reversed(range(v)):
            for i in range(v - 1):
                if not mask[i, j] or not transparent[j][i]:
                    continue
                mask[i + 1, j] = True
                if j > 0:
                    mask[i + 1, j - 1] = mask[i, j - 1] = True
            for i in reversed(range(1, v)):
                if not mask[i, j] or not transparent[j][i]:
                    continue
                mask[i - 1, j] = True
                if j > 0:
                    mask[i - 1, j - 1] = mask[i, j - 1] = True
        return mask.T

    rng = np.random.RandomState(0)
    views = rng.rand(64, 5, 5) > 0.4
    got = np.asarray(jax.jit(jax.vmap(visibility_mask))(jnp.asarray(views)))
    for view, mask in zip(views, got):
        np.testing.assert_array_equal(mask, process_vis(view))


def test_vmap_equals_single_calls():
    from minimax.envs.maze import make_dr_generator

    params = MazeParams(height=5, width=6, max_steps=20)
    levels = jax.vmap(make_dr_generator(5, 6, n_walls=8))(jax.random.split(jax.random.key(3), 8))
    actions = jax.random.randint(jax.random.key(4), (6, 8), 0, 7)
    vreset = jax.jit(jax.vmap(ENV.reset_to_level, in_axes=(None, 0, None)))
    vstep = jax.jit(jax.vmap(ENV.step, in_axes=(None, 0, 0, None)))
    _, batch_state = vreset(None, levels, params)
    singles = [reset(None, jax.tree.map(lambda x: x[i], levels), params)[1] for i in range(8)]
    for acts in actions:
        batch_out = vstep(None, batch_state, acts, params)
        batch_state = batch_out[1]
        for i in range(8):
            single_out = step(None, singles[i], acts[i], params)
            singles[i] = single_out[1]
            jax.tree.map(lambda b, s: np.testing.assert_array_equal(np.asarray(b)[i], np.asarray(s)),
                         batch_out, single_out)


def test_spaces():
    params = MazeParams()
    space = ENV.observation_space(params)
    assert space.spaces["image"].shape == (5, 5, 3) and ENV.action_space(params).n == 7
    assert ENV.action_space(MazeParams(n_actions=3)).n == 3
    obs, _ = reset(None, Level.from_text("A.\n.G"), MazeParams(height=2, width=2))
    assert bool(ENV.observation_space(MazeParams(height=2, width=2)).contains(obs))
    assert ENV.observation_space(MazeParams(full_view=True)).spaces["image"].shape == (13, 13, 3)


@pytest.mark.parametrize("bad, message", [
    (dict(n_actions=5), "n_actions"),
    (dict(height=0), "height"),
    (dict(agent_view_size=4), "agent_view_size"),
    (dict(max_steps=-1), "max_steps"),
])
def test_bad_params_name_the_option(bad, message):
    with pytest.raises(ValueError, match=message):
        MazeParams(**bad)


def minigrid_view(level, view_size):
    """MiniGrid's gen_obs_grid + encode (see-through, agent cell empty), transposed to [row, col]."""
    walls = np.asarray(level.wall_map)
    h, w = walls.shape
    (ax, ay), d, (gx, gy) = np.asarray(level.agent_pos), int(level.agent_dir), np.asarray(level.goal_pos)
    half = view_size // 2
    top = {0: (ax, ay - half), 1: (ax - half, ay), 2: (ax - view_size + 1, ay - half),
           3: (ax - half, ay - view_size + 1)}[d]

    def cell(x, y):  # Grid.slice: outside the interior is a wall
        if not (0 <= x < w and 0 <= y < h) or walls[y, x]:
            return (2, 5, 0)
        return (8, 1, 0) if (x, y) == (gx, gy) else (1, 0, 0)

    grid = {(i, j): cell(top[0] + i, top[1] + j) for i in range(view_size) for j in range(view_size)}
    for _ in range(d + 1):  # Grid.rotate_left: new (j, W-1-i) = old (i, j)
        grid = {(j, view_size - 1 - i): v for (i, j), v in grid.items()}
    grid[(half, view_size - 1)] = (1, 0, 0)  # the agent's own cell reads as empty
    return np.array([[grid[(x, y)] for x in range(view_size)] for y in range(view_size)], np.uint8)


@pytest.mark.parametrize("view_size", [3, 5, 7])
def test_views_match_minigrid_slice_and_rotate(view_size):
    from minimax.envs.maze import make_dr_generator

    params = MazeParams(height=7, width=9, agent_view_size=view_size)
    levels = jax.vmap(make_dr_generator(7, 9, n_walls=20))(jax.random.split(jax.random.key(view_size), 48))
    obs = jax.jit(jax.vmap(lambda lv: ENV.reset_to_level(None, lv, params)[0]))(levels)
    for i in range(48):
        level = jax.tree.map(lambda x: x[i], levels)
        np.testing.assert_array_equal(np.asarray(obs["image"][i]), minigrid_view(level, view_size))


def test_level_size_must_match_params():
    with pytest.raises(ValueError, match=r"shape \(5, 6\) but params are for a 13x13 maze"):
        ENV.reset_to_level(None, LEVEL, MazeParams())
