"""`python -m minimax.cli.reproduce` end to end at a tiny size: outputs, no retraining on a rerun,
the time limit, resuming an extended run, and one-line errors."""

import json

import numpy as np
import pytest

import minimax.evaluation.evaluate
import minimax.training.loop
from minimax.cli.reproduce import EXIT_RERUN, main
from minimax.training.run_logs import read_rows
from minimax.core.stats import mean_ci

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes

# tests/test_scale.py's two-seed DR config (its fresh and resumed training chunks are shared
# through the test session's compilation cache; periodic evaluation is off), and a small
# buffer for the PLR family, here robust PLR (the family's quickest compile: about half of
# parallel PLR's). The final evaluation plays the validation mazes, 2 episodes each: the
# program of the training loop's evaluation in tests/test_train.py and tests/test_scale.py.
TINY = ["maze_height=5", "maze_width=5", "n_walls=3", "max_episode_steps=32", "n_actions=3", "recurrent_size=16",
        "num_envs=8", "num_steps=16", "n_epochs=2", "lr=3e-3", "eval_every=0", "buffer_size=16",
        "min_fill_ratio=0.25"]
MAZES = ["SixteenRooms", "Labyrinth", "StandardMaze"]


def command(out_dir, updates, *extra, methods="dr,plr"):
    args = ["--methods", methods, "--seeds", "2", "--updates", str(updates), "--out-dir", str(out_dir),
            "--eval-episodes", "2", "--suite", "validation", "--log-every", "5", "--checkpoint-every", "5",
            "--no-progress", *extra]
    for item in TINY:
        args += ["--set", item]
    return args


def read(out_dir):
    return json.loads((out_dir / "results.json").read_text()), (out_dir / "table.md").read_text()


@pytest.mark.e2e  # over a minute of compiling and training; the default run leaves it out (--slow)
def test_reproduce_end_to_end_rerun_time_limit_and_extension(tmp_path, capsys, monkeypatch):
    main(command(tmp_path, 10))
    doc, table = read(tmp_path)
    assert doc["short_of_report"] is True
    assert "short of the report's 30k updates" in table.splitlines()[0]
    assert "mean ± std over 10 runs" in table and "95% Student-t confidence interval" in table
    for name, label, report in (("dr", "DR", "0.55 ± 0.05"), ("plr", "PLR⊥", "0.70 ± 0.03")):
        m = doc["methods"][name]
        assert (m["status"], m["seeds"], m["updates_done"], m["train_sessions"]) == ("done", [0, 1], 10, 1)
        assert m["config"]["num_seeds"] == 2 and m["config"]["recurrent_size"] == 16
        assert m["train_seconds"] > 0 and m["eval_seconds"] > 0 and m["hardware"][0]["device_kind"]
        assert list(m["summary"]) == [*MAZES, "suite_mean"]
        for maze in [*MAZES, "suite_mean"]:
            for metric in ("solved_rate", "return"):
                values, s = m["per_seed"][maze][metric], m["summary"][maze][metric]
                assert len(values) == 2 and s["n"] == 2
                mean, low, high = mean_ci(values)  # two seeds always have an interval (zero-width if equal)
                assert s["mean"] == pytest.approx(mean, rel=1e-9, abs=1e-12)
                assert s["ci_low"] == pytest.approx(low, rel=1e-9, abs=1e-12)
                assert s["ci_high"] == pytest.approx(high, rel=1e-9, abs=1e-12)
                assert s["ci_low"] - 1e-12 <= s["mean"] <= s["ci_high"] + 1e-12
        suite = m["summary"]["suite_mean"]["solved_rate"]["mean"]
        assert suite == pytest.approx(np.mean([m["summary"][z]["solved_rate"]["mean"] for z in MAZES]), abs=1e-12)
        assert f"| {label} (`{name}`) | done | 2 | 10 |" in table and report in table
    for maze in MAZES:
        assert f"| {maze} |" in table
    assert "| **suite mean** |" in table
    # The budget is PPO updates for both; robust PLR's cycles of new levels come on top.
    spent = {name: doc["methods"][name]["budget"]["spent"] for name in ("dr", "plr")}
    assert spent["dr"]["gradient_updates"] == spent["dr"]["cycles"] == 10
    assert spent["plr"]["gradient_updates"] == 10 < spent["plr"]["cycles"]
    expected = doc["methods"]["plr"]["budget"]["expected"]
    assert expected["cycles"] == 1 + 10 / 0.5 and expected["env_steps"] == expected["cycles"] * 8 * 16
    assert "## Budget: 10 PPO updates per seed" in table
    assert "Another suite than the report's" in table  # --suite validation beside the report's dcd12 means
    # rliable's aggregates over seeds x mazes, and the probability of improvement both ways.
    agg = doc["aggregates"]
    for name in ("dr", "plr"):
        rates = np.array([doc["methods"][name]["per_seed"][z]["solved_rate"] for z in MAZES]).T  # [seeds, mazes]
        assert agg["groups"][name]["mean"]["estimate"] == pytest.approx(rates.mean(), abs=1e-12)
        assert agg["groups"][name]["iqm"]["runs"] == 2 and agg["groups"][name]["iqm"]["tasks"] == len(MAZES)
    poi = {(p["x"], p["y"]): p["estimate"] for p in agg["probability_of_improvement"]}
    assert poi[("dr", "plr")] == pytest.approx(1 - poi[("plr", "dr")], abs=1e-12)
    assert "## Aggregates over seeds x mazes" in table and "| P(row > column) |" in table and "Note: 2 run(s)" in table
    assert "## Suite mean" in capsys.readouterr().out  # the table is printed at the end
    first_rows = read_rows(tmp_path / "runs" / "dr")
    assert [r["update"] for r in first_rows] == [5, 5, 5, 10, 10, 10]  # seeds 0, 1 and their mean

    # The same command again: nothing is trained or evaluated, the results are the stored ones.
    def refuse(*args, **kwargs):
        raise AssertionError("retrained or re-evaluated")

    with monkeypatch.context() as patch:
        patch.setattr(minimax.training.loop, "train", refuse)
        patch.setattr(minimax.evaluation.evaluate.PolicyEvaluator, "__call__", refuse)
        main(command(tmp_path, 10))
    again, _ = read(tmp_path)
    assert again == doc
    capsys.readouterr()

    # Extend DR to 20 updates under a time limit already spent: one checkpoint of progress, then
    # exit 3. (Only DR: a resumed run compiles its own program, and one PLR compile is enough.)
    with pytest.raises(SystemExit) as stop:
        main(command(tmp_path, 20, "--time-limit", "0.001", methods="dr"))
    assert stop.value.code == EXIT_RERUN
    err = capsys.readouterr().err
    assert "time limit reached" in err and "dr is at update 15 of 20" in err and "Rerun the same command" in err
    stopped, table = read(tmp_path)
    m = stopped["methods"]["dr"]
    assert (m["status"], m["updates_done"], m["train_sessions"]) == ("training", 15, 2)
    assert m["train_seconds"] > doc["methods"]["dr"]["train_seconds"] and "summary" not in m
    assert "| DR (`dr`) | training | 2 | 15 |" in table and "short of the report's 30k updates" in table

    # The same command again: the run resumes from its update-15 checkpoint and is evaluated at 20.
    resumed = []
    original_train = minimax.training.loop.train
    monkeypatch.setattr(minimax.training.loop, "train", lambda cfg, **kw: (resumed.append(cfg.resume),
                                                                   original_train(cfg, **kw))[1])
    main(command(tmp_path, 20, methods="dr"))
    assert resumed == [True]
    final, table = read(tmp_path)
    m = final["methods"]["dr"]
    assert (m["status"], m["updates_done"], m["train_sessions"]) == ("done", 20, 3)
    assert m["summary"]["suite_mean"]["solved_rate"]["n"] == 2 and "(3 commands)" in table
    assert list(final["methods"]) == ["dr"]  # the table covers the command's methods
    rows = read_rows(tmp_path / "runs" / "dr")
    assert [r["update"] for r in rows] == [5] * 3 + [10] * 3 + [15] * 3 + [20] * 3
    assert rows[:6] == first_rows  # the first 10 updates were not trained again (same times, too)
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["methods"]["dr"]["eval"]["checkpoint"] == 20
    assert state["methods"]["plr"]["eval"]["checkpoint"] == 10  # untouched
    capsys.readouterr()


