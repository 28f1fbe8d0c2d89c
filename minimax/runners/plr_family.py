"""What the PLR family's runners share: their state, options and the pieces their steps use.

One module per method holds its `step` (`plr.py`, `robust_plr.py`, `accel.py`,
`parallel_plr.py`, `parallel_accel.py`), written with the pieces here: new levels, the
replay decision, rollouts that replay one level per env, scoring, the buffer operations
(per-device or global), mutation and the end-of-step metrics.

**One step is one rollout cycle**, the minimax release's `tick`: robust PLR's new-level cycles
(scored, no gradient) and its replay cycles (which train), ACCEL's replay cycles with their
mutation rollout, and the parallel methods' cycles (no gradient until the buffer is ready).
`--num-updates` counts PPO updates, as the release does: the training loop runs as many
cycles as an update takes (`minimax/training/budget.py`); the logs count `gradient_updates`, `cycles`
and `env_steps` separately.

Every rollout here runs each env on one level for the whole rollout (an env whose episode
ends restarts the same level), so a rollout scores the levels it played. Before a rollout
the levels are looked up in the buffer (`locate`): one already stored is played as that slot
(scored against its stored max return, then updated), a repeat within the batch is played
but not offered. After it the whole batch is offered to the buffer in order (`offer`): for
the parallel methods new, then replayed, then mutated levels, as the release.

The staleness clock counts as the release's: one per replay draw, N per cycle of new levels
(and N per parallel cycle before the buffer is ready); mutated levels and the new levels of
a parallel cycle that replays do not advance it.

Data parallel (`shard`, inside `jax.shard_map` over D devices): each device plays
`num_envs / D` envs of every group. By default each device keeps its own buffer of
capacity K / D, filled and scored only with its own levels (the minimax report's
synchronous data-parallel variant); with `global_buffer` one buffer of capacity K is
replicated on every device and updated with every device's levels (gathered). Either way
the replay decision is the same on every device (one key; "ready" means every device's
buffer is ready), so all devices take the same branch and train on the same update.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Callable, Literal

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ppo import PPOConfig, create_train_state, level_update_sq_norms, ppo_update
from minimax.core.units import max_idle_cycles
from minimax.curricula.level_buffer import (BufferConfig, LevelBuffer, advance_clock, buffer_stats, fill_ratio,
                                            init_buffer, locate, offer, sample_replay)
from minimax.curricula.scores import SCORES, ScoreInputs, rollout_max_return, score_levels
from minimax.curricula.training_set import (REPLAY_SCHEDULES, TrainingSet, draw_new_seeds, init_training_set,
                                            level_from_seed, mark_seen, replay_probability)
from minimax.core.metrics import level_metric_sums, mean_sums, reduce_over_devices
from minimax.core.options import check
from minimax.core.parallel import NO_SHARD, Shard
from minimax.runners.branches import branch, cond_or_zeros
from minimax.runners.rollout import Rollout, episode_metrics, play_levels, ppo_batch, regret_metrics

MutationCriterion = Literal["batch", "easy", "hard"]
MUTATION_CRITERIA: tuple[str, ...] = typing.get_args(MutationCriterion)


@dataclasses.dataclass(frozen=True)
class CurriculumConfig:
    """How a PLR-family runner uses its buffer (static). Each field is also the training
    command's option of that name; its docstring is the `--help` text."""

    replay_prob: float = 0.5
    """Probability of a replay update once the buffer is full enough (plr, robust_plr, accel; parallel
    methods replay on every step once the buffer is ready, as the reference, and do not use it)."""
    min_fill_ratio: float = 0.5
    """Replay only once this fraction of the buffer is filled."""
    score_function: str = "maxmc"
    """Level score (PLR family): pvl, maxmc, l1_value_loss, gae, policy_entropy, one_step_td, least_confidence,
    min_margin, learnability, oracle_regret (maze: optimal return - return), or one registered with
    minimax.register_score."""
    replay_with_replacement: bool = True
    """Sample the replay batch with replacement (else distinct levels, Gumbel top-k)."""
    train_levels: int = 0
    """> 0: train on this many fixed level seeds (the PLR paper's finite training set); 0 = unlimited."""
    replay_schedule: Literal[REPLAY_SCHEDULES] = "fixed"
    """With --train-levels: replay with --replay-prob (fixed) or with the fraction of seeds seen."""
    n_mutations: int = 20
    """Edits per mutation (ACCEL)."""
    mutation_criterion: MutationCriterion = "batch"
    """ACCEL parents: batch (every replayed level, one child each), easy / hard (the q lowest / highest
    scores, tiled)."""
    mutation_subsample: int = 4
    """ACCEL: q, the replayed levels mutated by --mutation-criterion easy or hard (unused by batch)."""
    def __post_init__(self):
        check(self, self._rules)

    def ready_at(self, capacity: int) -> int:
        """The levels a buffer of `capacity` holds when replay may start (`buffer_ready`): at least
        `min_fill_ratio` of it, and at least one."""
        return max(1, math.ceil(self.min_fill_ratio * capacity))

    @staticmethod
    def _rules(c):
        c.unit("replay_prob", "min_fill_ratio")
        if c.obj.score_function not in SCORES:
            c.add(f"--score-function must be one of {', '.join(SCORES)}, got {c.obj.score_function!r}")
        for name in ("train_levels", "mutation_subsample", "n_mutations"):
            c.integer(name)


