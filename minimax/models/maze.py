"""The student network of the UED maze literature (dcd, ACCEL, minimax).

Conv 3x3 (16 filters, VALID, ReLU) on the egocentric image -> 144 features; an
embedding of the agent's direction (4 -> 5); concatenated (149) into a recurrent core
(LSTM 256 by default; GRU; or S5, a projection to 256 and 2 S5 layers, `models/s5.py`); policy
and value heads Dense(32)+tanh -> Dense. With 7 actions: 432,924 parameters with the LSTM,
451,612 with S5 (the minimax report's Table 6 student).

Initialisation follows the minimax reference's student (`GridWorldACStudentModel`), layer by
layer; every bias starts at zero:
- conv: orthogonal, gain sqrt 2 (ReLU's gain; the ReLU follows the conv);
- direction embedding: orthogonal, gain 1;
- recurrent core: orthogonal, gain 1, drawn separately for each gate's input block and
  recurrent block (as the reference's flax cells have one kernel per gate; see `recurrent.py`);
- policy and value hidden layers: orthogonal, gain sqrt 2;
- policy output: the constant 0.01, so every action's logit is the same function of the
  features and the initial policy is exactly uniform for any observation;
- value output: orthogonal, gain 1.

Every call runs a sequence: inputs are `[T, N, ...]` and `reset[T, N]` marks steps that
start a new episode (the core's carry is zeroed there). Acting is the T = 1 case. The core is
built by `models/recurrent.py: make_core` from `recurrent_cell` and, for S5, the `s5_*` fields.
"""

from __future__ import annotations

import math
import typing

import flax.linen as nn
import jax
import jax.numpy as jnp

from minimax.agents.distributions import Categorical
from minimax.models.initializers import orthogonal
from minimax.models.precision import dense, einsum
from minimax.models.recurrent import WithRecurrentCore


class MazeActorCritic(WithRecurrentCore):
    """The student; its core options (`recurrent_cell`, `recurrent_size`, `s5_*`) and
    `initial_carry(batch)` come from `WithRecurrentCore`."""

    n_actions: int = 7
    conv_filters: int = 16
    dir_embed_size: int = 5
    head_hidden: int = 32

    @nn.compact
    def __call__(self, carry, obs: dict, reset: jax.Array):
        """`(carry, obs[T, N], reset[T, N]) -> (carry, Categorical(logits[T, N, A]), value[T, N])`."""
        x = conv_features(obs["image"], self.conv_filters, self.matmul_dtype)
        d = nn.Embed(4, self.dir_embed_size, embedding_init=orthogonal(1.0),
                     name="dir_embed")(obs["agent_dir"].astype(jnp.int32))
        x = jnp.concatenate([x, d], axis=-1)

        carry, h = self.core("core")(carry, x, reset)
        logits, value = actor_critic_heads(h, self.n_actions, self.head_hidden, self.matmul_dtype)
        return carry, Categorical(logits), value


# Shared with the PAIRED teacher (models/teacher.py): called inside a module's compact `__call__`,
# they add their layers to that module under the same names.

class PatchConv(nn.Module):
    """A VALID convolution written as one matmul of image patches by the kernel, with
    `nn.Conv`'s parameters (`kernel [kh, kw, C, F]`, `bias [F]`), initialisers and results.

    Why not `nn.Conv`: XLA:CPU runs a convolution's weight gradient inside a loop (the
    training chunk's `lax.scan`) about 20x slower than outside one (measured: 13 s against
    0.6 s per gradient of PAIRED's 128-filter teacher conv); patches and a matmul run at
    matmul speed everywhere. The patch tensor is small for mazes (kh x kw x the image).
    """

    features: int
    kernel_size: tuple[int, int] = (3, 3)
    kernel_init: typing.Callable = orthogonal(math.sqrt(2))
    matmul_dtype: str = "float32"
    """The product's operand dtype (`models/precision.py`)."""

    @nn.compact
    def __call__(self, x):
        """`x [B, H, W, C]` -> `[B, H - kh + 1, W - kw + 1, F]`."""
        kh, kw = self.kernel_size
        c = x.shape[-1]
        kernel = self.param("kernel", self.kernel_init, (kh, kw, c, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
        patches = jnp.stack([x[:, i:i + oh, j:j + ow, :] for i in range(kh) for j in range(kw)], axis=3)
        kernel = kernel.reshape(kh * kw, c, self.features)
        return einsum("bhwkc,kcf->bhwf", patches, kernel, self.matmul_dtype) + bias


def conv_features(image, filters: int, matmul_dtype: str = "float32"):
    """`image [T, N, h, w, c]` -> conv 3x3 (VALID, orthogonal gain sqrt 2) + ReLU, flattened `[T, N, F]`."""
    image = image.astype(jnp.float32)
    t, n = image.shape[:2]
    x = PatchConv(filters, matmul_dtype=matmul_dtype, name="conv")(image.reshape((t * n,) + image.shape[2:]))
    return nn.relu(x).reshape(t, n, -1)


def actor_critic_heads(h, n_actions: int, hidden: int, matmul_dtype: str = "float32"):
    """`(logits [..., n_actions], value [...])`: Dense(hidden)+tanh then Dense, per head; the policy
    output is the constant 0.01 (a uniform initial policy), the value output orthogonal gain 1. The
    products run at `matmul_dtype`; logits and value are float32 either way."""
    trunk = orthogonal(math.sqrt(2))

    def head(out_size, out_init, name):
        y = nn.tanh(dense(hidden, matmul_dtype, kernel_init=trunk, name=f"{name}_hidden")(h))
        return dense(out_size, matmul_dtype, kernel_init=out_init, name=f"{name}_out")(y)

    logits = head(n_actions, nn.initializers.constant(0.01), "policy")
    value = head(1, orthogonal(1.0), "value")[..., 0]
    return logits, value


def count_params(params) -> int:
    return sum(int(x.size) for x in jax.tree.leaves(params))
