"""Sampling For Learnability (minimax/runners/sfl.py, minimax/curricula/learnable_set.py): the
learnability estimate against NumPy, the set of a refresh, the env mix, runs that resume
exactly, and the options it refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.training.builder import build_runner
from minimax.config import ConfigError, TrainConfig
from minimax.curricula.learnable_set import empty_set, learnability, merge_top
from minimax.training.run_logs import read_rows
from minimax.runners.rollout import outcome_start, outcome_step
from minimax.training.loop import train
from minimax.cli.train import main
from run_helpers import tiny, without_timing

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

SFL_TINY = dict(maze_height=5, maze_width=5, n_walls=6, max_episode_steps=16, n_actions=3, recurrent_size=8,
                num_envs=8, num_steps=16, n_epochs=1, method="sfl", sfl_batches=3, sfl_batch_levels=16,
                sfl_rollout_steps=64, sfl_episodes=3, sfl_set_size=8, sfl_refresh_every=2, sfl_chunk_steps=8)


@pytest.fixture(scope="module")
def runner():
    return build_runner(TrainConfig.from_options(**SFL_TINY, progress=False))


@pytest.fixture(scope="module")
def state(runner):
    return jax.jit(runner.init)(jax.random.key(3))


def first_episodes(done, solved, wanted, limit):
    """NumPy: successes and episodes among each level's first `wanted` episodes ending before `limit`."""
    wins, eps = np.zeros(done.shape[1], int), np.zeros(done.shape[1], int)
    for t in range(min(limit, done.shape[0])):
        counted = done[t] & (eps < wanted)
        wins += counted & solved[t]
        eps += counted
    return wins, eps


