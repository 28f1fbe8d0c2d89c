"""The PLR level buffer: a fixed-capacity store of levels with scores, as pure array code.

PLR keeps the levels it has seen with a score (how much the agent can still learn on each)
and replays them with probability `P_replay = (1 - rho) * P_S + rho * P_C` (PLR eq. 4) over
the filled slots: `P_S` from the scores by a transform with temperature beta (rank:
`h(S_i) = 1 / rank(S_i)`, `P_S ∝ h^(1/beta)`, eq. 1), `P_C` from staleness, the levels handed
out since a level was last sampled (`P_C ∝ c - C_i`, eq. 3).

Everything here is a pure function of a `LevelBuffer` value, branch-free with static shapes:
it runs inside the jitted step, vmaps over seeds and checkpoints with the runner state.
Levels are any pytree (stacked `[K, ...]`), not only mazes.

Where the papers leave a choice open, the default is what the minimax release
(`util/rl/plr.py`, the code behind the report's tables) does; the alternatives are options:
- **Which slot a newcomer takes** (`--buffer-replacement`): `release` offers a batch one level
  at a time; a newcomer takes the first empty slot, else the slot of lowest `P_replay` (the
  first on ties), and only if its score is at least that slot's; it inherits the evicted
  slot's staleness (a level entering an empty slot starts at 0). `jaxued` is the same with a
  strictly higher score required and staleness 0 for every newcomer (jaxued's LevelSampler).
  `lowest_score` replaces the lowest score, so the buffer keeps the K best of old and new.
- **Ranks** (`--rank-ties`): `ordinal` (the release and jaxued: `argsort`, so equal scores
  get consecutive ranks, the lower slot first) or `competition` (equal scores share the best).
- **A slot replayed by several envs of one batch** (`--replay-merge`): `first` (the release,
  whose de-duplication masks every later copy of a level in a batch), `last` (a plain
  sequential update) or `mean` of their scores.
- **MaxMC's stored maximum** (`--stored-max-return`): `rollout` (the release: a level is
  scored against max(stored, this rollout) but stores this rollout's maximum) or `running`
  (the best return ever seen, as jaxued and the PLR paper describe it).
- With nothing stale (all staleness 0), `P_C` is `P_S` (the release); an empty buffer gives
  uniform over all slots (runners never replay from it: `runners/plr_parts.py: buffer_ready`).
The staleness clock `c` advances by one per replay draw (each draw refreshes the drawn
level's timestamp before the next draw of the same batch, as both reference samplers do)
and by the batch size per cycle of new levels (`advance_clock`), as the release counts.
De-duplication (`--unique-levels`) happens before a rollout (`locate`): a level already
stored is played as that slot (scored against its stored max return, then updated, never
stored twice) and a later copy within one batch is not offered at all.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Annotated, Any, Callable, Literal

import jax
import jax.numpy as jnp
import tyro
from flax import struct

from minimax.curricula.fingerprints import level_hash, levels_equal
from minimax.curricula.weights import normalize as _normalize
from minimax.curricula.weights import transform_weights
from minimax.core.options import Traced, check

ScoreTransform = Literal["rank", "power", "softmax", "eps_greedy", "top_k"]  # weights.SCORE_TRANSFORMS
Replacement = Literal["release", "jaxued", "lowest_score"]
RankTies = Literal["ordinal", "competition"]
ReplayMerge = Literal["first", "last", "mean"]
StoredMaxReturn = Literal["rollout", "running"]
DedupeBy = Literal["layout", "exact"]
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
    temperature: Traced[float] = 0.3
    """Temperature beta of the score transform."""
    staleness_coef: Traced[float] = 0.3
    """Weight rho of the staleness distribution in the replay distribution."""
    staleness_transform: StalenessTransform = "power"
    """Staleness-to-weight transform (power with temperature 1 is PLR eq. 3)."""
    staleness_temperature: Traced[float] = 1.0
    """Temperature of the staleness transform."""
    score_alpha: Traced[float] = 1.0
    """Score update on replay: new = (1 - alpha) * old + alpha * observed (1 replaces)."""
    eps: Traced[Annotated[float, tyro.conf.arg(name="greedy_eps")]] = 0.05
    """Exploration mass of --score-transform eps_greedy."""
    top_k: int = 32
    """Levels sampled uniformly by --score-transform top_k."""
    unique_levels: bool = True
    """Keep only distinct levels in the buffer (a level already stored is played and updated as that entry)."""
    replacement: Annotated[Replacement, tyro.conf.arg(name="buffer_replacement")] = "release"
    """Which slot a newcomer takes: release (lowest replay probability, if its score is >= that slot's; inherits
    its staleness), jaxued (same slot, strictly higher score, staleness 0) or lowest_score (keep the K best)."""
    rank_ties: RankTies = "ordinal"
    """Ranks of equal scores under --score-transform rank: ordinal (the release, jaxued) or competition (shared)."""
    replay_merge: ReplayMerge = "first"
    """A slot replayed by several envs of one batch takes the first env's score (the release), the last, or the mean."""
    stored_max_return: StoredMaxReturn = "rollout"
    """MaxMC: store each rollout's best return (the release) or the best ever seen (running; jaxued, the PLR paper)."""
    dedupe_by: DedupeBy = "layout"
    """Level identity for --unique-levels: layout (the environment's comparator; AMaze: walls, goal and agent
    position, not its direction, as the release) or exact (every field)."""

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


