"""Runners: one pure, jittable `init(key)` / `step(state)` pair per autocurriculum."""

from minimax.runners.dr import DRRunner, DRState
from minimax.runners.plr import CurriculumConfig, PLRRunner, PLRState

__all__ = ["DRRunner", "DRState", "CurriculumConfig", "PLRRunner", "PLRState"]
