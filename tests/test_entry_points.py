"""The console scripts of `pyproject.toml` (`minimax-train`, `minimax-evaluate`, ...): each names a
function of the package that runs with no arguments, reading the command line as `python train.py`
and `python -m minimax.<...>` do."""

from __future__ import annotations

import importlib
import inspect
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def test_every_command_has_a_console_script():
    assert {"minimax-train", "minimax-evaluate", "minimax-combine-evaluations", "minimax-reproduce", "minimax-sweep",
            "minimax-plot", "minimax-demo"} <= set(SCRIPTS)


def _entry(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_console_script_is_a_callable_that_needs_no_arguments(script):
    function = _entry(SCRIPTS[script])
    assert callable(function)
    required = [p.name for p in inspect.signature(function).parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert required == [], f"{script} -> {SCRIPTS[script]} requires {required}"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_console_script_reads_the_command_line(script, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    with pytest.raises(SystemExit) as exit_:
        _entry(SCRIPTS[script])()
    assert exit_.value.code in (0, None) and "--" in capsys.readouterr().out  # its options, listed


def test_the_core_install_works_without_the_optional_environments_packages():
    """`pip install minimax` alone (no jaxnav/craftax/kinetix extras, no gymnax): importing the package, `--help`,
    the maze presets and CartPole's and Pendulum's steps work; only asking for an optional environment's preset
    says which extra to install."""
    import subprocess  # noqa: PLC0415

    script = """
import sys
for blocked in ("jaxmarl", "craftax", "kinetix", "gymnax"):
    sys.modules[blocked] = None  # makes `import <blocked>` raise ImportError, as when it is not installed
import minimax
from minimax.config import PRESETS, ConfigError
assert PRESETS["dr"].method == "dr" and "jaxnav_dr" in PRESETS
try:
    PRESETS["jaxnav_dr"]
except ConfigError as err:
    assert "minimax[jaxnav]" in str(err), err
else:
    raise AssertionError("a JaxNav preset built without jaxmarl")
import jax
from minimax.envs.classic import (CartPole, CartPoleParams, Pendulum, PendulumParams, make_cartpole_generator,
                                  make_pendulum_generator)
for env, params, generate, action in ((CartPole(), CartPoleParams(), make_cartpole_generator(), 1),
                                      (Pendulum(), PendulumParams(), make_pendulum_generator(), jax.numpy.ones(1))):
    state = env.init_state(generate(jax.random.key(0)), params)
    obs, state, reward, done, info = env.step(jax.random.key(1), state, action, params)
    assert int(state.time) == 1 and obs.shape == env.observation_space(params).shape, obs.shape
from minimax.training.cli import main
try:
    main(["--help"])
except SystemExit as exit_:
    assert exit_.code in (0, None), exit_.code
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_version_prints_ours_and_the_libraries_and_every_run_records_them(tmp_path):
    import json
    import subprocess

    import jax
    import optax

    import minimax
    from minimax.config import TrainConfig

    out = subprocess.run([sys.executable, "-m", "minimax.cli.train", "--version"], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert lines["minimax"] == minimax.__version__ and lines["jax"] == jax.__version__
    assert lines["optax"] == optax.__version__ and lines["python"] == ".".join(map(str, sys.version_info[:3]))
    assert {"jaxlib", "flax", "chex", "orbax-checkpoint", "numpy"} <= set(lines)
    assert lines["backend"].startswith(jax.default_backend())

    cfg = TrainConfig.from_options(method="plr", num_envs=8, out_dir=str(tmp_path))
    cfg.save(tmp_path / "config.json")
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["versions"]["jax"] == jax.__version__ and saved["versions"]["minimax"] == minimax.__version__
    assert TrainConfig.load(tmp_path / "config.json") == cfg  # a record, not an option


def test_the_package_and_its_metadata_agree_on_its_version():
    import minimax

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == minimax.__version__


def test_a_deprecation_raised_from_our_code_fails_the_suite():
    """pyproject's `filterwarnings`: what jax, flax, optax or orbax deprecate reaches us as an error, while a
    library's warning about its own internals (attributed to its module) stays a warning."""
    import warnings

    with pytest.raises(DeprecationWarning, match="removed in the next jax"):
        warnings.warn_explicit("removed in the next jax", DeprecationWarning, "x.py", 1, module="minimax.models.maze")
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn_explicit("internal", DeprecationWarning, "y.py", 1, module="jax._src.core")
    assert [str(w.message) for w in caught] == ["internal"]


def test_the_declared_lower_bounds_are_the_floor_legs_versions():
    """pyproject's `>=` bounds (its extras' too) of the libraries CI's floor leg pins are exactly the pinned
    versions (issue 58: a bound we do not test is a promise we cannot keep)."""
    pins = dict(line.split("==") for line in (ROOT / ".ci" / "floor-constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [dep for deps in project["optional-dependencies"].values() for dep in deps]
    declared = dict(dep.split(">=") for dep in [*project["dependencies"], *extras] if ">=" in dep)
    assert {name: declared.get(name) for name in pins} == pins
