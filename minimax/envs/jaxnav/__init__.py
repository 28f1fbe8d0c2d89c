"""JaxNav (jaxmarl's single-agent robot navigation) with maps as levels (needs the optional `jaxmarl` package).

`JaxNavSingle` runs jaxmarl's own dynamics, lidar, reward and observation behind minimax's
`Environment` API (`env.py`); `levels.py` holds SFL's generator, ACCEL edits and held-out maps,
`render.py` the pictures.
"""

from minimax.envs.jaxnav.env import NavLevel, NavParams, NavState, JaxNavSingle, jaxnav_env, nav_level
from minimax.envs.jaxnav.levels import (
    SINGLE_MAPS, SUITES, held_out, level_metrics, make_nav_generator, make_nav_mutator, reachable_cells,
)

__all__ = ["JaxNavSingle", "NavLevel", "NavParams", "NavState", "jaxnav_env", "nav_level", "make_nav_generator",
           "make_nav_mutator", "held_out", "level_metrics", "reachable_cells", "SUITES", "SINGLE_MAPS"]
