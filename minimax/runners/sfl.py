"""Sampling For Learnability (SFL; Rutherford et al., NeurIPS 2024, "No Regrets").

Every `sfl_refresh_every` updates (and before the first) the runner samples
`sfl_batches x sfl_batch_levels` random levels, plays each with the current policy for up to
`sfl_rollout_steps` steps (sampled actions, the level restarted when an episode ends),
estimates its success rate p from its first `sfl_episodes` completed episodes, and keeps the
`sfl_set_size` levels of highest learnability p (1 - p) as the training set
(`curricula/learnable_set.py`). Each update then plays one rollout of T steps on N envs, the
first N (1 - f) on fresh generator levels and the last N f on levels drawn uniformly from the
set (f = `sfl_set_fraction`), each env replaying its level for the whole rollout, and makes
one PPO update. The next update's levels are drawn at the end of an update (the first
update plays fresh levels only), as the authors' code does. With `sfl_cycle_updates` K > 1 the levels
are kept for K updates, each env continuing its episode across them, and drawn anew every K-th: SFL's
XLand meta-RL keeps a meta-update's rulesets for the 128 PPO updates of a 4,096-step trial
(`envs/trials.py`), its set refreshed once per trial (`sfl_refresh_every` a multiple of K).

The sampling pass is one program: a `lax.while_loop` over chunks of steps that stops once
every level has its episodes or the step limit is reached. Steps are keyed by their index,
so stopping early gives the same estimates as a plain scan to the limit; levels the
environment knows to be unsolvable (`level_facts`) have p = 0 whatever they play, so they
do not hold the loop up. Run inside `lax.while_loop`s, a refresh costs nothing on the
updates between refreshes, also under `vmap` over seeds (where a `lax.cond` would run both
branches).

Data parallel (`shard`): every device plays its slice of each sampled batch; the scores and
levels are gathered and every device keeps the same (replicated) set. Training envs are
split over devices as in DR, with the same per-env keys as in one undivided batch.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ppo import PPOConfig, create_train_state, ppo_update
from minimax.curricula.learnable_set import LearnableSet, draw, empty_set, learnability, merge_top, set_stats
from minimax.envs.wrappers import tree_select
from minimax.core.metrics import level_metric_sums, mean_sums, reduce_over_devices
from minimax.core.options import check
from minimax.core.parallel import NO_SHARD, Shard
from minimax.runners.rollout import (continue_levels, count_outcomes, episode_metrics, play_levels, ppo_batch,
                                     regret_metrics, start_levels, start_stream)
from minimax.core.methods import Method, episode_limit, register_method


@dataclasses.dataclass(frozen=True)
class SFLConfig:
    """SFL's options (static). Defaults: the authors' MiniGrid maze configuration
    (`sfl/train/config/minigrid-sfl.yaml`); each field is the training command's option of that name."""

    sfl_batches: int = 5
    """Batches of random levels sampled per refresh (played one batch after another)."""
    sfl_batch_levels: int = 5000
    """Levels per sampled batch, played in parallel (memory grows with it)."""
    sfl_rollout_steps: int = 2000
    """Most steps each sampled level is played for (sampled actions, restarting the level when an episode ends)."""
    sfl_episodes: int = 10
    """Completed episodes per sampled level that count toward its success rate (its first ones)."""
    sfl_set_size: int = 1000
    """Levels of highest learnability p(1-p) kept as the training set until the next refresh."""
    sfl_refresh_every: int = 100
    """Updates between refreshes of the set (the first one comes before the first update)."""
    sfl_set_fraction: float = 0.5
    """Fraction of the envs of an update that play levels of the set (the rest play fresh levels)."""
    sfl_chunk_steps: int = 50
    """Steps between the sampling pass's checks that every level has its episodes."""
    sfl_cycle_updates: int = 1
    """PPO updates an update's levels are kept for, each env continuing its episode across them (SFL's XLand
    meta-RL: 128, the updates of one 4,096-step trial); 1: new levels every update (the maze's SFL)."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        c.positive("sfl_batches", "sfl_batch_levels", "sfl_rollout_steps", "sfl_episodes", "sfl_set_size",
                   "sfl_refresh_every", "sfl_chunk_steps", "sfl_cycle_updates")
        c.unit("sfl_set_fraction")
        k, every = c.obj.sfl_cycle_updates, c.obj.sfl_refresh_every
        if isinstance(k, int) and isinstance(every, int) and k > 0 and every % k:
            c.add(f"--sfl-refresh-every ({every}) must be a multiple of --sfl-cycle-updates ({k}): the set is "
                  f"refreshed between cycles, not inside one")

    @property
    def sampled_levels(self) -> int:
        return self.sfl_batches * self.sfl_batch_levels

    def set_envs(self, num_envs: int) -> int:
        """Envs of an update that play set levels (the last ones of the batch)."""
        return int(round(self.sfl_set_fraction * num_envs))

    def problems(self, num_envs: int, max_episode_steps: int | None = None):
        """Bad combinations with the run's batch and episode limit, as messages naming the flags."""
        if self.sfl_set_size > self.sampled_levels:
            yield (f"--sfl-set-size ({self.sfl_set_size}) is larger than the levels sampled per refresh "
                   f"(--sfl-batches x --sfl-batch-levels = {self.sfl_batches} x {self.sfl_batch_levels} = "
                   f"{self.sampled_levels})")
        if num_envs > 0 and self.set_envs(num_envs) < 1:
            yield (f"--sfl-set-fraction {self.sfl_set_fraction} of --num-envs {num_envs} gives no env playing "
                   f"set levels (SFL without its set is domain randomisation: use --method dr)")
        if max_episode_steps and self.sfl_rollout_steps < max_episode_steps:
            yield (f"--sfl-rollout-steps ({self.sfl_rollout_steps}) is shorter than an episode may last "
                   f"(--max-episode-steps {max_episode_steps}): a sampled level could finish no episode")


