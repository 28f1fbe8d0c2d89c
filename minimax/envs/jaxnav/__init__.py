"""JaxNav (jaxmarl's single-agent robot navigation) with maps as levels (needs the optional `jaxmarl` package).

`JaxNavSingle` runs jaxmarl's own dynamics, lidar, reward and observation behind minimax's
`Environment` API (`env.py`); `levels.py` holds SFL's generator, ACCEL edits and held-out maps,
`render.py` the pictures, `options.py` the run's JaxNav options. The names below load on first use
(`envs/lazy.py`), so reading the options (every run's config does) does not import jaxmarl.
"""

from minimax.envs.lazy import lazy_exports

_EXPORTS = {**{n: "env" for n in ("NavLevel", "NavParams", "NavState", "JaxNavSingle", "jaxnav_env", "nav_level")},
            **{n: "levels" for n in ("SINGLE_MAPS", "SUITES", "held_out", "level_metrics", "make_nav_generator",
                                     "make_nav_mutator", "reachable_cells")}}
__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
