"""CENIE (issue 57, `--method cenie`, `curricula/novelty.py`, `runners/cenie.py`): the coverage mixture's
EM against a float64 transcription, its likelihood and a level's novelty against direct formulas, the FIFO
window, the replay distribution's mix of novelty and regret ranks, and runs that train vmapped and resume."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.config import PRESETS, TrainConfig
from minimax.curricula.level_buffer import BufferConfig, init_buffer, sample_replay
from minimax.curricula.novelty import (_start, em_step, init_coverage, level_novelty, log_likelihood,
                                       novelty_weights, push, refit, step_features)
from minimax.core.parallel import NO_SHARD
from minimax.runners.plr_parts import write_slots
from run_helpers import trains_resumes_and_makes_train

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size


def _two_clusters(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(-2.0, 0.5, (n // 2, d))
    b = rng.normal(3.0, 1.0, (n // 2, d))
    return np.concatenate([a, b]).astype(np.float32)


def _coverage(points, components, capacity=None):
    cov = init_coverage(points.shape[1], capacity or points.shape[0], components)
    return push(cov, jnp.asarray(points)[None])


def _np_em(x, means, variances, weights, reg, steps):
    """EM for a diagonal Gaussian mixture in float64, written from the textbook updates."""
    x = x.astype(np.float64)
    for _ in range(steps):
        log_pdf = -0.5 * (np.log(2 * np.pi * variances)[None] + (x[:, None] - means[None]) ** 2
                          / variances[None]).sum(-1)
        log_joint = np.log(weights)[None] + log_pdf
        resp = np.exp(log_joint - log_joint.max(1, keepdims=True))
        resp /= resp.sum(1, keepdims=True)
        nk = resp.sum(0)
        means = resp.T @ x / nk[:, None]
        variances = (resp[:, :, None] * (x[:, None] - means[None]) ** 2).sum(0) / nk[:, None] + reg
        weights = nk / nk.sum()
    return means, variances, weights


def test_em_matches_a_float64_transcription_and_finds_two_clusters():
    x = _two_clusters()
    cov = _start(jax.random.key(0), _coverage(x, 2), 0.01)
    fit = jax.jit(lambda c: jax.lax.fori_loop(0, 10, lambda _, c: em_step(c, 0.01), c))(cov)
    means, variances, weights = _np_em(x, np.asarray(cov.means, np.float64), np.asarray(cov.variances, np.float64),
                                       np.exp(np.asarray(cov.log_weights, np.float64)), 0.01, 10)
    np.testing.assert_allclose(fit.means, means, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(fit.variances, variances, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.exp(fit.log_weights), weights, rtol=1e-3, atol=1e-4)
    order = np.argsort(np.asarray(fit.means[:, 0]))
    np.testing.assert_allclose(np.asarray(fit.means)[order], [[-2.0] * 3, [3.0] * 3], atol=0.3)
    np.testing.assert_allclose(np.exp(np.asarray(fit.log_weights)), [0.5, 0.5], atol=1e-3)


def test_the_likelihood_and_a_levels_novelty_are_the_direct_formulas():
    rng = np.random.default_rng(1)
    cov = init_coverage(2, 8, 2).replace(means=jnp.asarray([[0.0, 1.0], [2.0, -1.0]]),
                                         variances=jnp.asarray([[1.0, 0.5], [2.0, 0.25]]),
                                         log_weights=jnp.log(jnp.asarray([0.3, 0.7])), fitted=jnp.asarray(True))
    x = rng.normal(size=(3, 5, 2)).astype(np.float32)  # 3 levels x 5 samples

    def direct(p):
        total = 0.0
        for w, m, v in zip((0.3, 0.7), ([0.0, 1.0], [2.0, -1.0]), ([1.0, 0.5], [2.0, 0.25])):
            total += w * np.prod(np.exp(-(p - m) ** 2 / (2 * np.array(v))) / np.sqrt(2 * np.pi * np.array(v)))
        return np.log(total)

    want = np.array([[direct(p) for p in level] for level in x])
    np.testing.assert_allclose(log_likelihood(cov, jnp.asarray(x)), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(level_novelty(cov, jnp.asarray(x)), -want.mean(1), rtol=1e-5, atol=1e-5)
    assert (np.asarray(level_novelty(cov.replace(fitted=jnp.asarray(False)), jnp.asarray(x))) == 0).all()


def test_the_window_is_first_in_first_out_and_the_first_fit_waits_for_enough_points():
    cov = init_coverage(1, 6, 3)
    level = lambda v: jnp.full((1, 2, 1), float(v))  # noqa: E731  one level, two samples
    for v in range(4):
        cov = push(cov, level(v))
    assert sorted(np.asarray(cov.points[cov.filled, 0]).tolist()) == [1, 1, 2, 2, 3, 3] and int(cov.head) == 2
    assert not bool(refit(jax.random.key(0), push(init_coverage(1, 6, 3), level(1)), 2, 0.01).fitted)
    assert bool(refit(jax.random.key(0), cov, 2, 0.01).fitted)


def test_features_are_the_flat_observation_and_the_one_hot_action():
    obs = {"image": jnp.arange(2 * 3 * 4).reshape(2, 3, 2, 2), "dir": jnp.ones((2, 3), jnp.int32)}
    actions = jnp.asarray([[0, 2, 1], [1, 1, 0]])
    f = step_features(obs, actions, 3)
    assert f.shape == (2, 3, 4 + 1 + 3)
    np.testing.assert_array_equal(f[0, 1], [1, 4, 5, 6, 7, 0, 0, 1])  # leaves in key order: dir, image
    continuous = step_features(jnp.zeros((2, 3, 2)), jnp.ones((2, 3, 1)), None)
    assert continuous.shape == (2, 3, 3)


def test_the_replay_distribution_mixes_the_rank_distributions_of_novelty_and_regret():
    filled = jnp.asarray([True, True, True, False])
    regret, novelty = jnp.asarray([3.0, 1.0, 2.0, 9.0]), jnp.asarray([1.0, 3.0, 2.0, 9.0])
    p = novelty_weights(regret, novelty, filled, 0.5, "rank", 1.0)
    # ranks 1, 3, 2 (regret) give 6/11, 2/11, 3/11; ranks 3, 1, 2 (novelty) give 2/11, 6/11, 3/11
    np.testing.assert_allclose(p, [4 / 11, 4 / 11, 3 / 11, 0.0], rtol=1e-6)
    np.testing.assert_allclose(novelty_weights(regret, novelty, filled, 0.0, "rank", 1.0), [6 / 11, 2 / 11, 3 / 11, 0],
                               rtol=1e-6)
    # ...and the buffer's draws follow it (no staleness mix here)
    cfg = BufferConfig(capacity=4, staleness_coef=0.0)
    buffer = init_buffer(jnp.zeros(()), 4).replace(filled=filled, scores=regret)
    draws = np.concatenate([np.asarray(sample_replay(k, buffer, 500, cfg, True, p)[1])
                            for k in jax.random.split(jax.random.key(3), 8)])
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / draws.size, p, atol=0.03)


def test_a_slot_stores_the_novelty_of_the_first_level_stored_there():
    old = jnp.asarray([10.0, 11.0, 12.0, 13.0])
    where = jnp.asarray([2, -1, 2, 0])
    run = SimpleNamespace(global_buffer=False, shard=NO_SHARD)
    np.testing.assert_allclose(write_slots(run, old, where, jnp.asarray([1.0, 2.0, 3.0, 4.0])), [4.0, 11.0, 1.0, 13.0])


SMALL = dict(method="cenie", maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, n_actions=3,
             recurrent_size=16, num_envs=4, num_steps=16, n_epochs=2, lr=3e-3, buffer_size=16, min_fill_ratio=0.25,
             replay_prob=0.5, num_updates=4, log_every=2, eval_every=0, checkpoint_every=2, progress=False,
             novelty_window=4, novelty_samples=8, novelty_components=3)


def test_the_cenie_preset_is_robust_plr_with_the_papers_novelty_weight():
    cenie, plr = PRESETS["cenie"].options(), PRESETS["plr"].options()
    assert cenie["method"] == "cenie" and cenie["novelty_coef"] == 0.5
    assert {k for k in plr if k in cenie and cenie[k] != plr[k]} == {"preset", "method"}


def test_the_accel_cenie_preset_is_accel_with_the_papers_novelty_weight():
    ours, accel = PRESETS["accel_cenie"].options(), PRESETS["accel"].options()
    assert ours["method"] == "accel_cenie" and ours["novelty_coef"] == 0.5
    assert {k for k in accel if k in ours and ours[k] != accel[k]} == {"preset", "method"}


@pytest.mark.e2e  # two programs of the loop: about a minute of compiling on 2 cores
@pytest.mark.parametrize("method", ["cenie", "accel_cenie"])
def test_two_vmapped_seeds_train_resume_exactly_and_make_train_runs_them(tmp_path, method):
    cfg = TrainConfig.from_options(**{**SMALL, "method": method}, seeds="0,1", out_dir=str(tmp_path), run_name=method)
    rows, state = trains_resumes_and_makes_train(cfg)
    assert all(np.isfinite(r["novelty/played"]) for r in rows)
    assert ("novelty/mutated" in rows[0]) == (method == "accel_cenie")
    assert state.novelty.shape == (2, 16) and bool(state.coverage.fitted.all())
    stored = np.asarray(state.buffer.filled)
    assert (np.asarray(state.novelty)[stored] != 0).any()  # stored levels carry their measured novelty


@pytest.mark.e2e  # an ACCEL-CENIE program of its own (another static option)
def test_played_coverage_takes_every_rollout_the_student_plays_childrens_too():
    """`--novelty-coverage played`: every cycle's rollout joins the window, and a replay cycle's children's too
    (after their novelty is measured); `tests/test_plr_runners.py` checks the default, `trained`."""
    from run_helpers import CANONICAL, CANONICAL_CYCLES  # noqa: PLC0415

    from minimax.training.builder import build_runner  # noqa: PLC0415

    runner = build_runner(TrainConfig.from_options(**{**CANONICAL, "replay_prob": 1.0}, method="accel_cenie",
                                                novelty_coverage="played"))
    state, replays = jax.jit(runner.init)(jax.random.key(0)), 0
    step = jax.jit(runner.step)
    for _ in range(CANONICAL_CYCLES):
        state, metrics = step(state)
        replays += int(metrics["replay_fraction_sum"] > 0)
    assert 0 < replays < CANONICAL_CYCLES
    per_rollout = runner.num_envs * runner.novelty.novelty_samples
    assert int(state.coverage.filled.sum()) == (CANONICAL_CYCLES + replays) * per_rollout
