"""Scale: seeds in one program, shard_map over (forced CPU) devices, and a two-process run.

Every test here is an end-to-end check of minutes (the `e2e` tier): the default `python -m pytest` leaves
them out; `--slow` runs them, and CI's floor leg does (as does naming this file).

The comparisons here are between *different* compiled programs (vmapped seeds vs one seed
alone, 1 vs 2 vs 4 devices, two processes vs one), whose reductions add in different orders,
and CI runs them on other CPUs (vector width, thread count), so they agree only to rounding:
every float comparison has an absolute term (see `LOG_TOLERANCE`). Only a resumed run against
the uninterrupted one (the same program on the same machine) is compared exactly.
"""

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from minimax.config import TrainConfig
from minimax.evaluation.evaluate import main as evaluate_main
from minimax.training.run_logs import read_rows
from minimax.training.loop import train
import run_helpers

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
CLI_TINY = ["--maze-height", "5", "--maze-width", "5", "--n-walls", "3", "--max-episode-steps", "32",
            "--n-actions", "3", "--recurrent-size", "16", "--num-envs", "8", "--num-steps", "16", "--n-epochs", "2",
            "--lr", "3e-3", "--num-updates", "2", "--log-every", "1", "--eval-every", "0", "--checkpoint-every", "2",
            "--devices", "4", "--no-progress"]


# tests/test_train.py's config: the single-seed programs are already in the compilation cache.
TINY = {**run_helpers.TINY, "num_updates": 10, "checkpoint_every": 5}
COMPARED = ("policy_loss", "value_loss", "entropy", "train/return", "eval/mean_solved_rate", "eval/SixteenRooms/return")

# Logged metrics of two different programs after up to 10 PPO updates (measured differences: up to
# 7e-8 on the policy loss, 1e-9 on the value loss, none on the entropy and returns).
# - The PPO losses are means of terms of order 1 (normalised advantages times ratios near 1)
#   that cancel to 1e-4..1e-3 (the policy loss is 0 at the first epoch's ratio of 1), so rounding
#   moves them by an absolute amount whatever their size, and more after each update moved the
#   parameters by slightly different amounts: an absolute 1e-5, ~100x the measured differences and
#   still a tenth of a policy loss (genuine changes, e.g. advantages normalised over part of the
#   batch, are of the loss's own order).
# - Returns and solved rates are means over episodes of exact per-episode values (1 - 0.9 t / T, 0
#   or 1): one step more in one of a few dozen episodes moves them by ~1e-3, 10x the rtol.
# - The entropy is near log(3) = 1.0986 and moves by ~1e-4 an update: rtol 1e-5, not 1e-4.
LOG_TOLERANCE = {
    "policy_loss": dict(rtol=1e-3, atol=1e-5),
    "value_loss": dict(rtol=1e-3, atol=1e-5),
    "entropy": dict(rtol=1e-5, atol=1e-6),
    "train/return": dict(rtol=1e-4, atol=1e-6),
    "eval/mean_solved_rate": dict(rtol=1e-4, atol=1e-6),
    "eval/SixteenRooms/return": dict(rtol=1e-4, atol=1e-6),
}


def assert_metric_close(actual, desired, key):
    np.testing.assert_allclose(actual, desired, err_msg=key, **LOG_TOLERANCE[key])


