"""PLR (Jiang et al., 2021): each cycle replays buffer levels or plays new ones, and trains.

One step is one cycle: with probability `replay_prob` (once the buffer is `min_fill_ratio`
full) the N envs replay levels sampled from the buffer, else they play N new levels. Either
way the agent trains on the rollout, the levels are scored, replayed levels get their new
scores and new levels are offered to the buffer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.agents.ppo import ppo_update
from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.rollout import ppo_batch


class PLRRunner(PLRFamilyRunner):
    method = "plr"

    def step(self, state: PLRState):
        """One cycle, replay or new, and a gradient update on it."""
        n = self.n
        key, k_dec, k_levels, k_roll, k_upd = jax.random.split(state.key, 5)
        replay = self.decide_replay(k_dec, state.buffer, state.training_set)
        buffer, training_set, idx, levels = self._sample_or_new(k_levels, replay, state.buffer, state.training_set)
        rollout = self.rollout(k_roll, state.train_state.params, levels)
        batch = ppo_batch(rollout, self.ppo.gamma, self.ppo.gae_lambda)
        train_state, metrics = ppo_update(k_upd, state.train_state, batch, self.ppo, self.shard)
        prior = jnp.where(replay, buffer.max_returns[idx], -jnp.inf)
        scores, max_returns, valid = self.score(rollout, batch.advantages, prior)
        buffer = self._update_scores(buffer, idx, scores, max_returns, valid & replay)
        # Replays were counted as they were drawn; new levels are counted here.
        buffer = self._insert(buffer, levels, scores, max_returns, valid & ~replay, played=jnp.where(replay, 0, n))
        metrics.update(self.group_metrics("new", levels, rollout, scores, valid, ~replay))
        metrics.update(self.group_metrics("replay", levels, rollout, scores, valid, replay))
        metrics["env_steps"] = jnp.asarray(self.num_envs * self.num_steps, jnp.int32)
        return self._finish(state, train_state, buffer, training_set, key, metrics, rollout, 1, replay)
