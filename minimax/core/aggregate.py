"""Aggregate metrics over runs x tasks with stratified-bootstrap intervals (rliable, Agarwal et al. 2021).

A method's scores are a matrix `[runs, tasks]` (for us: seeds x held-out levels, each a solved
rate). The four aggregates are rliable's (`rliable/metrics.py`), computed the same way:
- `iqm`: the interquartile mean, the 25%-trimmed mean of all runs x tasks (`scipy.stats.trim_mean`);
- `mean`, `median`: of the per-task means over runs;
- `optimality_gap`: `gamma - mean(min(scores, gamma))`, how far below the best score (1) runs fall;
- `probability_of_improvement(x, y)`: per task, P(X > Y) between a random run of x and one of y
  (the Mann-Whitney U statistic over `n_x n_y`; ties count half), averaged over tasks.

Intervals are rliable's default (`get_interval_estimates`): a **stratified** bootstrap, which
redraws the runs of each task with replacement, independently per task (the tasks are fixed),
and the percentile interval of the statistic over `reps` redraws. Probability of improvement
redraws each method's runs independently (`StratifiedIndependentBootstrap`). Everything is
vectorised numpy: `reps` x runs x tasks at once, seeded, so the same inputs give the same interval.

Why not the `rliable` package itself: rliable 1.2.0 needs `arch < 8`, which fails to import
under pandas 3 (what pip installs today), and pulls seaborn and pandas into a library that needs
neither; `tests/test_aggregate.py` checks these functions against a transcription of rliable's.

With few runs (rliable's paper uses 3 to 10) the bootstrap redraws only a handful of values per
task: intervals are then narrow by construction and under-cover. `FEW_RUNS` marks where a report
says so.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.stats

FEW_RUNS = 5
"""Fewer runs per method than this: the intervals are indicative only (reports print a note)."""


def iqm(scores: np.ndarray) -> np.ndarray:
    """Interquartile mean of `[..., runs, tasks]` over its last two axes."""
    flat = scores.reshape(scores.shape[:-2] + (-1,))
    return scipy.stats.trim_mean(flat, proportiontocut=0.25, axis=-1)


def mean(scores: np.ndarray) -> np.ndarray:
    return scores.mean(-2).mean(-1)


def median(scores: np.ndarray) -> np.ndarray:
    return np.median(scores.mean(-2), axis=-1)


def optimality_gap(scores: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    return gamma - np.minimum(scores, gamma).reshape(scores.shape[:-2] + (-1,)).mean(-1)


AGGREGATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "iqm": iqm, "mean": mean, "median": median, "optimality_gap": optimality_gap}
"""The reported aggregates, each `[..., runs, tasks] -> [...]`."""


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) of `[..., runs_x, tasks]` over `[..., runs_y, tasks]`, averaged over tasks."""
    greater = (x[..., :, None, :] > y[..., None, :, :]).astype(np.float64)
    ties = (x[..., :, None, :] == y[..., None, :, :]).astype(np.float64)
    per_task = (greater + 0.5 * ties).mean(axis=(-3, -2))
    return per_task.mean(-1)


def stratified_resample(scores: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """`[reps, runs, tasks]`: each task's runs redrawn with replacement, independently per task."""
    runs, tasks = scores.shape
    picks = rng.integers(0, runs, size=(reps, runs, tasks))
    return scores[picks, np.arange(tasks)[None, None, :]]


def percentile_interval(samples: np.ndarray, size: float = 0.95) -> tuple[float, float]:
    tail = 100 * (1 - size) / 2
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def interval(scores, statistic: Callable, reps: int = 2000, size: float = 0.95, seed: int = 0) -> dict:
    """`{"estimate", "ci_low", "ci_high", "runs", "tasks"}` of `statistic` on `scores [runs, tasks]`."""
    scores = _matrix(scores)
    samples = statistic(stratified_resample(scores, reps, np.random.default_rng(seed)))
    low, high = percentile_interval(samples, size)
    return {"estimate": float(statistic(scores)), "ci_low": low, "ci_high": high, "runs": scores.shape[0],
            "tasks": scores.shape[1]}


def improvement_interval(x, y, reps: int = 2000, size: float = 0.95, seed: int = 0) -> dict:
    """Probability of improvement of `x` over `y` (`[runs, tasks]` each, the same tasks) with its interval."""
    x, y = _matrix(x), _matrix(y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"probability of improvement needs the same tasks: {x.shape[1]} and {y.shape[1]} columns")
    rng = np.random.default_rng(seed)
    samples = probability_of_improvement(stratified_resample(x, reps, rng), stratified_resample(y, reps, rng))
    low, high = percentile_interval(samples, size)
    return {"estimate": float(probability_of_improvement(x, y)), "ci_low": low, "ci_high": high}


def aggregates(scores, reps: int = 2000, size: float = 0.95, seed: int = 0) -> dict:
    """Every aggregate of `AGGREGATES` with its interval."""
    return {name: interval(scores, fn, reps, size, seed) for name, fn in AGGREGATES.items()}


def _matrix(scores) -> np.ndarray:
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2 or not scores.size:
        raise ValueError(f"scores must be a non-empty [runs, tasks] matrix, got shape {scores.shape}")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite (a run without a score on a task has no place in the matrix)")
    return scores
