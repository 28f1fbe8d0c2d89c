"""What an evaluation reports (`evaluate.py`): the summary across policies (mean and 95% interval
per level, the suite mean and CVaR), `results.json` and the CSVs, the printed table, and where
they go by default."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from minimax.core.stats import mean_ci

METRICS = ("solved_rate", "return", "length", "gap")


def summarize(results: list[dict], mazes) -> dict:
    """Across policies: `{maze, "<group>_mean" (`level_groups`) or "suite_mean": {metric: {mean, ci_low, ci_high,
    n}}}` (and CVaR)."""
    def stat(values, rate: bool):
        """Mean and 95% interval; a rate's interval is clipped to [0, 1], the values it can take."""
        mean, low, high = mean_ci(values)
        if rate and math.isfinite(low):
            low, high = max(low, 0.0), min(high, 1.0)
        return {"mean": mean, "ci_low": low, "ci_high": high, "n": len(values)}

    summary = {m.name: {k: stat([r["mazes"][m.name][k] for r in results], k == "solved_rate") for k in METRICS}
               for m in mazes}
    for key, names in [(f"{group}_mean", names) for group, names in level_groups(mazes).items()] + \
            [("suite_mean", [m.name for m in mazes])]:
        summary[key] = {k: stat([np.mean([r["mazes"][n][k] for n in names]) for r in results], k == "solved_rate")
                        for k in METRICS}
    if all("cvar" in r for r in results) and results:
        names = ["mean_solved_rate"] + [k for k in results[0]["cvar"] if k.startswith("cvar@")]
        summary["cvar"] = {k: stat([r["cvar"][k] for r in results], True) for k in names}
    return summary


def level_groups(mazes) -> dict[str, list[str]]:
    """`{group: level names}` for a suite whose levels are named `<group>/<level>` in more than one group
    (Kinetix's `all`: `s/...`, `m/...`, `l/...`, reported per size class as its authors do); else empty."""
    groups: dict[str, list[str]] = {}
    for m in mazes:
        groups.setdefault(m.name.split("/")[0] if "/" in m.name else "", []).append(m.name)
    return groups if len(groups) > 1 and "" not in groups else {}


def write_results(out_dir: Path, results: list[dict], groups: list[dict], settings: dict, extra=None) -> None:
    """`results.json` (settings, every run's results, each group's summary; `summary` too when
    there is one group; `extra`'s entries, e.g. the aggregates), `per_run.csv` and `summary.csv`
    (one block of rows per group)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    clean = lambda v: None if isinstance(v, float) and not np.isfinite(v) else v  # noqa: E731
    doc = {"settings": settings, "runs": results, "groups": groups, **(extra or {})}
    if len(groups) == 1:
        doc["summary"] = groups[0]["summary"]
    doc = json.loads(json.dumps(doc, default=float), parse_constant=lambda _: None)
    (out_dir / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    with (out_dir / "per_run.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["run", "seed", "checkpoint", "level", *METRICS])
        for r in results:
            for name, m in r["mazes"].items():
                writer.writerow([r["run"], r["seed"], r["checkpoint"], name, *(clean(m[k]) for k in METRICS)])
            for name, value in r.get("cvar", {}).items():
                if name.startswith("cvar@") or name == "mean_solved_rate":
                    writer.writerow([r["run"], r["seed"], r["checkpoint"], "sampled" if name == "mean_solved_rate"
                                     else name, value, "", "", ""])
    with (out_dir / "summary.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["group", "level", "metric", "mean", "ci_low", "ci_high", "n"])
        for g in groups:
            for name, metrics in g["summary"].items():
                for k, s in metrics.items():
                    writer.writerow([g["label"], name, k, clean(s["mean"]), clean(s["ci_low"]), clean(s["ci_high"]),
                                     s["n"]])


def fresh_out_dir(runs, root: Path = Path("eval_results")) -> Path:
    """`eval_results/<first run>[+N]`, with -2, -3, ... appended while such a directory holds results:
    an evaluation never replaces another's unasked."""
    base = Path(runs[0]).resolve().name + (f"+{len(runs) - 1}" if len(runs) > 1 else "")
    out, n = root / base, 1
    while (out / "results.json").exists():
        n += 1
        out = root / f"{base}-{n}"
    return out


def print_table(summary: dict, mazes) -> None:
    def cell(s):
        if np.isnan(s["mean"]):
            return "–"
        if np.isnan(s["ci_low"]):
            return f"{s['mean']:.3f}"
        return f"{s['mean']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]"

    rows = [(m.name, summary[m.name]) for m in mazes] + [(f"{g} mean", summary[f"{g}_mean"])
                                                          for g in level_groups(mazes)]
    rows.append(("suite mean", summary["suite_mean"]))
    width = max(len(name) for name, _ in rows)
    n = summary["suite_mean"]["solved_rate"]["n"]
    print(f"{'level':<{width}}  {'solved rate (95% CI)':<28}  {'return (95% CI)':<28}  n={n}")
    for name, s in rows:
        print(f"{name:<{width}}  {cell(s['solved_rate']):<28}  {cell(s['return']):<28}")
    if "cvar" in summary:
        c = summary["cvar"]
        print(f"sampled levels: mean solved rate {cell(c['mean_solved_rate'])}; CVaR (solved rate of the worst "
              f"alpha of them): " + ", ".join(f"alpha {k[5:]}: {cell(v)}" for k, v in c.items() if k.startswith("cvar@")))
