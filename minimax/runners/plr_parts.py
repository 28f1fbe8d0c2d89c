"""The pieces a PLR-family step is written in: functions over the runner (`plr_family.py:
PLRFamilyRunner`) as an explicit context, in the order a cycle uses them.

- **new levels**: `new_levels` (fresh from the generator, or unseen seeds of a finite training set)
  and `mark_stored` (a seed counts as seen once its level is stored);
- **the replay decision**: `buffer_ready`, `coin_replay` (Bernoulli(`replay_prob`) once ready) and
  `replay_or_count` (draw from the buffer, or count a cycle of new levels on the staleness clock);
- **play**: `play` locates the levels in the buffer, rolls them out (each env on one level for the
  whole rollout: an env whose episode ends restarts the same level) and makes the PPO batch;
- **train**: `train`, one PPO update where the cycle trains;
- **score and offer**: `score_and_offer` scores each played level (MaxMC against its stored max return)
  and offers the batch to the buffer in order;
- **mutate**: `mutate`, ACCEL's children of the replayed levels;
- **finish**: `group_metrics` / `played_groups` describe what was played, `finish` makes the next state.

Before a rollout the levels are looked up in the buffer: one already stored is played as that slot
(scored against its stored max return, then updated), a repeat within the batch is played but not
offered. The staleness clock counts as the release's: one per replay draw, N per cycle of new levels
(and N per parallel cycle before the buffer is ready); mutated levels and the new levels of a
parallel cycle that replays do not advance it.

Buffer operations on several devices: per-device buffers see this device's levels; a global
buffer sees every device's (gathered) and so stays identical on all devices.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from minimax.agents.level_updates import LevelUpdate, level_update_sq_norms
from minimax.agents.ppo import ppo_update
from minimax.core.metrics import level_metric_sums, mean_sums, reduce_over_devices
from minimax.curricula.level_buffer import (LevelBuffer, advance_clock, buffer_stats, fill_ratio, locate, offer,
                                            sample_replay)
from minimax.curricula.scores import SCORES, ScoreInputs, rollout_max_return, score_levels
from minimax.curricula.training_set import (TrainingSet, draw_new_seeds, level_from_seed, mark_seen,
                                            replay_probability)
from minimax.runners.branches import branch, cond_or_zeros
from minimax.runners.plr_family import PLRFamilyRunner as Run
from minimax.runners.plr_family import PLRState
from minimax.runners.rollout import Rollout, episode_metrics, play_levels, ppo_batch, regret_metrics, rollout_envs


class Played(NamedTuple):
    """One batch of levels as played: where the buffer holds them, the rollout and its PPO batch."""

    levels: object
    slots: jax.Array  # int32[n]: the buffer slot each level is played as (-1: not stored)
    repeat: jax.Array  # bool[n]: a level that repeats an earlier one of the batch (played, not offered)
    first: jax.Array  # int32[n]: the first of its repeats in the (gathered) batch, for `offer`
    rollout: Rollout
    batch: object  # PPOBatch
    optimal: jax.Array | None  # float32[n]: each level's optimal return, where the environment knows it
    optimal_steps: jax.Array | None = None  # int32[n]: its optimal episode's action count, where a score needs it


class Scored(NamedTuple):
    scores: jax.Array  # float32[n]
    best: jax.Array  # float32[n]: this rollout's best return (0 where no episode ended), unscaled
    valid: jax.Array  # bool[n]: the level finished an episode, so its score means something


# ---------------------------------------------------------------- new levels and the replay decision

def new_levels(run: Run, key, training_set: TrainingSet, n: int):
    """This device's `n` of the global batch's new levels: `(seeds, levels)`, fresh from the
    generator (`seeds` None), or unseen seeds of the (replicated) training set (`seeds`: the
    whole batch's, int32[n * D]; they count as seen once stored, see `mark_stored`)."""
    if run.cur.train_levels:
        seeds = draw_new_seeds(key, training_set, n * run.shard.size, mark=False)[1]
        return seeds, jax.vmap(lambda s: level_from_seed(run.generator, s))(run.shard.local(seeds, n))
    return None, jax.vmap(run.generator)(run.shard.env_keys(key, n))


def mark_stored(run: Run, training_set: TrainingSet, seeds, where) -> TrainingSet:
    """Seeds whose level the buffer now holds are seen; one whose rollout finished no episode
    (so never stored) stays unseen and is drawn again, never lost."""
    if seeds is None:
        return training_set
    return mark_seen(training_set, seeds, run.shard.gather(where >= 0))  # `where` is this device's part


def buffer_ready(run: Run, buffer: LevelBuffer):
    """Every device's buffer is `min_fill_ratio` full and holds a level."""
    return run.shard.all((fill_ratio(buffer) >= run.cur.min_fill_ratio) & buffer.filled.any())


def coin_replay(run: Run, key, buffer: LevelBuffer, training_set: TrainingSet):
    """Bernoulli(replay_prob) once the buffer is ready (never while one is empty); the key
    is shared, so every device decides the same."""
    p = run.replay.replay_prob
    if run.cur.train_levels:
        p = replay_probability(training_set, run.cur.replay_schedule, p)
    return buffer_ready(run, buffer) & jax.random.bernoulli(key, p)


def replay_or_count(run: Run, key, replay, buffer: LevelBuffer, n: int, fallback, p_score=None):
    """`(buffer, idx, levels)`: `n` levels drawn from the buffer if `replay` (the clock advances
    per draw), else `fallback` with slots -1 and the clock advanced by `n` (a cycle of new levels).
    `replay` may be a Python bool (`branches.branch`: only that side is built). `p_score` replaces the
    buffer's score distribution (`level_buffer.sample_replay`)."""
    def sample(buffer):
        if run.global_buffer:
            buffer, idx, levels = sample_replay(key, buffer, n * run.shard.size, run.buffer_cfg,
                                                run.cur.replay_with_replacement, p_score)
            return buffer, run.shard.local(idx, n), run.shard.local(levels, n)
        return sample_replay(run.shard.device_key(key), buffer, n, run.buffer_cfg, run.cur.replay_with_replacement,
                             p_score)

    def count(buffer):
        steps = n * run.shard.size if run.global_buffer else n  # a global buffer counts every device's
        return advance_clock(buffer, steps), jnp.full((n,), -1, jnp.int32), fallback

    return branch(replay, sample, count, buffer)


# ---------------------------------------------------------------- play, train, score and offer

def _gathered(run: Run, x):
    return run.shard.gather(x) if run.global_buffer else x


def _local(run: Run, x, n):
    return run.shard.local(x, n) if run.global_buffer else x


def play(run: Run, key, params, buffer: LevelBuffer, levels, replayed=None) -> Played:
    """T steps of one env per level, each env replaying its level. `replayed` (int32[n], -1 where not)
    gives the slots of levels drawn from the buffer; the others are found by the buffer's
    de-duplication (`locate`; a global buffer looks at every device's batch)."""
    n = jax.tree.leaves(levels)[0].shape[0]
    slots, repeat, first = where_stored(run, buffer, levels, replayed)
    rollout = play_levels(key, run.env, run.env_params, run.model.apply, params, run.model.initial_carry(n),
                          levels, run.num_steps, run.shard, run.ppo.unroll)
    return Played(levels, slots, repeat, first, rollout, ppo_batch(rollout, run.ppo), *optimal_facts(run, levels))


def where_stored(run: Run, buffer: LevelBuffer, levels, replayed=None):
    """`(slots, repeat, first)` of `Played` for a batch about to be played: replayed levels (`replayed` >= 0) are
    their slots, the others are found by the buffer's de-duplication."""
    n = jax.tree.leaves(levels)[0].shape[0]
    found = locate(buffer, _gathered(run, levels), run.buffer_cfg, run.level_identity)
    slots = _local(run, found.slots, n)
    if replayed is not None:
        slots = jnp.where(replayed >= 0, replayed, slots)
    return slots, _local(run, found.repeat, n), found.first


def optimal_facts(run: Run, levels):
    """`(optimal returns, optimal action counts)` of `Played`, each None where the environment or the score
    does not need it."""
    facts = None if run.level_facts is None else run.level_facts(levels, run.env_params)
    steps = facts[2] if facts is not None and len(facts) > 2 and SCORES[run.cur.score_function].needs_optimal_steps \
        else None
    return None if facts is None else facts[0], steps


def train(run: Run, key, train_state, batch, trainable):
    """One PPO update where `trainable`, else none (parameters kept). Its statistics are
    `<name>_sum` / `<name>_count` pairs weighted by `trainable`, so a logged chunk averages
    them over its gradient updates only (NaN for a chunk without one). A Python bool builds one side."""
    update = lambda: ppo_update(key, train_state, batch, run.ppo, run.shard)  # noqa: E731
    if run.shard.sharded and not isinstance(trainable, bool):
        # The update's collectives run on every device; its result is kept or not.
        new_state, metrics = update()
        new_state = jax.tree.map(lambda new, old: jnp.where(trainable, new, old), new_state, train_state)
    else:
        new_state, metrics = cond_or_zeros(trainable, lambda _: update(), train_state)
    w = jnp.asarray(trainable, jnp.float32)
    out = {}
    for name, value in metrics.items():
        out.update(mean_sums(name, w * value, w))
    return new_state, out


def score(run: Run, played: Played, buffer: LevelBuffer, player) -> Scored:
    """Each played level's score, with MaxMC's max return = max(stored max return, this rollout's best).
    The scores see rewards and returns times `--reward-scale`, the units of the value head; `best` is
    unscaled. `player`, the train state whose parameters played the rollout, is what a score of each level's
    own update (`pace`) needs: its parameters, and its optimiser's state for `--pace-step optimizer`."""
    rollout = played.rollout
    prior_max = jnp.where(played.slots >= 0, buffer.max_returns[jnp.maximum(played.slots, 0)], -jnp.inf)
    best = rollout_max_return(rollout.episode_returns, rollout.dones, jnp.full_like(prior_max, -jnp.inf))
    scale = run.ppo.reward_scale
    norms = None
    if SCORES[run.cur.score_function].needs_update_norms:
        c = run.cur
        norms = level_update_sq_norms(player.params, run.model.apply, played.batch, run.ppo, run.shard,
                                      LevelUpdate(c.pace_loss, c.pace_params, c.pace_step, c.pace_advantages),
                                      opt_state=player.opt_state)
    inputs = ScoreInputs(rewards=rollout.rewards * scale, values=rollout.values, dones=rollout.dones,
                         solved=rollout.solved, advantages=played.batch.advantages, policy=rollout.policy,
                         last_value=rollout.last_value, max_returns=jnp.maximum(prior_max, best) * scale,
                         episode_returns=rollout.episode_returns * scale,
                         optimal_returns=None if played.optimal is None else played.optimal * scale,
                         optimal_steps=played.optimal_steps,
                         gamma=run.ppo.gamma, gae_lambda=run.ppo.gae_lambda, update_sq_norms=norms,
                         reward_scale=scale)
    scores, valid = score_levels(run.cur.score_function, inputs)
    return Scored(scores, jnp.where(jnp.isfinite(best), best, 0.0), valid)


def score_and_offer(run: Run, buffer: LevelBuffer, played: Played, player, offered, mutations=None, rescore=None,
                    eviction_bonus=None):
    """Score the played levels and offer them, in order, to the buffer: `(buffer, where, scored)`, `where`
    (this device's part) the slot each level now holds (-1: not stored). A level is offered where it is
    `offered` and finished an episode; `mutations` (default 0) is each level's edit count; `rescore`
    (`scores float32[n] -> float32[n]`) a method's own change to the scores (TRACED adds its transition error and
    sums over episodes); `eviction_bonus` (float32[K]) is added to the stored scores where a newcomer's slot is
    chosen (TRACED's co-learnability credit: `level_buffer.offer`)."""
    scored = score(run, played, buffer, player)
    if rescore is not None:
        scored = scored._replace(scores=rescore(scored.scores))
    n = scored.scores.shape[0]
    mutations = jnp.zeros((n,), jnp.int32) if mutations is None else mutations
    args = _gathered(run, (played.levels, played.slots, scored.scores, scored.best, scored.valid & offered,
                           mutations))
    buffer, where = offer(buffer, *args[:5], run.buffer_cfg, args[5], run.level_identity, played.first,
                          eviction_bonus=eviction_bonus)
    return buffer, _local(run, where, n), scored


def write_slots(run: Run, per_slot, where, values):
    """`per_slot` [K] (a method's own array beside the buffer: CENIE's novelty, TRACED's bookkeeping) with
    each stored level's value at the slot `where` holds it (-1: not stored); a slot that several of the
    batch's levels map to takes the first one's, as the buffer's score does (`--replay-merge first`). A
    global buffer writes every device's levels, so the array stays the same on every device."""
    where, values = _gathered(run, (where, values))
    k, n = per_slot.shape[0], where.shape[0]
    first = jnp.full((k + 1,), n, jnp.int32).at[jnp.where(where >= 0, where, k)].min(jnp.arange(n, dtype=jnp.int32))
    first = first[:k]
    return jnp.where(first < n, jnp.asarray(values, per_slot.dtype)[jnp.minimum(first, n - 1)], per_slot)


# ---------------------------------------------------------------- mutate

def mutate(run: Run, key, levels, scores, parent_mutations):
    """Children of the replayed `levels`, one per env (`mutation_criterion`): batch mutates
    every replayed level; easy / hard the q lowest / highest by score, tiled over the envs
    (per device, q / D of its own). `(children, their edit counts)`."""
    n = run.n
    if run.mutation.mutation_criterion != "batch":
        q = run.mutation.mutation_subsample // run.shard.size
        _, chosen = jax.lax.top_k(scores if run.mutation.mutation_criterion == "hard" else -scores, q)
        pick = chosen[jnp.arange(n) % q]
        levels = jax.tree.map(lambda x: x[pick], levels)
        parent_mutations = parent_mutations[pick]
    children = jax.vmap(run.mutator)(run.shard.env_keys(key, n), levels)
    return children, parent_mutations + 1


def play_children(run: Run, key, buffer: LevelBuffer, levels, idx, scored: Scored, params):
    """ACCEL's second rollout of a replay cycle: the children of the replayed `levels` (slots `idx`), parents
    ranked by this cycle's scores where valid, else by their stored ones, played with the updated `params`.
    `(kids: Played, their edit counts)`; the caller scores and offers them its own way."""
    k_mut, k_roll = jax.random.split(key)
    parent_scores = jnp.where(scored.valid, scored.scores, buffer.scores[idx])
    children, mutations = mutate(run, k_mut, levels, parent_scores, buffer.mutations[idx])
    return play(run, k_roll, params, buffer, children), mutations


# ---------------------------------------------------------------- finish

def envs_part(played: Played, scored: Scored, start: int, stop: int) -> tuple[Played, Scored]:
    """Envs `start:stop` of a played batch (one group of a parallel cycle), for `group_metrics`."""
    cut = lambda x: None if x is None else jax.tree.map(lambda a: a[start:stop], x)  # noqa: E731
    part = Played(cut(played.levels), cut(played.slots), cut(played.repeat), played.first,
                  rollout_envs(played.rollout, start, stop), None, cut(played.optimal), cut(played.optimal_steps))
    return part, Scored(*(cut(x) for x in scored))


def group_metrics(run: Run, group: str, played: Played, scored: Scored, active=True) -> dict:
    """Sums (with their counts) describing one group of levels and how they were played; zero where
    not `active`. With the levels' optimal returns, the true regret of the group's completed episodes."""
    w = jnp.asarray(active, jnp.float32)
    ep = episode_metrics(played.rollout)
    out = {
        f"{group}/count": w * scored.scores.shape[0],
        **mean_sums(f"{group}/return", ep["episode_return_sum"], ep["episodes"], w),
        **mean_sums(f"{group}/solved_rate", ep["episode_solved_sum"], ep["episodes"], w),
        **mean_sums(f"{group}/score", jnp.where(scored.valid, scored.scores, 0.0).sum(), scored.valid.sum(), w),
    }
    if run.level_metrics is not None:
        out.update(level_metric_sums(group, jax.vmap(run.level_metrics)(played.levels), w))
    if played.optimal is not None:
        out.update(regret_metrics(group, played.optimal, played.rollout, w))
    return {k: jnp.asarray(v, jnp.float32) for k, v in out.items()}


def played_groups(run: Run, replay, played: Played, scored: Scored) -> dict:
    """The cycle's levels described as the `replay` group or the `new` one, the other group's sums
    zero. Where the side is known when traced, only its group is computed (a level's metrics can cost
    a search per level: AMaze's shortest path)."""
    if isinstance(replay, bool):
        name, other = ("replay", "new") if replay else ("new", "replay")
        out = group_metrics(run, name, played, scored)
        return {**out, **{other + k[len(name):]: jnp.zeros_like(v) for k, v in out.items()}}
    return {**group_metrics(run, "new", played, scored, ~replay),
            **group_metrics(run, "replay", played, scored, replay)}


def finish(run: Run, state: PLRState, train_state, buffer, training_set, key, metrics, rollout: Rollout,
           replayed, updated, env_steps):
    """The step's new state and metrics: the episodes of `rollout` (the cycle's student rollout) as the
    training statistics, the buffer's, and the counters."""
    metrics = reduce_over_devices({**metrics, **episode_metrics(rollout)}, run.shard)
    metrics.update(_buffer_stats(run, buffer))
    updated = jnp.asarray(updated, jnp.int32)
    metrics["cycles"] = jnp.ones((), jnp.int32)
    metrics["env_steps"] = jnp.asarray(env_steps, jnp.int32)
    metrics["replay_fraction_sum"] = jnp.asarray(replayed, jnp.float32)
    metrics["replay_fraction_count"] = jnp.ones((), jnp.float32)
    metrics["gradient_updates"] = updated
    state = PLRState(train_state=train_state, buffer=buffer, training_set=training_set, key=key,
                     updates=state.updates + updated)
    return state, metrics


def _buffer_stats(run: Run, buffer):
    stats = buffer_stats(buffer, run.buffer_cfg)
    if run.global_buffer or not run.shard.sharded:
        return stats
    # Per-device buffers: sizes add up, the maximum is the largest, the rest are averaged.
    return {k: run.shard.sum(v) if k == "buffer/size" else run.shard.max(v) if k == "buffer/max_score"
            else run.shard.mean(v) for k, v in stats.items()}


# ---------------------------------------------------------------- the replay coin's runner

class CycleKeys(NamedTuple):
    """The keys of one coin-replay cycle, split from `state.key` in this order (the order fixes the numbers
    a seed draws, so it never changes): the next state's key, the replay coin, new levels, the replay sample,
    the rollout, the PPO update, and one for the method's own step (ACCEL's mutation, CENIE's coverage,
    ReMiDi's consistency check; robust PLR leaves it unused)."""

    next: jax.Array
    coin: jax.Array
    new: jax.Array
    sample: jax.Array
    rollout: jax.Array
    update: jax.Array
    own: jax.Array


def cycle_keys(key) -> CycleKeys:
    return CycleKeys(*jax.random.split(key, len(CycleKeys._fields)))


class CoinReplayRunner(Run):
    """A PLR-family runner whose every cycle replays or plays new levels as a coin drawn from the state
    falls (plain and robust PLR, ACCEL): `step(state)` is `cycle(state, replay_decision(state))`, and a
    method writes `cycle(state, replay)`.

    Because the coin is a function of the state, the update budget (`budget.py`) can ask it first
    (`will_train`) and play `cycle(state, False)` until a seed replays, then `cycle(state, True)`, with
    `replay` a Python bool: a cycle of new levels is then built without the PPO update (and ACCEL's mutation
    rollout), so vmapped seeds never compute an update they skip (DESIGN, issue 55). A cycle draws the
    same keys either way, so it is the same cycle."""

    def decide_replay(self, key, buffer: LevelBuffer, training_set: TrainingSet):
        """The replay coin (`coin_replay`); a variant's replay rule overrides this (`examples/custom_curriculum.py`)."""
        return coin_replay(self, key, buffer, training_set)

    def replay_distribution(self, state: PLRState):
        """float32[K]: the score part P_S of the replay draw from `state` (PLR's staleness mix is applied on top),
        or None for the buffer's own (`--score-transform` of its scores: `level_buffer.score_weights`). A method that
        changes only how replays are drawn overrides this (CENIE, TRACED; `examples/custom_curriculum.py`)."""
        return None

    def replay_decision(self, state: PLRState):
        """Whether the next cycle from `state` replays (the cycle's `coin` key, `cycle_keys`)."""
        return self.decide_replay(cycle_keys(state.key).coin, state.buffer, state.training_set)

    @property
    def will_train(self):
        """`state -> bool` for the update budget, where a cycle trains exactly when it replays; None for a
        method whose every cycle trains (plain PLR: no unit needed) and for a subclass that writes its own
        `step`, which the budget's `cycle` would bypass."""
        own_step = type(self).step is not CoinReplayRunner.step
        return None if self.trains_every_cycle or own_step else self.replay_decision

    def step(self, state: PLRState):
        return self.cycle(state, self.replay_decision(state))

    def cycle(self, state: PLRState, replay):
        raise NotImplementedError(f"{type(self).__name__} must write cycle(state, replay)")
