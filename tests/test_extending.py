"""A researcher's extension, from outside the package: a new method and a new score, each in a
module of its own under a temporary directory, registered with one call and trained through the
same entry points as ours (config, command-line parse, the loop) without touching minimax/."""

import importlib.util
import json
import sys
import textwrap

import numpy as np
import pytest

from minimax.config import ConfigError, TrainConfig
from minimax.config.experiments import experiment_options
from minimax.config.table import unused_options
from minimax.runners import get_method, method_names
from minimax.training.cli import parse_config
from minimax.training.loop import train

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

USER_MODULE = '''
"""A PLR variant: replay every cycle once the buffer is ready (robust PLR with p = 1), and a score."""
import jax.numpy as jnp

from minimax.curricula.scores import register_score
from minimax.runners import RobustPLRRunner, plr_method, register_method
from minimax.runners.plr_parts import buffer_ready


class AlwaysReplayPLR(RobustPLRRunner):
    method = "always_replay_plr"

    def decide_replay(self, key, buffer, training_set):
        return buffer_ready(self, buffer)


register_method(plr_method(AlwaysReplayPLR, "robust PLR that replays whenever it can", coin_replay=False))
register_score("negative_value", lambda x: -x.values)
'''

TINY = ["--num-updates", "4", "--num-envs", "4", "--num-steps", "32", "--recurrent-size", "8", "--log-every", "2",
        "--eval-every", "0", "--checkpoint-every", "4", "--buffer-size", "8", "--min-fill-ratio", "0.25",
        "--max-episode-steps", "20", "--maze-height", "5", "--maze-width", "5", "--n-walls", "2", "--no-progress"]


