"""Training metrics: one convention, interpreted here on device and on the host.

A runner's `step` returns a flat dict of scalars, named by what they are:

- counters (`episodes`, `env_steps`, `gradient_updates`, `cycles`, `<group>/count`) are
  summed over devices and over the steps of a logged chunk;
- `<name>_sum` is a sum whose mean is wanted: its denominator is `<name>_count` when that
  entry exists, else `<group>/count` for a `<group>/<name>_sum` where the group counts
  itself, else `episodes` (an environment's `episode_stats`, e.g. `achievements/eat_cow_sum`). Both are
  summed and divided only on the host, so a mean weighs every episode (or level) equally
  however the steps of a chunk, the devices and the seeds split them;
- `buffer/*` are statistics of the level buffer: a chunk reports its last value;
- everything else (PPO losses, entropies) is a per-step mean: averaged.

`reduce_over_devices` applies it inside `shard_map`; `summarize` turns a chunk's stacked
metrics into one log row; `mean_sums` writes a `_sum`/`_count` pair.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

RUNNER_COUNTS = ("episodes", "env_steps", "gradient_updates", "cycles")
"""The counters every runner reports."""

COUNTS = RUNNER_COUNTS + ("refresh_env_steps",)
"""Counters: summed, never averaged (`refresh_env_steps`: the env steps of SFL's sampling passes and NCC's
scoring passes, not counted in `env_steps`, as their authors count the budget)."""

RUN_TOTALS = ("cycles", "env_steps", "gradient_updates")
"""Per-seed run totals the logs report (and checkpoints keep): rollout cycles, simulated steps, PPO updates."""

RENAMED = {"episode_return": "train/return", "episode_solved": "train/solved_rate", "episode_length": "train/length"}
"""Log names of the episode means the rollouts report."""


def is_counted(name: str) -> bool:
    """Whether `name` is summed over a chunk's steps (a counter, or a half of a mean)."""
    return name in COUNTS or name.endswith(("_sum", "_count", "/count"))


def mean_sums(name: str, total, count, weight=1.0) -> dict:
    """`{name_sum, name_count}` (float32, scaled by `weight`: 0 drops a group that did not play)."""
    w = jnp.asarray(weight, jnp.float32)
    return {f"{name}_sum": w * jnp.asarray(total, jnp.float32), f"{name}_count": w * jnp.asarray(count, jnp.float32)}


def level_metric_sums(prefix: str, metrics: dict, weight=1.0) -> dict:
    """Mean halves of per-level metrics `{name: [B]}` (an environment's `level_metrics`, vmapped):
    each averaged over the levels where it is defined, NaN marking "undefined for this level"
    (AMaze: the shortest path of an unsolvable maze), so no metric needs a special case."""
    out = {}
    for name, value in metrics.items():
        value = jnp.asarray(value, jnp.float32)
        defined = jnp.isfinite(value)
        out.update(mean_sums(f"{prefix}/{name}", jnp.where(defined, value, 0.0).sum(), defined.sum(), weight))
    return out


def reduce_over_devices(metrics: dict, shard) -> dict:
    """Per-device metrics -> global ones (inside `shard_map`; identity unsharded): `episodes` and
    both halves of a mean are summed over devices, everything else averaged (PPO statistics
    already are; the other counters are the same global count on every device)."""
    return {k: shard.sum(v) if k == "episodes" or k.endswith(("_sum", "_count", "/count")) else shard.mean(v)
            for k, v in metrics.items()}


def _denominator(name: str, m: dict):
    if f"{name}_count" in m:
        return m[f"{name}_count"]
    group_count = name.rsplit("/", 1)[0] + "/count"
    if "/" in name and group_count in m:
        return m[group_count]
    return m["episodes"]


