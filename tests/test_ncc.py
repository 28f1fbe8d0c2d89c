"""NCC (minimax/curricula/ncc.py, minimax/runners/ncc.py, minimax/agents/ti_ada.py): the projection,
the y update, the buffer replacement and TiAda against transcriptions of the authors' code
(nmonette/NCC-UED `minigrid/util/ncc_utils.py`, `minigrid_ncc.py` and jaxued's `insert_batch`) on
fixed inputs; the scoring pass against the SFL counting pass; runs that train, resume exactly and
refuse what cannot apply."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from minimax.agents.ti_ada import ti_ada
from minimax.config import ConfigError, TrainConfig
from minimax.curricula import ncc
from minimax.runners.ncc import play_attempts
from minimax.runners.rollout import count_outcomes
from minimax.training.builder import build_runner
from minimax.training.loop import train
from minimax.training.run_logs import read_rows
from minimax.cli.train import main
from run_helpers import tiny, without_timing

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

NCC_TINY = dict(maze_height=5, maze_width=5, n_walls=6, max_episode_steps=16, n_actions=3, recurrent_size=8,
                num_envs=8, num_steps=16, n_epochs=1, method="ncc", ncc_buffer_size=12, ncc_attempts=3,
                ncc_attempt_steps=20)


# ---------------------------------------------------------------- transcriptions of the authors' code

def their_projection(x, eps):
    """`projection_simplex_truncated` (ncc_utils.py), transcribed for a 1-D x."""
    ones = np.ones_like(x)
    lambdas = np.concatenate((ones * eps - x, ones - x))
    idx = np.argsort(lambdas, kind="stable")
    lambdas = lambdas[idx]
    active = np.cumsum((idx < x.shape[-1]).astype(np.float32) * 2 - 1)[:-1]
    diffs = np.diff(lambdas)
    totals = (ones * eps).sum() + np.cumsum(active * diffs)
    i = np.searchsorted(totals, 1)
    lam = (1 - totals[i]) / active[i] + lambdas[i + 1]
    return np.clip(x + lam, eps, 1)


def their_y_steps(y, score_rounds, lr, reg, trunc):
    """`train_step`'s y update: grad of `y.s - reg log(y).y`, `scale_by_rss` (start 0.1, power -0.4),
    `optax.scale(-lr)`, then `y + update` projected."""
    rss = np.full_like(y, 0.1)
    for s in score_rounds:
        g = s - reg * (np.log(y) + 1)
        rss = g * g + rss
        update = -lr * g * np.where(rss > 0, (rss + 1e-7) ** -0.4, 0.0)
        y = their_projection(y + update, trunc)
    return y


def their_insert_batch(levels, scores, new_levels, new_scores):
    """`replace_fn`: new levels sorted by `flipud(argsort)`, then jaxued's `insert_batch` on a full
    buffer whose weights are its scores (`_insert_new` at `argmin`, replacing when `score < new`)."""
    idxs = np.flipud(np.argsort(new_scores, kind="stable"))
    levels, scores = levels.copy(), scores.copy()
    for level, score in zip(new_levels[idxs], new_scores[idxs]):
        i = np.argmin(scores)
        if scores[i] < score:
            levels[i], scores[i] = level, score
    return levels, scores


def their_ti_ada(grads, lr, alpha=0.6, b1=0.9, b2=0.999, eps=1e-5):
    """`scale_x_by_ti_ada` (vy0 = zeros) then `optax.scale(-eta)`: the parameter after each step."""
    x = np.zeros_like(grads[0])
    m, v = np.zeros_like(x), np.zeros_like(x)
    e1 = e2 = 1.0
    for g in grads:
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g ** 2 + b2 * v
        e1, e2 = e1 * b1, e2 * b2
        ratio = v.sum() ** alpha / max(v.sum(), 0.0) ** alpha
        coeff = 1.0 / ((v / np.sqrt(1 - e2)) ** alpha + eps)
        x = x - lr * ratio * coeff * (m / (1 - e1))
    return x


@pytest.mark.parametrize("k, trunc, spread", [(7, 1e-3, 1.0), (64, 1e-5, 0.1), (4000, 1e-5, 0.05), (50, 0.02, 3.0)])
def test_projection_matches_the_authors_and_lands_on_the_truncated_simplex(k, trunc, spread):
    x = np.random.default_rng(k).normal(1.0 / k, spread, k).astype(np.float32)
    ours = np.asarray(ncc.project_truncated_simplex(jnp.asarray(x), trunc))
    np.testing.assert_allclose(ours, their_projection(x.astype(np.float64), trunc), rtol=1e-4, atol=2e-6)
    assert abs(ours.sum() - 1) < 1e-3 and ours.min() >= trunc * (1 - 1e-6)
    # A point already on the truncated simplex stays where it is.
    y = np.asarray(ncc.project_truncated_simplex(jnp.asarray(ours), trunc))
    np.testing.assert_allclose(y, ours, atol=1e-5)


def test_the_y_update_matches_the_authors_over_several_steps_and_ascent_flips_it():
    k, rng = 40, np.random.default_rng(0)
    rounds = [rng.uniform(0, 0.25, k).astype(np.float32) for _ in range(4)]
    y, rss = jnp.full((k,), 1 / k), jnp.full((k,), ncc.RSS_INITIAL)
    for s in rounds:
        y, rss = ncc.adversary_step(y, rss, jnp.asarray(s), 0.1, 0.05, 1e-5)
    expected = their_y_steps(np.full(k, 1 / k), [r.astype(np.float64) for r in rounds], 0.1, 0.05, 1e-5)
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-3, atol=1e-5)
    # Their step descends y.s: the weight leaves the most learnable levels. Ascent does the opposite.
    s = jnp.asarray(rounds[0])
    down, _ = ncc.adversary_step(jnp.full((k,), 1 / k), jnp.full((k,), 0.1), s, 0.1, 0.05, 1e-5)
    up, _ = ncc.adversary_step(jnp.full((k,), 1 / k), jnp.full((k,), 0.1), s, 0.1, 0.05, 1e-5, ascent=True)
    assert float(down @ s) < float(s.mean()) < float(up @ s)
    assert int(jnp.argmax(up)) == int(jnp.argmax(s)) and int(jnp.argmax(down)) == int(jnp.argmin(s))


def test_replacement_matches_jaxued_insert_batch_with_ties():
    rng = np.random.default_rng(1)
    for trial in range(5):
        scores = rng.choice([0.0, 0.09, 0.16, 0.25], 10).astype(np.float32)
        new = rng.choice([0.0, 0.09, 0.21, 0.24, 0.25], 6).astype(np.float32)
        levels, new_levels = np.arange(10), 100 + np.arange(6)
        held, held_scores, inserted = ncc.insert_sorted(jnp.asarray(levels), jnp.asarray(scores),
                                                        jnp.asarray(new_levels), jnp.asarray(new))
        want_levels, want_scores = their_insert_batch(levels, scores, new_levels, new)
        np.testing.assert_array_equal(np.asarray(held), want_levels)
        np.testing.assert_array_equal(np.asarray(held_scores), want_scores)
        assert int(inserted) == int((want_levels >= 100).sum())


def test_ti_ada_matches_the_authors_optimiser():
    grads = [np.random.default_rng(i).normal(0, 1 + i, 5).astype(np.float32) for i in range(6)]
    opt = ti_ada(optax.constant_schedule(0.01))
    x = jnp.zeros(5)
    state = opt.init(x)
    for g in grads:
        updates, state = opt.update(jnp.asarray(g), state, x)
        x = optax.apply_updates(x, updates)
    np.testing.assert_allclose(np.asarray(x), their_ti_ada([g.astype(np.float64) for g in grads], 0.01),
                               rtol=1e-4, atol=1e-7)


# ---------------------------------------------------------------- the runner

@pytest.fixture(scope="module")
def runner():
    return build_runner(TrainConfig.from_options(**NCC_TINY, progress=False))


@pytest.fixture(scope="module")
def state(runner):
    return jax.jit(runner.init)(jax.random.key(3))


def test_an_attempt_is_solved_when_the_counting_pass_sees_a_success(runner, state):
    """Same keys, same envs: `play_attempts` and SFL's `count_outcomes` agree on every attempt."""
    levels = jax.tree.map(lambda x: x[:6], state.buffer.levels)
    key, params, attempts, steps = jax.random.key(5), state.train_state.params, 3, 40
    solved, first = play_attempts(key, runner.model.apply, params, runner.model.initial_carry, runner.env,
                                  runner.env_params, levels, attempts, steps)
    tiled = jax.tree.map(lambda x: jnp.repeat(x, attempts, axis=0), levels)
    count = lambda episodes: count_outcomes(key, runner.model.apply, params, runner.model.initial_carry,  # noqa
                                            runner.env, runner.env_params, tiled, steps, episodes, steps, False)
    wins, _, _ = count(None)
    first_wins, _, _ = count(1)
    np.testing.assert_array_equal(np.asarray(solved), np.asarray(wins > 0).reshape(6, attempts).T)
    first_solved = np.asarray(first_wins > 0).reshape(6, attempts).T
    first = np.asarray(first)
    assert ((first > 0) == first_solved).all() and (first <= 1).all()   # AMaze: 1 - 0.9 steps / limit
    assert solved.any() and not solved.all()


