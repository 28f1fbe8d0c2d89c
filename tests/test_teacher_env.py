"""The teacher's design MDP for AMaze (minimax/envs/maze/teacher.py): step counts, the collision
rules of the minimax release's UEDMaze, valid levels, observations, vmap == single calls."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.envs.maze.teacher import MazeTeacher, TeacherParams

TEACHER = MazeTeacher()
H = W = 7
PARAMS = TeacherParams(height=H, width=W, n_walls=12, noise_dim=5)  # 14 steps


def design(key, actions, params=PARAMS):
    """Reset, then one step per action: every step's (obs, state, reward, done) and the level."""
    k_reset, k_steps = jax.random.split(key)
    obs, state = TEACHER.reset(k_reset, params)

    def one(state, inputs):
        key, action = inputs
        obs, state, reward, done, _ = TEACHER.step(key, state, action, params)
        return state, (obs, state, reward, done)

    keys = jax.random.split(k_steps, actions.shape[0])
    state, trace = jax.lax.scan(one, state, (keys, actions))
    return obs, trace, TEACHER.level(state, params)


DESIGN = jax.jit(design, static_argnums=2)
DESIGNS = jax.jit(jax.vmap(design, in_axes=(0, 0, None)), static_argnums=2)


def cells(*xy):
    return jnp.array([y * W + x for x, y in xy], jnp.int32)


def test_an_episode_is_the_walls_then_the_goal_then_the_agent():
    actions = cells(*[(i % W, i // W) for i in range(12)], (6, 6), (0, 6))
    obs0, (obs, states, rewards, dones), level = DESIGN(jax.random.key(0), actions)
    assert PARAMS.num_steps == 14 and obs0["time"] == 0
    np.testing.assert_array_equal(np.asarray(dones), [False] * 13 + [True])
    np.testing.assert_array_equal(np.asarray(states.time), np.arange(1, 15))
    assert float(jnp.abs(rewards).sum()) == 0.0  # the teacher's return is the regret, computed later
    walls = np.zeros((H, W), bool)
    walls.reshape(-1)[:12] = True
    np.testing.assert_array_equal(np.asarray(level.wall_map), walls)
    assert level.goal_pos.tolist() == [6, 6] and level.agent_pos.tolist() == [0, 6]
    level.validate(H, W)


def test_repeated_walls_goal_and_agent_follow_the_release():
    wall, other = (2, 3), (4, 4)
    # every wall step on one of two cells; the goal on a wall; the agent on the goal
    actions = cells(*([wall] * 6 + [other] * 6), wall, wall)
    for seed in range(5):
        _, _, level = DESIGN(jax.random.key(seed), actions)
        walls = np.asarray(level.wall_map)
        assert walls.sum() == 1 and walls[4, 4]  # replace_wall_pos: 12 steps, 2 cells; the goal removed one
        assert level.goal_pos.tolist() == [2, 3]
        agent = tuple(level.agent_pos.tolist())
        assert agent not in (wall, other)  # moved to a cell no earlier step chose
        level.validate(H, W)
    # The agent may land on a wall: the wall goes.
    _, _, level = DESIGN(jax.random.key(0), cells(*([wall] * 6 + [other] * 6), (1, 1), other))
    walls = np.asarray(level.wall_map)
    assert level.agent_pos.tolist() == [4, 4] and not walls[4, 4] and walls[3, 2] and walls.sum() == 1


def test_without_replacement_every_reused_cell_moves_to_an_unused_one():
    params = TeacherParams(height=H, width=W, n_walls=12, noise_dim=0, replace_wall_pos=False)
    _, (_, states, _, _), level = DESIGN(jax.random.key(3), cells(*[(2, 3)] * 14), params)
    chosen = np.asarray(states.cells[-1])
    assert len(set(chosen.tolist())) == 14  # 12 walls, goal and agent all on distinct cells
    assert np.asarray(level.wall_map).sum() == 12
    level.validate(H, W)


def test_random_designs_are_valid_levels_and_vmap_equals_single_calls():
    n = 32
    keys = jax.random.split(jax.random.key(7), n)
    actions = jax.random.randint(jax.random.key(8), (n, PARAMS.num_steps), 0, H * W)
    _, (obs, states, _, dones), levels = DESIGNS(keys, actions, PARAMS)
    levels.validate(H, W)
    assert np.asarray(dones[:, -1]).all() and not np.asarray(dones[:, :-1]).any()
    assert (np.asarray(levels.wall_map).sum((1, 2)) <= 12).all()
    for i in (0, 5, 31):
        _, (obs_i, states_i, _, _), level_i = DESIGN(keys[i], actions[i])
        for a, b in zip(jax.tree.leaves((obs_i, states_i, level_i)),
                        jax.tree.leaves(jax.tree.map(lambda x, i=i: x[i], (obs, states, levels)))):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_observation_is_the_design_so_far_with_outer_walls_time_and_fresh_noise():
    actions = cells(*[(i % W, i // W) for i in range(12)], (6, 6), (0, 6))
    obs0, (obs, states, _, _), _ = DESIGN(jax.random.key(1), actions)
    space = TEACHER.observation_space(PARAMS)
    for o in (obs0, jax.tree.map(lambda x: x[5], obs)):
        assert bool(space.contains(o))
    image = np.rint(np.asarray(obs["image"]) * 10).astype(int)  # normalised by 10
    assert (image[:, 0, :, 0] == 2).all() and (image[:, -1, :, 0] == 2).all()  # the outer ring of walls
    assert (image[:, :, 0, 0] == 2).all() and (image[:, :, -1, 0] == 2).all()
    assert (np.rint(np.asarray(obs0["image"]) * 10)[1:-1, 1:-1, 0] == 1).all()  # nothing placed yet
    assert image[11, 7, 7, 0] == 1 and image[12, 7, 7, 0] == 8  # the goal appears at its step
    assert image[12, 7, 1, 0] == 1 and image[13, 7, 1, 0] == 10  # the agent, at its step, with its direction
    assert image[13, 7, 1, 2] == int(states.agent_dir[-1])
    assert np.asarray(obs["time"]).tolist() == list(range(1, 15))
    noise = np.asarray(obs["noise"])
    assert noise.shape == (14, 5) and (0 <= noise).all() and (noise < 1).all()
    assert len({tuple(row) for row in noise.round(6)}) == 14  # new noise every step


def test_steps_after_the_last_leave_the_design_as_it_is():
    actions = jnp.concatenate([cells(*[(i % W, i // W) for i in range(14)]), cells((3, 3), (4, 4))])
    _, (_, states, _, dones), _ = DESIGN(jax.random.key(2), actions)
    assert np.asarray(dones[13:]).all()
    for leaf in jax.tree.leaves(states):
        np.testing.assert_array_equal(np.asarray(leaf[13]), np.asarray(leaf[-1]))


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_walls=168), r"wall budget \(168\) must be in \[0, 167\]"),
    (dict(height=1, width=1), "no room"),
    (dict(noise_dim=-1), "noise_dim"),
])
def test_bad_teacher_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TeacherParams(**kwargs)
