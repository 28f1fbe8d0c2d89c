"""Offering levels to the buffer: validity, keep-best-K eviction by score, de-duplication (within a
batch and against stored levels) and level fingerprints."""

import jax.numpy as jnp
import numpy as np
import pytest

from minimax.curricula import level_buffer as lb

from buffer_helpers import POOL, jitted, make_buffer, pool_id, stack, take


# --------------------------------------------------------------------------- 3. insertion

CFG_INS = lb.BufferConfig(capacity=4, score_transform="rank", staleness_coef=1.0)


def ins(buf, levels, scores, max_returns=None, valid=None, cfg=CFG_INS, mutations=None):
    n = len(scores)
    levels = stack(levels) if isinstance(levels, list) else levels
    scores = jnp.asarray(scores, jnp.float32)
    max_returns = jnp.zeros(n, jnp.float32) if max_returns is None else jnp.asarray(max_returns, jnp.float32)
    valid = jnp.ones(n, bool) if valid is None else jnp.asarray(valid, bool)
    if mutations is None:
        return jitted("insert", cfg)(buf, levels, scores, max_returns, valid)
    return jitted("insert_mut", cfg)(buf, levels, scores, max_returns, valid, jnp.asarray(mutations, jnp.int32))


def stored_ids(buf):
    """{slot: pool id} over the filled slots."""
    filled = np.asarray(buf.filled)
    return {s: pool_id(take(buf.levels, s)) for s in np.flatnonzero(filled)}


def test_insert_skips_invalid_and_fills_empty_slots():
    cfg = lb.BufferConfig(capacity=8)
    buf = lb.init_buffer(POOL[0], 8)
    # 8 offered: 0, 3, 4 valid; 1 invalid; 2 NaN score; 5-7 invalid (their scores would win)
    buf, info = ins(buf, POOL[:5] + POOL[13:16], [1.0, 2.0, float("nan"), 3.0, 0.5, 9.0, 9.0, 9.0],
                    max_returns=[0.1, 0.2, 0.3, 0.4, 0.5, 0.0, 0.0, 0.0],
                    valid=[True, False, True, True, True, False, False, False], cfg=cfg,
                    mutations=[0, 1, 2, 3, 4, 5, 6, 7])
    ids = stored_ids(buf)
    assert sorted(ids.values()) == [0, 3, 4]
    np.testing.assert_array_equal(np.asarray(info.inserted), [True, False, False, True, True, False, False, False])
    np.testing.assert_array_equal(np.asarray(info.duplicate), [False] * 8)
    slots = np.asarray(info.slots)
    assert (slots[[1, 2, 5, 6, 7]] == -1).all()
    for i, score, mret, mut in ((0, 1.0, 0.1, 0), (3, 3.0, 0.4, 3), (4, 0.5, 0.5, 4)):
        s = slots[i]
        assert ids[s] == i
        assert float(buf.scores[s]) == pytest.approx(score)
        assert float(buf.max_returns[s]) == pytest.approx(mret)
        assert int(buf.mutations[s]) == mut
        assert int(buf.last_sampled[s]) == 8                  # offered count: 0 + 8 levels
    assert int(buf.episode_count) == 8
    assert int(np.asarray(buf.filled).sum()) == 3
    assert np.isfinite(np.asarray(buf.scores)).all()

    # newcomers that score below everything stored still take empty slots, best first
    buf2, info2 = ins(buf, POOL[5:13], [-5.0, -1.0, -3.0, -2.0, -4.0, -6.0, -7.0, -0.5], cfg=cfg,
                      mutations=[0] * 8)
    ids2 = stored_ids(buf2)
    assert len(ids2) == 8
    # 5 empty slots -> the 5 best of the newcomers (-0.5, -1, -2, -3, -4) and the 3 old levels
    assert sorted(ids2.values()) == sorted([0, 3, 4] + [12, 6, 8, 7, 9])
    np.testing.assert_array_equal(np.asarray(info2.inserted), [False, True, True, True, True, False, False, True])
    assert int(buf2.episode_count) == 8 + 8


def test_eviction_is_by_score_not_by_replay_weight():
    # Slot 0 scores lowest but, being by far the stalest, has by far the highest replay weight.
    buf = make_buffer(POOL[:3], [0.1, 1.0, 2.0], [True] * 3, last_sampled=[0, 100, 100], episode_count=100)
    cfg = lb.BufferConfig(capacity=3, score_transform="rank", staleness_coef=0.9)
    w = np.asarray(lb.replay_weights(buf, cfg))
    assert w[0] > w[1] and w[0] > w[2]
    new, info = ins(buf, [POOL[10]], [0.5], cfg=cfg)
    assert stored_ids(new) == {0: 10, 1: 1, 2: 2}
    assert int(info.slots[0]) == 0 and bool(info.inserted[0])
    assert int(new.last_sampled[0]) == 101 and int(new.last_sampled[1]) == 100
    # a newcomer below every stored score evicts nothing; a tie keeps the stored level
    for score in (0.05, 0.1):
        same, info = ins(buf, [POOL[10]], [score], cfg=cfg)
        assert stored_ids(same) == {0: 0, 1: 1, 2: 2}
        np.testing.assert_array_equal(np.asarray(same.scores), np.asarray(buf.scores))
        assert int(info.slots[0]) == -1 and not bool(info.inserted[0])
        assert int(same.episode_count) == 101