def test_two_seeds_in_one_program_match_each_seed_alone_and_resume(tmp_path, capsys):
    both = TrainConfig.from_options(**TINY, out_dir=str(tmp_path), seeds="0,1")
    assert both.name == "dr-seeds0-1"
    last = train(both)
    rows = read_rows(both.run_dir)
    assert [r["seed"] for r in rows] == [0, 1, "mean", 0, 1, "mean"]
    assert [r["update"] for r in rows] == [5, 5, 5, 10, 10, 10]
    assert last["seed"] == "mean" and last["update"] == 10
    for seed in (0, 1):
        alone = TrainConfig.from_options(**TINY, out_dir=str(tmp_path), seed=seed)
        train(alone)
        for mine, ref in zip([r for r in rows if r["seed"] == seed], read_rows(alone.run_dir)):
            for key in COMPARED:
                if key in ref:
                    assert_metric_close(mine[key], ref[key], key)
    # The mean row is NumPy's mean of the logged per-seed values, as here: the same float64 sums.
    for mean, *per_seed in [(r[2], r[0], r[1]) for r in (rows[0:3], rows[3:6])]:
        for key in COMPARED:
            if key in mean:
                assert mean[key] == pytest.approx(np.mean([r[key] for r in per_seed]))

    # Resume: the checkpoint holds both seeds; the resumed run logs the uninterrupted rows.
    cut = TrainConfig.from_options(**{**TINY, "num_updates": 5}, out_dir=str(tmp_path), seeds="0,1", run_name="cut")
    train(cut)
    train(cut.replace(num_updates=10, resume=True))
    # (The 5-update run also evaluated at its end, update 5: compare without evaluations there.)
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("time_s", "sps")  # noqa: E731
                         and not (r["update"] == 5 and k.startswith("eval/"))} for r in rs]
    assert strip(read_rows(cut.run_dir)) == strip(rows)

    # Evaluation reports each seed of the run.
    evaluate_main([str(both.run_dir), "--suite", "SixteenRooms", "--episodes", "2", "--out", str(tmp_path / "ev")])
    doc = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert [(r["seed"], r["checkpoint"]) for r in doc["runs"]] == [(0, 10), (1, 10)]
    assert doc["summary"]["SixteenRooms"]["solved_rate"]["n"] == 2
    capsys.readouterr()


def _env(devices: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    # The suite's compile flags (tests/conftest.py) and the device count.
    env["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    return env


_CHECKS = None


def start_checks():
    """Start the 4-device checks (tests/multidevice_checks.py) in a subprocess, once. tests/conftest.py
    calls this when collection ends if a selected test uses `checks`, so the subprocess compiles on
    the second core while the rest of the suite runs; a run that deselects them starts nothing."""
    global _CHECKS
    if _CHECKS is None:
        out_dir = Path(tempfile.mkdtemp(prefix="minimax-multidevice-"))
        # stderr to a file: a full pipe nobody reads yet would block the subprocess.
        proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "multidevice_checks.py"), str(out_dir)],
                                env=_env(4), stdout=subprocess.PIPE, stderr=open(out_dir / "stderr.txt", "w"),
                                text=True)
        atexit.register(proc.kill)  # an interrupted run leaves nothing behind
        atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
        _CHECKS = proc, out_dir
    return _CHECKS


@pytest.fixture(scope="module")
def checks():
    proc, out_dir = start_checks()
    stdout, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, (out_dir / "stderr.txt").read_text()[-3000:]
    return json.loads(stdout.strip().splitlines()[-1]), out_dir


def test_one_dr_update_gives_the_same_parameters_on_1_2_and_4_devices(checks):
    out, _ = checks
    assert out["devices"] == 4
    assert out["dr_param_change"] > 1e-3  # the update moved the parameters...
    # ...the same way on every device count, up to rounding: the gradient is summed in another order
    # (measured: 3e-8, 1 ulp of the parameters; 1e-6 is ~15 ulps and 1/1000 of the change).
    for d in ("1", "2", "4"):
        assert out["dr_param_diff"][d] < 1e-6, out["dr_param_diff"]
    # The policy loss (-6e-4) is a mean of O(1) terms that cancel: an absolute bound on its rounding
    # (measured: 2e-8), not a relative one.
    np.testing.assert_allclose([out["dr_loss"][d] for d in ("2", "4")], out["dr_loss"]["1"], rtol=1e-4, atol=1e-6)


def test_ncc_scores_its_buffer_on_several_devices_with_the_same_result(checks):
    out, _ = checks
    ncc = out["ncc"]
    assert ncc["change"] > 1e-3 and ncc["param_diff"] < 1e-6, ncc
    # Every attempt is played with the same per-env keys on 1 or 2 devices: the same successes.
    assert ncc["scores_equal"] and ncc["y_diff"] < 1e-6, ncc


def test_plr_per_device_buffers_hold_only_their_own_devices_levels(checks):
    out, _ = checks
    per_device = out["plr_per_device"]
    assert per_device["buffer_shape"] == [2, 8]  # capacity 16 split over 2 devices
    # Envs 0-3 ran on device 0 and 4-7 on device 1: every stored level is one of its device's.
    first, second = per_device["stored_envs"]
    assert first and second and set(first) <= {0, 1, 2, 3} and set(second) <= {4, 5, 6, 7}
    shared = out["plr_global"]
    assert shared["buffer_shape"] == [16]  # one replicated buffer, fed by both devices
    assert set(shared["stored_envs"][0]) == set(first) | set(second)


