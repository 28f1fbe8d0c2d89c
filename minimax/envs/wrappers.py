"""Auto-reset wrappers: turn single episodes of an `Environment` into an endless stream.

- `ReplayAutoReset` resets to the *same* level when an episode ends (PLR replay,
  evaluation). It is a per-env wrapper: vmap it like the base env.
- `GenerateAutoReset` resets to a *fresh* level from a generator (domain
  randomisation). It works on a whole batch so that levels are generated only as
  episodes end, not on every step of every env (see its docstring).

On the step where an episode ends, both return the first observation of the next
episode, with the reward, `done` and `info` of the transition that ended it.

The wrappers know nothing of devices: a batch that is one slice of a larger, data-parallel
one is described by a `BatchPart` argument (any object with its four members;
`minimax.core.parallel.Shard` is one), so the environment layer imports nothing from above it.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import jax
import jax.numpy as jnp
from flax import struct

from minimax.envs.environment import Environment


class BatchPart(Protocol):
    """Where a batch of envs sits in the global batch it is one of `size` equal slices of."""

    size: int

    def env_keys(self, key, n_local: int):
        """This slice's `n_local` per-env keys of the global batch's split of `key`."""

    def sum(self, x):
        """`x` summed over every slice."""

    def offset(self, count):
        """`count` summed over the slices before this one."""


class WholeBatch:
    """The default `BatchPart`: the batch is the whole batch."""

    size = 1

    @staticmethod
    def env_keys(key, n_local: int):
        return jax.random.split(key, n_local)

    @staticmethod
    def sum(x):
        return x

    @staticmethod
    def offset(count):
        return jnp.zeros_like(count)


WHOLE_BATCH = WholeBatch()


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
        with jax.named_scope("env_step"):  # scopes name the ops for the profiler (benchmarks/gpu_profile.py)
            state, reward, done, info = self.env.step_env(key, state, action, params)
        with jax.named_scope("auto_reset"):
            state = tree_select(done, self.env.restart_state(state, params), state)
        with jax.named_scope("observation"):
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
    pool_optimal: Any = None   # float32[pool]: each pool level's optimal return (with `optimum`), else None
    optimal: Any = None        # float32[N]: the optimal return of each env's current level, likewise


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

    One slice of a data-parallel batch (`part`, e.g. a device's envs inside `jax.shard_map`):
    `num_envs` is this slice's envs; the pool is the global batch's, replicated on every
    slice, and a slice's finished envs take the pool slots after those of the slices before
    it, so every env gets the level it would get in one undivided batch.

    `optimum(levels, params) -> float32[n]` (optional; the environment's `level_facts`): each
    level's optimal return, computed once per generated level with the pool, so that every
    finished episode reports its level's optimum as `info["episode_stats"]["optimal_return"]`
    (the true regret of a DR episode is that minus its return).
    """

    def __init__(self, env: Environment, generator: Callable, num_envs: int,
                 pool_size: int | None = None, part: BatchPart = WHOLE_BATCH, optimum: Callable | None = None):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        pool_size = int(num_envs * part.size if pool_size is None else pool_size)
        if pool_size < num_envs:
            raise ValueError(
                f"pool_size ({pool_size}) must be >= num_envs ({num_envs}): one step can end every episode")
        super().__init__(env)
        self.generator = generator
        self.num_envs = int(num_envs)
        self.pool_size = pool_size
        self.part = part
        self.optimum = optimum

    def _generate(self, key, n):
        return jax.vmap(self.generator)(jax.random.split(key, n))

    def _generate_starts(self, key, n, params):
        """Initial states of `n` fresh levels (derived state is built once per level) and their
        optimal returns (None without `optimum`)."""
        levels = self._generate(key, n)
        return jax.vmap(self.env.init_state, in_axes=(0, None))(levels, params), self._optimal(levels, params)

    def _optimal(self, levels, params):
        return None if self.optimum is None else jnp.asarray(self.optimum(levels, params), jnp.float32)

    def reset(self, key, params):
        key_levels, key_pool = jax.random.split(key)
        # This device's slice of the global batch's levels (keys of the global split).
        levels = jax.vmap(self.generator)(self.part.env_keys(key_levels, self.num_envs))
        return self.reset_to_levels(key_pool, levels, params)

    def reset_to_levels(self, key, levels, params):
        """Start every env on the given batch of levels; later episodes are generated."""
        key_pool, key_next = jax.random.split(key)
        env_state = jax.vmap(self.env.init_state, in_axes=(0, None))(levels, params)
        pool, pool_optimal = self._generate_starts(key_pool, self.pool_size, params)
        state = GenerateState(env_state, pool, jnp.zeros((), jnp.int32), key_next, pool_optimal,
                              self._optimal(levels, params))
        return jax.vmap(self.env.get_obs, in_axes=(0, None))(env_state, params), state

    def step(self, key, state: GenerateState, actions, params):
        with jax.named_scope("env_step"):  # scopes name the ops for the profiler (benchmarks/gpu_profile.py)
            keys = self.part.env_keys(key, self.num_envs)
            env_state, reward, done, info = jax.vmap(self.env.step_env, in_axes=(0, 0, 0, None))(
                keys, state.env_state, actions, params)
        with jax.named_scope("auto_reset"):
            return self._reset_done(state, env_state, reward, done, info, params)

    def _reset_done(self, state: GenerateState, env_state, reward, done, info, params):
        """The finished envs take fresh starts from the pool (refilled first where it runs short)."""
        n_local = jnp.sum(done, dtype=jnp.int32)
        n_done = self.part.sum(n_local)  # finished this step, over every device

        def needs_refill(carry):
            _, _, used, _ = carry
            return self.pool_size - used < n_done

        @jax.named_scope("generate")
        def refill(carry):
            pool_key = carry[-1]
            pool_key, gen_key = jax.random.split(pool_key)
            pool, pool_optimal = self._generate_starts(gen_key, self.pool_size, params)
            return pool, pool_optimal, jnp.zeros((), jnp.int32), pool_key

        pool, pool_optimal, used, pool_key = jax.lax.while_loop(
            needs_refill, refill, (state.pool, state.pool_optimal, state.pool_used, state.pool_key))

        # The k-th env to finish this step takes pool[used + k].
        first = used + self.part.offset(n_local)
        slot = jnp.clip(first + jnp.cumsum(done, dtype=jnp.int32) - 1, 0, self.pool_size - 1)
        fresh = jax.tree.map(lambda x: x[slot], pool)
        env_state = tree_select(done, fresh, env_state)
        with jax.named_scope("observation"):
            obs = jax.vmap(self.env.get_obs, in_axes=(0, None))(env_state, params)
        optimal = state.optimal
        if optimal is not None:  # the finished episodes' levels' optimum, then the fresh levels'
            info = {**info, "episode_stats": {**info.get("episode_stats", {}), "optimal_return": optimal}}
            optimal = jnp.where(done, pool_optimal[slot], optimal)
        state = GenerateState(env_state, pool, used + n_done, pool_key, pool_optimal, optimal)
        return obs, state, reward, done, info
