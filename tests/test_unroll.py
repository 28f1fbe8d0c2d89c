"""`--scan-unroll`: the scans over time (rollouts, GAE, the LSTM / GRU forward and backward,
PAIRED's design rollouts, evaluation, the outcome counts of SFL and the CVaR evaluation) run
several steps per loop iteration and compute the same thing as one step per iteration, within
float rounding (XLA may fuse an unrolled body differently)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.training.budget import make_chunk
from minimax.training.builder import build_runner, level_generator, make_model
from minimax.models.recurrent import lstm_sequence, resolve_unroll
from minimax.runners.eval import evaluate_levels
from minimax.runners.rollout import count_outcomes
from minimax.config import TrainConfig
from run_helpers import TINY

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


def close(a, b, rtol=1e-4, atol=1e-5):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=rtol, atol=atol)


def test_the_default_is_the_backends():
    assert resolve_unroll(0) == (1 if jax.default_backend() == "cpu" else 8) and resolve_unroll(3) == 3
    with pytest.raises(ValueError, match="scan unroll must be >= 0"):
        resolve_unroll(-1)


def test_the_lstm_and_its_handwritten_backward_do_not_depend_on_the_unroll():
    k = jax.random.split(jax.random.key(0), 6)
    t, n, f, h = 11, 3, 5, 4  # 11 steps: not a multiple of the unroll
    args = (jax.random.normal(k[0], (f, 4 * h)), jax.random.normal(k[1], (h, 4 * h)) * 0.5,
            jax.random.normal(k[2], (4 * h,)), jax.random.normal(k[3], (t, n, f)),
            jax.random.bernoulli(k[4], 0.2, (t, n)))
    carry = (jnp.zeros((n, h)), jnp.zeros((n, h)))

    def loss(unroll):
        def f(*a):
            (c, hl), hs = lstm_sequence(*a, carry, unroll)
            return jnp.sum(hs ** 2) + jnp.sum(c * hl)
        return f

    for unroll in (2, 4):
        close(loss(unroll)(*args), loss(1)(*args))
        close(jax.grad(loss(unroll), argnums=(0, 1, 2, 3))(*args), jax.grad(loss(1), argnums=(0, 1, 2, 3))(*args))


@pytest.mark.parametrize("method, cell", [pytest.param("dr", "lstm", marks=pytest.mark.e2e), ("robust_plr", "gru")])
def test_training_updates_do_not_depend_on_the_unroll(method, cell):
    """Two updates (rollouts, GAE, recurrent forward and backward, PPO) with unroll 1 and 3 (16-step rollouts).
    Robust PLR with a GRU runs in the contract tier (its update holds every scan a DR update holds, and more);
    DR with the LSTM (the hand-written backward's training path; the function itself is checked above) in e2e."""
    results = []
    for unroll in (1, 3):
        cfg = TrainConfig.from_options(**{**TINY, "method": method, "recurrent_cell": cell, "scan_unroll": unroll,
                                          "buffer_size": 16, "num_steps": 16, "eval_every": 0})
        runner = build_runner(cfg)
        state = jax.jit(runner.init)(jax.random.key(0))
        results.append(jax.jit(make_chunk(runner, 2, "cycles"))(state))
    (s1, m1), (s3, m3) = results
    close(s1.train_state.params, s3.train_state.params)
    close({k: m1[k] for k in ("env_steps", "episodes")}, {k: m3[k] for k in ("env_steps", "episodes")}, 0, 0)


def test_evaluation_does_not_depend_on_the_unroll():
    cfg = TrainConfig.from_options(**TINY)
    runner = build_runner(cfg)
    model, params = make_model(cfg), jax.jit(runner.init)(jax.random.key(0)).train_state.params
    levels = jax.vmap(level_generator(cfg))(jax.random.split(jax.random.key(1), 6))
    out = [jax.jit(lambda u=u: evaluate_levels(jax.random.key(2), model.apply, params, model.initial_carry(6),
                                               runner.env, runner.env_params, levels, chunk_steps=8, unroll=u))()
           for u in (1, 4)]
    close(out[0], out[1], 0, 0)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_learned_teachers_update_does_not_depend_on_the_unroll():
    """PAIRED: the teacher's 6-step design rollout, its LSTM and GAE, the students' 16-step rollouts (unroll 4)."""
    results = []
    for unroll in (1, 4):
        cfg = TrainConfig.from_options(**{**TINY, "method": "paired", "scan_unroll": unroll, "teacher_n_walls": 4,
                                          "teacher_conv_filters": 4, "teacher_recurrent_size": 8,
                                          "teacher_noise_dim": 3, "teacher_n_epochs": 1, "eval_every": 0})
        runner = build_runner(cfg)
        assert runner.teacher_ppo.unroll == unroll and runner.teacher_model.scan_unroll == unroll
        state = jax.jit(runner.init)(jax.random.key(0))
        results.append(jax.jit(make_chunk(runner, 2, "cycles"))(state))
    (s1, m1), (s4, m4) = results
    close((s1.train_state.params, s1.teacher.params), (s4.train_state.params, s4.teacher.params))
    counts = ("episodes", "teacher/n_walls_sum")
    close({k: m1[k] for k in counts}, {k: m4[k] for k in counts}, 0, 0)


def test_outcome_counts_do_not_depend_on_the_unroll():
    """SFL's sampling pass and the CVaR evaluation: a 40-step budget in chunks of 12 (unroll 5 divides neither)."""
    cfg = TrainConfig.from_options(**TINY)
    runner = build_runner(cfg)
    model, params = make_model(cfg), jax.jit(runner.init)(jax.random.key(0)).train_state.params
    levels = jax.vmap(level_generator(cfg))(jax.random.split(jax.random.key(1), 6))
    out = [jax.jit(lambda u=u: count_outcomes(jax.random.key(2), model.apply, params, model.initial_carry, runner.env,
                                              runner.env_params, levels, 40, chunk_steps=12, unroll=u))()
           for u in (1, 5)]
    close(out[0], out[1], 0, 0)
    assert int(out[0][1].sum()) > 0  # episodes ended: the counts are not trivially equal
