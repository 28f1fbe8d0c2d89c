"""A picture of the curriculum: the highest-weighted levels of a level buffer, as one PNG.

Training writes one (`--buffer-png N`) at every log step so a user can watch what the
curriculum replays: each tile is a level with its replay probability, score and mutation
count. Works on host copies of a buffer, per-device buffers included (a leading device
axis is flattened: their probabilities are then within each device's buffer).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from minimax.curricula.level_buffer import BufferConfig, LevelBuffer, replay_weights
from minimax.envs.images import tile_frames


def top_levels(buffer: LevelBuffer, cfg: BufferConfig, n: int):
    """`(levels, weights, scores, mutations)` of the `n` filled slots with the highest replay
    probability, highest first. A buffer with a leading device axis `[D, K/D]` counts as one."""
    if buffer.scores.ndim == 2:
        weights = jax.vmap(lambda b: replay_weights(b, cfg))(buffer).reshape(-1)
        buffer = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), buffer)
    else:
        weights = replay_weights(buffer, cfg)
    weights = np.where(np.asarray(buffer.filled), np.asarray(weights), -np.inf)
    order = np.argsort(-weights, kind="stable")[:min(n, int(np.asarray(buffer.filled).sum()))]
    pick = lambda x: np.asarray(x)[order]  # noqa: E731
    return (jax.tree.map(pick, buffer.levels), weights[order], pick(buffer.scores), pick(buffer.mutations))


def buffer_picture(buffer: LevelBuffer, cfg: BufferConfig, render_levels, n: int = 16, ncols: int = 8):
    """uint8 image: a grid of the `n` highest-weighted levels, titled `p=<probability> s=<score>`
    (`m<k>` added for mutated levels); None for an empty buffer. `render_levels(levels) ->
    uint8[B, h, w, 3]` draws a batch of levels (the environment's `UEDEnv.render_levels`),
    each frame wide enough for its title."""
    levels, weights, scores, mutations = top_levels(buffer, cfg, n)
    if len(weights) == 0:
        return None
    frames = np.asarray(render_levels(jax.tree.map(jnp.asarray, levels)))
    titles = [f"p={w:.3f} s={s:.2f}" + (f" m{m}" if m else "") for w, s, m in zip(weights, scores, mutations)]
    return tile_frames(list(frames), ncols=ncols, titles=titles)
