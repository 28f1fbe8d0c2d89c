"""The minimax report's Tables 2 and 4 and how a reproduction (`minimax.cli.reproduce`) is tabulated against it.

`collect` gathers a `Reproduction`'s state into `results.json`'s document (per method: status,
seeds, updates, wall times, hardware, the run's options, per-seed results and their mean and
95% CI per maze); `render_table` writes it as `table.md`, next to the report's numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from minimax.config import MUTATION_METHODS, TEACHER_METHODS, TrainConfig, flat_config
from minimax.training.run_logs import read_rows


class Reproduction(Protocol):
    """What the tables read of a reproduction (`minimax.cli.reproduce.Reproduction`)."""

    rc: Any  # its ReproduceConfig
    methods: list[str]
    configs: dict[str, TrainConfig]
    overrides: dict
    mazes: list
    state: Any  # its State (state.json)
    out: Path

    def trained_updates(self, cfg: TrainConfig) -> int: ...

    def eval_key(self) -> dict: ...

REPORT_UPDATES = 30_000
REPORT_SUITE = "dcd12"
"""The mazes the report's Table 2 solved rates average over."""

# The minimax report, Table 2 (minimax rows): solved rate on the OOD mazes after 30k PPO updates,
# mean and std of 10 runs, and wall time in hours on one V100 GPU.
REPORT = {
    "dr": dict(label="DR", solved_rate=0.55, std=0.05, wall_hours=3, table="Table 2"),
    "paired": dict(label="PAIRED", solved_rate=0.63, std=0.04, wall_hours=7, table="Table 2"),
    "plr": dict(label="PLR⊥", solved_rate=0.70, std=0.03, wall_hours=5, table="Table 2"),
    "pplr": dict(label="PLR∥", solved_rate=0.74, std=0.04, wall_hours=3, table="Table 2"),
    "accel": dict(label="ACCEL", solved_rate=0.73, std=0.05, wall_hours=4, table="Table 2"),
    "paccel": dict(label="ACCEL∥", solved_rate=0.74, std=0.04, wall_hours=3, table="Table 2"),
    # Table 4 (minimax + S5 policy rows): the same protocol with the S5 student (Table 6's presets).
    "dr_s5": dict(label="DR+S5", solved_rate=0.58, std=0.05, wall_hours=2, table="Table 4"),
    "paired_s5": dict(label="PAIRED+S5", solved_rate=0.58, std=0.06, wall_hours=3, table="Table 4"),
    "plr_s5": dict(label="PLR⊥+S5", solved_rate=0.66, std=0.04, wall_hours=4, table="Table 4"),
    "pplr_s5": dict(label="PLR∥+S5", solved_rate=0.73, std=0.04, wall_hours=3, table="Table 4"),
    "accel_s5": dict(label="ACCEL+S5", solved_rate=0.72, std=0.06, wall_hours=4, table="Table 4"),
    "paccel_s5": dict(label="ACCEL∥+S5", solved_rate=0.74, std=0.04, wall_hours=3, table="Table 4"),
}
REPORT_RUNS = 10
METHODS = tuple(REPORT)
LSTM_METHODS = tuple(m for m in METHODS if REPORT[m]["table"] == "Table 2")
"""The default set: Table 2, the LSTM student. `--methods` also takes the S5 presets (Table 4)."""


def expected_budget(cfg: TrainConfig, updates: int) -> dict:
    """The rollout cycles and env steps `updates` PPO updates of the student are expected to take
    (`--budget updates`, the release's unit): one cycle per update for DR, plain PLR, SFL and the learned
    teachers (whose students play n_students batches); robust PLR and ACCEL first fill their buffer to
    `--min-fill-ratio` with cycles of N new levels, then replay (and train) with probability p, so
    1/p cycles per update, ACCEL's replay cycle also playing the N mutated children; the parallel
    methods play G groups of N envs per cycle and train on every cycle once the buffer is ready."""
    cur, n, batch = cfg.curriculum, cfg.num_envs, cfg.num_envs * cfg.num_steps
    ready = cur.ready_at(cfg.buffer.capacity)
    if cfg.method in ("robust_plr", "accel"):
        warmup = math.ceil(ready / n)
        cycles = warmup + updates / cfg.replay.replay_prob
        batches = cycles + (updates if cfg.method in MUTATION_METHODS else 0)
    elif cfg.method in ("parallel_plr", "parallel_accel"):
        groups = 3 if cfg.method in MUTATION_METHODS else 2
        warmup = math.ceil(ready / (groups * n))
        cycles, batches = warmup + updates, groups * (warmup + updates)
    else:
        students = cfg.teacher.students_for(cfg.method) if cfg.method in TEACHER_METHODS else 1
        cycles, batches = updates, students * updates
    return {"updates": updates, "cycles": round(cycles), "env_steps": round(batches * batch),
            "cycles_per_update": cycles / updates}


