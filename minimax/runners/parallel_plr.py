"""Parallel PLR (the minimax report's variant): new and replayed levels in one rollout.

Each step is one cycle of 2N envs (the minimax release's `tick`): N on new levels and N replaying
buffer levels; all are scored and offered to the buffer (new first, then the replays), and
only the replay half trains. Until the buffer is ready the replay half plays new levels too
and nothing trains (the release's robust setting); once it is ready every cycle replays (the
release forces p = 1, so `replay_prob` is unused). Parallel ACCEL (`parallel_accel.py`) adds
a third group: the children of this cycle's replayed levels (new levels before the buffer is
ready).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.rollout import env_slice, ppo_batch, rollout_envs
from minimax.runners.plr_method import plr_method
from minimax.runners.registry import register_method


class ParallelPLRRunner(PLRFamilyRunner):
    method = "parallel_plr"
    groups = 2

    def parallel_levels(self, key, ready, buffer, new):
        """The levels of one cycle: `(buffer, idx, groups, child_mutations)`, `groups` = [new, replayed
        (slots `idx`), children of the replayed (parallel ACCEL)], N each; before the buffer is
        `ready`, new levels (the rows of `new`, [G * N]) in every group and the clock advanced by N."""
        n = self.n
        k_sample, k_mut = jax.random.split(key)
        part = lambda i: jax.tree.map(lambda x: x[i * n:(i + 1) * n], new)  # noqa: E731
        buffer, idx, replayed = self.replay_or_count(k_sample, ready, buffer, n, part(1))
        groups = [part(0), replayed]
        child_mutations = jnp.zeros((n,), jnp.int32)
        if self.mutates:
            parents = buffer.mutations[jnp.maximum(idx, 0)]
            children, mutations = self.mutate(k_mut, replayed, buffer.scores[jnp.maximum(idx, 0)], parents)
            groups.append(jax.tree.map(lambda c, f: jnp.where(ready, c, f), children, part(2)))
            child_mutations = jnp.where(ready, mutations, 0)
        return buffer, idx, groups, child_mutations

    def step(self, state: PLRState):
        """One rollout over new | replay (| mutated) envs, whose replay part trains once the buffer is ready."""
        n, g = self.n, self.groups
        params = state.train_state.params
        key, k_new, k_levels, k_roll, k_upd = jax.random.split(state.key, 5)
        ready = self.buffer_ready(state.buffer)
        seeds, new = self.new_levels(k_new, state.training_set, g * n)
        buffer, idx, groups, child_mutations = self.parallel_levels(k_levels, ready, state.buffer, new)
        levels = jax.tree.map(lambda *xs: jnp.concatenate(xs), *groups)
        is_replay = (jnp.arange(g * n) >= n) & (jnp.arange(g * n) < 2 * n) & ready
        found, repeat, first = self._locate(buffer, levels)
        slots = jnp.where(is_replay, jnp.concatenate([idx] * g), found)
        rollout = self.rollout(k_roll, params, levels)
        full = ppo_batch(rollout, self.ppo)
        train_state, metrics = self._train(k_upd, state.train_state, env_slice(full, n, 2 * n), ready)
        optimal = self.optimal_returns(levels)
        scores, best, valid = self.score(rollout, full.advantages, self.prior_max(buffer, slots), optimal,
                                        params)
        mutations = jnp.concatenate([jnp.zeros((2 * n,), jnp.int32)] + [child_mutations] * (g - 2))
        buffer, where = self._offer(buffer, levels, slots, scores, best, valid & (is_replay | ~repeat), mutations,
                                    first)
        # Seeds count as seen when their level is stored: the new group, and every group before the buffer is ready.
        is_new = (jnp.arange(g * n) < n) | ~ready
        training_set = self.mark_stored(state.training_set, seeds, jnp.where(is_new, where, -1))

        played = [rollout_envs(rollout, i * n, (i + 1) * n) for i in range(g)]
        part = lambda x, i: x[i * n:(i + 1) * n]  # noqa: E731
        group = lambda name, i, active: self.group_metrics(  # noqa: E731
            name, groups[i], played[i], part(scores, i), part(valid, i), active,
            None if optimal is None else part(optimal, i))
        new_groups = [group("new", 0, True)] + [group("new", i, ~ready) for i in range(1, g)]
        metrics.update(jax.tree.map(lambda *xs: sum(xs), *new_groups))
        metrics.update(group("replay", 1, ready))
        if self.mutates:
            metrics.update(group("mutated", 2, ready))
        return self._finish(state, train_state, buffer, training_set, key, metrics, rollout, ready, ready,
                            self.envs_per_rollout * self.num_steps)


register_method(plr_method(ParallelPLRRunner, "parallel PLR: new and replayed levels in one rollout, the replays train",
                            coin_replay=False))
