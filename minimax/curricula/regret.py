"""What a learned teacher is paid: regret estimates from the students' episodes on its levels.

The teacher of PAIRED (Dennis et al., 2020) and its relatives gets one reward per designed
level, at the end of its design episode, computed from the episodes the students played on
that level during one rollout. As in the minimax release (`util/rl/ued_scores.py`), each
student's episodes on a level are summarised by their mean return and their best return,
over the episodes that *completed* in the rollout (an episode cut by the rollout's end does
not count; with none completed both are 0):

- `relative_regret` (PAIRED, 2 students: protagonist 0, antagonist 1):
  `max(0, best antagonist return - mean protagonist return)`;
- `mean_relative_regret`: `max(0, mean antagonist return - mean protagonist return)`;
- `population_regret` (population PAIRED, N >= 2 students): the best return of any student
  minus the mean over students of their mean returns (not clipped, as the release);
- `negative_return` (the minimax adversary, one student): minus the students' mean return.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp


def episode_return_stats(episode_returns: jax.Array, dones: jax.Array):
    """`(mean, best)` return per env over the episodes that completed in the rollout (`[T, ...]`
    inputs: the finished episode's return where `dones`); 0 where none completed."""
    dones = dones.astype(bool)
    count = dones.sum(0)
    mean = jnp.where(dones, episode_returns, 0.0).sum(0) / jnp.maximum(count, 1)
    best = jnp.where(dones, jnp.maximum(episode_returns, 0.0), 0.0).max(0)  # the release's max starts at 0
    return mean.astype(jnp.float32), best.astype(jnp.float32)


def _pair(mean, name):
    if mean.shape[0] != 2:
        raise ValueError(f"{name} needs exactly 2 students (protagonist, antagonist), got {mean.shape[0]}")


def relative_regret(mean: jax.Array, best: jax.Array) -> jax.Array:
    """`[2, N]` student stats -> `[N]`: the antagonist's best return over the protagonist's mean, at least 0."""
    _pair(mean, "relative_regret")
    return jnp.maximum(best[1] - mean[0], 0.0)


def mean_relative_regret(mean: jax.Array, best: jax.Array) -> jax.Array:
    """`[2, N]` -> `[N]`: the antagonist's mean return over the protagonist's, at least 0."""
    _pair(mean, "mean_relative_regret")
    return jnp.maximum(mean[1] - mean[0], 0.0)


def population_regret(mean: jax.Array, best: jax.Array) -> jax.Array:
    """`[S, N]` -> `[N]`: the best return of any student minus the students' average mean return."""
    if mean.shape[0] < 2:
        raise ValueError(f"population_regret needs a population of >= 2 students, got {mean.shape[0]}")
    return best.max(0) - mean.mean(0)


def negative_return(mean: jax.Array, best: jax.Array) -> jax.Array:
    """`[S, N]` -> `[N]`: minus the students' mean return (the minimax adversary)."""
    del best
    return -mean.mean(0)


TEACHER_SCORES: dict[str, Callable] = {
    "relative_regret": relative_regret,
    "mean_relative_regret": mean_relative_regret,
    "population_regret": population_regret,
    "negative_return": negative_return,
}
"""Teacher rewards by name: `score(mean [students, levels], best [students, levels]) -> [levels]`."""


def teacher_score(name: str, episode_returns: jax.Array, dones: jax.Array) -> jax.Array:
    """The teacher's reward per level from every student's rollout (`[students, T, levels]` inputs)."""
    if name not in TEACHER_SCORES:
        raise ValueError(f"unknown teacher score {name!r}; choose from {', '.join(TEACHER_SCORES)}")
    mean, best = jax.vmap(episode_return_stats)(episode_returns, dones)
    return TEACHER_SCORES[name](mean, best)
