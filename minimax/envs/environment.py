"""The environment API: gymnax-style pure functions, with levels as first-class values.

An `Environment` is a bundle of pure functions of explicit state. Static parameters
(grid size, step budget, observation options) are hashable Python values carried in a
params object with no array leaves, so they pass through `jit` and `vmap` untouched;
everything that varies per instance lives in the state. Batching is `jax.vmap`.

Two auto-reset behaviours turn single episodes into an endless stream:
- `ReplayAutoReset` resets to the *same* level when an episode ends (PLR replay,
  evaluation). It is a per-env wrapper: vmap it like the base env.
- `GenerateAutoReset` resets to a *fresh* level from a generator (domain
  randomisation). It works on a whole batch so that levels are generated only as
  episodes end, not on every step of every env (see its docstring).

On the step where an episode ends, both return the first observation of the next
episode, with the reward, `done` and `info` of the transition that ended it.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from minimax.parallel import NO_SHARD, Shard


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
class Box:
    """Arrays of a fixed shape and dtype with elementwise bounds [low, high]."""

    low: float = struct.field(pytree_node=False)
    high: float = struct.field(pytree_node=False)
    shape: tuple[int, ...] = struct.field(pytree_node=False)
    dtype: Any = struct.field(pytree_node=False, default=jnp.float32)

    def sample(self, key: jax.Array) -> jax.Array:
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, self.low, self.high + 1).astype(self.dtype)
        return jax.random.uniform(key, self.shape, self.dtype, self.low, self.high)

    def contains(self, x) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != tuple(self.shape):
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high))


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
        """One transition without the observation: `(state, reward, done, info)`."""
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


def tree_select(pred: jax.Array, on_true, on_false):
    """`where(pred, a, b)` over matching pytrees; `pred` broadcasts over trailing axes."""

    def select(a, b):
        p = jnp.reshape(pred, pred.shape + (1,) * (a.ndim - pred.ndim))
        return jnp.where(p, a, b)

    return jax.tree.map(select, on_true, on_false)


# ---------------------------------------------------------------------- auto-reset


class Wrapper:
    """An environment wrapped in extra behaviour; parameters and spaces pass through."""

    def __init__(self, env: Environment):
        self.env = env

    def default_params(self, **overrides):
        return self.env.default_params(**overrides)

    def observation_space(self, params):
        return self.env.observation_space(params)

    def action_space(self, params):
        return self.env.action_space(params)


class ReplayAutoReset(Wrapper):
    """On done, reset to the same level. Per env; vmap for batches.

    Used by PLR replay and evaluation, where the level of an env is fixed for the
    whole rollout. The state is the env's own: it already carries its level.
    """

    def reset_to_level(self, key, level, params):
        return self.env.reset_to_level(key, level, params)

    def step(self, key, state, action, params):
        state, reward, done, info = self.env.step_env(key, state, action, params)
        state = tree_select(done, self.env.restart_state(state, params), state)
        return self.env.get_obs(state, params), state, reward, done, info


@struct.dataclass
class GenerateState:
    """Batched env states plus a pool of episode starts on pre-generated levels.

    `pool[pool_used:]` are fresh initial states not yet handed to any env.
    """

    env_state: Any
    pool: Any
    pool_used: jax.Array
    pool_key: jax.Array


class GenerateAutoReset(Wrapper):
    """On done, reset to a fresh level from `generator(key) -> level`. Works on a batch.

    Why batched: a per-env wrapper under `vmap` would have to generate a level on
    every step of every env and then throw most away (`lax.cond` becomes a select
    under `vmap`). Instead a pool of `pool_size` pre-generated levels is kept for
    the batch; envs whose episode ends take the next unused levels, and the pool
    is regenerated in one batched call (a `lax.while_loop` that runs zero times
    on most steps) only when it cannot cover the envs that just finished. Each
    level is an independent draw and is used at most once, so every episode still
    starts on a fresh level from the generator's distribution; generation cost is
    paid per episode, not per step. Under an outer `vmap` (seeds) the loop runs
    when any member needs a refill, which costs extra generation but stays exact.

    `reset(key, params) -> (obs[N], state)`, `step(key, state, actions[N], params)`.

    Sharded (`shard`, inside `jax.shard_map`): `num_envs` is this device's envs; the pool is
    the global batch's, replicated on every device, and a device's finished envs take the
    slots after those of the devices before it, so every env gets the level it would get
    on one device.
    """

    def __init__(self, env: Environment, generator: Callable, num_envs: int,
                 pool_size: int | None = None, shard: Shard = NO_SHARD):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        pool_size = int(num_envs * shard.size if pool_size is None else pool_size)
        if pool_size < num_envs:
            raise ValueError(
                f"pool_size ({pool_size}) must be >= num_envs ({num_envs}): one step can end every episode")
        super().__init__(env)
        self.generator = generator
        self.num_envs = int(num_envs)
        self.pool_size = pool_size
        self.shard = shard

    def _generate(self, key, n):
        return jax.vmap(self.generator)(jax.random.split(key, n))

    def _generate_starts(self, key, n, params):
        """Initial states of `n` fresh levels (derived state is built once per level)."""
        return jax.vmap(self.env.init_state, in_axes=(0, None))(self._generate(key, n), params)

    def reset(self, key, params):
        key_levels, key_pool = jax.random.split(key)
        # This device's slice of the global batch's levels (keys of the global split).
        levels = jax.vmap(self.generator)(self.shard.env_keys(key_levels, self.num_envs))
        return self.reset_to_levels(key_pool, levels, params)

    def reset_to_levels(self, key, levels, params):
        """Start every env on the given batch of levels; later episodes are generated."""
        key_pool, key_next = jax.random.split(key)
        env_state = jax.vmap(self.env.init_state, in_axes=(0, None))(levels, params)
        pool = self._generate_starts(key_pool, self.pool_size, params)
        state = GenerateState(env_state, pool, jnp.zeros((), jnp.int32), key_next)
        return jax.vmap(self.env.get_obs, in_axes=(0, None))(env_state, params), state

    def step(self, key, state: GenerateState, actions, params):
        keys = self.shard.env_keys(key, self.num_envs)
        env_state, reward, done, info = jax.vmap(self.env.step_env, in_axes=(0, 0, 0, None))(
            keys, state.env_state, actions, params)
        n_local = jnp.sum(done, dtype=jnp.int32)
        n_done = self.shard.sum(n_local)  # finished this step, over every device

        def needs_refill(carry):
            _, used, _ = carry
            return self.pool_size - used < n_done

        def refill(carry):
            _, _, pool_key = carry
            pool_key, gen_key = jax.random.split(pool_key)
            return self._generate_starts(gen_key, self.pool_size, params), jnp.zeros((), jnp.int32), pool_key

        pool, used, pool_key = jax.lax.while_loop(
            needs_refill, refill, (state.pool, state.pool_used, state.pool_key))

        # The k-th env to finish this step takes pool[used + k].
        first = used + self.shard.offset(n_local)
        slot = jnp.clip(first + jnp.cumsum(done, dtype=jnp.int32) - 1, 0, self.pool_size - 1)
        fresh = jax.tree.map(lambda x: x[slot], pool)
        env_state = tree_select(done, fresh, env_state)
        obs = jax.vmap(self.env.get_obs, in_axes=(0, None))(env_state, params)
        state = GenerateState(env_state, pool, used + n_done, pool_key)
        return obs, state, reward, done, info