def test_batch_larger_than_capacity_keeps_best_k_of_union():
    k, n = 6, 10
    cfg = lb.BufferConfig(capacity=k)
    rng = np.random.default_rng(7)
    for trial in range(25):
        perm = rng.permutation(len(POOL))
        old_ids, new_ids = perm[:k], perm[k:k + n]
        filled = rng.random(k) < rng.uniform(0, 1)
        old_scores = rng.normal(size=k).astype(np.float32)
        buf = make_buffer([POOL[i] for i in old_ids], old_scores, filled, episode_count=3)
        new_scores = rng.normal(size=n).astype(np.float32)
        valid = rng.random(n) < 0.8
        if trial % 3 == 0:
            new_scores[rng.integers(n)] = np.nan
        out, info = ins(buf, [POOL[i] for i in new_ids], new_scores, valid=valid, cfg=cfg)
        # NumPy: the best K of (stored) ∪ (valid, finite newcomers)
        union = [(float(old_scores[s]), int(old_ids[s])) for s in range(k) if filled[s]]
        union += [(float(new_scores[j]), int(new_ids[j])) for j in range(n)
                  if valid[j] and np.isfinite(new_scores[j])]
        best = sorted(union, reverse=True)[:k]
        ids = stored_ids(out)
        assert sorted(ids.values()) == sorted(i for _, i in best), trial
        score_of = {i: s for s, i in union}
        for s, i in ids.items():
            assert float(out.scores[s]) == score_of[i]
        # InsertInfo agrees with the contents
        slots, inserted = np.asarray(info.slots), np.asarray(info.inserted)
        for j in range(n):
            if inserted[j]:
                assert ids[slots[j]] == new_ids[j]
            else:
                assert slots[j] == -1
        # stored levels that survived did not move
        for s in range(k):
            if filled[s] and int(old_ids[s]) in ids.values():
                assert ids[s] == old_ids[s]
        assert int(out.episode_count) == 3 + n


def test_dedup_within_batch_keeps_first_valid_occurrence():
    cfg = lb.BufferConfig(capacity=8)
    buf = lb.init_buffer(POOL[0], 8)
    a, b, c = POOL[1], POOL[2], POOL[3]
    out, info = ins(buf, [a, b, a, c, b, a], [1.0, 2.0, 9.0, 3.0, 8.0, 7.0],
                    max_returns=[0.1, 0.2, 0.9, 0.3, 0.8, 0.7], cfg=cfg)
    ids = stored_ids(out)
    assert sorted(ids.values()) == [1, 2, 3]
    np.testing.assert_array_equal(np.asarray(info.duplicate), [False, False, True, False, True, True])
    np.testing.assert_array_equal(np.asarray(info.inserted), [True, True, False, True, False, False])
    slot_of = {v: s for s, v in ids.items()}
    assert float(out.scores[slot_of[1]]) == 1.0 and float(out.scores[slot_of[2]]) == 2.0
    assert float(out.max_returns[slot_of[1]]) == pytest.approx(0.1)

    # An invalid earlier copy does not shadow a valid later one.
    out2, info2 = ins(buf, [a, a, b], [5.0, 4.0, 1.0], valid=[False, True, True], cfg=cfg)
    ids2 = stored_ids(out2)
    assert sorted(ids2.values()) == [1, 2]
    slot_a = {v: s for s, v in ids2.items()}[1]
    assert float(out2.scores[slot_a]) == 4.0
    np.testing.assert_array_equal(np.asarray(info2.duplicate), [False, False, False])
    assert int(info2.slots[1]) == slot_a and int(info2.slots[0]) == -1


