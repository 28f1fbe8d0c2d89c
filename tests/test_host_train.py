"""Training on a host environment (Procgen): the loop runs, resumes exactly, and refuses bad input in one line."""

import dataclasses
import json
import pickle

import jax
import numpy as np
import pytest

try:
    from minimax.envs.host.procgen import import_procgen
    import_procgen()
except ModuleNotFoundError as e:  # CI installs procgen (.ci/run); elsewhere these tests skip
    pytest.skip(str(e), allow_module_level=True)

from minimax.agents.ppo import ppo_update  # noqa: E402
from minimax.host.config import PROCGEN_PPO, HostTrainConfig  # noqa: E402
from minimax.core.options import ConfigError  # noqa: E402
from minimax.host.learner import HostLearner  # noqa: E402
from minimax.host.loop import HostRun, train  # noqa: E402
from minimax.models.impala import ImpalaActorCritic  # noqa: E402
from minimax.cli.train import main as train_main  # noqa: E402

TINY = dict(env="procgen-bigfish", num_envs=4, num_steps=8, num_train_levels=6, impala_channels=(2, 2, 2), hidden=8,
            eval_every=2, eval_episodes=2, final_eval_episodes=2, checkpoint_every=1, progress=False,
            ppo=dataclasses.replace(PROCGEN_PPO, n_minibatches=2), num_env_steps=3 * 32)


def _final(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    host = pickle.loads(sorted((run_dir / "host_state").glob("*.pkl"), key=lambda p: int(p.stem))[-1].read_bytes())
    return rows, host


def test_a_resumed_run_continues_exactly(tmp_path):
    straight = train(HostTrainConfig(**TINY, out_dir=str(tmp_path), run_name="straight"))
    cut = HostTrainConfig(**{**TINY, "num_env_steps": 2 * 32}, out_dir=str(tmp_path), run_name="cut")
    train(cut)
    resumed = train(dataclasses.replace(cut, num_env_steps=3 * 32, resume=True))
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
    (["--env", "procgen-coinrun", "--method", "robust_plr", "--strategy", "random"], "needs a scoring --strategy"),
    (["--env", "procgen-coinrun", "--method", "robust_plr", "--partial-episodes", "carry"], "must be flush"),
])
def test_bad_input_is_one_line(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--out-dir", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("text, message", [("[1, 2]", "expected a JSON object of options, got list"),
                                           ("{not json", "cannot read config"),
                                           ('{"kind": "host"}', "is no host-environment run config")])
def test_a_damaged_run_config_is_one_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as e:
        HostTrainConfig.load(path)
    assert str(path) in str(e.value)


def test_robust_plr_trains_only_after_replays_and_resumes_exactly(tmp_path, capsys):
    """Robust PLR: rollouts of new levels score them without an update, replays train; each env plays one
    level for a whole rollout; a cut run resumes to the same state as a straight one."""
    robust = {**TINY, "method": "robust_plr", "num_env_steps": 6 * 32}
    rows, host = _final(train(HostTrainConfig(**robust, out_dir=str(tmp_path), run_name="straight")))
    assert "trains only on the first 8 steps of each level's episodes" in capsys.readouterr().err
    trained = [r["trained"] for r in rows]
    assert trained[0] == 0.0 and 1.0 in trained  # no level seen yet: the first rollout plays new levels
    assert [r["gradient_updates"] for r in rows] == np.cumsum(trained).tolist()
    assert all((r.get("policy_loss") is None) == (r["trained"] == 0.0) for r in rows)
    assert host["gradient_updates"] == sum(trained)
    cut = HostTrainConfig(**{**robust, "num_env_steps": 3 * 32}, out_dir=str(tmp_path), run_name="cut")
    train(cut)
    rows_b, host_b = _final(train(dataclasses.replace(cut, num_env_steps=6 * 32, resume=True)))
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


def test_time_limit_stops_at_a_checkpoint_and_resume_finishes(tmp_path, capsys):
    """`--time-limit` (a GPU job chained over short calls): exit status 3 after a checkpointed update, and the
    same command with --resume runs to the end."""
    argv = ["--env", "procgen-bigfish", "--num-envs", "4", "--num-steps", "8", "--num-train-levels", "6",
            "--impala-channels", "2", "2", "2", "--hidden", "8", "--eval-every", "0", "--final-eval-episodes", "2",
            "--n-minibatches", "2", "--num-env-steps", "96", "--checkpoint-every", "50", "--no-progress",
            "--out-dir", str(tmp_path), "--run-name", "chained"]
    with pytest.raises(SystemExit) as e:
        train_main(argv + ["--time-limit", "1e-6"])
    assert e.value.code == 3
    assert "rerun with --resume" in capsys.readouterr().err
    run_dir = tmp_path / "chained"
    assert sorted(int(p.stem) for p in (run_dir / "host_state").glob("*.pkl")) == [1]
    train_main(argv + ["--resume"])
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3] and "final_test_return" in rows[-1]


def test_a_gymnasium_env_with_vector_observations_learns(tmp_path):
    """The contract is general: CartPole through gymnasium (levels = reset seeds), an MLP student for its
    vector observations, the PLR sampler and the same loop learn to balance (random play: about 22 steps)."""
    cfg = HostTrainConfig(env="gym-CartPole-v1", num_envs=8, num_steps=128, hidden=64, num_env_steps=25 * 1024,
                          eval_every=0, final_eval_episodes=16, num_train_levels=200, progress=False,
                          out_dir=str(tmp_path), run_name="cartpole")
    rows, host = _final(train(cfg))
    assert len(rows) == 25 and host["sampler"]["seen"].all()
    assert rows[0]["train_return"] < 40
    assert rows[-1]["final_test_return"] > 100, rows[-1]["final_test_return"]
