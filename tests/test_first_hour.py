"""What a newcomer trips over in the first hour (issue 39): run names, typed config files, flags that
contradict or do nothing, evaluation outputs, logs without a terminal, errors that name the flag."""

from __future__ import annotations

import json

import pytest

from minimax.config import ConfigError, TrainConfig
from minimax.evaluation.report import fresh_out_dir
from minimax.evaluation.evaluate import main as evaluate_main
from minimax.config.experiments import experiment_groups
from minimax.config import PRESETS
from minimax.training.progress import Progress
from minimax.training.run_logs import read_rows
from minimax.training.loop import RunError, train
from minimax.cli.train import main
from minimax.training.cli import parse_config
from run_helpers import tiny

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes


def test_run_names_follow_the_preset(tmp_path):
    out = ["--out-dir", str(tmp_path)]
    assert parse_config(["--preset", "plr", *out]).name == "plr-seed0"            # robust PLR, as docs/evaluation.md says
    assert parse_config(["--preset", "plr", "--num-seeds", "3", *out]).name == "plr-seeds0-1-2"
    assert parse_config(["--preset", "dr_s5", *out]).name == "dr_s5-seed0"        # not dr's directory
    assert parse_config(["--method", "plr", *out]).name == "dr+plr-seed0"         # the original PLR, DR's values
    assert parse_config(["--preset", "plr", "--run-name", "mine", *out]).name == "mine"


def test_resuming_a_run_named_by_its_method_says_which_name_to_give(tmp_path):
    legacy = tmp_path / "robust_plr-seed0"
    legacy.mkdir()
    PRESETS["plr"].save(legacy / "config.json")
    with pytest.raises(RunError, match="--run-name robust_plr-seed0"):
        parse_config(["--resume", "--preset", "plr", "--out-dir", str(tmp_path)])


def test_a_wrongly_typed_value_in_a_config_file_is_one_line_naming_it(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_envs": "abc", "lr": 3e-4}))
    with pytest.raises(ConfigError, match=r"--num-envs must be an integer, got 'abc' \("):
        parse_config(["--config", str(path)])
    with pytest.raises(SystemExit) as exit_:
        main(["--config", str(path)])
    # (the first command of a process also names its compilation cache, on a line of its own)
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("compilation cache:")]
    assert exit_.value.code == 2 and not any("Traceback" in line for line in err) and len(err) == 1, err


def test_resume_and_overwrite_together_are_refused():
    with pytest.raises(ConfigError, match="--resume continues the run and --overwrite deletes it"):
        parse_config(["--resume", "--overwrite"])


def test_options_the_method_never_reads_are_refused_and_do_not_split_experiments():
    with pytest.raises(ConfigError, match="--method dr does not use --buffer-size, --n-mutations, --teacher-lr"):
        parse_config(["--buffer-size", "16", "--teacher-lr", "5", "--n-mutations", "50"])
    parse_config(["--preset", "accel", "--n-mutations", "50"])  # ACCEL reads it
    parse_config(["--preset", "plr", "--method", "dr"])          # the preset's values were not given
    dr = PRESETS["dr"].options()
    groups = experiment_groups([dr, {**dr, "buffer_size": 16, "seed": 1}])
    assert groups == [("dr", [0, 1])]


def test_evaluation_never_replaces_another_unasked(tmp_path):
    first = fresh_out_dir(["runs/plr-seed0", "runs/dr-seed0"], root=tmp_path)
    assert first == tmp_path / "plr-seed0+1"
    first.mkdir()
    (first / "results.json").write_text("{}")
    assert fresh_out_dir(["runs/plr-seed0", "runs/dr-seed0"], root=tmp_path) == tmp_path / "plr-seed0+1-2"


def test_a_negative_count_names_its_flag(capsys):
    with pytest.raises(SystemExit) as exit_:
        evaluate_main(["runs/none", "--cvar", "-5"])
    assert exit_.value.code == 2 and "--cvar must be >= 0, got -5" in capsys.readouterr().err


def test_without_a_terminal_every_log_row_is_a_plain_line(capsys):
    bar = Progress(30, 0, 0, enabled=True)
    bar.advance(10, 81_920, 2_000.0, 0.25)
    bar.advance(20, 163_840, 2_000.0, None)
    bar.close()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("updates 10/30") and "return  0.250" in lines[0]
    assert "left 0:00:0" in lines[1]


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_an_extended_run_records_its_new_target(tmp_path, capsys):
    cfg = tiny(tmp_path, num_updates=2, log_every=1, eval_every=0, checkpoint_every=1, run_name="r")
    train(cfg)
    resume = ["--resume", "--out-dir", str(tmp_path), "--run-name", "r"]
    train(parse_config([*resume, "--num-updates", "3"]))
    assert TrainConfig.load(cfg.run_dir / "config.json").num_updates == 3
    train(parse_config(resume))  # nothing to do: the saved target is the extension's
    assert "already at update 3 (--num-updates 3)" in capsys.readouterr().err
    assert [r["update"] for r in read_rows(cfg.run_dir)] == [1, 2, 3]


def test_small_samples_keep_rates_in_range_and_leave_out_empty_cvar_fractions():
    from minimax.evaluation.report import summarize  # noqa: PLC0415
    from minimax.evaluation.evaluate import EvaluateConfig, cvar_alphas  # noqa: PLC0415

    settings = EvaluateConfig(runs=("r",), cvar=100, alpha=(0.001, 0.01, 0.5, 1.0))
    assert cvar_alphas(settings) == [0.01, 0.5, 1.0]  # floor(0.001 x 100) = 0 levels

    class Maze:
        name = "m"

    results = [{"mazes": {"m": {"solved_rate": r, "return": r, "length": 1.0, "gap": 0.0}},
                "cvar": {"mean_solved_rate": r, "cvar@0.01": c}} for r, c in ((1.0, 1.0), (1.0, 0.0), (0.9, 0.0))]
    s = summarize(results, [Maze()])
    assert 0.0 <= s["m"]["solved_rate"]["ci_low"] and s["m"]["solved_rate"]["ci_high"] == 1.0
    assert s["cvar"]["cvar@0.01"]["ci_low"] == 0.0 and s["cvar"]["cvar@0.01"]["ci_high"] <= 1.0
    assert s["m"]["return"]["ci_high"] > 1.0  # returns are not rates: not clipped


def test_a_failed_restores_leftovers_are_not_printed():
    """Resuming past a damaged checkpoint: one warning line, without Orbax's abandoned reads (each a
    traceback through sys.unraisablehook) or a TensorStore object's repr."""
    from types import SimpleNamespace  # noqa: PLC0415

    from minimax.training.checkpoint import _first_line, _is_abandoned_read  # noqa: PLC0415

    e = Exception("Encountered error while reading array index: (slice(0, 3, 1),). See full TensorStore details: "
                  "<bound method spec of TensorStore({'driver': 'zarr'")
    assert _first_line(e) == "Exception: Encountered error while reading array index: (slice(0, 3, 1),)."

    async def _read_array_index_and_device_put():
        return None

    left = SimpleNamespace(exc_value=ValueError("DATA_LOSS"), object=_read_array_index_and_device_put,
                           err_msg="Exception ignored in")
    assert _is_abandoned_read(left)
    assert _is_abandoned_read(SimpleNamespace(exc_value=RuntimeError("Event loop is closed"), object=None,
                                              err_msg=None))
    assert not _is_abandoned_read(SimpleNamespace(exc_value=ValueError("x"), object=print, err_msg=None))
