"""XLand-MiniGrid (xminigrid's engine) with rulesets as levels (needs the optional `xland` extra).

`rulesets.py` generates the authors' benchmarks here (numpy and Python's `random`, no download),
`benchmarks.py` caches them as `.npz` and holds SFL's evaluation draws, `env.py` runs xminigrid behind
minimax's `Environment` API, `mutators.py` is ACCEL's, `render.py` draws, `spec.py` registers `--env xland`,
`options.py` the run's XLand options. The names below load on first use (`envs/lazy.py`), so reading the
options (every run's config does) imports no xminigrid.
"""

from minimax.envs.lazy import lazy_exports

_EXPORTS = {**{n: "env" for n in ("XLand", "XLandLevel", "XLandParams", "XLandState", "level_identity")},
            **{n: "spec" for n in ("SUITES", "held_out", "make_pool_generator")},
            "make_ruleset_mutator": "mutators"}
__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
