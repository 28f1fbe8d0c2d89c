"""Robust PLR (Jiang et al., 2021, "Replay-guided adversarial environment design").

PLR's cycle (`plr.py`) without a gradient on new levels: a cycle of new levels only scores
them and offers them to the buffer; only replay cycles train. So the agent learns only from
curated levels, the property the paper's robustness argument needs. Each cycle is one step;
about `replay_prob` of them train once the buffer is ready, so one of `--num-updates`' PPO
updates takes about 1 / `replay_prob` cycles (`minimax/training/budget.py`).

`step` draws the replay coin (`replay_decision`, a function of the state) and plays `cycle(state,
replay)`. The update budget asks the coin first (`will_train`) and passes the side as a Python bool:
cycles of new levels are then built without the PPO update, so vmapped seeds never compute an update
they skip (DESIGN, issue 55). The pieces are `plr_parts.py`'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (coin_replay, finish, mark_stored, new_levels, play, played_groups,
                                       replay_or_count, score_and_offer, train)
from minimax.runners.registry import register_method


class RobustPLRRunner(PLRFamilyRunner):
    method = "robust_plr"
    trains_only_on_replays = True

    def decide_replay(self, key, buffer, training_set):
        """The replay coin (`plr_parts.coin_replay`); a variant's replay rule overrides this."""
        return coin_replay(self, key, buffer, training_set)

    def replay_decision(self, state: PLRState):
        """Whether the next cycle from `state` replays (and so trains): a pure function of the state."""
        return self.decide_replay(jax.random.split(state.key, 7)[1], state.buffer, state.training_set)

    @property
    def will_train(self):
        """`state -> bool` for the update budget (`budget.py`), which then plays `cycle(state, True)`;
        None for a subclass that writes its own `step`, which the budget's `cycle` would bypass."""
        return self.replay_decision if type(self).step is RobustPLRRunner.step else None

    def step(self, state: PLRState):
        return self.cycle(state, self.replay_decision(state))

    def cycle(self, state: PLRState, replay):
        """One cycle with the replay decision given (a traced bool, or a Python bool that builds one side):
        replay and train, or play new levels without a gradient; score and offer either. Both draw the
        same keys, so either way it is the same cycle."""
        n, params = self.n, state.train_state.params
        key, _, k_new, k_sample, k_roll, k_upd, _ = jax.random.split(state.key, 7)
        seeds, new = new_levels(self, k_new, state.training_set, n)
        buffer, idx, levels = replay_or_count(self, k_sample, replay, state.buffer, n, new)
        played = play(self, k_roll, params, buffer, levels, replayed=idx)
        train_state, metrics = train(self, k_upd, state.train_state, played.batch, replay)
        buffer, where, scored = score_and_offer(self, buffer, played, params, replay | ~played.repeat)
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(replay, -1, where))
        metrics.update(played_groups(self, replay, played, scored))
        return finish(self, state, train_state, buffer, training_set, key, metrics, played.rollout, replay, replay,
                      self.num_envs * self.num_steps)


register_method(plr_method(RobustPLRRunner, "robust PLR: PLR that trains only on replayed levels"))
