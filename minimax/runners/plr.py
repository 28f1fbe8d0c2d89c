"""PLR (Jiang et al., 2021): each cycle replays buffer levels or plays new ones.

One step is one cycle (the minimax release's `tick`): with probability `replay_prob` (once the
buffer is `min_fill_ratio` full) the N envs replay levels sampled from the buffer, else they
play N new levels. The levels are scored and offered to the buffer (replayed and already
stored levels update their entries, newcomers compete for a slot). Plain PLR trains on every
cycle; robust PLR (`robust_plr.py`) only on replays, and ACCEL (`accel.py`) follows each
replay with a mutation rollout.

`step` draws the replay coin (`replay_decision`, a function of the state) and plays `cycle(state,
replay)`. Robust PLR and ACCEL spend an update through `budget.py`'s update unit, which asks the coin
first and passes the side as a Python bool: cycles of new levels are built without the PPO update and
the mutation rollout, so vmapped seeds never compute an update they skip (DESIGN, issue 55).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.runners.plr_family import PLRFamilyRunner, PLRState
from minimax.runners.rollout import ppo_batch
from minimax.runners.plr_method import plr_method
from minimax.runners.registry import register_method


class PLRRunner(PLRFamilyRunner):
    method = "plr"
    trains_on_new_levels = True
    """Plain PLR trains on every cycle; robust PLR only on replay cycles."""
    trains_every_cycle = True

    def replay_decision(self, state: PLRState):
        """Whether the next cycle from `state` replays: a pure function of the state (its key, its
        buffer's readiness and its training set), so a loop can ask before it plays the cycle."""
        k_dec = jax.random.split(state.key, 7)[1]
        return self.decide_replay(k_dec, state.buffer, state.training_set)

    @property
    def will_train(self):
        """`state -> bool`, whether the next cycle makes a gradient update, for `budget.py`'s update unit,
        which then plays `cycle(state, True)` as the cycle that trains: robust PLR and ACCEL, whose cycles
        train exactly when they replay. None for plain PLR, whose every cycle trains (no unit needed), and
        for a subclass that writes its own `step`: the unit plays `cycle`, so it would bypass that step."""
        own_step = type(self).step is not PLRRunner.step
        return None if self.trains_on_new_levels or own_step else self.replay_decision

    def step(self, state: PLRState):
        """One cycle, replay or new, as the coin of `replay_decision` falls."""
        return self.cycle(state, self.replay_decision(state))

    def cycle(self, state: PLRState, replay):
        """One cycle with the replay decision given: play, train (if this method trains on it), score, offer.

        `replay` is `replay_decision(state)`: a traced bool (`step`), or a Python bool where the caller
        already knows it (the update unit of `budget.py`), which builds only that side's program: a
        cycle of new levels without the PPO update and the mutation rollout, a replay cycle without
        the branch. Either way the cycle draws the same keys, so it is the same cycle."""
        n = self.n
        key, _, k_new, k_sample, k_roll, k_upd, k_mutation = jax.random.split(state.key, 7)
        params = state.train_state.params
        replayed = jnp.asarray(replay)  # for arithmetic; `replay` itself picks branches when it is static
        seeds, new = self.new_levels(k_new, state.training_set, n)
        buffer, idx, levels = self.replay_or_count(k_sample, replay, state.buffer, n, new)
        found, repeat, first = self._locate(buffer, levels)
        slots = jnp.where(replayed, idx, found)
        rollout = self.rollout(k_roll, params, levels)
        batch = ppo_batch(rollout, self.ppo)
        trainable = True if self.trains_on_new_levels else replay
        train_state, metrics = self._train(k_upd, state.train_state, batch, trainable)
        optimal = self.optimal_returns(levels)
        scores, best, valid = self.score(rollout, batch.advantages, self.prior_max(buffer, slots), optimal,
                                        params)
        # Replays of one slot are merged by the buffer (`--replay-merge`); a repeated new level is not offered.
        buffer, where = self._offer(buffer, levels, slots, scores, best, valid & (replayed | ~repeat), first=first)
        training_set = self.mark_stored(state.training_set, seeds, jnp.where(replayed, -1, where))
        metrics.update(self.played_groups(replay, levels, rollout, scores, valid, optimal))
        env_steps = self.num_envs * self.num_steps
        if self.mutates:
            buffer, mutated = self.mutation_cycle(k_mutation, replay, train_state.params, buffer, idx, levels,
                                                  jnp.where(valid, scores, buffer.scores[idx]))
            metrics.update(mutated)
            env_steps = env_steps * (1 + replayed.astype(jnp.int32))
        return self._finish(state, train_state, buffer, training_set, key, metrics, rollout, replayed, trainable,
                            env_steps)

    def played_groups(self, replay, levels, rollout, scores, valid, optimal) -> dict:
        """The cycle's levels described as the `replay` group or the `new` one (`group_metrics`), the
        other group's sums zero. Where the side is known when traced, only its group is computed (a
        level's metrics can cost a search per level: AMaze's shortest path)."""
        if isinstance(replay, bool):
            played, other = ("replay", "new") if replay else ("new", "replay")
            out = self.group_metrics(played, levels, rollout, scores, valid, True, optimal)
            return {**out, **{other + k[len(played):]: jnp.zeros_like(v) for k, v in out.items()}}
        return {**self.group_metrics("new", levels, rollout, scores, valid, ~replay, optimal),
                **self.group_metrics("replay", levels, rollout, scores, valid, replay, optimal)}


register_method(plr_method(PLRRunner, "PLR: each cycle replays buffer levels (p = --replay-prob) or plays new ones; trains on both"))