@pytest.fixture(scope="module")
def user_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("user") / "my_curriculum.py"
    path.write_text(textwrap.dedent(USER_MODULE))
    spec = importlib.util.spec_from_file_location("my_curriculum", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["my_curriculum"] = module
    spec.loader.exec_module(module)
    return module


def test_registered_method_is_a_method_everywhere(user_module):
    assert "always_replay_plr" in method_names()
    method = get_method("always_replay_plr")
    assert method.level_buffer and method.trains_only_on_replays and not method.mutates
    # Its option declarations drive the refusal of unread options and experiment grouping.
    unused = unused_options("always_replay_plr")
    assert "replay_prob" in unused and "teacher_lr" in unused and "buffer_size" not in unused
    with pytest.raises(ConfigError, match="does not use --replay-prob"):
        parse_config(["--method", "always_replay_plr", "--replay-prob", "0.3"])
    cfg = TrainConfig.from_options(method="always_replay_plr", buffer_size=16)
    assert "replay_prob" not in experiment_options(cfg.options())
    # The PLR family's own checks apply to it as to ours.
    with pytest.raises(ConfigError, match="--buffer-size must be >= 2 for always_replay_plr"):
        TrainConfig.from_options(method="always_replay_plr", buffer_size=1)


def test_unknown_method_and_score_name_the_registered_ones():
    with pytest.raises(ConfigError, match="--method must be one of dr, robust_plr, plr, .*got 'nope'"):
        TrainConfig.from_options(method="nope")
    with pytest.raises(ConfigError, match="--score-function must be one of pvl, maxmc, .*got 'nope'"):
        TrainConfig.from_options(method="plr", score_function="nope")


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_new_method_and_score_train_through_the_command_line_and_the_loop(user_module, tmp_path):
    cfg = parse_config(["--method", "always_replay_plr", "--score-function", "negative_value",
                        "--out-dir", str(tmp_path), *TINY])
    assert cfg.method == "always_replay_plr" and cfg.name == "dr+always_replay_plr-seed0"
    train(cfg)
    run = tmp_path / cfg.name
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [2, 4]
    # Once its buffer is ready it replays on every cycle: no cycle of new levels after the first replay.
    last = rows[-1]
    assert last["gradient_updates"] == 4 and last["buffer/size"] >= 2
    assert last["cycles"] - last["gradient_updates"] <= 2, last  # robust PLR at p = 0.5 would idle ~4 cycles
    assert json.loads((run / "config.json").read_text())["method"] == "always_replay_plr"
    # A saved run of the new method resumes like ours.
    resumed = parse_config(["--resume", "--out-dir", str(tmp_path), "--run-name", cfg.name, "--num-updates", "6"])
    assert resumed.method == "always_replay_plr" and resumed.curriculum.score_function == "negative_value"


def test_plugin_flag_imports_a_users_module_before_parsing(tmp_path, capsys):
    from minimax.cli.train import load_plugins

    plugin = tmp_path / "their_method.py"
    plugin.write_text("from minimax.runners import PLRRunner, plr_method, register_method\n\n\n"
                      "class TheirPLR(PLRRunner):\n    method = 'their_plr'\n\n\n"
                      "register_method(plr_method(TheirPLR, 'plain PLR under another name'))\n")
    argv = load_plugins(["--plugin", str(plugin), "--method", "their_plr", "--replay-prob", "0.7"])
    assert argv == ["--method", "their_plr", "--replay-prob", "0.7"]
    cfg = parse_config(argv)
    assert cfg.method == "their_plr" and cfg.replay.replay_prob == 0.7
    with pytest.raises(SystemExit) as stop:
        load_plugins(["--plugin", str(tmp_path / "missing.py")])
    assert stop.value.code == 2 and "--plugin" in capsys.readouterr().err


def test_a_plugin_score_is_selectable_on_the_host_path(tmp_path, capsys, fresh_registries):
    """A score registered by a user's module scores a host run's levels (`--env gym-CartPole-v1`): the level
    sampler averages the plugin's own per-step terms over each episode (a constant 7 gives every scored level 7),
    the saved run resumes with it (importing the plugin by itself), and a score the host sampler cannot feed is
    refused in one line."""
    pytest.importorskip("gymnasium")
    from minimax.cli.train import main as train_main  # noqa: PLC0415
    from minimax.host.state_files import load_state  # noqa: PLC0415

    plugin = tmp_path / "their_score.py"
    plugin.write_text("import jax.numpy as jnp\nimport minimax\n\n"
                      "minimax.register_score('constant_seven', lambda x: jnp.full_like(x.values, 7.0), replace=True)\n")
    argv = ["--plugin", str(plugin), "--env", "gym-CartPole-v1", "--num-envs", "4", "--num-steps", "32",
            "--hidden", "8", "--train-levels", "5", "--eval-every", "0", "--final-eval-episodes", "1",
            "--n-minibatches", "2", "--no-progress", "--out-dir", str(tmp_path), "--run-name", "seven",
            "--score-function", "constant_seven"]
    train_main(argv + ["--num-updates", "2"])
    run = tmp_path / "seven"
    assert json.loads((run / "config.json").read_text())["sampler"]["score_function"] == "constant_seven"
    sampler = load_state(sorted((run / "host_state").glob("*.npz"), key=lambda p: int(p.stem))[-1])["sampler"]
    assert sampler["seen"].any()
    np.testing.assert_allclose(np.asarray(sampler["scores"])[np.asarray(sampler["seen"])], 7.0, rtol=1e-6)
    fresh_registries()  # a later command, as a new process: the run's config.json names the plugin
    train_main(argv[2:] + ["--num-updates", "3", "--resume"])
    assert [json.loads(r)["update"] for r in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
    with pytest.raises(SystemExit):
        train_main(["--env", "gym-CartPole-v1", "--score-function", "maxmc", "--out-dir", str(tmp_path)])
    err = " ".join(capsys.readouterr().err.replace("│", " ").split())  # tyro boxes and wraps its errors
    assert "--score-function maxmc needs what a host run's level sampler does not keep" in err, err


def test_help_of_train_evaluate_and_sweep_lists_the_plugin_flag(capsys):
    from minimax.cli.train import main as train_main  # noqa: PLC0415
    from minimax.evaluation.evaluate import main as evaluate_main  # noqa: PLC0415

    for main in (train_main, evaluate_main):
        with pytest.raises(SystemExit) as stop:
            main(["--help"])
        assert stop.value.code == 0
        shown = " ".join(capsys.readouterr().out.split())
        assert "--plugin MODULE_OR_FILE.py (repeatable)" in shown
        if main is train_main:  # the compiled path's default method is not the host path's
            assert "default there: plr" in shown
    from minimax.cli.sweep import main as sweep_main  # noqa: PLC0415

    with pytest.raises(SystemExit) as stop:
        sweep_main(["--help"])
    assert stop.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "--plugin PLUGIN" in shown and "MODULE_OR_FILE.py (repeatable)" in shown
