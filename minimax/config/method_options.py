"""Which options a method reads: a flag the chosen method never reads is refused (`training/cli.py`)
and left out of what defines an experiment (`experiments.py`), so setting it changes nothing silently.

Which options are method-specific is a fact about the options, listed here; which of them a method
reads is declared by the method (`Method.reads`, in its runner module).
"""

from __future__ import annotations

from minimax.config.tree import OPTIONS
from minimax.runners import get_method

METHOD_GROUPS = ("buffer", "curriculum", "teacher", "sfl", "ncc")
"""Option groups only some methods read (a method names those it reads in `Method.reads`)."""
METHOD_OPTIONS = ("global_buffer", "buffer_png", "mutator", "n_mutations", "mutation_criterion", "mutation_subsample",
                  "replay_prob", "dr_restart_each_update")
"""Single options only some methods read, even where their group is read (`--replay-prob` is in the
curriculum group, which the parallel methods read without it)."""


def unused_options(method: str) -> frozenset[str]:
    """The options (flat names) `--method method` never reads: setting them changes nothing
    (nothing for a method that is not registered: its runs are read, not trained)."""
    try:
        reads = set(get_method(method).reads)
    except ValueError:
        return frozenset()
    unused = {n for n, (g, _) in OPTIONS.items() if g in METHOD_GROUPS and g not in reads}
    unused |= {n for n in METHOD_OPTIONS if n not in reads}
    return frozenset(unused)
