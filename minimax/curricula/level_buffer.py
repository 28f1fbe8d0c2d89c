"""The PLR level buffer: a fixed-capacity store of levels with scores, as pure array code.

PLR keeps the levels it has seen with a score (how much the agent can still learn on each)
and replays them with probability `P_replay = (1 - rho) * P_S + rho * P_C` (PLR eq. 4) over
the filled slots: `P_S` from the scores by a transform with temperature beta (rank:
`h(S_i) = 1 / rank(S_i)`, `P_S ∝ h^(1/beta)`, eq. 1), `P_C` from staleness, the episodes
since a level was last sampled (`P_C ∝ c - C_i`, eq. 3).

Everything here is a pure function of a `LevelBuffer` value, branch-free with static shapes:
it runs inside the jitted step, vmaps over seeds and checkpoints with the runner state.
Levels are any pytree (stacked `[K, ...]`), not only mazes.

Choices the papers leave open, made explicit:
- Ranks are competition ranks: equal scores share the best rank and probability.
- The episode counter `c` (the clock of PLR eq. 3) counts levels handed out for play, each
  once: a replay draw adds one (`sample_replay`), a batch of new levels adds its size
  (`insert`'s `played`, or `advance_clock` when they are handed out before the replays of
  the same rollout). A drawn level's timestamp is the clock at its draw; a stored newcomer's
  is the clock after its batch, so both start at staleness 0.
- Replay batches are drawn one level at a time, as in both reference samplers: each draw
  refreshes the drawn level's timestamp before the next draw of the same batch.
- With nothing to prefer (all scores zero under `power`, zero staleness), a transform
  falls back to uniform over the filled slots; an empty buffer gives uniform over all
  slots (runners never replay from it: see `replay_decision`).
- A level already in the buffer is not stored twice: offering it again updates the
  stored score (by the same rule as a replay), its max return and its timestamp.
- Replacement keeps the K highest-scoring levels of buffer ∪ newcomers: newcomers fill
  empty slots first, then displace the lowest scores they beat (ties keep the stored).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import tyro
from flax import struct

from minimax.options import check

ScoreTransform = Literal["rank", "power", "softmax", "eps_greedy", "top_k"]
StalenessTransform = Literal["power", "rank", "softmax"]
SCORE_TRANSFORMS: tuple[str, ...] = typing.get_args(ScoreTransform)
STALENESS_TRANSFORMS: tuple[str, ...] = typing.get_args(StalenessTransform)


@dataclasses.dataclass(frozen=True)
class BufferConfig:
    """Static settings of a level buffer (hashable, so it can close over jitted code). Each field is
    also the training command's option (`capacity` is `--buffer-size`, `eps` `--greedy-eps`)."""

    capacity: Annotated[int, tyro.conf.arg(name="buffer_size")] = 4000
    """Level buffer capacity (PLR family)."""
    score_transform: ScoreTransform = "rank"
    """Score-to-weight transform of the replay distribution (PLR family)."""
    temperature: float = 0.3
    """Temperature beta of the score transform."""
    staleness_coef: float = 0.3
    """Weight rho of the staleness distribution in the replay distribution."""
    staleness_transform: StalenessTransform = "power"
    """Staleness-to-weight transform (power with temperature 1 is PLR eq. 3)."""
    staleness_temperature: float = 1.0
    """Temperature of the staleness transform."""
    score_alpha: float = 1.0
    """Score update on replay: new = (1 - alpha) * old + alpha * observed (1 replaces)."""
    eps: Annotated[float, tyro.conf.arg(name="greedy_eps")] = 0.05
    """Exploration mass of --score-transform eps_greedy."""
    top_k: int = 32
    """Levels sampled uniformly by --score-transform top_k."""
    unique_levels: bool = True
    """Keep only distinct levels in the buffer (a duplicate updates the stored entry)."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.integer("capacity", 1)
        c.integer("top_k", 1)
        c.positive("temperature", "staleness_temperature")
        c.unit("staleness_coef", "eps")
        if not 0 < self.score_alpha <= 1:
            c.add(f"{c.flag('score_alpha')} must be in (0, 1], got {self.score_alpha!r}")


@struct.dataclass
class LevelBuffer:
    levels: Any              # pytree of [K, ...]
    scores: jax.Array        # float32[K]
    max_returns: jax.Array   # float32[K]: best episode return ever seen on the level (MaxMC)
    last_sampled: jax.Array  # int32[K]: episode count when the level was last handed out
    filled: jax.Array        # bool[K]
    mutations: jax.Array     # int32[K]: rounds of mutation from a generated level (ACCEL)
    hashes: jax.Array        # uint32[K, 2]: level fingerprints for de-duplication
    episode_count: jax.Array  # int32[]: levels handed out so far (the `c` of PLR eq. 3)

    @property
    def capacity(self) -> int:
        return self.scores.shape[-1]


def init_buffer(example_level, capacity: int) -> LevelBuffer:
    """An empty buffer whose slots hold copies of `example_level` (a valid placeholder, so a
    level read from an unfilled slot is never garbage)."""
    k = int(capacity)
    levels = jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (k,) + jnp.shape(x)), example_level)
    return LevelBuffer(levels=levels, scores=jnp.zeros((k,), jnp.float32),
                       max_returns=jnp.zeros((k,), jnp.float32), last_sampled=jnp.zeros((k,), jnp.int32),
                       filled=jnp.zeros((k,), bool), mutations=jnp.zeros((k,), jnp.int32),
                       hashes=jnp.zeros((k, 2), jnp.uint32), episode_count=jnp.zeros((), jnp.int32))


# --------------------------------------------------------------------------- fingerprints


def _level_words(level) -> jax.Array:
    """One level as a flat int32 vector (bools and ints as values, floats by their bits)."""
    words = []
    for leaf in jax.tree.leaves(level):
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            leaf = jax.lax.bitcast_convert_type(leaf.astype(jnp.float32), jnp.int32)
        words.append(leaf.astype(jnp.int32).reshape(-1))
    return jnp.concatenate(words)


def level_hash(level) -> jax.Array:
    """uint32[2]: two random linear fingerprints mod 2^32 of one level. Different levels
    collide with probability about 2^-64; equal levels always agree. The multipliers are
    fixed constants, so fingerprints are comparable across runs."""
    words = _level_words(level).astype(jnp.uint32)
    mult = np.random.default_rng(20211108).integers(1, 2**32, size=(words.shape[0], 2), dtype=np.uint64)
    return jnp.sum(words[:, None] * jnp.asarray(mult.astype(np.uint32) | 1), axis=0, dtype=jnp.uint32)


def levels_equal(a, b) -> jax.Array:
    """bool: two single levels are identical in every field."""
    return jnp.all(jnp.stack([jnp.all(x == y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))]))


# --------------------------------------------------------------------------- replay distribution


def competition_rank(values: jax.Array, mask: jax.Array) -> jax.Array:
    """1 + the number of masked entries strictly greater (ties share the best rank)."""
    k = values.shape[0]
    key = jnp.where(mask, values, -jnp.inf)
    ascending = jnp.sort(key)
    return (k - jnp.searchsorted(ascending, key, side="right") + 1).astype(jnp.float32)


def _normalize(weights: jax.Array, mask: jax.Array) -> jax.Array:
    """Weights over `mask` summing to 1; uniform over `mask` when they sum to 0, uniform
    over everything when `mask` is empty."""
    weights = jnp.where(mask, weights, 0.0)
    total = weights.sum()
    n = mask.sum()
    uniform = jnp.where(n > 0, mask / jnp.maximum(n, 1), jnp.full_like(weights, 1.0 / weights.shape[0]))
    return jnp.where(total > 0, weights / jnp.where(total > 0, total, 1.0), uniform)


def transform_weights(values: jax.Array, mask: jax.Array, transform: str, temperature: float,
                      eps: float = 0.05, top_k: int = 1) -> jax.Array:
    """A distribution over the masked entries from `values` (higher = more likely).

    rank:       P ∝ (1 / rank)^(1/T)                (PLR eq. 1, competition ranks)
    power:      P ∝ max(v, 0)^(1/T)                 (computed as (v / max v)^(1/T))
    softmax:    P ∝ exp(v / T)
    eps_greedy: (1 - eps) spread over the maxima, eps uniform over all masked entries
    top_k:      uniform over the entries ranked <= top_k (ties at the boundary included)
    """
    values = jnp.asarray(values, jnp.float32)
    inv_t = 1.0 / temperature
    if transform == "rank":
        weights = competition_rank(values, mask) ** -inv_t
    elif transform == "power":
        v = jnp.where(mask, jnp.maximum(values, 0.0), 0.0)
        top = v.max()
        weights = (v / jnp.where(top > 0, top, 1.0)) ** inv_t
    elif transform == "softmax":
        top = jnp.where(mask, values, -jnp.inf).max()
        weights = jnp.exp((values - jnp.where(jnp.isfinite(top), top, 0.0)) * inv_t)
    elif transform == "eps_greedy":
        is_max = mask & (values == jnp.where(mask, values, -jnp.inf).max())
        weights = (1 - eps) * _normalize(is_max.astype(jnp.float32), mask) + eps * _normalize(
            jnp.zeros_like(values), mask)
    elif transform == "top_k":
        weights = (competition_rank(values, mask) <= top_k).astype(jnp.float32)
    else:
        raise ValueError(f"unknown score transform {transform!r}; choose from {', '.join(SCORE_TRANSFORMS)}")
    return _normalize(weights, mask)


def staleness(buffer: LevelBuffer) -> jax.Array:
    """int32[K]: levels handed out since each level was last sampled (0 for empty slots)."""
    return jnp.where(buffer.filled, buffer.episode_count - buffer.last_sampled, 0)


def score_weights(buffer: LevelBuffer, cfg: BufferConfig) -> jax.Array:
    """P_S over the filled slots."""
    return transform_weights(buffer.scores, buffer.filled, cfg.score_transform, cfg.temperature, cfg.eps,
                             cfg.top_k)


def staleness_weights(buffer: LevelBuffer, cfg: BufferConfig) -> jax.Array:
    """P_C over the filled slots."""
    return transform_weights(staleness(buffer).astype(jnp.float32), buffer.filled, cfg.staleness_transform,
                             cfg.staleness_temperature)


def replay_weights(buffer: LevelBuffer, cfg: BufferConfig) -> jax.Array:
    """float32[K]: P_replay = (1 - rho) P_S + rho P_C, zero on empty slots (PLR eq. 4)."""
    p = score_weights(buffer, cfg)
    if cfg.staleness_coef > 0:
        p = (1 - cfg.staleness_coef) * p + cfg.staleness_coef * staleness_weights(buffer, cfg)
    return p


# --------------------------------------------------------------------------- sampling


def sample_replay(key, buffer: LevelBuffer, n: int, cfg: BufferConfig, replace: bool = True):
    """Draw `n` slots from P_replay, one at a time: `(buffer, indices int32[n], levels [n, ...])`.

    Each draw sees the buffer as the earlier draws left it: the clock advances by one and the
    drawn level's timestamp becomes the new clock, so its staleness (and its share of P_C) is
    0 for the rest of the batch (the reference samplers' sequential draws). Scores do not
    change within a batch, so P_S is computed once. With `replace=False` a drawn slot is
    excluded from later draws (the remaining weights renormalised; uniform over the remaining
    filled slots when none is left with positive weight).
    """
    k = buffer.capacity
    p_score = score_weights(buffer, cfg)
    rho = cfg.staleness_coef

    def draw(carry, key):
        last, count, taken = carry
        p = p_score
        if rho > 0:
            stale = buffer.replace(last_sampled=last, episode_count=count)
            p = (1 - rho) * p + rho * staleness_weights(stale, cfg)
        if not replace:
            p = _normalize(jnp.where(taken, 0.0, p), buffer.filled & ~taken)
        i = jax.random.choice(key, k, (), p=p).astype(jnp.int32)
        count = count + 1
        return (last.at[i].set(count), count, taken.at[i].set(True)), i

    (last, count, _), idx = jax.lax.scan(draw, (buffer.last_sampled, buffer.episode_count, jnp.zeros((k,), bool)),
                                         jax.random.split(key, n))
    buffer = buffer.replace(last_sampled=last, episode_count=count)
    return buffer, idx, jax.tree.map(lambda x: x[idx], buffer.levels)


def advance_clock(buffer: LevelBuffer, played) -> LevelBuffer:
    """Count `played` levels handed out for play (new levels) without storing anything."""
    return buffer.replace(episode_count=buffer.episode_count + jnp.asarray(played, jnp.int32))


def fill_ratio(buffer: LevelBuffer) -> jax.Array:
    return buffer.filled.mean()


def replay_decision(key, buffer: LevelBuffer, replay_prob, min_fill_ratio: float) -> jax.Array:
    """bool: replay from the buffer (Bernoulli(replay_prob)) once it is at least
    `min_fill_ratio` full, and never while it is empty."""
    ready = (fill_ratio(buffer) >= min_fill_ratio) & buffer.filled.any()
    return ready & jax.random.bernoulli(key, replay_prob)


# --------------------------------------------------------------------------- updates


def _blend(old, observed, alpha: float):
    return observed if alpha == 1.0 else (1 - alpha) * old + alpha * observed


def update_scores(buffer: LevelBuffer, idx, scores, max_returns, valid, cfg: BufferConfig) -> LevelBuffer:
    """Fold the scores of a replay rollout into the buffer.

    `idx[n]` are the replayed slots, `scores[n]`, `max_returns[n]` what the rollout measured
    and `valid[n]` whether it measured anything (a completed episode). A slot replayed by
    several envs gets the mean of their scores; then `new = (1 - alpha) old + alpha mean`.
    The max return only ever grows.
    """
    k = buffer.capacity
    ok = valid & jnp.isfinite(scores)
    total = jax.ops.segment_sum(jnp.where(ok, scores, 0.0), idx, k)
    count = jax.ops.segment_sum(ok.astype(jnp.float32), idx, k)
    observed = total / jnp.maximum(count, 1.0)
    hit = (count > 0) & buffer.filled
    new_scores = jnp.where(hit, _blend(buffer.scores, observed, cfg.score_alpha), buffer.scores)
    best = jax.ops.segment_max(jnp.where(ok, max_returns, -jnp.inf), idx, k)
    new_max = jnp.where(hit, jnp.maximum(buffer.max_returns, best), buffer.max_returns)
    return buffer.replace(scores=new_scores, max_returns=new_max)


@struct.dataclass
class InsertInfo:
    slots: jax.Array       # int32[n]: where each offered level (or its stored copy) now lives, -1 if nowhere
    inserted: jax.Array    # bool[n]: stored as a new entry
    duplicate: jax.Array   # bool[n]: already in the buffer or earlier in the batch


def insert(buffer: LevelBuffer, levels, scores, max_returns, valid, cfg: BufferConfig, mutations=None,
           played=None):
    """Offer a batch of `n` played levels: `(buffer, InsertInfo)`.

    The clock advances by `played`, the number of levels this batch handed out for play
    (default `n`: a batch of new levels, each played once). Pass 0 for levels already counted
    (replays are counted by `sample_replay`, new levels handed out earlier by `advance_clock`).

    Levels with `valid` False (no completed episode, hence no score) are skipped. With
    `cfg.unique_levels`, a level equal to an earlier one in the batch is dropped and one
    already in the buffer updates the stored entry (score by `update_scores`' rule, max
    return, timestamp). The rest fill empty slots first, then replace the lowest-scoring
    levels they outscore, so the buffer keeps the best K of old and new.
    """
    n = scores.shape[0]
    k = buffer.capacity
    mutations = jnp.zeros((n,), jnp.int32) if mutations is None else mutations
    ok = valid & jnp.isfinite(scores)
    count = buffer.episode_count + (n if played is None else jnp.asarray(played, jnp.int32))

    if cfg.unique_levels:
        hashes = jax.vmap(level_hash)(levels)                                    # [n, 2]
        same = jnp.all(hashes[:, None] == hashes[None, :], -1) & ok[None, :]     # [i, j]
        earlier = same & (jnp.arange(n)[None, :] < jnp.arange(n)[:, None])
        first = jnp.argmax(earlier, axis=1)
        in_batch = earlier.any(1) & jax.vmap(levels_equal)(levels, jax.tree.map(lambda x: x[first], levels))
        stored = jnp.all(hashes[:, None] == buffer.hashes[None, :], -1) & buffer.filled[None, :]  # [n, K]
        slot = jnp.argmax(stored, axis=1)
        in_buffer = (stored.any(1) & jax.vmap(levels_equal)(levels, jax.tree.map(lambda x: x[slot], buffer.levels))
                     & ok & ~in_batch)
        # Duplicates of stored levels: update them in place (at most one offer per slot).
        dup_slot = jnp.where(in_buffer, slot, k)
        old = buffer.scores[slot]
        buffer = buffer.replace(
            scores=buffer.scores.at[dup_slot].set(_blend(old, scores, cfg.score_alpha), mode="drop"),
            max_returns=buffer.max_returns.at[dup_slot].set(
                jnp.maximum(buffer.max_returns[slot], max_returns), mode="drop"),
            last_sampled=buffer.last_sampled.at[dup_slot].set(count, mode="drop"))
    else:
        hashes = jnp.zeros((n, 2), jnp.uint32)
        in_batch = in_buffer = jnp.zeros((n,), bool)
        first = slot = jnp.zeros((n,), jnp.int32)

    # Newcomers, best first, against the slots that are empty or lowest-scoring, worst first.
    m = min(n, k)
    newcomer = ok & ~in_batch & ~in_buffer
    cand_score, order = jax.lax.top_k(jnp.where(newcomer, scores, -jnp.inf), m)
    slot_key, slots = jax.lax.top_k(-jnp.where(buffer.filled, buffer.scores, -jnp.inf), m)
    take = newcomer[order] & (~buffer.filled[slots] | (cand_score > -slot_key))
    dest = jnp.where(take, slots, k)

    def put(stored, new):
        return stored.at[dest].set(new[order], mode="drop")

    buffer = buffer.replace(
        levels=jax.tree.map(put, buffer.levels, levels),
        scores=put(buffer.scores, scores.astype(jnp.float32)),
        max_returns=put(buffer.max_returns, max_returns.astype(jnp.float32)),
        last_sampled=put(buffer.last_sampled, jnp.full((n,), count, jnp.int32)),
        filled=put(buffer.filled, jnp.ones((n,), bool)),
        mutations=put(buffer.mutations, mutations.astype(jnp.int32)),
        hashes=put(buffer.hashes, hashes),
        episode_count=count)

    inserted = jnp.zeros((n,), bool).at[order].set(take)
    where_new = jnp.full((n,), -1, jnp.int32).at[order].set(jnp.where(take, slots, -1))
    # A stored duplicate may have been displaced by a better newcomer of this same batch.
    replaced = jnp.zeros((k,), bool).at[dest].set(True, mode="drop")
    own = jnp.where(in_buffer, jnp.where(replaced[slot], -1, slot), where_new)
    slots_out = jnp.where(in_batch, own[first], own).astype(jnp.int32)  # repeats: where the first copy is
    return buffer, InsertInfo(slots=slots_out, inserted=inserted, duplicate=in_batch | in_buffer)


# --------------------------------------------------------------------------- statistics


def buffer_stats(buffer: LevelBuffer, cfg: BufferConfig) -> dict:
    """Scalars for the logs: size, fill, score statistics, weighted score, staleness, mutations."""
    f = buffer.filled
    n = f.sum()
    denom = jnp.maximum(n, 1)
    p = replay_weights(buffer, cfg)
    mean = lambda x: jnp.where(f, x, 0).sum() / denom  # noqa: E731
    return {
        "buffer/size": n.astype(jnp.int32),
        "buffer/fill_ratio": f.mean(),
        "buffer/mean_score": mean(buffer.scores),
        "buffer/max_score": jnp.where(n > 0, jnp.where(f, buffer.scores, -jnp.inf).max(), 0.0),
        "buffer/weighted_score": jnp.where(n > 0, (p * buffer.scores).sum(), 0.0),
        "buffer/mean_staleness": mean(staleness(buffer).astype(jnp.float32)),
        "buffer/mean_mutations": mean(buffer.mutations.astype(jnp.float32)),
        "buffer/mean_max_return": mean(buffer.max_returns),
    }
