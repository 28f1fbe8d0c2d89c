"""XLand-MiniGrid with rulesets as levels (issue 73, `envs/xland/`): episodes are xminigrid's own, step for step;
a level's start is a function of the level, its next episodes new rooms of the same ruleset; ACCEL's mutator
keeps the task; the benchmark files and the suites; what is refused, in one line each; and a run that
trains, logs and is evaluated from the command line."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("xminigrid")

import xminigrid  # noqa: E402
from xminigrid.wrappers import GymAutoResetWrapper  # noqa: E402

from minimax.envs.registry import get_env  # noqa: E402
from minimax.envs.wrappers import ReplayAutoReset  # noqa: E402
from minimax.envs.xland import benchmarks, rulesets  # noqa: E402
from minimax.envs.xland.env import XLand, XLandLevel, raw_key  # noqa: E402
from minimax.envs.xland.mutators import make_ruleset_mutator, named_tiles  # noqa: E402


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MINIMAX_XLAND_DIR", str(tmp_path_factory.getbasetemp() / "xland"))


def levels_of(kind: str, n: int, seed: int = 0) -> XLandLevel:
    arrays = rulesets.generate(rulesets.KINDS[kind], n, "v3")
    keys = jax.random.key_data(jax.random.split(jax.random.key(seed), n))
    return XLandLevel(goal=jnp.asarray(arrays["goals"]), rules=jnp.asarray(arrays["rules"]),
                      init_tiles=jnp.asarray(arrays["init_tiles"]), key=keys)


def one(levels, i):
    return jax.tree.map(lambda x: x[i], levels)


def test_episodes_are_xminigrids_step_for_step():
    """Observations, rewards and ends equal those of xminigrid's env under its GymAutoResetWrapper from the same
    ruleset and key, over several episodes (the time limit cut to 40 steps so rooms are redrawn often)."""
    env, params = XLand(), XLand().default_params(max_steps=40)
    theirs, their_params = xminigrid.make("XLand-MiniGrid-R4-13x13", max_steps=40)
    theirs = GymAutoResetWrapper(theirs)
    levels = levels_of("trivial", 16)
    wrapped = ReplayAutoReset(env)

    def ours(level, actions):
        obs, state = env.reset_to_level(None, level, params)

        def step(state, a):
            obs, state, r, d, _ = wrapped.step(jax.random.key(0), state, a, params)
            return state, (obs["image"], r, d)
        return obs["image"], jax.lax.scan(step, state, actions)[1]

    def reference(level, actions):
        p = their_params.replace(ruleset=level.ruleset)
        ts = theirs.reset(p, jax.random.wrap_key_data(level.key))

        def step(ts, a):
            ts = theirs.step(p, ts, a)
            return ts, (ts.observation, ts.reward, ts.last())
        return ts.observation, jax.lax.scan(step, ts, actions)[1]

    actions = jax.random.randint(jax.random.key(1), (16, 400), 0, 6)
    first, (obs, reward, done) = jax.jit(jax.vmap(ours))(levels, actions)
    their_first, (their_obs, their_reward, their_done) = jax.jit(jax.vmap(reference))(levels, actions)
    np.testing.assert_array_equal(first, their_first)
    np.testing.assert_array_equal(obs, their_obs)
    np.testing.assert_array_equal(done, their_done)
    np.testing.assert_allclose(reward, their_reward, rtol=1e-6, atol=1e-7)
    assert done.sum() >= 16 * 10 and (reward > 0).any()  # restarts, and goals reached (1 - 0.9 t / 40)


def test_a_level_starts_the_same_and_its_next_episodes_in_new_rooms():
    env, params = XLand(), XLand().default_params()
    level = one(levels_of("high", 4), 2)
    a, b = env.init_state(level, params), env.init_state(level, params)
    assert jax.tree.all(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b))
    other = env.init_state(level.replace(key=raw_key(jax.random.key(99))), params)
    assert not jnp.array_equal(a.engine.grid, other.engine.grid)
    restarted = env.restart_state(a, params)
    assert not jnp.array_equal(restarted.engine.grid, a.engine.grid)
    objects = lambda s: sorted(map(tuple, np.asarray(s.engine.grid).reshape(-1, 2).tolist()))  # noqa: E731
    assert objects(restarted) != objects(a) or not jnp.array_equal(restarted.engine.agent.position,
                                                                    a.engine.agent.position)
    placed = [t for t in map(tuple, np.asarray(level.init_tiles).tolist()) if t != (0, 0)]
    for state in (a, restarted):  # the same objects in every room
        cells = [tuple(c) for c in np.asarray(state.engine.grid).reshape(-1, 2).tolist()]
        assert all(cells.count(t) >= placed.count(t) for t in placed)
    assert jnp.array_equal(restarted.level.goal, level.goal) and restarted.engine.step_num == 0


def test_the_mutator_keeps_the_task():
    """Goal and rules never change; every object a rule or the goal names stays; added objects are new
    tiles of the distractor kinds; rooms are redrawn; the shapes are the level's."""
    levels = levels_of("high", 64)
    mutate = jax.jit(jax.vmap(make_ruleset_mutator(6)))
    children = mutate(jax.random.split(jax.random.key(3), 64), levels)
    assert jax.tree.map(lambda a, b: a.shape == b.shape and a.dtype == b.dtype, children, levels)
    np.testing.assert_array_equal(children.goal, levels.goal)
    np.testing.assert_array_equal(children.rules, levels.rules)
    allowed = set(rulesets.NEAR_LHS)
    changed_tiles = changed_keys = 0
    for i in range(64):
        parent, child = one(levels, i), one(children, i)
        named = set(map(tuple, np.asarray(named_tiles(parent)).tolist())) - {(0, 0)}
        before = [tuple(t) for t in np.asarray(parent.init_tiles).tolist() if tuple(t) != (0, 0)]
        after = [tuple(t) for t in np.asarray(child.init_tiles).tolist() if tuple(t) != (0, 0)]
        assert [t for t in before if t in named] == [t for t in after if t in named]  # needed objects stay
        added = [t for t in after if t not in before]
        assert all(t in allowed and t not in named for t in added) and len(set(added)) == len(added)
        changed_tiles += before != after
        changed_keys += not np.array_equal(parent.key, child.key)
    assert changed_tiles > 10 and changed_keys > 10


