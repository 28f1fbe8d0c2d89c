"""Combining evaluate.py outputs (`minimax.evaluation.combine`): the combined table is the one a single call
over all the runs gives, and calls that cannot be combined are refused in one line."""

import json
from collections import namedtuple

import numpy as np
import pytest

from minimax.cli.combine_evaluations import main as combine_main
from minimax.evaluation.aggregates import aggregate_results, write_aggregates
from minimax.evaluation.combine import CombineError, combine_evaluations
from minimax.evaluation.report import summarize, write_results

Maze = namedtuple("Maze", "name")
MAZES = [Maze(f"level{i}") for i in range(5)]
SETTINGS = {"runs": [], "suite": "default", "episodes": 100, "seed": 0, "bootstrap_reps": 200, "cvar": 0,
            "gif": False, "out": ""}


def _results(label: str, seeds: int, rng) -> list[dict]:
    """A run's per-seed results with random solved rates (and the other metrics) on MAZES."""
    return [{"run": label, "seed": s, "checkpoint": 100,
             "mazes": {m.name: {"solved_rate": float(rng.integers(0, 101)) / 100, "return": float(rng.random()),
                                "length": float(rng.integers(10, 250)), "gap": float(rng.random())}
                       for m in MAZES}} for s in range(seeds)]


def _evaluation(tmp_path, name: str, runs: dict, **settings) -> str:
    """Write an evaluate.py-shaped output of `runs` ({label: results}) to tmp_path/name; returns its path."""
    results, groups = [], []
    for label, rs in runs.items():
        members = list(range(len(results), len(results) + len(rs)))
        results += rs
        groups.append({"label": label, "runs": [f"{label}/seed{r['seed']}" for r in rs], "members": members,
                       "summary": summarize(rs, MAZES)})
    s = SETTINGS | {"runs": list(runs)} | settings
    agg = aggregate_results(groups, results, [m.name for m in MAZES], s["bootstrap_reps"], s["seed"])
    write_results(tmp_path / name, results, groups, s, {"aggregates": agg})
    write_aggregates(tmp_path / name, agg)
    return str(tmp_path / name)


@pytest.fixture
def runs():
    rng = np.random.default_rng(0)
    return {label: _results(label, 3, rng) for label in ("dr", "plr", "accel", "sfl")}


def test_the_combined_table_is_the_one_call_table(tmp_path, runs):
    _evaluation(tmp_path, "whole", runs)
    first = _evaluation(tmp_path, "first", {k: runs[k] for k in ("dr", "plr", "accel")})
    second = _evaluation(tmp_path, "second", {k: runs[k] for k in ("dr", "sfl")})  # dr in both: kept once
    combined = combine_evaluations([first, second], tmp_path / "combined")
    one_call = json.loads((tmp_path / "whole" / "results.json").read_text())
    assert [g["label"] for g in combined["groups"]] == ["dr", "plr", "accel", "sfl"]
    assert combined["aggregates"] == one_call["aggregates"]
    assert combined["groups"] == one_call["groups"] and combined["runs"] == one_call["runs"]
    assert len(combined["aggregates"]["probability_of_improvement"]) == 4 * 3
    assert combined["settings"]["combined_from"] == [f"{first}/results.json", f"{second}/results.json"]
    assert (tmp_path / "combined" / "aggregates.csv").read_text() == (tmp_path / "whole" / "aggregates.csv").read_text()


def test_calls_with_other_settings_or_other_scores_for_one_group_are_refused(tmp_path, runs):
    first = _evaluation(tmp_path, "first", {k: runs[k] for k in ("dr", "plr")})
    fewer_episodes = _evaluation(tmp_path, "other", {"sfl": runs["sfl"]}, episodes=10)
    with pytest.raises(CombineError, match="scored with episodes=10.*episodes=100"):
        combine_evaluations([first, fewer_episodes], tmp_path / "out")
    rescored = [r | {"mazes": r["mazes"] | {"level0": r["mazes"]["level0"] | {"solved_rate": 0.5}}}
                for r in runs["dr"]]
    retrained = _evaluation(tmp_path, "retrained", {"dr": rescored, "sfl": runs["sfl"]})
    with pytest.raises(CombineError, match="group 'dr' differs between"):
        combine_evaluations([first, retrained], tmp_path / "out")
    with pytest.raises(CombineError, match="no results.json"):
        combine_evaluations([first, tmp_path / "missing"], tmp_path / "out")
    host = tmp_path / "host"
    host.mkdir()
    (host / "results.json").write_text(json.dumps({"settings": SETTINGS, "runs": [{"run": "ppo", "seed": 0}],
                                                   "groups": [{"label": "ppo", "runs": ["ppo"], "summary": {}}]}))
    with pytest.raises(CombineError, match="host-environment runs"):
        combine_evaluations([first, host], tmp_path / "out")
    with pytest.raises(CombineError, match="at least two"):
        combine_evaluations([first], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_command_line_says_what_is_wrong_in_one_line(tmp_path, runs, capsys):
    first = _evaluation(tmp_path, "first", {"dr": runs["dr"]})
    with pytest.raises(SystemExit) as e:
        combine_main([first, str(tmp_path / "missing"), "--out", str(tmp_path / "out")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "missing" in err and "\n" not in err
    second = _evaluation(tmp_path, "second", {"plr": runs["plr"]})
    combine_main([first, second, "--out", str(tmp_path / "out")])
    assert "P(dr > plr)" in capsys.readouterr().out
