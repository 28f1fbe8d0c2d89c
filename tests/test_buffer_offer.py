"""Offering played levels to the buffer (`locate` + `offer`): the release's rule against a NumPy
transcription of the minimax release, the alternatives (jaxued, lowest_score), merges of one slot
replayed twice, MaxMC's stored maximum, de-duplication by layout, and level fingerprints."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import release_buffer as rel
from minimax.curricula import level_buffer as lb
from minimax.envs.maze import level_layout

from buffer_helpers import POOL, stack, take

K, N = 6, 7
TEMP, RHO = 0.3, 0.3


def id_buffer(ids, scores, filled, ages, max_returns, mutations, cfg, clock=50):
    """A LevelBuffer of `{"id": int}` levels (any pytree is a level) with the given fields."""
    levels = {"id": jnp.asarray(ids, jnp.int32)}
    buf = lb.init_buffer({"id": jnp.zeros((), jnp.int32)}, len(ids))
    filled = jnp.asarray(filled, bool)
    return buf.replace(levels=levels, scores=jnp.where(filled, jnp.asarray(scores, jnp.float32), 0.0),
                       max_returns=jnp.asarray(max_returns, jnp.float32),
                       last_sampled=jnp.where(filled, clock - jnp.asarray(ages, jnp.int32), 0),
                       filled=filled, mutations=jnp.asarray(mutations, jnp.int32),
                       hashes=jnp.where(filled[:, None], jax.vmap(lb.level_hash)(levels), 0).astype(jnp.uint32),
                       episode_count=jnp.asarray(clock, jnp.int32))


@jax.jit
def _ours(buf, ids, replay_slots, scores, done, max_returns, mutations):
    cfg = lb.BufferConfig(capacity=K, temperature=TEMP, staleness_coef=RHO)
    levels = {"id": ids}
    found = lb.locate(buf, levels, cfg)
    replay = replay_slots >= 0
    slots = jnp.where(replay, replay_slots, found.slots)
    return lb.offer(buf, levels, slots, scores, max_returns, done & (replay | ~found.repeat), cfg, mutations,
                    first=found.first)


def random_case(rng):
    filled_n = int(rng.choice([2, 4, K, K, K]))
    ids = np.full(K, -1)
    ids[:filled_n] = rng.choice(np.arange(20), filled_n, replace=False)
    filled = np.arange(K) < filled_n
    scores = np.round(rng.uniform(0, 1, K), 1)               # ties on purpose
    ages = rng.integers(0, 6, K) * filled
    max_returns = rng.uniform(0, 1, K).astype(np.float32)
    mutations = rng.integers(0, 4, K)
    # The batch: new ids (some stored already, some repeated) and replays of stored slots (some twice).
    replay_slots = np.where(rng.uniform(size=N) < 0.4, rng.integers(0, filled_n, N), -1)
    new_ids = rng.choice(np.concatenate([np.arange(20, 26), ids[:filled_n]]), N)
    batch_ids = np.where(replay_slots >= 0, ids[np.maximum(replay_slots, 0)], new_ids)
    b_scores = np.round(rng.uniform(0, 1, N), 1)
    done = rng.uniform(size=N) < 0.85
    b_max = rng.uniform(0, 1, N).astype(np.float32)
    b_mut = rng.integers(0, 5, N)
    return (ids, scores, filled, ages, max_returns, mutations), (batch_ids, replay_slots, b_scores, done, b_max, b_mut)


@pytest.mark.parametrize("seed", range(12))
def test_offer_follows_the_release_level_by_level(seed):
    rng = np.random.default_rng(seed)
    (ids, scores, filled, ages, max_ret, muts), (b_ids, replay_slots, b_scores, done, b_max, b_mut) = random_case(rng)
    buf = id_buffer(ids, scores, filled, ages, max_ret, muts, lb.BufferConfig(capacity=K))
    out, where = _ours(buf, jnp.asarray(b_ids, jnp.int32), jnp.asarray(replay_slots, jnp.int32),
                       jnp.asarray(b_scores, jnp.float32), jnp.asarray(done), jnp.asarray(b_max),
                       jnp.asarray(b_mut, jnp.int32))

    ref = dict(ids=ids.copy(), scores=np.where(filled, scores, -np.inf).astype(np.float64), ages=ages.astype(float),
               filled=filled.copy(), max_returns=max_ret.astype(np.float64), n_mutations=muts.copy())
    level_idxs, dupe = rel.dedupe(ref["ids"], ref["filled"], b_ids, replay_slots)
    ref = rel.update(ref, b_ids, level_idxs, b_scores, done & ~dupe, b_max, b_mut, TEMP, RHO)

    f = np.asarray(out.filled)
    np.testing.assert_array_equal(f, ref["filled"])
    np.testing.assert_array_equal(np.asarray(out.levels["id"])[f], ref["ids"][f])
    np.testing.assert_allclose(np.asarray(out.scores)[f], ref["scores"][f], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out.max_returns)[f], ref["max_returns"][f], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out.mutations)[f], ref["n_mutations"][f])
    np.testing.assert_array_equal(np.asarray(lb.staleness(out))[f], ref["ages"][f])   # the release keeps ages
    assert int(out.episode_count) == int(buf.episode_count)                         # offering is not playing
    # `where` names the slot holding each offered level afterwards.
    for i, w in enumerate(np.asarray(where)):
        if w >= 0:
            assert f[w] and int(out.levels["id"][w]) == b_ids[i]
        else:
            assert b_ids[i] not in set(np.asarray(out.levels["id"])[f].tolist())


def test_a_full_buffer_evicts_the_lowest_replay_probability_not_the_lowest_score():
    # Slot 0 has the lowest score but is very stale, so slot 1 has the lowest P_replay.
    cfg = lb.BufferConfig(capacity=4, temperature=1.0, staleness_coef=0.5)
    buf = id_buffer([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], [True] * 4, [20, 0, 1, 1], [0] * 4, [0] * 4, cfg)
    p = np.asarray(lb.replay_weights(buf, cfg))
    assert int(np.argmin(p)) == 1 and int(np.argmin(np.asarray(buf.scores))) == 0
    one = {"id": jnp.array([9])}
    out, where = lb.offer(buf, one, jnp.array([-1]), jnp.array([0.25]), jnp.zeros(1), jnp.ones(1, bool), cfg)
    assert np.asarray(out.levels["id"]).tolist() == [1, 9, 3, 4] and int(where[0]) == 1
    # The newcomer inherits slot 1's staleness (0 here); below that slot's score it is rejected.
    assert int(lb.staleness(out)[1]) == 0
    out, where = lb.offer(buf, one, jnp.array([-1]), jnp.array([0.15]), jnp.zeros(1), jnp.ones(1, bool), cfg)
    assert np.asarray(out.levels["id"]).tolist() == [1, 2, 3, 4] and int(where[0]) == -1
    # Equal to that slot's score: the release inserts (>=), jaxued does not (>).
    tie = jnp.array([0.2])
    out, _ = lb.offer(buf, one, jnp.array([-1]), tie, jnp.zeros(1), jnp.ones(1, bool), cfg)
    assert np.asarray(out.levels["id"]).tolist() == [1, 9, 3, 4]
    jaxued = lb.BufferConfig(capacity=4, temperature=1.0, staleness_coef=0.5, replacement="jaxued")
    out, _ = lb.offer(buf, one, jnp.array([-1]), tie, jnp.zeros(1), jnp.ones(1, bool), jaxued)
    assert np.asarray(out.levels["id"]).tolist() == [1, 2, 3, 4]
    # jaxued starts a newcomer at staleness 0 where the release inherits the evicted slot's.
    stale = id_buffer([1, 2, 3, 4], [0.4, 0.3, 0.2, 0.1], [True] * 4, [6, 6, 1, 1], [0] * 4, [0] * 4, cfg)
    for c, want in ((cfg, 1), (jaxued, 0)):
        out, where = lb.offer(stale, one, jnp.array([-1]), jnp.array([0.9]), jnp.zeros(1), jnp.ones(1, bool), c)
        assert int(where[0]) == 3 and int(lb.staleness(out)[3]) == want


def test_lowest_score_keeps_the_best_k_of_buffer_and_newcomers():
    cfg = lb.BufferConfig(capacity=4, replacement="lowest_score")
    buf = id_buffer([1, 2, 3, 4], [0.5, 0.1, 0.7, 0.3], [True] * 4, [9, 0, 0, 0], [0] * 4, [0] * 4, cfg)
    new = {"id": jnp.array([5, 6, 7])}
    out, where = lb.offer(buf, new, jnp.full(3, -1), jnp.array([0.2, 0.9, 0.4]), jnp.zeros(3), jnp.ones(3, bool), cfg)
    assert sorted(np.asarray(out.levels["id"]).tolist()) == [1, 3, 6, 7]   # 0.5, 0.7, 0.9, 0.4
    assert int(where[0]) == -1 and np.all(np.asarray(lb.staleness(out))[np.asarray(where)[1:]] == 0)


def test_an_eviction_bonus_chooses_the_slot_but_not_the_comparison_and_lapses_when_its_slot_is_rescored():
    """TRACED's rule (the authors' sampler): the newcomer's slot is the lowest of score + co-learnability
    bonus, and it enters if its score beats that slot's score alone; a slot rescored earlier in the batch
    has lost its bonus."""
    cfg = lb.BufferConfig(capacity=4, replacement="lowest_score")
    buf = id_buffer([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], [True] * 4, [0] * 4, [0] * 4, [0] * 4, cfg)
    bonus = jnp.asarray([0.5, 0.0, 0.0, 0.0])
    one = {"id": jnp.array([9])}

    def ids(scores, bonus=bonus, levels=one, slots=jnp.array([-1])):
        out, where = lb.offer(buf, levels, slots, jnp.asarray(scores), jnp.zeros(len(scores)),
                              jnp.ones(len(scores), bool), cfg, eviction_bonus=bonus)
        return np.asarray(out.levels["id"]).tolist(), np.asarray(where).tolist()

    assert ids([0.25], bonus=None) == ([9, 2, 3, 4], [0])       # no bonus: the lowest score goes
    assert ids([0.25]) == ([1, 9, 3, 4], [1])                   # slot 0's credit keeps it; slot 1 goes
    assert ids([0.15]) == ([1, 2, 3, 4], [-1])                  # below slot 1's 0.2: refused, though above 0.1
    # Slot 0 replayed first (rescored to 0.05): its credit lapses, and the newcomer takes it.
    both = {"id": jnp.array([1, 9])}
    assert ids([0.05, 0.25], levels=both, slots=jnp.array([0, -1])) == ([9, 2, 3, 4], [-1, 0])


@pytest.mark.parametrize("merge,score,max_return", [("first", 0.2, 0.5), ("last", 0.6, 0.9), ("mean", 0.4, 0.9)])
def test_one_slot_replayed_by_several_envs(merge, score, max_return):
    cfg = lb.BufferConfig(capacity=4, replay_merge=merge)
    buf = id_buffer([1, 2, 3, 4], [0.5, 0.1, 0.7, 0.3], [True] * 4, [0] * 4, [0.1] * 4, [0] * 4, cfg)
    levels = {"id": jnp.array([2, 3, 2, 2])}
    out, _ = lb.offer(buf, levels, jnp.array([1, 2, 1, 1]), jnp.array([0.2, 0.8, 0.9, 0.6]),
                      jnp.array([0.5, 0.0, 0.3, 0.9]), jnp.array([True, True, False, True]), cfg)
    assert float(out.scores[1]) == pytest.approx(score) and float(out.max_returns[1]) == pytest.approx(max_return)
    assert float(out.scores[2]) == pytest.approx(0.8)


@pytest.mark.parametrize("memory,want", [("rollout", 0.2), ("running", 0.7)])
def test_maxmc_stored_maximum(memory, want):
    """The release stores this rollout's best return; `running` keeps the best ever seen."""
    cfg = lb.BufferConfig(capacity=2, stored_max_return=memory)
    buf = id_buffer([1, 2], [0.5, 0.1], [True, True], [0, 0], [0.7, 0.0], [0, 0], cfg)
    out, _ = lb.offer(buf, {"id": jnp.array([1])}, jnp.array([0]), jnp.array([0.3]), jnp.array([0.2]),
                      jnp.ones(1, bool), cfg)
    assert float(out.max_returns[0]) == pytest.approx(want) and float(out.scores[0]) == pytest.approx(0.3)


