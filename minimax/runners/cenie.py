"""PLR-CENIE (Teoh, Li and Varakantham, NeurIPS 2024): robust PLR whose replay distribution mixes a
rank distribution of each level's novelty with that of its regret score, `alpha P_N + (1 - alpha) P_R`
(then PLR's staleness mix), novelty measured against a Gaussian mixture fitted to the student's recent
state-action coverage (`curricula/novelty.py`, which says what we chose where the paper is unread).

The cycle is robust PLR's (`robust_plr.py`), top to bottom, with three more lines: the replay draw
uses the mixed distribution; after scoring, each played level's novelty is measured against the
coverage so far and stored beside its slot (a newcomer's where it entered, a replay's refreshed);
then the cycle's samples join the coverage window and the mixture takes `--novelty-em-steps` EM
steps, on the cycles `--novelty-coverage` names (by default the replay cycles, those the student trains on). Admission into the buffer and the slot a newcomer replaces follow the regret score, as in robust
PLR (the paper combines the two objectives in the replay distribution). `--novelty-coef 0` is robust
PLR's replay distribution, with the coverage still fitted.

ACCEL-CENIE (`--method accel_cenie`, the paper's other variant) is the same cycle with ACCEL's mutation
(`accel.py`): after a replay's update the replayed levels' children are played with the updated policy,
scored, offered, and their novelty is measured and stored like the played levels'. Our choices where
the paper was not readable here: a child's novelty is measured against the coverage after this cycle's
refit (it is compared with what the student has just played, its parent included), and the children's
rollouts join the coverage only under `--novelty-coverage played` (by default it models what the student
trains on: a child's rollout, like a new level's in robust PLR, only scores it)."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import jax
import jax.numpy as jnp
from flax import struct

from minimax.core.methods import register_method
from minimax.core.metrics import mean_sums
from minimax.core.options import Traced, check
from minimax.curricula.features import action_count
from minimax.curricula.novelty import (Coverage, init_coverage, level_novelty, level_samples, novelty_weights,
                                       push, refit, step_features)
from minimax.runners.branches import cond_or_zeros
from minimax.runners.plr_family import PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (CoinReplayRunner, cycle_keys, finish, group_metrics, mark_stored, new_levels,
                                       play, play_children, played_groups, replay_or_count, score_and_offer, train,
                                       write_slots)


@dataclasses.dataclass(frozen=True)
class NoveltyConfig:
    """CENIE's coverage model and its weight in the replay distribution (the `novelty` group)."""

    novelty_coef: Traced[float] = 0.5
    """alpha: the replay distribution's score part is alpha P_novelty + (1 - alpha) P_regret (the paper's 0.5)."""
    novelty_window: int = 32
    """Levels in the coverage window (the most recently played, FIFO)."""
    novelty_samples: int = 64
    """(state, action) pairs sampled from each level's rollout into the window and for its novelty."""
    novelty_components: int = 8
    """Diagonal Gaussians in the coverage mixture."""
    novelty_em_steps: int = 5
    """EM iterations per cycle, warm-started from the last fit."""
    novelty_reg: Traced[float] = 0.01
    """Added to every variance (sklearn's reg_covar), keeping constant features from collapsing a component."""
    novelty_coverage: Literal["trained", "cycles", "played"] = "trained"
    """Which rollouts join the coverage: `trained`, those PPO trains on (the replay cycles': the paper's "coverage
    from previous curriculum experiences" read as the experience the student learns from); `cycles`, every
    cycle's (new-level cycles too; runs saved before 2026-11-28 did this); `played`, every rollout the student
    plays (ACCEL-CENIE's children too, after their novelty is measured)."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        c.unit("novelty_coef")
        for name in ("novelty_window", "novelty_samples", "novelty_components"):
            c.integer(name, 1)
        c.integer("novelty_em_steps", 0)
        c.positive("novelty_reg")


@struct.dataclass
class CENIEState(PLRState):
    coverage: Coverage = None
    novelty: jax.Array = None  # float32[K]: each buffer slot's last measured novelty


class CENIERunner(CoinReplayRunner):
    method = "cenie"
    trains_only_on_replays = True
    state_type = CENIEState

    def __init__(self, *args, novelty: NoveltyConfig = NoveltyConfig(), **kwargs):
        super().__init__(*args, **kwargs)
        self.novelty = novelty
        space = self.env.action_space(self.env_params)  # at construction: jaxnav's builds its bounds eagerly
        self.num_actions = action_count(space)
        self.action_dim = self.num_actions or math.prod(space.shape)

    @property
    def local_fields(self):
        return super().local_fields + (("novelty",) if "buffer" in super().local_fields else ())

    def init(self, key) -> CENIEState:
        state = super().init(key)
        level = jax.tree.map(lambda x: x[0], state.buffer.levels)
        obs = self.env.get_obs(self.env.init_state(level, self.env_params), self.env_params)
        dim = sum(math.prod(jnp.shape(x)) for x in jax.tree.leaves(obs)) + self.action_dim
        nc = self.novelty
        coverage = init_coverage(dim, nc.novelty_window * nc.novelty_samples, nc.novelty_components)
        return CENIEState(**{f: getattr(state, f) for f in PLRState.__dataclass_fields__}, coverage=coverage,
                          novelty=jnp.zeros((self.capacity,), jnp.float32))

    def cycle(self, state: CENIEState, replay):
        """Robust PLR's cycle with the mixed replay distribution and the coverage's update (module docstring);
        ACCEL-CENIE's also mutates the replayed levels."""
        n, params, nc = self.n, state.train_state.params, self.novelty
        key, _, k_new, k_sample, k_roll, k_upd, k_cover = cycle_keys(state.key)
        seeds, new = new_levels(self, k_new, state.training_set, n)
        buffer, idx, levels = replay_or_count(self, k_sample, replay, state.buffer, n, new,
                                              self.replay_distribution(state))
        played = play(self, k_roll, params, buffer, levels, replayed=idx)
        train_state, metrics = train(self, k_upd, state.train_state, played.batch, replay)
        buffer, where, scored = score_and_offer(self, buffer, played, state.train_state, replay | ~played.repeat)
        k_samples, k_fit = jax.random.split(k_cover)
        samples, novelty = self.measure(k_samples, state.coverage, played)
        stored = write_slots(self, state.novelty, where, novelty)
        coverage = refit(k_fit, push(state.coverage, self.shard.gather(samples)), nc.novelty_em_steps,
                         nc.novelty_reg)
        if nc.novelty_coverage == "trained":  # a new-level cycle trains nothing: its rollouts stay out
            coverage = jax.tree.map(lambda new, old: jnp.where(replay, new, old), coverage, state.coverage)
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(replay, -1, where))
        metrics.update(played_groups(self, replay, played, scored))
        metrics.update(mean_sums("novelty/played", novelty.sum(), n))

        def mutate_and_play(carry):
            """ACCEL-CENIE: the replayed levels' children, played with the updated policy, scored, offered, and
            their novelty measured against the refitted coverage and stored; no gradient."""
            buffer, stored, coverage = carry
            k_children, k_kid_samples = jax.random.split(jax.random.fold_in(k_cover, 1))
            kids, mutations = play_children(self, k_children, buffer, levels, idx, scored, train_state.params)
            buffer, kid_where, kid_scores = score_and_offer(self, buffer, kids, train_state, ~kids.repeat,
                                                            mutations)
            kid_samples, kid_novelty = self.measure(k_kid_samples, coverage, kids)
            if nc.novelty_coverage == "played":  # joins the window now; the next cycle's refit fits it
                coverage = push(coverage, self.shard.gather(kid_samples))
            return (buffer, write_slots(self, stored, kid_where, kid_novelty), coverage), {
                **group_metrics(self, "mutated", kids, kid_scores),
                **mean_sums("novelty/mutated", kid_novelty.sum(), n)}

        if self.mutates:
            (buffer, stored, coverage), mutated = cond_or_zeros(replay, mutate_and_play, (buffer, stored, coverage))
            metrics.update(mutated)
        env_steps = self.num_envs * self.num_steps * (1 + jnp.asarray(replay & self.mutates, jnp.int32))
        out, metrics = finish(self, state, train_state, buffer, training_set, key, metrics, played.rollout, replay,
                              replay, env_steps)
        return CENIEState(**{f: getattr(out, f) for f in PLRState.__dataclass_fields__}, coverage=coverage,
                          novelty=stored), metrics

    def replay_distribution(self, state: CENIEState):
        """alpha P_novelty + (1 - alpha) P_regret: the rank distributions of the slots' novelty and scores."""
        nc, bc = self.novelty, self.buffer_cfg
        return novelty_weights(state.buffer.scores, state.novelty, state.buffer.filled, nc.novelty_coef,
                               bc.score_transform, bc.temperature, bc.eps, bc.top_k, bc.rank_ties)

    def measure(self, key, coverage: Coverage, played):
        """`(samples, novelty[n])`: (state, action) samples of each played level's rollout and its novelty
        against `coverage`."""
        features = step_features(played.rollout.obs, played.rollout.actions, self.num_actions)
        samples = level_samples(self.shard.device_key(key), features, self.novelty.novelty_samples)
        return samples, level_novelty(coverage, samples)


class ACCELCENIERunner(CENIERunner):
    """ACCEL-CENIE: CENIE's cycle with ACCEL's mutation of the replayed levels (module docstring)."""

    method = "accel_cenie"
    mutates = True


register_method(plr_method(CENIERunner, "PLR-CENIE: robust PLR replaying by rank of regret and of state-action "
                                        "novelty (a Gaussian mixture of the student's coverage)",
                           options={"novelty": NoveltyConfig}))
register_method(plr_method(ACCELCENIERunner, "ACCEL-CENIE: ACCEL replaying by rank of regret and of state-action "
                                             "novelty, its mutated levels' novelty measured too",
                           options={"novelty": NoveltyConfig}))