@pytest.mark.parametrize("args, message", [
    (["--methods", "dr,nope"], "--methods: unknown method 'nope' (choose from dr, paired, plr, pplr, accel, paccel, "
                               "dr_s5, paired_s5, plr_s5, pplr_s5, accel_s5, paccel_s5)"),
    (["--updates", "0"], "--updates must be an int >= 1, got 0"),
    (["--seeds", "-2"], "--seeds must be an int >= 1, got -2"),
    (["--set", "lr=fast"], "--set lr=fast: not a number"),
    (["--set", "bogus=1"], "--set: unknown training option 'bogus'"),
    (["--set", "num_updates=5"], "--set num_updates: this command sets it (use --updates)"),
    (["--set", "n_walls=500"], "preset dr with these options: --n-walls must be <= 167"),
    (["--checkpoint-every", "15"], "--checkpoint-every (15) must be a multiple of --log-every (10)"),
    (["--suite", "Nope"], "--suite: unknown OOD maze 'Nope'"),
])
def test_bad_inputs_are_one_line_errors(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--out-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert not (tmp_path / "out").exists()  # nothing is created before the input is checked


def test_the_s5_methods_are_table_4_with_the_reports_numbers():
    from minimax.cli.reproduce import ReproduceConfig, method_config, parse_methods  # noqa: PLC0415
    from minimax.cli.reproduce_table import LSTM_METHODS, REPORT  # noqa: PLC0415

    # The minimax report's Table 4, "minimax + S5 policy" rows: solved rate mean ± std of 10 runs, hours.
    table_4 = {"dr_s5": (0.58, 0.05, 2), "paired_s5": (0.58, 0.06, 3), "plr_s5": (0.66, 0.04, 4),
               "pplr_s5": (0.73, 0.04, 3), "accel_s5": (0.72, 0.06, 4), "paccel_s5": (0.74, 0.04, 3)}
    assert {m: (r["solved_rate"], r["std"], r["wall_hours"]) for m, r in REPORT.items()
            if r["table"] == "Table 4"} == table_4
    assert LSTM_METHODS == ("dr", "paired", "plr", "pplr", "accel", "paccel")  # the default: Table 2
    assert ReproduceConfig().methods == ",".join(LSTM_METHODS)
    assert parse_methods("pplr_s5,dr") == ["pplr_s5", "dr"]
    cfg = method_config("plr_s5", ReproduceConfig(updates=10, seeds=2), {})
    assert (cfg.model.recurrent_cell, cfg.model.s5_layernorm, cfg.num_updates, cfg.num_seeds) == ("s5", "pre", 10, 2)
