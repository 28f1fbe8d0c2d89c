"""Faults a long run meets: stop signals, damaged checkpoints, two processes on one run, NaNs,
file-system errors, moved runs, and the resume conveniences. Each runs the small config of
tests/test_train.py (same programs: the compilation cache shares them)."""

import json
import math
import os
import pathlib
import shutil
import signal
import subprocess
import sys

import pytest

import minimax.training.loop as train_module
from minimax.training.checkpoint import Checkpointer, CheckpointError
from minimax.config import ConfigError, TrainConfig
from minimax.core.metrics import first_nonfinite, mean_row, summarize
from minimax.training.run_lock import RunLock
from minimax.training.run_logs import RunLogger, read_rows
from minimax.training.stop_signals import RunStopped
from minimax.training.loop import RunError, TrainingDiverged, train
import minimax.cli.train as cli_train
from minimax.cli.train import main
from minimax.training.cli import parse_config
from run_helpers import TINY, without_timing
from run_helpers import tiny as shared_tiny

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes

def tiny(tmp_path, **overrides) -> TrainConfig:
    return shared_tiny(tmp_path, **{"eval_every": 0, **overrides})  # no evaluation: faults only


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    cfg = tiny(tmp_path_factory.mktemp("runs"), run_name="reference")
    train(cfg)
    return cfg


# --------------------------------------------------------------------------- stop signals


def test_sigterm_finishes_the_chunk_saves_a_checkpoint_and_resumes_exactly(reference, tmp_path):
    cfg = reference.replace(out_dir=str(tmp_path))
    previous = signal.getsignal(signal.SIGTERM)
    seen = {}

    def on_checkpoint(update):  # pre-emption right after the checkpoint of update 10
        if update == 10:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGUSR2)  # the same stop again, as SLURM and the job's own process send it
            seen["second signal"] = signal.getsignal(signal.SIGINT)
        return False

    with pytest.raises(RunStopped, match=r"(?s)SIGTERM at update 15 .*--resume") as stopped:
        train(cfg, on_checkpoint=on_checkpoint)
    assert stopped.value.exit_status == 128 + signal.SIGTERM
    assert seen["second signal"] == signal.SIG_DFL  # a Ctrl-C after it stops at once; the repeat was merged
    assert signal.getsignal(signal.SIGTERM) == previous  # handlers restored after the run
    assert Checkpointer(cfg.run_dir / "checkpoints").steps() == [10, 15]  # the chunk in flight is saved
    assert [r["update"] for r in read_rows(cfg.run_dir)] == [5, 10, 15]
    train(cfg.replace(resume=True))
    assert without_timing(read_rows(cfg.run_dir)) == without_timing(read_rows(reference.run_dir))


def test_the_command_line_exits_with_the_signals_status(reference, tmp_path, monkeypatch, capsys):
    real = train_module.log_rows

    def log_rows_then_interrupt(*args):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C during the first chunk
        return real(*args)

    monkeypatch.setattr(train_module, "log_rows", log_rows_then_interrupt)
    with pytest.raises(SystemExit) as exit_:
        main(["--out-dir", str(tmp_path), "--run-name", "r", *_flags({**TINY, "eval_every": 0})])
    assert exit_.value.code == 130
    err = capsys.readouterr().err
    assert "received SIGINT" in err and "stopped by SIGINT at update 5" in err and "Traceback" not in err
    assert Checkpointer(tmp_path / "r" / "checkpoints").steps() == [5]


def test_a_clusters_stop_while_train_py_starts_is_the_loops_first_signal(reference, tmp_path, monkeypatch, capsys):
    """SLURM can signal a job (pre-emption, a requeued job warned again) while its train.py still imports and
    parses, before the loop's handlers exist: the stop is kept, so the first chunk trains, is saved and the
    command exits 140, as for a signal a moment later; the caller's own handler is back afterwards."""
    caught = []
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: caught.append(signum))  # the caller's
    real = cli_train.route

    def route_then_signal(argv):  # while the command line is read, before JAX starts
        os.kill(os.getpid(), signal.SIGUSR2)
        return real(argv)

    monkeypatch.setattr(cli_train, "route", route_then_signal)
    try:
        with pytest.raises(SystemExit) as exit_:
            main(["--out-dir", str(tmp_path), "--run-name", "r", *_flags({**TINY, "eval_every": 0})])
        assert exit_.value.code == 128 + signal.SIGUSR2 and not caught
        assert "stopped by SIGUSR2 at update 5" in capsys.readouterr().err
        assert Checkpointer(tmp_path / "r" / "checkpoints").steps() == [5]
        os.kill(os.getpid(), signal.SIGUSR2)
        assert caught == [signal.SIGUSR2]  # the handler the caller had is back
    finally:
        signal.signal(signal.SIGUSR2, previous)


