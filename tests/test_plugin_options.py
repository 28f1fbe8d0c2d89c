"""Options travel with their method and environment: a user's method and a user's environment, each in
a file outside the package (`tests/plugins/`) with option groups of its own, are flags of `train.py`
for that method or environment only (and in its `--help`), saved in `config.json`, kept on resume, and
their runs evaluate, through the same commands as ours (`--plugin FILE` once: the run remembers it)."""

import json
from pathlib import Path

import pytest

from minimax.cli.evaluate import main as evaluate_main
from minimax.cli.sweep import main as sweep_main
from minimax.cli.train import load_plugins
from minimax.cli.train import main as train_main
from minimax.config import TrainConfig

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

PLUGINS = Path(__file__).resolve().parent / "plugins"
EAGER, RING = str(PLUGINS / "eager_plr.py"), str(PLUGINS / "ring_env.py")
TINY = ["--num-envs", "4", "--num-steps", "16", "--recurrent-size", "8", "--log-every", "2", "--eval-every", "0",
        "--checkpoint-every", "2", "--no-progress"]
MAZE = ["--num-steps", "32", "--max-episode-steps", "20", "--maze-height", "5", "--maze-width", "5", "--n-walls", "2", "--buffer-size", "8",
        "--min-fill-ratio", "0.25"]


def ring_options():
    load_plugins(["--plugin", RING])
    import ring_env  # noqa: PLC0415  (the module --plugin imported)

    return ring_env.RingOptions


def refusal(capsys, argv) -> str:
    with pytest.raises(SystemExit) as stop:
        train_main(argv)
    assert stop.value.code == 2
    return " ".join(capsys.readouterr().err.split())


def help_text(capsys, argv) -> str:
    with pytest.raises(SystemExit) as stop:
        train_main([*argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def swept(capsys, run: Path, grid: str) -> list[str]:
    """The train.py commands of a sweep around a saved run (`--config RUN --print`), one per point."""
    capsys.readouterr()
    sweep_main(["--config", str(run), "--grid", grid, "--out-dir", str(run.parent / "swept"), "--print"])
    return capsys.readouterr().out.splitlines()


def rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_plugin_methods_own_option_trains_resumes_and_evaluates(tmp_path, capsys, fresh_registries):
    base = ["--plugin", EAGER, "--method", "eager_plr", "--out-dir", str(tmp_path), "--run-name", "eager"]
    assert "--eager-replay-prob" in help_text(capsys, base)
    assert "--eager-replay-prob" not in help_text(capsys, ["--plugin", EAGER, "--method", "robust_plr"])
    err = refusal(capsys, ["--plugin", EAGER, "--method", "robust_plr", "--eager-replay-prob", "0.5", *TINY])
    assert "--method robust_plr does not use --eager-replay-prob, nor does --env maze" in err
    assert "eager options: --method eager_plr" in err
    err = refusal(capsys, [*base, "--replay-prob", "0.5", *TINY])  # the coin it does not have
    assert "does not use --replay-prob" in err

    train_main([*base, "--eager-replay-prob", "1.0", "--num-updates", "4", *TINY, *MAZE])
    run = tmp_path / "eager"
    saved = json.loads((run / "config.json").read_text())
    assert saved["method"] == "eager_plr" and saved["eager"] == {"eager_replay_prob": 1.0}
    last = rows(run)[-1]
    assert last["gradient_updates"] == 4 and last["cycles"] - last["gradient_updates"] <= 2, last  # replays eagerly
    assert saved["plugins"] == [{"file": EAGER, "sha256": saved["plugins"][0]["sha256"],
                                 "registers": ["--method eager_plr"]}]
    err = refusal(capsys, [*base, "--resume", "--eager-replay-prob", "0.5", "--num-updates", "6"])
    assert "--eager-replay-prob (saved 1.0, given 0.5)" in err
    fresh_registries()  # later commands, as new processes: the run imports its plugin by itself
    where = ["--out-dir", str(tmp_path), "--run-name", "eager"]
    train_main([*where, "--resume", "--num-updates", "6"])
    assert [r["update"] for r in rows(run)] == [2, 4, 6]

    fresh_registries()
    out = tmp_path / "scores"
    evaluate_main([str(run), "--suite", "SixteenRooms", "--episodes", "2", "--out", str(out)])
    doc = json.loads((out / "results.json").read_text())
    assert [(r["run"], r["checkpoint"]) for r in doc["runs"]] == [("eager", 6)]
    fresh_registries()  # a sweep around the run, over the plugin's own option: the grid reads it from the run
    assert len(swept(capsys, run, "eager_replay_prob=0.5,1.0")) == 2


def test_a_plugin_environments_own_option_trains_resumes_and_evaluates(tmp_path, capsys, fresh_registries):
    base = ["--plugin", RING, "--env", "ring", "--method", "dr", "--recurrent-cell", "none", "--out-dir",
            str(tmp_path), "--run-name", "ring"]
    shown = help_text(capsys, base)
    assert "--ring-length" in shown and "--maze-height" not in shown
    err = refusal(capsys, [*base, "--maze-height", "5", *TINY])
    assert "--method dr does not use --maze-height, nor does --env ring" in err and "maze options: --env maze" in err
    assert "--maze-height" not in help_text(capsys, ["--plugin", RING, "--env", "ring"])

    train_main([*base, "--ring-length", "5", "--num-updates", "2", *TINY])
    run = tmp_path / "ring"
    saved = json.loads((run / "config.json").read_text())
    assert saved["env"]["env_name"] == "ring" and saved["ring"] == {"ring_length": 5}
    RingOptions, loaded = ring_options(), TrainConfig.load(run / "config.json")
    assert loaded.env.ring_length == 5 and loaded.ring == RingOptions(ring_length=5)  # the spec reads it so
    assert [p["registers"] for p in saved["plugins"]] == [["--env ring"]]
    fresh_registries()  # later commands, as new processes: the run imports its plugin by itself
    train_main(["--out-dir", str(tmp_path), "--run-name", "ring", "--resume", "--num-updates", "4"])
    assert [r["update"] for r in rows(run)] == [2, 4]

    fresh_registries()
    out = tmp_path / "scores"
    evaluate_main([str(run), "--suite", "far", "--episodes", "2", "--out", str(out)])
    doc = json.loads((out / "results.json").read_text())
    (scored,) = doc["runs"]
    assert scored["checkpoint"] == 4 and list(scored["mazes"]) == ["goal1"]
    assert 0.0 <= scored["mazes"]["goal1"]["solved_rate"] <= 1.0
    fresh_registries()
    assert len(swept(capsys, run, "ring_length=4,6")) == 2
