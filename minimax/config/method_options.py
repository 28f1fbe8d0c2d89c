"""Which options a method reads: a flag the chosen method never reads is refused (`training/cli.py`)
and left out of what defines an experiment (`experiments.py`), so setting it changes nothing silently."""

from __future__ import annotations

import functools

from minimax.config.tree import MUTATION_METHODS, OPTIONS, PLR_METHODS, TEACHER_METHODS

OPTION_METHODS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("global_buffer", "buffer_png"), PLR_METHODS),
    **dict.fromkeys(("mutator", "n_mutations", "mutation_criterion", "mutation_subsample"), MUTATION_METHODS),
    "replay_prob": ("plr", "robust_plr", "accel"),
    "dr_restart_each_update": ("dr",),
}
"""Options only some methods read (beyond whole groups: `GROUP_METHODS`)."""

GROUP_METHODS: dict[str, tuple[str, ...]] = {"buffer": PLR_METHODS, "curriculum": PLR_METHODS,
                                             "teacher": TEACHER_METHODS, "sfl": ("sfl",)}
"""Option groups only some methods read."""


@functools.lru_cache(maxsize=None)
def unused_options(method: str) -> frozenset[str]:
    """The options (flat names) `--method method` never reads: setting them changes nothing."""
    unused = {n for n, (g, _) in OPTIONS.items() if g in GROUP_METHODS and method not in GROUP_METHODS[g]}
    unused |= {n for n, methods in OPTION_METHODS.items() if method not in methods}
    return frozenset(unused)
