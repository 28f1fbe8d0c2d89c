"""Teacher rollouts: a batch of level designs played by a learned teacher (PAIRED and relatives).

A design episode has exactly `num_steps` steps from a fresh reset, so one rollout of that
length is one design per env: `design_levels` plays it with the teacher's policy (sampled
actions, per-env keys from the global batch as every rollout here) and returns the rollout,
shaped like a student's so the same GAE and PPO code trains the teacher, together with the
designed levels. The teacher's reward comes afterwards: `with_final_reward` puts each level's
score (its regret) on the design's last step, as the release's `set_final_reward`; every
other step pays 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.core.parallel import NO_SHARD, Shard
from minimax.runners.rollout import Rollout, collect_rollout, start_stream


def design_levels(key, teacher, teacher_params, apply_fn, weights, initial_carry, n: int, shard: Shard = NO_SHARD,
                  unroll: int = 1):
    """`(rollout [num_steps, n], levels [n])`: `n` designs (this device's slice of the global batch);
    `unroll`: design steps per scan iteration (`--scan-unroll`)."""
    k_reset, k_roll = jax.random.split(key)
    obs, state = jax.vmap(teacher.reset, in_axes=(0, None))(shard.env_keys(k_reset, n), teacher_params)

    def env_step(key, state, actions):
        keys = shard.env_keys(key, n)
        return jax.vmap(teacher.step, in_axes=(0, 0, 0, None))(keys, state, actions, teacher_params)

    rollout, stream = collect_rollout(k_roll, apply_fn, weights, env_step, start_stream(state, obs, initial_carry),
                                      teacher_params.num_steps, shard, unroll)
    levels = jax.vmap(teacher.level, in_axes=(0, None))(stream.env_state, teacher_params)
    return rollout, levels


def with_final_reward(rollout: Rollout, reward: jax.Array) -> Rollout:
    """The design rollout with `reward [n]` paid on its last step (the episode's only reward)."""
    rewards = rollout.rewards.at[-1].set(reward.astype(rollout.rewards.dtype))
    return rollout.replace(rewards=rewards, episode_returns=jnp.where(rollout.dones, rewards, 0.0))