def test_insert_info_slots_of_in_batch_duplicate_point_to_stored_copy():
    cfg = lb.BufferConfig(capacity=8)
    buf = lb.init_buffer(POOL[0], 8)
    out, info = ins(buf, [POOL[1], POOL[2], POOL[1]], [1.0, 2.0, 3.0], cfg=cfg)
    slots = np.asarray(info.slots)
    assert slots[0] >= 0
    assert slots[2] == slots[0]


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_dedup_against_buffer_updates_stored_entry(alpha):
    cfg = lb.BufferConfig(capacity=4, score_alpha=alpha)
    buf = make_buffer([POOL[0], POOL[1], POOL[2], POOL[3]], [2.0, 1.0, 3.0, 0.0], [True, True, True, False],
                      last_sampled=[1, 2, 3, 0], episode_count=10, max_returns=[0.5, 0.5, 0.5, 0.0])
    # POOL[1] again (higher max return), POOL[2] again (lower max return), one newcomer
    out, info = ins(buf, [POOL[1], POOL[9], POOL[2]], [4.0, 0.7, 1.0], max_returns=[0.9, 0.2, 0.1], cfg=cfg)
    ids = stored_ids(out)
    assert ids == {0: 0, 1: 1, 2: 2, 3: 9}                    # no second copy; newcomer in the empty slot
    blend = lambda old, new: (1 - alpha) * old + alpha * new  # noqa: E731
    np.testing.assert_allclose(np.asarray(out.scores), [2.0, blend(1.0, 4.0), blend(3.0, 1.0), 0.7], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out.max_returns), [0.5, 0.9, 0.5, 0.2], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out.last_sampled), [1, 13, 13, 13])
    assert int(out.episode_count) == 13
    np.testing.assert_array_equal(np.asarray(info.slots), [1, 3, 2])
    np.testing.assert_array_equal(np.asarray(info.duplicate), [True, False, True])
    np.testing.assert_array_equal(np.asarray(info.inserted), [False, True, False])
    # an invalid duplicate changes nothing about the stored entry
    out2, info2 = ins(buf, [POOL[1], POOL[10], POOL[11]], [7.0, 7.0, 7.0], max_returns=[5.0, 5.0, 5.0],
                      valid=[False, False, False], cfg=cfg)
    assert float(out2.scores[1]) == 1.0 and float(out2.max_returns[1]) == 0.5 and int(out2.last_sampled[1]) == 2
    assert not np.asarray(info2.duplicate).any() and (np.asarray(info2.slots) == -1).all()
    assert stored_ids(out2) == {0: 0, 1: 1, 2: 2}


def test_insert_info_slot_of_duplicate_evicted_in_same_batch():
    cfg = lb.BufferConfig(capacity=2)
    buf = make_buffer([POOL[0], POOL[1]], [5.0, 5.0], [True, True], episode_count=2)
    out, info = ins(buf, [POOL[0], POOL[5]], [0.0, 3.0], cfg=cfg)
    ids = stored_ids(out)
    slots = np.asarray(info.slots)
    assert slots[0] == -1, "level 0 was displaced by the better newcomer"
    assert ids[slots[1]] == 5, (ids, slots)


def test_unique_levels_false_stores_duplicates():
    cfg = lb.BufferConfig(capacity=6, unique_levels=False)
    buf = lb.init_buffer(POOL[0], 6)
    out, info = ins(buf, [POOL[1], POOL[1], POOL[2]], [1.0, 2.0, 3.0], cfg=cfg)
    assert sorted(stored_ids(out).values()) == [1, 1, 2]
    assert not np.asarray(info.duplicate).any() and np.asarray(info.inserted).all()
    out, info = ins(out, [POOL[1], POOL[3], POOL[4]], [4.0, 5.0, 6.0], cfg=cfg)
    assert sorted(stored_ids(out).values()) == [1, 1, 1, 2, 3, 4]


def test_insert_works_for_any_level_pytree():
    cfg = lb.BufferConfig(capacity=4)
    example = {"a": jnp.zeros((3,), jnp.float32), "b": jnp.zeros((2, 2), jnp.int32), "c": jnp.zeros((), bool)}

    def lvl(i):
        return {"a": jnp.array([i, 0.5, -i], jnp.float32), "b": jnp.full((2, 2), i, jnp.int32), "c": jnp.array(i % 2 == 0)}

    buf = lb.init_buffer(example, 4)
    out, info = ins(buf, [lvl(1), lvl(2), lvl(1), lvl(3)], [1.0, 2.0, 3.0, 0.5], cfg=cfg)
    assert int(np.asarray(out.filled).sum()) == 3
    np.testing.assert_array_equal(np.asarray(info.duplicate), [False, False, True, False])
    out, info = ins(out, [lvl(2), lvl(4), lvl(5), lvl(6)], [9.0, 0.1, 4.0, 0.7], cfg=cfg)
    # lvl(2) updated in place; capacity 4: best of {1:1, 2:9, 3:0.5} ∪ {4:0.1, 5:4, 6:0.7} -> 2, 5, 1, 6
    stored = {int(np.asarray(out.levels["b"])[s, 0, 0]): float(out.scores[s]) for s in range(4)}
    assert stored == {2: 9.0, 5: 4.0, 1: 1.0, 6: pytest.approx(0.7)}
    assert bool(info.duplicate[0]) and int(info.slots[0]) >= 0
    assert int(np.asarray(out.levels["b"])[int(info.slots[0]), 0, 0]) == 2
    # floats differing only in value are different levels
    other = {"a": jnp.array([1, 0.25, -1], jnp.float32), "b": jnp.full((2, 2), 1, jnp.int32), "c": jnp.array(False)}
    out2, info2 = ins(lb.init_buffer(example, 4), [lvl(1), other, lvl(7), lvl(8)], [1.0, 1.0, 1.0, 1.0], cfg=cfg)
    assert int(np.asarray(out2.filled).sum()) == 4 and not np.asarray(info2.duplicate).any()


def test_level_hash_and_equality():
    a, b = POOL[0], POOL[1]
    assert np.array_equal(np.asarray(lb.level_hash(a)), np.asarray(lb.level_hash(a)))
    assert not np.array_equal(np.asarray(lb.level_hash(a)), np.asarray(lb.level_hash(b)))
    assert bool(lb.levels_equal(a, a)) and not bool(lb.levels_equal(a, b))