def test_invalid_and_nan_offers_change_nothing():
    cfg = lb.BufferConfig(capacity=4)
    buf = id_buffer([1, 2, 0, 0], [0.5, 0.1, 0, 0], [True, True, False, False], [1, 2, 0, 0], [0.3] * 4, [0] * 4, cfg)
    out, where = lb.offer(buf, {"id": jnp.array([7, 8, 1])}, jnp.array([-1, -1, 0]), jnp.array([0.9, jnp.nan, 0.9]),
                          jnp.ones(3), jnp.array([False, True, False]), cfg)
    for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(buf)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.asarray(where).tolist() == [-1, -1, 0]   # a level already stored stays where it is


def test_locate_finds_stored_levels_and_repeats_by_layout():
    """The release's comparator ignores the agent's direction: a maze differing only in it is the same level."""
    def stocked(cfg):  # POOL[0..2] stored by `offer`, which fingerprints them as `cfg` says
        empty = lb.init_buffer(POOL[0], 4)
        return lb.offer(empty, stack(POOL[:3]), jnp.full(3, -1), jnp.array([0.1, 0.2, 0.3]), jnp.zeros(3),
                        jnp.ones(3, bool), cfg, identity=level_layout)[0]

    turned = POOL[1].replace(agent_dir=(POOL[1].agent_dir + 1) % 4)
    batch = stack([POOL[5], turned, POOL[5], POOL[3], POOL[0]])
    cfg = lb.BufferConfig(capacity=4)
    found = lb.locate(stocked(cfg), batch, cfg, level_layout)
    assert np.asarray(found.slots).tolist() == [-1, 1, -1, -1, 0]
    assert np.asarray(found.repeat).tolist() == [False, False, True, False, False]
    assert np.asarray(found.first).tolist() == [0, 1, 0, 3, 4]
    exact = lb.BufferConfig(capacity=4, dedupe_by="exact")
    assert np.asarray(lb.locate(stocked(exact), batch, exact, level_layout).slots).tolist() == [-1, -1, -1, -1, 0]
    off = lb.BufferConfig(capacity=4, unique_levels=False)
    found = lb.locate(stocked(off), batch, off, level_layout)
    assert np.asarray(found.slots).tolist() == [-1] * 5 and not np.asarray(found.repeat).any()


