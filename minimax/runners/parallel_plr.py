"""Parallel PLR (the minimax report's variant): new and replayed levels in one rollout.

Each step is one cycle of 2N envs (the minimax release's `tick`): N on new levels and N replaying
buffer levels; all are scored and offered to the buffer (new first, then the replays), and
only the replay half trains. Until the buffer is ready the replay half plays new levels too
and nothing trains (the release's robust setting); once it is ready every cycle replays (the
release forces p = 1, so `replay_prob` is unused). Parallel ACCEL (`parallel_accel.py`) adds
a third group through `level_groups`: the children of this cycle's replayed levels (new levels
before the buffer is ready). The pieces are `plr_parts.py`'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (buffer_ready, envs_part, finish, group_metrics, mark_stored, new_levels,
                                       play, replay_or_count, score_and_offer, train)
from minimax.core.methods import register_method
from minimax.runners.rollout import env_slice

GROUP_NAMES = ("new", "replay", "mutated")
"""What each group of a parallel cycle's envs plays once the buffer is ready (before it, all play new levels)."""


class ParallelPLRRunner(PLRFamilyRunner):
    method = "parallel_plr"
    groups = 2

    def level_groups(self, key, ready, buffer, new):
        """The levels of one cycle: `(buffer, idx, groups, group_mutations)`, `groups` = [new, replayed
        (slots `idx`)], N each, and each group's edit counts ([G * N]); before the buffer is `ready`, new
        levels (the rows of `new`, [G * N]) in every group and the clock advanced by N."""
        n = self.n
        k_sample, _ = jax.random.split(key)  # (the second key is parallel ACCEL's mutation key)
        buffer, idx, replayed = replay_or_count(self, k_sample, ready, buffer, n, self.new_part(new, 1))
        return buffer, idx, [self.new_part(new, 0), replayed], jnp.zeros((2 * n,), jnp.int32)

    def new_part(self, new, i: int):
        """Group `i`'s rows of the cycle's new levels."""
        return jax.tree.map(lambda x: x[i * self.n:(i + 1) * self.n], new)

    def step(self, state: PLRState):
        """One rollout over new | replay (| mutated) envs, whose replay part trains once the buffer is ready."""
        n, g, params = self.n, self.groups, state.train_state.params
        key, k_new, k_levels, k_roll, k_upd = jax.random.split(state.key, 5)
        ready = buffer_ready(self, state.buffer)
        seeds, new = new_levels(self, k_new, state.training_set, g * n)
        buffer, idx, groups, mutations = self.level_groups(k_levels, ready, state.buffer, new)
        levels = jax.tree.map(lambda *xs: jnp.concatenate(xs), *groups)
        is_replay = (jnp.arange(g * n) >= n) & (jnp.arange(g * n) < 2 * n) & ready
        played = play(self, k_roll, params, buffer, levels, jnp.where(is_replay, jnp.concatenate([idx] * g), -1))
        train_state, metrics = train(self, k_upd, state.train_state, env_slice(played.batch, n, 2 * n), ready)
        buffer, where, scored = score_and_offer(self, buffer, played, state.train_state, is_replay | ~played.repeat, mutations)
        # Seeds count as seen when their level is stored: the new group, and every group before the buffer is ready.
        is_new = (jnp.arange(g * n) < n) | ~ready
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(is_new, where, -1))

        group = lambda name, i, active: group_metrics(  # noqa: E731
            self, name, *envs_part(played, scored, i * n, (i + 1) * n), active)
        new_groups = [group("new", 0, True)] + [group("new", i, ~ready) for i in range(1, g)]
        metrics.update(jax.tree.map(lambda *xs: sum(xs), *new_groups))
        for i in range(1, g):
            metrics.update(group(GROUP_NAMES[i], i, ready))
        return finish(self, state, train_state, buffer, training_set, key, metrics, played.rollout, ready, ready,
                      self.envs_per_rollout * self.num_steps)


register_method(plr_method(ParallelPLRRunner, "parallel PLR: new and replayed levels in one rollout, the replays train",
                            coin_replay=False))
