"""Curricula side by side: the held-out scores from `evaluate.py` and training curves from the
runs' logs, as one markdown report (issue 25's SFL / DR / robust PLR / ACCEL comparison).

Held out (the comparison): `evaluate.py`'s `results.json` files (dcd12 suite mean, the sampled
levels' mean solved rate, CVaR@alpha), one row per method and file, with the update evaluated and
the env steps spent by then. Training, for the trend within each method:
per window of updates, the solved rate of the training episodes played on freshly generated
levels (DR: all its episodes, `train/solved_rate`; the others: their `new/` group). These are
*episode*-weighted and the methods play levels differently: the PLR family and SFL replay a new
level for the whole rollout, so an easy level adds several solved episodes, while DR moves on
to another level after each episode; the columns therefore do not compare with each other, only
along themselves. Then each method's budget (env steps, gradient updates, SFL's sampling-pass
steps) and the unit its `update` column counts (`--budget`: PPO updates, rollout cycles, or batches of
env steps; the recorded SFL comparison ran before the option existed and counted cycles). Mean and
95% Student-t interval across seeds.

    python benchmarks/method_comparison.py --window 50 --eval runs/cmp/eval/results.json \\
        --run dr=runs/cmp/dr --run plr=runs/cmp/plr --run accel=runs/cmp/accel --run sfl=runs/cmp/sfl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from minimax.training.run_logs import read_rows
from minimax.core.stats import mean_ci


def cell(values) -> str:
    values = [v for v in values if v is not None and np.isfinite(v)]
    if not values:
        return "-"
    mean, low, high = mean_ci(values)
    return f"{mean:.3f}" if not np.isfinite(low) else f"{mean:.3f} ± {(high - low) / 2:.3f}"


def per_seed(rows: list[dict]) -> dict[int, list[dict]]:
    """Rows by seed (single-seed runs log no `seed` column: seed 0)."""
    out: dict[int, list[dict]] = {}
    for r in rows:
        if r.get("seed", 0) != "mean":
            out.setdefault(int(r.get("seed", 0)), []).append(r)
    return out


def window_mean(rows: list[dict], value: str, weight: str, lo: int, hi: int) -> float | None:
    """Episode-weighted mean of `value` over the log rows with lo < update <= hi."""
    pairs = [(r[value], r.get(weight) or 0) for r in rows if lo < r["update"] <= hi and r.get(value) is not None]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else None


def fresh_keys(rows: list[dict]) -> tuple[str, str]:
    """(solved-rate key, weight key) of the episodes played on freshly generated levels."""
    return ("new/solved_rate", "new/count") if any("new/solved_rate" in r for r in rows) else \
        ("train/solved_rate", "episodes")


def budget_of(run: Path) -> str:
    """What the run's `update` column counts (`--budget`): runs saved before the option counted cycles."""
    return json.loads((run / "config.json").read_text()).get("budget", "cycles")


def training_report(runs: dict[str, Path], window: int) -> list[str]:
    seeds = {name: per_seed(read_rows(path)) for name, path in runs.items()}
    last = max(r["update"] for s in seeds.values() for rows in s.values() for r in rows)
    lines = ["| updates | " + " | ".join(runs) + " |", "|---|" + "---|" * len(runs)]
    for lo in range(0, last, window):
        hi = min(lo + window, last)
        row = []
        for name in runs:
            vals = [window_mean(rows, *fresh_keys(rows), lo, hi) for rows in seeds[name].values()]
            row.append(cell(vals))
        lines.append(f"| {lo + 1}-{hi} | " + " | ".join(row) + " |")
    lines += ["", "| method | seeds | --budget (units run) | training solved rate (last window) | env steps (per seed) | "
              "cycles | gradient updates | sampling-pass env steps |", "|---|---|---|---|---|---|---|---|"]
    for name in runs:
        runs_rows = list(seeds[name].values())
        end = runs_rows[0][-1]["update"]
        own = [window_mean(rows, "train/solved_rate", "episodes", end - window, end) for rows in runs_rows]
        sampling = sum(r.get("refresh_env_steps") or 0 for r in runs_rows[0])  # a per-row counter
        lines.append(f"| {name} | {len(runs_rows)} | {budget_of(runs[name])} ({end:,}) | {cell(own)} | "
                     f"{runs_rows[0][-1]['env_steps']:,} | {runs_rows[0][-1]['cycles']:,} | "
                     f"{runs_rows[0][-1]['gradient_updates']:,} | {sampling:,} |")
    return lines


