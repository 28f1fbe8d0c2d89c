"""The environment contract: generic layers know no environment, and `--env` picks everything."""

import ast
import dataclasses
from pathlib import Path

import pytest

from minimax.training.builder import build_runner, env_spec, eval_levels
from minimax.config import ConfigError, TrainConfig
from minimax.envs.maze.options import MazeOptions
from minimax.envs.maze.spec import MAZE
from minimax.envs.registry import env_names, get_env, register

PACKAGE = Path(__file__).resolve().parents[1] / "minimax"
GENERIC = [p for layer in ("core", "curricula", "runners", "config", "training", "evaluation")
           for p in sorted((PACKAGE / layer).glob("*.py"))] + [PACKAGE / "cli" / "reproduce.py",
                                                               PACKAGE / "cli" / "reproduce_table.py"]


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_generic_layers_import_no_environment_package(path):
    envs = {m for m in imported_modules(path) if m.startswith("minimax.envs.") and m not in (
        "minimax.envs.registry", "minimax.envs.environment", "minimax.envs.wrappers", "minimax.envs.images",
        "minimax.envs.trials")}  # the generic layers of the environment API: meta-RL trials wrap any environment
    assert not envs, f"{path.name} imports {sorted(envs)}: environment specifics belong in a registry entry"


def test_unknown_environment_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown environment 'nope'.*registered: maze"):
        get_env("nope")
    with pytest.raises(ConfigError, match="--env must be one of .*maze.*got 'nope'"):
        TrainConfig.from_options(env="nope")
    assert "maze" in env_names() and TrainConfig().env.env_name == "maze"


TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, n_actions=3, recurrent_size=8,
            num_envs=4, num_steps=8, buffer_size=16, eval_every=0)

# The maze under another name, without the parts a method may need: the methods that need a
# missing part are refused by the config, naming the flag, before anything is built.
register("maze_bare", lambda: dataclasses.replace(MAZE, name="maze_bare", mutators={}, teacher=None,
                                                  render_levels=None), options=MazeOptions)


def test_methods_an_environment_cannot_serve_are_refused():
    for method, match in (("accel", "accel: --env maze_bare has no mutator"),
                          ("parallel_accel", "has no mutator"),
                          ("paired", "--method paired needs a teacher's design environment"),
                          ("minimax_adversary", "needs a teacher")):
        with pytest.raises(ConfigError, match=match):
            TrainConfig.from_options(**TINY, env="maze_bare", method=method)
    with pytest.raises(ConfigError, match="--buffer-png: --env maze_bare does not render levels"):
        TrainConfig.from_options(**TINY, env="maze_bare", method="plr", buffer_png=4)
    with pytest.raises(ConfigError, match="--mutator 'nope' is not a mutator of --env maze.*four_edit, minimax"):
        TrainConfig.from_options(**TINY, method="accel", mutator="nope")
    with pytest.raises(ConfigError, match="--eval-suite: unknown OOD maze 'Nope'"):
        TrainConfig.from_options(**{**TINY, "eval_every": 10}, eval_suite="Nope")


@pytest.mark.contract  # builds a training program (tests/conftest.py's tiers)
def test_an_entry_supplies_every_part_of_a_run():
    """A registered copy of the maze builds the same runner parts from its own entry: nothing
    is looked up by the name "maze"."""
    cfg = TrainConfig.from_options(**TINY, env="maze_bare", method="robust_plr")
    assert env_spec(cfg).name == "maze_bare"
    runner = build_runner(cfg)
    assert runner.level_identity is MAZE.level_identity and runner.level_metrics is MAZE.level_metrics
    assert [m.name for m in eval_levels(cfg)] == ["SixteenRooms", "Labyrinth", "StandardMaze"]  # its default suite
    assert cfg.env.max_episode_steps == 16 and TrainConfig().env.max_episode_steps == 0
    assert env_spec(TrainConfig()).make_params(TrainConfig().env).max_steps == 250  # 0: the env's own budget


def test_configs_saved_before_the_environment_defaults_mean_the_same():
    """Runs saved with the maze's values written out (250 steps, 'validation', 'minimax') compare
    equal to today's "the environment's own" defaults (0, '', ''), so they resume and compare."""
    old = TrainConfig.from_options(preset="accel", method="accel", max_episode_steps=250, eval_suite="validation",
                                   mutator="minimax")
    new = TrainConfig.from_options(preset="accel", method="accel")
    assert old.options() != new.options() and old.effective_options() == new.effective_options()
    assert TrainConfig.from_options(max_episode_steps=100).effective_options() != new.effective_options()
    cartpole = TrainConfig.from_options(env="cartpole").effective_options()
    assert (cartpole["max_episode_steps"], cartpole["eval_suite"], cartpole["mutator"]) == (500, "grid", "perturb")


def test_no_suite_hides_behind_evaluates_default():
    """`evaluate.py --suite default` means the env's benchmark suite, so a suite of that name could never be
    chosen (CartPole's and Pendulum's gymnax suite once was): every registered env must avoid it."""
    from minimax.evaluation.evaluate import DEFAULT_SUITE

    for name in env_names():
        try:
            spec = get_env(name)
        except ValueError as err:  # an optional environment whose package is not installed (the registry says so)
            assert "pip install" in str(err), err
            continue
        assert DEFAULT_SUITE not in spec.suites, name
        assert spec.test_suite in spec.suites and spec.default_suite in spec.suites, name
