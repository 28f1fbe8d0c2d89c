"""A rollout's steps as flat feature vectors, for the curricula that model the student's experience:
CENIE's coverage mixture (`novelty.py`) and TRACED's transition model (`transitions.py`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.envs.environment import Discrete


def action_count(space) -> int | None:
    """The number of actions of a `Discrete` space (its actions are one-hot encoded), else None (a continuous or
    multi-discrete action is used as its own values)."""
    return int(space.n) if isinstance(space, Discrete) else None


def flat_observation(obs, scale: float = 1.0) -> jax.Array:
    """float32[T, N, F]: every observation leaf flattened and concatenated, times `scale`."""
    t, n = jax.tree.leaves(obs)[0].shape[:2]
    return jnp.concatenate([jnp.reshape(x, (t, n, -1)).astype(jnp.float32) for x in jax.tree.leaves(obs)],
                           axis=-1) * scale


def action_inputs(actions, num_actions: int | None) -> jax.Array:
    """float32[T, N, A]: one-hot discrete actions (`num_actions`), or the action's own values (None)."""
    t, n = actions.shape[:2]
    if num_actions is None:
        return jnp.reshape(actions, (t, n, -1)).astype(jnp.float32)
    return jax.nn.one_hot(actions, num_actions, dtype=jnp.float32)
