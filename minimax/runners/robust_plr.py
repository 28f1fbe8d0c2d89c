"""Robust PLR (Jiang et al., 2021, "Replay-guided adversarial environment design").

Each step is one cycle (the minimax release's `tick`): with probability `replay_prob` (once the buffer
is `min_fill_ratio` full) the N envs replay levels sampled from the buffer and train on them, else they
play N new levels without a gradient. Either way the levels are scored and offered to the buffer
(replayed and already stored levels update their entries, newcomers compete for a slot). So the agent
learns only from curated levels, the property the paper's robustness argument needs. About
`replay_prob` of the cycles train once the buffer is ready, so one of `--num-updates`' PPO updates
takes about 1 / `replay_prob` cycles (`minimax/training/budget.py`).

Plain PLR (`plr.py`) is this cycle with a gradient on new levels too (`trains_on`); ACCEL (`accel.py`)
writes its own cycle, with a mutation rollout after each replay. The pieces are `plr_parts.py`'s.
"""

from __future__ import annotations

import jax.numpy as jnp

from minimax.runners.plr_family import PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (CoinReplayRunner, cycle_keys, finish, mark_stored, new_levels, play,
                                       played_groups, replay_or_count, score_and_offer, train)
from minimax.runners.plr_trials import PLRTrialState, empty_trial, trial_cycle, trial_replay_decision, with_trial
from minimax.core.methods import register_method


class RobustPLRRunner(CoinReplayRunner):
    method = "robust_plr"
    trains_only_on_replays = True

    def trains_on(self, replay):
        """Whether the cycle trains: on replays only (plain PLR: always)."""
        return replay

    keeps_cycle_levels = True

    @property
    def state_type(self):
        """`PLRTrialState` with a cycle of several updates (`--cycle-updates`), else the family's `PLRState`."""
        return PLRTrialState if self.cur.cycle_updates > 1 else PLRState

    def init(self, key) -> PLRState:
        state = super().init(key)
        if self.cur.cycle_updates == 1:
            return state
        return with_trial(state, empty_trial(self, state.buffer, state.train_state.params))

    def replay_decision(self, state: PLRState):
        """The coin where a cycle begins; inside a cycle of several updates, the decision its first update drew."""
        coin = super().replay_decision(state)
        return coin if not isinstance(state, PLRTrialState) else trial_replay_decision(self, state, coin)

    def cycle(self, state: PLRState, replay):
        """One cycle with the replay decision given (a traced bool, or a Python bool that builds one side):
        replayed or new levels, played, trained on (`trains_on`), scored and offered."""
        if isinstance(state, PLRTrialState):  # --cycle-updates K > 1: this is one update of a K-update cycle
            return trial_cycle(self, state, replay)
        n, params = self.n, state.train_state.params
        key, _, k_new, k_sample, k_roll, k_upd, _ = cycle_keys(state.key)
        seeds, new = new_levels(self, k_new, state.training_set, n)
        buffer, idx, levels = replay_or_count(self, k_sample, replay, state.buffer, n, new,
                                              self.replay_distribution(state))
        played = play(self, k_roll, params, buffer, levels, replayed=idx)
        trains = self.trains_on(replay)
        train_state, metrics = train(self, k_upd, state.train_state, played.batch, trains)
        # Replays of one slot are merged by the buffer (`--replay-merge`); a repeated new level is not offered.
        buffer, where, scored = score_and_offer(self, buffer, played, state.train_state, replay | ~played.repeat)
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(replay, -1, where))
        metrics.update(played_groups(self, replay, played, scored))
        return finish(self, state, train_state, buffer, training_set, key, metrics, played.rollout, replay, trains,
                      self.num_envs * self.num_steps)


register_method(plr_method(RobustPLRRunner, "robust PLR: PLR that trains only on replayed levels", host="robust"))
