"""Every `python train.py` and `python evaluate.py` command in README.md and docs/*.md parses as
written: its flags exist, its values are valid and agree (the config is built; nothing trains)."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path

import pytest

from minimax.evaluation.evaluate import parse_args
from minimax.config import PRESETS
from minimax.host.config import HostTrainConfig, parse_host_config
from minimax.cli.train import is_host_env_run
from minimax.training.cli import parse_config
from release_configs import release_config

ROOT = Path(__file__).resolve().parents[1]


def documented(program: str) -> list[tuple[str, list[str]]]:
    """`(file, argv)` of every `python <program> ...` line in a code block of the docs (continued
    lines joined, trailing comments dropped)."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```(?:bash)?\n(.*?)```", path.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip()
                if line.startswith(f"python {program}"):
                    argv = shlex.split(line, comments=True)[2:]
                    found.append((path.name, argv))
    return found


def test_the_docs_show_commands():
    assert len(documented("train.py")) >= 25 and len(documented("evaluate.py")) >= 5


@pytest.mark.parametrize("where, argv", documented("train.py"), ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_a_documented_training_command_parses(where, argv, tmp_path, monkeypatch):
    if "--help" in argv:
        return
    if any("kinetix" in a for a in argv) and importlib.util.find_spec("kinetix") is None:
        pytest.skip("the Kinetix extra is not installed (building the config loads the environment)")
    if any("jaxnav" in a for a in argv) and importlib.util.find_spec("jaxmarl") is None:
        pytest.skip("the JaxNav extra is not installed (building the config loads the environment)")
    monkeypatch.chdir(tmp_path)  # the files the commands name, as a user would have them
    (tmp_path / "runs" / "smoke").mkdir(parents=True)
    PRESETS["dr"].replace(run_name="smoke").save(tmp_path / "runs" / "smoke" / "config.json")
    release = tmp_path / "path/to/minimax/src/minimax/config/configs/maze/plr.json"
    release.parent.mkdir(parents=True)
    release.write_text(json.dumps(release_config("plr")))
    if is_host_env_run(argv):  # --env procgen-<game>: the host-environment loop's own options
        saved = HostTrainConfig(env="procgen-bigfish", method="plr", seed=0)
        saved.run_dir.mkdir(parents=True)
        saved.save(saved.run_dir / "config.json")
        assert parse_host_config(argv).num_updates > 0, where
        return
    cfg = parse_config(argv)
    assert cfg.num_updates > 0, where


@pytest.mark.parametrize("where, argv", documented("evaluate.py"), ids=lambda x: x if isinstance(x, str) else " ".join(x))
def test_a_documented_evaluation_command_parses(where, argv):
    args = parse_args(argv)
    assert args.runs, where
