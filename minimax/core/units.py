"""Budget units: what `--num-updates` counts (`updates`, `cycles`, `env_steps`) and when a unit
cannot be spent. The lowest floor, so that runners (`runners/plr_family.py`: a stalled buffer) and
the config (`--budget`) read it without importing the training loop that spends the units
(`training/budget.py`, whose docstring explains each unit).
"""

from __future__ import annotations

import math
import typing
from typing import Literal

Budget = Literal["updates", "cycles", "env_steps"]
BUDGETS: tuple[str, ...] = typing.get_args(Budget)

COUNTER = {"updates": "gradient_updates", "cycles": "cycles", "env_steps": "env_steps"}
"""The run total (`metrics.RUN_TOTALS`) each budget unit counts."""

LABEL = {"updates": "updates", "cycles": "cycles", "env_steps": "batches"}
"""What the progress bar calls a unit (`env_steps`: batches of num_envs x num_steps env steps)."""


def max_idle_cycles(replay_prob, floor: int = 64):
    """Cycles without progress after which a run is stuck, not unlucky: with a ready buffer a cycle
    trains with probability `replay_prob` (capped at 1), so `k` idle cycles in a row have probability
    `(1 - p)^k`; the limit puts that below 1e-12 (and at least `floor` cycles). A Python number gives an
    int; an array (the traced `--replay-prob` inside a program) gives the same as an int32 array."""
    if not isinstance(replay_prob, (int, float)):
        import jax.numpy as jnp  # noqa: PLC0415  (only a program's caller has arrays)

        p = jnp.clip(jnp.asarray(replay_prob, jnp.float32), 1e-30, 1.0)
        k = jnp.ceil(math.log(1e-12) / jnp.log1p(-jnp.where(p >= 1, 0.5, p)))
        return jnp.where(p >= 1, floor, jnp.maximum(floor, jnp.minimum(k, 2.0 ** 30))).astype(jnp.int32)
    if replay_prob >= 1:
        return floor
    return max(floor, math.ceil(math.log(1e-12) / math.log1p(-replay_prob)))
