"""PLR (Jiang et al., 2021): each cycle replays buffer levels or plays new ones, and trains on both.

One step is one cycle (the minimax release's `tick`): with probability `replay_prob` (once the
buffer is `min_fill_ratio` full) the N envs replay levels sampled from the buffer, else they
play N new levels. The levels are scored and offered to the buffer (replayed and already
stored levels update their entries, newcomers compete for a slot). Plain PLR trains on every
cycle; robust PLR (`robust_plr.py`) only on replays, and ACCEL (`accel.py`) follows each
replay with a mutation rollout. The pieces are `plr_parts.py`'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (coin_replay, finish, mark_stored, new_levels, play, played_groups,
                                       replay_or_count, score_and_offer, train)
from minimax.runners.registry import register_method


class PLRRunner(PLRFamilyRunner):
    method = "plr"
    trains_every_cycle = True

    def decide_replay(self, key, buffer, training_set):
        """The replay coin (`plr_parts.coin_replay`); a variant's replay rule overrides this."""
        return coin_replay(self, key, buffer, training_set)

    def step(self, state: PLRState):
        """One cycle: replay or new levels as the coin falls; play them, train on them, score and offer them."""
        n, params = self.n, state.train_state.params
        key, k_dec, k_new, k_sample, k_roll, k_upd, _ = jax.random.split(state.key, 7)
        replay = self.decide_replay(k_dec, state.buffer, state.training_set)
        seeds, new = new_levels(self, k_new, state.training_set, n)
        buffer, idx, levels = replay_or_count(self, k_sample, replay, state.buffer, n, new)
        played = play(self, k_roll, params, buffer, levels, replayed=idx)
        train_state, metrics = train(self, k_upd, state.train_state, played.batch, True)
        # Replays of one slot are merged by the buffer (`--replay-merge`); a repeated new level is not offered.
        buffer, where, scored = score_and_offer(self, buffer, played, params, replay | ~played.repeat)
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(replay, -1, where))
        metrics.update(played_groups(self, replay, played, scored))
        return finish(self, state, train_state, buffer, training_set, key, metrics, played.rollout, replay, True,
                      self.num_envs * self.num_steps)


register_method(plr_method(PLRRunner, "PLR: each cycle replays buffer levels (p = --replay-prob) or plays new ones; trains on both"))
