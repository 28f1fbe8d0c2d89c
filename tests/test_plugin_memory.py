"""A run remembers its plugins (`minimax/config/plugins.py`): `config.json` lists the file, its content hash and
what it registered, and loading the config in a later process imports it again; a plugin gone or changed is
refused in one line naming the file and the way on, and a `--plugin` given again wins. No training program:
the configs are saved and loaded as `--resume`, `evaluate.py` and a sweep load them."""

import json

import pytest

from minimax.cli.sweep import main as sweep_main
from minimax.cli.train import load_plugins
from minimax.config import PRESETS, ConfigError, TrainConfig

SCORE = '''"""A score registered under a name of its own."""
from minimax.curricula.scores import positive_value_loss, register_score

register_score("{name}", positive_value_loss)
'''


def write_plugin(path, name="remembered_pvl", extra=""):
    path.write_text(SCORE.format(name=name) + extra)
    return path


def saved_run(tmp_path, plugin, name="remembered_pvl"):
    """A run directory whose config uses the plugin's score, saved with the plugin loaded."""
    load_plugins(["--plugin", str(plugin)])
    run = tmp_path / "runs" / "scored"
    run.mkdir(parents=True)
    PRESETS["plr"].replace(score_function=name).save(run / "config.json")
    return run


def test_config_json_records_the_plugin_its_names_come_from_and_only_that(tmp_path, fresh_registries):
    plugin = write_plugin(tmp_path / "my_score.py")
    unused = write_plugin(tmp_path / "other_score.py", name="unused_pvl")
    load_plugins(["--plugin", str(unused)])
    run = saved_run(tmp_path, plugin)
    saved = json.loads((run / "config.json").read_text())
    (record,) = saved["plugins"]
    assert record["file"] == str(plugin.resolve()) and record["registers"] == ["--score-function remembered_pvl"]
    assert len(record["sha256"]) == 64
    PRESETS["plr"].save(tmp_path / "plain.json")  # a run that names no plugin's name records none
    assert "plugins" not in json.loads((tmp_path / "plain.json").read_text())


def test_a_saved_run_imports_its_plugin_again_in_a_new_process(tmp_path, fresh_registries):
    plugin = write_plugin(tmp_path / "my_score.py")
    run = saved_run(tmp_path, plugin)
    fresh_registries()  # a later command: the score is not registered
    with pytest.raises(ConfigError):
        PRESETS["plr"].replace(score_function="remembered_pvl")
    cfg = TrainConfig.load(run / "config.json")
    assert cfg.curriculum.score_function == "remembered_pvl"


def one_line_refusal(run) -> str:
    with pytest.raises(ConfigError) as err:
        TrainConfig.load(run / "config.json")
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_moved_or_changed_plugin_is_refused_in_one_line_and_a_given_one_wins(tmp_path, fresh_registries):
    plugin = write_plugin(tmp_path / "my_score.py")
    run = saved_run(tmp_path, plugin)
    fresh_registries()
    moved = tmp_path / "elsewhere" / "my_score.py"
    moved.parent.mkdir()
    plugin.rename(moved)
    message = one_line_refusal(run)
    assert f"the plugin {plugin.resolve()} (it registers --score-function remembered_pvl), which is gone" in message
    assert "pass --plugin FILE where it is now" in message

    write_plugin(plugin, extra="# edited\n")  # back in place, but not as it was
    message = one_line_refusal(run)
    assert f"the plugin {plugin.resolve()}" in message and "has changed since the run was trained" in message
    assert f"pass --plugin {plugin.resolve()} to use it as it is now" in message

    load_plugins(["--plugin", str(moved)])  # the run's own content from its new place: accepted
    assert TrainConfig.load(run / "config.json").curriculum.score_function == "remembered_pvl"
    fresh_registries()
    load_plugins(["--plugin", str(plugin)])  # the edited file, given on purpose: accepted
    assert TrainConfig.load(run / "config.json").curriculum.score_function == "remembered_pvl"


def test_a_run_saved_before_runs_recorded_plugins_says_how_to_give_one(tmp_path, fresh_registries):
    run = saved_run(tmp_path, write_plugin(tmp_path / "my_score.py"))
    saved = json.loads((run / "config.json").read_text())
    del saved["plugins"]
    (run / "config.json").write_text(json.dumps(saved))
    fresh_registries()
    message = one_line_refusal(run)
    assert "got 'remembered_pvl'" in message and "names no plugin: a name a plugin registered needs --plugin" in message


def test_a_sweep_reads_a_plugin_runs_config_and_reruns_without_the_flag(tmp_path, fresh_registries, capsys):
    plugin = write_plugin(tmp_path / "my_score.py")
    run = saved_run(tmp_path, plugin)
    fresh_registries()
    out = str(tmp_path / "sweep")
    sweep_main(["--config", str(run), "--grid", "replay_prob=0.3,0.7", "--out-dir", out, "--print"])
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all("--config" in line for line in printed)

    fresh_registries()  # a sweep started with --plugin prints it into every command (a job's fresh process)
    sweep_main(["--plugin", str(plugin), "--preset", "plr", "--grid", "score_function=remembered_pvl",
                "--out-dir", out, "--print"])
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"python train.py --plugin {plugin.resolve()} --preset plr")


@pytest.mark.e2e  # a training program of its own (a score is static): the default run leaves it out
def test_a_plugin_score_run_resumes_through_a_sweep_rerun_and_evaluates_without_the_flag(tmp_path, fresh_registries):
    from minimax.cli.evaluate import main as evaluate_main  # noqa: PLC0415

    plugin = write_plugin(tmp_path / "my_score.py")
    out = tmp_path / "sweep"
    grid = ["--preset", "plr", "--grid", "score_function=remembered_pvl", "--out-dir", str(out), "--num-envs", "4",
            "--num-steps", "32", "--recurrent-size", "8", "--log-every", "2", "--eval-every", "0",
            "--checkpoint-every", "2", "--no-progress", "--max-episode-steps", "20", "--maze-height", "5",
            "--maze-width", "5", "--n-walls", "2", "--buffer-size", "8", "--min-fill-ratio", "0.25"]
    sweep_main(["--plugin", str(plugin), *grid, "--num-updates", "2"])
    fresh_registries()  # the sweep again, a new process: each run imports its plugin from its config.json
    sweep_main([*grid, "--num-updates", "4"])
    run = out / "plr-score_function=remembered_pvl-seeds0"
    updates = [json.loads(line)["update"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert updates == [2, 4]
    fresh_registries()
    evaluate_main([str(run), "--suite", "SixteenRooms", "--episodes", "2", "--out", str(tmp_path / "scores")])
    doc = json.loads((tmp_path / "scores" / "results.json").read_text())
    assert [(r["run"], r["checkpoint"]) for r in doc["runs"]] == [(run.name, 4)]
