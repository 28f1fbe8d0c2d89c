"""JaxNav's own options (the `jaxnav` group of a run's config, declared where `--env jaxnav`
registers; importing this module does not import jaxmarl)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from minimax.core.options import check


@dataclasses.dataclass(frozen=True)
class NavOptions:
    """JaxNav: its generated maps and its actions."""

    nav_fill: float = 0.6
    """Generated maps wall off a uniform number of interior cells below this fraction (SFL's 0.6)."""
    nav_valid_path_check: bool = False
    """Generated goals lie in the start's connected free region (SFL's test sets; its training does not)."""
    nav_actions: Literal["continuous", "discrete"] = "continuous"
    """continuous (target speed and turn rate, a Gaussian policy; SFL's) or discrete (jaxmarl's 15 pairs)."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        if not (isinstance(self.nav_fill, (int, float)) and 0.0 <= self.nav_fill < 1.0):
            c.add(f"--nav-fill must be in [0, 1), got {self.nav_fill!r}")
