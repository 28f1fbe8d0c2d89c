"""Robust PLR (Jiang et al., 2021, "Replay-guided adversarial environment design").

New-level cycles only score their levels and offer them to the buffer, without a gradient;
the step loops over them (`lax.while_loop`) until the replay decision says replay, and that
replay cycle is the one that trains. So the agent learns only from curated levels, the
property the paper's robustness argument needs. `search_then_replay` is shared with ACCEL,
which continues the same step with a mutation cycle.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.rollout import Rollout, ppo_batch


class ReplayCycle(NamedTuple):
    """Where a robust step stands after its replay cycle."""

    key: jax.Array
    buffer: Any
    training_set: Any
    train_state: Any
    idx: jax.Array           # buffer slots of the replayed levels
    levels: Any              # the replayed levels
    rollout: Rollout         # the replay rollout (trained on)
    metrics: dict
    cycles: jax.Array        # rollouts so far (search cycles + 1)
    replayed: jax.Array      # False when the search cap ended the search instead of a replay decision
    trainable: jax.Array     # False only when the buffer is still empty (no update then)
    mutation_keys: tuple     # two keys for the mutation cycle that ACCEL adds


class RobustPLRRunner(PLRFamilyRunner):
    method = "robust_plr"
    trains_only_on_replays = True

    def search_then_replay(self, state: PLRState) -> ReplayCycle:
        """Gradient-free new-level cycles until a replay decision, then the replay cycle, which trains
        (also after `max_search_rollouts` new cycles, from whatever the buffer holds; with nothing
        in it, no update)."""
        params = state.train_state.params
        n = self.n
        key, buffer, training_set, searched, replayed, metrics = self.search(
            state.key, params, state.buffer, state.training_set, n, self.decide_replay)
        metrics = dict(metrics)
        trainable = self.shard.all(buffer.filled.any())
        key, k_sample, k_roll, k_upd, k_mut, k_mroll = jax.random.split(key, 6)
        buffer, idx, levels = self._sample(k_sample, buffer, n)
        rollout = self.rollout(k_roll, params, levels)
        batch = ppo_batch(rollout, self.ppo.gamma, self.ppo.gae_lambda)
        train_state, ppo_metrics = self._train(k_upd, state.train_state, batch, trainable)
        metrics.update(ppo_metrics)
        scores, max_returns, valid = self.score(rollout, batch.advantages, buffer.max_returns[idx])
        buffer = self._update_scores(buffer, idx, scores, max_returns, valid)
        metrics.update(self.group_metrics("replay", levels, rollout, scores, valid))
        return ReplayCycle(key, buffer, training_set, train_state, idx, levels, rollout, metrics, searched + 1,
                           replayed, trainable, (k_mut, k_mroll))

    def finish_robust(self, state: PLRState, c: ReplayCycle, buffer, metrics: dict, cycles):
        metrics["env_steps"] = cycles * (self.num_envs * self.num_steps)
        metrics["search_capped"] = (~c.replayed).astype(jnp.float32)
        return self._finish(state, c.train_state, buffer, c.training_set, c.key, metrics, c.rollout, cycles, 1,
                            c.trainable)

    def step(self, state: PLRState):
        c = self.search_then_replay(state)
        return self.finish_robust(state, c, c.buffer, c.metrics, c.cycles)
