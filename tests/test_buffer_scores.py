"""Score updates of replayed levels, the replay decision, jit/vmap over buffers and buffer statistics."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.curricula import level_buffer as lb

from buffer_helpers import POOL, make_buffer, ref_replay, stack


# --------------------------------------------------------------------------- 4. replayed levels' scores


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_replay_offers_against_hand_computation(alpha):
    """Replays update their entries in place (mean merge and running max here, to see every rule
    at once); invalid, NaN and empty-slot offers change nothing; the clock does not move."""
    cfg = lb.BufferConfig(capacity=8, score_alpha=alpha, replay_merge="mean", stored_max_return="running")
    filled = [True] * 6 + [False] * 2
    buf = make_buffer([POOL[i] for i in range(8)], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0], filled,
                      max_returns=[0.5] * 8, last_sampled=[3] * 8, episode_count=9)
    idx = [1, 1, 1, 3, 4, 5, 6, 2, 0]
    scores = [10.0, 20.0, 99.0, 7.0, 8.0, float("nan"), 3.0, 1.0, 4.0]
    max_returns = [0.9, 0.1, 5.0, 0.2, 7.0, 9.0, 9.0, 0.7, 0.6]
    valid = [True, True, False, True, False, True, True, True, True]
    levels = jax.tree.map(lambda x: x[jnp.asarray(idx)], buf.levels)
    out, where = jax.jit(lambda *a: lb.offer(*a, cfg))(
        buf, levels, jnp.asarray(idx, jnp.int32), jnp.asarray(scores, jnp.float32),
        jnp.asarray(max_returns, jnp.float32), jnp.asarray(valid))
    blend = lambda old, new: (1 - alpha) * old + alpha * new  # noqa: E731
    want_scores = [blend(1.0, 4.0), blend(2.0, 15.0), blend(3.0, 1.0), blend(4.0, 7.0), 5.0, 6.0, 0.0, 0.0]
    want_max = [0.6, 0.9, 0.7, 0.5, 0.5, 0.5, 0.5, 0.5]      # running max; invalid/NaN/empty ignored
    np.testing.assert_allclose(np.asarray(out.scores), want_scores, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out.max_returns), want_max, rtol=1e-6)
    assert not np.asarray(out.filled)[6:].any()
    np.testing.assert_array_equal(np.asarray(out.last_sampled), np.asarray(buf.last_sampled))
    assert int(out.episode_count) == 9
    assert np.asarray(where).tolist() == [1, 1, 1, 3, 4, 5, -1, 2, 0]


# --------------------------------------------------------------------------- 5. the replay coin


def test_the_replay_coin_falls_with_replay_prob_once_the_buffer_is_ready():
    """`plr_parts.coin_replay`, the runners' replay decision (its probability traced, as in a sweep)."""
    from types import SimpleNamespace

    from minimax.core.parallel import NO_SHARD
    from minimax.runners.plr_parts import coin_replay

    def coin(key, buffer, p, min_fill):
        run = SimpleNamespace(shard=NO_SHARD, replay=SimpleNamespace(replay_prob=p),
                              cur=SimpleNamespace(min_fill_ratio=min_fill, train_levels=0))
        return coin_replay(run, key, buffer, None)

    k = 10
    keys = jax.random.split(jax.random.key(4), 20000)
    decide = jax.jit(jax.vmap(coin, in_axes=(0, None, None, None)), static_argnums=3)
    empty = lb.init_buffer({"x": jnp.zeros(())}, k)
    assert not np.asarray(decide(keys, empty, 1.0, 0.0)).any()
    part = empty.replace(filled=jnp.arange(k) < 3)
    assert not np.asarray(decide(keys, part, 1.0, 0.5)).any()       # 30% < 50%
    assert np.asarray(decide(keys, part, 1.0, 0.3)).all()            # exactly at the ratio
    assert not np.asarray(decide(keys, part, 0.0, 0.0)).any()
    for prob in (0.3, 0.75):
        freq = np.asarray(decide(keys, part, jnp.float32(prob), 0.2)).mean()
        sd = math.sqrt(prob * (1 - prob) / len(keys))
        assert abs(freq - prob) < 4.5 * sd, (freq, prob)


# --------------------------------------------------------------------------- 6. jit and vmap


def test_vmap_over_buffers_equals_per_seed_calls():
    k, n = 6, 5
    cfg = lb.BufferConfig(capacity=k, score_transform="rank", staleness_coef=0.3)
    rng = np.random.default_rng(1)
    bufs, batches = [], []
    for seed in range(2):
        ids = rng.permutation(len(POOL))
        filled = rng.random(k) < 0.7
        bufs.append(make_buffer([POOL[i] for i in ids[:k]], rng.normal(size=k), filled,
                                last_sampled=rng.integers(0, 5, k), episode_count=5 + seed))
        lv = [POOL[i] for i in ids[k:k + n]]
        lv[3] = POOL[ids[0]] if filled[0] else lv[3]          # a buffer duplicate where possible
        lv[4] = lv[1]                                         # an in-batch duplicate
        batches.append((stack(lv), jnp.asarray(rng.normal(size=n), jnp.float32),
                        jnp.asarray(rng.random(n), jnp.float32), jnp.asarray(rng.random(n) < 0.8)))
    vb = jax.tree.map(lambda *x: jnp.stack(x), *bufs)
    vbatch = jax.tree.map(lambda *x: jnp.stack(x), *batches)
    keys = jax.random.split(jax.random.key(9), 2)

    def step(key, buf, batch):
        levels, scores, max_returns, valid = batch
        found = lb.locate(buf, levels, cfg)
        buf, where = lb.offer(buf, levels, found.slots, scores, max_returns, valid & ~found.repeat, cfg,
                              first=found.first)
        buf, idx, replayed = lb.sample_replay(key, buf, 3, cfg)
        buf, _ = lb.offer(buf, replayed, idx, jnp.array([1.0, 2.0, 3.0]), jnp.array([0.1, 0.2, 0.3]),
                          jnp.ones(3, bool), cfg)
        return buf, where, idx, lb.replay_weights(buf, cfg)

    single = jax.jit(step)
    vmapped = jax.jit(jax.vmap(step))(keys, vb, vbatch)
    for s in range(2):
        want = single(keys[s], bufs[s], batches[s])
        got = jax.tree.map(lambda x: x[s], vmapped)
        for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_buffer_stats():
    cfg = lb.BufferConfig(capacity=4, staleness_coef=0.0)
    buf = make_buffer(POOL[:4], [1.0, 3.0, 2.0, 9.0], [True, True, True, False], last_sampled=[0, 2, 4, 0],
                      episode_count=4, max_returns=[1.0, 0.0, 0.5, 7.0])
    stats = lb.buffer_stats(buf, cfg)
    p = ref_replay([1.0, 3.0, 2.0, 9.0], [True, True, True, False], [0, 2, 4, 0], 4, cfg)
    assert int(stats["buffer/size"]) == 3
    assert float(stats["buffer/fill_ratio"]) == pytest.approx(0.75)
    assert float(stats["buffer/mean_score"]) == pytest.approx(2.0)
    assert float(stats["buffer/max_score"]) == pytest.approx(3.0)
    assert float(stats["buffer/weighted_score"]) == pytest.approx(float(p @ [1.0, 3.0, 2.0, 9.0]), rel=1e-5)
    assert float(stats["buffer/mean_staleness"]) == pytest.approx(2.0)
    assert float(stats["buffer/mean_max_return"]) == pytest.approx(0.5)
