"""TiAda (Li et al., "TiAda: A Time-scale Adaptive Algorithm for Nonconvex Minimax Optimization",
ICLR 2023), the student's optimiser in NCC's authors' code (nmonette/NCC-UED,
`minigrid/util/ncc_utils.py: ti_ada`, their Adam variant), selected with `--optimizer ti_ada`.

Per parameter, with gradient g at step t (counted from 1):

    m_t = b1 m_{t-1} + (1 - b1) g          v_t = b2 v_{t-1} + (1 - b2) g^2
    update = -lr_t * r * (m_t / (1 - b1^t)) / ((v_t / sqrt(1 - b2^t))^alpha + eps)

`r = (sum v_t)^alpha / max(sum v_t, sum v^y)^alpha` is TiAda's ratio of the student's to the
adversary's effective step. The authors pass the adversary's accumulator as zeros
(`vy0 = zeros(capacity)`), so `r = 1` whenever the gradient is not all zero; we keep that
(a zero gradient leaves the parameters where they are, where their code would divide 0 by 0).
With `alpha = 0.5` and the bias correction inside the power dropped, this is Adam; note the
`sqrt` on the second-moment correction inside the power, as they write it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import struct


@struct.dataclass
class TiAdaState:
    count: jax.Array   # int32: steps taken
    mu: optax.Params   # first moment
    nu: optax.Params   # second moment


def scale_by_ti_ada(alpha: float = 0.6, b1: float = 0.9, b2: float = 0.999,
                    eps: float = 1e-5) -> optax.GradientTransformation:
    """The update direction before the learning rate (module docstring)."""

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return TiAdaState(count=jnp.zeros((), jnp.int32), mu=zeros, nu=zeros)

    def update(grads, state, params=None):
        del params
        count = state.count + 1
        t = count.astype(jnp.float32)
        mu = jax.tree.map(lambda g, m: (1 - b1) * g + b1 * m, grads, state.mu)
        nu = jax.tree.map(lambda g, v: (1 - b2) * g * g + b2 * v, grads, state.nu)
        total = sum(jnp.sum(v) for v in jax.tree.leaves(nu))
        ratio = jnp.where(total > 0, 1.0, 0.0)
        corr1, corr2 = 1 - b1 ** t, jnp.sqrt(1 - b2 ** t)
        updates = jax.tree.map(lambda m, v: ratio * (m / corr1) / (jnp.power(v / corr2, alpha) + eps), mu, nu)
        return updates, TiAdaState(count=count, mu=mu, nu=nu)

    return optax.GradientTransformation(init, update)


def ti_ada(learning_rate, alpha: float = 0.6, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-5) -> optax.GradientTransformation:
    """TiAda as an optax optimiser (`learning_rate`: a float or an optax schedule)."""
    return optax.chain(scale_by_ti_ada(alpha, b1, b2, eps), optax.scale_by_learning_rate(learning_rate))