@struct.dataclass
class PLRState:
    train_state: TrainState
    buffer: LevelBuffer
    training_set: TrainingSet  # seen seeds (a 1-seed placeholder without a finite training set)
    key: jax.Array
    updates: jax.Array  # int32: gradient updates done (a step is one cycle, with or without one)


class PLRFamilyRunner:
    """What every PLR-family runner shares: `init(key) -> PLRState` and the pieces the methods'
    `step`s are written in (a new method subclasses this in its own module and writes `step`).

    `generator(key) -> level` makes new levels; `mutator(key, level) -> level` edits one
    (ACCEL); `level_metrics(level) -> dict of scalars` (optional) describes a level for
    the logs (walls, shortest path, solvable...), reported per group: new, replay, mutated;
    `level_identity(level) -> pytree` (optional) is what makes two levels the same level for
    the buffer's de-duplication (`--dedupe-by layout`; AMaze: not the agent's direction).
    """

    state_type = PLRState
    method: str = ""
    """The method's name (`--method`)."""
    groups: int = 1
    """Level groups of one rollout: new | replay (| mutated) for the parallel methods, else one."""
    mutates: bool = False
    """Whether the method makes new levels by editing replayed ones (needs a `mutator`)."""
    trains_only_on_replays: bool = False
    """Whether only replay cycles train (then `replay_prob` must be > 0 unless a finite training set is used)."""
    trains_every_cycle: bool = False
    """Whether every cycle makes a gradient update (plain PLR), so a unit of the update budget is one cycle."""

    def __init__(self, env, env_params, generator: Callable, model, ppo: PPOConfig, num_envs: int, num_steps: int,
                 buffer: BufferConfig, curriculum: CurriculumConfig, mutator: Callable | None = None,
                 level_metrics: Callable | None = None, level_identity: Callable | None = None,
                 shard: Shard = NO_SHARD, global_buffer: bool = False, level_facts: Callable | None = None):
        if self.mutates and mutator is None:
            raise ValueError(f"{self.method} needs a mutator")
        if self.mutates and curriculum.train_levels:
            raise ValueError(f"{self.method} cannot train on a finite training set (--train-levels): its mutated "
                             f"levels would take the buffer slots of seen training levels, which are then lost")
        if self.trains_only_on_replays and not curriculum.replay_prob > 0 and not curriculum.train_levels:
            raise ValueError(f"{self.method} trains only on replays: replay_prob must be > 0, "
                             f"got {curriculum.replay_prob}")
        d = shard.size
        if num_envs % d:
            raise ValueError(f"num_envs ({num_envs}) must be divisible by the device count ({d})")
        if not global_buffer and buffer.capacity % d:
            raise ValueError(f"buffer capacity ({buffer.capacity}) must be divisible by the device count ({d}) "
                             f"for per-device buffers (or use one global buffer)")
        q = curriculum.mutation_subsample
        if self.mutates and curriculum.mutation_criterion != "batch":
            if not 1 <= q <= num_envs:
                raise ValueError(f"mutation_subsample must be in [1, num_envs={num_envs}], got {q}")
            if q % d:
                raise ValueError(f"mutation_subsample ({q}) must be divisible by the device count ({d}): "
                                 f"each device mutates q / D of its replayed levels")
        self.env, self.env_params, self.generator, self.model, self.ppo = env, env_params, generator, model, ppo
        self.num_envs, self.num_steps = int(num_envs), int(num_steps)
        self.shard, self.global_buffer = shard, bool(global_buffer)
        self.n = self.num_envs // d  # envs per group on this device
        self.capacity = buffer.capacity if global_buffer else buffer.capacity // d
        buffer = dataclasses.replace(buffer, capacity=self.capacity)
        self.buffer_cfg, self.cur, self.mutator, self.level_metrics = buffer, curriculum, mutator, level_metrics
        self.level_identity, self.level_facts = level_identity, level_facts

    # ------------------------------------------------------------------ setup

    @property
    def envs_per_rollout(self) -> int:
        return self.num_envs * self.groups

    @property
    def local_fields(self) -> tuple[str, ...]:
        """State fields that differ per device (a leading device axis in the global state)."""
        return () if self.global_buffer or not self.shard.sharded else ("buffer",)

    def init(self, key) -> PLRState:
        k_model, k_level, k_run = jax.random.split(key, 3)
        level = self.generator(k_level)
        state0 = self.env.init_state(level, self.env_params)
        obs = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.n,) + x.shape),
                           self.env.get_obs(state0, self.env_params))
        carry = self.model.initial_carry(self.n)
        params = self.model.init(k_model, carry, jax.tree.map(lambda x: x[None], obs),
                                 jnp.ones((1, self.n), bool))
        return PLRState(train_state=create_train_state(self.model.apply, params, self.ppo),
                        buffer=init_buffer(level, self.buffer_cfg.capacity),
                        training_set=init_training_set(max(self.cur.train_levels, 1)),
                        key=k_run, updates=jnp.zeros((), jnp.int32))

    @property
    def max_idle_cycles(self) -> int:
        """Cycles without a gradient update or buffer growth after which the run is stuck (`budget.py`):
        once the buffer is ready a cycle trains with the replay probability (1 for the parallel methods; with a
        finite training set and the proportionate schedule, at least the ready fraction of its seeds)."""
        p = 1.0 if self.groups > 1 else self.cur.replay_prob
        if self.cur.train_levels and self.cur.replay_schedule != "fixed":
            p = self.cur.ready_at(self.capacity) / self.cur.train_levels
        return max_idle_cycles(min(p, 1.0))

    # ------------------------------------------------------------------ pieces

    def new_levels(self, key, training_set: TrainingSet, n: int):
        """This device's `n` of the global batch's new levels: `(seeds, levels)`, fresh from the
        generator (`seeds` None), or unseen seeds of the (replicated) training set (`seeds`: the
        whole batch's, int32[n * D]; they count as seen once stored, see `mark_stored`)."""
        if self.cur.train_levels:
            seeds = draw_new_seeds(key, training_set, n * self.shard.size, mark=False)[1]
            return seeds, jax.vmap(lambda s: level_from_seed(self.generator, s))(self.shard.local(seeds, n))
        return None, jax.vmap(self.generator)(self.shard.env_keys(key, n))

    def mark_stored(self, training_set: TrainingSet, seeds, where) -> TrainingSet:
        """Seeds whose level the buffer now holds are seen; one whose rollout finished no episode
        (so never stored) stays unseen and is drawn again, never lost."""
        if seeds is None:
            return training_set
        return mark_seen(training_set, seeds, self.shard.gather(where >= 0))  # `where` is this device's part

    def buffer_ready(self, buffer: LevelBuffer):
        """Every device's buffer is `min_fill_ratio` full and holds a level."""
        return self.shard.all((fill_ratio(buffer) >= self.cur.min_fill_ratio) & buffer.filled.any())

    def decide_replay(self, key, buffer: LevelBuffer, training_set: TrainingSet):
        """Bernoulli(replay_prob) once the buffer is ready (never while one is empty); the key
        is shared, so every device decides the same."""
        p = self.cur.replay_prob
        if self.cur.train_levels:
            p = replay_probability(training_set, self.cur.replay_schedule, p)
        return self.buffer_ready(buffer) & jax.random.bernoulli(key, p)

    # Buffer operations: per-device buffers see this device's levels; a global buffer sees
    # every device's (gathered) and so stays identical on all devices.

    def _global(self, x):
        return self.shard.gather(x) if self.global_buffer else x

    def _local(self, x, n):
        return self.shard.local(x, n) if self.global_buffer else x

    def _advance(self, buffer, n):
        """Count `n` new levels of this device handed out (a global buffer counts every device's)."""
        return advance_clock(buffer, n * self.shard.size if self.global_buffer else n)

    def _sample(self, key, buffer, n):
        if self.global_buffer:
            buffer, idx, levels = sample_replay(key, buffer, n * self.shard.size, self.buffer_cfg,
                                                self.cur.replay_with_replacement)
            return buffer, self.shard.local(idx, n), self.shard.local(levels, n)
        return sample_replay(self.shard.device_key(key), buffer, n, self.buffer_cfg, self.cur.replay_with_replacement)

    def _locate(self, buffer, levels):
        """`(slots, repeat, first)` of this device's levels, found before the rollout (`locate`); a
        global buffer looks at every device's batch, so `first` indexes the gathered batch."""
        n = jax.tree.leaves(levels)[0].shape[0]
        found = locate(buffer, self._global(levels), self.buffer_cfg, self.level_identity)
        return self._local(found.slots, n), self._local(found.repeat, n), found.first

    def _offer(self, buffer, levels, slots, scores, max_returns, valid, mutations=None, first=None):
        """Offer this device's played levels in order: `(buffer, where)`, `where` this device's part."""
        n = scores.shape[0]
        mutations = jnp.zeros((n,), jnp.int32) if mutations is None else mutations
        args = self._global((levels, slots, scores, max_returns, valid, mutations))
        buffer, where = offer(buffer, *args[:5], self.buffer_cfg, args[5], self.level_identity, first)
        return buffer, self._local(where, n)

    def rollout(self, key, params, levels) -> Rollout:
        """T steps of one env per level, each env replaying its level."""
        n = jax.tree.leaves(levels)[0].shape[0]
        return play_levels(key, self.env, self.env_params, self.model.apply, params, self.model.initial_carry(n),
                           levels, self.num_steps, self.shard, self.ppo.unroll)

    def advantages(self, rollout: Rollout):
        return ppo_batch(rollout, self.ppo).advantages  # (the unused targets are dropped by XLA)

    def prior_max(self, buffer: LevelBuffer, slots):
        """The stored max return of each level found in the buffer (-inf for the others)."""
        return jnp.where(slots >= 0, buffer.max_returns[jnp.maximum(slots, 0)], -jnp.inf)

    def optimal_returns(self, levels):
        """float32[N]: each level's optimal return, where the environment knows it (else None). Computed
        once per played batch and handed to `score` and `group_metrics`."""
        return None if self.level_facts is None else self.level_facts(levels, self.env_params)[0]

    def score(self, rollout: Rollout, advantages, prior_max, optimal=None, params=None):
        """`(scores, best, valid)` per env: scores with MaxMC's max return = max(`prior_max`, this
        rollout's best); `best` is this rollout's best return (0 where no episode ended). The scores see
        rewards and returns times `--reward-scale`, the units of the value head; `best` is unscaled.
        `optimal` (`optimal_returns` of the played levels) is what `oracle_regret` scores against;
        `params` (those that played the rollout) what a score of each level's PPO gradient (`pace`) needs."""
        best = rollout_max_return(rollout.episode_returns, rollout.dones, jnp.full_like(prior_max, -jnp.inf))
        scale = self.ppo.reward_scale
        norms = None
        if SCORES[self.cur.score_function].needs_update_norms:
            norms = level_update_sq_norms(params, self.model.apply, ppo_batch(rollout, self.ppo), self.ppo,
                                          self.shard)
        inputs = ScoreInputs(rewards=rollout.rewards * scale, values=rollout.values, dones=rollout.dones,
                             solved=rollout.solved, advantages=advantages, policy=rollout.policy,
                             last_value=rollout.last_value, max_returns=jnp.maximum(prior_max, best) * scale,
                             episode_returns=rollout.episode_returns * scale,
                             optimal_returns=None if optimal is None else optimal * scale, gamma=self.ppo.gamma,
                             gae_lambda=self.ppo.gae_lambda, update_sq_norms=norms)
        scores, valid = score_levels(self.cur.score_function, inputs)
        return scores, jnp.where(jnp.isfinite(best), best, 0.0), valid

    def group_metrics(self, group: str, levels, rollout: Rollout, scores, valid, active=True, optimal=None) -> dict:
        """Sums (with their counts) describing one group of levels and how they were played."""
        w = jnp.asarray(active, jnp.float32)
        ep = episode_metrics(rollout)
        out = {
            f"{group}/count": w * scores.shape[0],
            **mean_sums(f"{group}/return", ep["episode_return_sum"], ep["episodes"], w),
            **mean_sums(f"{group}/solved_rate", ep["episode_solved_sum"], ep["episodes"], w),
            **mean_sums(f"{group}/score", jnp.where(valid, scores, 0.0).sum(), valid.sum(), w),
        }
        if self.level_metrics is not None:
            out.update(level_metric_sums(group, jax.vmap(self.level_metrics)(levels), w))
        if optimal is not None:  # the true regret of the group's completed episodes
            out.update(regret_metrics(group, optimal, rollout, w))
        return {k: jnp.asarray(v, jnp.float32) for k, v in out.items()}

    def mutate(self, key, levels, scores, parent_mutations):
        """Children of the replayed `levels`, one per env (`mutation_criterion`): batch mutates
        every replayed level; easy / hard the q lowest / highest by score, tiled over the envs
        (per device, q / D of its own)."""
        n = self.n
        if self.cur.mutation_criterion != "batch":
            q = self.cur.mutation_subsample // self.shard.size
            _, chosen = jax.lax.top_k(scores if self.cur.mutation_criterion == "hard" else -scores, q)
            pick = chosen[jnp.arange(n) % q]
            levels = jax.tree.map(lambda x: x[pick], levels)
            parent_mutations = parent_mutations[pick]
        children = jax.vmap(self.mutator)(self.shard.env_keys(key, n), levels)
        return children, parent_mutations + 1

    def replay_or_count(self, key, replay, buffer: LevelBuffer, n: int, fallback):
        """`(buffer, idx, levels)`: `n` levels drawn from the buffer if `replay` (the clock advances
        per draw), else `fallback` with slots -1 and the clock advanced by `n` (a cycle of new levels)."""
        def sample(buffer):
            return self._sample(key, buffer, n)

        def count(buffer):
            return self._advance(buffer, n), jnp.full((n,), -1, jnp.int32), fallback

        return branch(replay, sample, count, buffer)

    def _train(self, key, train_state, batch, trainable):
        """One PPO update where `trainable`, else none (parameters kept). Its statistics are
        `<name>_sum` / `<name>_count` pairs weighted by `trainable`, so a logged chunk averages
        them over its gradient updates only (NaN for a chunk without one)."""
        update = lambda: ppo_update(key, train_state, batch, self.ppo, self.shard)  # noqa: E731
        if isinstance(trainable, bool):  # known when traced (`PLRRunner.cycle`): only that side is built
            new_state, metrics = cond_or_zeros(trainable, lambda _: update(), train_state)
        elif self.shard.sharded:  # the update's collectives run on every device; its result is kept or not
            new_state, metrics = update()
            new_state = jax.tree.map(lambda new, old: jnp.where(trainable, new, old), new_state, train_state)
        else:
            new_state, metrics = cond_or_zeros(trainable, lambda _: update(), train_state)
        w = jnp.asarray(trainable, jnp.float32)
        out = {}
        for name, value in metrics.items():
            out.update(mean_sums(name, w * value, w))
        return new_state, out

    def _finish(self, state: PLRState, train_state, buffer, training_set, key, metrics, played: Rollout,
                replayed, updated, env_steps):
        """The step's new state and metrics: the episodes of `played` (the cycle's rollout) as the
        training statistics, the buffer's, and the counters."""
        metrics = reduce_over_devices({**metrics, **episode_metrics(played)}, self.shard)
        metrics.update(self._buffer_stats(buffer))
        updated = jnp.asarray(updated, jnp.int32)
        metrics["cycles"] = jnp.ones((), jnp.int32)
        metrics["env_steps"] = jnp.asarray(env_steps, jnp.int32)
        metrics["replay_fraction_sum"] = jnp.asarray(replayed, jnp.float32)
        metrics["replay_fraction_count"] = jnp.ones((), jnp.float32)
        metrics["gradient_updates"] = updated
        state = PLRState(train_state=train_state, buffer=buffer, training_set=training_set, key=key,
                         updates=state.updates + updated)
        return state, metrics

    def _buffer_stats(self, buffer):
        stats = buffer_stats(buffer, self.buffer_cfg)
        if self.global_buffer or not self.shard.sharded:
            return stats
        # Per-device buffers: sizes add up, the maximum is the largest, the rest are averaged.
        return {k: self.shard.sum(v) if k == "buffer/size" else self.shard.max(v) if k == "buffer/max_score"
                else self.shard.mean(v) for k, v in stats.items()}
