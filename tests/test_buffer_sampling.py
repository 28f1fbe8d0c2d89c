"""Sampling replay batches from the level buffer: with and without replacement, sequential draws
as the reference makes them, and the staleness clock."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.curricula import level_buffer as lb

from buffer_helpers import POOL, chi2_critical, chi_square, ref_replay, stack


# --------------------------------------------------------------------------- 2. sampling

SAMPLE_CFG = lb.BufferConfig(capacity=12, score_transform="rank", temperature=0.5, staleness_coef=0.3,
                             staleness_transform="power", staleness_temperature=1.0)


def _sample_buffer():
    rng = np.random.default_rng(3)
    k = 12
    filled = np.ones(k, bool)
    filled[[2, 7, 11]] = False
    scores = rng.integers(0, 5, k).astype(np.float32)     # ties
    last = rng.integers(0, 40, k).astype(np.int32)
    buf = lb.init_buffer({"x": jnp.zeros((), jnp.int32)}, k).replace(
        levels={"x": jnp.arange(k, dtype=jnp.int32) * 10}, scores=jnp.asarray(scores),
        filled=jnp.asarray(filled), last_sampled=jnp.asarray(last), episode_count=jnp.int32(40))
    return buf, ref_replay(scores, filled, last, 40, SAMPLE_CFG), filled


def test_sampling_with_replacement_matches_weights():
    buf, p, filled = _sample_buffer()
    n = 40000
    f = jax.jit(jax.vmap(lambda key: lb.sample_replay(key, buf, 1, SAMPLE_CFG, replace=True)))
    new, idx, levels = f(jax.random.split(jax.random.key(11), n))
    idx = np.asarray(idx)[:, 0]
    counts = np.bincount(idx, minlength=12)
    assert counts[~filled].sum() == 0
    stat, df = chi_square(counts, p)
    assert stat < chi2_critical(df), (stat, df, counts, p * n)
    np.testing.assert_array_equal(np.asarray(levels["x"])[:, 0], idx * 10)
    # One draw: the clock advances by one, the drawn slot gets the new count, the others keep theirs.
    np.testing.assert_array_equal(np.asarray(new.episode_count), 41)
    last = np.asarray(new.last_sampled)
    np.testing.assert_array_equal(last[np.arange(n), idx], 41)
    others = np.ones_like(last, bool)
    others[np.arange(n), idx] = False
    assert (last[others] == np.broadcast_to(np.asarray(buf.last_sampled), last.shape)[others]).all()


def test_sampling_with_skewed_weights_matches_reference():
    # A sharper distribution (softmax over scores, rank staleness): a second chi-square check.
    cfg = lb.BufferConfig(capacity=12, score_transform="softmax", temperature=0.3, staleness_coef=0.3,
                          staleness_transform="rank", staleness_temperature=0.3)
    buf, _, filled = _sample_buffer()
    p = ref_replay(np.asarray(buf.scores), filled, np.asarray(buf.last_sampled), 40, cfg)
    draw = jax.jit(jax.vmap(lambda key: lb.sample_replay(key, buf, 1, cfg)[1][0]))
    counts = np.bincount(np.asarray(draw(jax.random.split(jax.random.key(5), 30000))), minlength=12)
    stat, df = chi_square(counts, p)
    assert counts[~filled].sum() == 0
    assert stat < chi2_critical(df), (stat, df)


def ref_sequential(scores, filled, last, count, n, cfg, replace):
    """{ordered draws: probability} of a batch drawn one level at a time (NumPy transcription of
    the reference samplers: each draw from eq. 4 of the buffer as the earlier draws left it,
    the drawn level's timestamp refreshed to the advanced clock)."""
    out = {}

    def rec(prefix, prob, last, count):
        if len(prefix) == n:
            out[tuple(prefix)] = out.get(tuple(prefix), 0.0) + prob
            return
        p = ref_replay(scores, filled, last, count, cfg)
        if not replace:
            p = np.where(np.isin(np.arange(len(p)), prefix), 0.0, p)
            p = p / p.sum()
        for i in np.flatnonzero(p > 0):
            nxt = last.copy()
            nxt[i] = count + 1
            rec(prefix + [int(i)], prob * p[i], nxt, count + 1)

    rec([], 1.0, np.asarray(last).copy(), count)
    return out


@pytest.mark.parametrize("replace", [True, False])
def test_replay_batches_are_drawn_sequentially_like_the_reference(replace):
    """A level drawn early in a batch loses its staleness weight for the later draws: the
    distribution of whole ordered batches matches a NumPy sequential sampler."""
    cfg = lb.BufferConfig(capacity=4, score_transform="rank", temperature=1.0, staleness_coef=0.6)
    scores, filled = np.array([3.0, 1.0, 2.0, 0.5], np.float32), np.array([True, True, True, False])
    last, count = np.array([0, 12, 9, 0], np.int32), 12   # slot 0 is very stale
    buf = lb.init_buffer({"x": jnp.zeros((), jnp.int32)}, 4).replace(
        scores=jnp.asarray(scores), filled=jnp.asarray(filled), last_sampled=jnp.asarray(last),
        episode_count=jnp.int32(count))
    probs = ref_sequential(scores, filled, last, count, 3, cfg, replace)
    draw = jax.jit(jax.vmap(lambda key: lb.sample_replay(key, buf, 3, cfg, replace=replace)))
    new, idx, _ = draw(jax.random.split(jax.random.key(13 + replace), 30000))
    idx = np.asarray(idx)
    batches = sorted(probs)
    code = {b: i for i, b in enumerate(batches)}
    assert all(tuple(row) in code for row in idx)
    counts = np.bincount([code[tuple(row)] for row in idx], minlength=len(batches))
    stat, df = chi_square(counts, [probs[b] for b in batches])
    assert stat < chi2_critical(df), (stat, df)
    # An independent draw would repeat the stale slot 0 far more often than a sequential one.
    independent = ref_replay(scores, filled, last, count, cfg)[0] ** 2
    repeats = np.mean((idx[:, 0] == 0) & (idx[:, 1] == 0))
    assert repeats < 0.5 * independent
    # Timestamps: draw j sets its slot to count + j + 1; the clock advances by 3.
    np.testing.assert_array_equal(np.asarray(new.episode_count), count + 3)
    last_new = np.asarray(new.last_sampled)
    for row, ts in zip(idx[:50], last_new[:50]):
        for j, i in enumerate(row):
            if i not in row[j + 1:]:
                assert ts[i] == count + j + 1


def test_sampling_without_replacement_distinct_and_first_draw_follows_weights():
    buf, p, filled = _sample_buffer()
    n_filled = int(filled.sum())
    f = jax.jit(jax.vmap(lambda key: lb.sample_replay(key, buf, 4, SAMPLE_CFG, replace=False)[1]))
    idx = np.asarray(f(jax.random.split(jax.random.key(2), 20000)))
    assert all(len(set(row)) == 4 for row in idx)
    assert filled[idx].all()
    stat, df = chi_square(np.bincount(idx[:, 0], minlength=12), p)   # the first draw is from p
    assert stat < chi2_critical(df), (stat, df)
    # all filled slots at once: exactly the filled slots, each stamped with its draw's count
    new, idx_all, _ = lb.sample_replay(jax.random.key(0), buf, n_filled, SAMPLE_CFG, replace=False)
    assert sorted(np.asarray(idx_all).tolist()) == np.flatnonzero(filled).tolist()
    assert int(new.episode_count) == 40 + n_filled
    np.testing.assert_array_equal(np.asarray(new.last_sampled)[np.asarray(idx_all)], 40 + 1 + np.arange(n_filled))
    np.testing.assert_array_equal(np.asarray(new.last_sampled)[~filled], np.asarray(buf.last_sampled)[~filled])


def test_offering_does_not_move_the_clock_and_new_levels_advance_it():
    """The release's clock: replay draws count one each (`sample_replay`), a cycle of new levels
    counts its size (`advance_clock`, before the offer), and offering counts nothing."""
    cfg = lb.BufferConfig(capacity=8)
    buf = lb.advance_clock(lb.init_buffer(POOL[0], 8), 4)
    assert int(buf.episode_count) == 4 and not bool(buf.filled.any())
    ones = jnp.ones(4)
    out, _ = lb.offer(buf, stack(POOL[:4]), jnp.full(4, -1), ones, ones, jnp.array([True, False, True, False]), cfg)
    assert int(out.episode_count) == 4
    assert (np.asarray(lb.staleness(out))[np.asarray(out.filled)] == 0).all()   # new in empty slots: not stale
