"""The PLR replay distribution (minimax/curricula/level_buffer.py): score and staleness transforms
and their mixture, against a plain-Python transcription of PLR eqs. 1-4 and the choices the
module docstring makes explicit (competition ranks, uniform fallbacks)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.curricula import level_buffer as lb

from buffer_helpers import TEMPERATURES, chi2_critical, jitted, ref_replay, ref_transform


def test_chi2_critical_matches_known_quantiles():
    # Tabulated chi-square quantiles at p = 1e-4 (df = 2, 5, 10, 20): 18.42, 25.74, 35.56, 52.39.
    for df, q in ((2, 18.42), (5, 25.74), (10, 35.56), (20, 52.39)):
        assert q <= chi2_critical(df) < 1.05 * q




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
            cfg = lb.BufferConfig(capacity=k, score_transform=st, staleness_coef=rho, rank_ties="competition")
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


@pytest.mark.parametrize("ties,ranks", [("ordinal", [3, 1, 2, 4]), ("competition", [3, 1, 1, 4])])
def test_rank_ties_and_staleness_is_eq3(ties, ranks):
    # Hand-computed: scores (2, 7, 7, 1) with T=1. Ordinal ranks (the release's argsort: the lower
    # slot first) 3, 1, 2, 4; competition ranks 3, 1, 1, 4.
    cfg = lb.BufferConfig(capacity=4, score_transform="rank", temperature=1.0, staleness_coef=0.5,
                          staleness_transform="power", staleness_temperature=1.0, rank_ties=ties)
    buf = lb.init_buffer({"x": jnp.zeros(())}, 4).replace(
        scores=jnp.array([2.0, 7.0, 7.0, 1.0]), filled=jnp.ones(4, bool),
        last_sampled=jnp.array([10, 4, 9, 7], jnp.int32), episode_count=jnp.int32(10))
    h = 1 / np.array(ranks, float)
    p_s = h / h.sum()
    p_c = np.array([0, 6, 1, 3]) / 10.0
    np.testing.assert_allclose(np.asarray(lb.replay_weights(buf, cfg)), 0.5 * p_s + 0.5 * p_c, rtol=1e-5, atol=1e-7)
    # Nothing stale: P_C is P_S (the release), so P_replay is P_S.
    fresh = buf.replace(last_sampled=jnp.full(4, 10, jnp.int32))
    np.testing.assert_allclose(np.asarray(lb.replay_weights(fresh, cfg)), p_s, rtol=1e-5, atol=1e-7)


def test_buffer_config_rejects_bad_settings():
    for kwargs in (dict(capacity=0), dict(score_transform="nope"), dict(staleness_transform="rank2"),
                   dict(temperature=0.0), dict(staleness_coef=1.5), dict(score_alpha=0.0), dict(top_k=0),
                   dict(eps=-0.1)):
        with pytest.raises(ValueError):
            lb.BufferConfig(**kwargs)
