"""Shared by the level-buffer tests: small levels, hand-built buffers, compiled operations and
an independent plain-Python transcription of PLR eqs. 1-4 (the reference the tests compare to).

Statistical tests use fixed keys, so they are deterministic; their thresholds are
chi-square quantiles at p = 1e-4.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np

from minimax.curricula import level_buffer as lb
from minimax.envs.maze import make_dr_generator

TEMPERATURES = (0.1, 0.3, 1.0, 2.0)


# --------------------------------------------------------------------------- helpers


def chi2_critical(df: int, z: float = 3.719) -> float:
    """Upper chi-square quantile by the Wilson-Hilferty approximation (z = 3.719 is the
    standard normal quantile at 1 - 1e-4; within 5% for df >= 2, erring high)."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + z * math.sqrt(a)) ** 3


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
        if name == "weights_placeholder":
            raise KeyError(name)
        elif name == "weights":
            # eager: op-by-op dispatch reuses compiled primitives across configs, far cheaper
            # than one XLA compile per config
            fn = jax.vmap(lambda b: lb.replay_weights(b, cfg))
        else:
            raise KeyError(name)
        _JIT_CACHE[key] = fn
    return _JIT_CACHE[key]


# --------------------------------------------------------------------------- reference (plain Python)


def ref_transform(values, mask, transform, temperature, eps=0.05, top_k=1, ties="competition"):  # noqa: C901
    """The distribution the docstrings specify, one slot at a time, in float64."""
    k = len(values)
    members = [i for i in range(k) if mask[i]]
    if not members:
        return [1.0 / k] * k                                   # empty buffer: uniform over all slots
    vals = {i: float(values[i]) for i in members}

    def rank(i, ties="competition"):                           # descending; ordinal: lower slot first on ties
        if ties == "ordinal":
            return 1 + sum(1 for j in members if vals[j] > vals[i] or (vals[j] == vals[i] and j < i))
        return 1 + sum(1 for j in members if vals[j] > vals[i])

    w = [0.0] * k
    for i in members:
        if transform == "rank":
            w[i] = (1.0 / rank(i, ties)) ** (1.0 / temperature)  # PLR eq. 1
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
    p_s = ref_transform(scores, filled, cfg.score_transform, cfg.temperature, cfg.eps, cfg.top_k, cfg.rank_ties)
    stale = [episode_count - last_sampled[i] if filled[i] else 0 for i in range(len(scores))]  # c - C_i (eq. 3)
    p_c = ref_transform(stale, filled, cfg.staleness_transform, cfg.staleness_temperature)
    if not any(stale):
        p_c = p_s                                               # nothing stale: P_C is P_S (the release)
    rho = cfg.staleness_coef
    return np.array([(1 - rho) * a + rho * b for a, b in zip(p_s, p_c)])  # eq. 4