def test_benchmark_files_cache_pad_and_refuse_what_is_not_one(tmp_path):
    head = benchmarks.load("high-3m", "v2", 50)
    assert head["rules"].shape[1:] == (18, 7) and head["init_tiles"].shape[1:] == (23, 2)  # the whole file's padding
    again = benchmarks.load("high-3m", "v2", 50)  # from the cache
    assert all(np.array_equal(head[k], again[k]) for k in head)
    np.testing.assert_array_equal(head["goals"], rulesets.generate(rulesets.KINDS["high"], 50, "v2")["goals"])
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"bad.npz is not an XLand ruleset file"):
        benchmarks.read(tmp_path / "bad.npz")
    np.savez(tmp_path / "other.npz", goals=np.zeros((3, 5), np.uint8))
    with pytest.raises(ValueError, match=r"other.npz is not an XLand ruleset file: it has no rules, init_tiles, "
                                         r"num_rules \(it holds goals\)"):
        benchmarks.read(tmp_path / "other.npz")
    np.savez(tmp_path / "wide.npz", **{**head, "goals": np.zeros((50, 6), np.uint8)})
    with pytest.raises(ValueError, match=r"goals is uint8\[50, 6\], not uint8 \[50, 5\]"):
        benchmarks.read(tmp_path / "wide.npz")


def test_every_benchmark_pads_as_its_whole_file():
    """The paddings of `PADDING` bound every prefix (a whole benchmark's rows are the longest prefix)."""
    for (version, name), (rules, tiles) in benchmarks.PADDING.items():
        config, _ = rulesets.check_benchmark(name, version)
        head = rulesets.generate(config, 2000, version)
        assert head["rules"].shape[1] <= rules and head["init_tiles"].shape[1] <= tiles, (version, name)
        assert benchmarks.load(name, version, 30)["init_tiles"].shape[1:] == (tiles, 2)


