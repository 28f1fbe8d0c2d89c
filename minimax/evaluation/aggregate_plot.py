"""rliable's figures of an evaluation: the interval plot of the aggregates and performance profiles.

    python -m minimax.evaluation.plot eval_results/dr-seed0+3 --out aggregates.png

The argument is an evaluation's output (`results.json`, or the directory holding it; see
`evaluate.py`). Left: IQM, mean, median and optimality gap of each experiment's solved rate over
runs x levels, with their stratified-bootstrap 95% intervals (as `evaluate.py` printed them).
Right: the performance profile, the fraction of runs x levels whose solved rate exceeds tau, with
a 95% band from the same bootstrap (rliable's `create_performance_profile`, score distributions).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from minimax.core.aggregate import percentile_interval, stratified_resample
from minimax.evaluation.aggregates import score_matrix

METRICS = (("iqm", "IQM"), ("mean", "Mean"), ("median", "Median"), ("optimality_gap", "Optimality gap"))


def evaluation_file(path) -> Path | None:
    """`results.json` of an evaluation at `path` (the file or its directory), or None."""
    path = Path(path)
    path = path / "results.json" if path.is_dir() else path
    if path.name != "results.json" or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return path if isinstance(doc, dict) and "runs" in doc and "groups" in doc else None


def profile(scores: np.ndarray, taus: np.ndarray, reps: int = 1000, seed: int = 0):
    """`(fraction > tau, low, high)` per tau of a `[runs, tasks]` score matrix."""
    point = (scores[None] > taus[:, None, None]).mean(axis=(1, 2))
    redrawn = stratified_resample(scores, reps, np.random.default_rng(seed))
    samples = (redrawn[:, None] > taus[None, :, None, None]).mean(axis=(2, 3))
    bands = np.array([percentile_interval(samples[:, i]) for i in range(len(taus))])
    return point, bands[:, 0], bands[:, 1]


def plot_aggregates(results_json, out) -> Path:
    """Draw `results_json`'s aggregates and performance profiles into the PNG `out`."""
    import matplotlib  # noqa: PLC0415  (a tool that never plots never imports it)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    doc = json.loads(Path(results_json).read_text())
    agg = doc.get("aggregates")
    if not agg:
        raise ValueError(f"{results_json} holds no aggregates (an evaluation without suite levels?)")
    levels = list(doc["runs"][0]["mazes"])
    labels = list(agg["groups"])
    matrices = [score_matrix([doc["runs"][i] for i in g["members"]], levels) for g in doc["groups"]]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, len(METRICS) + 1, figsize=(4 * (len(METRICS) + 1), 0.6 * len(labels) + 2.5))
    for ax, (key, title) in zip(axes, METRICS):
        for row, label in enumerate(labels):
            s = agg["groups"][label][key]
            ax.barh(row, s["ci_high"] - s["ci_low"], left=s["ci_low"], height=0.6, color=colors[row % len(colors)],
                    alpha=0.75)
            ax.plot([s["estimate"]] * 2, [row - 0.3, row + 0.3], color="black", lw=2)
        ax.set_yticks(range(len(labels)), labels if key == "iqm" else [""] * len(labels))
        ax.set_title(title)
        ax.set_xlabel(f"{agg['score'].replace('_', ' ')}")
    taus = np.linspace(0.0, 1.0, 41)
    ax = axes[-1]
    for row, (label, scores) in enumerate(zip(labels, matrices)):
        point, low, high = profile(scores, taus)
        ax.plot(taus, point, color=colors[row % len(colors)], label=label)
        ax.fill_between(taus, low, high, color=colors[row % len(colors)], alpha=0.2)
    ax.set_xlabel("solved rate tau")
    ax.set_ylabel("fraction of runs x levels > tau")
    ax.set_title("Performance profile")
    ax.legend(fontsize="small")
    fig.suptitle(f"{len(levels)} levels; stratified bootstrap, 95% CI" + (f" — {agg['note']}" if agg["note"] else ""),
                 fontsize="small")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
