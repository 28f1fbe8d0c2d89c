"""Action distributions: what a policy network returns, as pytrees with methods.

A student or teacher network returns `(carry, policy, value)` where `policy` is one of
these: PPO, the rollouts, evaluation and the level scores only call `sample`,
`log_prob`, `entropy` and `mode`, so discrete and continuous actions share every runner.
They are `flax.struct` dataclasses: batched policies (`[T, N]`) are stored in a rollout,
sliced with `jax.tree.map` and vmapped like any other pytree. Methods act on the
trailing (event) axes and broadcast over the leading (batch) ones; `sample` draws one
action per batch element from one key.

`sample(key)` is `sample_from_noise(noise(key))`: the random part (`noise`, which reads only the
parameters' shapes and dtypes) is split from the deterministic one, so a rollout can draw every
step's noise in one batched call before its loop, off the sequential path (`runners/rollout.py`),
and get exactly the actions that per-step `sample` calls would draw.

- `Categorical(logits)`: discrete actions `int32`, logits `[..., A]`.
- `MultiCategorical(logits, nvec)`: multi-discrete actions `int32[..., D]`, one independent
  categorical per dimension d over its own `nvec[d]` options (Kinetix's actions: 3 per motor,
  2 per thruster); logits `[..., D, K]`, K the largest option count, the padding never drawn.
- `DiagGaussian(mean, log_std)`: continuous actions `float32[..., D]` with independent
  coordinates. Actions are unbounded draws; an environment with bounds clips them (as
  gymnax's Pendulum does), and PPO's ratio uses the density of the unclipped draw, the
  usual choice of continuous-control PPO (PureJaxRL, CleanRL).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

_LOG_2PI = math.log(2.0 * math.pi)


@struct.dataclass
class Categorical:
    """A categorical distribution over `{0, ..., A-1}` given unnormalised log-probabilities."""

    logits: jax.Array

    def sample(self, key: jax.Array) -> jax.Array:
        return self.sample_from_noise(self.noise(key))

    def noise(self, key: jax.Array) -> jax.Array:
        """Gumbel noise shaped like the logits (`jax.random.categorical`'s own draw)."""
        return jax.random.gumbel(key, self.logits.shape, self.logits.dtype)

    def sample_from_noise(self, noise: jax.Array) -> jax.Array:
        """The Gumbel-max sample: `jax.random.categorical(key, logits)` when `noise = noise(key)`."""
        return jnp.argmax(noise + self.logits, axis=-1).astype(jnp.int32)

    def log_prob(self, action: jax.Array) -> jax.Array:
        log_p = jax.nn.log_softmax(self.logits)
        return jnp.take_along_axis(log_p, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self) -> jax.Array:
        log_p = jax.nn.log_softmax(self.logits)
        return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)

    def mode(self) -> jax.Array:
        return jnp.argmax(self.logits, -1).astype(jnp.int32)

    @property
    def probs(self) -> jax.Array:
        return jax.nn.softmax(self.logits)


@struct.dataclass
class MultiCategorical:
    """Independent categoricals, one per action dimension: dimension d draws from its first `nvec[d]`
    logits of `logits[..., d, :]` (the rest is padding: probability 0). The joint log-probability and
    entropy are the sums over the dimensions (the Kinetix authors' `MultiDiscreteActionDistribution`)."""

    logits: jax.Array  # [..., D, K]
    nvec: tuple[int, ...] = struct.field(pytree_node=False)

    def _valid(self) -> np.ndarray:
        """bool[D, K]: which options exist."""
        k = self.logits.shape[-1]
        return np.arange(k)[None, :] < np.asarray(self.nvec)[:, None]

    def _log_p(self) -> jax.Array:
        # A finite floor, not -inf: the padding's probability is exactly 0 either way, but -inf would
        # make the entropy's 0 * -inf a NaN in the gradient.
        return jax.nn.log_softmax(jnp.where(self._valid(), self.logits, -1e9))

    def sample(self, key: jax.Array) -> jax.Array:
        return self.sample_from_noise(self.noise(key))

    def noise(self, key: jax.Array) -> jax.Array:
        return jax.random.gumbel(key, self.logits.shape, self.logits.dtype)

    def sample_from_noise(self, noise: jax.Array) -> jax.Array:
        return jnp.argmax(jnp.where(self._valid(), noise + self.logits, -jnp.inf), axis=-1).astype(jnp.int32)

    def log_prob(self, action: jax.Array) -> jax.Array:
        per_dim = jnp.take_along_axis(self._log_p(), action[..., None].astype(jnp.int32), axis=-1)[..., 0]
        return jnp.sum(per_dim, axis=-1)

    def entropy(self) -> jax.Array:
        log_p = self._log_p()
        return -jnp.sum(jnp.where(self._valid(), jnp.exp(log_p) * log_p, 0.0), axis=(-2, -1))

    def mode(self) -> jax.Array:
        return jnp.argmax(jnp.where(self._valid(), self.logits, -jnp.inf), axis=-1).astype(jnp.int32)

    @property
    def probs(self) -> jax.Array:
        """`[..., D, K]`, 0 on the padding."""
        return jnp.exp(self._log_p())


@struct.dataclass
class DiagGaussian:
    """A Gaussian with diagonal covariance: `mean [..., D]`, `log_std` broadcastable to it."""

    mean: jax.Array
    log_std: jax.Array

    def sample(self, key: jax.Array) -> jax.Array:
        return self.sample_from_noise(self.noise(key))

    def noise(self, key: jax.Array) -> jax.Array:
        """Standard normal noise shaped like the mean."""
        return jax.random.normal(key, self.mean.shape, self.mean.dtype)

    def sample_from_noise(self, noise: jax.Array) -> jax.Array:
        std = jnp.exp(jnp.broadcast_to(self.log_std, self.mean.shape))
        return self.mean + std * noise

    def log_prob(self, action: jax.Array) -> jax.Array:
        log_std = jnp.broadcast_to(self.log_std, self.mean.shape)
        z = (action - self.mean) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * z * z - log_std - 0.5 * _LOG_2PI, axis=-1)

    def entropy(self) -> jax.Array:
        log_std = jnp.broadcast_to(self.log_std, self.mean.shape)
        return jnp.sum(log_std + 0.5 * (1.0 + _LOG_2PI), axis=-1)

    def mode(self) -> jax.Array:
        return self.mean


def sample_per_element(keys: jax.Array, policy) -> jax.Array:
    """One action per element of a `[N]`-batched policy, element i drawn with `keys[i]` (so a
    device's slice of a sharded batch draws what the unsharded batch draws for it)."""
    return jax.vmap(lambda k, p: p.sample(k))(keys, policy)


def noise_per_element(keys: jax.Array, policy) -> jax.Array:
    """The noise `sample_per_element(keys, policy)` draws (element i's `noise(keys[i])`): only the
    policy's shapes are read, so any `[N]`-batched policy of the right shapes (zeros) will do."""
    return jax.vmap(lambda k, p: p.noise(k))(keys, policy)


def sample_per_element_from_noise(noise: jax.Array, policy) -> jax.Array:
    """`sample_per_element` with its noise drawn beforehand (`noise_per_element`): the same actions."""
    return jax.vmap(lambda e, p: p.sample_from_noise(e))(noise, policy)

