"""Score-to-probability transforms of PLR, written once for both level stores.

PLR turns level scores (and staleness) into a replay distribution by a transform with a
temperature (PLR eq. 1 and 3). Two stores use that math: the in-jit `LevelBuffer`
(`level_buffer.py`, `jax.numpy` inside the compiled step) and the host-side `LevelSampler`
(`level_sampler.py`, numpy, for environments that step on the host such as Procgen). Every
function here takes the array module `xp` (`jax.numpy`, the default, or `numpy`) and uses only
calls both share, so the two stores cannot drift apart: a change to a transform is one edit.

Float precision follows the input: float32 under jax (x64 off), float64 for numpy arrays, as
the reference `LevelSampler` computes.
"""

from __future__ import annotations

import jax.numpy as jnp

SCORE_TRANSFORMS = ("rank", "power", "softmax", "eps_greedy", "top_k")


def _float(xp, values):
    values = xp.asarray(values)
    return values.astype(xp.result_type(values.dtype, xp.float32))


def competition_rank(values, mask, xp=jnp):
    """1 + the number of masked entries strictly greater (ties share the best rank)."""
    k = values.shape[0]
    key = xp.where(mask, values, -xp.inf)
    ascending = xp.sort(key)
    return (k - xp.searchsorted(ascending, key, side="right") + 1).astype(key.dtype)


def ordinal_rank(values, mask, xp=jnp):
    """1 + position in a stable descending sort of the masked entries: equal values get
    consecutive ranks, the lower index first (`argsort(-scores)` in the release and jaxued)."""
    k = values.shape[0]
    order = xp.argsort(xp.where(mask, -values, xp.inf), stable=True)
    ranks = xp.arange(1, k + 1, dtype=values.dtype)
    if xp is jnp:
        return jnp.zeros((k,), values.dtype).at[order].set(ranks)
    out = xp.empty((k,), values.dtype)
    out[order] = ranks
    return out


def normalize(weights, mask, xp=jnp):
    """Weights over `mask` summing to 1; uniform over `mask` when they sum to 0, uniform
    over everything when `mask` is empty."""
    weights = xp.where(mask, weights, 0.0)
    total = weights.sum()
    n = mask.sum()
    uniform = xp.where(n > 0, mask / xp.maximum(n, 1), xp.full_like(weights, 1.0 / weights.shape[0]))
    return xp.where(total > 0, weights / xp.where(total > 0, total, 1.0), uniform)


def transform_weights(values, mask, transform: str, temperature: float, eps: float = 0.05, top_k: int = 1,
                      ties: str = "competition", xp=jnp):
    """A distribution over the masked entries from `values` (higher = more likely).

    rank:       P ∝ (1 / rank)^(1/T)                (PLR eq. 1; `ties`: ordinal or competition ranks)
    power:      P ∝ max(v, 0)^(1/T)                 (computed as (v / max v)^(1/T))
    softmax:    P ∝ exp(v / T)
    eps_greedy: (1 - eps) spread over the maxima, eps uniform over all masked entries
    top_k:      uniform over the entries ranked <= top_k (ties at the boundary included)
    """
    values = _float(xp, values)
    inv_t = 1.0 / temperature
    if transform == "rank":
        rank = ordinal_rank(values, mask, xp) if ties == "ordinal" else competition_rank(values, mask, xp)
        weights = rank ** -inv_t
    elif transform == "power":
        v = xp.where(mask, xp.maximum(values, 0.0), 0.0)
        top = v.max()
        weights = (v / xp.where(top > 0, top, 1.0)) ** inv_t
    elif transform == "softmax":
        top = xp.where(mask, values, -xp.inf).max()
        weights = xp.exp((values - xp.where(xp.isfinite(top), top, 0.0)) * inv_t)
    elif transform == "eps_greedy":
        is_max = mask & (values == xp.where(mask, values, -xp.inf).max())
        weights = (1 - eps) * normalize(is_max.astype(values.dtype), mask, xp) + eps * normalize(
            xp.zeros_like(values), mask, xp)
    elif transform == "top_k":
        weights = (competition_rank(values, mask, xp) <= top_k).astype(values.dtype)
    else:
        raise ValueError(f"unknown score transform {transform!r}; choose from {', '.join(SCORE_TRANSFORMS)}")
    return normalize(weights, mask, xp)
