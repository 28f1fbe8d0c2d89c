"""Kinetix (the authors' 2D physics, `kinetix-env`) with scenes as levels (needs the optional `kinetix` extra).

`engine.py` imports the authors' environment without their training stack, `env.py` runs it
behind minimax's `Environment` API, `levels.py` holds their generator, mutator and held-out levels.
"""

from minimax.envs.kinetix.env import KinetixParams, KinetixSingle, KinetixState, action_nvec, canonical_level
from minimax.envs.kinetix.levels import (
    SUITES, held_out, level_metrics, level_names, make_kinetix_generator, make_kinetix_mutator, noop_solves,
)

__all__ = ["KinetixParams", "KinetixSingle", "KinetixState", "action_nvec", "canonical_level", "SUITES", "held_out",
           "level_metrics", "level_names", "make_kinetix_generator", "make_kinetix_mutator", "noop_solves"]
