"""What the PLR family's runners share: their state, options and the pieces their steps use.

One module per method holds its `step` (`plr.py`, `robust_plr.py`, `accel.py`,
`parallel_plr.py`, `parallel_accel.py`), written with the pieces here: new levels, the
replay decision, rollouts that replay one level per env, scoring, the buffer operations
(per-device or global), mutation, gradient-free search cycles and the end-of-step metrics.

Every rollout here runs each env on one level for the whole rollout (an env whose episode
ends restarts the same level), so a rollout scores the levels it played. One `step` is
exactly one gradient update, whatever the method, so `--num-updates` and learning-rate
annealing count the same thing for every runner; `cycles` and `env_steps` in the metrics
count every rollout and every simulated step, gradient-free ones included.

The staleness clock of the buffer counts each level handed out for play once: N per
new-level or replay cycle, 2N per parallel PLR step, 3N per parallel ACCEL step. In a
parallel step the new (and mutated) levels are counted before the replay draws, so the
last-drawn replay level ends the step at staleness 0.

If the search-cycle cap is hit while a buffer is still empty, the step trains on nothing:
the parameters stay as they were and `gradient_updates` is 0 (never train on the
placeholder levels of an empty buffer).

A level from a replay is scored and its buffer entry updated before any newcomer is
inserted, so a replayed level is never evicted before its new score is known.

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
import typing
from typing import Callable, Literal

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ppo import PPOConfig, compute_gae, create_train_state, ppo_update
from minimax.curricula.level_buffer import (BufferConfig, LevelBuffer, buffer_stats, fill_ratio,
                                            init_buffer, insert, sample_replay, update_scores)
from minimax.curricula.scores import SCORE_FUNCTIONS, ScoreInputs, rollout_max_return, score_levels
from minimax.curricula.training_set import (REPLAY_SCHEDULES, TrainingSet, draw_new_seeds, init_training_set,
                                            level_from_seed, replay_probability)
from minimax.metrics import mean_sums, reduce_over_devices
from minimax.options import check
from minimax.parallel import NO_SHARD, Shard
from minimax.runners.rollout import Rollout, episode_metrics, play_levels

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
    score_function: Literal[SCORE_FUNCTIONS] = "maxmc"
    """Level score (PLR family): see minimax/curricula/scores.py."""
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
    max_search_rollouts: int = 256
    """Robust / parallel PLR, ACCEL: gradient-free new-level rollouts per update at most (a guard for
    buffers that cannot fill; `search_capped` in the logs says when it ended a search)."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        c.unit("replay_prob", "min_fill_ratio")
        for name in ("train_levels", "mutation_subsample", "n_mutations", "max_search_rollouts"):
            c.integer(name)


@struct.dataclass
class PLRState:
    train_state: TrainState
    buffer: LevelBuffer
    training_set: TrainingSet  # seen seeds (a 1-seed placeholder without a finite training set)
    key: jax.Array
    updates: jax.Array  # int32: gradient updates done


