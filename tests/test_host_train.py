"""Training on a host environment (Procgen): the loop runs, resumes exactly, and refuses bad input in one line."""

import dataclasses
import json
import pickle
from pathlib import Path

import jax
import numpy as np
import pytest

try:
    from minimax.envs.host.procgen import import_procgen
    import_procgen()
except ModuleNotFoundError as e:  # CI installs procgen (.ci/run); elsewhere these tests skip
    pytest.skip(str(e), allow_module_level=True)

from minimax.agents.ppo import ppo_update  # noqa: E402
from minimax.host.config import PROCGEN_PPO, HostTrainConfig, parse_host_config  # noqa: E402
from minimax.host.state_files import load_state  # noqa: E402
from minimax.core.options import ConfigError  # noqa: E402
from minimax.host.learner import HostLearner  # noqa: E402
from minimax.host.loop import HostRun, train  # noqa: E402
from minimax.models.impala import ImpalaActorCritic  # noqa: E402
from minimax.cli.train import main as train_main  # noqa: E402
from minimax.core.methods import host_method_names, method_names  # noqa: E402

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes

TINY = dict(env="procgen-bigfish", num_envs=4, num_steps=8, train_levels=6, impala_channels=(2, 2, 2), hidden=8,
            eval_every=2, eval_episodes=2, final_eval_episodes=2, checkpoint_every=1, progress=False,
            ppo=dataclasses.replace(PROCGEN_PPO, n_minibatches=2), num_updates=3)
TINY_ARGV = ["--env", "procgen-bigfish", "--num-envs", "4", "--num-steps", "8", "--impala-channels", "2", "2", "2",
             "--hidden", "8", "--eval-every", "0", "--final-eval-episodes", "2", "--n-minibatches", "2", "--no-progress"]