# --------------------------------------------------------------------------- replay distribution


def staleness(buffer: LevelBuffer) -> jax.Array:
    """int32[K]: levels handed out since each level was last sampled (0 for empty slots)."""
    return jnp.where(buffer.filled, buffer.episode_count - buffer.last_sampled, 0)


def score_weights(buffer: LevelBuffer, cfg: BufferConfig) -> jax.Array:
    """P_S over the filled slots."""
    return transform_weights(buffer.scores, buffer.filled, cfg.score_transform, cfg.temperature, cfg.eps,
                             cfg.top_k, cfg.rank_ties)


def staleness_weights(buffer: LevelBuffer, cfg: BufferConfig) -> jax.Array:
    """P_C over the filled slots."""
    return transform_weights(staleness(buffer).astype(jnp.float32), buffer.filled, cfg.staleness_transform,
                             cfg.staleness_temperature)


def _mix(p_score: jax.Array, buffer: LevelBuffer, cfg: BufferConfig) -> jax.Array:
    """(1 - rho) P_S + rho P_C, with P_C = P_S while no filled level is stale (the release)."""
    if isinstance(cfg.staleness_coef, (int, float)) and cfg.staleness_coef == 0:  # a traced rho mixes
        return p_score
    any_stale = (staleness(buffer) > 0).any()
    p_stale = jnp.where(any_stale, staleness_weights(buffer, cfg), p_score)
    return (1 - cfg.staleness_coef) * p_score + cfg.staleness_coef * p_stale


def replay_weights(buffer: LevelBuffer, cfg: BufferConfig) -> jax.Array:
    """float32[K]: P_replay = (1 - rho) P_S + rho P_C, zero on empty slots (PLR eq. 4)."""
    return _mix(score_weights(buffer, cfg), buffer, cfg)


# --------------------------------------------------------------------------- sampling


def sample_replay(key, buffer: LevelBuffer, n: int, cfg: BufferConfig, replace: bool = True, p_score=None):
    """Draw `n` slots from P_replay, one at a time: `(buffer, indices int32[n], levels [n, ...])`.

    Each draw sees the buffer as the earlier draws left it: the clock advances by one and the
    drawn level's timestamp becomes the new clock, so its staleness (and its share of P_C) is
    0 for the rest of the batch (the reference samplers' sequential draws). Scores do not
    change within a batch, so P_S is computed once. With `replace=False` a drawn slot is
    excluded from later draws (the remaining weights renormalised; uniform over the remaining
    filled slots when none is left with positive weight). `p_score` replaces P_S (CENIE's mix of regret
    and novelty, `novelty.py`).
    """
    k = buffer.capacity
    p_score = score_weights(buffer, cfg) if p_score is None else p_score

    def draw(carry, key):
        last, count, taken = carry
        p = _mix(p_score, buffer.replace(last_sampled=last, episode_count=count), cfg)
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


# --------------------------------------------------------------------------- updates


def _blend(old, observed, alpha):
    """`(1 - alpha) old + alpha observed`, exactly `observed` at alpha 1 (a constant or a traced alpha)."""
    return jnp.where(alpha == 1.0, observed, (1 - alpha) * old + alpha * observed)


@struct.dataclass
class Located:
    """Where the levels of a batch already are, found before they are played (`locate`)."""

    slots: jax.Array    # int32[n]: the slot holding an equal level, -1 if none
    repeat: jax.Array   # bool[n]: an equal level comes earlier in the batch (not offered)
    first: jax.Array    # int32[n]: the batch index of the first equal level (itself if none earlier)


def _identity(cfg: BufferConfig, identity: Callable | None) -> Callable:
    """The part of a level that makes it the same level: the environment's `identity` under
    `dedupe_by == "layout"`, else (or without one) the whole level."""
    return identity if identity is not None and cfg.dedupe_by == "layout" else (lambda level: level)


