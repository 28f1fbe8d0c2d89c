"""The PLR level buffer (minimax/curricula/level_buffer.py) and finite training sets
(minimax/curricula/training_set.py).

The replay distribution is checked against an independent plain-Python transcription of
PLR eqs. 1-4 and of the choices the module docstring makes explicit (competition ranks,
uniform fallbacks, de-duplication, keep-best-K replacement). Statistical tests use fixed
keys, so they are deterministic; their thresholds are chi-square quantiles at p = 1e-4.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.curricula import level_buffer as lb
from minimax.curricula import training_set as ts
from minimax.envs.maze import make_dr_generator

TEMPERATURES = (0.1, 0.3, 1.0, 2.0)


# --------------------------------------------------------------------------- helpers


def chi2_critical(df: int, z: float = 3.719) -> float:
    """Upper chi-square quantile by the Wilson-Hilferty approximation (z = 3.719 is the
    standard normal quantile at 1 - 1e-4; within 5% for df >= 2, erring high)."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + z * math.sqrt(a)) ** 3


def test_chi2_critical_matches_known_quantiles():
    # Tabulated chi-square quantiles at p = 1e-4 (df = 2, 5, 10, 20): 18.42, 25.74, 35.56, 52.39.
    for df, q in ((2, 18.42), (5, 25.74), (10, 35.56), (20, 52.39)):
        assert q <= chi2_critical(df) < 1.05 * q


def chi_square(counts, probs):
    """Pearson statistic and degrees of freedom, pooling bins with expected count < 5."""
    counts = np.asarray(counts, np.float64)
    expected = np.asarray(probs, np.float64) * counts.sum()
    big = expected >= 5
    obs = list(counts[big])
    exp = list(expected[big])
    if (~big).any() and expected[~big].sum() > 0:
        obs.append(counts[~big].sum())
        exp.append(expected[~big].sum())
    obs, exp = np.array(obs), np.array(exp)
    return float(np.sum((obs - exp) ** 2 / exp)), len(obs) - 1


def tree_np(tree):
    return jax.tree.map(np.asarray, tree)


def take(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def stack(levels):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *levels)


def same_level(a, b) -> bool:
    la, lb_ = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb_) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb_))


GEN = make_dr_generator(5, 5, n_walls=3)
GEN_BATCH = jax.jit(jax.vmap(GEN))


def maze_pool(n: int, seed: int = 0):
    """`n` distinct 5x5 maze levels (as a list of single levels)."""
    batch = tree_np(GEN_BATCH(jax.random.split(jax.random.key(seed), 4 * n)))
    pool = []
    for i in range(4 * n):
        lvl = take(batch, i)
        if not any(same_level(lvl, p) for p in pool):
            pool.append(lvl)
        if len(pool) == n:
            return pool
    raise AssertionError("not enough distinct levels")


POOL = maze_pool(40)


def pool_id(level) -> int:
    """Which pool level this is (-1 if none)."""
    for i, p in enumerate(POOL):
        if same_level(level, p):
            return i
    return -1


def make_buffer(levels, scores, filled, last_sampled=None, episode_count=0, max_returns=None):
    """A LevelBuffer built directly from its fields (hashes computed for the stored levels)."""
    k = len(scores)
    buf = lb.init_buffer(levels[0], k)
    stacked = stack(levels)
    filled = jnp.asarray(filled, bool)
    return buf.replace(
        levels=stacked,
        scores=jnp.asarray(scores, jnp.float32),
        max_returns=jnp.zeros((k,), jnp.float32) if max_returns is None else jnp.asarray(max_returns, jnp.float32),
        last_sampled=jnp.zeros((k,), jnp.int32) if last_sampled is None else jnp.asarray(last_sampled, jnp.int32),
        filled=filled,
        hashes=jnp.where(filled[:, None], jax.vmap(lb.level_hash)(stacked), 0).astype(jnp.uint32),
        episode_count=jnp.asarray(episode_count, jnp.int32))


_JIT_CACHE = {}


