"""`evaluate.py` on host-environment runs: test levels are unseen and shared, seeds pool into one interval,
greedy play of a level is reproducible, GIFs are written, and options or runs it cannot use are one line."""

import dataclasses
import json
import types

import numpy as np
import pytest

try:
    from minimax.envs.host.procgen import import_procgen
    import_procgen()
except ModuleNotFoundError as e:  # CI installs procgen (.ci/run); elsewhere these tests skip
    pytest.skip(str(e), allow_module_level=True)

from PIL import Image  # noqa: E402

from minimax.evaluation.evaluate import main as evaluate_main  # noqa: E402
from minimax.host.config import PROCGEN_PPO, HostTrainConfig  # noqa: E402
from minimax.host import scoring  # noqa: E402
from minimax.host.evaluate import load_host_policy, score_policy  # noqa: E402
from minimax.host.loop import train  # noqa: E402

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes

TINY = dict(env="procgen-bigfish", num_envs=4, num_steps=8, train_levels=6, impala_channels=(2, 2, 2), hidden=8,
            eval_every=0, final_eval_episodes=2, checkpoint_every=1, progress=False,
            ppo=dataclasses.replace(PROCGEN_PPO, n_minibatches=2), num_updates=1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("host_runs")
    return [train(HostTrainConfig(**TINY, seed=s, start_level=100, out_dir=str(root), run_name=f"s{s}"))
            for s in (0, 1)]


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_seeds_pool_into_one_interval_on_shared_unseen_levels(runs, tmp_path, capsys):
    out = tmp_path / "ev"
    evaluate_main([str(r) for r in runs] + ["--episodes", "6", "--out", str(out), "--gif"])
    doc = json.loads((out / "results.json").read_text())
    a, b = doc["runs"]
    assert a["checkpoint"] == b["checkpoint"] == 1
    assert len(a["test_returns"]) == len(a["train_levels_returns"]) == 6
    # One set of test levels for every run, none of them a training level (seeds 100..105).
    assert doc["settings"]["episodes"] == 6
    assert sorted(set(a["train_levels"])) == list(range(100, 106)) == sorted(set(b["train_levels"]))
    (group,) = doc["groups"]
    assert group["runs"] == [str(r) for r in runs]
    stat = group["summary"]["test_return"]
    assert stat["n"] == 2 and stat["mean"] == pytest.approx((a["test_return"] + b["test_return"]) / 2)
    assert stat["ci_low"] <= stat["mean"] <= stat["ci_high"]
    for r in (a, b):
        assert r["generalization_gap"] == pytest.approx(r["train_levels_return"] - r["test_return"])
        # bigfish, easy mode: R_min 1, R_max 40
        assert r["test_normalized"] == pytest.approx((r["test_return"] - 1.0) / (40.0 - 1.0))
        with Image.open(r["gif"]) as gif:
            assert gif.size == (256, 256) and 1 <= gif.n_frames <= r["gif_length"]
    assert "procgen-bigfish plr | 2 |" in capsys.readouterr().out


def test_test_levels_avoid_every_runs_training_levels():
    rng = np.random.default_rng(0)
    # A space small enough to hit: exclusion must hold against both ranges.
    levels = scoring.test_levels(rng, 50, exclude=[range(0, 10**9), range(1_500_000_000, 2**31 - 1)])
    assert len(set(levels.tolist())) == 50
    assert all(10**9 <= x < 1_500_000_000 for x in levels.tolist())


def test_greedy_play_of_a_level_is_reproducible(runs):
    """A forced level plays the same episode for the same actions, whichever env slot plays it."""
    policy = load_host_policy(runs[0], None)
    args = types.SimpleNamespace(seed=3, episodes=4, greedy=True)
    row = score_policy(policy, np.array([7, 7, 123456, 7, 123456]), args)
    r = row["test_returns"]
    assert r[0] == r[1] == r[3] and r[2] == r[4]


@pytest.mark.parametrize("extra, message", [
    (["--cvar", "10"], "--cvar applies to JAX environments only"),
    (["--cvar", "0.1"], "--cvar takes a number of levels M (an integer, e.g. --cvar 10000; its alphas are "
                        "--alpha), got '0.1'"),
    (["--checkpoint", "9"], "no checkpoint for update 9"),
])
def test_bad_input_is_one_line(runs, tmp_path, capsys, extra, message):
    with pytest.raises(SystemExit) as e:
        evaluate_main([str(runs[0]), "--out", str(tmp_path / "x"), *extra])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_host_and_jax_runs_are_not_mixed(runs, tmp_path, capsys):
    jax_run = tmp_path / "jax_run"
    jax_run.mkdir()
    (jax_run / "config.json").write_text("{}")
    with pytest.raises(SystemExit):
        evaluate_main([str(runs[0]), str(jax_run), "--out", str(tmp_path / "x")])
    assert "evaluate it apart from JAX-env runs" in capsys.readouterr().err


def test_a_gymnasium_run_is_scored_and_refuses_a_gif_first(tmp_path, capsys):
    run = train(HostTrainConfig(env="gym-CartPole-v1", num_envs=4, num_steps=8, hidden=8, num_updates=1,
                                eval_every=0, final_eval_episodes=2, train_levels=10, progress=False,
                                out_dir=str(tmp_path), run_name="cartpole"))
    with pytest.raises(SystemExit):
        evaluate_main([str(run), "--episodes", "3", "--gif", "--out", str(tmp_path / "a")])
    assert "not RGB frames (shape (4,))" in capsys.readouterr().err
    assert not (tmp_path / "a" / "results.json").exists()
    evaluate_main([str(run), "--episodes", "3", "--out", str(tmp_path / "b")])
    (result,) = json.loads((tmp_path / "b" / "results.json").read_text())["runs"]
    assert set(result["train_levels"]) <= set(range(10)) and "test_normalized" not in result
    assert all(r >= 1 for r in result["test_returns"])  # CartPole pays 1 per step survived
