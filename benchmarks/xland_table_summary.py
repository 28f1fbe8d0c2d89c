"""The table of `benchmarks/xland_table.sh` from its `evaluate.py` output, as markdown: per method, the mean win
rate over the suite's rulesets (each ruleset's fraction of the 10 episodes of its trial solved; SFL's headline, their
CVaR at alpha = 100%) per seed and across seeds (mean and 95% t interval over the seeds' means, `evaluate.py`'s
"suite mean"; its level bootstrap is too narrow at 3 seeds), `evaluate.py`'s probability of improvement, the
CVaR at 10% and 1% (the mean over each seed's worst rulesets, ranked by the same evaluation: SFL ranked by one
evaluation seed and reported another's), and SFL's published means beside them.

Usage: python benchmarks/xland_table_summary.py benchmarks/results/xland/table/eval/results.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

PUBLISHED = {"dr": 0.107, "plr": 0.194, "sfl": 0.264}
"""SFL's committed results (5 seeds, mean win rate over their 10,000 evaluation rulesets, 10^10 / 5.7 x 10^9 steps)."""


def cvar(rates: np.ndarray, alpha: float) -> float:
    worst = np.sort(rates)[:max(1, int(round(alpha * rates.size)))]
    return float(worst.mean())


def main(path: str) -> None:
    doc = json.loads(open(path).read())
    seeds: dict[str, list[np.ndarray]] = {}
    for run in doc["runs"]:
        rates = np.array([m["solved_rate"] for m in run["mazes"].values()])
        seeds.setdefault(run["run"], []).append(rates)
    means = {g["runs"][0].split("/")[0]: g["summary"]["suite_mean"]["solved_rate"] for g in doc["groups"]}
    print("| method | mean win rate per seed | mean [95% CI] | rulesets won once+ | CVaR 10% | CVaR 1% | SFL's |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in seeds.items():
        m = means.get(name)
        ci = f"{m['mean']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}]" if m else "-"
        per_seed = ", ".join(f"{r.mean():.4f}" for r in runs)
        c10 = np.mean([cvar(r, 0.10) for r in runs])
        c1 = np.mean([cvar(r, 0.01) for r in runs])
        won = np.mean([(r > 0).mean() for r in runs])
        print(f"| {name} | {per_seed} | {ci} | {won:.3f} | {c10:.4f} | {c1:.4f} | {PUBLISHED.get(name, float('nan')):.3f} |")
    print(f"\n{len(next(iter(seeds.values()))[0])} rulesets; probability of improvement (row over column):")
    for p in doc["aggregates"].get("probability_of_improvement", []):
        print(f"- P({p['x']} > {p['y']}) = {p['estimate']:.3f} "
              f"[{p['ci_low']:.3f}, {p['ci_high']:.3f}]")


if __name__ == "__main__":
    main(sys.argv[1])
