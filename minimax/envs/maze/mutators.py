"""Level mutators: `mutate(key, level) -> level`, jittable and vmappable.

ACCEL does not only sample fresh levels: it evolves the levels already in the PLR
buffer by small random edits, so the curriculum can climb gradually from easy levels
(an empty room) to hard ones near the frontier of what the agent can solve. A mutator
applies `n_edits` such edits in sequence; each edit's kind is drawn uniformly.

Every mutator here always returns a valid level (agent and goal on free, in-bounds,
distinct cells): an edit that has no legal target in the current level (no free cell
to move the goal to, no wall to remove, ...) is a no-op. Shapes are static, randomness
comes only from the key, and there is no Python branching on traced values, so the
mutators jit, vmap and scan like the generators.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Callable

import jax
import jax.numpy as jnp

from minimax.envs.maze.generators import sample_cell
from minimax.envs.maze.level import Level
from minimax.envs.registry import check_n_edits

Mutator = Callable[[jax.Array, Level], Level]


class MinimaxEdit(IntEnum):
    """Edit kinds of `make_minimax_mutator` (numbered as minimax's `Mutations` enum)."""
    NO_OP = 0
    FLIP_WALL = 1
    MOVE_GOAL = 2


class FourEdit(IntEnum):
    """Edit kinds of `make_four_edit_mutator`."""
    ADD_WALL = 0
    REMOVE_WALL = 1
    MOVE_AGENT = 2
    MOVE_GOAL = 3


def _cell_mask(shape: tuple[int, int], pos: jax.Array) -> jax.Array:
    """bool[H, W], True only at (x, y) = `pos`."""
    h, w = shape
    ys, xs = jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij")
    return (xs == pos[0]) & (ys == pos[1])


def _sample_if_any(key: jax.Array, allowed: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(a uniform cell among `allowed` as int32 (x, y), whether `allowed` had any True cell).

    `sample_cell` needs a True cell, so an empty mask is replaced by an all-True one; the
    returned cell is then meaningless and callers must ignore it when the flag is False.
    """
    ok = jnp.any(allowed)
    return sample_cell(key, jnp.where(ok, allowed, True)), ok


def _run_edits(key: jax.Array, level: Level, n_edits: int, n_kinds: int, edit) -> Level:
    """Apply `edit(key, level, kind)` `n_edits` times with kinds uniform over `n_kinds`."""
    k_kinds, k_edits = jax.random.split(key)
    kinds = jax.random.randint(k_kinds, (n_edits,), 0, n_kinds, dtype=jnp.int32)
    keys = jax.random.split(k_edits, n_edits)

    def step(lvl, xs):
        k, kind = xs
        return edit(k, lvl, kind), None

    out, _ = jax.lax.scan(step, level, (keys, kinds))
    return out


def make_minimax_mutator(n_edits: int) -> Mutator:
    """The minimax library's ACCEL maze mutation (`move_goal_flip_walls`).

    `n_edits` edits in sequence, each uniformly one of (probability 1/3 each):
      0. nothing;
      1. flip one cell (wall <-> free), uniform over all cells except the agent's and the
         goal's (a no-op only in a maze with no other cell);
      2. move the goal to a uniform free cell that is neither the agent's nor the current
         goal's (a no-op when there is none).
    The agent's position and direction never change. Unlike minimax, an edit without a
    legal target is a no-op instead of sampling from an all-zero distribution.
    """
    n_edits = check_n_edits(n_edits)

    def edit(key: jax.Array, level: Level, kind: jax.Array) -> Level:
        walls = level.wall_map
        occupied = _cell_mask(walls.shape, level.agent_pos) | _cell_mask(walls.shape, level.goal_pos)
        # One draw per edit, from the mask of the chosen kind (NO_OP uses the flip mask and
        # discards the cell).
        allowed = jnp.where(kind == MinimaxEdit.MOVE_GOAL, ~walls & ~occupied, ~occupied)
        cell, ok = _sample_if_any(key, allowed)
        flip = (kind == MinimaxEdit.FLIP_WALL) & ok
        move = (kind == MinimaxEdit.MOVE_GOAL) & ok
        walls = walls ^ (_cell_mask(walls.shape, cell) & flip)
        goal = jnp.where(move, cell.astype(level.goal_pos.dtype), level.goal_pos)
        return level.replace(wall_map=walls, goal_pos=goal)

    def mutate(key: jax.Array, level: Level) -> Level:
        if n_edits == 0:
            return level
        return _run_edits(key, level, n_edits, len(MinimaxEdit), edit)

    return mutate


def make_four_edit_mutator(n_edits: int) -> Mutator:
    """Four-way maze mutation: `n_edits` edits in sequence, each uniformly one of
    (probability 1/4 each):
      0. add a wall on a uniform free cell that is neither the agent's nor the goal's;
      1. remove a uniform wall;
      2. move the agent to a uniform free cell that is neither the goal's nor its current
         one, keeping its direction (so direction stays a separate, unmutated parameter);
      3. move the goal to a uniform free cell that is neither the agent's nor its current one.
    An edit without a legal target (no free cell to wall or move to, no wall to remove) is
    a no-op.
    """
    n_edits = check_n_edits(n_edits)

    def edit(key: jax.Array, level: Level, kind: jax.Array) -> Level:
        walls = level.wall_map
        occupied = _cell_mask(walls.shape, level.agent_pos) | _cell_mask(walls.shape, level.goal_pos)
        # Adding a wall and moving either piece all target free cells off agent and goal.
        allowed = jnp.where(kind == FourEdit.REMOVE_WALL, walls, ~walls & ~occupied)
        cell, ok = _sample_if_any(key, allowed)
        here = _cell_mask(walls.shape, cell)
        walls = jnp.where((kind == FourEdit.ADD_WALL) & ok, walls | here, walls)
        walls = jnp.where((kind == FourEdit.REMOVE_WALL) & ok, walls & ~here, walls)
        agent_pos = jnp.where((kind == FourEdit.MOVE_AGENT) & ok, cell.astype(level.agent_pos.dtype),
                              level.agent_pos)
        goal_pos = jnp.where((kind == FourEdit.MOVE_GOAL) & ok, cell.astype(level.goal_pos.dtype),
                             level.goal_pos)
        return level.replace(wall_map=walls, agent_pos=agent_pos, goal_pos=goal_pos)

    def mutate(key: jax.Array, level: Level) -> Level:
        if n_edits == 0:
            return level
        return _run_edits(key, level, n_edits, len(FourEdit), edit)

    return mutate


def mutate_batch(mutator: Mutator, key: jax.Array, levels: Level) -> Level:
    """Mutate a batch of levels (leading axis) with independent keys split from `key`."""
    n = levels.wall_map.shape[0]
    return jax.vmap(mutator)(jax.random.split(key, n), levels)


MUTATORS: dict[str, Callable[[int], Mutator]] = {
    "minimax": make_minimax_mutator,
    "four_edit": make_four_edit_mutator,
}


def make_mutator(name: str, n_edits: int) -> Mutator:
    """The mutator registered as `name` (see `MUTATORS`) applying `n_edits` edits."""
    try:
        factory = MUTATORS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown mutator {name!r}; valid: {', '.join(sorted(MUTATORS))}") from None
    return factory(n_edits)
