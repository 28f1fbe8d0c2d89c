"""ACCEL (Parker-Holder et al., 2022): robust PLR whose replayed levels are edited into new ones.

A step is robust PLR's cycle (`robust_plr.py`) with one more part: a replay cycle, after its gradient
update, mutates the replayed levels (`mutation_criterion`: every replayed level, or the q easiest /
hardest tiled over the envs) and plays the children with the updated policy, without a gradient;
they are scored and offered to the buffer. All of it is one cycle, as in the minimax release.
Levels grow in difficulty from the generator's (empty rooms, in the report's configuration) by
accumulated edits. The pieces are `plr_parts.py`'s.
"""

from __future__ import annotations

import jax.numpy as jnp

from minimax.runners.branches import cond_or_zeros
from minimax.runners.plr_family import PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (CoinReplayRunner, cycle_keys, finish, group_metrics, mark_stored, new_levels,
                                       play, play_children, played_groups, replay_or_count, score_and_offer, train)
from minimax.core.methods import register_method


class ACCELRunner(CoinReplayRunner):
    method = "accel"
    trains_only_on_replays = True
    mutates = True

    def cycle(self, state: PLRState, replay):
        """One cycle with the replay decision given (a traced bool, or a Python bool that builds one side):
        replay, train, then mutate the replayed levels and play their children; or play new levels
        without a gradient. Score and offer everything played."""
        n, params = self.n, state.train_state.params
        key, _, k_new, k_sample, k_roll, k_upd, k_mutation = cycle_keys(state.key)
        seeds, new = new_levels(self, k_new, state.training_set, n)
        buffer, idx, levels = replay_or_count(self, k_sample, replay, state.buffer, n, new,
                                              self.replay_distribution(state))
        played = play(self, k_roll, params, buffer, levels, replayed=idx)
        train_state, metrics = train(self, k_upd, state.train_state, played.batch, replay)
        buffer, where, scored = score_and_offer(self, buffer, played, state.train_state, replay | ~played.repeat)
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(replay, -1, where))
        metrics.update(played_groups(self, replay, played, scored))

        def mutate_and_play(buffer):
            """The children of the replayed levels (parents scored by this cycle, else by their stored score),
            played with the updated policy, scored and offered; no gradient."""
            kids, mutations = play_children(self, k_mutation, buffer, levels, idx, scored, train_state.params)
            buffer, _, kid_scores = score_and_offer(self, buffer, kids, train_state, ~kids.repeat, mutations)
            return buffer, group_metrics(self, "mutated", kids, kid_scores)

        buffer, mutated = cond_or_zeros(replay, mutate_and_play, buffer)
        metrics.update(mutated)
        env_steps = self.num_envs * self.num_steps * (1 + jnp.asarray(replay, jnp.int32))
        return finish(self, state, train_state, buffer, training_set, key, metrics, played.rollout, replay, replay,
                      env_steps)


register_method(plr_method(ACCELRunner, "ACCEL: robust PLR whose replayed levels are mutated into new ones"))
