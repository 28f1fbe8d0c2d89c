"""CENIE's environment novelty (Teoh, Li and Varakantham, NeurIPS 2024, "Improving Environment Novelty
Quantification for Effective Unsupervised Environment Design", arXiv 2502.05726), as pure array code.

A level is novel where the student's experience on it is unlike its recent experience: CENIE models
the student's state-action coverage of the last levels it played with a Gaussian mixture (GMM) and
scores a level by the mean negative log-likelihood of its (state, action) samples under that mixture
(the paper's Eq. 3). The replay distribution then mixes a rank distribution of the novelty scores with
PLR's rank distribution of the regret scores, `alpha P_N + (1 - alpha) P_R`, before PLR's staleness
mix (`novelty_weights`). We found no public code and could not read the paper's appendix here; the
choices, each an option (`runners/cenie.py: NoveltyConfig`, docs/methods.md):

- **The coverage**: a FIFO window of the last `window` levels played (new and replayed, every device's),
  `samples` (state, action) pairs drawn uniformly from each level's T steps; refitted every cycle. The
  paper keeps a window of levels (its table's "window size (number of levels)").
- **A (state, action) pair** is the flattened observation and the one-hot action (a continuous or
  multi-discrete action: its values). Reimplementers read the paper's Minigrid runs as using the LSTM's
  hidden state instead; an observation means the same thing however far the student's weights have
  moved, so a window's points stay comparable, and it needs nothing from the model.
- **The mixture**: `components` diagonal Gaussians with `reg_covar` added to each variance, fitted by
  `em_steps` EM iterations per cycle warm-started from the last fit (the first fit starts at randomly
  chosen window points with the window's variance). The paper picks the number of components by a
  silhouette score over a range; a compiled loop needs one fixed number (the issue's "EM on a fixed
  number of components").
- **Novelty is measured before the cycle's levels join the coverage**, so a level is compared with what
  the student saw before it, not with itself. An empty window (the first cycle) scores every level 0.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

from minimax.curricula.features import action_inputs, flat_observation
from minimax.curricula.weights import transform_weights

LOG_2PI = math.log(2 * math.pi)


@struct.dataclass
class Coverage:
    """The student's recent state-action coverage and the mixture fitted to it."""

    points: jax.Array       # float32[P, D]: the window's (state, action) features, P = window x samples
    filled: jax.Array       # bool[P]
    head: jax.Array         # int32[]: where the next level's samples are written (FIFO)
    means: jax.Array        # float32[C, D]
    variances: jax.Array    # float32[C, D]
    log_weights: jax.Array  # float32[C]
    fitted: jax.Array       # bool[]: the mixture has been fitted once


def init_coverage(dim: int, points: int, components: int) -> Coverage:
    """An empty window of `points` features of `dim` values and an unfitted mixture of `components`."""
    return Coverage(points=jnp.zeros((points, dim), jnp.float32), filled=jnp.zeros((points,), bool),
                    head=jnp.zeros((), jnp.int32), means=jnp.zeros((components, dim), jnp.float32),
                    variances=jnp.ones((components, dim), jnp.float32),
                    log_weights=jnp.full((components,), -math.log(components), jnp.float32),
                    fitted=jnp.zeros((), bool))


def step_features(obs, actions, num_actions: int | None) -> jax.Array:
    """float32[T, N, D]: each step's flattened observation (every leaf) and its one-hot action
    (`num_actions` None: the action's own values, continuous or multi-discrete)."""
    return jnp.concatenate([flat_observation(obs), action_inputs(actions, num_actions)], axis=-1)


def level_samples(key, features, samples: int) -> jax.Array:
    """float32[N, S, D]: `samples` steps of each level's rollout `features` [T, N, D], uniformly with
    replacement (each level its own draw)."""
    t, n = features.shape[:2]
    steps = jax.random.randint(key, (n, samples), 0, t)
    return features[steps, jnp.arange(n)[:, None]]


def _log_joint(cov: Coverage, x) -> jax.Array:
    """float32[..., C]: log w_c + log N(x; mu_c, diag var_c) for features `x` [..., D], the squared distances
    expanded into matrix products (x^2 . 1/var - 2 x . mu/var + mu^2 . 1/var)."""
    precision = 1.0 / cov.variances                                          # [C, D]
    quad = (x * x) @ precision.T - 2.0 * x @ (cov.means * precision).T + (cov.means ** 2 * precision).sum(-1)
    log_norm = -0.5 * (jnp.log(cov.variances).sum(-1) + x.shape[-1] * LOG_2PI)  # [C]
    return cov.log_weights + log_norm - 0.5 * quad


