"""Kinetix's own options (the `kinetix` group of a run's config, declared where `--env kinetix`
registers; importing this module does not import the Kinetix engine)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from minimax.core.options import check


@dataclasses.dataclass(frozen=True)
class KinetixOptions:
    """Kinetix: the size class of its scenes, the observation and the new-level filter."""

    kinetix_size: Literal["s", "m", "l"] = "s"
    """The size class of the scenes (s: 5 polygons, 2 circles, 1 joint, 1 thruster; m; l); the held-out
    suite of the same name is the default evaluation."""
    kinetix_obs: Literal["flat", "entity"] = "flat"
    """The observation: flat (the authors' symbolic_flat: one vector whose length the size class fixes, for the MLP
    student) or entity (their symbolic_entity: per-entity features and masks, for the entity transformer,
    --student transformer, their default agent)."""
    kinetix_filter_steps: int = 0
    """> 0 draws each new level from 2 sampled ones, avoiding one the no-op action solves within this many
    steps (the authors' PLR and SFL filter, 64; their DR does not filter: 0)."""

    def __post_init__(self):
        check(self, lambda c: c.non_negative("kinetix_filter_steps"))
