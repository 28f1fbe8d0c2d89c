"""The XLand-MiniGrid student: the meta-RL network of xminigrid's baseline, as SFL and NCC train it.

Their `training/nn.py` (xland-minigrid@9ddd611, copied byte for byte into both papers' code):
- the egocentric view `uint8[5, 5, 2]` (tile and colour ids) as floats through three 2x2 VALID
  convolutions (16, 32, 64 filters, ReLU; orthogonal gain sqrt 2) -> 256 features;
- where the observation has them (the meta-RL trial, `envs/trials.py`), the previous action
  embedded (6 -> 16) and the previous reward as one raw scalar, concatenated;
- a recurrent core (theirs a GRU of 1,024: `--recurrent-cell gru --recurrent-size 1024`);
- actor and critic heads, each Dense(`head_hidden`, orthogonal gain 2) + tanh, then Dense to 6 logits
  (orthogonal 0.01) or to the value (orthogonal 1).
`embed > 0` replaces the raw ids by learned embeddings of that width per id (tile and colour: 2 x `embed`
channels), xminigrid's later baseline ("a student that embeds tiles and colours"); SFL's own is 0.

Differences, on purpose: the convolutions are `PatchConv`s (`nn.Conv`'s parameters and results, matmul
speed on CPU: models/maze.py), and the GRU is our core's (`models/recurrent.py`: the same gate equations, with
per-gate orthogonal initialisers where theirs draws the input weights Glorot-normal).
"""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp

from minimax.agents.distributions import Categorical
from minimax.models.initializers import orthogonal
from minimax.models.maze import PatchConv
from minimax.models.precision import dense
from minimax.models.recurrent import WithRecurrentCore

NUM_TILES, NUM_COLOURS = 13, 12   # xminigrid's id ranges (core/constants.py)


class XLandActorCritic(WithRecurrentCore):
    """`(carry, obs[T, N], reset[T, N]) -> (carry, Categorical(logits[T, N, 6]), value[T, N])`; `obs["image"]`,
    and `obs["prev_action"]`, `obs["prev_reward"]` where a trial wrapper adds them."""

    n_actions: int = 6
    filters: tuple[int, ...] = (16, 32, 64)
    action_embed: int = 16
    head_hidden: int = 256
    embed: int = 0

    @classmethod
    def from_options(cls, model, embed: int = 0, n_actions: int = 6) -> "XLandActorCritic":
        return cls(n_actions=n_actions, head_hidden=model.head_hidden, embed=embed,
                   recurrent_cell=model.recurrent_cell, recurrent_size=model.recurrent_size,
                   s5_layers=model.s5_layers, s5_blocks=model.s5_blocks, s5_layernorm=model.s5_layernorm,
                   s5_scan=model.s5_scan, scan_unroll=model.scan_unroll, matmul_dtype=model.matmul_dtype)

    @nn.compact
    def __call__(self, carry, obs: dict, reset):
        image = obs["image"]
        t, n = image.shape[:2]
        x = image.reshape((t * n,) + image.shape[2:]).astype(jnp.int32)
        if self.embed:
            x = jnp.concatenate([nn.Embed(NUM_TILES, self.embed, name="tile_embed")(x[..., 0]),
                                 nn.Embed(NUM_COLOURS, self.embed, name="colour_embed")(x[..., 1])], axis=-1)
        else:
            x = x.astype(jnp.float32)
        for i, filters in enumerate(self.filters):
            x = nn.relu(PatchConv(filters, (2, 2), matmul_dtype=self.matmul_dtype, name=f"conv{i}")(x))
        parts = [x.reshape(t, n, -1)]
        if "prev_action" in obs:
            parts.append(nn.Embed(self.n_actions, self.action_embed, name="action_embed")(
                obs["prev_action"].astype(jnp.int32)))
        if "prev_reward" in obs:
            parts.append(obs["prev_reward"].astype(jnp.float32)[..., None])
        carry, h = self.core("core")(carry, jnp.concatenate(parts, axis=-1), reset)

        def head(out, gain, name):
            hidden = dense(self.head_hidden, self.matmul_dtype, kernel_init=orthogonal(2.0), name=f"{name}_hidden")
            y = nn.tanh(hidden(h))
            return dense(out, self.matmul_dtype, kernel_init=orthogonal(gain), name=f"{name}_out")(y)

        logits = head(self.n_actions, 0.01, "policy")
        value = head(1, 1.0, "value")[..., 0]
        return carry, Categorical(logits), value