def _final(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    host = load_state(sorted((run_dir / "host_state").glob("*.npz"), key=lambda p: int(p.stem))[-1])
    return rows, host


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_resumed_run_continues_exactly(tmp_path):
    straight = train(HostTrainConfig(**TINY, out_dir=str(tmp_path), run_name="straight"))
    cut = HostTrainConfig(**{**TINY, "num_updates": 2}, out_dir=str(tmp_path), run_name="cut")
    train(cut)
    resumed = train(dataclasses.replace(cut, num_updates=3, resume=True))
    (rows_a, host_a), (rows_b, host_b) = _final(straight), _final(resumed)
    assert [r["update"] for r in rows_b] == [1, 2, 3]
    for key in ("value_loss", "policy_loss", "sampler/mean_score", "test_return", "train_levels_return"):
        assert rows_b[-1][key] == pytest.approx(rows_a[-1][key], rel=1e-5, abs=1e-7), key
    np.testing.assert_array_equal(host_a["sampler"]["scores"] > 0, host_b["sampler"]["scores"] > 0)
    np.testing.assert_allclose(host_a["sampler"]["scores"], host_b["sampler"]["scores"], rtol=1e-5, atol=1e-7)
    assert host_a["sampler"]["rng"] == host_b["sampler"]["rng"]
    assert [bytes(s) for s in host_a["env"]["slots"]] == [bytes(s) for s in host_b["env"]["slots"]]
    np.testing.assert_array_equal(host_a["obs"], host_b["obs"])
    assert rows_a[-1]["final_test_return"] == pytest.approx(rows_b[-1]["final_test_return"])


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_damaged_newest_checkpoint_is_set_aside_and_the_run_resumes_from_the_one_before(tmp_path, capsys):
    """As on the compiled path (`tests/test_faults.py`): the newest host state damaged, `--resume` warns, moves
    that checkpoint to `corrupt-checkpoints/`, and retrains from the previous one exactly as the run did."""
    cut = HostTrainConfig(**{**TINY, "num_updates": 2, "checkpoint_every": 1, "log_every": 1}, out_dir=str(tmp_path),
                          run_name="cut")
    train(cut)
    first = _rows(cut.run_dir)
    (cut.run_dir / "host_state" / "2.npz").write_bytes(b"garbage")
    capsys.readouterr()
    train(dataclasses.replace(cut, num_updates=3, resume=True))
    err = capsys.readouterr().err
    assert "warning: skipped checkpoint 2" in err and "resuming from the newest intact checkpoint, update 1" in err
    assert sorted(p.name for p in (cut.run_dir / "corrupt-checkpoints" / "2").iterdir()) >= ["2.npz"]
    again = _rows(cut.run_dir)
    assert [r["update"] for r in again] == [1, 2, 3]
    for key in ("value_loss", "policy_loss", "sampler/mean_score"):  # update 2 retrained as it first ran
        assert again[1][key] == pytest.approx(first[1][key], rel=1e-5, abs=1e-7), key


def test_host_update_is_the_ppo_update():
    """The host loop's update (epochs looped on the host) equals `agents.ppo.ppo_update` (one scan)."""
    ppo = dataclasses.replace(PROCGEN_PPO, n_minibatches=2, n_epochs=2)
    learner = HostLearner(ImpalaActorCritic(n_actions=5, channels=(2, 2, 2), hidden=8), ppo, "value_l1")
    state = learner.init(jax.random.key(0), np.zeros((16, 16, 3), np.uint8))
    rng = np.random.default_rng(0)
    T, N = 3, 4
    batch = learner.batch(rng.integers(0, 255, (T, N, 16, 16, 3), dtype=np.uint8), rng.integers(0, 5, (T, N)),
                          rng.normal(size=(T, N)).astype(np.float32) - 1.6, rng.normal(size=(T, N)).astype(np.float32),
                          rng.normal(size=(T, N)).astype(np.float32), rng.normal(size=(T, N)).astype(np.float32))
    key = jax.random.key(7)
    ours, m1 = learner.update(key, state, batch)
    ref, m2 = jax.jit(lambda k, s, b: ppo_update(k, s, b, ppo))(key, state, batch)
    for a, b in zip(jax.tree.leaves(ours.params), jax.tree.leaves(ref.params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    for k in ("policy_loss", "value_loss", "entropy", "explained_variance"):
        assert float(m1[k]) == pytest.approx(float(m2[k]), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("argv,message", [
    (["--env", "procgen-notagame"], "notagame"),
    (["--env", "procgen-coinrun", "--distribution-mode", "extra-hard"], "extra-hard"),
    (["--env", "procgen-coinrun", "--num-envs", "3", "--num-steps", "3"], "--n-minibatches"),
    (["--env", "procgen-coinrun", "--resume", "--run-name", "nothing-here"], "no run to resume"),
    (["--env", "procgen-coinrun", "--method", "robust_plr", "--score-function", "random"], "needs a level score"),
    (["--env", "procgen-coinrun", "--method", "robust_plr", "--partial-episodes", "carry"], "must be flush"),
    (["--env", "gym-NoSuchEnv-v0"], "--env gym-NoSuchEnv-v0: no such gymnasium environment"),
    (["--env", "gym-Pendulum-v1"], "only Discrete action spaces"),
    (["--env", "procgen-coinrun", "--seeds", "0,1"], "--seeds: host-environment runs train one seed per run"),
    (["--env", "procgen-coinrun", "--num-seeds", "2"], "run one command per --seed"),
    (["--env", "procgen-coinrun", "--buffer-size", "50"], "its size is --train-levels"),
    (["--env", "procgen-coinrun", "--num-env-steps", "64"], "--num-env-steps is an old host option name: give "
                                                             "--num-updates ceil(S / (num_envs x num_steps))"),
    (["--env", "procgen-coinrun", "--strategy=value_l1"], "--strategy is an old host option name: give "
                                                          "--score-function (old score names: value_l1 is l1_value_loss"),
    (["--env", "procgen-coinrun", "--score-function", "positive_value_loss"], "give --score-function pvl"),
    (["--env", "procgen-coinrun", "--method", "accel"], "--method accel runs on the compiled path only"),
    *[(["--env", "procgen-coinrun", "--method", m], f"--method {m} runs on the compiled path only")
      for m in sorted(set(method_names()) - set(host_method_names()) - {"accel"})],  # every registered one
    (["--env", "procgen-coinrun", "--method", "robust_plr", "--score-function", "pace"],
     "--score-function pace needs what a host run's level sampler does not keep"),
    (["--env", "procgen-coinrun", "--method", "nope"], "--method 'nope' is no registered method; on a host "
                                                       "environment (--env procgen-coinrun): dr"),
])
def test_bad_input_is_one_line(argv, message, tmp_path, capsys):
    """...and leaves nothing behind: no run directory for a run that could not start."""
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--out-dir", str(tmp_path / "runs")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("text, message", [("[1, 2]", "expected a JSON object of options, got list"),
                                           ("{not json", "cannot read config"),
                                           ('{"kind": "host"}', "is no host-environment run config")])
def test_a_damaged_run_config_is_one_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as e:
        HostTrainConfig.load(path)
    assert str(path) in str(e.value)


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_robust_plr_trains_only_after_replays_and_resumes_exactly(tmp_path, capsys):
    """Robust PLR: rollouts of new levels score them without an update, replays train; each env plays one
    level for a whole rollout; a cut run resumes to the same state as a straight one."""
    robust = {**TINY, "method": "robust_plr", "budget": "env_steps", "num_updates": 6}  # 6 rollouts
    rows, host = _final(train(HostTrainConfig(**robust, out_dir=str(tmp_path), run_name="straight")))
    assert "trains only on the first 8 steps of each level's episodes" in capsys.readouterr().err
    trained = [r["trained"] for r in rows]
    assert trained[0] == 0.0 and 1.0 in trained  # no level seen yet: the first rollout plays new levels
    assert [r["gradient_updates"] for r in rows] == np.cumsum(trained).tolist()
    assert all((r.get("policy_loss") is None) == (r["trained"] == 0.0) for r in rows)
    assert host["gradient_updates"] == sum(trained)
    cut = HostTrainConfig(**{**robust, "num_updates": 3}, out_dir=str(tmp_path), run_name="cut")
    train(cut)
    rows_b, host_b = _final(train(dataclasses.replace(cut, num_updates=6, resume=True)))
    assert [r["trained"] for r in rows_b] == trained
    np.testing.assert_allclose(host_b["sampler"]["scores"], host["sampler"]["scores"], rtol=1e-5, atol=1e-7)
    assert rows_b[-1]["value_loss"] == pytest.approx(rows[-1]["value_loss"], rel=1e-5, abs=1e-7)

    run = HostRun(HostTrainConfig(**robust, out_dir=str(tmp_path), run_name="probe"))
    real_step, calls = run.env.step, []

    def step_ending_every_third(actions):  # episodes end often enough to see what follows them
        out = real_step(actions)
        calls.append(1)
        return dataclasses.replace(out, done=np.full_like(out.done, len(calls) % 3 == 0))

    run.env.step = step_ending_every_third
    try:
        for _ in range(3):
            run._start_robust_rollout()
            _, levels, dones = run._rollout(jax.random.key(0))[:3]
            assert dones.any()
            assert (levels == levels[0]).all()  # ended episodes restart the same level
            assert set(levels[0].tolist()) <= set(range(6))
    finally:
        run.close()


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_time_limit_stops_at_a_checkpoint_and_resume_finishes(tmp_path, capsys):
    """`--time-limit` (a GPU job chained over short calls): exit status 3 after a checkpointed update, and the
    same command with --resume runs to the end."""
    argv = TINY_ARGV + ["--train-levels", "6", "--num-updates", "3", "--checkpoint-every", "50",
                        "--out-dir", str(tmp_path), "--run-name", "chained"]
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--time-limit", "1e-6"])
    assert e.value.code == 3
    assert "rerun with --resume" in capsys.readouterr().err
    run_dir = tmp_path / "chained"
    assert sorted(p.name for p in (run_dir / "host_state").iterdir()) == ["1.npz"]
    train_main(argv + ["--resume"])
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3] and "final_test_return" in rows[-1]


def test_a_gymnasium_env_with_vector_observations_learns(tmp_path):
    """The contract is general: CartPole through gymnasium (levels = reset seeds), an MLP student for its
    vector observations, the PLR sampler and the same loop learn to balance (random play: about 22 steps)."""
    cfg = HostTrainConfig(env="gym-CartPole-v1", num_envs=8, num_steps=128, hidden=64, num_updates=25,
                          eval_every=0, final_eval_episodes=16, train_levels=200, progress=False,
                          out_dir=str(tmp_path), run_name="cartpole")
    rows, host = _final(train(cfg))
    assert len(rows) == 25 and host["sampler"]["seen"].all()
    assert rows[0]["train_return"] < 40
    assert rows[-1]["final_test_return"] > 100, rows[-1]["final_test_return"]


def _rows(run_dir):
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def test_the_compiled_paths_option_names_train_a_host_run(tmp_path, capsys):
    """`--num-updates`, the PLR options under the compiled path's names and its run naming (`<method>-seed<s>`)."""
    plr = ["--score-function", "pvl", "--score-alpha", "0.5", "--greedy-eps", "0.1", "--replay-schedule", "fixed",
           "--replay-prob", "0.7", "--temperature", "0.2", "--staleness-coef", "0.2", "--score-transform", "power"]
    train_main(TINY_ARGV + ["--num-updates", "2", "--train-levels", "6", "--seed", "3", "--out-dir", str(tmp_path),
                            *plr])
    assert "warning" not in capsys.readouterr().err
    run = tmp_path / "plr-seed3"
    assert [r["update"] for r in _rows(run)] == [1, 2] and _rows(run)[-1]["env_steps"] == 64
    cfg = HostTrainConfig.load(run / "config.json")
    assert (cfg.num_updates, cfg.budget, cfg.train_levels) == (2, "updates", 6)
    s = cfg.sampler
    assert (s.score_function, s.score_alpha, s.greedy_eps, s.replay_prob, s.temperature, s.staleness_coef,
            s.score_transform) == ("pvl", 0.5, 0.1, 0.7, 0.2, 0.2, "power")


def test_a_plugin_method_with_a_host_protocol_trains_on_the_host_and_the_run_options_are_the_compiled_paths(tmp_path):
    """`--method` on the host path comes from the registry (`Method.host`); the run options are one
    dataclass (`config/run.py: RunOptions`) with the PLR paper's defaults."""
    from minimax.config.run import RunOptions  # noqa: PLC0415
    from minimax.core.methods import Method, get_method, register_method  # noqa: PLC0415

    shared = {f.name for f in dataclasses.fields(RunOptions)}
    assert shared <= {f.name for f in dataclasses.fields(HostTrainConfig)}
    assert {"num_updates", "budget", "num_envs", "log_every", "checkpoint_every", "resume"} <= shared
    host = HostTrainConfig()
    assert (host.num_envs, host.num_steps, host.num_updates, host.method) == (64, 256, 1526, "plr")
    assert RunOptions().num_envs == 32  # the report's, on the compiled path
    register_method(Method("greedy_plr_host", build=get_method("plr").build, host="sampler",
                           summary="a test's PLR registered for the host"))
    cfg = parse_host_config(TINY_ARGV + ["--method", "greedy_plr_host", "--out-dir", str(tmp_path)])
    assert cfg.protocol == "sampler" and cfg.sampler_config.score_function == "l1_value_loss"
    assert parse_host_config(TINY_ARGV + ["--method", "dr"]).sampler_config.score_function == "random"
    assert parse_host_config(TINY_ARGV + ["--budget", "cycles"]).budget == "cycles"
    with pytest.raises(ValueError, match="host must be one of uniform, sampler, robust"):
        register_method(Method("bad_host", build=get_method("plr").build, host="fast"))


def test_a_host_form_that_cannot_carry_its_methods_rule_is_refused_in_one_line():
    """A method that declares robust PLR's host form but draws its own replay coin would train stock robust PLR
    under its own name on the host: it is refused naming what the host loop does not run (issue 71). A
    subclass that changes nothing of the rule keeps the host form."""
    import minimax  # noqa: PLC0415

    class OwnCoin(minimax.RobustPLRRunner):
        method = "own_coin_plr"

        def decide_replay(self, key, buffer, training_set):
            return minimax.buffer_ready(self, buffer)

    class Renamed(minimax.RobustPLRRunner):
        method = "renamed_plr"

    for runner in (OwnCoin, Renamed):
        minimax.register_method(minimax.plr_method(runner, "a test's plugin", host="robust"), replace=True)
    with pytest.raises(ConfigError, match=r"^--method own_coin_plr declares the host form 'robust' \(--method "
                                          r"robust_plr's rule\), but its runner changes decide_replay, which the host "
                                          r"loop does not run"):
        parse_host_config(TINY_ARGV + ["--method", "own_coin_plr"])
    assert parse_host_config(TINY_ARGV + ["--method", "renamed_plr"]).protocol == "robust"


def test_budget_updates_counts_ppo_updates_and_env_steps_counts_rollouts(tmp_path):
    """Robust PLR's rollouts of new levels train nothing: `--budget updates` runs until N PPO updates,
    `--budget env_steps` stops after N rollouts whatever they trained."""
    robust = {**TINY, "method": "robust_plr", "eval_every": 0, "checkpoint_every": 50}
    rows = _rows(train(HostTrainConfig(**{**robust, "num_updates": 2}, out_dir=str(tmp_path), run_name="u")))
    assert rows[-1]["gradient_updates"] == 2 and rows[-1]["trained"] == 1.0 and len(rows) > 2
    rows = _rows(train(HostTrainConfig(**{**robust, "num_updates": 2, "budget": "env_steps"}, out_dir=str(tmp_path),
                                       run_name="e")))
    assert len(rows) == 2 and rows[-1]["env_steps"] == 64 and rows[-1]["gradient_updates"] < 2


class _RunsCode:
    """What an attacker's pickle does when it is loaded: here, make a file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (Path(self.marker),)


def test_a_damaged_foreign_or_pickled_host_state_is_refused_on_resume(tmp_path, capsys):
    argv = TINY_ARGV + ["--train-levels", "6", "--out-dir", str(tmp_path), "--run-name", "r"]
    train_main(argv + ["--num-updates", "1"])
    capsys.readouterr()  # its closing lines (where the run is, how to evaluate it)
    state = tmp_path / "r" / "host_state" / "1.npz"
    good = state.read_bytes()
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, scores=np.zeros(3))
    marker = tmp_path / "pwned"
    for content, message in [(b"garbage", "not a .npz"), (good[:200], "damaged or no minimax host state"),
                             (foreign.read_bytes(), "damaged or no minimax host state")]:
        state.write_bytes(content)
        with pytest.raises(SystemExit) as e:
            train_main(argv + ["--resume", "--num-updates", "2"])
        err = capsys.readouterr().err.strip()
        assert e.value.code == 2 and message in err and str(state) in err and len(err.splitlines()) == 1, err
    state.unlink()
    (tmp_path / "r" / "host_state" / "1.pkl").write_bytes(pickle.dumps(_RunsCode(marker)))
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--resume", "--num-updates", "2"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "is a pickle" in err and "can run code" in err and len(err.splitlines()) == 1, err
    assert not marker.exists()  # never unpickled
    assert [r["update"] for r in _rows(tmp_path / "r")] == [1]  # the run is as it was


def _old_layout(cfg: dict) -> dict:
    """A config.json as host runs saved it before the compiled path's names."""
    cfg = dict(cfg)
    cfg["num_env_steps"] = cfg.pop("num_updates") * cfg["num_envs"] * cfg["num_steps"]
    cfg.pop("budget")
    cfg["num_train_levels"] = cfg.pop("train_levels")
    s = dict(cfg["sampler"])
    s["strategy"] = {"l1_value_loss": "value_l1"}[s.pop("score_function")]
    s["alpha"], s["eps"], s["nu"] = s.pop("score_alpha"), s.pop("greedy_eps"), 1 - s.pop("replay_prob")
    cfg["sampler"] = s
    return cfg


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_run_saved_with_the_old_names_and_directory_name_resumes(tmp_path, capsys):
    """A run named `<env>+<method>-seed<s>` with an old config.json resumes from the same command line, in
    the old names' meaning (its length stays in env steps)."""
    argv = TINY_ARGV + ["--train-levels", "6", "--out-dir", str(tmp_path)]
    train_main(argv + ["--num-updates", "1", "--run-name", "procgen-bigfish+plr-seed0"])
    run = tmp_path / "procgen-bigfish+plr-seed0"
    saved = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(_old_layout(saved)))
    old = HostTrainConfig.load(run / "config.json")
    assert (old.num_updates, old.budget, old.train_levels, old.sampler.score_function) == (
        1, "env_steps", 6, "l1_value_loss")
    capsys.readouterr()
    train_main(["--env", "procgen-bigfish", "--out-dir", str(tmp_path), "--resume", "--num-updates", "2"])
    err = capsys.readouterr().err
    assert "resuming" in err
    # It ends as a compiled run does, saying where it is and how to evaluate it (issue 71).
    assert err.splitlines()[-2:] == [f"run written to {run}", f"evaluate it with: python evaluate.py {run}"]
    assert [r["update"] for r in _rows(run)] == [1, 2]
    options = {k: v for k, v in saved.items() if k != "versions"}  # a record of the versions, not an option
    assert HostTrainConfig.load(run / "config.json").to_dict() == {
        **options, "num_updates": 2, "budget": "env_steps", "resume": True}


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_sigterm_stops_a_host_run_at_a_checkpoint_its_directory_locked_and_resume_finishes_it(tmp_path, capsys):
    """The host loop shares the compiled path's run directory, lock and stop signals: SIGTERM finishes the update in
    flight, checkpoints it and exits 143 naming the resume command; while it runs, a second process is refused the
    directory; `--resume` then continues from the checkpoint with every update logged once."""
    import signal  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    import time  # noqa: PLC0415

    argv = ["--env", "gym-CartPole-v1", "--num-envs", "4", "--num-steps", "16", "--hidden", "8", "--train-levels",
            "5", "--eval-every", "0", "--final-eval-episodes", "1", "--n-minibatches", "2", "--no-progress",
            "--out-dir", str(tmp_path), "--run-name", "cut", "--log-every", "1", "--checkpoint-every", "1000"]
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parents[1] / "train.py"), *argv,
                             "--num-updates", "100000"], stderr=subprocess.PIPE, text=True)
    log, deadline = tmp_path / "cut" / "metrics.jsonl", time.monotonic() + 600
    try:
        while not (log.exists() and len(log.read_text().splitlines()) >= 2):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()[-2000:]
            time.sleep(0.2)
        with pytest.raises(SystemExit) as refused:
            train_main(argv + ["--resume", "--num-updates", "100000"])
        assert refused.value.code == 2 and "is in use by process" in capsys.readouterr().err
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 143, err[-2000:]
    stopped = _rows(tmp_path / "cut")[-1]["update"]
    assert f"stopped by SIGTERM after update {stopped} (checkpointed)" in err and "--resume" in err
    assert (tmp_path / "cut" / "host_state" / f"{stopped}.npz").exists()
    train_main(argv + ["--resume", "--num-updates", str(stopped + 2)])
    assert [r["update"] for r in _rows(tmp_path / "cut")] == list(range(1, stopped + 3))