def test_a_cycle_rescores_replaces_moves_y_and_trains_on_the_old_buffer(runner, state):
    new_state, m = jax.jit(runner.step)(state)
    b = new_state.buffer
    assert b.y.shape == (12,) and abs(float(b.y.sum()) - 1) < 1e-4 and float(b.y.min()) >= 1e-5 * 0.999
    assert 0 <= float(b.scores.min()) and float(b.scores.max()) <= 0.25
    assert int(b.inserted) == int(m["buffer/inserted"]) and 0 <= int(b.inserted) <= 8
    assert int(new_state.train_state.step) == 1 and int(m["env_steps"]) == 8 * 16
    assert int(m["refresh_env_steps"]) == (12 + 8) * 3 * 20 and int(m["replay/count"]) == 8
    static = build_runner(TrainConfig.from_options(**NCC_TINY, ncc_static_buffer=True, progress=False))
    s, _ = jax.jit(static.step)(state)
    np.testing.assert_array_equal(np.asarray(s.buffer.levels.wall_map), np.asarray(state.buffer.levels.wall_map))


@pytest.fixture(scope="module")
def ncc_run(tmp_path_factory):
    cfg = tiny(tmp_path_factory.mktemp("ncc"), **NCC_TINY, num_updates=6, log_every=3, checkpoint_every=3,
               eval_every=3, num_seeds=2, run_name="reference", ncc_score="oracle_regret", optimizer="ti_ada")
    train(cfg)
    return cfg


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_ncc_reg_trains_logs_its_distribution_and_resumes_exactly(ncc_run, tmp_path):
    rows = read_rows(ncc_run.run_dir)
    assert [r["update"] for r in rows] == [3, 3, 3, 6, 6, 6]
    for r in rows[:2]:
        assert r["buffer/size"] == 12 and 0 < r["adversary/effective_levels"] <= 12
        assert np.isfinite(r["replay/regret"]) and r["refresh_env_steps"] == 3 * (12 + 8) * 3 * 20
    resumed = ncc_run.replace(out_dir=str(tmp_path), num_updates=3)
    train(resumed)
    main(["--resume", "--num-updates", "6", "--out-dir", str(tmp_path), "--run-name", "reference", "--no-progress"])
    assert without_timing(read_rows(resumed.run_dir)) == without_timing(read_rows(ncc_run.run_dir))


