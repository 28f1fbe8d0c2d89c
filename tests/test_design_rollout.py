"""Teacher rollouts (minimax/runners/design.py): one design per env, valid levels, the teacher's
reward on the last step only, and returns that GAE turns into the discounted regret."""

import jax
import jax.numpy as jnp
import numpy as np

from minimax.agents.ppo import compute_gae
from minimax.envs.maze.teacher import MazeTeacher, TeacherParams
from minimax.models.teacher import MazeTeacherActorCritic
from minimax.runners.design import design_levels, with_final_reward

TEACHER = MazeTeacher()
PARAMS = TeacherParams(height=7, width=7, n_walls=12, noise_dim=5)
MODEL = MazeTeacherActorCritic(n_cells=49, num_steps=PARAMS.num_steps, conv_filters=8, recurrent_size=16)
N = 8


@jax.jit
def run(key):
    obs, _ = TEACHER.reset(key, PARAMS)
    one = jax.tree.map(lambda x: jnp.asarray(x)[None, None], obs)
    weights = MODEL.init(jax.random.key(1), MODEL.initial_carry(1), one, jnp.ones((1, 1), bool))
    return design_levels(key, TEACHER, PARAMS, MODEL.apply, weights, MODEL.initial_carry(N), N)


def test_a_design_rollout_is_one_valid_level_per_env():
    rollout, levels = run(jax.random.key(0))
    t = PARAMS.num_steps
    assert rollout.actions.shape == (t, N) and rollout.values.shape == (t, N)
    dones = np.asarray(rollout.dones)
    assert dones[-1].all() and not dones[:-1].any()  # exactly one design per env
    assert np.asarray(rollout.reset)[0].all() and not np.asarray(rollout.reset)[1:].any()
    assert float(jnp.abs(rollout.rewards).sum()) == 0.0
    levels.validate(7, 7)
    actions = np.asarray(rollout.actions)
    xy = lambda c: [int(c) % 7, int(c) // 7]  # noqa: E731
    for i in range(N):  # walls, goal and agent are the actions (only an agent on the goal moves)
        walls = {tuple(xy(c)) for c in actions[:12, i]} - {tuple(xy(actions[12, i])), tuple(xy(actions[13, i]))}
        assert {(x, y) for y, x in zip(*np.nonzero(np.asarray(levels.wall_map[i])))} == walls
        assert levels.goal_pos[i].tolist() == xy(actions[12, i])
        if actions[13, i] != actions[12, i]:
            assert levels.agent_pos[i].tolist() == xy(actions[13, i])
    assert len({tuple(np.asarray(levels.wall_map[i]).ravel()) for i in range(N)}) > 1  # diverse designs


def test_the_regret_is_paid_on_the_last_step_and_discounted_back():
    rollout, _ = run(jax.random.key(2))
    regret = jnp.linspace(0.0, 0.7, N)
    paid = with_final_reward(rollout, regret)
    rewards = np.asarray(paid.rewards)
    np.testing.assert_array_equal(rewards[:-1], 0.0)
    np.testing.assert_allclose(rewards[-1], np.asarray(regret), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(paid.episode_returns[-1]), np.asarray(regret), rtol=1e-6)
    gamma = 0.995
    _, targets = compute_gae(paid.rewards, paid.values, paid.dones, paid.last_value, gamma, 1.0)
    steps_left = np.arange(PARAMS.num_steps)[::-1][:, None]
    np.testing.assert_allclose(np.asarray(targets), gamma ** steps_left * np.asarray(regret)[None], rtol=1e-5,
                               atol=1e-6)
