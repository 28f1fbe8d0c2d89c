"""The student network for vector observations (classic control): an MLP actor-critic.

Observation `[T, N, D]` -> Dense(hidden) + tanh, twice -> optionally a recurrent core (LSTM,
GRU or S5 from `models/recurrent.py`; `recurrent_cell="none"`, the default, means none) -> a
policy head and a value head, each one Dense layer. The policy is a `Categorical` over
`n_actions`; with `action_dim > 0` a `DiagGaussian` over `action_dim` coordinates whose
`log_std` is a learned, state-independent parameter (the usual continuous-control PPO choice:
PureJaxRL, CleanRL); with `action_nvec` a `MultiCategorical`, one categorical per coordinate
(one Dense layer of `D x max(nvec)` logits, the padding never drawn).

Initialisation as PureJaxRL's PPO networks: hidden layers orthogonal gain sqrt 2, policy output
orthogonal gain 0.01 (a near-uniform, near-zero-mean initial policy), value output orthogonal
gain 1, biases zero, `log_std` = `log_std_init` (0: unit standard deviation, which is the
scale of Pendulum's default torque bound of 2).

`shared_trunk=False` gives the actor and the critic a trunk each (PureJaxRL's layout, which keeps
the value loss from shaping the policy's features); a recurrent core needs the shared trunk,
since one core state serves both heads.

Without a core the network is memoryless and its carry is a dummy `float32[N, 0]`, so every
runner's carry handling (`initial_carry`, resets, storage in rollouts) works unchanged.
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from minimax.agents.distributions import Categorical, DiagGaussian, MultiCategorical
from minimax.models.initializers import orthogonal
from minimax.models.precision import dense
from minimax.models.recurrent import WithRecurrentCore

NO_CORE = "none"


class MLPActorCritic(WithRecurrentCore):
    """`(carry, obs[T, N, D], reset[T, N]) -> (carry, policy[T, N], value[T, N])`."""

    recurrent_cell: str = NO_CORE
    recurrent_size: int = 64
    n_actions: int = 2          # discrete actions (used when action_dim == 0)
    action_dim: int = 0         # > 0: continuous actions of this many coordinates
    action_nvec: tuple[int, ...] = ()  # non-empty: multi-discrete actions, nvec[d] options for coordinate d
    hidden: int = 64
    n_hidden_layers: int = 2
    shared_trunk: bool = True
    log_std_init: float = 0.0

    @classmethod
    def from_options(cls, model, n_actions: int = 0, action_dim: int = 0,
                     action_nvec: tuple[int, ...] = ()) -> "MLPActorCritic":
        """The student of a run's model options (`config.ModelConfig`: `--mlp-hidden`, the core
        and its S5 shape) for `n_actions` discrete, `action_dim` continuous or `action_nvec`
        multi-discrete actions."""
        return cls(n_actions=n_actions, action_dim=action_dim, action_nvec=tuple(action_nvec), hidden=model.mlp_hidden,
                   recurrent_cell=model.recurrent_cell, recurrent_size=model.recurrent_size,
                   s5_layers=model.s5_layers, s5_blocks=model.s5_blocks, s5_layernorm=model.s5_layernorm,
                   s5_scan=model.s5_scan, scan_unroll=model.scan_unroll, matmul_dtype=model.matmul_dtype)

    @property
    def has_core(self) -> bool:
        return self.recurrent_cell != NO_CORE

    def initial_carry(self, batch: int):
        """The core's zero state, or a dummy `float32[batch, 1]` without a core (one unused zero per env:
        checkpoints cannot store arrays of size 0)."""
        if not self.has_core:
            return jnp.zeros((batch, 1), jnp.float32)
        return super().initial_carry(batch)

    @nn.compact
    def __call__(self, carry, obs: jax.Array, reset: jax.Array):
        if self.has_core and not self.shared_trunk:
            raise ValueError("MLPActorCritic: a recurrent core needs shared_trunk=True (one core serves both heads)")
        if self.action_nvec and (self.action_dim or min(self.action_nvec) < 1):
            raise ValueError(f"MLPActorCritic: action_nvec needs every count >= 1 and no action_dim, got "
                             f"action_nvec={self.action_nvec}, action_dim={self.action_dim}")
        if not self.action_nvec and (self.action_dim < 0 or (self.action_dim == 0 and self.n_actions < 1)):
            raise ValueError(f"MLPActorCritic needs action_dim > 0 or n_actions >= 1, got "
                             f"action_dim={self.action_dim}, n_actions={self.n_actions}")
        x = obs.astype(jnp.float32)
        if self.shared_trunk:
            h = self._trunk(x, "trunk")
            if self.has_core:
                carry, h = self.core("core")(carry, h, reset)
            h_policy = h_value = h
        else:
            h_policy, h_value = self._trunk(x, "policy_trunk"), self._trunk(x, "value_trunk")

        if self.action_nvec:
            d, k = len(self.action_nvec), max(self.action_nvec)
            flat = self._dense(d * k, orthogonal(0.01), "policy_out")(h_policy)
            policy = MultiCategorical(flat.reshape(flat.shape[:-1] + (d, k)), tuple(self.action_nvec))
        elif self.action_dim > 0:
            mean = self._dense(self.action_dim, orthogonal(0.01), "policy_out")(h_policy)
            log_std = self.param("log_std", nn.initializers.constant(self.log_std_init), (self.action_dim,))
            # Broadcast to the mean's shape so the policy slices like any [T, N, ...] pytree.
            policy = DiagGaussian(mean, jnp.broadcast_to(log_std, mean.shape))
        else:
            logits = self._dense(self.n_actions, orthogonal(0.01), "policy_out")(h_policy)
            policy = Categorical(logits)
        value = self._dense(1, orthogonal(1.0), "value_out")(h_value)[..., 0]
        return carry, policy, value

    def _trunk(self, x, name: str):
        """`n_hidden_layers` x (Dense(hidden), orthogonal gain sqrt 2, zero bias, tanh)."""
        for i in range(self.n_hidden_layers):
            x = nn.tanh(self._dense(self.hidden, orthogonal(math.sqrt(2)), f"{name}_{i}")(x))
        return x

    def _dense(self, features: int, kernel_init, name: str) -> nn.Dense:
        """A dense layer (zero bias) whose product runs at `matmul_dtype` (`models/precision.py`)."""
        return dense(features, self.matmul_dtype, kernel_init=kernel_init, name=name)