def test_offer_works_for_any_level_pytree_and_vmaps():
    cfg = lb.BufferConfig(capacity=3)
    example = {"a": jnp.zeros((2,), jnp.float32), "b": jnp.zeros((), jnp.int32)}
    bufs = jax.vmap(lambda _: lb.init_buffer(example, 3))(jnp.arange(2))
    levels = {"a": jnp.arange(8, dtype=jnp.float32).reshape(2, 2, 2), "b": jnp.array([[1, 2], [3, 3]])}
    out, where = jax.vmap(lambda b, lv: lb.offer(b, lv, jnp.full(2, -1), jnp.array([0.1, 0.2]), jnp.zeros(2),
                                                 jnp.ones(2, bool), cfg))(bufs, levels)
    assert np.asarray(out.filled).sum(1).tolist() == [2, 2] and np.asarray(where).tolist() == [[0, 1], [0, 1]]
    np.testing.assert_array_equal(np.asarray(out.levels["a"])[1, :2], np.asarray(levels["a"])[1])


def test_level_hash_and_equality():
    a, b = POOL[0], POOL[1]
    assert np.array_equal(np.asarray(lb.level_hash(a)), np.asarray(lb.level_hash(take(stack([a]), 0))))
    assert not np.array_equal(np.asarray(lb.level_hash(a)), np.asarray(lb.level_hash(b)))
    assert bool(lb.levels_equal(a, a)) and not bool(lb.levels_equal(a, b))
