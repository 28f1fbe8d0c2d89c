"""Craftax-Classic with generated worlds as levels (needs the optional `craftax` package).

`CraftaxClassic` runs craftax's own world generator, dynamics and symbolic observation behind
minimax's `Environment` API; see `env.py` for what a level is and how the step key is used,
`mutators.py` for ACCEL's world edits.
"""

from minimax.envs.craftax.env import (
    ACHIEVEMENT_NAMES, HELD_OUT_TAG, NUM_ACHIEVEMENTS, NUM_ACTIONS, NUM_HELD_OUT_WORLDS, SUITES,
    CraftaxClassic, CraftaxParams, CraftaxState, canonical_world, held_out, held_out_key,
    level_identity, level_metrics, make_world_generator,
)
from minimax.envs.craftax.mutators import EDIT_TILES, MUTATORS, make_world_mutator

__all__ = [
    "CraftaxClassic", "CraftaxParams", "CraftaxState", "canonical_world", "make_world_generator",
    "level_identity", "level_metrics", "held_out", "held_out_key", "SUITES", "NUM_HELD_OUT_WORLDS",
    "HELD_OUT_TAG", "NUM_ACTIONS", "NUM_ACHIEVEMENTS", "ACHIEVEMENT_NAMES",
    "EDIT_TILES", "MUTATORS", "make_world_mutator",
]