def test_every_plr_runner_steps_sharded(checks):
    for method, m in checks[0]["methods"].items():
        # Cycle 1 fills the buffers with new levels (no gradient); cycle 2 replays and trains
        # (ACCEL's replay cycle also plays the mutated children).
        per_cycle = 8 * 16 * {"parallel_plr": 2, "parallel_accel": 3}.get(method, 1)
        assert m["updates"] == 1 and m["gradient_updates"] == [0, 1] and m["finite"], method
        second = per_cycle * (2 if method in ("accel", "traced") else 1)  # a replay cycle plays the children too
        assert m["env_steps"] == [per_cycle, second] and m["stored"] > 0, (method, m)
    # Under the update budget the same two cycles are one unit: the loop of cycles runs inside shard_map.
    assert checks[0]["accel_one_update"] == {"cycles": [2], "gradient_updates": [1], "stalled": [False]}
    # PLR's multi-update cycles keep their trial per device (both buffer layouts): the buffers are written at a
    # trial's end, never inside it, and the phase is back at 0 after two whole trials.
    for layout, t in checks[0]["trials"].items():
        assert t["updates"] == 4 and t["phase"] == [0, 0], (layout, t)
        assert t["stored_mid_trial"] == 0 and t["stored"] > 0, (layout, t)


def test_seeds_times_devices_matches_each_seed_alone(checks):
    out, _ = checks
    assert out["big_init_shapes"] == [[2]]  # a 64-unit LSTM student, two seeds
    assert out["mesh"] == [2, 2]
    # Absolute bounds, as for the device counts above (measured: 6e-8 and 2e-8).
    assert max(out["seed_param_diff"]) < 1e-6 and max(out["seed_loss_diff"]) < 1e-6


def test_paired_sharded_equals_one_device(checks):
    out, _ = checks
    assert out["paired_change"] > 1e-3  # the students and the teacher moved...
    # ...the same on 2 devices (each designs and plays half the levels): up to the rounding of a
    # gradient summed in another order (measured: 2.3e-6). Any difference in the data would move
    # weights by up to lr = 3e-3 (Adam's first step is about +-lr per weight): the bound is 300x below.
    assert out["paired_device_diff"] < 1e-5


def test_bad_device_layouts_say_what_to_change(checks):
    errors = checks[0]["errors"]
    assert "--num-envs (6) must be divisible by the 4 devices" in errors["batch"]
    assert "--devices 8: only 4 device(s) available" in errors["too_many"]
    assert "--buffer-size (10) must be divisible by the 4 devices" in errors["buffer"]
    # Each method's own splits, checked once, at config time (no runner repeats them).
    assert "--sfl-batch-levels (6) must be divisible by the 4 devices" in errors["sfl_batch"]
    assert "--ncc-buffer-size (6) must be divisible by the 4 devices" in errors["ncc_buffer"]


def test_two_processes_over_loopback_agree_with_one_process(checks):
    out, out_dir = checks
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, str(ROOT / "train.py"), *CLI_TINY, "--out-dir", str(out_dir),
                               "--run-name", "two-process", "--coordinator-address", f"127.0.0.1:{port}",
                               "--num-processes", "2", "--process-id", str(i)],
                              env=_env(2), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    try:
        results = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
    two, one = read_rows(out_dir / "two-process"), read_rows(out_dir / "one-process")
    assert [r["update"] for r in two] == [1, 2] and [r["env_steps"] for r in two] == [128, 256]
    # Two processes all-reduce over gloo, one process within XLA: other programs, other sums, so
    # the losses agree only to rounding (measured: up to 7e-8 on a policy loss of -2e-4..-6e-4).
    for a, b in zip(two, one):
        assert a["episodes"] == b["episodes"]
        for key in ("policy_loss", "value_loss", "train/return", "entropy"):
            if b[key] is None:  # no episode ended in this update: NaN, logged as null
                assert a[key] is None, key
            else:
                assert_metric_close(a[key], b[key], key)
    assert "2" in os.listdir(out_dir / "two-process" / "checkpoints")
    assert_metric_close(two[-1]["policy_loss"], out["train_row"]["policy_loss"], "policy_loss")
