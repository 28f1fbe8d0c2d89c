"""Learning: the DR agent must get much better than a random policy (this test can fail)."""

import jax
import numpy as np
import pytest

from minimax.config import TrainConfig
from minimax.envs.maze import AMaze
from minimax.runners.eval import evaluate_levels
from minimax.training.builder import build_runner, env_params, level_generator, make_model
from minimax.training.budget import make_chunk

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


@pytest.mark.e2e  # 60 PPO updates of 32 envs x 32 steps: ~40 s
@pytest.mark.parametrize("cell", ["lstm", "s5"])
def test_dr_agent_return_rises_well_above_a_random_policy(cell):
    # Small easy setting: 5x5 mazes with 3 walls, 32-step budget, 3 actions, a 32-unit LSTM or S5
    # (2 layers, post-norm as Table 6's DR; the same PPO settings for both).
    cfg = TrainConfig.from_options(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3,
                      recurrent_cell=cell, recurrent_size=32, num_envs=32, num_steps=32, lr=3e-3, entropy_coef=0.01, gamma=0.95,
                      gae_lambda=0.9, n_epochs=4, num_updates=60, eval_every=0)
    runner = build_runner(cfg)
    model = make_model(cfg)
    held_out = jax.vmap(level_generator(cfg))(jax.random.split(jax.random.key(123), 512))

    @jax.jit
    def mean_return(params):
        out = evaluate_levels(jax.random.key(7), model.apply, params, model.initial_carry(512), AMaze(),
                              env_params(cfg), held_out)
        return out["return"].mean()

    state = jax.jit(runner.init)(jax.random.key(0))
    before = float(mean_return(state.train_state.params))
    state, metrics = jax.jit(make_chunk(runner, 60))(state)
    after = float(mean_return(state.train_state.params))
    assert before < 0.3  # a random (initial) policy rarely reaches the goal in time
    assert after > before + 0.4 and after > 0.6, (before, after)
    # Training episodes improved too: late-chunk returns beat the first updates'.
    returns = np.asarray(metrics["episode_return_sum"]) / np.maximum(np.asarray(metrics["episodes"]), 1)
    assert returns[-10:].mean() > returns[:10].mean() + 0.3
