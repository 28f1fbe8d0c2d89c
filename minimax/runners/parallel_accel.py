"""Parallel ACCEL (the minimax report's variant): new, replayed and mutated levels in one rollout.

Parallel PLR's cycle (`parallel_plr.py`) with a third group of N envs: the children of this
cycle's replayed levels (mutated by `mutation_criterion` before the rollout), played, scored
and offered to the buffer after the new and replayed levels; only the replay group trains. Until the
buffer is ready, gradient-free rollouts of 3N new levels fill it.
"""

from __future__ import annotations

from minimax.runners.parallel_plr import ParallelPLRRunner
from minimax.runners.plr_method import plr_method
from minimax.runners.registry import register_method


class ParallelACCELRunner(ParallelPLRRunner):
    method = "parallel_accel"
    groups = 3
    mutates = True


register_method(plr_method(ParallelACCELRunner, "parallel ACCEL: new, replayed and mutated levels in one rollout",
                            coin_replay=False))