def _flags(options: dict) -> list[str]:
    out = []
    for k, v in options.items():
        name = "--" + k.replace("_", "-")
        out += [name] if v is True else [f"--no-{name[2:]}"] if v is False else [name, str(v)]
    return out


# --------------------------------------------------------------------------- damaged checkpoints


def test_a_damaged_latest_checkpoint_falls_back_to_the_newest_intact_one(reference, tmp_path, capfd):
    shutil.copytree(reference.run_dir, tmp_path / "reference")
    cfg = reference.replace(out_dir=str(tmp_path))
    for path in (cfg.run_dir / "checkpoints" / "20" / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            path.write_bytes(b"garbage")
    capfd.readouterr()
    main(["--resume", "--out-dir", str(tmp_path), "--run-name", "reference"])
    err = capfd.readouterr().err
    assert "skipped checkpoint 20" in err and "resuming from the newest intact checkpoint, update 10" in err
    assert "Event loop is closed" not in err and "Traceback" not in err
    assert f"evaluate it with: python evaluate.py {cfg.run_dir}" in err  # the end of a finished run
    assert (cfg.run_dir / "corrupt-checkpoints" / "20").is_dir()  # kept for inspection, out of the way
    assert Checkpointer(cfg.run_dir / "checkpoints").steps() == [10, 20]
    assert without_timing(read_rows(cfg.run_dir)) == without_timing(read_rows(reference.run_dir))


def test_when_no_checkpoint_restores_the_run_fails_naming_them(reference, tmp_path):
    shutil.copytree(reference.run_dir, tmp_path / "reference")
    cfg = reference.replace(out_dir=str(tmp_path), resume=True)
    for path in (cfg.run_dir / "checkpoints").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            path.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"checkpoint .*20 is corrupt.*no older checkpoint.*10"):
        train(cfg.replace(num_updates=30))
    assert Checkpointer(cfg.run_dir / "checkpoints").steps() == [10, 20]  # nothing moved


# --------------------------------------------------------------------------- one process per run


def test_a_second_process_on_a_run_fails_naming_the_holder_and_a_dead_ones_lock_is_taken_over(reference, tmp_path,
                                                                                            capsys):
    shutil.copytree(reference.run_dir, tmp_path / "reference")
    run_dir = tmp_path / "reference"
    # The holder keeps the lock until it is killed (it waits on its stdin, which stays open): no sleep whose end a
    # busy machine could reach before the checks below (issue 69).
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from minimax.training.run_lock import RunLock; "
                               "lock = RunLock(sys.argv[1]).acquire(); print('locked', flush=True); sys.stdin.read()",
                               str(run_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunError, match=rf"in use by process {holder.pid}"):
            train(reference.replace(out_dir=str(tmp_path), resume=True, num_updates=25))
        with pytest.raises(RunError, match=rf"in use by process {holder.pid}"):
            train(reference.replace(out_dir=str(tmp_path), overwrite=True))
        assert (run_dir / "checkpoints").is_dir()  # --overwrite did not empty a run in use
    finally:
        holder.kill()
        holder.wait()
    capsys.readouterr()
    train(reference.replace(out_dir=str(tmp_path), resume=True, num_updates=25))  # killed: its lock is stale
    assert f"took over the lock of process {holder.pid}@" in capsys.readouterr().err
    assert [r["update"] for r in read_rows(run_dir)] == [5, 10, 15, 20, 25]
    assert (run_dir / ".lock").read_text() == ""  # released


def test_the_lock_is_exclusive_within_a_host():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        with RunLock(d):
            with pytest.raises(RuntimeError, match=f"in use by process {os.getpid()}"):
                RunLock(d).acquire()
        with RunLock(d):  # released on exit
            pass


