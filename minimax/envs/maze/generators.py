"""Level generators: `generate(key) -> Level`, jittable and vmappable.

Domain randomisation follows the UED maze literature exactly: `n_walls` wall cells
drawn uniformly *with replacement* over all cells (so a level usually has fewer
distinct walls than `n_walls`), then the agent uniformly on a free cell with a
uniform direction, then the goal uniformly on another free cell.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from minimax.envs.maze.level import Level

Generator = Callable[[jax.Array], Level]


def sample_cell(key: jax.Array, allowed: jax.Array) -> jax.Array:
    """A uniform cell among `allowed` (bool[H, W], at least one True), as int32 (x, y).

    One random integer and a cumulative count, instead of a random number per cell.
    """
    h, w = allowed.shape
    flat = allowed.reshape(-1)
    count = jnp.cumsum(flat, dtype=jnp.int32)
    k = jax.random.randint(key, (), 0, count[-1], dtype=jnp.int32)
    index = jnp.argmax(count > k)
    return jnp.stack([index % w, index // w]).astype(jnp.int32)


def place_agent_and_goal(key: jax.Array, wall_map: jax.Array) -> Level:
    """Agent uniformly on a free cell with a uniform direction, goal on another free cell."""
    h, w = wall_map.shape
    k_agent, k_dir, k_goal = jax.random.split(key, 3)
    free = ~wall_map
    agent_pos = sample_cell(k_agent, free)
    ys, xs = jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij")
    not_agent = (xs != agent_pos[0]) | (ys != agent_pos[1])
    goal_pos = sample_cell(k_goal, free & not_agent)
    agent_dir = jax.random.randint(k_dir, (), 0, 4, dtype=jnp.int32)
    return Level(wall_map=wall_map, goal_pos=goal_pos, agent_pos=agent_pos, agent_dir=agent_dir)


def make_dr_generator(height: int = 13, width: int = 13, n_walls: int = 60, *,
                      replacement: bool = True, solvable_only: bool = False,
                      max_tries: int = 1000) -> Generator:
    """Domain randomisation over `height x width` mazes with `n_walls` wall draws.

    `replacement=False` draws `n_walls` distinct cells. `solvable_only=True` redraws
    (rejection sampling, exact conditional distribution) until the goal is reachable,
    at most `max_tries` times; the last draw is returned if none was solvable, which
    only happens at wall densities where solvable levels are vanishingly rare.
    """
    cells = height * width
    if height < 1 or width < 1:
        raise ValueError(f"maze size must be positive, got {height}x{width}")
    if not 0 <= n_walls <= cells - 2:
        raise ValueError(f"n_walls must be in [0, {cells - 2}] for a {height}x{width} maze "
                         f"(room for agent and goal), got {n_walls}")
    if max_tries < 1:
        raise ValueError(f"max_tries must be >= 1, got {max_tries}")

    def draw(key: jax.Array) -> Level:
        k_walls, k_place = jax.random.split(key)
        if replacement:
            idx = jax.random.randint(k_walls, (n_walls,), 0, cells)
        else:
            idx = jax.random.choice(k_walls, cells, (n_walls,), replace=False)
        walls = jnp.zeros(cells, jnp.bool_).at[idx].set(True).reshape(height, width)
        return place_agent_and_goal(k_place, walls)

    if not solvable_only:
        return draw

    from minimax.envs.maze.paths import is_solvable

    def draw_solvable(key: jax.Array) -> Level:
        def cond(carry):
            tries, level, _ = carry
            return (tries < max_tries) & ~is_solvable(level)

        def body(carry):
            tries, _, key = carry
            key, sub = jax.random.split(key)
            return tries + 1, draw(sub), key

        key, sub = jax.random.split(key)
        _, level, _ = jax.lax.while_loop(cond, body, (jnp.ones((), jnp.int32), draw(sub), key))
        return level

    return draw_solvable


def make_empty_generator(height: int = 13, width: int = 13) -> Generator:
    """Wall-free levels with random agent, direction and goal (ACCEL's starting point)."""
    return make_dr_generator(height, width, n_walls=0)
