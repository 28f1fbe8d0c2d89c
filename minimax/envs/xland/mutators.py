"""Ruleset mutators for ACCEL on XLand (new: neither SFL nor NCC ran ACCEL here): `mutate(key, level) -> level`.

An edit keeps the task and changes what stands around it, so a child is a valid ruleset of the same
benchmark shape whose goal stays reachable exactly when its parent's was. Each edit is one of, uniformly:
- a new room: the level's layout key redrawn (doors, object and agent positions);
- a distractor added: a (tile, colour) of the kinds the authors' generator draws distractors from (the 6
  pickable tiles and the goal tile, 10 colours), named by neither the goal, a rule nor an object already
  in the room, put in the first empty object slot (no change when every slot is taken);
- a distractor removed: one object of the room, uniform over those that neither the goal nor any rule
  names (no change when there is none).
Goal and rules never change; the objects the task needs are never removed. `n_edits` edits apply in sequence.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from minimax.envs.registry import check_n_edits
from minimax.envs.xland.env import XLandLevel, raw_key
from minimax.envs.xland.rulesets import NEAR_LHS

Mutator = Callable[[jax.Array, XLandLevel], XLandLevel]
_CANDIDATES = jnp.asarray(NEAR_LHS, jnp.uint8)  # [70, 2]


def named_tiles(level: XLandLevel) -> jax.Array:
    """uint8[K, 2]: every (tile, colour) the goal and the rules name (their inputs and products; (0, 0) padding)."""
    goal = level.goal[1:5].reshape(2, 2)
    rules = level.rules[:, 1:7].reshape(-1, 2)
    return jnp.concatenate([goal, rules])


def _member(tiles: jax.Array, pool: jax.Array) -> jax.Array:
    """bool[len(tiles)]: which of `tiles` appear in `pool` (rows of (tile, colour))."""
    return jnp.any(jnp.all(tiles[:, None, :] == pool[None, :, :], axis=-1), axis=1)


def _new_room(key, level: XLandLevel) -> XLandLevel:
    return level.replace(key=raw_key(jax.random.split(key)[0]))


def _add_distractor(key, level: XLandLevel) -> XLandLevel:
    taken = jnp.concatenate([named_tiles(level), level.init_tiles])
    free = ~_member(_CANDIDATES, taken)
    choice = _CANDIDATES[jax.random.categorical(key, jnp.where(free, 0.0, -jnp.inf))]
    empty = jnp.all(level.init_tiles == 0, axis=-1)
    slot = jnp.argmax(empty)
    ok = jnp.any(empty) & jnp.any(free)
    tiles = level.init_tiles.at[slot].set(jnp.where(ok, choice, level.init_tiles[slot]))
    return level.replace(init_tiles=tiles)


def _remove_distractor(key, level: XLandLevel) -> XLandLevel:
    present = ~jnp.all(level.init_tiles == 0, axis=-1)
    removable = present & ~_member(level.init_tiles, named_tiles(level))
    slot = jax.random.categorical(key, jnp.where(removable, 0.0, -jnp.inf))
    cleared = level.init_tiles.at[slot].set(jnp.zeros(2, level.init_tiles.dtype))
    return level.replace(init_tiles=jnp.where(jnp.any(removable), cleared, level.init_tiles))


EDITS = (_new_room, _add_distractor, _remove_distractor)


def make_ruleset_mutator(n_edits: int) -> Mutator:
    """`mutate(key, level) -> level` applying `n_edits` edits of `EDITS`, each uniform."""
    n = check_n_edits(n_edits)

    def mutate(key, level: XLandLevel) -> XLandLevel:
        def edit(level, edit_key):
            k_kind, k_edit = jax.random.split(edit_key)
            kind = jax.random.randint(k_kind, (), 0, len(EDITS))
            return jax.lax.switch(kind, [lambda lv, f=f: f(k_edit, lv) for f in EDITS], level), None

        return level if n == 0 else jax.lax.scan(edit, level, jax.random.split(key, n))[0]

    return mutate


MUTATORS: dict[str, Callable[[int], Mutator]] = {"ruleset": make_ruleset_mutator}
