"""Runners: one pure, jittable `init(key)` / `step(state)` pair per autocurriculum."""

from minimax.runners.dr import DRRunner, DRState

__all__ = ["DRRunner", "DRState"]
