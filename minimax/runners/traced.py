"""TRACED (Cho et al., ICLR 2026): ACCEL whose level score adds a transition prediction loss to positive
value loss, and whose replay priority credits levels with the drop in difficulty their training caused
elsewhere (co-learnability). The pieces are `curricula/transitions.py`'s, which says what we took from the
authors' code and where we differ; the paper's main maze results run on ACCEL, as this does.

ACCEL's cycle (`accel.py`), top to bottom, with TRACED's additions:
1. the replay draw ranks `score + bonus` (the co-learnability credit), admission still the score alone;
2. each scoring (the replayed or new levels, then the children) first runs the transition model on the
   rollout: the levels' prediction errors join their PVL (`--traced-transition-coef`), the model takes
   one step, and the rescored slots' bookkeeping (score before, rescored since the last update, bonus
   lapsed) is written beside the buffer;
3. after a replay cycle's PPO update and the replayed levels' scoring, before the children are played (the
   authors' order), the mean score drop of the levels rescored since the previous update is credited to
   those rescored in the period before (`--traced-colearnability-coef`).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.core.methods import register_method
from minimax.core.metrics import mean_sums
from minimax.core.options import Traced, check
from minimax.curricula.features import action_count, action_inputs, flat_observation
from minimax.curricula.transitions import (TransitionModel, completed_episode_length, credit_colearnability,
                                           init_transition_state, score_and_step)
from minimax.curricula.weights import transform_weights
from minimax.runners.branches import cond_or_zeros
from minimax.runners.plr_family import PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (CoinReplayRunner, cycle_keys, finish, group_metrics, mark_stored, new_levels,
                                       play, play_children, played_groups, replay_or_count, score_and_offer, train,
                                       write_slots)


@dataclasses.dataclass(frozen=True)
class TracedConfig:
    """TRACED's score terms and its transition model (the `traced` group; defaults: the authors' maze run)."""

    traced_transition_coef: Traced[float] = 1.0
    """Weight of the transition prediction loss added to the score (PVL + coef x ATPL)."""
    traced_colearnability_coef: Traced[float] = 1.0
    """Weight of the co-learnability credit on the replay priority (0: none)."""
    traced_hidden: int = 128
    """Width of the transition model's encoder and LSTM."""
    traced_lr: Traced[float] = 1e-4
    """The transition model's AdamW learning rate."""
    traced_obs_scale: Traced[float] = 1.0
    """The model sees and predicts the student's observation times this. The maze divides its view by 10
    (`--normalize-obs`, on in every preset): the authors' scale, MultiGrid's view over 10, so 1 here. (Until
    2026-11-28 this was 0.1 on top of the maze's 1/10: the model saw views over 100, its error ~10x too small.)"""
    traced_observation: Literal["image", "all"] = "image"
    """What of an observation the model sees: `image` (a dict observation's view, as the authors' model: the
    agent's direction left out; an observation without one, all of it) or `all` (every leaf, flattened)."""
    traced_score_sums: bool = True
    """A level's score is a per-episode sum, as the authors' code keeps it (their sampler merges an episode's
    mean score times its step count, with no running mean): the per-step PVL + coef x ATPL times the level's
    mean completed-episode length. False: the per-step mean (the paper's formula, our other methods')."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        c.integer("traced_hidden", 1)
        c.positive("traced_lr", "traced_obs_scale")
        if not (c.obj.traced_transition_coef >= 0 and c.obj.traced_colearnability_coef >= 0):
            c.add("--traced-transition-coef and --traced-colearnability-coef must be >= 0, got "
                  f"{c.obj.traced_transition_coef!r} and {c.obj.traced_colearnability_coef!r}")


@struct.dataclass
class Ledger:
    """Per buffer slot: the co-learnability bookkeeping."""

    previous: jax.Array     # float32[K]: the score before the slot's latest rescoring
    changed: jax.Array      # bool[K]: rescored since the last PPO update
    last_period: jax.Array  # bool[K]: rescored in the period before it
    bonus: jax.Array        # float32[K]: the co-learnability credit on the replay priority


@struct.dataclass
class TracedState(PLRState):
    model: TrainState = None
    ledger: Ledger = None


class TracedRunner(CoinReplayRunner):
    method = "traced"
    trains_only_on_replays = True
    mutates = True
    state_type = TracedState

    def __init__(self, *args, traced: TracedConfig = TracedConfig(), **kwargs):
        super().__init__(*args, **kwargs)
        self.traced = traced
        space = self.env.action_space(self.env_params)  # at construction: jaxnav's builds its bounds eagerly
        self.num_actions = action_count(space)
        self.example_action = space.sample(jax.random.key(0))

    @property
    def local_fields(self):
        return super().local_fields + (("ledger",) if "buffer" in super().local_fields else ())

    def _seen(self, obs):
        """What the model sees of an observation (`--traced-observation`): its `image` where it has one (the
        authors' rule: a dict observation gives its image), else all of it."""
        image = self.traced.traced_observation == "image" and isinstance(obs, dict) and "image" in obs
        return obs["image"] if image else obs

    def _inputs(self, rollout):
        return (flat_observation(self._seen(rollout.obs), self.traced.traced_obs_scale),
                action_inputs(rollout.actions, self.num_actions), rollout.reset, rollout.dones)

    def init(self, key) -> TracedState:
        state = super().init(key)
        k_state, k_model = jax.random.split(state.key)
        level = jax.tree.map(lambda x: x[0], state.buffer.levels)
        obs = self.env.get_obs(self.env.init_state(level, self.env_params), self.env_params)
        x = flat_observation(jax.tree.map(lambda v: v[None, None], self._seen(obs)), self.traced.traced_obs_scale)
        a = action_inputs(jnp.asarray(self.example_action)[None, None], self.num_actions)
        model = init_transition_state(k_model, self._model(x.shape[-1]), x, a, self.traced.traced_lr)
        k = self.capacity
        ledger = Ledger(previous=jnp.zeros((k,), jnp.float32), changed=jnp.zeros((k,), bool),
                        last_period=jnp.zeros((k,), bool), bonus=jnp.zeros((k,), jnp.float32))
        return TracedState(**{f: getattr(state, f) for f in PLRState.__dataclass_fields__},
                           model=model, ledger=ledger).replace(key=k_state)

    def _model(self, features: int) -> TransitionModel:
        return TransitionModel(features, self.traced.traced_hidden)

    def replay_distribution(self, state: TracedState):
        """The buffer's score transform of `score + co-learnability bonus` (admission still compares the score)."""
        bc = self.buffer_cfg
        return transform_weights(state.buffer.scores + state.ledger.bonus, state.buffer.filled, bc.score_transform,
                                 bc.temperature, bc.eps, bc.top_k, bc.rank_ties)

    def scored_offer(self, buffer, model, ledger, played, player, offered, mutations=None):
        """Score `played` (PVL + coef x ATPL), step the transition model, offer, and keep the ledger."""
        x, a, reset, dones = self._inputs(played.rollout)
        model, atpl, _, loss = score_and_step(model, self._model(x.shape[-1]), x, a, reset, dones,
                                              reduce=self.shard.mean, lr=self.traced.traced_lr)
        before = buffer.scores
        length = completed_episode_length(dones) if self.traced.traced_score_sums else 1.0
        buffer, where, scored = score_and_offer(
            self, buffer, played, player, offered, mutations,
            rescore=lambda pvl: (pvl + self.traced.traced_transition_coef * atpl) * length,
            eviction_bonus=ledger.bonus)
        previous = jnp.where(played.slots >= 0, before[jnp.maximum(played.slots, 0)], scored.scores)
        ledger = ledger.replace(previous=write_slots(self, ledger.previous, where, previous),
                                changed=write_slots(self, ledger.changed, where, jnp.ones_like(where, bool)),
                                bonus=write_slots(self, ledger.bonus, where, jnp.zeros_like(scored.scores)))
        return buffer, model, ledger, where, scored, {**mean_sums("traced/atpl", atpl.sum(), atpl.shape[0]),
                                                      **mean_sums("traced/model_loss", loss, 1.0)}

    def cycle(self, state: TracedState, replay):
        """ACCEL's cycle with TRACED's score, model step and co-learnability (module docstring)."""
        n, params, tc = self.n, state.train_state.params, self.traced
        key, _, k_new, k_sample, k_roll, k_upd, k_mutation = cycle_keys(state.key)
        seeds, new = new_levels(self, k_new, state.training_set, n)
        buffer, idx, levels = replay_or_count(self, k_sample, replay, state.buffer, n, new,
                                              self.replay_distribution(state))
        played = play(self, k_roll, params, buffer, levels, replayed=idx)
        train_state, metrics = train(self, k_upd, state.train_state, played.batch, replay)
        buffer, model, ledger, where, scored, model_metrics = self.scored_offer(
            buffer, state.model, state.ledger, played, state.train_state, replay | ~played.repeat)
        bonus, last_period, changed = credit_colearnability(ledger.bonus, ledger.changed, ledger.previous,
                                                            buffer.scores, ledger.last_period,
                                                            tc.traced_colearnability_coef, replay)
        ledger = ledger.replace(bonus=bonus, last_period=last_period, changed=changed)
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(replay, -1, where))
        metrics.update(played_groups(self, replay, played, scored), **model_metrics)

        def mutate_and_play(carry):
            """ACCEL's children of the replayed levels, scored and offered the TRACED way; no gradient."""
            buffer, model, ledger = carry
            kids, mutations = play_children(self, k_mutation, buffer, levels, idx, scored, train_state.params)
            buffer, model, ledger, _, kid_scores, _ = self.scored_offer(buffer, model, ledger, kids,
                                                                        train_state, ~kids.repeat, mutations)
            return (buffer, model, ledger), group_metrics(self, "mutated", kids, kid_scores)

        (buffer, model, ledger), mutated = cond_or_zeros(replay, mutate_and_play, (buffer, model, ledger))
        metrics.update(mutated)
        metrics.update(mean_sums("traced/bonus", (ledger.bonus * buffer.filled).sum(), buffer.filled.sum()))
        env_steps = self.num_envs * self.num_steps * (1 + jnp.asarray(replay, jnp.int32))
        out, metrics = finish(self, state, train_state, buffer, training_set, key, metrics, played.rollout, replay,
                              replay, env_steps)
        return TracedState(**{f: getattr(out, f) for f in PLRState.__dataclass_fields__}, model=model,
                           ledger=ledger), metrics


register_method(plr_method(TracedRunner, "TRACED: ACCEL scoring PVL + transition prediction loss, replay credited "
                                         "with co-learnability", options={"traced": TracedConfig}))