# --------------------------------------------------------------------------- NaN and "no data"


def test_a_diverging_run_stops_naming_the_update_and_writes_no_checkpoint_of_it(tmp_path):
    cfg = tiny(tmp_path, run_name="nan", entropy_coef=math.inf, num_updates=10)
    with pytest.raises(TrainingDiverged, match=r"became NaN or infinite at update 1; .*no checkpoint was written yet"):
        train(cfg)
    assert Checkpointer(cfg.run_dir / "checkpoints").steps() == []
    raw = json.loads((cfg.run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert raw["grad_norm"] in ("nan", "inf")  # logged as not-a-number, not as "no data" (null)
    assert not math.isfinite(read_rows(cfg.run_dir)[0]["grad_norm"])


def test_no_data_and_not_a_number_are_logged_differently(tmp_path):
    row = summarize({"episodes": [0, 0], "episode_return_sum": [0.0, 0.0], "policy_loss": [float("nan"), 1.0]})
    assert row["train/return"] is None and math.isnan(row["policy_loss"])
    # A `<group>/<name>_sum` is divided by `<group>/count` where the group counts itself, else by episodes.
    row = summarize({"episodes": [2, 2], "achievements/eat_cow_sum": [1.0, 2.0], "new/count": [8, 8],
                     "new/return_sum": [4.0, 4.0]})
    assert row["achievements/eat_cow"] == 0.75 and row["new/return"] == 0.5
    assert mean_row([{"a": None, "b": 1.0}, {"a": 2.0, "b": float("inf")}]) == {"seed": "mean", "a": 2.0,
                                                                                 "b": float("inf")}
    logger = RunLogger(tmp_path, ["update", "train/return", "policy_loss", "value_loss"])
    logger.log({"update": 1, "train/return": None, "policy_loss": float("nan"), "value_loss": -float("inf")})
    assert json.loads((tmp_path / "metrics.jsonl").read_text()) == {"update": 1, "train/return": None,
                                                                     "policy_loss": "nan", "value_loss": "-inf"}
    assert (tmp_path / "metrics.csv").read_text().splitlines()[1] == "1,,nan,-inf"
    back = read_rows(tmp_path)[0]
    assert back["train/return"] is None and math.isnan(back["policy_loss"]) and back["value_loss"] == -math.inf
    assert first_nonfinite({"policy_loss": [[1.0, 2.0], [1.0, float("nan")]], "grad_norm_sum": [[1.0, 2.0],
                            [float("inf"), 1.0]], "buffer/mean_score": [[float("nan")] * 2] * 2}) == ("grad_norm", 0, 1)


# --------------------------------------------------------------------------- the file system


def test_file_system_faults_are_one_line_errors_naming_the_path(reference, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(RunError, match=f"cannot create run directory {blocker}/x"):
        train(reference.replace(out_dir=str(blocker), run_name="x"))
    # A read-only run to resume (simulated: the tests may run as root, whom permissions do not stop).
    shutil.copytree(reference.run_dir, tmp_path / "ro" / "reference")
    real_open = pathlib.Path.open

    def read_only_open(self, mode="r", *args, **kwargs):
        if "ro" in self.parts and any(c in mode for c in "wa+"):
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, mode, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(pathlib.Path, "open", read_only_open)
        with pytest.raises(RunError, match=f"cannot write to run directory {tmp_path}/ro/reference: Permission denied"):
            train(reference.replace(out_dir=str(tmp_path / "ro"), resume=True, num_updates=25))
    # The run directory becomes unwritable after the first chunk.
    calls = []

    def failing_log_rows(self, rows):
        calls.append(1)
        if len(calls) > 2:
            raise PermissionError(13, "Permission denied", str(self.jsonl_path))
        return real(self, rows)

    real = RunLogger.log_rows
    monkeypatch.setattr(RunLogger, "log_rows", failing_log_rows)
    with pytest.raises(RunError, match=r"Permission denied \(.*metrics.jsonl\); the last checkpoint is update 10"):
        train(reference.replace(out_dir=str(tmp_path)))


def test_the_log_rewrite_of_a_resume_is_atomic(tmp_path, monkeypatch):
    logger = RunLogger(tmp_path, ["update", "x"])
    for u in (1, 2, 3):
        logger.log({"update": u, "x": float(u)})
    before = (tmp_path / "metrics.jsonl").read_text()

    def crash(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        logger.truncate_after(2)
    assert (tmp_path / "metrics.jsonl").read_text() == before  # the old log is intact
    monkeypatch.undo()
    logger.truncate_after(2)
    assert [r["update"] for r in read_rows(tmp_path)] == [1, 2]


# --------------------------------------------------------------------------- resume conveniences


def test_a_moved_run_resumes_and_a_finished_one_says_there_is_nothing_to_do(reference, tmp_path, capsys):
    shutil.copytree(reference.run_dir, tmp_path / "moved" / "renamed")
    cfg = parse_config(["--resume", "--out-dir", str(tmp_path / "moved"), "--run-name", "renamed"])
    assert cfg.run_dir == tmp_path / "moved" / "renamed" and cfg.num_updates == 20
    capsys.readouterr()
    row = train(cfg)
    assert "already at update 20" in capsys.readouterr().err and row["update"] == 20
    with pytest.raises(ConfigError, match="--preset plr would change nothing"):
        parse_config(["--resume", "--out-dir", str(tmp_path / "moved"), "--run-name", "renamed", "--preset", "plr"])


def test_config_starts_a_new_run_from_a_saved_config_with_flags_overriding_it(reference, tmp_path):
    cfg = parse_config(["--config", str(reference.run_dir / "config.json"), "--out-dir", str(tmp_path),
                        "--run-name", "again", "--lr", "1e-3"])
    saved = TrainConfig.load(reference.run_dir / "config.json")
    assert cfg == saved.replace(out_dir=str(tmp_path), run_name="again", lr=1e-3)
    assert parse_config(["--config", str(reference.run_dir)]) == saved  # a run directory works too
    with pytest.raises(ConfigError, match="--config: no config file"):
        parse_config(["--config", str(tmp_path / "missing.json")])
    with pytest.raises(ConfigError, match="give one of them"):
        parse_config(["--config", str(reference.run_dir), "--resume"])


def test_the_progress_bar_keeps_its_width():
    widths = {len(train_module.Progress.stats(n, s, r)) for n, s, r in
              [(0, None, None), (123, 45.6, None), (12_345_678, 98_765.0, 0.5), (9_999_999_999, 1e9, -1.0)]}
    assert widths == {36}
    assert 7 + 1 + train_module.Progress.BAR_WIDTH + 1 + len("30000/30000") + 1 + 36 + 1 + len("0:00:00") <= 80


def test_a_failed_restores_abandoned_reads_are_not_logged_by_asyncio():
    """After a failed restore, asyncio logs "Task exception was never retrieved" for each of Orbax's pending reads
    when the garbage collector finalizes it, anywhere: inside an `ast.parse` (tyro's docstrings), Python 3.11's
    caret-drawing traceback parses again and CPython's AST recursion count breaks (gh-106905, a `SystemError` seen
    in this suite). The restore installs a filter on asyncio's logger that drops exactly those records, before
    any handler formats them; other asyncio errors still reach the handlers."""
    import logging
    import traceback

    from minimax.training.checkpoint import ABANDONED_READ, _quiet_closed_loop_callbacks

    _quiet_closed_loop_callbacks()  # what every restore does first
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.exc_info[1])

    def raise_from(name):
        code = compile(f"def {name}():\n    raise ValueError('Requested shape: (128,) is not compatible')\n",
                       "orbax_like", "exec")
        scope = {}
        exec(code, scope)  # noqa: S102 (a function with Orbax's reader's name, raising what a mismatch raises)
        try:
            scope[name]()
        except ValueError as e:
            return e

    log, handler = logging.getLogger("asyncio"), Keep()
    log.addHandler(handler)
    try:
        for name in (ABANDONED_READ, "some_other_coroutine"):
            error = raise_from(name)
            log.error("Task exception was never retrieved", exc_info=(type(error), error, error.__traceback__))
    finally:
        log.removeHandler(handler)
    assert len(seen) == 1 and traceback.extract_tb(seen[0].__traceback__)[-1].name == "some_other_coroutine"