def test_sfl_draws_are_stored_as_their_jax_drew_them():
    """The stored rows and reset keys are jax's non-partitionable threefry draws of SFL's code; the first rows
    land where the recording of their evaluation pickle says (tests/test_xland_rulesets.py reads its rulesets)."""
    stored = benchmarks.sfl_draws()
    assert stored["rows"].shape == (10_000,) and stored["keys"].shape == (10_000, 2)
    if hasattr(jax, "threefry_partitionable"):
        drawn = benchmarks.draw_sfl()
        np.testing.assert_array_equal(stored["rows"], drawn["rows"])
        np.testing.assert_array_equal(stored["keys"], drawn["keys"])
    assert list(stored["rows"][:3]) == [1665335, 838554, 2424516]


def test_bad_input_is_one_line():
    from minimax.config import ConfigError, TrainConfig  # noqa: PLC0415

    spec = get_env("xland")
    with pytest.raises(ValueError, match=r"unknown XLand evaluation suite 'tiny'; known suites: sfl, sfl-1k, head"):
        spec.check_suite("tiny", None)
    with pytest.raises(ConfigError, match=r"--xland-benchmark 'huge-9m' is not a v2 benchmark; known: trivial-1m, "):
        TrainConfig.from_options(env="xland", xland_benchmark="huge-9m")
    with pytest.raises(ConfigError, match=r"--xland-benchmark 'trivial-1m' is not a v3 benchmark; known: trivial-21k"):
        TrainConfig.from_options(env="xland", xland_benchmark="trivial-1m", xland_version="v3")
    with pytest.raises(ConfigError, match=r"--xland-pool must be >= 0, got -1"):
        TrainConfig.from_options(env="xland", xland_pool=-1)