def test_ncc_trains_on_cartpole(tmp_path):
    cfg = tiny(tmp_path, env="cartpole", method="ncc", recurrent_cell="none", num_envs=4, num_steps=8, n_epochs=1,
               num_updates=2, log_every=2, ncc_buffer_size=8, ncc_attempts=2, ncc_attempt_steps=40,
               max_episode_steps=40, eval_every=0)
    train(cfg)
    (row,) = [r for r in read_rows(cfg.run_dir) if "buffer/size" in r]
    assert row["buffer/size"] == 8 and row["update"] == 2 and "replay/regret" not in row


def test_ncc_presets_are_the_authors_configurations():
    from minimax.config import PRESETS
    c, r = PRESETS["ncc"], PRESETS["ncc_reg"]
    assert (c.method, c.num_envs, c.num_steps, c.ppo.n_epochs, c.ppo.n_minibatches, c.ppo.optimizer) == \
        ("ncc", 256, 256, 1, 1, "ti_ada")
    assert (c.ppo.lr, c.ppo.gamma, c.ppo.gae_lambda, c.ppo.max_grad_norm) == (0.0014658280281033783, 0.995, 0.98, 0.25)
    assert (c.ncc.ncc_buffer_size, c.ncc.ncc_attempts, c.ncc.ncc_meta_lr, c.ncc.ncc_meta_reg, c.ncc.ncc_meta_trunc) == \
        (4000, 5, 0.1, 0.05, 1e-5)
    assert (r.ncc.ncc_score, r.ncc.ncc_meta_lr, r.ncc.ncc_meta_reg) == ("oracle_regret", 0.005, 0.032)


@pytest.mark.parametrize("options, message", [
    (dict(env="cartpole", recurrent_cell="none", ncc_score="oracle_regret", ncc_attempt_steps=500),
     r"--ncc-score oracle_regret needs an environment that knows each level's optimal return; cartpole"),
    (dict(env="pendulum", recurrent_cell="none", ncc_attempt_steps=200),
     r"--ncc-score learnability counts successes, and pendulum"),
    (dict(ncc_attempt_steps=10), r"--ncc-attempt-steps \(10\) is shorter than an episode may last"),
    (dict(ncc_meta_trunc=0.1), r"--ncc-meta-trunc x --ncc-buffer-size must be <= 1"),
    (dict(ncc_attempts=0), r"ncc_attempts|--ncc-attempts"),
])
def test_bad_ncc_options_fail_naming_the_flag(options, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig.from_options(**{**NCC_TINY, **options})


def test_options_ncc_never_reads_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--method", "ncc", "--buffer-size", "64", "--no-progress"])
    assert exit_info.value.code == 2 and "--buffer-size" in capsys.readouterr().err