def summarize(metrics: dict) -> dict:
    """A chunk's stacked per-step metrics -> one row (see the module docstring)."""
    m = {k: np.asarray(v) for k, v in metrics.items()}
    # A step is one unit of the budget (`budget.py`): it may span several cycles, or none (its
    # counters are then 0): per-cycle means weigh it by its cycles, the buffer is the last cycle's.
    cycles = m["cycles"].reshape(-1) if "cycles" in m else None
    weighted = cycles is not None and (cycles != 1).any() and cycles.sum() > 0
    row = {}
    for k, v in m.items():
        if k.endswith(("_sum", "_count")):
            continue
        if k in COUNTS or k.endswith("/count"):
            row[k] = int(v.sum())
        elif k.startswith("buffer/"):
            row[k] = (v.reshape(-1)[cycles > 0] if weighted and v.size == cycles.size else v.reshape(-1))[-1].item()
        elif weighted and v.size == cycles.size:
            row[k] = float((v.reshape(-1) * cycles).sum() / cycles.sum())
        else:
            row[k] = float(v.mean())
    for k, v in m.items():
        if k.endswith("_sum"):
            name = k[:-len("_sum")]
            total = float(_denominator(name, m).sum())
            row[RENAMED.get(name, name)] = float(v.sum()) / total if total else None  # None: no data
    return row


def mean_row(rows: list[dict]) -> dict:
    """The across-seed mean of per-seed rows, marked `seed: "mean"`: seeds without data (None)
    are left out, a non-finite value makes the mean non-finite; an integer entry equal in every
    row is kept as it is."""
    out = {"seed": "mean"}
    for k in rows[0]:
        if k == "seed":
            continue
        values = [r[k] for r in rows if isinstance(r.get(k), (int, float))]
        out[k] = float(np.mean(values)) if values else None
        if all(isinstance(r.get(k), int) for r in rows):
            out[k] = rows[0][k] if len({r[k] for r in rows}) == 1 else out[k]
    return out


LOSSES = ("policy_loss", "value_loss", "entropy", "grad_norm")
"""The optimisation statistics whose non-finite value means the training diverged (any prefix:
`teacher/policy_loss`, `student1/entropy`; a `_sum` of a weighted mean counts too)."""


def first_nonfinite(metrics: dict) -> tuple[str, int, int] | None:
    """`(metric, step, seed)` of the first step of a chunk (host arrays `[steps]`, or `[seeds, steps]`)
    whose optimisation statistic is NaN or infinite; None when all are finite."""
    found = None
    for k, v in metrics.items():
        if not k.removesuffix("_sum").endswith(LOSSES):
            continue
        v = np.asarray(v, np.float64)
        v = v.reshape(1, -1) if v.ndim <= 1 else v.reshape(v.shape[0], -1)
        bad = ~np.isfinite(v)
        if bad.any():
            seeds, steps = np.nonzero(bad)
            i = int(np.argmin(steps))
            if found is None or (int(steps[i]), int(seeds[i])) < (found[1], found[2]):
                found = (k.removesuffix("_sum"), int(steps[i]), int(seeds[i]))
    return found


def log_columns(metrics_abstract: dict, eval_names, multi_seed: bool, binary_outcome: bool = True) -> list[str]:
    """The columns of a run's CSV log, from the shapes of one step's metrics (see `outcome_free`)."""
    row = summarize({k: np.zeros((1,), v.dtype) for k, v in metrics_abstract.items()})
    columns = ["update", *RUN_TOTALS, "time_s", "sps"] + [k for k in row if k not in RUN_TOTALS]
    columns += [f"eval/{n}" for n in eval_names]
    columns = (["seed"] if multi_seed else []) + columns
    return columns if binary_outcome else list(outcome_free(dict.fromkeys(columns)))


def outcome_free(row: dict) -> dict:
    """`row` without its solved rates (`train/solved_rate`, `replay/solved_rate`, `eval/mean_solved_rate`...):
    an environment without a success outcome (Pendulum, Craftax) reports returns only, not a rate of 0."""
    return {k: v for k, v in row.items() if not k.endswith("solved_rate")}