def locate(buffer: LevelBuffer, levels, cfg: BufferConfig, identity: Callable | None = None) -> Located:
    """Find a batch of `n` levels in the buffer and in itself before they are played (the
    release's `dedupe_levels`): a level equal to a stored one is played as that slot (scored
    against its stored max return, then updated, not stored again), and a later copy of a level
    within the batch is not offered. Without `cfg.unique_levels` nothing is found."""
    n = jax.tree.leaves(levels)[0].shape[0]
    idx = jnp.arange(n, dtype=jnp.int32)
    if not cfg.unique_levels:
        return Located(slots=jnp.full((n,), -1, jnp.int32), repeat=jnp.zeros((n,), bool), first=idx)
    key = _identity(cfg, identity)
    ids = jax.vmap(key)(levels)
    hashes = jax.vmap(level_hash)(ids)
    earlier = jnp.all(hashes[:, None] == hashes[None, :], -1) & (idx[None, :] < idx[:, None])   # [i, j]
    first = jnp.argmax(earlier, axis=1).astype(jnp.int32)
    repeat = earlier.any(1) & jax.vmap(levels_equal)(ids, jax.tree.map(lambda x: x[first], ids))
    stored = jnp.all(hashes[:, None] == buffer.hashes[None, :], -1) & buffer.filled[None, :]  # [n, K]
    slot = jnp.argmax(stored, axis=1).astype(jnp.int32)
    found = stored.any(1) & jax.vmap(levels_equal)(ids, jax.vmap(key)(jax.tree.map(lambda x: x[slot], buffer.levels)))
    return Located(slots=jnp.where(found, slot, -1), repeat=repeat, first=jnp.where(repeat, first, idx))


def _merge_offers(slots, scores, max_returns, ok, rule: str):
    """One offer per stored slot: `(apply bool[n], scores, max_returns)`, the merged values at
    the offer that is applied (`rule`: first / last / mean, see `BufferConfig.replay_merge`)."""
    n = slots.shape[0]
    idx = jnp.arange(n)
    same = (slots[:, None] >= 0) & (slots[:, None] == slots[None, :])                  # [i, j]
    if rule == "first":  # the first offer decides, valid or not (the release masks later copies)
        return ok & ~(same & (idx[None, :] < idx[:, None])).any(1), scores, max_returns
    if rule == "last":
        return ok & ~(same & ok[None, :] & (idx[None, :] > idx[:, None])).any(1), scores, max_returns
    if rule != "mean":
        raise ValueError(f"unknown replay merge {rule!r}; choose from {', '.join(typing.get_args(ReplayMerge))}")
    w = same & ok[None, :]
    mean = jnp.where(w, scores[None, :], 0.0).sum(1) / jnp.maximum(w.sum(1), 1)
    best = jnp.where(w, max_returns[None, :], -jnp.inf).max(1)
    return ok & ~(w & (idx[None, :] < idx[:, None])).any(1), mean, best


def _target_slot(buf: LevelBuffer, cfg: BufferConfig):
    """Where a newcomer goes: the first empty slot, else the lowest-scored (`lowest_score`) or
    lowest replay-weighted entry. Both are computed and one is selected, not branched on: a `lax.cond`
    here is a host round trip per offered level on a GPU at one seed (under `vmap` it is a select anyway),
    and the buffer is full for all but its first cycles, where the lowest entry is needed regardless."""
    if cfg.replacement == "lowest_score":
        lowest = jnp.argmin(jnp.where(buf.filled, buf.scores, jnp.inf))
    else:
        lowest = jnp.argmin(jnp.where(buf.filled, replay_weights(buf, cfg), jnp.inf))
    return jnp.where((~buf.filled).any(), jnp.argmax(~buf.filled), lowest).astype(jnp.int32)