class PLRFamilyRunner:
    """What every PLR-family runner shares: `init(key) -> PLRState` and the pieces the methods'
    `step`s are written in (a new method subclasses this in its own module and writes `step`).

    `generator(key) -> level` makes new levels; `mutator(key, level) -> level` edits one
    (ACCEL); `level_metrics(level) -> dict of scalars` (optional) describes a level for
    the logs (walls, shortest path, solvable...), reported per group: new, replay, mutated.
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

    def __init__(self, env, env_params, generator: Callable, model, ppo: PPOConfig, num_envs: int, num_steps: int,
                 buffer: BufferConfig, curriculum: CurriculumConfig, mutator: Callable | None = None,
                 level_metrics: Callable | None = None, shard: Shard = NO_SHARD, global_buffer: bool = False):
        if self.mutates and mutator is None:
            raise ValueError(f"{self.method} needs a mutator")
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

    # ------------------------------------------------------------------ pieces

    def new_levels(self, key, training_set: TrainingSet, n: int):
        """This device's `n` of the global batch's new levels: fresh from the generator, or
        unseen seeds of the (replicated) training set."""
        if self.cur.train_levels:
            training_set, seeds = draw_new_seeds(key, training_set, n * self.shard.size)
            seeds = self.shard.local(seeds, n)
            return training_set, jax.vmap(lambda s: level_from_seed(self.generator, s))(seeds)
        return training_set, jax.vmap(self.generator)(self.shard.env_keys(key, n))

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

    def _played(self, n):
        """Levels handed out for play, as the buffer counts them (a global buffer counts every device's)."""
        return n * self.shard.size if self.global_buffer else n

    def _sample(self, key, buffer, n):
        if self.global_buffer:
            buffer, idx, levels = sample_replay(key, buffer, n * self.shard.size, self.buffer_cfg,
                                                self.cur.replay_with_replacement)
            return buffer, self.shard.local(idx, n), self.shard.local(levels, n)
        return sample_replay(self.shard.device_key(key), buffer, n, self.buffer_cfg, self.cur.replay_with_replacement)

    def _update_scores(self, buffer, idx, scores, max_returns, valid):
        if self.global_buffer:
            idx, scores, max_returns, valid = self.shard.gather((idx, scores, max_returns, valid))
        return update_scores(buffer, idx, scores, max_returns, valid, self.buffer_cfg)

    def _insert(self, buffer, levels, scores, max_returns, valid, mutations=None, played=None):
        """Offer this device's levels; `played` (this device's count, default all of them) advances the clock."""
        if self.global_buffer:
            levels, scores, max_returns, valid, mutations = self.shard.gather(
                (levels, scores, max_returns, valid, mutations))
        if played is not None:
            played = self._played(played)
        return insert(buffer, levels, scores, max_returns, valid, self.buffer_cfg, mutations, played)[0]

    def rollout(self, key, params, levels) -> Rollout:
        """T steps of one env per level, each env replaying its level."""
        n = jax.tree.leaves(levels)[0].shape[0]
        return play_levels(key, self.env, self.env_params, self.model.apply, params, self.model.initial_carry(n),
                           levels, self.num_steps, self.shard)

    def advantages(self, rollout: Rollout):
        adv, _ = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.last_value,
                             self.ppo.gamma, self.ppo.gae_lambda)
        return adv

    def score(self, rollout: Rollout, advantages, prior_max):
        """`(scores, max_returns, valid)` per env; `prior_max` is the best return known before."""
        max_returns = rollout_max_return(rollout.episode_returns, rollout.dones, prior_max)
        inputs = ScoreInputs(rewards=rollout.rewards, values=rollout.values, dones=rollout.dones,
                             terminated=rollout.terminated, advantages=advantages, logits=rollout.logits,
                             last_value=rollout.last_value, max_returns=max_returns, gamma=self.ppo.gamma)
        scores, valid = score_levels(self.cur.score_function, inputs)
        return scores, jnp.where(jnp.isfinite(max_returns), max_returns, 0.0), valid

    def group_metrics(self, group: str, levels, rollout: Rollout, scores, valid, active=True) -> dict:
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
            m = jax.vmap(self.level_metrics)(levels)
            solvable = m["solvable"] if "solvable" in m else None
            for name, value in m.items():
                value = value.astype(jnp.float32)
                if name == "shortest_path" and solvable is not None:
                    out.update(mean_sums(f"{group}/shortest_path", jnp.where(solvable, value, 0.0).sum(),
                                         solvable.sum(), w))
                else:
                    out[f"{group}/{name}_sum"] = w * value.sum()
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

    def new_level_cycle(self, key, params, buffer: LevelBuffer, training_set: TrainingSet, n: int | None = None):
        """A search cycle: play `n` (default N) new levels, score them and offer them to the buffer.
        No gradient: the agent's parameters are only read. `(buffer, training_set, metrics)`."""
        n = self.n if n is None else n
        k_new, k_roll = jax.random.split(key)
        training_set, levels = self.new_levels(k_new, training_set, n)
        rollout = self.rollout(k_roll, params, levels)
        scores, max_returns, valid = self.score(rollout, self.advantages(rollout), jnp.full((n,), -jnp.inf))
        buffer = self._insert(buffer, levels, scores, max_returns, valid)
        return buffer, training_set, self.group_metrics("new", levels, rollout, scores, valid)

    def search(self, key, params, buffer, training_set, n, done):
        """Search cycles of `n` new levels (no gradient) until `done(key, buffer, training_set)` or
        `max_search_rollouts` cycles: `(key, buffer, training_set, cycles, done, summed metrics)`."""
        zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(
            lambda *args: self.new_level_cycle(*args, n=n), key, params, buffer, training_set)[2])

        def searching(c):
            return ~c["done"] & (c["i"] < self.cur.max_search_rollouts)

        def cycle(c):
            key, k_explore, k_done = jax.random.split(c["key"], 3)
            buffer, training_set, m = self.new_level_cycle(k_explore, params, c["buffer"], c["training_set"], n)
            return dict(key=key, buffer=buffer, training_set=training_set, i=c["i"] + 1,
                        done=done(k_done, buffer, training_set), metrics=jax.tree.map(jnp.add, c["metrics"], m))

        key, k_done = jax.random.split(key)
        c = jax.lax.while_loop(searching, cycle, dict(
            key=key, buffer=buffer, training_set=training_set, i=jnp.zeros((), jnp.int32),
            done=done(k_done, buffer, training_set), metrics=zeros))
        return c["key"], c["buffer"], c["training_set"], c["i"], c["done"], c["metrics"]

    def _sample_or_new(self, key, replay, buffer, training_set):
        """Replay levels from the buffer if `replay`, else new levels: `(buffer, training_set, idx, levels)`."""
        n = self.n

        def sample(op):
            buffer, training_set = op
            buffer, idx, levels = self._sample(key, buffer, n)
            return buffer, training_set, idx, levels

        def new(op):
            buffer, training_set = op
            training_set, levels = self.new_levels(key, training_set, n)
            return buffer, training_set, jnp.zeros((n,), jnp.int32), levels

        return jax.lax.cond(replay, sample, new, (buffer, training_set))

    def _train(self, key, train_state, batch, trainable=True):
        """One PPO update, or none (parameters kept) where `trainable` is False."""
        new_state, metrics = ppo_update(key, train_state, batch, self.ppo, self.shard)
        if trainable is True:
            return new_state, metrics
        keep = lambda new, old: jnp.where(trainable, new, old)  # noqa: E731
        return jax.tree.map(keep, new_state, train_state), metrics

    def _finish(self, state: PLRState, train_state, buffer, training_set, key, metrics, trained: Rollout,
                cycles, replays, updated=True):
        metrics = reduce_over_devices({**metrics, **episode_metrics(trained)}, self.shard)
        metrics.update(self._buffer_stats(buffer))
        updated = jnp.asarray(updated, jnp.int32)
        metrics["cycles"] = jnp.asarray(cycles, jnp.int32)
        metrics["replay_fraction_sum"] = jnp.asarray(replays, jnp.float32)
        metrics["replay_fraction_count"] = jnp.asarray(cycles, jnp.float32)
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
