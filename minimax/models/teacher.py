"""The teacher network of PAIRED (Dennis et al., 2020), as the minimax release's `default_teacher_cnn`.

It reads the teacher's design observation (`envs/maze/teacher.py`): conv 3x3 (128 filters,
VALID, ReLU) on the full `(H+2) x (W+2)` map -> 13 x 13 x 128 = 21,632 features; an embedding
of the time step (one row per design step -> 10); the noise vector (50); concatenated (21,692)
into an LSTM (256; `recurrent_cell` picks another core, e.g. S5); policy head Dense(32)+tanh -> Dense(H*W), one logit per cell; value head
Dense(32)+tanh -> Dense(1). For the report's 13x13 maze and 60 walls: 22,502,038 parameters,
almost all in the LSTM's input kernel (21,692 x 1,024).

Initialisation as the release's (and as our student's, `models/maze.py`): orthogonal with gain
sqrt 2 for the conv and the head hidden layers, gain 1 for the embedding, the recurrent core
(per gate) and the value output, the constant 0.01 for the policy output (a uniform initial
policy over cells), zero biases.

One difference, on purpose: the time step is clipped to the last design step before the
embedding. The observation after the last step has time = `num_steps`, one past the table;
the release's `nn.Embed` reads it out of range (a NaN row under JAX's fill mode) where it
bootstraps that episode's last value. Nothing acts on that observation and its value is
multiplied by `1 - done = 0`, but a NaN times 0 is NaN.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from minimax.agents.distributions import Categorical
from minimax.models.initializers import orthogonal
from minimax.models.maze import actor_critic_heads, conv_features
from minimax.models.recurrent import WithRecurrentCore


class MazeTeacherActorCritic(WithRecurrentCore):
    """The teacher; its core options and `initial_carry(batch)` come from `WithRecurrentCore`."""

    n_cells: int = 169          # actions: one per maze cell
    num_steps: int = 62         # design steps: time embeddings
    conv_filters: int = 128
    time_embed_size: int = 10
    head_hidden: int = 32

    @nn.compact
    def __call__(self, carry, obs: dict, reset: jax.Array):
        """`(carry, obs[T, N], reset[T, N]) -> (carry, Categorical(logits[T, N, cells]), value[T, N])`."""
        parts = [conv_features(obs["image"], self.conv_filters, self.matmul_dtype)]
        time = jnp.clip(obs["time"].astype(jnp.int32), 0, self.num_steps - 1)
        parts.append(nn.Embed(self.num_steps, self.time_embed_size, embedding_init=orthogonal(1.0),
                              name="time_embed")(time))
        if "noise" in obs:
            parts.append(obs["noise"].astype(jnp.float32))
        carry, h = self.core("core")(
            carry, jnp.concatenate(parts, axis=-1), reset)

        logits, value = actor_critic_heads(h, self.n_cells, self.head_hidden, self.matmul_dtype)
        return carry, Categorical(logits), value
