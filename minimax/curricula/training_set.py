"""A finite training set of levels, as in the PLR paper (Procgen's `num_levels`).

Level seed `i` names the level `generator(fold_in(key(LEVEL_SET_KEY), i))`, the same in
every run and for every method, so "train on 200 levels" means the same 200 levels; with a
`LevelSet` (the user's own levels, `--train-level-file`) seed `i` is its level `i`. New
levels are drawn uniformly from the seeds not yet seen; the chance to replay is either
fixed or the fraction of seeds seen so far (the paper's two replay schedules).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

LEVEL_SET_KEY = 0
REPLAY_SCHEDULES = ("fixed", "proportionate")


@struct.dataclass
class TrainingSet:
    seen: jax.Array  # bool[num_levels]

    @property
    def num_levels(self) -> int:
        return self.seen.shape[-1]


def init_training_set(num_levels: int) -> TrainingSet:
    if int(num_levels) < 1:
        raise ValueError(f"a training set needs at least one level, got {num_levels}")
    return TrainingSet(seen=jnp.zeros((int(num_levels),), bool))


@dataclasses.dataclass(frozen=True, eq=False)
class LevelSet:
    """A fixed list of levels used as a generator: `level_set(key)` is one of them, uniformly
    (what DR trains on), `level_set.level(i)` the i-th (a finite training set's seed `i`)."""

    levels: object  # a Level pytree with a leading axis of `size`

    @property
    def size(self) -> int:
        return int(jax.tree.leaves(self.levels)[0].shape[0])

    def level(self, i):
        return jax.tree.map(lambda x: x[i], self.levels)

    def __call__(self, key):
        return self.level(jax.random.randint(key, (), 0, self.size))


def level_from_seed(generator, seed):
    """The level a seed names (deterministic)."""
    if isinstance(generator, LevelSet):
        return generator.level(seed)
    return generator(jax.random.fold_in(jax.random.key(LEVEL_SET_KEY), seed))


def draw_new_seeds(key, training_set: TrainingSet, n: int, mark: bool = True):
    """`n` seeds, uniformly without replacement from the unseen ones; once fewer than `n`
    are unseen the rest are uniform over all seeds. Returns `(training_set, seeds int32[n])`
    with the drawn seeds marked seen (with `mark`; the PLR runners mark a seed seen only once
    its level is stored, see `mark_seen`)."""
    k_unseen, k_any = jax.random.split(key)
    size = training_set.num_levels
    # Gumbel top-k: unseen seeds beat seen ones, uniform among each group.
    noise = jax.random.uniform(k_unseen, (size,))
    _, order = jax.lax.top_k(jnp.where(training_set.seen, noise, noise + 2.0), min(n, size))
    if n > size:
        order = jnp.concatenate([order, jnp.zeros((n - size,), order.dtype)])
    available = (~training_set.seen).sum()
    fallback = jax.random.randint(k_any, (n,), 0, size)
    seeds = jnp.where(jnp.arange(n) < available, order, fallback).astype(jnp.int32)
    return (mark_seen(training_set, seeds) if mark else training_set), seeds


def mark_seen(training_set: TrainingSet, seeds, where=True) -> TrainingSet:
    """The training set with `seeds` (where `where`) marked seen."""
    hit = jnp.broadcast_to(jnp.asarray(where, bool), seeds.shape)
    return TrainingSet(seen=training_set.seen.at[jnp.where(hit, seeds, training_set.num_levels)].set(True, mode="drop"))


def seen_fraction(training_set: TrainingSet) -> jax.Array:
    return training_set.seen.mean()


def replay_probability(training_set: TrainingSet, schedule: str, replay_prob: float) -> jax.Array:
    """fixed: `replay_prob`, and 1 once every seed has been seen (nothing new is left);
    proportionate: the fraction of seeds seen."""
    if schedule == "fixed":
        return jnp.where(training_set.seen.all(), 1.0, replay_prob)
    if schedule == "proportionate":
        return seen_fraction(training_set)
    raise ValueError(f"unknown replay schedule {schedule!r}; choose from {', '.join(REPLAY_SCHEDULES)}")
