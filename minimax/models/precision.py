"""Mixed precision for the networks' matrix products (`--matmul-dtype`, issue 55 part 3).

What it does: with `bfloat16`, every matrix product of the student and of PAIRED's teacher (the
conv as a patch matmul, the recurrent core's input projection and hidden-to-hidden product, forward
and hand-written backward, the heads' and the MLP's dense layers, S5's dense layers) multiplies
bfloat16 copies of its two operands and returns float32 (`preferred_element_type`: the products are
accumulated in float32 where the hardware does so, as tensor cores do); its backward pass multiplies the
cotangent, rounded to bfloat16 as PyTorch's autocast does, by the other rounded operand, again with a
float32 result (`_low_einsum`), so the gradient's products run at bfloat16 too. Everything else stays float32:
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
    """`jnp.einsum(spec, a, b)` with both operands rounded to `dtype` and a float32 result, in the forward and
    the backward pass (`_low_einsum`); for float32 exactly `jnp.einsum(spec, a, b)`. `spec` names its output
    (`"tnf,fg->tng"`), without ellipses or repeated indices."""
    if check_matmul_dtype(dtype) == "float32":
        return jnp.einsum(spec, a, b)
    return _low_einsum(_transposable(spec), dtype, a, b)


def matmul(a, b, dtype: str = "float32"):
    """`a @ b` for a 2-D `b` (any leading axes on `a`) at `dtype` (`einsum`)."""
    if check_matmul_dtype(dtype) == "float32":
        return a @ b
    lead = "abcdefghijklmnopqrstuvwx"[:a.ndim - 1]  # the leading axes' letters (y, z: the product's)
    return einsum(f"{lead}y,yz->{lead}z", a, b, dtype)


def _transposable(spec: str) -> str:
    """`spec` if each operand's cotangent is itself a two-operand einsum (`_low_einsum_backward`): an explicit
    output, no ellipsis, no index repeated within a term, and every index of an operand in the other one or
    in the output (else that operand's cotangent would be a broadcast, not a product)."""
    terms = spec.replace(" ", "").replace("->", ",").split(",")
    ok = "->" in spec and "." not in spec and len(terms) == 3 and all(len(set(t)) == len(t) for t in terms)
    a, b, out = terms if len(terms) == 3 else ("", "", "")
    if not (ok and set(a) <= set(b) | set(out) and set(b) <= set(a) | set(out)):
        raise ValueError(f"a low-precision product needs a two-operand einsum spec whose operands' cotangents are "
                         f"products (explicit output, no ellipsis or repeated index, every index of an operand in "
                         f"the other or the output), got {spec!r}")
    return spec.replace(" ", "")


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _low_einsum(spec: str, dtype: str, a, b):
    """The product of `a` and `b` rounded to `dtype`, float32 result. Its backward pass (`_low_einsum_backward`)
    multiplies at `dtype` too: autodiff of the rounding would upcast the `dtype` operand to meet the float32
    cotangent, so the backward products (two thirds of a training step's) would run at float32 (TF32 on a GPU,
    half the bfloat16 rate), and it would round each operand's gradient to `dtype` on the way out."""
    low = jnp.dtype(dtype)
    return jnp.einsum(spec, a.astype(low), b.astype(low), preferred_element_type=jnp.float32)


def _low_einsum_forward(spec: str, dtype: str, a, b):
    low = jnp.dtype(dtype)
    a_low, b_low = a.astype(low), b.astype(low)
    # The residuals are the rounded operands (half the bytes of float32 ones) and the primal dtypes, as empty
    # arrays (a cotangent has its primal's dtype: a float32 parameter's gradient stays float32).
    like = (jnp.zeros((0,), a.dtype), jnp.zeros((0,), b.dtype))
    return jnp.einsum(spec, a_low, b_low, preferred_element_type=jnp.float32), (a_low, b_low, like)


def _low_einsum_backward(spec: str, dtype: str, residuals, cotangent):
    """The cotangent, rounded to `dtype` as autocast's backward does, times each other operand, with float32
    results: `d a = einsum(out, b -> a)`, `d b = einsum(a, out -> b)`."""
    a_low, b_low, (a_like, b_like) = residuals
    (sa, sb), out = spec.split("->")[0].split(","), spec.split("->")[1]
    ct = cotangent.astype(jnp.dtype(dtype))
    da = jnp.einsum(f"{out},{sb}->{sa}", ct, b_low, preferred_element_type=jnp.float32)
    db = jnp.einsum(f"{sa},{out}->{sb}", a_low, ct, preferred_element_type=jnp.float32)
    return da.astype(a_like.dtype), db.astype(b_like.dtype)


_low_einsum.defvjp(_low_einsum_forward, _low_einsum_backward)


def _low_dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *, low):
    """flax `Dense`'s product, `lhs[..., k] @ rhs[k, m]`, at `low` with a float32 result (`matmul`)."""
    del preferred_element_type, precision  # flax passes its compute dtype's; the result here is float32 always
    if tuple(map(tuple, dimension_numbers[0])) != ((lhs.ndim - 1,), (0,)) or any(dimension_numbers[1]) \
            or rhs.ndim != 2:
        raise ValueError(f"a low-precision dense product contracts the input's last axis with a 2-D kernel's "
                         f"first, got dimension numbers {dimension_numbers} for shapes {lhs.shape} x {rhs.shape}")
    return matmul(lhs, rhs, low.name)


def dense(features: int, dtype: str = "float32", **kwargs) -> nn.Dense:
    """`nn.Dense(features, **kwargs)` whose product runs at `dtype` (same parameters, float32 result);
    for float32 a plain `nn.Dense`. Called inside a compact `__call__`, like `nn.Dense`."""
    if check_matmul_dtype(dtype) == "float32":
        return nn.Dense(features, **kwargs)
    return nn.Dense(features, dot_general=functools.partial(_low_dot_general, low=jnp.dtype(dtype)), **kwargs)
