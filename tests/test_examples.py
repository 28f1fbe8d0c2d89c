"""The three examples run as a user runs them (their `main`, at a tiny size) and do what they say."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as `python examples/<name>.py` has it (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_examples_are_short_and_use_the_library():
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text()
        assert text.count("\n") <= 150, f"{path.name} is {text.count(chr(10))} lines"
        assert "import minimax" in text


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_dr_seeds_trains_several_seeds_in_one_program():
    results = load("dr_seeds").main(["--seeds", "2", "--num-updates", "2", "--eval-episodes", "1"])
    assert len(results) == 2
    for train_rate, test_rate in results:
        assert 0.0 <= train_rate <= 1.0 and 0.0 <= test_rate <= 1.0


@pytest.mark.e2e  # over a minute of compiling and training; the default run leaves it out (--slow)
def test_custom_curriculum_trains_a_users_score_and_replay_rule(tmp_path):
    results = load("custom_curriculum").main(["--num-updates", "2", "--out-dir", str(tmp_path)])
    assert len(results) == 4 and all(r["gradient_updates"] == 2 for r in results.values())
    saved = {json.loads((d / "config.json").read_text())["method"] for d in tmp_path.iterdir()}
    assert saved == {"robust_plr", "warmup_plr", "rank_of_fresh_plr"}
    scores = {json.loads((d / "config.json").read_text())["curriculum"]["score_function"] for d in tmp_path.iterdir()}
    assert scores == {"maxmc", "positive_td"}


def test_custom_environment_registers_and_trains_with_robust_plr(tmp_path):
    module = load("custom_environment")
    last = module.main(["--num-updates", "2", "--out-dir", str(tmp_path)])
    assert last["gradient_updates"] == 2 and last["buffer/size"] > 0
    assert 0.0 <= last["eval/mean_solved_rate"] <= 1.0
    config = json.loads((tmp_path / "corridor-robust_plr" / "config.json").read_text())
    assert config["env"]["env_name"] == "corridor" and config["method"] == "robust_plr"
    # The environment's own dynamics: the goal is reached by walking right on a dry floor.
    import jax
    import jax.numpy as jnp

    env, params = module.Corridor(), module.CorridorParams()
    _, state = env.reset_to_level(jax.random.key(0), module.CorridorLevel(jnp.int32(3), jnp.float32(0.0)), params)
    for t in range(3):
        _, state, reward, done, info = env.step(jax.random.key(t), state, 1, params)
    assert bool(done) and bool(info["solved"]) and float(reward) == pytest.approx(1 - 0.9 * 3 / 48)
