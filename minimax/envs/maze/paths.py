"""Shortest paths in a maze level, as pure JAX functions.

Curricula score, filter and report levels by how hard they are to solve, and they do it on
whole batches inside jitted code, so every function here has static shapes and vmaps over a
batch of levels. Search is breadth-first by dilation: each move grows the frontier by one step
over the whole grid at once, and the search stops as soon as the frontier is empty or the
target is reached. Cost is O(path length x grid size), with no all-pairs matrices, so 99x99
mazes stay cheap.

A `lax.while_loop` iteration makes `MOVES_PER_TEST` moves, each gated on the search still
running (a finished search's extra moves change nothing), so the results are those of one
move per test. Why: on a GPU every test of a loop whose count depends on the data is read back
by the host, a round trip that drains the device's queue, and the pool of fresh levels of DR's
auto-reset searches every level it generates (`GenerateAutoReset`'s `optimum`): one test per
8 moves cuts those round trips 8-fold for at most 7 idle moves of a few fused kernels.

Cells outside the grid count as walls (the outer ring is implicit, see `level.py`).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from minimax.envs.maze.level import DIR_TO_VEC, Level

MOVES_PER_TEST = 8
"""Search moves per test of the loop's condition (module docstring)."""


def _shift(grid, dx: int, dy: int):
    """Move the contents of `grid[..., y, x]` by (dx, dy) steps of at most one cell; what
    slides in from outside the grid is False (the implicit border)."""
    dx, dy = int(dx), int(dy)
    pad = [(0, 0)] * (grid.ndim - 2) + [(max(dy, 0), max(-dy, 0)), (max(dx, 0), max(-dx, 0))]
    h, w = grid.shape[-2:]
    padded = jnp.pad(grid, pad)
    y0, x0 = max(-dy, 0), max(-dx, 0)
    return padded[..., y0:y0 + h, x0:x0 + w]


def _cell_mask(shape, xy):
    """bool[H, W], True only at cell `xy` = (x, y); built by comparison so it vmaps cleanly."""
    ys, xs = jnp.indices(shape)
    return (xs == xy[0]) & (ys == xy[1])


def _cell_bfs(wall_map, source_xy, target):
    """Distances from `source_xy` to free cells, -1 where not (yet) reached. Stops early
    once any cell of the bool mask `target` is reached."""
    free = ~wall_map
    start = _cell_mask(wall_map.shape, source_xy) & free
    dist = jnp.where(start, 0, -1).astype(jnp.int32)

    def running(state):
        _, frontier, _ = state
        return frontier.any() & ~(frontier & target).any()

    def move(state):
        dist, frontier, k = state
        grown = (_shift(frontier, 1, 0) | _shift(frontier, -1, 0)
                 | _shift(frontier, 0, 1) | _shift(frontier, 0, -1))
        new = grown & free & (dist < 0) & running(state)
        return jnp.where(new, k + 1, dist), new, k + 1

    dist, _, _ = lax.while_loop(running, _moves(move), (dist, start, jnp.int32(0)))
    return dist


def _moves(move):
    """A loop body of `MOVES_PER_TEST` gated moves (module docstring)."""
    def body(state):
        for _ in range(MOVES_PER_TEST):
            state = move(state)
        return state
    return body


def cell_distances(wall_map, source_xy):
    """int32[H, W]: number of 4-connected cell moves from `source_xy` (x, y) to each cell;
    -1 for walls and unreachable cells (everything, if the source is a wall)."""
    no_target = jnp.zeros(wall_map.shape, dtype=jnp.bool_)
    return _cell_bfs(wall_map, source_xy, no_target)


def shortest_path_length(level: Level):
    """int32: cell moves from agent to goal, the last move into the goal included; -1 if
    the goal cannot be reached. Ignores direction: a measure of maze layout, not of actions."""
    goal = _cell_mask(level.wall_map.shape, level.goal_pos)
    dist = _cell_bfs(level.wall_map, level.agent_pos, goal)
    return dist[level.goal_pos[1], level.goal_pos[0]]


def is_solvable(level: Level):
    """bool: whether the agent can reach the goal at all."""
    return shortest_path_length(level) >= 0


def shortest_action_count(level: Level):
    """int32: fewest actions (turn left, turn right, forward) that end the episode; -1 if
    it cannot end.

    This is what an optimal policy pays for, so it sets the best achievable return. States
    are (dir, y, x). The episode ends on a `forward` taken while facing the goal from an
    adjacent cell, and that action counts; the agent never stands on the goal, so the goal
    cell is treated as blocked for movement.
    """
    walls = level.wall_map
    goal = _cell_mask(walls.shape, level.goal_pos)
    open_cells = ~walls & ~goal
    # winning[d, y, x]: facing the goal from (x, y) in direction d.
    winning = jnp.stack([_shift(goal, -dx, -dy) for dx, dy in DIR_TO_VEC])
    dir_mask = jnp.arange(4)[:, None, None] == level.agent_dir
    start = dir_mask & _cell_mask(walls.shape, level.agent_pos)[None]

    def running(state):
        _, frontier, _, found = state
        return frontier.any() & (found < 0)

    def move(state):
        visited, frontier, k, found = state
        go = running(state)
        found = jnp.where(go & (frontier & winning).any(), k + 1, found)
        turned = jnp.roll(frontier, 1, axis=0) | jnp.roll(frontier, -1, axis=0)
        moved = jnp.stack([_shift(frontier[d], dx, dy) for d, (dx, dy) in enumerate(DIR_TO_VEC)])
        new = (turned | (moved & open_cells)) & ~visited & go
        return visited | new, new, k + 1, found

    init = (start, start, jnp.int32(0), jnp.int32(-1))
    _, _, _, found = lax.while_loop(running, _moves(move), init)
    return found


def optimal_return(level: Level, max_steps):
    """float32: return of an optimal policy, `1 - 0.9 * n / max_steps` with n the shortest
    action count, or 0 when the goal cannot be reached within `max_steps` actions (reaching
    it on the last allowed step still pays)."""
    n = shortest_action_count(level)
    reward = 1.0 - 0.9 * n.astype(jnp.float32) / jnp.asarray(max_steps, jnp.float32)
    return jnp.where((n >= 1) & (n <= max_steps), reward, 0.0).astype(jnp.float32)


def env_metrics(level: Level) -> dict:
    """Per-level statistics for logging and filtering: `n_walls` (int32), `shortest_path`
    (int32 cell moves, -1 if unreachable) and `solvable` (bool); jnp scalars, so it vmaps."""
    path = shortest_path_length(level)
    return {
        "n_walls": level.wall_map.sum().astype(jnp.int32),
        "shortest_path": path,
        "solvable": path >= 0,
    }