def jitted(name, cfg):
    """One compiled function per (operation, config), reused across tests."""
    key = (name, cfg)
    if key not in _JIT_CACHE:
        if name == "insert":
            fn = jax.jit(lambda b, l, s, m, v: lb.insert(b, l, s, m, v, cfg))
        elif name == "insert_mut":
            fn = jax.jit(lambda b, l, s, m, v, mu: lb.insert(b, l, s, m, v, cfg, mu))
        elif name == "update":
            fn = jax.jit(lambda b, i, s, m, v: lb.update_scores(b, i, s, m, v, cfg))
        elif name == "weights":
            # eager: op-by-op dispatch reuses compiled primitives across configs, far cheaper
            # than one XLA compile per config
            fn = jax.vmap(lambda b: lb.replay_weights(b, cfg))
        else:
            raise KeyError(name)
        _JIT_CACHE[key] = fn
    return _JIT_CACHE[key]


# --------------------------------------------------------------------------- reference (plain Python)


def ref_transform(values, mask, transform, temperature, eps=0.05, top_k=1):
    """The distribution the docstrings specify, one slot at a time, in float64."""
    k = len(values)
    members = [i for i in range(k) if mask[i]]
    if not members:
        return [1.0 / k] * k                                   # empty buffer: uniform over all slots
    vals = {i: float(values[i]) for i in members}

    def rank(i):                                                # competition rank, descending
        return 1 + sum(1 for j in members if vals[j] > vals[i])

    w = [0.0] * k
    for i in members:
        if transform == "rank":
            w[i] = (1.0 / rank(i)) ** (1.0 / temperature)      # PLR eq. 1
        elif transform == "power":
            w[i] = max(vals[i], 0.0) ** (1.0 / temperature)
        elif transform == "softmax":
            top = max(vals.values())
            w[i] = math.exp((vals[i] - top) / temperature)     # exp(v/T), shifted for range
        elif transform == "eps_greedy":
            top = max(vals.values())
            maxima = [j for j in members if vals[j] == top]
            w[i] = (1 - eps) * (1.0 / len(maxima) if vals[i] == top else 0.0) + eps / len(members)
        elif transform == "top_k":
            w[i] = 1.0 if rank(i) <= top_k else 0.0
        else:
            raise ValueError(transform)
    total = sum(w)
    if total == 0:
        return [1.0 / len(members) if i in members else 0.0 for i in range(k)]
    return [x / total for x in w]


def ref_replay(scores, filled, last_sampled, episode_count, cfg):
    p_s = ref_transform(scores, filled, cfg.score_transform, cfg.temperature, cfg.eps, cfg.top_k)
    stale = [episode_count - last_sampled[i] if filled[i] else 0 for i in range(len(scores))]  # c - C_i (eq. 3)
    p_c = ref_transform(stale, filled, cfg.staleness_transform, cfg.staleness_temperature)
    rho = cfg.staleness_coef
    return np.array([(1 - rho) * a + rho * b for a, b in zip(p_s, p_c)])  # eq. 4


def test_reference_reproduces_plr_equations_by_hand():
    # Guard the reference itself with hand-computed values.
    # rank, T=1, scores (3, 1, 2): ranks 1, 3, 2 -> weights 1, 1/3, 1/2 (sum 11/6).
    np.testing.assert_allclose(ref_transform([3, 1, 2], [1, 1, 1], "rank", 1.0), [6 / 11, 2 / 11, 3 / 11])
    # competition ranks: (5, 5, 1) -> ranks 1, 1, 3.
    np.testing.assert_allclose(ref_transform([5, 5, 1], [1, 1, 1], "rank", 1.0), [3 / 7, 3 / 7, 1 / 7])
    # staleness power T=1 is eq. 3: (c - C_i) / sum.
    np.testing.assert_allclose(ref_transform([4, 0, 6], [1, 1, 1], "power", 1.0), [0.4, 0.0, 0.6])
    np.testing.assert_allclose(ref_transform([1, 2, 3], [1, 0, 1], "eps_greedy", 1.0, eps=0.2), [0.1, 0, 0.9])