def test_learnability_is_p_times_one_minus_p_of_counted_episodes():
    rng = np.random.default_rng(0)
    eps = rng.integers(0, 11, 500)
    wins = rng.integers(0, 11, 500) % (eps + 1)
    score, p = learnability(jnp.asarray(wins), jnp.asarray(eps))
    p_np = np.where(eps > 0, wins / np.maximum(eps, 1), 0.0)
    np.testing.assert_allclose(p, p_np, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(score, p_np * (1 - p_np), rtol=1e-6, atol=1e-7)
    assert float(score.max()) <= 0.25


def test_merging_batches_keeps_the_top_levels_like_one_stable_sort():
    """The reference's `argsort(scores)[-k:]` over every sampled level (ties: the later ones)."""
    rng = np.random.default_rng(1)
    batches = [rng.choice([0.0, 0.09, 0.16, 0.21, 0.25], 20).astype(np.float32) for _ in range(3)]
    kept = empty_set(jnp.zeros(()), 12)
    for i, s in enumerate(batches):
        ids = jnp.arange(20.0) + 100 * i  # the "level" is its sampling index
        kept = merge_top(kept, ids, jnp.asarray(s), jnp.asarray(s))
    all_scores = np.concatenate(batches)
    expected = np.sort(np.argsort(all_scores, kind="stable")[-12:])
    np.testing.assert_array_equal(np.asarray(kept.levels), (expected // 20) * 100 + expected % 20)
    np.testing.assert_array_equal(kept.learnability, all_scores[expected])


def test_the_sampling_pass_counts_each_levels_first_episodes_and_stops_early_with_the_same_estimates(runner, state):
    ts, cfg = state.train_state, runner.sfl
    levels = jax.vmap(runner.generator)(jax.random.split(jax.random.key(5), 16))
    key = jax.random.key(7)
    early = jax.jit(lambda: runner.estimate_success(key, ts.apply_fn, ts.params, levels, True))()
    full = jax.jit(lambda: runner.estimate_success(key, ts.apply_fn, ts.params, levels, False))()
    step = outcome_step(key, ts.apply_fn, ts.params, runner.env, runner.env_params, cfg.sfl_rollout_steps)
    start = outcome_start(runner.env, runner.env_params, runner.model.initial_carry, levels)
    done, solved = jax.jit(lambda: jax.lax.scan(step, start, jnp.arange(72))[1])()
    wins, eps = first_episodes(np.asarray(done), np.asarray(solved), cfg.sfl_episodes, cfg.sfl_rollout_steps)
    np.testing.assert_array_equal(full[0], wins)
    np.testing.assert_array_equal(full[1], eps)
    np.testing.assert_array_equal(early[0], wins)
    np.testing.assert_array_equal(early[1], eps)
    assert int(full[2]) == cfg.sfl_rollout_steps
    # episodes last at most 16 steps: 3 per level need at most 48, so the pass stops at the first check after
    # (levels the maze knows to be unsolvable do not hold it up)
    ends, solvable = np.asarray(done).cumsum(0), np.asarray(runner.level_facts(levels, runner.env_params)[1])
    needed = max((int(np.argmax(ends[:, i] >= 3)) + 1 for i in range(16) if solvable[i]), default=0)
    assert int(early[2]) == min(-(-needed // cfg.sfl_chunk_steps) * cfg.sfl_chunk_steps, cfg.sfl_rollout_steps)


def test_a_refresh_keeps_the_most_learnable_levels_it_sampled(runner, state):
    ts, cfg = state.train_state, runner.sfl
    key = jax.random.key(11)
    new = jax.jit(lambda: runner.refresh(key, ts.apply_fn, ts.params, state.learnable, jnp.asarray(True)))()
    kept = jax.jit(lambda: runner.refresh(key, ts.apply_fn, ts.params, state.learnable, jnp.asarray(False)))()
    assert int(kept.refreshes) == 0 and int(new.refreshes) == 1
    # every batch again, as the refresh draws it: its scores, then the top 8 of all 48
    scores = []
    for i in range(cfg.sfl_batches):
        k_levels, k_play = jax.random.split(jax.random.fold_in(key, i))
        levels = jax.vmap(runner.generator)(jax.random.split(k_levels, cfg.sfl_batch_levels))
        wins, eps, _ = runner.estimate_success(k_play, ts.apply_fn, ts.params, levels)
        scores.append(np.asarray(learnability(wins, eps)[0]))
    scores = np.concatenate(scores)
    np.testing.assert_allclose(np.sort(np.asarray(new.learnability)), np.sort(scores)[-cfg.sfl_set_size:], atol=1e-6)
    p = np.asarray(new.success)
    np.testing.assert_allclose(new.learnability, p * (1 - p), atol=1e-6)
    assert float(new.sampled_learnable) == pytest.approx(np.mean(scores > 0))


def test_an_update_plays_fresh_levels_first_and_set_levels_last(runner, state):
    ts = state.train_state
    learnable = jax.jit(lambda: runner.refresh(jax.random.key(2), ts.apply_fn, ts.params, state.learnable,
                                               jnp.asarray(True)))()
    assert (runner.fresh_envs, runner.set_envs) == (4, 4)  # --sfl-set-fraction 0.5 of 8 envs
    levels = jax.jit(runner.next_levels)(jax.random.key(4), learnable)
    walls = np.asarray(levels.wall_map).reshape(8, -1)
    set_walls = np.asarray(learnable.levels.wall_map).reshape(8, -1)
    in_set = [any((w == s).all() for s in set_walls) for w in walls]
    assert all(in_set[4:])
    assert not all(in_set[:4])  # fresh generator levels (a 5x5 maze with 6 wall draws rarely repeats)


def test_a_cycle_of_several_updates_keeps_its_levels_and_episodes():
    """`--sfl-cycle-updates 2` (SFL's meta-RL keeps a trial's levels for its 128 updates): the second update of a
    cycle continues the envs' episodes on the same levels; the next cycle starts new levels from their start."""
    cycle = build_runner(TrainConfig.from_options(**{**SFL_TINY, "max_episode_steps": 64, "sfl_rollout_steps": 64,
                                                     "sfl_cycle_updates": 2}, progress=False))
    step = jax.jit(cycle.step)
    first = jax.jit(cycle.init)(jax.random.key(3))
    second, _ = step(first)
    third, _ = step(second)
    fourth, _ = step(third)
    same = lambda a, b: bool(jnp.array_equal(a.levels.wall_map, b.levels.wall_map))  # noqa: E731
    assert same(first, second) and not same(second, third) and same(third, fourth)
    lengths = [np.asarray(s.stream.episode_length) for s in (second, third, fourth)]
    # 64-step episodes of 16-step updates: only a continued episode is longer than an update (one can end early)
    assert (lengths[0] <= 16).all() and (lengths[1] > 16).sum() >= 4 and (lengths[2] <= 16).all()
    assert build_runner(TrainConfig.from_options(**SFL_TINY, progress=False)).init(jax.random.key(0)).stream is None


@pytest.fixture(scope="module")
def sfl_run(tmp_path_factory):
    """Two vmapped seeds, a refresh every 2 updates, checkpoints every 5."""
    cfg = tiny(tmp_path_factory.mktemp("sfl"), **SFL_TINY, num_updates=10, log_every=5, checkpoint_every=5,
               eval_every=5, num_seeds=2, run_name="reference")
    train(cfg)
    return cfg


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_sfl_trains_logs_its_set_and_resumes_exactly(sfl_run, tmp_path):
    rows = read_rows(sfl_run.run_dir)
    assert [r["update"] for r in rows] == [5, 5, 5, 10, 10, 10]
    for r in rows[:2]:  # refreshes before updates 1, 3, 5 (first chunk) and 7, 9
        assert r["buffer/size"] == 8 and r["buffer/refreshes"] == 3
        assert 0 < r["refresh_env_steps"] <= 3 * 3 * 16 * 64 and r["env_steps"] == 5 * 8 * 16
        assert 0 <= r["buffer/mean_score"] <= 0.25 and 0 <= r["buffer/sampled_learnable_fraction"] <= 1
        assert r["new/count"] == r["set/count"] == 5 * 4
    assert rows[3]["buffer/refreshes"] == 5
    resumed = sfl_run.replace(out_dir=str(tmp_path), num_updates=5)
    train(resumed)
    main(["--resume", "--num-updates", "10", "--out-dir", str(tmp_path), "--run-name", "reference", "--no-progress"])
    assert without_timing(read_rows(resumed.run_dir)) == without_timing(read_rows(sfl_run.run_dir))


def test_sfl_preset_is_the_authors_maze_configuration():
    from minimax.config import PRESETS
    c = PRESETS["sfl"]
    assert (c.method, c.num_envs, c.num_steps, c.num_updates) == ("sfl", 256, 256, 4500)
    assert (c.ppo.lr, c.ppo.anneal_lr, c.ppo.gamma, c.ppo.gae_lambda, c.ppo.clip_eps, c.ppo.entropy_coef) == \
        (2.5e-4, True, 0.99, 0.95, 0.04, 0.0)
    assert (c.ppo.n_epochs, c.ppo.n_minibatches, c.env.n_walls) == (4, 4, 60)
    s = c.sfl
    assert (s.sampled_levels, s.sfl_rollout_steps, s.sfl_episodes, s.sfl_set_size, s.sfl_refresh_every,
            s.set_envs(c.num_envs)) == (25_000, 2000, 10, 1000, 100, 128)


@pytest.mark.parametrize("options, message", [
    (dict(sfl_set_size=100), r"--sfl-set-size \(100\) is larger than the levels sampled per refresh"),
    (dict(sfl_set_fraction=0.05), r"--sfl-set-fraction 0.05 of --num-envs 8 gives no env playing set levels"),
    (dict(sfl_rollout_steps=10), r"--sfl-rollout-steps \(10\) is shorter than an episode may last"),
    (dict(env="pendulum", recurrent_cell="none"), r"--method sfl scores levels by how often their episodes succeed"),
    (dict(sfl_batches=0), r"sfl_batches|--sfl-batches"),
    (dict(buffer_png=4), r"--buffer-png draws the PLR family's level buffer; --method sfl has none"),
    (dict(sfl_cycle_updates=3), r"--sfl-refresh-every \(2\) must be a multiple of --sfl-cycle-updates \(3\)"),
])
def test_bad_sfl_options_fail_naming_the_flag(options, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig.from_options(**{**SFL_TINY, **options})


