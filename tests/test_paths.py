"""Tests for `minimax.envs.maze.paths` against a plain-Python BFS.

Every path function goes through one jitted, vmapped `_evaluate_one`, so each batch shape costs a
single compilation and many levels are checked per call.
"""

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.envs.maze.level import Level
from run_helpers import FULL_OPTIMISATION
from minimax.envs.maze.paths import (
    DIR_TO_VEC,
    cell_distances,
    env_metrics,
    is_solvable,
    optimal_return,
    shortest_action_count,
    shortest_path_length,
)


@jax.jit
@jax.vmap
def _evaluate_one(level, max_steps):
    return {
        "dist": cell_distances(level.wall_map, level.agent_pos),
        "path": shortest_path_length(level),
        "solvable": is_solvable(level),
        "actions": shortest_action_count(level),
        "return": optimal_return(level, max_steps),
        "metrics": env_metrics(level),
    }


# For the 99 x 99 maze: a BFS of ~5,000 waves runs ~25x slower at the suite's LLVM -O0.
_evaluate_one_optimised = jax.jit(_evaluate_one, compiler_options=FULL_OPTIMISATION)


def _evaluate(levels, max_steps, optimised=False):
    """Stack host-side levels into a batch and run every path function on it; `max_steps`
    is one number for all levels or one per level."""
    batch = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *levels)
    steps = jnp.broadcast_to(jnp.asarray(max_steps, dtype=jnp.int32), (len(levels),))
    evaluate = _evaluate_one_optimised if optimised else _evaluate_one
    return jax.tree_util.tree_map(np.asarray, evaluate(batch, steps))


# ---- plain-Python reference -------------------------------------------------------------

def _blocked(walls, x, y):
    h, w = walls.shape
    return not (0 <= x < w and 0 <= y < h) or walls[y, x]


def ref_cell_distances(walls, source):
    dist = np.full(walls.shape, -1, dtype=np.int64)
    sx, sy = source
    if _blocked(walls, sx, sy):
        return dist
    dist[sy, sx] = 0
    queue = deque([(sx, sy)])
    while queue:
        x, y = queue.popleft()
        for dx, dy in DIR_TO_VEC:
            nx, ny = x + dx, y + dy
            if not _blocked(walls, nx, ny) and dist[ny, nx] < 0:
                dist[ny, nx] = dist[y, x] + 1
                queue.append((nx, ny))
    return dist


def ref_action_count(walls, agent, agent_dir, goal):
    start = (agent[0], agent[1], agent_dir)
    seen = {start: 0}
    queue = deque([start])
    while queue:
        x, y, d = queue.popleft()
        n = seen[(x, y, d)]
        dx, dy = DIR_TO_VEC[d]
        ahead = (x + dx, y + dy)
        if ahead == tuple(goal):
            return n + 1
        successors = [(x, y, (d - 1) % 4), (x, y, (d + 1) % 4)]
        if not _blocked(walls, *ahead):
            successors.append((*ahead, d))
        for s in successors:
            if s not in seen:
                seen[s] = n + 1
                queue.append(s)
    return -1


def ref_return(n, max_steps):
    return 1 - 0.9 * n / max_steps if 1 <= n <= max_steps else 0.0


def random_levels(rng, count, height, width):
    levels = []
    for _ in range(count):
        walls = rng.rand(height, width) < rng.uniform(0.0, 0.6)
        free = np.argwhere(~walls)
        if len(free) < 2:
            walls[:] = False
            free = np.argwhere(~walls)
        (ay, ax), (gy, gx) = free[rng.choice(len(free), 2, replace=False)]
        levels.append(Level.create(walls, (gx, gy), (ax, ay), rng.randint(4)))
    return levels


def level_from_rows(rows, agent_dir=0):
    return Level.from_text("\n".join(rows), agent_dir=agent_dir)


# ---- hand-made cases --------------------------------------------------------------------

HAND_MADE = [
    # (rows, agent_dir, cell moves, actions)
    (["AG.", "...", "..."], 0, 1, 1),   # facing the adjacent goal: one forward
    (["AG.", "...", "..."], 1, 1, 2),   # facing down: turn, forward
    (["AG.", "...", "..."], 2, 1, 3),   # facing away: two turns, forward
    (["A.G", "...", "..."], 0, 2, 2),   # two cells straight ahead
    (["A.G", "...", "..."], 1, 2, 3),
    (["A#G", "...", "..."], 0, 4, 7),   # around the wall: 3 turns, 4 forwards
    (["A#G", "##.", "..."], 0, -1, -1),  # walled in
]


