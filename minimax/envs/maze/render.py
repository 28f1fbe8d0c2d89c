"""Render AMaze levels and states as RGB images, MiniGrid style.

Frames are computed in JAX so a whole batch of levels (or a rollout of states) renders
inside `jit`/`vmap` on the accelerator; only writing files happens on the host.

The look follows MiniGrid: black floor with thin grey grid lines, grey walls, a green
goal and a red triangle for the agent pointing along its direction. The implicit outer
ring of walls is drawn, so an HxW level gives an `(H+2)*tile_size x (W+2)*tile_size`
image. Optionally the cells of the agent's egocentric view are lightened, as MiniGrid
highlights what the agent sees.

Each distinct tile image is drawn once in numpy (per tile size); a frame is then a
gather of those tiles by a per-cell tile index, which jits and vmaps cleanly.
"""

from __future__ import annotations

import functools

import numpy as np
import jax
import jax.numpy as jnp

from minimax.envs.images import save_gif, save_png, tile_frames

__all__ = ["render_level", "render_state", "episode_frames", "tile_atlas", "save_gif", "save_png", "tile_frames"]
from minimax.envs.maze.level import DIR_TO_VEC

# Colours (RGB, uint8), as in MiniGrid.
FLOOR_COLOR = (0, 0, 0)
GRID_LINE_COLOR = (100, 100, 100)
WALL_COLOR = (100, 100, 100)
GOAL_COLOR = (0, 255, 0)
AGENT_COLOR = (255, 0, 0)
HIGHLIGHT_ALPHA = 0.3  # blend towards white for cells in the agent's view

# (dx, dy) per direction: 0 right, 1 down, 2 left, 3 up.

# Tile indices into the tile atlas; the highlighted copy of tile i is i + NUM_TILES.
FLOOR, WALL, GOAL = 0, 1, 2
AGENT_ON_FLOOR = 3  # + agent_dir
AGENT_ON_GOAL = 7  # + agent_dir
NUM_TILES = 11

_SUBDIVS = 3  # supersampling factor for anti-aliased tiles


# --------------------------------------------------------------------------- tiles

def _fill(img: np.ndarray, mask: np.ndarray, color) -> None:
    img[mask] = color


def _tile_coords(size: int):
    """Pixel centres as fractions of the tile, (xf, yf) each [size, size]."""
    f = (np.arange(size) + 0.5) / size
    return np.meshgrid(f, f)  # xf varies along columns, yf along rows


def _floor_tile(size: int) -> np.ndarray:
    """Black floor with grey lines on the top and left edges (MiniGrid's grid)."""
    img = np.zeros((size, size, 3), np.float64)
    img[:] = FLOOR_COLOR
    xf, yf = _tile_coords(size)
    _fill(img, (xf <= 0.031) | (yf <= 0.031), GRID_LINE_COLOR)
    return img


def _agent_right(size: int) -> np.ndarray:
    """Red triangle pointing right over the floor; other directions are rotations."""
    img = _floor_tile(size)
    xf, yf = _tile_coords(size)
    # MiniGrid's triangle: (0.12, 0.19), (0.87, 0.50), (0.12, 0.81).
    half_width = 0.31 * (0.87 - xf) / 0.75
    inside = (xf >= 0.12) & (xf <= 0.87) & (np.abs(yf - 0.5) <= half_width)
    _fill(img, inside, AGENT_COLOR)
    return img


def _downsample(img: np.ndarray) -> np.ndarray:
    s = img.shape[0] // _SUBDIVS
    return img.reshape(s, _SUBDIVS, s, _SUBDIVS, 3).mean(axis=(1, 3))


