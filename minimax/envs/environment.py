"""The environment API: gymnax-style pure functions, with levels as first-class values.

An `Environment` is a bundle of pure functions of explicit state. Static parameters
(grid size, step budget, observation options) are hashable Python values carried in a
params object with no array leaves, so they pass through `jit` and `vmap` untouched;
everything that varies per instance lives in the state. Batching is `jax.vmap`.
The auto-reset wrappers that turn episodes into an endless stream are in
`minimax.envs.wrappers`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct



# --------------------------------------------------------------------------- spaces


@struct.dataclass
class Discrete:
    """Integers {0, ..., n-1}."""

    n: int = struct.field(pytree_node=False)
    dtype: Any = struct.field(pytree_node=False, default=jnp.int32)

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, x) -> jax.Array:
        x = jnp.asarray(x)
        return jnp.logical_and(x >= 0, x < self.n) & (x.shape == ())


@struct.dataclass
class MultiDiscrete:
    """Integer vectors: coordinate d in {0, ..., nvec[d] - 1} (Kinetix: 3 options per motor, 2 per
    thruster)."""

    nvec: tuple[int, ...] = struct.field(pytree_node=False)
    dtype: Any = struct.field(pytree_node=False, default=jnp.int32)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.nvec),)

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, jnp.asarray(self.nvec), dtype=self.dtype)

    def contains(self, x) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all((x >= 0) & (x < jnp.asarray(self.nvec)))


@struct.dataclass
class Box:
    """Arrays of a fixed shape and dtype with elementwise bounds [low, high]: scalars, or tuples
    of one bound per coordinate of a 1-D space (JaxNav's speed and turn rate)."""

    low: float | tuple[float, ...] = struct.field(pytree_node=False)
    high: float | tuple[float, ...] = struct.field(pytree_node=False)
    shape: tuple[int, ...] = struct.field(pytree_node=False)
    dtype: Any = struct.field(pytree_node=False, default=jnp.float32)

    def sample(self, key: jax.Array) -> jax.Array:
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, jnp.asarray(self.low), jnp.asarray(self.high) + 1
                                      ).astype(self.dtype)
        return jax.random.uniform(key, self.shape, self.dtype, jnp.asarray(self.low), jnp.asarray(self.high))

    def contains(self, x) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != tuple(self.shape):
            return jnp.asarray(False)
        return jnp.all((x >= jnp.asarray(self.low)) & (x <= jnp.asarray(self.high)))


@struct.dataclass
class Dict:
    """A dictionary of named spaces (the observation of AMaze is one)."""

    spaces: dict = struct.field(pytree_node=False)

    def sample(self, key: jax.Array) -> dict:
        keys = jax.random.split(key, len(self.spaces))
        return {name: space.sample(k) for (name, space), k in zip(self.spaces.items(), keys)}

    def contains(self, x) -> jax.Array:
        if set(x) != set(self.spaces):
            return jnp.asarray(False)
        return jnp.all(jnp.stack([jnp.asarray(s.contains(x[n])) for n, s in self.spaces.items()]))


# --------------------------------------------------------------------- environment


class Environment:
    """Base class of environments whose levels are values.

    Subclasses implement `init_state`, `step_env` and `get_obs` (the split lets the
    auto-reset wrappers compute one observation per step instead of two);
    `reset_to_level` and `step` are the public API built from them.
    """

    def default_params(self, **overrides):
        raise NotImplementedError

    def init_state(self, level, params):
        """The state at the start of an episode on `level` (no observation)."""
        raise NotImplementedError

    def level_of(self, state):
        """The level the episode in `state` started from (states carry their level)."""
        raise NotImplementedError

    def restart_state(self, state, params):
        """The start of a new episode on the level of `state`. Environments override it to
        reuse what does not change between episodes of one level."""
        return self.init_state(self.level_of(state), params)

    def step_env(self, key, state, action, params):
        """One transition without the observation: `(state, reward, done, info)`.

        `info` holds bool scalars `solved`, `terminated` and `truncated`, and optionally
        `episode_stats`: a dict of float scalars that describe the whole episode where `done`
        (Craftax: which achievements it unlocked). Training logs report each as its mean over the
        episodes that ended (`rollout.episode_metrics`), so an environment adds a statistic to
        the logs here, with no change to any runner."""
        raise NotImplementedError

    def get_obs(self, state, params):
        raise NotImplementedError

    def observation_space(self, params):
        raise NotImplementedError

    def action_space(self, params):
        raise NotImplementedError

    def reset_to_level(self, key, level, params):
        """Start an episode on `level`: `(obs, state)`."""
        del key  # reset is deterministic given the level; the key keeps the gymnax signature
        state = self.init_state(level, params)
        return self.get_obs(state, params), state

    def step(self, key, state, action, params):
        """`(obs, state, reward, done, info)`; no auto-reset (see the wrappers)."""
        state, reward, done, info = self.step_env(key, state, action, params)
        return self.get_obs(state, params), state, reward, done, info
