"""The Kinetix authors' entity-transformer student (`--student transformer`, `--kinetix-obs entity`).

What it reads: the authors' `EntityObservation` (`envs/kinetix/env.py`), one feature row per polygon,
circle, joint (each joint twice, once from each of its shapes) and thruster, their active masks, the
joints' and thrusters' shape indexes and four shape-by-shape attention masks (all pairs; not
connected by a joint chain; joined by a joint; touching). Leaves are `[T, N, entities, ...]`.

What it computes, as the authors' `ActorCriticTransformer` (kinetix-env 3.0.2,
`kinetix/models/transformer_model.py`) with their default config (`configs/model/model-base.yaml`,
`model-transformer.yaml`: depth 2, 8 heads, query/key width 16, entity width 128, read-out "dummy and
mean", no FFN, single-layer joint and thruster mixing, 5 tanh layers of 128 per head, feedforward):
1. One encoder per entity type: Dense + tanh, orthogonal gain sqrt 2. Shapes get width - 1 features
   and one more, their type (circle 0, polygon 1); joints and thrusters the full width.
2. The shapes (polygons, then circles) after a "dummy" entity of ones that attends to and is attended
   by every active shape; each head group reads one of the four masks (heads / 4 heads each), with
   inactive shapes masked out of every row and column.
3. `depth` times: a pre-LayerNorm attention layer whose two residuals are GRU-style gates (GTrXL's,
   Parisotto et al. 2020: the attention's ReLU and then a ReLU'd Dense of the LayerNorm'd result each
   gated into the stream), then message passing: each active joint adds Dense([its two shapes,
   itself]) to its first shape, each active thruster adds Dense([its shape, itself]) to its shape.
4. The mean over the active shapes and the dummy (permutation invariant: no position encoding, sums
   and means over entities only); optionally one of our recurrent cores; an actor and a critic of
   `head_layers` Dense + tanh each (orthogonal sqrt 2), a Dense of the summed action options (gain 0.01)
   and a value Dense (gain 1), the logits split per action dimension (`MultiCategorical`).

The parameter tree is the authors', name for name (`Dense_0..3` the circle, polygon, joint and thruster
encoders, `Transformer_0/tf_layers_i/{ln1, attention1, gate1, ln2, dense1, gate2}`,
`Transformer_0/{joint,thruster}_layers_i`, `GeneralActorCriticRNN_0/{DenseAndActivation_i/Dense_0, Dense_0,
Dense_1}`), with the same initialisers, so the same key initialises the same parameters and the authors'
feedforward checkpoints load as they are (a recurrent one's GRU is theirs, not our core's: not loadable).
tests/test_entity_transformer.py checks parameters and outputs against their module's, recorded.
786,369 parameters at the default shape for any size class (the feature widths do not depend on it).

Left out: their options off by default (FFN, multi-layer mixing, dropout, full attention, the "dummy"
or "mean" read-outs alone) and `legacy_entity_id` (the type feature their paper's checkpoints lost).
`--matmul-dtype` applies to the Dense layers; the attention's products stay float32.
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from minimax.agents.distributions import MultiCategorical
from minimax.models.initializers import orthogonal
from minimax.models.precision import dense
from minimax.models.recurrent import WithRecurrentCore

MASK_KINDS = 4  # the observation's attention masks: all shapes, not joint-connected, joint-connected, touching


class Gate(nn.Module):
    """GTrXL's GRU-style gate of a residual: `(1 - z) x + z h` from the stream `x` and the update `y`."""

    width: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x, y):
        linear = lambda i: dense(self.width, self.matmul_dtype, use_bias=False, name=f"Dense_{i}")  # noqa: E731
        reset = jax.nn.sigmoid(linear(0)(y) + linear(1)(x))
        bias = self.param("gating_bias", nn.initializers.zeros, (self.width,))
        update = jax.nn.sigmoid(linear(2)(y) + linear(3)(x) - bias)
        candidate = jnp.tanh(linear(4)(y) + linear(5)(reset * x))
        return (1 - update) * x + update * candidate