@functools.lru_cache(maxsize=None)
def tile_atlas(tile_size: int) -> np.ndarray:
    """All tile images as uint8[2 * NUM_TILES, ts, ts, 3]: plain tiles, then highlighted.

    Drawn once per tile size at 3x resolution and averaged, like MiniGrid, so the
    triangle edges are anti-aliased."""
    big = tile_size * _SUBDIVS
    floor = _floor_tile(big)
    wall = np.broadcast_to(np.array(WALL_COLOR, np.float64), floor.shape).copy()
    goal = np.broadcast_to(np.array(GOAL_COLOR, np.float64), floor.shape).copy()
    arrow = _agent_right(big)
    is_red = np.all(arrow == AGENT_COLOR, axis=-1)
    # np.rot90 with k=-d turns clockwise d times: right -> down -> left -> up.
    on_floor = [np.rot90(arrow, k=-d) for d in range(4)]
    on_goal = [np.where(np.rot90(is_red, k=-d)[..., None], AGENT_COLOR, goal) for d in range(4)]
    tiles = np.stack([floor, wall, goal, *on_floor, *on_goal])
    tiles = np.stack([_downsample(t) for t in tiles])
    highlighted = tiles + HIGHLIGHT_ALPHA * (255.0 - tiles)
    atlas = np.concatenate([tiles, highlighted])
    return np.clip(np.round(atlas), 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------- frames

def view_mask(agent_pos, agent_dir, height: int, width: int, agent_view_size: int):
    """bool[height, width]: cells inside the agent's egocentric view box.

    The view is `agent_view_size` cells ahead (the agent's own row included) and
    `agent_view_size // 2` to each side; view cell (r, c) is the world cell
    `agent_pos + (V-1-r) * fwd + (c - V//2) * right`. Here the map is inverted per
    cell (no scatter), so cells outside the grid simply never appear. Coordinates are
    those of the grid passed in (add 1 to `agent_pos` for the padded grid)."""
    v = agent_view_size
    dirs = jnp.asarray(DIR_TO_VEC)
    fwd = dirs[agent_dir]
    right = dirs[(agent_dir + 1) % 4]
    ys, xs = jnp.mgrid[:height, :width]
    dx, dy = xs - agent_pos[0], ys - agent_pos[1]
    ahead = dx * fwd[0] + dy * fwd[1]  # = V-1-r
    side = dx * right[0] + dy * right[1]  # = c - V//2
    return (ahead >= 0) & (ahead <= v - 1) & (side >= -(v // 2)) & (side <= v - 1 - v // 2)


@functools.partial(jax.jit, static_argnames=("tile_size", "agent_view_size"))
def _render(wall_map, goal_pos, agent_pos, agent_dir, tile_size, agent_view_size):
    h, w = wall_map.shape
    gh, gw = h + 2, w + 2
    walls = jnp.pad(wall_map.astype(bool), 1, constant_values=True)
    ys, xs = jnp.mgrid[:gh, :gw]
    # Positions shift by one for the outer ring.
    is_goal = (xs == goal_pos[0] + 1) & (ys == goal_pos[1] + 1)
    is_agent = (xs == agent_pos[0] + 1) & (ys == agent_pos[1] + 1)
    kind = jnp.where(walls, WALL, jnp.where(is_goal, GOAL, FLOOR))
    agent_tile = jnp.where(is_goal, AGENT_ON_GOAL, AGENT_ON_FLOOR) + agent_dir
    index = jnp.where(is_agent, agent_tile, kind)
    if agent_view_size is not None:
        seen = view_mask(agent_pos + 1, agent_dir, gh, gw, agent_view_size)
        index = index + NUM_TILES * seen.astype(index.dtype)
    tiles = jnp.asarray(tile_atlas(tile_size))[index]  # [gh, gw, ts, ts, 3]
    return tiles.transpose(0, 2, 1, 3, 4).reshape(gh * tile_size, gw * tile_size, 3)


def render_level(level, tile_size: int = 16, agent_view_size: int | None = None) -> jnp.ndarray:
    """uint8[(H+2)*tile_size, (W+2)*tile_size, 3] image of a level, outer walls included.

    Accepts anything with `wall_map`, `goal_pos`, `agent_pos` and `agent_dir` (a
    `Level` or an environment state). Works under `jit` and `vmap`; leading batch axes
    on `wall_map` are vmapped over directly. With an int `agent_view_size` the cells
    of the agent's egocentric view are lightened."""
    if not isinstance(tile_size, (int, np.integer)) or tile_size < 1:
        raise ValueError(f"tile_size must be a positive int, got {tile_size!r}")
    if agent_view_size is not None and (
            not isinstance(agent_view_size, (int, np.integer)) or agent_view_size < 1):
        raise ValueError(f"agent_view_size must be a positive int or None, got {agent_view_size!r}")
    args = (jnp.asarray(level.wall_map), jnp.asarray(level.goal_pos),
            jnp.asarray(level.agent_pos), jnp.asarray(level.agent_dir))
    fn = functools.partial(_render, tile_size=int(tile_size),
                           agent_view_size=None if agent_view_size is None else int(agent_view_size))
    for _ in range(args[0].ndim - 2):
        fn = jax.vmap(fn)
    return fn(*args)


def render_state(state, tile_size: int = 16, highlight: bool = True,
                 agent_view_size: int = 5) -> jnp.ndarray:
    """Image of an environment state; by default shows the agent's view, as MiniGrid does."""
    return render_level(state, tile_size=tile_size,
                        agent_view_size=agent_view_size if highlight else None)


# The host-side helpers (frame checks, grids, PNG and GIF files) are environment-agnostic:
# `minimax.envs.images`, re-exported here for the maze's callers.


def episode_frames(level, agent_pos, agent_dir, tile_size: int = 16, agent_view_size: int | None = 5,
                   max_frames: int | None = 200) -> np.ndarray:
    """uint8[T, h, w, 3]: the frames of an episode on `level` whose agent was at `agent_pos[t]`
    facing `agent_dir[t]` (e.g. from `minimax.runners.eval.trace_episode`, cut to its length).
    With `agent_view_size` the view cone is drawn. Long episodes are subsampled evenly to at
    most `max_frames` frames (the first and last always kept) so a GIF stays small."""
    agent_pos, agent_dir = np.asarray(agent_pos), np.asarray(agent_dir)
    n = len(agent_dir)
    if n == 0 or agent_pos.shape != (n, 2):
        raise ValueError(f"agent_pos must be [T, 2] and agent_dir [T] with T >= 1, got {agent_pos.shape} and "
                         f"{agent_dir.shape}")
    keep = np.arange(n) if max_frames is None or n <= max_frames else np.unique(
        np.linspace(0, n - 1, max_frames).round().astype(int))
    # Rendered at a fixed frame count (padded with the last frame) so episodes of different
    # lengths share one compiled program.
    size = len(keep) if max_frames is None else max(max_frames, len(keep))
    padded = np.concatenate([keep, np.full(size - len(keep), keep[-1])])
    walls = np.broadcast_to(np.asarray(level.wall_map), (size,) + np.shape(level.wall_map))
    goals = np.broadcast_to(np.asarray(level.goal_pos), (size, 2))
    frames = _render_frames(type(level)(wall_map=walls, goal_pos=goals, agent_pos=agent_pos[padded],
                                        agent_dir=agent_dir[padded]), tile_size, agent_view_size)
    return np.asarray(frames)[:len(keep)]


@functools.partial(jax.jit, static_argnames=("tile_size", "agent_view_size"))
def _render_frames(levels, tile_size, agent_view_size):
    return render_level(levels, tile_size=tile_size, agent_view_size=agent_view_size)
