"""SFL's learnable set: the levels of a refresh with the highest learnability p (1 - p).

Sampling For Learnability (Rutherford et al., 2024) keeps no scored buffer of played levels.
Every few updates it samples a large batch of random levels, estimates each one's success
rate p with the current policy, and keeps the `size` levels of highest learnability
p (1 - p) as the training set until the next refresh (the whole set is replaced). This
module holds that set and the selection; the runner (`runners/sfl.py`) plays the levels.

Selection follows the reference (`jnp.argsort(learnability)[-size:]` over every sampled
level, a stable ascending sort): among equal scores the later-sampled levels are kept. Batches
are merged one at a time (a running top-`size` kept in sampling order), which selects the same
levels as one sort over all of them while holding only `size + batch` levels in memory.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class LearnableSet:
    """The training set of one refresh, in sampling order, and what its refresh measured."""

    levels: Any               # [size] levels
    learnability: jax.Array   # float32[size]: p (1 - p) at the refresh
    success: jax.Array        # float32[size]: p, the success rate of the level's counted episodes
    sampled_learnable: jax.Array  # float32: fraction of the refresh's sampled levels with 0 < p < 1
    refresh_steps: jax.Array  # int32: steps the last refresh's rollouts ran (of the limit), summed over batches
    refreshes: jax.Array      # int32: refreshes done

    @property
    def size(self) -> int:
        return self.learnability.shape[-1]


def learnability(successes, episodes):
    """`(p (1 - p), p)` per level from its counted episodes (float32); a level with no completed
    episode scores 0 with p = 0 (the reference divides by zero and its sort ranks the NaN first;
    a refresh whose rollout covers an episode limit never has such a level)."""
    p = successes.astype(jnp.float32) / jnp.maximum(episodes, 1).astype(jnp.float32)
    p = jnp.where(episodes > 0, p, 0.0)
    return p * (1.0 - p), p


def empty_set(level, size: int) -> LearnableSet:
    """A set of `size` copies of `level` (the shape the state needs before the first refresh)."""
    levels = jax.tree.map(lambda x: jnp.broadcast_to(x, (size,) + jnp.shape(x)), level)
    zeros = jnp.zeros((size,), jnp.float32)
    return LearnableSet(levels=levels, learnability=zeros, success=zeros, sampled_learnable=jnp.zeros(()),
                        refresh_steps=jnp.zeros((), jnp.int32), refreshes=jnp.zeros((), jnp.int32))


def merge_top(kept: LearnableSet, levels, scores, success) -> LearnableSet:
    """The `kept.size` highest scores of `kept` followed by a new batch, ties to the later one,
    kept in sampling order (so merging batch after batch equals one stable sort over all)."""
    size = kept.size
    all_scores = jnp.concatenate([kept.learnability, scores])
    top = jnp.sort(jnp.argsort(all_scores, stable=True)[-size:])  # positions, in sampling order
    take = lambda a, b: jnp.concatenate([a, b])[top]  # noqa: E731
    return kept.replace(levels=jax.tree.map(take, kept.levels, levels), learnability=all_scores[top],
                        success=take(kept.success, success))


def draw(key, learnable: LearnableSet, n: int):
    """`n` levels drawn uniformly, with replacement, from the set (the reference's `randint`)."""
    idx = jax.random.randint(key, (n,), 0, learnable.size)
    return jax.tree.map(lambda x: x[idx], learnable.levels)


def set_stats(learnable: LearnableSet) -> dict:
    """The set's statistics for the logs (`buffer/*`: a chunk reports the latest)."""
    return {
        "buffer/size": jnp.asarray(learnable.size, jnp.float32),
        "buffer/learnable_levels": jnp.sum(learnable.learnability > 0).astype(jnp.float32),
        "buffer/mean_score": learnable.learnability.mean(),
        "buffer/mean_success": learnable.success.mean(),
        "buffer/sampled_learnable_fraction": learnable.sampled_learnable,
        "buffer/refresh_steps": learnable.refresh_steps.astype(jnp.float32),
        "buffer/refreshes": learnable.refreshes.astype(jnp.float32),
    }