class GatedAttentionLayer(nn.Module):
    """Pre-LayerNorm self-attention over the shapes, both residuals gated (`Gate`)."""

    width: int
    heads: int
    qkv: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x, mask):
        attended = nn.MultiHeadDotProductAttention(num_heads=self.heads, qkv_features=self.qkv,
                                                   out_features=self.width, name="attention1")(
            nn.LayerNorm(name="ln1")(x), mask=mask)
        y = Gate(self.width, self.matmul_dtype, name="gate1")(x, nn.relu(attended))
        e = dense(self.width, self.matmul_dtype, name="dense1")(nn.LayerNorm(name="ln2")(y))
        return Gate(self.width, self.matmul_dtype, name="gate2")(y, nn.relu(e))


def _gather(shapes, index):
    """`shapes[..., index, :]` per leading position: `[..., E, W]`, `[..., J]` -> `[..., J, W]`."""
    return jnp.take_along_axis(shapes, index[..., None], axis=-2)


def _scatter_add(shapes, index, delta):
    """`shapes.at[index].add(delta)` per leading position (`[..., E, W]`, `[..., J]`, `[..., J, W]`)."""
    lead = shapes.shape[:-2]
    flat = jax.vmap(lambda s, i, d: s.at[i].add(d))(shapes.reshape(-1, *shapes.shape[-2:]),
                                                    index.reshape(-1, index.shape[-1]),
                                                    delta.reshape(-1, *delta.shape[-2:]))
    return flat.reshape(*lead, *shapes.shape[-2:])


class EntityMixer(nn.Module):
    """`depth` x (attention over the shapes, then the joints' and thrusters' messages into their shapes)."""

    width: int
    heads: int
    qkv: int
    depth: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, shapes, mask, joints, joint_mask, joint_index, thrusters, thruster_mask, thruster_index):
        for i in range(self.depth):
            shapes = GatedAttentionLayer(self.width, self.heads, self.qkv, self.matmul_dtype,
                                         name=f"tf_layers_{i}")(shapes, mask)
            joint_in = jnp.concatenate([_gather(shapes, joint_index[..., 0]), _gather(shapes, joint_index[..., 1]),
                                        joints], axis=-1)
            joint_delta = dense(self.width, self.matmul_dtype, name=f"joint_layers_{i}")(joint_in)
            thruster_in = jnp.concatenate([_gather(shapes, thruster_index), thrusters], axis=-1)
            thruster_delta = dense(self.width, self.matmul_dtype, name=f"thruster_layers_{i}")(thruster_in)
            shapes = _scatter_add(shapes, joint_index[..., 0], joint_delta * joint_mask[..., None])
            shapes = _scatter_add(shapes, thruster_index, thruster_delta * thruster_mask[..., None])
        return shapes


class DenseTanh(nn.Module):
    """One hidden layer of a head (the authors' `DenseAndActivation`)."""

    width: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, x):
        return jnp.tanh(dense(self.width, self.matmul_dtype, kernel_init=orthogonal(math.sqrt(2)),
                              name="Dense_0")(x))


class ActorCriticHeads(nn.Module):
    """`head_layers` tanh layers each for the actor and the critic (actor's first), then the flat logits of
    every action dimension's options and the value."""

    n_logits: int
    width: int
    layers: int
    matmul_dtype: str = "float32"

    @nn.compact
    def __call__(self, h):
        actor = critic = h
        for i in range(self.layers):
            actor = DenseTanh(self.width, self.matmul_dtype, name=f"DenseAndActivation_{i}")(actor)
        for i in range(self.layers):
            critic = DenseTanh(self.width, self.matmul_dtype, name=f"DenseAndActivation_{self.layers + i}")(critic)
        logits = dense(self.n_logits, self.matmul_dtype, kernel_init=orthogonal(0.01), name="Dense_0")(actor)
        value = dense(1, self.matmul_dtype, kernel_init=orthogonal(1.0), name="Dense_1")(critic)[..., 0]
        return logits, value


def split_logits(flat, nvec: tuple[int, ...]):
    """Flat logits `[..., sum(nvec)]` (dimension d's options after the earlier dimensions') as `[..., D, K]`
    (K = max(nvec); a dimension's padding repeats its last logit, which `MultiCategorical` never draws)."""
    offsets = np.cumsum((0,) + tuple(nvec[:-1]))
    index = np.array([[o + min(k, n - 1) for k in range(max(nvec))] for o, n in zip(offsets, nvec)])
    return flat[..., index]


