"""ReMiDi (Beukman et al., ICML 2024, "Refining Minimax Regret for Unsupervised Environment Design"):
robust PLR over a sequence of level buffers, each stage ignoring what the earlier stages' levels cover.

Minimax regret fails where some levels have irreducible regret (a level whose observations do not tell
the agent what it must do): the teacher keeps proposing them and the agent learns nothing more. ReMiDi
plays robust PLR on a first buffer (the minimax-regret stage); after `--remidi-stage-cycles` cycles it
moves to the next buffer, where a trajectory step is trained on only once the trajectory has left every
level of the earlier buffers, and a new level whose trajectory never leaves them is not stored
(`curricula/consistency.py`: the authors' consistency test). At equilibrium the policy is Bayesian
level-perfect minimax regret (the paper's solution concept). The authors' JAX code
(Michael-Beukman/ReMiDi, on jaxued) defines what the paper leaves open; as there:

- a stage lasts a number of *cycles* (replays and new-level cycles alike), then the next buffer starts
  empty; at the last stage the run stays (their default `--stay_at_last`);
- the replayed levels' PPO update counts only the masked steps (advantages normalised over them; the
  entropy bonus over every step; `agents/ppo.py: masked_moments`), and scores see the whole rollout;
- new levels train nothing (no exploratory gradient: their default).

Ours differs where our house does: the consistency is computed after the rollout from its actions, not
by stepping the earlier levels inside it (the same masks, `consistency.py`), and their plain rollout
that each replay cycle plays and then discards is not played. `state.buffer` is always the current
stage's buffer (the logs, `--buffer-png` and the replay coin read it); `earlier` holds every stage's.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from minimax.core.methods import register_method
from minimax.core.metrics import mean_sums
from minimax.core.options import check
from minimax.curricula.consistency import train_mask
from minimax.curricula.level_buffer import LevelBuffer
from minimax.runners.plr_family import PLRState
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import (CoinReplayRunner, cycle_keys, finish, mark_stored, new_levels, play,
                                       played_groups, replay_or_count, score_and_offer, train)


@dataclasses.dataclass(frozen=True)
class RemidiConfig:
    """ReMiDi's stages (the `remidi` group)."""

    remidi_stages: int = 4
    """Level buffers, one per stage, each of --buffer-size (the authors' maze scripts: 4)."""
    remidi_stage_cycles: int = 1000
    """Cycles played in a stage before the next one starts (the authors' number_of_replays_per_buffer)."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        c.integer("remidi_stages", 1)
        c.integer("remidi_stage_cycles", 1)


@struct.dataclass
class RemidiState(PLRState):
    earlier: LevelBuffer = None      # [S, K]: every stage's buffer (the current stage's lives in `buffer`)
    stage: jax.Array = None          # int32[]: the current stage
    stage_cycles: jax.Array = None   # int32[]: cycles played in it


class RemidiRunner(CoinReplayRunner):
    method = "remidi"
    trains_only_on_replays = True
    state_type = RemidiState

    def __init__(self, *args, remidi: RemidiConfig = RemidiConfig(), **kwargs):
        super().__init__(*args, **kwargs)
        self.remidi = remidi

    @property
    def local_fields(self):
        return super().local_fields + (("earlier",) if "buffer" in super().local_fields else ())

    def init(self, key) -> RemidiState:
        state = super().init(key)
        s = self.remidi.remidi_stages
        earlier = jax.tree.map(lambda x: jnp.broadcast_to(x, (s,) + x.shape), state.buffer)
        return RemidiState(**{f: getattr(state, f) for f in PLRState.__dataclass_fields__}, earlier=earlier,
                           stage=jnp.zeros((), jnp.int32), stage_cycles=jnp.zeros((), jnp.int32))

    def considered(self, state: RemidiState):
        """`(levels [S x K, ...], bool[S x K])`: the earlier stages' stored levels."""
        s, k = self.remidi.remidi_stages, self.capacity
        levels = jax.tree.map(lambda x: x.reshape((s * k,) + x.shape[2:]), state.earlier.levels)
        return levels, ((jnp.arange(s) < state.stage)[:, None] & state.earlier.filled).reshape(-1)

    def cycle(self, state: RemidiState, replay):
        """Robust PLR's cycle on the current stage's buffer, trained and stored where the trajectories leave
        the earlier stages' levels; then the stage clock (module docstring)."""
        n, params = self.n, state.train_state.params
        key, _, k_new, k_sample, k_roll, k_upd, k_consistency = cycle_keys(state.key)
        seeds, new = new_levels(self, k_new, state.training_set, n)
        buffer, idx, levels = replay_or_count(self, k_sample, replay, state.buffer, n, new,
                                              self.replay_distribution(state))
        played = play(self, k_roll, params, buffer, levels, replayed=idx)
        rollout = played.rollout
        mask = train_mask(self.env, self.env_params, rollout.obs, rollout.actions, rollout.reset,
                          *self.considered(state), key=k_consistency, group=self.capacity)
        train_state, metrics = train(self, k_upd, state.train_state, played.batch.replace(mask=mask), replay)
        leaves = mask.any(0)  # the trajectory leaves the earlier levels somewhere: a level worth storing
        buffer, where, scored = score_and_offer(self, buffer, played, state.train_state, replay | (~played.repeat & leaves))
        training_set = mark_stored(self, state.training_set, seeds, jnp.where(replay, -1, where))
        metrics.update(played_groups(self, replay, played, scored))
        covered = jnp.where(replay, 0, (~leaves).sum())  # new levels not stored: the earlier stages cover them
        metrics.update(**mean_sums("remidi/trained_steps", mask.mean(), 1.0),
                       **mean_sums("remidi/new_levels_covered", covered, n))
        stage, stage_cycles, earlier, buffer = self.next_stage(state, buffer)
        metrics.update(mean_sums("remidi/stage", stage, 1.0))
        out, metrics = finish(self, state, train_state, buffer, training_set, key, metrics, rollout, replay, replay,
                              self.num_envs * self.num_steps)
        return RemidiState(**{f: getattr(out, f) for f in PLRState.__dataclass_fields__}, earlier=earlier,
                           stage=stage, stage_cycles=stage_cycles), metrics

    def next_stage(self, state: RemidiState, buffer):
        """`(stage, stage_cycles, earlier, buffer)` after this cycle: past `--remidi-stage-cycles` the current
        buffer is filed under its stage and the next (empty) one becomes current; the last stage stays."""
        cycles = state.stage_cycles + 1
        over = cycles > self.remidi.remidi_stage_cycles
        advance = over & (state.stage < self.remidi.remidi_stages - 1)
        filed = jax.tree.map(lambda all_, cur: all_.at[state.stage].set(cur), state.earlier, buffer)
        earlier = jax.tree.map(lambda a, b: jnp.where(advance, a, b), filed, state.earlier)
        following = jax.tree.map(lambda x: x[jnp.minimum(state.stage + 1, self.remidi.remidi_stages - 1)], earlier)
        buffer = jax.tree.map(lambda a, b: jnp.where(advance, a, b), following, buffer)
        return state.stage + advance, jnp.where(over, 0, cycles), earlier, buffer


def remidi_problems(cfg, spec):
    """ReMiDi replays a trajectory's actions on the earlier levels: the env's steps must not draw random numbers."""
    if spec is not None and not spec.deterministic:
        yield (f"--method remidi replays each trajectory's actions on the earlier stages' levels, which needs "
               f"deterministic steps; --env {spec.name}'s steps draw random numbers")


register_method(plr_method(RemidiRunner, "ReMiDi: robust PLR over stages of buffers, each training only where "
                                         "trajectories leave the earlier stages' levels",
                           options={"remidi": RemidiConfig}, problems=remidi_problems))