def spent_budget(cfg: TrainConfig) -> dict | None:
    """The run's totals at its last log row (the across-seed mean): cycles, env steps, updates."""
    try:
        rows = read_rows(cfg.run_dir)
    except (OSError, ValueError):
        return None
    rows = [r for r in rows if r.get("seed", "mean") == "mean"]
    if not rows:
        return None
    return {k: rows[-1].get(k) for k in ("update", "cycles", "env_steps", "gradient_updates")}


def _status(rep: Reproduction, method: str) -> tuple[str, int]:
    cfg = rep.configs[method]
    done = rep.trained_updates(cfg)
    ev = rep.state.data["methods"].get(method, {}).get("eval") or {}
    evaluated = all(ev.get(k) == v for k, v in rep.eval_key().items()) and all(
        str(s) in ev.get("runs", {}) for s in cfg.seed_list)
    if done >= rep.rc.updates:
        return ("done" if evaluated else "trained, evaluation pending"), done
    return ("not started" if done == 0 else "training"), done


def collect(rep: Reproduction) -> dict:
    """results.json's document."""
    from minimax.evaluation.report import METRICS, summarize  # noqa: PLC0415

    rc, names = rep.rc, [m.name for m in rep.mazes]
    doc = {
        "settings": {"methods": rep.methods, "updates": rc.updates, "seeds": rc.seeds, "suite": rc.suite,
                     "mazes": names, "eval_episodes": rc.eval_episodes, "eval_actions": "sampled",
                     "log_every": rc.log_every, "checkpoint_every": rc.checkpoint_every, "overrides": rep.overrides},
        "short_of_report": rc.updates < REPORT_UPDATES,
        "report": {"source": "minimax report, Table 2 (minimax rows; LSTM student) and Table 4 (minimax + S5 "
                             "rows; the *_s5 presets)", "updates": REPORT_UPDATES, "runs": REPORT_RUNS,
                   "solved_rate": "mean and std over 10 runs (not a confidence interval)",
                   "wall_time": "hours on one V100 GPU"},
        "ours": {"solved_rate": "mean and 95% Student-t confidence interval across seeds (minimax.core.stats.mean_ci)",
                 "train_seconds": "summed over commands, each up to its last checkpoint (compilation included)"},
        "methods": {},
    }
    for method in rep.methods:
        cfg = rep.configs[method]
        entry = rep.state.data["methods"].get(method, {})
        status, done = _status(rep, method)
        saved = cfg.run_dir / "config.json"
        ev = entry.get("eval") or {}
        out = {"label": REPORT[method]["label"], "preset": method, "method": cfg.method, "status": status,
               "seeds": cfg.seed_list, "updates": rc.updates, "updates_done": done,
               "train_seconds": entry.get("train_seconds", 0.0), "train_sessions": entry.get("train_sessions", 0),
               "eval_seconds": ev.get("seconds", 0.0) if status == "done" else None,
               "hardware": entry.get("hardware", []),
               "report": {"solved_rate_mean": REPORT[method]["solved_rate"], "solved_rate_std": REPORT[method]["std"],
                          "runs": REPORT_RUNS, "wall_hours": REPORT[method]["wall_hours"],
                          "table": REPORT[method]["table"]},
               "config": flat_config(json.loads(saved.read_text())) if saved.exists() else cfg.options(),
               "budget": {"expected": expected_budget(cfg, rc.updates), "spent": spent_budget(cfg)}}
        if status == "done":
            runs = [ev["runs"][str(s)] for s in cfg.seed_list]
            out["per_seed"] = {name: {k: [r["mazes"][name][k] for r in runs] for k in METRICS} for name in names}
            out["per_seed"]["suite_mean"] = {k: [float(np.mean([r["mazes"][n][k] for n in names])) for r in runs]
                                             for k in METRICS}
            out["summary"] = summarize(runs, rep.mazes)
        doc["methods"][method] = out
    done = [m for m in rep.methods if "per_seed" in doc["methods"][m]]
    if done and names:
        from minimax.evaluation.aggregates import aggregate_groups  # noqa: PLC0415

        matrices = [np.array([doc["methods"][m]["per_seed"][n]["solved_rate"] for n in names], float).T for m in done]
        if all(np.isfinite(m).all() for m in matrices):
            doc["aggregates"] = aggregate_groups([{"label": m} for m in done], matrices, seed=0)
    return json.loads(json.dumps(doc, default=float), parse_constant=lambda _: None)  # NaN -> null


