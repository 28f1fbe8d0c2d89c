"""The OOD suite's procedural mazes: MiniGrid's FourRooms, SimpleCrossing and perfect mazes, each a
jittable, vmappable `key -> Level` sampler (`ood.py` names them and fixes their sizes and budgets)."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from minimax.envs.maze.generators import place_agent_and_goal
from minimax.envs.maze.level import Level

Sampler = Callable[[jax.Array], Level]


def four_rooms_sampler(size: int = 17) -> Sampler:
    """MiniGrid FourRooms: a wall row and column through the middle, one door per wall
    segment at a uniform position; goal and agent on distinct uniform free cells."""
    mid = size // 2
    walls = np.zeros((size, size), dtype=bool)
    walls[mid, :] = walls[:, mid] = True

    def sample(key: jax.Array) -> Level:
        k_doors, k_place = jax.random.split(key)
        # Offsets in [0, mid) of the doors in the left, right, top and bottom segments.
        offsets = jax.random.randint(k_doors, (4,), 0, mid)
        door_x = jnp.stack([offsets[0], mid + 1 + offsets[1], mid, mid])
        door_y = jnp.stack([mid, mid, offsets[2], mid + 1 + offsets[3]])
        wall_map = jnp.asarray(walls).at[door_y, door_x].set(False)
        return place_agent_and_goal(k_place, wall_map)

    return sample


def crossing_sampler(size: int = 9, num_crossings: int = 5) -> Sampler:
    """MiniGrid SimpleCrossing (S11N5 at the defaults): `num_crossings` full wall lines among
    the odd rows and columns, then a random interleaving of down/right moves through the
    rooms between them opens one gap per line, at a uniform cell of the current room's side,
    so the goal at the far corner is always reachable."""
    lines = np.arange(1, size - 1, 2)  # candidate line coordinates, both for rows and columns
    n_lines = len(lines)
    if not 0 <= num_crossings <= 2 * n_lines:
        raise ValueError(f"num_crossings must be in [0, {2 * n_lines}], got {num_crossings}")

    def room_limits(chosen):
        """Room boundaries along one axis: -1, the chosen lines in order, then `size`
        (unchosen lines sort to the end as `size` and are never reached)."""
        inner = jnp.sort(jnp.where(chosen, lines, size))
        return jnp.concatenate([jnp.array([-1]), inner, jnp.array([size])])

    def sample(key: jax.Array) -> Level:
        k_lines, k_path, k_gaps = jax.random.split(key, 3)
        chosen = jnp.zeros(2 * n_lines, bool).at[
            jax.random.permutation(k_lines, 2 * n_lines)[:num_crossings]].set(True)
        rows, cols = chosen[:n_lines], chosen[n_lines:]
        row_walls = jnp.zeros(size, bool).at[lines].set(rows)
        col_walls = jnp.zeros(size, bool).at[lines].set(cols)
        wall_map = row_walls[:, None] | col_walls[None, :]
        limits_y, limits_x = room_limits(rows), room_limits(cols)
        n_down = rows.sum()
        path_down = jax.random.permutation(k_path, jnp.arange(num_crossings) < n_down)

        def cross(carry, step):
            wall_map, room_y, room_x = carry
            down, k = step
            # Crossing a row down, the gap is on that row at a uniform x of the current room;
            # crossing a column right, it is on that column at a uniform y of the room.
            k_x, k_y = jax.random.split(k)
            gap_x = jax.random.randint(k_x, (), limits_x[room_x] + 1, limits_x[room_x + 1])
            gap_y = jax.random.randint(k_y, (), limits_y[room_y] + 1, limits_y[room_y + 1])
            x = jnp.where(down, gap_x, limits_x[room_x + 1])
            y = jnp.where(down, limits_y[room_y + 1], gap_y)
            carry = (wall_map.at[y, x].set(False), room_y + down, room_x + (1 - down))
            return carry, None

        steps = (path_down.astype(jnp.int32), jax.random.split(k_gaps, num_crossings))
        (wall_map, _, _), _ = lax.scan(cross, (wall_map, jnp.int32(0), jnp.int32(0)), steps)
        return Level.create(wall_map, (size - 1, size - 1), (0, 0), 0)

    return sample


def carve_perfect_maze(key: jax.Array, height: int, width: int) -> jax.Array:
    """bool[H, W] walls of a perfect maze (odd H, W): randomized depth-first search over the
    rooms at even (x, y), knocking out the wall cell between a room and the unvisited
    neighbour it moves to. A `lax.while_loop` over an explicit stack, 2 * rooms - 1 steps."""
    rh, rw = (height + 1) // 2, (width + 1) // 2
    n_rooms = rh * rw
    ys, xs = np.indices((height, width))
    walls = jnp.asarray((ys % 2 == 1) | (xs % 2 == 1))  # every room open, every link closed
    dx = jnp.array([1, 0, -1, 0])
    dy = jnp.array([0, 1, 0, -1])

    k_start, k_steps = jax.random.split(key)
    start = jax.random.randint(k_start, (), 0, n_rooms)
    stack = jnp.zeros(n_rooms, jnp.int32).at[0].set(start)
    visited = jnp.zeros(n_rooms, bool).at[start].set(True)

    def body(carry):
        walls, visited, stack, depth, step = carry
        room = stack[depth - 1]
        rx, ry = room % rw, room // rw
        nx, ny = rx + dx, ry + dy
        inside = (nx >= 0) & (nx < rw) & (ny >= 0) & (ny < rh)
        neighbour = jnp.where(inside, ny * rw + nx, 0)
        open_dirs = inside & ~visited[neighbour]
        d = jax.random.categorical(jax.random.fold_in(k_steps, step), jnp.where(open_dirs, 0.0, -jnp.inf))
        advance = open_dirs.any()
        nxt = neighbour[d]
        # Advance: knock out the link, visit and push the neighbour. Dead end: pop. (Writes
        # that must not happen go to an out-of-range index and are dropped; the stack slot
        # above the top is garbage anyway.)
        link_y = jnp.where(advance, 2 * ry + dy[d], height)
        walls = walls.at[link_y, 2 * rx + dx[d]].set(False, mode="drop")
        visited = visited.at[jnp.where(advance, nxt, n_rooms)].set(True, mode="drop")
        stack = stack.at[depth].set(nxt, mode="drop")
        depth = jnp.where(advance, depth + 1, depth - 1)
        return walls, visited, stack, depth, step + 1

    carry = (walls, visited, stack, jnp.int32(1), jnp.int32(0))
    walls, *_ = lax.while_loop(lambda c: c[3] > 0, body, carry)
    return walls


def perfect_maze_sampler(height: int, width: int) -> Sampler:
    """A perfect maze from `carve_perfect_maze`; agent and goal on distinct uniform free
    cells, uniform direction."""
    if height % 2 == 0 or width % 2 == 0:
        raise ValueError(f"perfect mazes need odd sizes, got {height}x{width}")

    def sample(key: jax.Array) -> Level:
        k_maze, k_place = jax.random.split(key)
        return place_agent_and_goal(k_place, carve_perfect_maze(k_maze, height, width))

    return sample