def test_without_the_extra_the_install_line_is_said(tmp_path):
    """`--env xland` where xminigrid is not installed: one line naming the extra to install."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = ("import sys; sys.modules['xminigrid'] = None; from minimax.cli.train import main; "
            f"main(['--env', 'xland', '--num-updates', '1', '--out-dir', {str(tmp_path)!r}, '--no-progress'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line and not line.startswith("compilation cache:")]
    assert len(lines) == 1 and "pip install 'minimax[xland]'" in lines[0], done.stderr


def test_a_trial_keeps_going_across_episodes_in_new_rooms():
    """A trial of 35 steps over 10-step episodes: the learner's `done` only at its end; the level's episodes end
    at 10, 20 and 30, each followed by a new room; the observation carries the previous action and reward."""
    from minimax.envs.trials import Trials  # noqa: PLC0415

    env = Trials(XLand())
    params = env.default_params(steps=35, max_steps=10)
    level = one(levels_of("high", 2), 1)
    obs, state = env.reset_to_level(None, level, params)
    assert set(obs) == {"image", "prev_action", "prev_reward"} and int(obs["prev_action"]) == 0
    step = jax.jit(lambda s, a: env.step(jax.random.key(0), s, a, params))
    ends, dones, rooms = [], [], [np.asarray(state.inner.engine.grid)]
    for t in range(1, 36):
        action = t % 3
        obs, state, reward, done, info = step(state, action)
        assert int(obs["prev_action"]) == action and float(obs["prev_reward"]) == float(reward)
        if info["episode_done"]:
            ends.append(t)
            rooms.append(np.asarray(state.inner.engine.grid))
            assert int(state.inner.engine.step_num) == 0
        dones.append(bool(done))
    assert ends == [10, 20, 30] and dones == [False] * 34 + [True]
    assert not any(np.array_equal(a, b) for a, b in zip(rooms, rooms[1:]))
    assert float(info["episode_stats"]["trial/episodes"]) == 3 and bool(info["truncated"])
    short = env.default_params(episodes=2, max_steps=10)
    assert short.max_steps == 20 and env.default_params(steps=35, episodes=2, max_steps=10).max_steps == 20


def test_success_counts_read_the_episodes_of_a_trial():
    """SFL's learnability counts a trial's episodes (`count_outcomes`), not trials: an unsolvable ruleset
    (hold a red ball in a room without one) over two 35-step trials of 10-step episodes has 6 episodes, 0 won."""
    from minimax.envs.trials import Trials  # noqa: PLC0415
    from minimax.models.xland import XLandActorCritic  # noqa: PLC0415
    from minimax.runners.rollout import count_outcomes  # noqa: PLC0415

    env = Trials(XLand())
    params = env.default_params(steps=35, max_steps=10)
    goal = jnp.asarray([1, rulesets.BALL, rulesets.RED, 0, 0], jnp.uint8)
    level = XLandLevel(goal=goal, rules=jnp.zeros((1, 7), jnp.uint8), init_tiles=jnp.zeros((1, 2), jnp.uint8),
                       key=raw_key(jax.random.key(0)))
    levels = jax.tree.map(lambda x: jnp.stack([x, x]), level)
    model = XLandActorCritic(recurrent_cell="gru", recurrent_size=8, head_hidden=8)
    obs = jax.tree.map(lambda x: x[None, None], env.get_obs(env.init_state(level, params), params))
    variables = model.init(jax.random.key(1), model.initial_carry(1), obs, jnp.ones((1, 1), bool))
    wins, episodes, _ = count_outcomes(jax.random.key(2), model.apply, variables, model.initial_carry, env, params,
                                       levels, max_steps=70, stop_early=False)
    assert list(np.asarray(episodes)) == [6, 6] and list(np.asarray(wins)) == [0, 0]


@pytest.mark.e2e  # a run from the command line with its evaluation: about a minute here
def test_the_dr_preset_trains_in_trials_and_is_evaluated(tmp_path):
    """`--preset xland_dr` (SFL's XLand DR, shrunk to this CPU): trains in meta-RL trials, logs the trials'
    episode statistics, and `evaluate.py` scores it on the quick suite in 10-episode trials (a win rate in
    tenths)."""
    from minimax.cli.train import main as train_main  # noqa: PLC0415
    from minimax.config import PRESETS  # noqa: PLC0415
    from minimax.evaluation.evaluate import main as evaluate_main  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    cfg = PRESETS["xland_dr"]
    assert (cfg.env.xland_trial_steps, cfg.num_envs, cfg.num_steps, cfg.model.recurrent_size) == (4096, 8192, 32, 1024)
    train_main(["--preset", "xland_dr", "--num-envs", "16", "--num-updates", "4", "--xland-trial-steps", "48",
                "--max-episode-steps", "16", "--recurrent-size", "16", "--head-hidden", "16", "--xland-pool", "256",
                "--log-every", "2", "--eval-every", "0", "--checkpoint-every", "4", "--out-dir", str(tmp_path),
                "--run-name", "dr", "--no-progress"])
    rows = read_rows(tmp_path / "dr")
    assert [r["update"] for r in rows] == [2, 4]
    # 48-step trials of 16-step episodes (more where solved sooner)
    assert rows[-1]["trial/episodes"] >= 3 and 0 <= rows[-1]["trial/solved_rate"] <= 1
    evaluate_main([str(tmp_path / "dr"), "--suite", "head", "--episodes", "1", "--out", str(tmp_path / "eval")])
    doc = json.loads((tmp_path / "eval" / "results.json").read_text())
    rates = [m["solved_rate"] for m in doc["runs"][0]["mazes"].values()]
    assert len(rates) == 100 and all(round(r * 10, 6) == int(round(r * 10)) for r in rates)


@pytest.mark.e2e  # a run from the command line: about a minute here
def test_the_sfl_preset_keeps_a_trials_rulesets_for_its_updates(tmp_path):
    """`--preset xland_sfl` (SFL's XLand SFL, shrunk): every env plays set rulesets, a trial's (here 2 updates of
    16 steps) kept across its updates, the set refreshed between trials."""
    from minimax.cli.train import main as train_main  # noqa: PLC0415
    from minimax.config import PRESETS  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    s = PRESETS["xland_sfl"].sfl
    assert (s.sfl_batch_levels, s.sfl_rollout_steps, s.sfl_set_size, s.sfl_cycle_updates, s.sfl_set_fraction) == (
        40_000, 5070, 8192, 128, 1.0)
    train_main(["--preset", "xland_sfl", "--num-envs", "16", "--num-steps", "16", "--num-updates", "4",
                "--xland-trial-steps", "32", "--max-episode-steps", "16", "--recurrent-size", "16",
                "--head-hidden", "16",
                "--xland-pool", "256", "--sfl-batch-levels", "32", "--sfl-rollout-steps", "64", "--sfl-episodes", "4",
                "--sfl-set-size", "8", "--sfl-refresh-every", "2", "--sfl-cycle-updates", "2", "--log-every", "4",
                "--eval-every", "0", "--checkpoint-every", "0", "--out-dir", str(tmp_path), "--run-name", "sfl",
                "--no-progress"])
    (row,) = read_rows(tmp_path / "sfl")
    assert row["buffer/refreshes"] == 2 and row["set/count"] == 4 * 16 and row["new/count"] == 0
    assert row["trial/episodes"] >= 2  # each 32-step trial: two 16-step episodes (more where solved sooner)


@pytest.mark.e2e  # a run from the command line: about half a minute here
def test_the_plr_preset_scores_a_trials_rulesets_at_its_end(tmp_path):
    """`--preset xland_plr` (SFL's XLand PLR, shrunk): a trial's rulesets (here 2 updates of 16 steps, 10-step
    episodes: three end inside each 32-step trial) are kept for its updates and scored over its episodes at its end;
    the buffer (16, full after the first trial) then replays."""
    from minimax.cli.train import main as train_main  # noqa: PLC0415
    from minimax.config import PRESETS  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    c = PRESETS["xland_plr"]
    assert (c.method, c.buffer.capacity, c.replay.replay_prob, c.curriculum.cycle_updates, c.curriculum.min_fill_ratio,
            c.curriculum.score_function, c.buffer.score_transform, c.buffer.temperature) == (
        "plr", 40_000, 0.95, 128, 1.0, "maxmc", "rank", 1.0)
    train_main(["--preset", "xland_plr", "--num-envs", "16", "--num-steps", "16", "--num-updates", "8",
                "--xland-trial-steps", "32", "--max-episode-steps", "10", "--recurrent-size", "16", "--head-hidden",
                "16", "--xland-pool", "256", "--buffer-size", "16", "--cycle-updates", "2", "--log-every", "8",
                "--eval-every", "0", "--checkpoint-every", "0", "--out-dir", str(tmp_path), "--run-name", "plr",
                "--no-progress"])
    (row,) = read_rows(tmp_path / "plr")
    assert (row["gradient_updates"], row["cycles"], row["buffer/size"]) == (8, 8, 16)
    assert row["new/count"] == 16 and row["replay/count"] + row["new/count"] == 4 * 16  # a group counted per trial
    assert row["trial/episodes"] >= 3 and np.isfinite(row["new/score"])


@pytest.mark.e2e  # about 20 s here
def test_the_student_learns_a_ruleset_across_a_trials_episodes(tmp_path, monkeypatch):
    """DR in 1,024-step trials on the first 2 rulesets of trivial-21k (v3) in a 9x9 room: one is 'stand next to the
    orange goal tile and step into it', which a trained agent repeats in a few dozen steps, so a trial holds many
    more (shorter) episodes and a larger return than at the start (4 of 243 steps each at random). The chunk is
    compiled at full optimisation: at the suite's -O0 its 160 updates ran for 33 s here."""
    from run_helpers import FULL_OPTIMISATION  # noqa: PLC0415

    from minimax.cli.train import main as train_main  # noqa: PLC0415
    from minimax.training import programs  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    monkeypatch.setattr(programs, "CHUNK_COMPILER_OPTIONS", FULL_OPTIMISATION)
    monkeypatch.setattr(programs, "_KEPT", type(programs._KEPT)())  # its programs are not kept for later tests
    train_main(["--preset", "xland_dr", "--xland-benchmark", "trivial-21k", "--xland-version", "v3", "--xland-pool", "2",
                "--xland-room", "R1", "--xland-size", "9", "--num-envs", "64", "--n-minibatches", "4",
                "--xland-trial-steps", "1024", "--recurrent-size", "128", "--head-hidden", "128", "--num-updates", "160",
                "--log-every", "32", "--eval-every", "0", "--checkpoint-every", "160", "--out-dir", str(tmp_path),
                "--run-name", "learn", "--no-progress"])
    rows = read_rows(tmp_path / "learn")
    first, last = rows[0], rows[-1]  # measured here: 10.7 episodes and a return of 6.8 after 32 updates, 22.5 and 18.7
    assert last["trial/episodes"] > 12 and last["train/return"] > 5  # at random: 4.2 episodes (1,024 / 243), 0.1
    assert last["trial/episodes"] > first["trial/episodes"]
