"""Domain randomisation: PPO on a stream of freshly generated levels.

Each `step` is one update: a rollout of T steps on N envs (an env that finishes an
episode starts the next one on a fresh generator level), GAE, and one PPO update.
Episodes continue across updates (the env stream is part of the runner state), so an
update boundary never cuts an episode or biases the data toward early steps; the last
observation's value bootstraps the advantages of episodes still running.

Runner contract (every runner follows it): `init(key) -> state` and
`step(state) -> (state, metrics)`, both pure, jittable and vmappable; `metrics` is a
flat dict of scalars named by `minimax.core.metrics`'s convention.

Data parallel: built with `shard` (see `minimax.core.parallel`), a runner is the per-device
program of a `jax.shard_map`: `num_envs` stays the global batch, each device steps
`num_envs / shard.size` envs, and metrics come out as global sums and means, the same on
every device.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ppo import PPOConfig, create_train_state, ppo_update
from minimax.envs.wrappers import GenerateAutoReset
from minimax.core.metrics import reduce_over_devices
from minimax.core.parallel import NO_SHARD, Shard
from minimax.runners.rollout import (EnvStream, collect_rollout, episode_metrics, ppo_batch, regret_metrics,
                                     start_stream)
from minimax.core.methods import Method, register_method


@dataclasses.dataclass(frozen=True)
class DRConfig:
    """Domain randomisation's own option (its `dr` group)."""

    dr_restart_each_update: bool = False
    """Start every env on a fresh level at each update, dropping the episodes in progress and keeping the
    recurrent carry, as the minimax release's DR does (for side-by-side comparisons; default: episodes continue)."""


@struct.dataclass
class DRState:
    train_state: TrainState
    stream: EnvStream
    key: jax.Array
    updates: jax.Array  # int32: PPO updates done


class DRRunner:
    state_type = DRState
    trains_every_cycle = True
    """Every step makes a gradient update (a unit of the update budget is one step, `budget.py`)."""

    def __init__(self, env, env_params, generator, model, ppo: PPOConfig, num_envs: int, num_steps: int,
                 shard: Shard = NO_SHARD, restart_each_update: bool = False, level_facts: Callable | None = None):
        self.env, self.env_params, self.model, self.ppo, self.shard = env, env_params, model, ppo, shard
        self.num_envs, self.num_steps = int(num_envs), int(num_steps)
        self.local_envs = self.num_envs // shard.size
        self.restart_each_update = bool(restart_each_update)
        optimum = None if level_facts is None else (lambda levels, params: level_facts(levels, params)[0])
        self.auto_reset = GenerateAutoReset(env, generator, self.local_envs, part=shard, optimum=optimum)

    @property
    def local_fields(self) -> tuple[str, ...]:
        """State fields that differ per device (a leading device axis in the global state)."""
        return ("stream",) if self.shard.sharded else ()

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.num_steps  # over every device

    def init_params(self, key, obs) -> Any:
        carry = self.model.initial_carry(self.local_envs)
        reset = jnp.ones((1, self.local_envs), bool)
        return self.model.init(key, carry, jax.tree.map(lambda x: x[None], obs), reset)

    def init(self, key) -> DRState:
        k_model, k_env, k_run = jax.random.split(key, 3)
        obs, env_state = self.auto_reset.reset(k_env, self.env_params)
        train_state = create_train_state(self.model.apply, self.init_params(k_model, obs), self.ppo)
        stream = start_stream(env_state, obs, self.model.initial_carry(self.local_envs))
        return DRState(train_state=train_state, stream=stream, key=k_run, updates=jnp.zeros((), jnp.int32))

    def restart(self, key, stream: EnvStream) -> EnvStream:
        """The minimax release's DR (`--dr-restart-each-update`, for side-by-side comparisons):
        every env starts a fresh level, the episodes in progress are dropped uncounted, and the
        recurrent carry is kept, not zeroed (the release starts each rollout with `done` False)."""
        obs, env_state = self.auto_reset.reset(key, self.env_params)
        return stream.replace(env_state=env_state, obs=obs, reset=jnp.zeros_like(stream.reset),
                              episode_return=jnp.zeros_like(stream.episode_return),
                              episode_length=jnp.zeros_like(stream.episode_length))

    def env_step(self, key, env_state, actions):
        return self.auto_reset.step(key, env_state, actions, self.env_params)

    def step(self, state: DRState):
        key, k_rollout, k_update = jax.random.split(state.key, 3)
        ts = state.train_state
        stream = self.restart(jax.random.fold_in(k_rollout, 1), state.stream) if self.restart_each_update \
            else state.stream
        rollout, stream = collect_rollout(k_rollout, ts.apply_fn, ts.params, self.env_step, stream,
                                          self.num_steps, self.shard, self.ppo.unroll)
        batch = ppo_batch(rollout, self.ppo)
        ts, metrics = ppo_update(k_update, ts, batch, self.ppo, self.shard)
        metrics.update(reduce_over_devices(self.episode_metrics(rollout), self.shard))
        metrics["env_steps"] = jnp.asarray(self.env_steps_per_update, jnp.int32)
        metrics["gradient_updates"] = jnp.ones((), jnp.int32)
        metrics["cycles"] = jnp.ones((), jnp.int32)
        state = DRState(train_state=ts, stream=stream, key=key, updates=state.updates + 1)
        return state, metrics


    @staticmethod
    def episode_metrics(rollout) -> dict:
        """The rollout's episodes; where the environment knows each level's optimum (`level_facts`),
        also `new/regret`, the true regret of the finished episodes (each on its own fresh level)."""
        out = episode_metrics(rollout)
        optimal = rollout.episode_stats.get("optimal_return")
        if optimal is not None:
            out.update(regret_metrics("new", optimal, rollout))
        return out


register_method(Method(
    "dr", summary="domain randomisation: a fresh level from the generator for every episode", runner=DRRunner,
    options={"dr": DRConfig}, trains_every_cycle=True, host="uniform",
    build=lambda parts: DRRunner(*parts.args, shard=parts.shard,
                                 restart_each_update=parts.cfg.dr.dr_restart_each_update,
                                 level_facts=parts.spec.level_facts)))