class EntityTransformerActorCritic(WithRecurrentCore):
    """`(carry, EntityObservation[T, N], reset[T, N]) -> (carry, MultiCategorical[T, N], value[T, N])`."""

    recurrent_cell: str = "none"
    recurrent_size: int = 256
    action_nvec: tuple[int, ...] = ()
    width: int = 128          # entity embedding (transformer_encoder_size)
    qkv: int = 16             # attention query/key/value width (transformer_size)
    heads: int = 8
    depth: int = 2
    head_width: int = 128
    head_layers: int = 5

    @classmethod
    def from_options(cls, model, action_nvec: tuple[int, ...]) -> "EntityTransformerActorCritic":
        """The student of a run's model options (`config.ModelConfig`: the `--transformer-*` shape, the core)."""
        return cls(action_nvec=tuple(action_nvec), width=model.transformer_width, qkv=model.transformer_qkv,
                   heads=model.transformer_heads, depth=model.transformer_layers,
                   head_width=model.transformer_head_width, head_layers=model.transformer_head_layers,
                   recurrent_cell=model.recurrent_cell, recurrent_size=model.recurrent_size,
                   s5_layers=model.s5_layers, s5_blocks=model.s5_blocks, s5_layernorm=model.s5_layernorm,
                   s5_scan=model.s5_scan, scan_unroll=model.scan_unroll, matmul_dtype=model.matmul_dtype)

    @property
    def has_core(self) -> bool:
        return self.recurrent_cell != "none"

    def initial_carry(self, batch: int):
        """The core's zero state, or one unused zero per env without a core (as `MLPActorCritic`)."""
        return super().initial_carry(batch) if self.has_core else jnp.zeros((batch, 1), jnp.float32)

    def _encode(self, features, name: str, entity_type: int | None = None):
        """Dense + tanh per entity; shapes get their type (circle 0, polygon 1) as the last feature."""
        width = self.width - (entity_type is not None)
        h = jnp.tanh(dense(width, self.matmul_dtype, kernel_init=orthogonal(math.sqrt(2)), name=name)(
            features.astype(jnp.float32)))
        if entity_type is None:
            return h
        return jnp.concatenate([h, jnp.full((*h.shape[:-1], 1), float(entity_type), h.dtype)], axis=-1)

    @nn.compact
    def __call__(self, carry, obs, reset: jax.Array):
        if not self.action_nvec or min(self.action_nvec) < 1 or self.heads % MASK_KINDS:
            raise ValueError(f"EntityTransformerActorCritic needs action_nvec counts >= 1 and heads a multiple of "
                             f"{MASK_KINDS}, got action_nvec={self.action_nvec}, heads={self.heads}")
        circles = self._encode(obs.circles, "Dense_0", entity_type=0)
        polygons = self._encode(obs.polygons, "Dense_1", entity_type=1)
        joints, thrusters = self._encode(obs.joints, "Dense_2"), self._encode(obs.thrusters, "Dense_3")
        lead = polygons.shape[:-2]
        shapes = jnp.concatenate([jnp.ones((*lead, 1, self.width)), polygons, circles], axis=-2)
        active = jnp.concatenate([jnp.ones((*lead, 1), bool), obs.polygon_mask, obs.circle_mask], axis=-1)
        kinds = jnp.ones((*lead, MASK_KINDS, active.shape[-1], active.shape[-1]), bool)
        kinds = kinds.at[..., 1:, 1:].set(obs.attention_mask)  # the dummy attends and is attended everywhere
        kinds = kinds & active[..., None, :, None] & active[..., None, None, :]
        mask = jnp.repeat(kinds, self.heads // MASK_KINDS, axis=-3)
        shapes = EntityMixer(self.width, self.heads, self.qkv, self.depth, self.matmul_dtype, name="Transformer_0")(
            shapes, mask, joints, obs.joint_mask, obs.joint_indexes + 1, thrusters, obs.thruster_mask,
            obs.thruster_indexes + 1)
        h = jnp.mean(shapes, axis=-2, where=active[..., None])
        if self.has_core:
            carry, h = self.core("core")(carry, h, reset)
        logits, value = ActorCriticHeads(sum(self.action_nvec), self.head_width, self.head_layers, self.matmul_dtype,
                                         name="GeneralActorCriticRNN_0")(h)
        return carry, MultiCategorical(split_logits(logits, tuple(self.action_nvec)), tuple(self.action_nvec)), value
