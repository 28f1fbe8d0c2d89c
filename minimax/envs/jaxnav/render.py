"""Pictures of JaxNav levels and episodes (numpy rasterisation, no plotting library).

Top-down, one `tile` x `tile` pixel block per 1 m cell, row y of the map downwards as in its
text form: walls dark grey, floor white, the goal disc (radius 0.3 m, jaxmarl's goal radius)
green, the robot's 0.5 m square blue with a dark bar along its heading, and in an episode the
path driven so far as a light blue trail.
"""

from __future__ import annotations

import numpy as np

WALL, FLOOR, GOAL, ROBOT, HEADING, TRAIL = ((70, 70, 70), (255, 255, 255), (40, 170, 60), (40, 90, 220),
                                           (10, 20, 60), (160, 190, 245))
GOAL_RADIUS, HALF_SIDE = 0.3, 0.25


def _pixel_centres(h: int, w: int, tile: int):
    """(x, y) in metres of every pixel centre of an `h` x `w`-cell picture."""
    ys, xs = np.mgrid[0:h * tile, 0:w * tile]
    return (xs + 0.5) / tile, (ys + 0.5) / tile


def draw(map_data, agent_pos, agent_theta, goal_pos, tile: int = 24, trail=None) -> np.ndarray:
    """uint8[H*tile, W*tile, 3]: the map, the goal, an optional trail (bool[H*tile, W*tile]), the robot."""
    walls = np.asarray(map_data) > 0
    h, w = walls.shape
    x, y = _pixel_centres(h, w, tile)
    img = np.where(walls[(y.astype(int)), (x.astype(int))][..., None], WALL, FLOOR).astype(np.uint8)
    gx, gy = np.asarray(goal_pos, np.float64)
    img[(x - gx) ** 2 + (y - gy) ** 2 <= GOAL_RADIUS ** 2] = GOAL
    if trail is not None:
        img[trail] = TRAIL
    px, py = np.asarray(agent_pos, np.float64)
    c, s = np.cos(float(agent_theta)), np.sin(float(agent_theta))
    # The pixel in the robot's frame (x forward): the square, then the heading bar on top of it.
    fx, fy = c * (x - px) + s * (y - py), -s * (x - px) + c * (y - py)
    img[(np.abs(fx) <= HALF_SIDE) & (np.abs(fy) <= HALF_SIDE)] = ROBOT
    img[(fx >= 0) & (fx <= HALF_SIDE) & (np.abs(fy) <= 0.05)] = HEADING
    return img


def render_levels(levels, tile: int = 12) -> np.ndarray:
    """uint8[B, h, w, 3]: a batch of levels at their start (the buffer pictures)."""
    maps = np.asarray(levels.map_data)
    return np.stack([draw(maps[i], np.asarray(levels.agent_pos)[i], np.asarray(levels.agent_theta)[i],
                          np.asarray(levels.goal_pos)[i], tile) for i in range(maps.shape[0])])


def trace_state(state) -> dict:
    """What a rendered episode needs of each step's state: the robot's pose."""
    return {"pos": state.nav.pos[0], "theta": state.nav.theta[0]}


def render_episode(level, trace, params, max_frames: int = 200) -> np.ndarray:
    """uint8[T, h, w, 3]: an episode's frames from `trace_state` records cut to its length (at most
    `max_frames`, evenly spaced, the last one kept)."""
    pos, theta = np.asarray(trace["pos"], np.float64), np.asarray(trace["theta"])
    steps = set(np.linspace(0, len(pos) - 1, min(len(pos), max_frames)).round().astype(int).tolist())
    h, w = np.shape(level.map_data)
    tile = 24
    trail, frames = np.zeros((h * tile, w * tile), bool), []
    for t in range(len(pos)):
        row, col = (np.clip(pos[t, ::-1] * tile, 0, [h * tile - 1, w * tile - 1])).astype(int)
        trail[max(row - 1, 0):row + 2, max(col - 1, 0):col + 2] = True
        if t in steps:
            frames.append(draw(level.map_data, pos[t], theta[t], level.goal_pos, tile, trail))
    return np.stack(frames)
