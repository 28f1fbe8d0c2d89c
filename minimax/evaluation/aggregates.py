"""rliable's aggregate metrics in an evaluation (`evaluate.py`, `reproduce`): per experiment, the IQM,
mean, median and optimality gap of the solved rate over runs (seeds) x held-out levels, with
stratified-bootstrap 95% intervals, and the probability of improvement between every two
experiments (`minimax/core/aggregate.py` says how, and why not the rliable package itself).

The tasks are the suite's levels and each run's score on a level its solved rate, so a score is
in [0, 1] and 1 is optimal (the optimality gap's gamma). The aggregates pool levels: a level a
method solves always counts like one it never solves, whatever the suite mean says.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np

from minimax.core.aggregate import FEW_RUNS, aggregates, improvement_interval

SCORE = "solved_rate"
"""The per-run, per-level score the aggregates are of."""


def score_matrix(results: list[dict], level_names: list[str]) -> np.ndarray:
    """`[runs, levels]` of the solved rate."""
    return np.array([[r["mazes"][name][SCORE] for name in level_names] for r in results], np.float64)


def aggregate_results(groups: list[dict], results: list[dict], level_names: list[str], reps: int = 2000,
                      seed: int = 0) -> dict | None:
    """`aggregate_groups` of an evaluation's groups (`members`: indices into `results`), or None where
    there is nothing to aggregate: no suite levels, or an environment without a success outcome
    (Pendulum: its solved rates are undefined, and returns have no optimum to measure a gap from)."""
    if not level_names:
        return None
    matrices = [score_matrix([results[i] for i in g["members"]], level_names) for g in groups]
    if not all(np.isfinite(m).all() for m in matrices):
        return None
    return aggregate_groups(groups, matrices, reps, seed)


def aggregate_groups(groups: list[dict], matrices: list[np.ndarray], reps: int = 2000, seed: int = 0) -> dict:
    """`{"groups": {label: {metric: interval}}, "probability_of_improvement": [...], "note": str}`."""
    out = {"score": SCORE, "reps": reps, "groups": {}, "probability_of_improvement": []}
    for g, m in zip(groups, matrices):
        out["groups"][g["label"]] = aggregates(m, reps=reps, seed=seed)
    for (gx, mx), (gy, my) in itertools.permutations(zip(groups, matrices), 2):
        out["probability_of_improvement"].append({"x": gx["label"], "y": gy["label"],
                                                  **improvement_interval(mx, my, reps=reps, seed=seed)})
    fewest = min(m.shape[0] for m in matrices)
    out["note"] = (f"{fewest} run(s) in the smallest experiment: with fewer than {FEW_RUNS} runs the bootstrap "
                   f"redraws a handful of values per level, so its intervals are too narrow; read them as "
                   f"indicative") if fewest < FEW_RUNS else ""
    return out


def print_aggregates(agg: dict) -> None:
    def cell(s):
        return f"{s['estimate']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]"

    labels = list(agg["groups"])
    width = max(len(label) for label in labels + ["experiment"])
    print(f"\naggregates of the {agg['score'].replace('_', ' ')} over runs x levels (rliable; stratified "
          f"bootstrap, 95% CI, {agg['reps']} redraws)")
    print(f"{'experiment':<{width}}  {'IQM':<24}  {'mean':<24}  {'median':<24}  {'optimality gap':<24}")
    for label in labels:
        a = agg["groups"][label]
        print(f"{label:<{width}}  " + "  ".join(f"{cell(a[k]):<24}" for k in ("iqm", "mean", "median",
                                                                              "optimality_gap")))
    for p in agg["probability_of_improvement"]:
        print(f"P({p['x']} > {p['y']}) = {cell(p)}")
    if agg["note"]:
        print(f"note: {agg['note']}")


def write_aggregates(out_dir: Path, agg: dict) -> None:
    """`aggregates.csv`: one row per experiment and metric, then one per ordered pair of experiments."""
    with (Path(out_dir) / "aggregates.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["experiment", "metric", "estimate", "ci_low", "ci_high", "runs", "levels"])
        for label, metrics in agg["groups"].items():
            for name, s in metrics.items():
                writer.writerow([label, name, s["estimate"], s["ci_low"], s["ci_high"], s["runs"], s["tasks"]])
        for p in agg["probability_of_improvement"]:
            writer.writerow([f"{p['x']} > {p['y']}", "probability_of_improvement", p["estimate"], p["ci_low"],
                             p["ci_high"], "", ""])
