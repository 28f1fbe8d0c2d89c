"""World mutators for ACCEL: `mutate(key, level) -> level`, jittable and vmappable.

ACCEL evolves the worlds in the PLR buffer by small random edits, so the curriculum can move
step by step from worlds the agent handles to harder ones (a tree farther away, lava near
the start, a lake where the grass was). A Craftax edit rewrites one map tile to one of
`EDIT_TILES`, each drawn uniformly:

- the cell is uniform over every cell but the player's start cell, which is never edited,
  so the player always starts on the grass `generate_world` put there (never in a wall, in
  water, or in lava);
- the new tile is uniform over the natural blocks of craftax's world generator (grass,
  sand, path, water, stone, tree, coal, iron, diamond, lava). Player-made blocks are left
  out: crafting tables and furnaces would hand out what the agent is meant to build, and
  plants need entries in craftax's growing-plant table that a map edit does not make.

`n_edits` edits are applied in sequence (a later edit may hit an earlier one's cell), so a
child differs from its parent in at most `n_edits` tiles. Only `map` changes: its shape and
dtype, the start position and the rest of the start state are the parent's, so the child is
a level like any generated one. Randomness comes only from the key; there is no Python
branching on traced values.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from craftax.craftax_classic.constants import BlockType
from craftax.craftax_classic.envs.craftax_state import EnvState

from minimax.envs.registry import check_n_edits

Mutator = Callable[[jax.Array, EnvState], EnvState]

EDIT_TILES = (
    BlockType.GRASS, BlockType.SAND, BlockType.PATH, BlockType.WATER, BlockType.STONE,
    BlockType.TREE, BlockType.COAL, BlockType.IRON, BlockType.DIAMOND, BlockType.LAVA,
)


def make_world_mutator(n_edits: int) -> Mutator:
    """`mutate(key, level) -> level` rewriting `n_edits` random tiles (never the start cell) to
    random tiles of `EDIT_TILES`."""
    n = check_n_edits(n_edits)
    tiles = jnp.asarray([t.value for t in EDIT_TILES], jnp.int32)

    def mutate(key, level: EnvState) -> EnvState:
        if n == 0:
            return level
        rows, cols = level.map.shape
        start = level.player_position[0] * cols + level.player_position[1]

        def edit(flat_map, edit_key):
            key_cell, key_tile = jax.random.split(edit_key)
            # Uniform over the rows * cols - 1 cells other than the start: skip over it.
            cell = jax.random.randint(key_cell, (), 0, rows * cols - 1)
            cell = cell + (cell >= start)
            tile = tiles[jax.random.randint(key_tile, (), 0, tiles.shape[0])]
            return flat_map.at[cell].set(tile.astype(flat_map.dtype)), None

        flat_map, _ = jax.lax.scan(edit, level.map.reshape(-1), jax.random.split(key, n))
        return level.replace(map=flat_map.reshape(rows, cols))

    return mutate


MUTATORS: dict[str, Callable[[int], Mutator]] = {"tiles": make_world_mutator}
