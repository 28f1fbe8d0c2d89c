"""Branches whose side may be known when the program is traced.

A PLR-family cycle branches on its replay decision: replay or new levels, train or not, mutate or
not. Where the decision is a traced value these are `lax.cond`s, and under `vmap` over seeds (a
per-seed predicate) a `cond` runs both sides and selects: every seed pays for the PPO update a
cycle of new levels throws away. Where the caller already knows the side (`budget.py`'s update
unit plays new-level cycles until a seed replays, then its replay cycle), the decision is a Python
bool and only that side is built.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def branch(pred, on_true, on_false, operand):
    """`lax.cond(pred, on_true, on_false, operand)`, or just the chosen side when `pred` is a Python
    bool: a cycle whose replay decision its caller already knows (`budget.py`'s update unit) builds
    only that side, so a vmapped program never computes the other one (under `vmap` a `cond` on a
    per-seed predicate runs both sides and selects)."""
    if isinstance(pred, bool):
        return on_true(operand) if pred else on_false(operand)
    return jax.lax.cond(pred, on_true, on_false, operand)


def cond_or_zeros(pred, fn, carry):
    """`fn(carry) -> (carry, metrics)` where `pred`, else `(carry, zeros)` shaped like its metrics:
    the skipped side of a branch (a cycle without a gradient, or without a mutation rollout)
    reports zeros, which its weights then leave out of the logs. `pred` may be a Python bool (`branch`); when
    it is True, `fn` is traced once, without a shape pass (tracing is most of a test's compile time)."""
    if pred is True:
        return fn(carry)
    shapes = jax.eval_shape(fn, carry)[1]
    skip = lambda c: (c, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes))  # noqa: E731
    return branch(pred, fn, skip, carry)