def test_hand_made_levels():
    levels = [level_from_rows(rows, d) for rows, d, _, _ in HAND_MADE]
    out = _evaluate(levels, max_steps=10)
    for i, (rows, d, path, actions) in enumerate(HAND_MADE):
        case = f"{rows} dir={d}"
        assert out["path"][i] == path, case
        assert out["actions"][i] == actions, case
        assert out["solvable"][i] == (path >= 0), case
        assert out["metrics"]["shortest_path"][i] == path, case
        assert out["metrics"]["solvable"][i] == (path >= 0), case
        assert out["metrics"]["n_walls"][i] == sum(r.count("#") for r in rows), case
        assert out["return"][i] == pytest.approx(ref_return(actions, 10), abs=1e-6), case  # float32
    blocked = len(HAND_MADE) - 1
    assert out["return"][blocked] == 0.0
    np.testing.assert_array_equal(
        out["dist"][blocked], [[0, -1, -1], [-1, -1, -1], [-1, -1, -1]])


def test_optimal_return_edges():
    """n == max_steps still pays; n > max_steps pays nothing. The action count here is 7."""
    level = level_from_rows(["A#G", "...", "..."])
    out = _evaluate([level] * 4, max_steps=[6, 7, 8, 100])
    np.testing.assert_array_equal(out["actions"], 7)
    assert out["return"].dtype == np.float32
    np.testing.assert_allclose(out["return"], [0.0, 1 - 0.9, 1 - 0.9 * 7 / 8, 1 - 0.9 * 7 / 100],
                               rtol=1e-6, atol=1e-6)  # float32: 0.1 comes out 2e-7 relative off


# ---- random levels against the reference ------------------------------------------------

@pytest.mark.parametrize("height, width, count", [(13, 13, 200), (7, 11, 40), (11, 7, 40)])
def test_random_levels_match_reference(height, width, count):
    rng = np.random.RandomState(height * 100 + width)
    levels = random_levels(rng, count, height, width)
    out = _evaluate(levels, max_steps=40)
    solvable = 0
    for i, level in enumerate(levels):
        walls = np.asarray(level.wall_map)
        agent, goal = tuple(np.asarray(level.agent_pos)), tuple(np.asarray(level.goal_pos))
        dist = ref_cell_distances(walls, agent)
        path = dist[goal[1], goal[0]]
        actions = ref_action_count(walls, agent, int(level.agent_dir), goal)
        np.testing.assert_array_equal(out["dist"][i], dist, err_msg=f"level {i}")
        assert out["path"][i] == path, f"level {i}"
        assert out["actions"][i] == actions, f"level {i}"
        assert out["solvable"][i] == (path >= 0) == (actions >= 0), f"level {i}"
        assert out["metrics"]["n_walls"][i] == walls.sum(), f"level {i}"
        assert out["return"][i] == pytest.approx(ref_return(actions, 40), abs=1e-6), f"level {i}"
        solvable += path >= 0
    # The wall densities must give both outcomes, or the comparison proves little.
    assert 0 < solvable < count


# ---- a large level ----------------------------------------------------------------------

def snake_maze(size=99):
    """Odd rows are walls with one gap, alternating right and left end: a single corridor
    that sweeps every even row. Agent top-left facing right, goal at the corridor's end."""
    walls = np.zeros((size, size), dtype=bool)
    walls[1::2] = True
    for i, y in enumerate(range(1, size, 2)):
        walls[y, size - 1 if i % 2 == 0 else 0] = False
    rows = (size + 1) // 2
    goal_x = size - 1 if rows % 2 == 1 else 0
    return Level.create(walls, (goal_x, size - 1), (0, 0), 0)


@pytest.mark.e2e  # a 99-wide maze played for 10,000 steps: 7 s of compiling and running (the --slow tier)
def test_large_snake_maze():
    level = snake_maze(99)
    # 50 corridor rows of 99 cells joined by 49 gap cells: 4999 cells, 4998 moves.
    # Actions: one forward per move plus two turns at each of the 49 bends.
    out = _evaluate([level], max_steps=10_000, optimised=True)
    assert out["path"][0] == 4998
    assert out["actions"][0] == 4998 + 2 * 49
    assert out["solvable"][0]
    assert out["dist"][0].max() == 4998
    assert (out["dist"][0] >= 0).sum() == 4999
    assert out["metrics"]["n_walls"][0] == 49 * 98
    walls = np.asarray(level.wall_map)
    assert out["actions"][0] == ref_action_count(walls, (0, 0), 0, (0, 98))
    assert out["return"][0] == pytest.approx(1 - 0.9 * 5096 / 10_000, abs=1e-6)  # one step: 9e-5


def test_ood_shortest_path_check_values():
    """Cell moves from start to goal on the fixed-goal OOD mazes, as in the benchmark's notes."""
    from minimax.envs.maze.ood import get_maze

    expected = {"SixteenRooms": 20, "SixteenRooms2": 22, "Labyrinth": 96, "Labyrinth2": 96,
                "LabyrinthFlipped": 96, "StandardMaze": 40, "StandardMaze2": 56, "StandardMaze3": 39}
    levels = [get_maze(name).sample(jax.random.key(0)) for name in expected]
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *levels)
    got = jax.jit(jax.vmap(shortest_path_length))(batch)
    assert dict(zip(expected, np.asarray(got).tolist())) == expected