def _duration(seconds) -> str:
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _cell(stat) -> str:
    if stat is None:
        return "—"
    if stat["ci_low"] is None:
        return f"{stat['mean']:.3f}"
    return f"{stat['mean']:.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"


def render_table(doc: dict) -> str:
    s = doc["settings"]
    methods = doc["methods"]
    tables = sorted({m["report"]["table"] for m in methods.values()}) or ["Table 2"]
    title = f"# The minimax report's {' and '.join(tables)}, reproduced: {s['updates']:,} updates"
    if doc["short_of_report"]:
        title += f" (short of the report's {REPORT_UPDATES // 1000}k updates)"
    lines = [title, ""]
    if s["suite"] != REPORT_SUITE:
        lines += [f"**Another suite than the report's**: these runs were evaluated on `{s['suite']}`; the report's "
                  f"solved rates beside them are means over its {REPORT_SUITE} mazes, so the two do not compare.", ""]
    if doc["short_of_report"]:
        lines += [f"**Short of the report's 30k updates**: {s['updates']:,} of {REPORT_UPDATES:,} PPO updates per "
                  "seed, so the solved rates are not comparable with the report's.", ""]
    def device(h):
        kind = h["platform"] if h["device_kind"] == h["platform"] else f"{h['platform']} {h['device_kind']}"
        return f"{h['device_count']} x {kind} (CPU: {h['cpu']}, {h['cpu_count']} cores)"

    hw = sorted({device(h) for m in methods.values() for h in m["hardware"]})
    lines += [
        f"- Protocol: per method, {s['seeds']} seeds trained in one vmapped program for {s['updates']:,} PPO updates, "
        f"then evaluated on the `{s['suite']}` mazes ({len(s['mazes'])}), {s['eval_episodes']} episodes per maze "
        "and seed (sampled actions).",
        "- Ours: mean and 95% Student-t confidence interval across seeds. Report: mean ± std over 10 runs "
        "(a standard deviation, not a confidence interval), after 30k updates.",
        "- Wall time: ours is training summed over every command of a resumed chain (compilation included) "
        "and evaluation; the report's is per run on one V100 GPU.",
        f"- Hardware: {'; '.join(hw) if hw else '—'}.",
    ]
    if s["overrides"]:
        overrides = ", ".join(f"`{k}={v}`" for k, v in s["overrides"].items())
        lines.append(f"- Overrides of the presets: {overrides}.")
    lines += ["", "## Suite mean", "",
              "| Method | Status | Seeds | Updates | Solved rate (ours, 95% CI) "
              "| Solved rate (report, mean ± std of 10) | Return (ours, 95% CI) | Train wall time (ours) "
              "| Eval wall time (ours) | Wall time (report) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in methods.items():
        summary = m.get("summary", {}).get("suite_mean", {})
        r = m["report"]
        sessions = m["train_sessions"]
        train = _duration(m["train_seconds"]) + (f" ({sessions} commands)" if sessions > 1 else "")
        report = f"{r['solved_rate_mean']:.2f} ± {r['solved_rate_std']:.2f}"
        lines.append(f"| {m['label']} (`{name}`) | {m['status']} | {len(m['seeds'])} | {m['updates_done']:,} "
                     f"| {_cell(summary.get('solved_rate'))} | {report} | {_cell(summary.get('return'))} | {train} "
                     f"| {_duration(m['eval_seconds'])} | {r['wall_hours']} h |")
    lines += _budget_table(methods, s["updates"])
    for metric, heading in (("solved_rate", "Solved rate per maze"), ("return", "Return per maze")):
        lines += ["", f"## {heading} (mean [95% CI] across seeds)", "",
                  "| Maze | " + " | ".join(m["label"] for m in methods.values()) + " |",
                  "|---|" + "---|" * len(methods)]
        for maze in [*s["mazes"], "suite_mean"]:
            cells = [_cell(m.get("summary", {}).get(maze, {}).get(metric)) for m in methods.values()]
            lines.append(f"| {'**suite mean**' if maze == 'suite_mean' else maze} | " + " | ".join(cells) + " |")
        if metric == "solved_rate":
            lines.append("| report (suite, mean ± std of 10) | " + " | ".join(
                f"{m['report']['solved_rate_mean']:.2f} ± {m['report']['solved_rate_std']:.2f}"
                for m in methods.values()) + " |")
    lines += _aggregate_tables(doc.get("aggregates"), methods)
    return "\n".join(lines) + "\n"


def _aggregate_tables(agg: dict | None, methods: dict) -> list[str]:
    """rliable's aggregates of the solved rate over seeds x mazes, and the probability of improvement."""
    if not agg:
        return []
    cell = lambda s: f"{s['estimate']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]"  # noqa: E731
    lines = ["", f"## Aggregates over seeds x mazes (rliable: stratified bootstrap, 95% CI, {agg['reps']} redraws)",
             "", "| Method | IQM | Mean | Median | Optimality gap |", "|---|---|---|---|---|"]
    for name, a in agg["groups"].items():
        lines.append(f"| {methods[name]['label']} (`{name}`) | " + " | ".join(
            cell(a[k]) for k in ("iqm", "mean", "median", "optimality_gap")) + " |")
    if agg["probability_of_improvement"]:
        lines += ["", "| P(row > column) | " + " | ".join(methods[n]["label"] for n in agg["groups"]) + " |",
                  "|---|" + "---|" * len(agg["groups"])]
        pairs = {(p["x"], p["y"]): p for p in agg["probability_of_improvement"]}
        for x in agg["groups"]:
            lines.append(f"| {methods[x]['label']} | " + " | ".join(
                "—" if x == y else cell(pairs[(x, y)]) for y in agg["groups"]) + " |")
    if agg["note"]:
        lines += ["", f"Note: {agg['note']}."]
    return lines


def _budget_table(methods: dict, updates: int) -> list[str]:
    """Each method's budget: the PPO updates, the rollout cycles and env steps they are expected to take
    (`expected_budget`) and what the run has spent, beside the report's wall time."""
    dr_cycles = updates
    lines = ["", f"## Budget: {updates:,} PPO updates per seed (the release's unit)", "",
             "| Method | Cycles (expected) | x DR's cycles | Env steps (expected) | Spent so far (cycles, env steps, "
             "updates; seed mean) | Wall time (report) |", "|---|---|---|---|---|---|"]
    for name, m in methods.items():
        e, spent = m["budget"]["expected"], m["budget"]["spent"]
        done = "—" if not spent else (f"{spent['cycles']:,.0f}, {spent['env_steps']:,.0f}, "
                                      f"{spent['gradient_updates']:,.0f}")
        lines.append(f"| {m['label']} (`{name}`) | {e['cycles']:,} | {e['cycles'] / dr_cycles:.2f} | "
                     f"{e['env_steps']:,} | {done} | {m['report']['wall_hours']} h |")
    return lines


def write_outputs(rep: Reproduction) -> str:
    doc = collect(rep)
    (rep.out / "results.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    table = render_table(doc)
    (rep.out / "table.md").write_text(table)
    return table
