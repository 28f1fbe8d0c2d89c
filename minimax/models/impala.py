"""The Procgen student of the PLR paper: the reference's `ResNetBase` ("large" arch, the IMPALA ResNet
of Espeholt et al. as used by Cobbe et al. 2020), as a memoryless actor-critic.

Layer by layer, as `level_replay/model.py` (facebookresearch/level-replay) builds it:
- three stages with `channels` (16, 32, 32): conv 3x3 stride 1 (TF 'SAME': pad 1 on each side) ->
  max-pool 3x3 stride 2 -> two residual blocks;
- a residual block: `relu -> conv 3x3 -> relu -> conv 3x3`, plus the skip;
- relu -> flatten -> Dense(`hidden`) -> relu -> policy head Dense(`n_actions`) and value head Dense(1).
For 64x64x3 frames the maps are 32x32, 16x16, 8x8, so the fc sees 8*8*32 = 2048 features (the
reference hard-codes 2048; here it follows from the input) and the model has 626,256 parameters
with 15 actions.

Reference details that differ from a textbook IMPALA block, kept because they are what trained
the paper's agents:
- Max-pool padding is PyTorch's `nn.MaxPool2d(3, stride=2, padding=1)`: one -inf pixel on *both*
  sides, not TF 'SAME' (which pads 0 before, 1 after on even sizes). Same output size, windows
  shifted by one pixel.
- The skip carries `relu(x)`, not `x`: `BasicBlock` stores `identity = x` and then runs
  `nn.ReLU(inplace=True)` on `x`, which rewrites that very tensor (checked with torch: `identity
  is out`). `skip_from_relu=False` gives the textbook `x + f(x)`.
- Inputs: `VecPyTorchProcgen` divides the uint8 frames by 255 (MiniGrid's wrapper does not), so
  observations here are pixel values in [0, 255] of any dtype and are divided by 255.
- Flatten order: the reference flattens NCHW, so features are transposed to channel-major before
  flattening; the fc kernel's rows then line up with a PyTorch checkpoint's (`fc.weight.T`).

Initialisation (every bias zero): convs xavier-uniform (`apply_init_`, which touches only
`nn.Conv2d`, so the linear layers keep their own); fc orthogonal with ReLU's gain sqrt 2
(`init_relu_`); value head orthogonal gain 1 (`init_`); policy head orthogonal gain 0.01
(`Categorical` in `level_replay/distributions.py`). Flax's `xavier_uniform` on an HWIO kernel uses
fan_in = 9*C_in, fan_out = 9*C_out, as PyTorch's on OIHW.

Interface as the other students (`models/mlp.py`): `(carry, obs[..., H, W, C], reset[...]) ->
(carry, Categorical(logits[..., A]), value[...])` for any leading dims (`[T, N]` in rollouts),
with a dummy `float32[batch, 1]` carry returned unchanged and `reset` unused.
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from minimax.agents.distributions import Categorical
from minimax.models.initializers import orthogonal

_CONV_INIT = nn.initializers.xavier_uniform()
# PyTorch MaxPool2d(kernel_size=3, stride=2, padding=1): pad one (-inf) pixel on each side.
_POOL_PADDING = ((1, 1), (1, 1))


class ImpalaActorCritic(nn.Module):
    """`(carry, obs[..., H, W, C], reset[...]) -> (carry, Categorical(logits[..., A]), value[...])`."""

    n_actions: int = 15
    channels: tuple = (16, 32, 32)
    hidden: int = 256
    skip_from_relu: bool = True  # the reference's in-place ReLU quirk (module docstring)

    def initial_carry(self, batch: int):
        """A dummy `float32[batch, 1]` (the network is memoryless; checkpoints cannot store size-0
        arrays), returned unchanged by every call."""
        return jnp.zeros((batch, 1), jnp.float32)

    @nn.compact
    def __call__(self, carry, obs: jax.Array, reset: jax.Array):
        if self.n_actions < 1:
            raise ValueError(f"ImpalaActorCritic needs n_actions >= 1, got {self.n_actions}")
        if obs.ndim < 3:
            raise ValueError(f"ImpalaActorCritic needs obs [..., H, W, C], got shape {obs.shape}")
        lead = obs.shape[:-3]
        # Convs want one batch axis: flatten the leading dims (T * N) and restore them at the end.
        x = obs.reshape((-1,) + obs.shape[-3:]).astype(jnp.float32) / 255.0
        for i, c in enumerate(self.channels):
            x = self._stage(x, c, f"layer{i + 1}")
        # Channel-major flatten, as PyTorch's NCHW `reshape(B, -1)`.
        x = jnp.transpose(x, (0, 3, 1, 2)).reshape(x.shape[0], -1)
        x = nn.relu(x)
        x = nn.relu(nn.Dense(self.hidden, kernel_init=orthogonal(math.sqrt(2)),
                             name="fc")(x))
        logits = nn.Dense(self.n_actions, kernel_init=orthogonal(0.01),
                          name="dist_linear")(x)
        value = nn.Dense(1, kernel_init=orthogonal(1.0), name="critic_linear")(x)[..., 0]
        return carry, Categorical(logits.reshape(lead + (self.n_actions,))), value.reshape(lead)

    def _stage(self, x, c: int, name: str):
        """conv 3x3 SAME -> max-pool 3x3 stride 2 (PyTorch padding 1) -> 2 residual blocks."""
        x = self._conv(c, f"{name}_conv")(x)
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding=_POOL_PADDING)
        for j in range(2):
            r = nn.relu(x)
            y = self._conv(c, f"{name}_block{j}_conv1")(r)
            y = self._conv(c, f"{name}_block{j}_conv2")(nn.relu(y))
            x = y + (r if self.skip_from_relu else x)
        return x

    @staticmethod
    def _conv(c: int, name: str):
        # Stride 1, kernel 3: TF 'SAME' (the reference's Conv2d_tf) is one pixel of zeros per side.
        return nn.Conv(c, (3, 3), padding="SAME", kernel_init=_CONV_INIT,
                       bias_init=nn.initializers.zeros, name=name)
