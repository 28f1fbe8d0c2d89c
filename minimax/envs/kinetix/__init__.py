"""Kinetix (the authors' 2D physics, `kinetix-env`) with scenes as levels (needs the optional `kinetix` extra).

`engine.py` imports the authors' environment without their training stack, `env.py` runs it
behind minimax's `Environment` API, `levels.py` holds their generator, mutator and held-out levels,
`options.py` the run's Kinetix options. The names below load on first use (`envs/lazy.py`), so
reading the options (every run's config does) does not import the engine.
"""

from minimax.envs.lazy import lazy_exports

_EXPORTS = {**{n: "env" for n in ("KinetixParams", "KinetixSingle", "KinetixState", "action_nvec", "canonical_level")},
            **{n: "levels" for n in ("SUITES", "held_out", "level_metrics", "level_names", "make_kinetix_generator",
                                     "make_kinetix_mutator", "noop_solves")}}
__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
