"""Mixed precision for the networks' matrix products (`--matmul-dtype`, issue 55 part 3).

What it does: with `bfloat16`, every matrix product of the student and of PAIRED's teacher (the
conv as a patch matmul, the recurrent core's input projection and hidden-to-hidden product, forward
and hand-written backward, the heads' and the MLP's dense layers, S5's dense layers) multiplies
bfloat16 copies of its two operands and returns float32 (`preferred_element_type`: the products are
accumulated in float32 where the hardware does so, as tensor cores do). Everything else stays float32:
the parameters and the optimiser's moments (the master copy Adam updates), the recurrent carry, the
gate nonlinearities, the logits, values, advantages and losses. So the option changes the rounding of
the inputs to the products only (8 bits of mantissa instead of 24), and no state of the run changes
dtype: a checkpoint holds the same arrays in either setting.

Why products only: they are where the time goes on a GPU (bfloat16 tensor cores run at twice TF32's
rate and halve the bytes moved), while rounding a recurrent state or a softmax to 8 bits is where
mixed precision hurts learning. The default, `float32`, builds exactly the program it built before the
option existed (no casts are inserted).

S5's state-space recurrence (complex, `models/s5.py`) keeps float32 in any setting; the host path's
IMPALA network (Procgen) does not read the option.
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp

MATMUL_DTYPES = ("float32", "bfloat16")
"""The values of `--matmul-dtype`."""


def check_matmul_dtype(dtype: str) -> str:
    if dtype not in MATMUL_DTYPES:
        raise ValueError(f"matmul dtype must be one of {', '.join(MATMUL_DTYPES)}, got {dtype!r}")
    return dtype


def einsum(spec: str, a, b, dtype: str = "float32"):
    """`jnp.einsum(spec, a, b)` with both operands rounded to `dtype` and a float32 result; for float32
    exactly `jnp.einsum(spec, a, b)`."""
    if check_matmul_dtype(dtype) == "float32":
        return jnp.einsum(spec, a, b)
    low = jnp.dtype(dtype)
    return jnp.einsum(spec, a.astype(low), b.astype(low), preferred_element_type=jnp.float32)


def matmul(a, b, dtype: str = "float32"):
    """`a @ b` for a 2-D `b` (any leading axes on `a`) at `dtype` (`einsum`)."""
    if check_matmul_dtype(dtype) == "float32":
        return a @ b
    low = jnp.dtype(dtype)
    return jnp.matmul(a.astype(low), b.astype(low), preferred_element_type=jnp.float32)


def _low_dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *, low):
    """`lax.dot_general` on `low` copies of the operands with a float32 result (flax `Dense`'s hook)."""
    del preferred_element_type  # flax passes its own compute dtype's; the result here is float32 always
    return jax.lax.dot_general(lhs.astype(low), rhs.astype(low), dimension_numbers, precision=precision,
                               preferred_element_type=jnp.float32)


def dense(features: int, dtype: str = "float32", **kwargs) -> nn.Dense:
    """`nn.Dense(features, **kwargs)` whose product runs at `dtype` (same parameters, float32 result);
    for float32 a plain `nn.Dense`. Called inside a compact `__call__`, like `nn.Dense`."""
    if check_matmul_dtype(dtype) == "float32":
        return nn.Dense(features, **kwargs)
    return nn.Dense(features, dot_general=functools.partial(_low_dot_general, low=jnp.dtype(dtype)), **kwargs)