def _offer_one(carry, x, cfg: BufferConfig, bonus, mutations0, k: int):
    """One level of `offer`'s batch: `((buffer, replaced[, lapsed]), the slot that holds it or -1)`. The
    release: >= the target's score, the slot's staleness inherited, a displaced stored level competes again;
    jaxued and lowest_score: a strictly higher score, staleness 0."""
    release = cfg.replacement == "release"
    buf, replaced, *lapsed = carry
    level, h, slot, score, mret, mut, upd, new, was_stored = x
    s = jnp.maximum(slot, 0)
    taken = replaced[s]
    back = upd & taken
    upd = upd & ~taken
    credited = buf if bonus is None else buf.replace(scores=buf.scores + jnp.where(lapsed[0], 0.0, bonus))
    target = _target_slot(credited, cfg)
    if release:
        # The release: a stored level whose slot a newcomer took earlier in this batch competes for
        # that slot again, as a newcomer would (its own mutation count and staleness come with it).
        target = jnp.where(back, s, target)
        new = new | back
        mut = jnp.where(back, mutations0[s], mut)
    was_empty = ~buf.filled[target]
    beats = score >= buf.scores[target] if release else score > buf.scores[target]
    ins = new & (was_empty | beats)
    dest = jnp.where(upd, s, jnp.where(ins, target, k))
    put_new = jnp.where(ins, target, k)
    new_max = mret if cfg.stored_max_return == "rollout" else jnp.maximum(buf.max_returns[s], mret)
    buf = buf.replace(
        levels=jax.tree.map(lambda x, y: x.at[put_new].set(y, mode="drop"), buf.levels, level),
        scores=buf.scores.at[dest].set(jnp.where(upd, _blend(buf.scores[s], score, cfg.score_alpha), score),
                                       mode="drop"),
        max_returns=buf.max_returns.at[dest].set(jnp.where(upd, new_max, mret), mode="drop"),
        last_sampled=buf.last_sampled.at[jnp.where(ins & (was_empty | (not release)), target, k)].set(
            buf.episode_count, mode="drop"),
        filled=buf.filled.at[put_new].set(True, mode="drop"),
        mutations=buf.mutations.at[put_new].set(mut, mode="drop"),
        hashes=buf.hashes.at[put_new].set(h, mode="drop"))
    lapsed = [x.at[dest].set(True, mode="drop") for x in lapsed]
    return ((buf, replaced.at[put_new].set(True, mode="drop"), *lapsed),
            jnp.where(was_stored, s, jnp.where(ins, target, -1)))


def offer(buffer: LevelBuffer, levels, slots, scores, max_returns, valid, cfg: BufferConfig, mutations=None,
          identity: Callable | None = None, first=None, eviction_bonus=None):
    """Fold one played batch of `n` levels into the buffer, one level at a time in batch order
    (the release's `PLRManager.update`): `(buffer, where int32[n])`.

    `slots[i] >= 0`: level i is stored there (a replay, or found by `locate`); its entry gets the
    new score (`(1 - alpha) old + alpha observed`) and max return (`stored_max_return`), offers
    of one slot merged by `replay_merge`; an entry that a newcomer earlier in the batch replaced
    is left alone. `slots[i] == -1`: a newcomer, stored by the `replacement` rule (the slot is
    recomputed after every insertion). `valid` False (no completed episode, hence no score; or a
    repeat within the batch) offers nothing. `max_returns` are this rollout's best returns,
    `mutations` the newcomers' mutation counts (a stored entry keeps its own). `where[i]` is
    the slot that holds level i afterwards, -1 if none (a repeat: where its `first` copy is).
    The clock is not touched: replays advance it as they are drawn, new levels by `advance_clock`.
    `eviction_bonus` (float32[K], TRACED's co-learnability credit) is added to the stored scores where the
    newcomer's slot is chosen, and not where the newcomer is compared with the slot's score (the authors'
    sampler: the slot is the argmin of the credited scores, the comparison is with the regret score alone); a
    slot rescored or given to a newcomer loses its bonus for the rest of the batch (the authors' rescoring
    overwrites the credited score).
    """
    n, k = scores.shape[0], buffer.capacity
    mutations = jnp.zeros((n,), jnp.int32) if mutations is None else jnp.asarray(mutations, jnp.int32)
    slots = jnp.asarray(slots, jnp.int32)
    scores = jnp.asarray(scores, jnp.float32)
    max_returns = jnp.asarray(max_returns, jnp.float32)
    ok = valid & jnp.isfinite(scores)
    stored = slots >= 0
    apply, merged_scores, merged_max = _merge_offers(slots, scores, max_returns, ok, cfg.replay_merge)
    is_update = stored & apply & buffer.filled[jnp.maximum(slots, 0)]   # an empty slot has nothing to update
    is_new = ~stored & ok
    key = _identity(cfg, identity)
    hashes = jax.vmap(lambda level: level_hash(key(level)))(levels)
    bonus = None if eviction_bonus is None else jnp.asarray(eviction_bonus, jnp.float32)

    one = functools.partial(_offer_one, cfg=cfg, bonus=bonus, mutations0=buffer.mutations, k=k)
    (buffer, *_), where = jax.lax.scan(
        one, (buffer, jnp.zeros((k,), bool), *([] if bonus is None else [jnp.zeros((k,), bool)])),
        (levels, hashes, slots, merged_scores, merged_max, mutations, is_update, is_new, stored))
    # A level's slot may have gone to a newcomer later in the batch: it holds the level only if it still matches.
    w = jnp.maximum(where, 0)
    where = jnp.where((where >= 0) & buffer.filled[w] & jnp.all(buffer.hashes[w] == hashes, -1), where, -1)
    if first is not None:
        where = where[first]
    return buffer, where.astype(jnp.int32)


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
