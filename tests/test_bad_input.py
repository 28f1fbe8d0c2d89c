"""Bad input is one line naming the value, an exit status other than 0, and nothing left behind:
a run that fails at its start removes the directory it created (so the same command runs again
without --overwrite); a sweep's grid file that names an unknown option, is empty, or gives an
option no values is refused before anything trains."""

from __future__ import annotations

import json

import pytest

import minimax.training.loop as loop_module
from minimax.cli.sweep import main as sweep_main
from minimax.training.loop import BudgetStalled, train
from minimax.training.run_logs import read_rows
from run_helpers import tiny

ONE_UPDATE = dict(num_updates=1, log_every=1, eval_every=0, checkpoint_every=1, run_name="r")


def _stall(self):
    raise BudgetStalled("seed 0 cannot reach update 1")


@pytest.mark.contract  # builds a training program (tests/conftest.py's tiers)
def test_a_run_that_fails_at_start_leaves_nothing_and_the_same_command_runs_again(tmp_path, monkeypatch):
    cfg = tiny(tmp_path / "new" / "runs", **ONE_UPDATE)
    with monkeypatch.context() as m:
        m.setattr(loop_module._Loop, "run_chunk", _stall)  # fails after the directory was made
        with pytest.raises(BudgetStalled):
            train(cfg)
    assert not (tmp_path / "new").exists()  # the run directory and the out dir it made are gone

    def fail_after_checkpoint(update):
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        train(cfg, on_checkpoint=fail_after_checkpoint)  # the same command: no --overwrite needed
    assert [r["update"] for r in read_rows(cfg.run_dir)] == [1]  # a run that wrote results keeps them
    assert (cfg.run_dir / "checkpoints" / "1").is_dir()

    resumed = cfg.replace(resume=True, num_updates=2)
    with monkeypatch.context() as m:
        m.setattr(loop_module._Loop, "run_chunk", _stall)
        with pytest.raises(BudgetStalled):
            train(resumed)
    assert [r["update"] for r in read_rows(cfg.run_dir)] == [1]  # a resumed run's directory is never removed


@pytest.mark.contract  # builds a training program (tests/conftest.py's tiers)
def test_a_failed_start_never_removes_a_directory_that_existed(tmp_path, monkeypatch):
    cfg = tiny(tmp_path, overwrite=True, **ONE_UPDATE)
    cfg.run_dir.mkdir(parents=True)
    (cfg.run_dir / "old.txt").write_text("replaced by --overwrite")
    monkeypatch.setattr(loop_module._Loop, "run_chunk", _stall)
    with pytest.raises(BudgetStalled):
        train(cfg)
    assert (cfg.run_dir / "config.json").exists()  # the --overwrite target stays (emptied, as asked)


def _sweep_error(tmp_path, capsys, grid) -> str:
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(grid))
    with pytest.raises(SystemExit) as exit_:
        sweep_main(["--grid-file", str(path), "--out-dir", str(tmp_path / "runs"), "--num-updates", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "runs").exists()  # nothing trained, nothing written
    return err


def test_a_grid_file_naming_an_unknown_option_is_one_line(tmp_path, capsys):
    assert "unknown option 'lrr'" in _sweep_error(tmp_path, capsys, {"lrr": [1e-4, 3e-4]})


def test_an_empty_grid_file_is_refused_instead_of_starting_a_default_run(tmp_path, capsys):
    assert "the grid is empty" in _sweep_error(tmp_path, capsys, {})
    assert "has no arguments" in _sweep_error(tmp_path, capsys, {"args": {}})


def test_an_option_without_values_is_refused_instead_of_running_nothing(tmp_path, capsys):
    assert "option 'lr' has no values" in _sweep_error(tmp_path, capsys, {"lr": [], "seed": [0, 1]})
    assert "argument 'lr' has no values" in _sweep_error(tmp_path, capsys, {"args": {"lr": []}})


@pytest.mark.parametrize("flag", ["--num-processes", "--process-id"])
def test_a_multi_host_flag_that_is_not_a_number_is_one_line_naming_it(flag, capsys):
    from minimax.cli.train import main  # noqa: PLC0415

    with pytest.raises(SystemExit) as stop:
        main(["--coordinator-address", "127.0.0.1:1234", flag, "two"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"error: {flag} takes an integer, got 'two'\n"


@pytest.mark.parametrize("argv, message", [
    (["--budget", "weeks"], "--budget must be one of updates, cycles, env_steps, got 'weeks'"),
    (["--budget=weeks"], "--budget must be one of updates, cycles, env_steps, got 'weeks'"),
    (["--num-updates", "x"], "--num-updates takes an integer, got 'x'"),
    (["--lr", "abc"], "--lr takes a number, got 'abc'"),
    (["--n-actions", "5"], "--n-actions must be one of 3, 7, got '5'"),  # a Literal of numbers: "3" and "7" pass
    (["--seeds", "0,1", "--nonsense-flag", "3"], "unknown option --nonsense-flag (train.py --help lists the options)"),
])
def test_a_bad_choice_type_or_flag_is_one_line_not_tyros_box(argv, message, capsys):
    """tyro's boxed errors (issue 71): a value outside an option's choices, of the wrong type, or a flag no option
    has is the one-line `error:` every other refusal is, with exit status 2."""
    from minimax.cli.train import main  # noqa: PLC0415

    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    out = capsys.readouterr()
    # (the first command of a process also says where its compilation cache is, on a line of its own)
    assert out.err.splitlines()[-1] == f"error: {message}" and "╭" not in out.out + out.err
