"""Pictures of XLand levels and episodes, drawn by xminigrid's own renderer (`rendering/rgb_render.py`): the
grid's tiles, the agent as a triangle pointing where it faces, its field of view highlighted. Tiles are drawn
at `TILE` pixels (xminigrid's default is 32: a 13x13 room would be 416 px a side)."""

from __future__ import annotations

import functools

import jax
import numpy as np
from xminigrid.rendering.rgb_render import render
from xminigrid.types import AgentState

from minimax.envs.xland.env import XLand, XLandParams

TILE = 8


@functools.lru_cache(maxsize=None)
def _starts(params: XLandParams):
    env = XLand()
    return jax.jit(jax.vmap(lambda level: env.init_state(level, params)))


def _frame(grid, position, direction, view_size: int) -> np.ndarray:
    agent = AgentState(position=np.asarray(position), direction=np.asarray(direction))
    return render(np.asarray(grid), agent, view_size, TILE)


def render_levels(levels, params: XLandParams | None = None) -> np.ndarray:
    """uint8[B, h, w, 3]: each level's first room, with the agent where it starts."""
    params = params or XLandParams()
    states = jax.device_get(_starts(params)(levels).engine)
    return np.stack([_frame(states.grid[i], states.agent.position[i], states.agent.direction[i], params.view_size)
                     for i in range(len(states.grid))])


def trace_state(state) -> dict:
    """What a rendered episode needs of each step: the grid and where the agent stands and faces."""
    engine = getattr(state, "inner", state).engine  # in a trial (envs/trials.py), its current episode
    return {"grid": engine.grid, "position": engine.agent.position, "direction": engine.agent.direction}


def render_episode(level, trace, params: XLandParams, max_frames: int = 100) -> np.ndarray:
    """uint8[T, h, w, 3]: an episode's frames from `trace_state` records cut to its length (at most `max_frames`,
    evenly spaced, the last one kept)."""
    del level  # the trace holds every grid
    n = len(np.asarray(trace["grid"]))
    steps = np.unique(np.linspace(0, n - 1, min(n, max_frames)).round().astype(int))
    grid, position, direction = (np.asarray(trace[k]) for k in ("grid", "position", "direction"))
    return np.stack([_frame(grid[t], position[t], direction[t], params.view_size) for t in steps])