def log_likelihood(cov: Coverage, x) -> jax.Array:
    """float32[...]: log p(x) under the mixture, for features `x` [..., D] (diagonal Gaussians)."""
    return jax.nn.logsumexp(_log_joint(cov, x), axis=-1)


def level_novelty(cov: Coverage, samples) -> jax.Array:
    """float32[N]: each level's mean negative log-likelihood of its samples [N, S, D] (Eq. 3); 0 for every
    level while the mixture has not been fitted (nothing to be novel against)."""
    return jnp.where(cov.fitted, -log_likelihood(cov, samples).mean(-1), 0.0)


def push(cov: Coverage, samples) -> Coverage:
    """The window with the levels' samples [N, S, D] written in, oldest first out."""
    new = samples.reshape(-1, samples.shape[-1])
    size = cov.points.shape[0]
    rows = (cov.head + jnp.arange(new.shape[0])) % size
    if new.shape[0] > size:  # more samples than the window holds: keep the last ones
        new, rows = new[-size:], rows[-size:]
    return cov.replace(points=cov.points.at[rows].set(new), filled=cov.filled.at[rows].set(True),
                       head=(cov.head + samples.shape[0] * samples.shape[1]) % size)


def _start(key, cov: Coverage, reg_covar: float) -> Coverage:
    """The first fit's start: means at distinct random window points, the window's variance, equal weights."""
    c = cov.means.shape[0]
    chosen = jax.random.choice(key, cov.points.shape[0], (c,), replace=False, p=cov.filled / cov.filled.sum())
    w = cov.filled.astype(jnp.float32)[:, None]
    mean = (w * cov.points).sum(0) / w.sum()
    var = (w * (cov.points - mean) ** 2).sum(0) / w.sum() + reg_covar
    return cov.replace(means=cov.points[chosen], variances=jnp.broadcast_to(var, cov.variances.shape),
                       log_weights=jnp.full((c,), -math.log(c), jnp.float32))


def em_step(cov: Coverage, reg_covar: float) -> Coverage:
    """One EM iteration over the window's filled points; a component that no point claims keeps its parameters."""
    x, mask = cov.points, cov.filled.astype(jnp.float32)
    resp = jax.nn.softmax(_log_joint(cov, x), axis=-1) * mask[:, None]       # [P, C]
    nk = resp.sum(0)                                                          # [C]
    alive = nk > 1e-6
    safe = jnp.where(alive, nk, 1.0)[:, None]
    means = resp.T @ x / safe
    variances = resp.T @ (x * x) / safe - means ** 2
    variances = jnp.maximum(variances, 0.0) + reg_covar
    log_weights = jnp.log(jnp.maximum(nk, 1e-12) / mask.sum())
    keep = lambda new, old: jnp.where(alive[:, None] if new.ndim == 2 else alive, new, old)  # noqa: E731
    return cov.replace(means=keep(means, cov.means), variances=keep(variances, cov.variances),
                       log_weights=jax.nn.log_softmax(keep(log_weights, cov.log_weights)))


def refit(key, cov: Coverage, em_steps: int, reg_covar: float) -> Coverage:
    """`em_steps` EM iterations from the last fit (or, the first time, from `_start`); unchanged while the
    window holds fewer points than the mixture has components."""
    enough = cov.filled.sum() >= cov.means.shape[0]
    start = jax.lax.cond(cov.fitted | ~enough, lambda c: c, lambda c: _start(key, c, reg_covar), cov)
    fitted = jax.lax.fori_loop(0, em_steps, lambda _, c: em_step(c, reg_covar), start)
    out = jax.tree.map(lambda new, old: jnp.where(enough, new, old), fitted, cov)
    return out.replace(fitted=cov.fitted | enough)


def novelty_weights(regret_scores, novelty, filled, alpha: float, transform: str, temperature: float,
                    eps: float = 0.05, top_k: int = 1, rank_ties: str = "ordinal") -> jax.Array:
    """float32[K]: CENIE's score part of the replay distribution, `alpha P_N + (1 - alpha) P_R`, each the
    buffer's score transform (rank by default) of the novelty and of the regret scores over the filled slots."""
    weights = lambda v: transform_weights(v, filled, transform, temperature, eps, top_k, rank_ties)  # noqa: E731
    if isinstance(alpha, (int, float)) and alpha == 0:  # a constant 0: no novelty transform to compute
        return weights(regret_scores)
    mixed = alpha * weights(novelty) + (1 - alpha) * weights(regret_scores)
    return jnp.where(alpha == 0, weights(regret_scores), mixed)  # a traced alpha may be 0 (hyperparams.py)
