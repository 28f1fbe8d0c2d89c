"""Parallel PLR (the minimax report's variant): new and replayed levels in one rollout.

Each step plays one rollout of 2N envs, N on new levels and N replaying buffer levels;
all are scored and offered to the buffer, and only the replay half trains. Until the buffer
is ready the step loops over gradient-free rollouts of 2N new levels (the reference skips
the gradient then); once it is ready every step replays (the reference forces p = 1, so
`replay_prob` is unused). Parallel ACCEL (`parallel_accel.py`) adds a third group: the
children of this step's replayed levels.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.curricula.level_buffer import LevelBuffer, advance_clock
from minimax.curricula.training_set import TrainingSet
from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.rollout import env_slice, ppo_batch, rollout_envs


class ParallelPLRRunner(PLRFamilyRunner):
    method = "parallel_plr"
    groups = 2

    def parallel_levels(self, key, buffer: LevelBuffer, training_set: TrainingSet):
        """The levels of one parallel update: `(buffer, training_set, idx, groups, child_mutations)`,
        `groups` = [new, replayed (slots `idx`), children of the replayed (parallel ACCEL)], N each."""
        n, g = self.n, self.groups
        k_new, k_sample, k_mut = jax.random.split(key, 3)
        training_set, new = self.new_levels(k_new, training_set, n)
        # The new and mutated levels are handed out with the replays; counting them first
        # leaves the last-drawn replay level at staleness 0 after the step.
        buffer = advance_clock(buffer, self._played((g - 1) * n))
        buffer, idx, replayed = self._sample(k_sample, buffer, n)
        groups = [new, replayed]
        child_mutations = jnp.zeros((n,), jnp.int32)
        if self.mutates:
            children, child_mutations = self.mutate(k_mut, replayed, buffer.scores[idx], buffer.mutations[idx])
            groups.append(children)
        return buffer, training_set, idx, groups, child_mutations

    def step(self, state: PLRState):
        """Gradient-free rollouts of new levels until the buffer is ready, then one rollout over
        new | replay (| mutated) envs, whose replay part trains."""
        n, g = self.n, self.groups
        params = state.train_state.params
        ready = lambda key, buffer, training_set: self.buffer_ready(buffer)  # noqa: E731
        key, buffer, training_set, searched, is_ready, metrics = self.search(
            state.key, params, state.buffer, state.training_set, g * n, ready)
        trainable = self.shard.all(buffer.filled.any())

        key, k_levels, k_roll, k_upd = jax.random.split(key, 4)
        buffer, training_set, idx, groups, child_mutations = self.parallel_levels(k_levels, buffer, training_set)
        levels = jax.tree.map(lambda *xs: jnp.concatenate(xs), *groups)
        rollout = self.rollout(k_roll, params, levels)
        full = ppo_batch(rollout, self.ppo.gamma, self.ppo.gae_lambda)
        train_state, ppo_metrics = self._train(k_upd, state.train_state, env_slice(full, n, 2 * n), trainable)

        no_prior = jnp.full((n,), -jnp.inf)
        prior = jnp.concatenate([no_prior, buffer.max_returns[idx]] + [no_prior] * (g - 2))
        scores, max_returns, valid = self.score(rollout, full.advantages, prior)
        part = lambda x, i: x[i * n:(i + 1) * n]  # noqa: E731
        buffer = self._update_scores(buffer, idx, part(scores, 1), part(max_returns, 1), part(valid, 1))
        offered = valid & jnp.concatenate([jnp.ones((n,), bool), jnp.zeros((n,), bool)]
                                          + [jnp.full((n,), trainable)] * (g - 2))
        mutations = jnp.concatenate([jnp.zeros((2 * n,), jnp.int32)] + [child_mutations] * (g - 2))
        buffer = self._insert(buffer, levels, scores, max_returns, offered, mutations, played=0)

        played = [rollout_envs(rollout, i * n, (i + 1) * n) for i in range(g)]
        group = lambda name, i: self.group_metrics(  # noqa: E731
            name, groups[i], played[i], part(scores, i), part(valid, i))
        metrics = {**jax.tree.map(jnp.add, dict(metrics), group("new", 0)), **ppo_metrics, **group("replay", 1)}
        if self.mutates:
            metrics.update(group("mutated", 2))
        cycles = searched + 1
        metrics["env_steps"] = cycles * (self.envs_per_rollout * self.num_steps)
        metrics["search_capped"] = (~is_ready).astype(jnp.float32)
        return self._finish(state, train_state, buffer, training_set, key, metrics, played[1], cycles, 1, trainable)