@struct.dataclass
class SFLState:
    train_state: TrainState
    learnable: LearnableSet   # the training set of the last refresh (replicated over devices)
    levels: object            # [N local] the levels the next update plays
    key: jax.Array
    updates: jax.Array        # int32: PPO updates done
    stream: object = None     # the envs' episodes in progress, kept across a cycle's updates (None: 1 per cycle)


class SFLRunner:
    """`init(key) -> SFLState`, `step(state) -> (state, metrics)`: one PPO update per step, the
    set refreshed before every `sfl_refresh_every`-th (see the module docstring)."""

    trains_every_cycle = True
    """Every step makes a gradient update (a unit of the update budget is one step, `budget.py`)."""

    state_type = SFLState

    def __init__(self, env, env_params, generator: Callable, model, ppo: PPOConfig, num_envs: int, num_steps: int,
                 sfl: SFLConfig, level_metrics: Callable | None = None, level_facts: Callable | None = None,
                 shard: Shard = NO_SHARD):
        self.env, self.env_params, self.generator, self.model, self.ppo = env, env_params, generator, model, ppo
        self.num_envs, self.num_steps, self.sfl, self.shard = int(num_envs), int(num_steps), sfl, shard
        self.level_metrics, self.level_facts = level_metrics, level_facts
        d = shard.size  # the sizes split over devices are checked at config time (the method's device_splits)
        self.local_envs = self.num_envs // d
        self.set_envs = sfl.set_envs(self.num_envs)
        self.fresh_envs = self.num_envs - self.set_envs
        self.local_batch = sfl.sfl_batch_levels // d

    @property
    def local_fields(self) -> tuple[str, ...]:
        kept = ("stream",) if self.sfl.sfl_cycle_updates > 1 else ()  # the envs' episodes in progress: this device's
        return ("levels", *kept) if self.shard.sharded else ()

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    # ------------------------------------------------------------------ setup

    def init(self, key) -> SFLState:
        k_model, k_levels, k_run = jax.random.split(key, 3)
        levels = jax.vmap(self.generator)(self.shard.env_keys(k_levels, self.local_envs))  # all fresh at first
        state0 = jax.vmap(self.env.init_state, in_axes=(0, None))(levels, self.env_params)
        obs = jax.vmap(self.env.get_obs, in_axes=(0, None))(state0, self.env_params)
        carry = self.model.initial_carry(self.local_envs)
        params = self.model.init(k_model, carry, jax.tree.map(lambda x: x[None], obs),
                                 jnp.ones((1, self.local_envs), bool))
        first = jax.tree.map(lambda x: x[0], levels)
        return SFLState(train_state=create_train_state(self.model.apply, params, self.ppo),
                        learnable=empty_set(first, self.sfl.sfl_set_size), levels=levels, key=k_run,
                        updates=jnp.zeros((), jnp.int32),
                        stream=start_stream(state0, obs, carry) if self.sfl.sfl_cycle_updates > 1 else None)

    # ------------------------------------------------------------------ the sampling pass

    def estimate_success(self, key, apply_fn, params, levels, stop_early: bool = True):
        """Play this device's batch of levels (one env each) for up to `sfl_rollout_steps` steps:
        `(successes int32[b], episodes int32[b], steps int32)`, counting each level's first
        `sfl_episodes` completed episodes. With `stop_early` the loop ends at the first check
        where every level has them (or cannot be solved: its p is 0 whatever it plays); without,
        it runs to the limit. The estimates are the same."""
        cfg = self.sfl
        waits = None if self.level_facts is None else self.level_facts(levels, self.env_params)[1]
        return count_outcomes(key, apply_fn, params, self.model.initial_carry, self.env, self.env_params, levels,
                              cfg.sfl_rollout_steps, cfg.sfl_episodes, cfg.sfl_chunk_steps, stop_early, waits,
                              self.shard, unroll=self.ppo.unroll)

    def refresh(self, key, apply_fn, params, learnable: LearnableSet, due, stop_early: bool = True) -> LearnableSet:
        """A new set from `sfl_batches` sampled batches where `due`, else `learnable` unchanged
        (the batches' loop then runs zero times, so the pass costs nothing)."""
        cfg, shard = self.sfl, self.shard
        fresh = empty_set(jax.tree.map(lambda x: x[0], learnable.levels), learnable.size)

        def batch(loop):
            i, kept, n_learnable, steps = loop
            k_levels, k_play = jax.random.split(jax.random.fold_in(key, i))
            levels = jax.vmap(self.generator)(shard.env_keys(k_levels, self.local_batch))
            wins, eps, ran = self.estimate_success(k_play, apply_fn, params, levels, stop_early)
            scores, p = learnability(wins, eps)
            levels, scores, p = shard.gather((levels, scores, p))
            kept = merge_top(kept, levels, scores, p)
            return i + 1, kept, n_learnable + jnp.sum((p > 0) & (p < 1)), steps + ran

        n = jnp.where(due, cfg.sfl_batches, 0)
        init = (jnp.zeros((), jnp.int32), fresh, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
        _, new, n_learnable, steps = jax.lax.while_loop(lambda loop: loop[0] < n, batch, init)
        new = new.replace(sampled_learnable=n_learnable / cfg.sampled_levels, refresh_steps=steps,
                          refreshes=learnable.refreshes + 1)
        return tree_select(due, new, learnable)

    # ------------------------------------------------------------------ one update

    def next_levels(self, key, learnable: LearnableSet):
        """This device's levels of the next update: fresh for global envs below N (1 - f), else
        drawn from the set (the same per-env keys as one undivided batch)."""
        k_fresh, k_set = jax.random.split(key)
        fresh = jax.vmap(self.generator)(self.shard.env_keys(k_fresh, self.local_envs))
        picks = jax.vmap(lambda k: draw(k, learnable, 1))(self.shard.env_keys(k_set, self.local_envs))
        picks = jax.tree.map(lambda x: x[:, 0], picks)
        return tree_select(self.from_set(), picks, fresh)

    def from_set(self):
        """bool[N local]: which of this device's envs play set levels."""
        first = self.shard.index() * self.local_envs
        return first + jnp.arange(self.local_envs) >= self.fresh_envs

    def step(self, state: SFLState):
        key, k_refresh, k_play, k_update, k_next = jax.random.split(state.key, 5)
        ts = state.train_state
        due = state.updates % self.sfl.sfl_refresh_every == 0
        learnable = self.refresh(k_refresh, ts.apply_fn, ts.params, state.learnable, due)
        rollout, stream = self.play(k_play, ts, state)
        ts, metrics = ppo_update(k_update, ts, ppo_batch(rollout, self.ppo), self.ppo, self.shard)
        metrics.update(episode_metrics(rollout))
        metrics.update(self.group_metrics(state.levels, rollout))
        metrics = reduce_over_devices(metrics, self.shard)
        metrics.update(set_stats(learnable))
        metrics["refresh_env_steps"] = jnp.where(due, learnable.refresh_steps, 0) * self.sfl.sfl_batch_levels
        metrics["env_steps"] = jnp.asarray(self.env_steps_per_update, jnp.int32)
        metrics["gradient_updates"] = jnp.ones((), jnp.int32)
        metrics["cycles"] = jnp.ones((), jnp.int32)
        levels = self.next_levels(k_next, learnable)
        if stream is not None:  # a cycle of several updates: new levels only at its end
            levels = tree_select((state.updates + 1) % self.sfl.sfl_cycle_updates == 0, levels, state.levels)
        state = SFLState(train_state=ts, learnable=learnable, levels=levels, key=key, updates=state.updates + 1,
                         stream=stream)
        return state, metrics

    def play(self, key, ts, state: SFLState):
        """This update's rollout, and the episodes it leaves in progress where a cycle spans several updates (the
        first update of a cycle starts its levels; the others continue)."""
        carry = self.model.initial_carry(self.local_envs)
        if state.stream is None:
            return play_levels(key, self.env, self.env_params, ts.apply_fn, ts.params, carry, state.levels,
                               self.num_steps, self.shard, self.ppo.unroll), None
        fresh = start_levels(self.env, self.env_params, state.levels, carry)
        stream = tree_select(state.updates % self.sfl.sfl_cycle_updates == 0, fresh, state.stream)
        return continue_levels(key, self.env, self.env_params, ts.apply_fn, ts.params, stream, self.num_steps,
                               self.shard, self.ppo.unroll)

    def group_metrics(self, levels, rollout) -> dict:
        """Return, solved rate and (where the environment knows the optimum) true regret of the envs on
        fresh levels (`new/`) and on set levels (`set/`)."""
        from_set = self.from_set()
        per_level = {} if self.level_metrics is None else jax.vmap(self.level_metrics)(levels)
        optimal = None if self.level_facts is None else self.level_facts(levels, self.env_params)[0]
        out = {}
        for group, member in (("new", ~from_set), ("set", from_set)):
            w = member[None, :]
            done = rollout.dones & w
            out[f"{group}/count"] = member.sum(dtype=jnp.int32)
            out.update(mean_sums(f"{group}/return", jnp.where(done, rollout.episode_returns, 0.0).sum(), done.sum()))
            out.update(mean_sums(f"{group}/solved_rate", (rollout.solved & w).sum(), done.sum()))
            if optimal is not None:
                out.update(regret_metrics(group, optimal, rollout, member=member))
            if per_level:  # NaN: not in this group (left out of its means)
                out.update(level_metric_sums(group, {k: jnp.where(member, jnp.asarray(v, jnp.float32), jnp.nan)
                                                     for k, v in per_level.items()}))
        return out


register_method(Method(
    "sfl", summary="Sampling For Learnability: train on the sampled levels of highest p (1 - p)", runner=SFLRunner,
    options={"sfl": SFLConfig}, trains_every_cycle=True, needs_success=True,
    problems=lambda cfg, spec: cfg.sfl.problems(cfg.num_envs, episode_limit(cfg, spec)),
    device_splits=lambda cfg: (("--sfl-batch-levels", cfg.sfl.sfl_batch_levels),),
    build=lambda parts: SFLRunner(*parts.args, sfl=parts.cfg.sfl, level_metrics=parts.spec.level_metrics,
                                  level_facts=parts.spec.level_facts, shard=parts.shard)))
