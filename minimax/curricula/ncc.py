"""NCC's learned replay distribution (Monette et al., "An Optimisation Framework for Unsupervised
Environment Design", RLC 2025; nmonette/NCC-UED, `minigrid/train/minigrid_ncc.py` with
`minigrid/util/ncc_utils.py`).

NCC keeps a full buffer of K levels and a weight vector `y` on the simplex over its slots.
Each cycle the runner (`runners/ncc.py`) scores every buffer level with the current policy,
offers a batch of fresh scored levels to the buffer, and moves `y` by one step on the
entropy-regularised objective `y . s - tau sum_i y_i log y_i`; the student trains on levels
drawn from the previous cycle's `y`. This module holds the pure parts:

- `project_truncated_simplex`: Euclidean projection onto `{y : sum y = 1, trunc <= y_i <= 1}`
  (exact, by the sorted breakpoints of the piecewise-linear `sum_i clip(x_i + lambda, trunc, 1)`).
- `adversary_step`: the authors' y update. Its gradient `g = s - tau (log y + 1)` is scaled by
  the running sum of squares `G` (started at 0.1) as `g (G + 1e-7)^-0.4` (their
  `scale_y_by_ti_ada`), times `meta_lr`, then projected. **Direction**: their code applies
  `optax.scale(-meta_lr)` and adds the result, which descends the objective, whereas the paper's
  adversary maximises it. `ascent=False` (the default) is the code that produced their tables;
  `ascent=True` is the paper's statement (`--ncc-adversary ascent`).
- `insert_sorted`: their `replace_fn` -> jaxued's `insert_batch` with the sampler's weights being
  the scores: the fresh levels, sorted by score high to low (`flipud(argsort)`, so equal scores
  go in later-drawn first), are offered one at a time; each replaces the buffer's lowest-score
  slot (the first such slot) when its score is strictly higher. The slot's `y` weight stays.
- `attempt_learnability` / `attempt_regret`: a level's score from A independent attempts.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

RSS_INITIAL = 0.1
"""The y step's sum of squared gradients before the first step (the authors' `scale_by_rss`)."""
RSS_EPS = 1e-7


@struct.dataclass
class NCCBuffer:
    """The buffer, its scores and the learned replay distribution."""

    levels: Any            # [K] levels
    scores: jax.Array      # float32[K]: the slots' last scores (learnability or regret)
    y: jax.Array           # float32[K]: the replay distribution (on the truncated simplex)
    rss: jax.Array         # float32[K]: running sum of the y step's squared gradients
    inserted: jax.Array    # int32: fresh levels that entered the buffer at the last cycle

    @property
    def size(self) -> int:
        return self.scores.shape[-1]


def initial_buffer(levels) -> NCCBuffer:
    """K generated levels with uniform scores and weights 1/K (the authors' `initialize`)."""
    k = jax.tree.leaves(levels)[0].shape[0]
    uniform = jnp.full((k,), 1.0 / k, jnp.float32)
    return NCCBuffer(levels=levels, scores=uniform, y=uniform, rss=jnp.full((k,), RSS_INITIAL, jnp.float32),
                     inserted=jnp.zeros((), jnp.int32))


def project_truncated_simplex(x, trunc: float):
    """The point of `{y : sum y = 1, trunc <= y_i <= 1}` nearest to `x` (1-D; needs K trunc <= 1).

    `f(lam) = sum_i clip(x_i + lam, trunc, 1)` is nondecreasing and piecewise linear with its
    breakpoints at `trunc - x_i` (coordinate i starts to move) and `1 - x_i` (it stops). Walking
    the sorted breakpoints, the slope is the number of moving coordinates; `lam` solves
    `f(lam) = 1` on the first segment that reaches 1."""
    x = jnp.asarray(x, jnp.float32)
    k = x.shape[-1]
    points = jnp.concatenate([trunc - x, 1.0 - x])
    order = jnp.argsort(points)
    points = points[order]
    slope = jnp.cumsum(jnp.where(order < k, 1.0, -1.0))[:-1]   # moving coordinates after each point
    totals = k * trunc + jnp.cumsum(slope * jnp.diff(points))   # f at points[1:]
    j = jnp.searchsorted(totals, 1.0)                            # first segment ending at f >= 1
    j = jnp.minimum(j, totals.shape[0] - 1)
    lam = points[j + 1] - (totals[j] - 1.0) / jnp.maximum(slope[j], 1.0)
    return jnp.clip(x + lam, trunc, 1.0)


def objective_gradient(y, scores, reg: float):
    """Gradient of `y . s - reg sum_i y_i log y_i` in y."""
    return scores - reg * (jnp.log(y) + 1.0)


def adversary_step(y, rss, scores, lr: float, reg: float, trunc: float, ascent: bool = False):
    """`(y', rss')`: one step of the authors' y update (module docstring); `ascent` flips its sign."""
    g = objective_gradient(y, scores, reg)
    rss = rss + g * g
    scaled = g * jnp.where(rss > 0, jnp.power(rss + RSS_EPS, -0.4), 0.0)
    step = lr * scaled if ascent else -lr * scaled
    return project_truncated_simplex(y + step, trunc), rss


def insert_sorted(buffer_levels, buffer_scores, levels, scores):
    """`(levels, scores, inserted)`: the fresh `levels` offered to the buffer best first, each
    taking the first lowest-score slot when its score is strictly higher (module docstring)."""
    order = jnp.flip(jnp.argsort(scores))
    levels = jax.tree.map(lambda x: x[order], levels)
    scores = scores[order]

    def offer(carry, new):
        held, held_scores, inserted = carry
        level, score = new
        slot = jnp.argmin(held_scores)
        take = held_scores[slot] < score
        held = jax.tree.map(lambda h, v: h.at[slot].set(jnp.where(take, v, h[slot])), held, level)
        held_scores = held_scores.at[slot].set(jnp.where(take, score, held_scores[slot]))
        return (held, held_scores, inserted + take), None

    (held, held_scores, inserted), _ = jax.lax.scan(offer, (buffer_levels, buffer_scores,
                                                            jnp.zeros((), jnp.int32)), (levels, scores))
    return held, held_scores, inserted


def attempt_learnability(solved):
    """`p (1 - p)` per level, p the fraction of its attempts (`solved: bool[A, K]`, solved at least
    once within the attempt's steps) that succeeded (the authors' `learnability_fn`)."""
    p = jnp.mean(solved.astype(jnp.float32), axis=0)
    return p * (1.0 - p)


def attempt_regret(first_returns, optimal_returns):
    """Oracle regret per level: its optimal return minus the mean over attempts of each attempt's
    first episode's return (`first_returns: float32[A, K]`)."""
    return optimal_returns - jnp.mean(first_returns, axis=0)


def adversary_stats(buffer: NCCBuffer) -> dict:
    """The buffer's and the distribution's statistics for the logs (a chunk reports the latest)."""
    y = buffer.y
    return {
        "buffer/size": jnp.asarray(buffer.size, jnp.float32),
        "buffer/mean_score": buffer.scores.mean(),
        "buffer/weighted_score": jnp.sum(y * buffer.scores),
        "buffer/inserted": buffer.inserted.astype(jnp.float32),
        "adversary/entropy": -jnp.sum(y * jnp.log(y)),
        "adversary/max_weight": y.max(),
        "adversary/effective_levels": 1.0 / jnp.sum(y * y),
    }