def window_regret(rows: list[dict], lo: int, hi: int) -> float | None:
    """Mean true regret of the training episodes of rows with lo < update <= hi, over every group
    that logs one (`new/`, `replay/`, `mutated/`, `set/`, `teacher/`): each group's mean weighted by
    its level count (`<group>/count`; DR's `new/` group has none: its episodes)."""
    total = weight = 0.0
    for r in rows:
        if lo < r["update"] <= hi:
            for key, value in r.items():
                if key.endswith("/regret") and value is not None and np.isfinite(value):
                    w = r.get(key[: -len("regret")] + "count") or r.get("episodes") or 0
                    total, weight = total + value * w, weight + w
    return total / weight if weight else None


def regret_report(runs: dict[str, Path], window: int) -> list[str]:
    """Per window of updates, the true regret (the level's optimum minus the episode's return) of
    every training episode, where the environment knows the optimum (AMaze)."""
    seeds = {name: per_seed(read_rows(path)) for name, path in runs.items()}
    last = max(r["update"] for s in seeds.values() for rows in s.values() for r in rows)
    lines = ["| updates | " + " | ".join(runs) + " |", "|---|" + "---|" * len(runs)]
    for lo in range(0, last, window):
        hi = min(lo + window, last)
        lines.append(f"| {lo + 1}-{hi} | " + " | ".join(
            cell([window_regret(rows, lo, hi) for rows in seeds[name].values()]) for name in runs) + " |")
    return lines


def eval_report(results_files: list[Path], runs: dict[str, Path]) -> list[str]:
    """`evaluate.py`'s summaries: one row per experiment group and evaluation, found by the runs it
    holds, with the checkpoint evaluated and the env steps each seed had spent by then (its log)."""
    def text(s):
        if s["mean"] is None:
            return "-"
        return f"{s['mean']:.3f}" if s["ci_low"] is None else f"{s['mean']:.3f} ± {(s['ci_high'] - s['ci_low']) / 2:.3f}"

    docs = [json.loads(path.read_text()) for path in results_files]
    columns = [("suite_mean", "solved_rate", "dcd12 solved"), ("cvar", "mean_solved_rate", "sampled levels")]
    alphas = sorted({k for d in docs for g in d["groups"] for k in g["summary"].get("cvar", {}) if k.startswith("cvar@")},
                    key=lambda k: float(k[5:]))
    columns += [("cvar", a, f"CVaR {a[5:]}") for a in alphas]
    lines = ["| method | update | env steps / seed | " + " | ".join(c[2] for c in columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    for doc in docs:
        for name, path in runs.items():
            group = next((g for g in doc["groups"] if any(r.rsplit("/seed", 1)[0] == path.name for r in g["runs"])),
                         None)
            if group is None:
                continue
            update = next(r["checkpoint"] for r in doc["runs"] if r["run"] == path.name)
            steps = next((r["env_steps"] for rows in per_seed(read_rows(path)).values() for r in rows
                          if r["update"] == update), None)
            lines.append(f"| {name} | {update} | {f'{steps:,}' if steps is not None else '-'} | "
                         + " | ".join(text(group["summary"].get(c[0], {}).get(c[1], {"mean": None})) for c in columns)
                         + " |")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", action="append", required=True, help="NAME=RUN_DIR (repeatable, in table order)")
    p.add_argument("--window", type=int, default=50, help="updates per window of the training table")
    p.add_argument("--eval", type=Path, action="append", default=[],
                   help="evaluate.py's results.json for these runs (repeatable: one row per run and file)")
    p.add_argument("--out", type=Path, help="also write the report here (markdown)")
    a = p.parse_args(argv)
    runs = {}
    for item in a.run:
        name, sep, path = item.partition("=")
        if not sep or not Path(path, "config.json").exists():
            p.error(f"--run {item!r}: expected NAME=RUN_DIR with a run's config.json")
        runs[name] = Path(path)
    lines = []
    if a.eval:
        lines += ["Held out (evaluate.py; mean ± 95% CI across seeds):", "", *eval_report(a.eval, runs), ""]
    lines += ["Training episodes on freshly generated levels, solved rate per window (episode-weighted: compare "
              "along a column, not across; see the module docstring):", "", *training_report(runs, a.window)]
    lines += ["", "True regret of the training episodes per window (the level's optimum minus the episode's return, "
              "every group; the curriculum's own levels, so a low value can mean easy levels):", "",
              *regret_report(runs, a.window)]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)


if __name__ == "__main__":
    main()