# --------------------------------------------------------------------------- 1. replay distribution


def random_buffers(b=64, k=12, seed=0):
    """A batch of buffers with random fill, scores (ties, all-equal, zero, negative) and
    timestamps, plus the special cases. Returns (stacked LevelBuffer, list of numpy dicts)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(b):
        kind = i % 10
        p_fill = rng.uniform(0.2, 1.0)
        filled = rng.random(k) < p_fill
        if kind == 0:
            filled[:] = False                                   # empty buffer
        elif kind == 1:
            filled[:] = False
            filled[rng.integers(k)] = True                      # one level
        elif kind == 2:
            filled[:] = True
        score_kind = rng.integers(6)
        if score_kind == 0:
            scores = rng.integers(-2, 4, k) * 0.5               # many ties
        elif score_kind == 1:
            scores = np.full(k, rng.normal())                   # all equal
        elif score_kind == 2:
            scores = np.zeros(k)                                # all zero
        elif score_kind == 3:
            scores = -rng.uniform(0.1, 2.0, k)                  # all negative
        else:
            scores = rng.normal(0.5, 1.0, k)
        ec = int(rng.integers(0, 60))
        if rng.random() < 0.2:
            last = np.full(k, ec)                               # zero staleness everywhere
        else:
            last = rng.integers(0, ec + 1, k)
            if rng.random() < 0.3:
                last = ec - rng.integers(0, 3, k)               # staleness ties
                last = np.clip(last, 0, ec)
        # junk in the empty slots must be ignored
        scores = np.where(filled, scores, rng.normal(3.0, 1.0, k)).astype(np.float32)
        last = np.where(filled, last, rng.integers(0, ec + 1, k)).astype(np.int32)
        rows.append(dict(scores=scores, filled=filled, last=last, ec=ec))
    buf = lb.init_buffer({"x": jnp.zeros((2,), jnp.float32)}, k)
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (b,) + x.shape), buf)
    batch = batch.replace(
        scores=jnp.asarray(np.stack([r["scores"] for r in rows])),
        filled=jnp.asarray(np.stack([r["filled"] for r in rows])),
        last_sampled=jnp.asarray(np.stack([r["last"] for r in rows])),
        episode_count=jnp.asarray(np.array([r["ec"] for r in rows], np.int32)))
    return batch, rows


BUFFERS, ROWS = random_buffers()


def _configs():
    out = []
    extras = [(0.05, 1), (0.2, 2), (0.5, 3), (1.0, 1)]
    st_cycle = lb.STALENESS_TRANSFORMS
    for si, st in enumerate(lb.SCORE_TRANSFORMS):
        for ti, t in enumerate(TEMPERATURES):
            eps, top_k = extras[ti]
            for ri, rho in enumerate((0.0, 0.3, 1.0)):
                out.append(lb.BufferConfig(
                    capacity=12, score_transform=st, temperature=t, staleness_coef=rho,
                    staleness_transform=st_cycle[(si + ti + ri) % 3],
                    staleness_temperature=TEMPERATURES[(ti + ri + si) % 4], eps=eps, top_k=top_k))
    # every staleness transform at every temperature, alone
    for st in lb.STALENESS_TRANSFORMS:
        for t in TEMPERATURES:
            out.append(lb.BufferConfig(capacity=12, staleness_coef=1.0, staleness_transform=st,
                                       staleness_temperature=t))
    return out


CONFIGS = _configs()


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.score_transform}-T{c.temperature}-rho{c.staleness_coef}-"
                                                        f"{c.staleness_transform}-Tc{c.staleness_temperature}")
def test_replay_weights_match_reference(cfg):
    got = np.asarray(jitted("weights", cfg)(BUFFERS), np.float64)
    assert np.isfinite(got).all()
    for row, p in zip(ROWS, got):
        want = ref_replay(row["scores"], row["filled"], row["last"], row["ec"], cfg)
        np.testing.assert_allclose(p, want, rtol=2e-4, atol=2e-6)
        assert abs(p.sum() - 1.0) < 1e-5
        if row["filled"].any():
            assert np.all(p[~row["filled"]] == 0.0)


def test_replay_weights_edge_cases():
    k = 6
    for st in lb.SCORE_TRANSFORMS:
        for rho in (0.0, 0.3, 1.0):
            cfg = lb.BufferConfig(capacity=k, score_transform=st, staleness_coef=rho)
            level = {"x": jnp.zeros(())}
            empty = lb.init_buffer(level, k)
            p = np.asarray(lb.replay_weights(empty, cfg))
            assert np.isfinite(p).all() and abs(p.sum() - 1) < 1e-6 and (p >= 0).all()

            one = empty.replace(filled=jnp.zeros(k, bool).at[4].set(True), scores=jnp.full(k, -3.0),
                                episode_count=jnp.int32(9), last_sampled=jnp.full(k, 2, jnp.int32))
            np.testing.assert_allclose(np.asarray(lb.replay_weights(one, cfg)), np.eye(k)[4], atol=1e-6)

            # all scores equal, zero staleness: uniform over the filled slots
            filled = np.array([1, 0, 1, 1, 0, 1], bool)
            for value in (0.0, -1.5, 2.0):
                eq = empty.replace(filled=jnp.asarray(filled), scores=jnp.full(k, value),
                                   episode_count=jnp.int32(7), last_sampled=jnp.full(k, 7, jnp.int32))
                want = filled / filled.sum()
                np.testing.assert_allclose(np.asarray(lb.replay_weights(eq, cfg)), want, atol=1e-6)
                np.testing.assert_allclose(np.asarray(lb.staleness_weights(eq, cfg)), want, atol=1e-6)


def test_power_with_nonpositive_scores_falls_back_to_uniform():
    cfg = lb.BufferConfig(capacity=5, score_transform="power", staleness_coef=0.0)
    empty = lb.init_buffer({"x": jnp.zeros(())}, 5)
    filled = jnp.array([1, 1, 0, 1, 1], bool)
    for scores in ([0.0] * 5, [-1.0, -2.0, 9.0, -0.5, -3.0], [0.0, -1.0, 5.0, 0.0, -7.0]):
        p = np.asarray(lb.replay_weights(empty.replace(filled=filled, scores=jnp.asarray(scores)), cfg))
        np.testing.assert_allclose(p, [0.25, 0.25, 0, 0.25, 0.25], atol=1e-6)
    # a single positive score takes everything; negatives count as zero
    p = np.asarray(lb.replay_weights(empty.replace(filled=filled, scores=jnp.array([-1.0, 0.5, 9.0, -2.0, 0.0])),
                                     cfg))
    np.testing.assert_allclose(p, [0, 1, 0, 0, 0], atol=1e-6)


def test_rank_uses_competition_ranks_and_staleness_is_eq3():
    # Hand-computed: scores (2, 7, 7, 1) with T=1 -> ranks 3, 1, 1, 4 -> 1/3, 1, 1, 1/4.
    cfg = lb.BufferConfig(capacity=4, score_transform="rank", temperature=1.0, staleness_coef=0.5,
                          staleness_transform="power", staleness_temperature=1.0)
    buf = lb.init_buffer({"x": jnp.zeros(())}, 4).replace(
        scores=jnp.array([2.0, 7.0, 7.0, 1.0]), filled=jnp.ones(4, bool),
        last_sampled=jnp.array([10, 4, 9, 7], jnp.int32), episode_count=jnp.int32(10))
    p_s = np.array([1 / 3, 1, 1, 1 / 4]) / (1 / 3 + 2 + 1 / 4)
    p_c = np.array([0, 6, 1, 3]) / 10.0
    np.testing.assert_allclose(np.asarray(lb.replay_weights(buf, cfg)), 0.5 * p_s + 0.5 * p_c, rtol=1e-5, atol=1e-7)


def test_buffer_config_rejects_bad_settings():
    for kwargs in (dict(capacity=0), dict(score_transform="nope"), dict(staleness_transform="rank2"),
                   dict(temperature=0.0), dict(staleness_coef=1.5), dict(score_alpha=0.0), dict(top_k=0),
                   dict(eps=-0.1)):
        with pytest.raises(ValueError):
            lb.BufferConfig(**kwargs)


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


def test_insert_advances_the_clock_by_the_levels_played():
    cfg = lb.BufferConfig(capacity=8)
    buf = lb.init_buffer(POOL[0], 8)
    levels = stack(POOL[:4])
    ones = jnp.ones(4)
    out, _ = lb.insert(buf, levels, ones, ones, jnp.array([True, False, True, False]), cfg)
    assert int(out.episode_count) == 4                       # every level of the batch was played
    out, _ = lb.insert(buf, levels, ones, ones, jnp.ones(4, bool), cfg, played=0)
    assert int(out.episode_count) == 0                       # already counted when handed out
    assert (np.asarray(out.last_sampled)[np.asarray(out.filled)] == 0).all()
    out = lb.advance_clock(buf, 6)
    assert int(out.episode_count) == 6 and not bool(out.filled.any())


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


# --------------------------------------------------------------------------- 4. update_scores


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_update_scores_against_hand_computation(alpha):
    cfg = lb.BufferConfig(capacity=8, score_alpha=alpha)
    filled = [True] * 6 + [False] * 2
    buf = make_buffer([POOL[i] for i in range(8)], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0], filled,
                      max_returns=[0.5] * 8, last_sampled=[3] * 8, episode_count=9)
    idx = [1, 1, 1, 3, 4, 5, 6, 2, 0]
    scores = [10.0, 20.0, 99.0, 7.0, 8.0, float("nan"), 3.0, 1.0, 4.0]
    max_returns = [0.9, 0.1, 5.0, 0.2, 7.0, 9.0, 9.0, 0.7, 0.6]
    valid = [True, True, False, True, False, True, True, True, True]
    out = jitted("update", cfg)(buf, jnp.asarray(idx, jnp.int32), jnp.asarray(scores, jnp.float32),
                                jnp.asarray(max_returns, jnp.float32), jnp.asarray(valid), )
    blend = lambda old, new: (1 - alpha) * old + alpha * new  # noqa: E731
    want_scores = [blend(1.0, 4.0), blend(2.0, 15.0), blend(3.0, 1.0), blend(4.0, 7.0), 5.0, 6.0, 0.0, 0.0]
    want_max = [0.6, 0.9, 0.7, 0.5, 0.5, 0.5, 0.5, 0.5]      # max only grows; invalid/NaN/empty ignored
    np.testing.assert_allclose(np.asarray(out.scores), want_scores, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out.max_returns), want_max, rtol=1e-6)
    assert not np.asarray(out.filled)[6]
    np.testing.assert_array_equal(np.asarray(out.last_sampled), np.asarray(buf.last_sampled))
    assert int(out.episode_count) == 9


# --------------------------------------------------------------------------- 5. replay_decision


def test_replay_decision():
    k = 10
    keys = jax.random.split(jax.random.key(4), 20000)
    decide = jax.jit(jax.vmap(lambda key, b, p, m: lb.replay_decision(key, b, p, m), in_axes=(0, None, None, None)))
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
        buf, info = lb.insert(buf, *batch, cfg)
        buf, idx, _ = lb.sample_replay(key, buf, 3, cfg)
        buf = lb.update_scores(buf, idx, jnp.array([1.0, 2.0, 3.0]), jnp.array([0.1, 0.2, 0.3]), jnp.ones(3, bool), cfg)
        return buf, info, idx, lb.replay_weights(buf, cfg)

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


# --------------------------------------------------------------------------- 7. training set


def test_draw_new_seeds_prefers_unseen():
    draw = jax.jit(ts.draw_new_seeds, static_argnums=2)
    tset = ts.init_training_set(10)
    seen = set()
    key = jax.random.key(0)
    for i in range(3):
        key, sub = jax.random.split(key)
        tset, seeds = draw(sub, tset, 3)
        seeds = np.asarray(seeds).tolist()
        assert len(set(seeds)) == 3 and not (set(seeds) & seen) and all(0 <= s < 10 for s in seeds)
        seen |= set(seeds)
        np.testing.assert_array_equal(np.flatnonzero(np.asarray(tset.seen)), sorted(seen))
    last = (set(range(10)) - seen).pop()
    tset, seeds = draw(jax.random.key(1), tset, 3)
    seeds = np.asarray(seeds).tolist()
    assert seeds[0] == last and all(0 <= s < 10 for s in seeds)
    assert np.asarray(tset.seen).all()
    # all seen: any seeds, still in range
    tset, seeds = draw(jax.random.key(2), tset, 3)
    assert np.asarray(tset.seen).all() and all(0 <= s < 10 for s in np.asarray(seeds))
    # more than the number of levels at once
    tset, seeds = ts.draw_new_seeds(jax.random.key(3), ts.init_training_set(4), 6)
    seeds = np.asarray(seeds)
    assert sorted(seeds[:4].tolist()) == [0, 1, 2, 3] and ((0 <= seeds) & (seeds < 4)).all()
    assert np.asarray(tset.seen).all()
    with pytest.raises(ValueError):
        ts.init_training_set(0)


def test_draw_new_seeds_uniform_over_unseen():
    seen = np.zeros(12, bool)
    seen[[0, 3, 4, 9]] = True
    tset = ts.TrainingSet(seen=jnp.asarray(seen))
    f = jax.jit(jax.vmap(lambda key: ts.draw_new_seeds(key, tset, 2)[1]))
    seeds = np.asarray(f(jax.random.split(jax.random.key(6), 20000)))
    assert (seeds[:, 0] != seeds[:, 1]).all() and not seen[seeds].any()
    counts = np.bincount(seeds.reshape(-1), minlength=12)
    p = (~seen) / (~seen).sum()
    stat, df = chi_square(counts, p)
    assert stat < chi2_critical(df), (stat, df)


def test_replay_probability_schedules():
    seen = jnp.zeros(8, bool).at[jnp.array([1, 5])].set(True)
    part = ts.TrainingSet(seen=seen)
    full = ts.TrainingSet(seen=jnp.ones(8, bool))
    assert float(ts.replay_probability(part, "fixed", 0.4)) == pytest.approx(0.4)
    assert float(ts.replay_probability(full, "fixed", 0.4)) == 1.0
    assert float(ts.replay_probability(part, "proportionate", 0.4)) == pytest.approx(0.25)
    assert float(ts.replay_probability(full, "proportionate", 0.4)) == 1.0
    assert float(ts.replay_probability(ts.init_training_set(8), "proportionate", 0.4)) == 0.0
    with pytest.raises(ValueError, match="bogus"):
        ts.replay_probability(part, "bogus", 0.4)


def test_level_from_seed_is_deterministic():
    # Module docstring: seed i names generator(fold_in(key(LEVEL_SET_KEY), i)), the same in every run.
    n = 160                                                   # the shape GEN_BATCH was compiled for
    f = jax.jit(jax.vmap(lambda s: ts.level_from_seed(GEN, s)))
    seeds = jnp.arange(n)
    a = tree_np(f(seeds))
    b = tree_np(f(seeds[::-1]))                               # same seeds, other calls and positions
    want = tree_np(GEN_BATCH(jax.vmap(lambda s: jax.random.fold_in(jax.random.key(ts.LEVEL_SET_KEY), s))(seeds)))
    for i in range(0, n, 7):
        assert same_level(take(a, i), take(b, n - 1 - i))
        assert same_level(take(a, i), take(want, i))
    distinct = {tuple(np.concatenate([np.ravel(x) for x in jax.tree.leaves(take(a, i))]).tolist())
                for i in range(20)}
    assert len(distinct) > 15                                 # seeds name different levels
