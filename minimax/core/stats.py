"""Statistics for reporting results across seeds and levels.

`mean_ci`: mean and a Student-t confidence interval of the mean across runs (seeds are few,
so the normal approximation would be too narrow). `cvar`: the conditional value at risk of
per-level scores, the mean over the worst `alpha` fraction of levels (the SFL paper's
robustness protocol).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _scipy_stats


def mean_ci(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """`(mean, low, high)`: the `confidence` interval `mean +- t * s / sqrt(n)` with the sample
    standard deviation `s` (ddof 1) and the Student-t quantile for n - 1 degrees of freedom.
    With a single value the interval is undefined: `(value, nan, nan)`."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("mean_ci needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = float(x.mean())
    if x.size == 1:
        return mean, math.nan, math.nan
    half = float(_scipy_stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def cvar_of_worst(rank_values, measured_values, alpha: float) -> float:
    """The SFL paper's CVaR: the mean of `measured_values` over the `floor(alpha * n)` levels (at
    least one) whose `rank_values` are lowest (ties: the earlier level). Ranking with one run and
    measuring with an independent one keeps the estimate free of the selection's own luck."""
    rank = np.asarray(rank_values, dtype=np.float64).reshape(-1)
    measured = np.asarray(measured_values, dtype=np.float64).reshape(-1)
    if rank.size == 0 or rank.size != measured.size:
        raise ValueError(f"cvar_of_worst needs two equal, non-empty arrays, got {rank.size} and {measured.size}")
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    k = max(1, math.floor(alpha * rank.size + 1e-9))
    return float(measured[np.argsort(rank, kind="stable")[:k]].mean())
