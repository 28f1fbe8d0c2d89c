"""Oracle regret on AMaze (issue 46, part 3): a level's optimal return (its shortest action count,
checked against BFS on hand-made and random mazes, unsolvable ones included, in tests/test_paths.py)
minus the agent's return, as a PLR-family score and as a logged metric of the PLR family's levels."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.config import ConfigError, TrainConfig
from minimax.curricula import scores as sc
from minimax.envs.maze.paths import optimal_return
from minimax.runners.rollout import ppo_batch
from minimax.training.builder import build_runner


def inputs(dones, episode_returns, optimal):
    t, n = dones.shape
    zeros = jnp.zeros((t, n))
    return sc.ScoreInputs(rewards=zeros, values=zeros, dones=jnp.asarray(dones), solved=jnp.asarray(dones),
                          advantages=zeros, policy=None, last_value=jnp.zeros(n), max_returns=jnp.zeros(n),
                          episode_returns=jnp.asarray(episode_returns, jnp.float32),
                          optimal_returns=jnp.asarray(optimal, jnp.float32))


def test_oracle_regret_is_the_optimum_minus_the_mean_completed_return():
    dones = np.array([[0, 1, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0]], bool)       # T=4, N=3
    returns = np.where(dones, [[0.0, 0.5, 0.0], [0.9, 0.0, 0.0], [0.0, 0.1, 0.0], [0.7, 0.0, 0.0]], 0.0)
    scores, valid = sc.score_levels("oracle_regret", inputs(dones, returns, [0.95, 0.8, 0.6]))
    np.testing.assert_allclose(np.asarray(scores)[:2], [0.95 - 0.8, 0.8 - 0.3], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(valid), [True, True, False])   # level 2 finished no episode
    # An unsolvable level's optimum is 0: every failed episode (return 0) has regret 0.
    scores, _ = sc.score_levels("oracle_regret", inputs(dones, np.zeros_like(returns), [0.0, 0.0, 0.0]))
    np.testing.assert_allclose(np.asarray(scores)[:2], 0.0)
    with pytest.raises(ValueError, match="optimal return"):
        sc.score_levels("oracle_regret", inputs(dones, returns, [0.0] * 3).replace(optimal_returns=None))


def test_oracle_regret_is_refused_where_the_env_knows_no_optimum():
    with pytest.raises(ConfigError, match="--score-function oracle_regret needs each level's optimal return, "
                                          "which --env cartpole does not know"):
        TrainConfig.from_options(env="cartpole", method="robust_plr", score_function="oracle_regret",
                                 recurrent_cell="none")
    assert TrainConfig.from_options(method="accel", score_function="oracle_regret").curriculum.score_function == \
        "oracle_regret"


SMALL = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, n_actions=3, recurrent_size=8,
             num_envs=4, num_steps=32, buffer_size=8, min_fill_ratio=0.25, score_function="oracle_regret")


@pytest.mark.parametrize("method", ["robust_plr", "parallel_plr"])
def test_plr_scores_levels_by_their_true_regret(method):
    """A cycle's scores are each played level's optimum minus its mean completed return, and the
    groups log that regret (`new/regret`, `replay/regret`)."""
    runner = build_runner(TrainConfig.from_options(method=method, **SMALL))
    state = jax.jit(runner.init)(jax.random.key(0))

    @jax.jit
    def played(state):
        key = jax.random.key(1)
        levels = jax.vmap(runner.generator)(jax.random.split(key, runner.num_envs))
        rollout = runner.rollout(jax.random.key(2), state.train_state.params, levels)
        batch = ppo_batch(rollout, runner.ppo)
        scores, _, valid = runner.score(rollout, batch.advantages, jnp.zeros(runner.num_envs), levels)
        return levels, rollout, scores, valid, runner.group_metrics("new", levels, rollout, scores, valid)

    levels, rollout, scores, valid, metrics = jax.device_get(played(state))
    optimum = np.asarray(jax.vmap(optimal_return, in_axes=(0, None))(levels, runner.env_params.max_steps))
    dones = np.asarray(rollout.dones)
    assert valid.any()
    for n in np.flatnonzero(valid):
        completed = np.asarray(rollout.episode_returns)[dones[:, n], n]
        assert scores[n] == pytest.approx(optimum[n] - completed.mean(), abs=1e-5)
        assert scores[n] >= -1e-6  # no policy beats the optimum
    gaps = [optimum[n] - r for n in range(runner.num_envs) for r in np.asarray(rollout.episode_returns)[dones[:, n], n]]
    assert metrics["new/regret_sum"] / metrics["new/regret_count"] == pytest.approx(np.mean(gaps), abs=1e-5)
    # The whole step runs and keeps the regret in its metrics.
    _, step_metrics = jax.jit(runner.step)(state)
    assert "new/regret_sum" in step_metrics and "replay/regret_sum" in step_metrics
