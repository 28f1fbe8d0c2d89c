"""Whole runs on the non-maze environments: the same train loop, checkpoints, exact resume,
vmapped seeds and evaluate command as AMaze, with nothing environment-specific outside the
registry entries. (Every method x environment is checked for the runner contract, without
compiling, in tests/test_runners.py.)"""

import json

import numpy as np
import pytest

from minimax.evaluation.evaluate import main as evaluate_main
from minimax.training.run_logs import read_rows
from minimax.training.loop import train
from minimax.cli.train import main
from run_helpers import tiny, without_timing

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

CLASSIC = dict(recurrent_cell="none", mlp_hidden=16, num_envs=8, num_steps=16, num_updates=8, log_every=4,
               checkpoint_every=4, eval_every=4, eval_episodes=2, buffer_size=32, min_fill_ratio=0.25, n_mutations=2,
               max_episode_steps=12)  # episodes end inside a rollout, so levels are scored, replayed, mutated


@pytest.fixture(scope="module")
def pendulum_accel(tmp_path_factory):
    """Two seeds of ACCEL on Pendulum: continuous actions, mutated physics, one vmapped program."""
    cfg = tiny(tmp_path_factory.mktemp("pendulum"), **CLASSIC, env="pendulum", method="accel", num_seeds=2,
               run_name="reference")
    train(cfg)
    return cfg


def test_pendulum_accel_trains_logs_and_evaluates(pendulum_accel, tmp_path):
    rows = read_rows(pendulum_accel.run_dir)
    assert [r["update"] for r in rows] == [4, 4, 4, 8, 8, 8] and [r["seed"] for r in rows[:3]] == [0, 1, "mean"]
    for r in rows[3:]:
        assert np.isfinite(r["policy_loss"]) and np.isfinite(r["entropy"])
        assert r["train/return"] is None or r["train/return"] < 0  # pendulum's reward is a cost
        assert r["eval/mean_return"] < 0  # the held-out grid, every 4 updates (200 steps each)
    mutated = [r for r in rows if r.get("mutated/count")]
    assert mutated and all(0.5 <= r["mutated/l"] <= 1.5 for r in mutated if r.get("mutated/l") is not None)
    evaluate_main([str(pendulum_accel.run_dir), "--episodes", "2", "--out", str(tmp_path / "eval")])
    doc = json.loads((tmp_path / "eval" / "results.json").read_text())
    names = list(doc["runs"][0]["mazes"])
    assert len(doc["runs"]) == 2 and len(names) == 9 and "tq4_l2.5" in names  # out-of-range torque and length
    assert all(r["mazes"][n]["return"] < 0 for r in doc["runs"] for n in names)
    # No success outcome: no solved rate anywhere (not a rate of 0), in the evaluation or the logs.
    assert all(r["mazes"][n]["solved_rate"] is None for r in doc["runs"] for n in names)
    assert doc["summary"]["suite_mean"]["solved_rate"]["mean"] is None
    assert not [k for r in rows for k in r if k.endswith("solved_rate")]


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_pendulum_resume_equals_the_uninterrupted_run(pendulum_accel, tmp_path):
    cfg = pendulum_accel.replace(out_dir=str(tmp_path), num_updates=4)
    train(cfg)
    main(["--resume", "--num-updates", "8", "--out-dir", str(tmp_path), "--run-name", "reference", "--no-progress"])
    assert without_timing(read_rows(cfg.run_dir)) == without_timing(read_rows(pendulum_accel.run_dir))


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_cartpole_robust_plr_scores_levels_by_their_outcome(tmp_path):
    cfg = tiny(tmp_path, **CLASSIC, env="cartpole", method="robust_plr", score_function="learnability")
    train(cfg)
    rows = read_rows(cfg.run_dir)
    assert rows[-1]["buffer/size"] > 0
    assert all(0 <= r["train/solved_rate"] <= 1 for r in rows if r.get("train/solved_rate") is not None)
    with pytest.raises(SystemExit):  # no success on pendulum: learnability has nothing to count
        main(["--env", "pendulum", "--method", "robust_plr", "--score-function", "learnability",
              "--out-dir", str(tmp_path), "--no-progress"])


@pytest.mark.e2e  # over a minute of compiling and training; the default run leaves it out (--slow)
def test_cartpole_robust_plr_with_mna_trains_and_resumes_exactly(tmp_path):
    """MNA on another JAX environment than AMaze: its scores fill the buffer, and the run resumes exactly."""
    cfg = tiny(tmp_path / "a", **{**CLASSIC, "eval_every": 0}, env="cartpole", method="robust_plr",
               score_function="mna", run_name="mna")
    train(cfg)
    rows = read_rows(cfg.run_dir)
    assert rows[-1]["buffer/size"] > 0 and np.isfinite(rows[-1]["buffer/mean_score"])
    train(cfg.replace(out_dir=str(tmp_path / "b"), num_updates=4))
    main(["--resume", "--num-updates", "8", "--out-dir", str(tmp_path / "b"), "--run-name", "mna", "--no-progress"])
    assert without_timing(read_rows(tmp_path / "b" / "mna")) == without_timing(rows)


@pytest.mark.e2e  # over a minute of compiling and training; the default run leaves it out (--slow)
def test_craftax_accel_replays_and_mutates_worlds(tmp_path):
    pytest.importorskip("craftax")
    cfg = tiny(tmp_path, **{**CLASSIC, "num_envs": 4, "num_steps": 8, "max_episode_steps": 6, "eval_every": 0,
                            "num_updates": 4, "log_every": 4, "checkpoint_every": 4, "buffer_size": 8},
               env="craftax", method="accel", budget="cycles")  # 4 cycles: what this test needs, at the least cost
    train(cfg)
    row = read_rows(cfg.run_dir)[-1]
    assert row["buffer/size"] > 0 and row["cycles"] == 4
    assert row.get("replay/count") or row.get("mutated/count") or row.get("new/count")
    assert 0 <= row["new/trees"] and np.isfinite(row["train/return"])
    # Per-achievement logs (the env's episode_stats): fractions of ended episodes, and their total.
    fractions = [v for k, v in row.items() if k.startswith("achievements/") and k != "achievements/total"]
    assert len(fractions) == 22 and all(0 <= f <= 1 for f in fractions)
    assert row["achievements/total"] == pytest.approx(sum(fractions), abs=1e-5)


def test_evaluate_refuses_what_an_environment_cannot_report(pendulum_accel, tmp_path, capsys):
    for flag in (["--cvar", "10"], ["--gif"]):
        with pytest.raises(SystemExit):
            evaluate_main([str(pendulum_accel.run_dir), *flag, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert "--cvar ranks levels by solved rate; --env pendulum has no success outcome" in err
    assert "--gif: --env pendulum does not render episodes" in err
