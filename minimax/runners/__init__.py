"""Runners: one pure, jittable `init(key)` / `step(state)` pair per autocurriculum (see `base.Runner`),
each registered as a `--method` by its own module (`registry.py`).

One module per method: `dr`, `plr`, `robust_plr`, `accel`, `parallel_plr`, `parallel_accel`;
the PLR family's runner base and options are in `plr_family`, the functions its steps are written in in
`plr_parts`, and `plr_method` makes a PLR runner a method;
`paired` runs every learned-teacher method (PAIRED, population PAIRED, the minimax adversary: one
runner, three teacher rewards); `sfl` samples levels and trains on the most learnable (Sampling
For Learnability); `ncc` learns a replay distribution over a level buffer (NCC); `cenie` replays by regret and
state-action novelty (PLR-CENIE); `traced` is ACCEL with TRACED's transition-aware score and co-learnability; `remidi` plays robust PLR over
stages of buffers (ReMiDi). Importing this package registers them all.
"""

from collections.abc import Mapping

# Importing a method's module registers it: this order is `--method`'s order of choices.
from minimax.runners.dr import DRConfig, DRRunner, DRState  # noqa: I001
from minimax.runners.plr import PLRRunner
from minimax.runners.robust_plr import RobustPLRRunner
from minimax.runners.parallel_plr import ParallelPLRRunner
from minimax.runners.accel import ACCELRunner
from minimax.runners.parallel_accel import ParallelACCELRunner
from minimax.runners.paired import PAIREDRunner, PAIREDState, TeacherConfig
from minimax.runners.sfl import SFLConfig, SFLRunner, SFLState
from minimax.runners.ncc import NCCConfig, NCCRunner, NCCState
from minimax.runners.cenie import CENIERunner, CENIEState, NoveltyConfig
from minimax.runners.traced import TracedConfig, TracedRunner, TracedState
from minimax.runners.remidi import RemidiConfig, RemidiRunner, RemidiState
from minimax.runners.base import Runner
from minimax.runners.plr_family import CurriculumConfig, MutationConfig, PLRFamilyRunner, PLRState, ReplayConfig
from minimax.runners.plr_parts import CoinReplayRunner
from minimax.runners.plr_method import MUTATION_OPTIONS, PLR_OPTIONS, REPLAY_OPTIONS, plr_builder, plr_method
from minimax.core.methods import BuildParts, Method, get_method, method_names, register_method

class _Runners(Mapping):
    """`--method` name -> runner class, of every registered method that declares its class (a view of
    the registry, so methods registered later appear too)."""

    def _table(self):
        return {n: m.runner for n in method_names() if (m := get_method(n)).runner is not None}

    def __getitem__(self, name):
        return self._table()[name]

    def __iter__(self):
        return iter(self._table())

    def __len__(self):
        return len(self._table())


RUNNERS: Mapping[str, type] = _Runners()
"""Every method's runner class, by `--method` name (kept for scripts; the registry is `get_method`)."""

__all__ = ["ACCELRunner", "BuildParts", "CENIERunner", "CENIEState", "NoveltyConfig", "CoinReplayRunner", "CurriculumConfig", "DRConfig", "DRRunner", "DRState", "MUTATION_OPTIONS", "Method", "MutationConfig", "NCCConfig", "NCCRunner", "NCCState",
           "PAIREDRunner", "PAIREDState", "PLRFamilyRunner", "PLRRunner", "PLRState", "PLR_OPTIONS", "REPLAY_OPTIONS",
           "ParallelACCELRunner", "ParallelPLRRunner", "RemidiConfig", "RemidiRunner", "RemidiState", "ReplayConfig", "TracedConfig", "TracedRunner", "TracedState", "RUNNERS", "RobustPLRRunner", "Runner", "SFLConfig",
           "SFLRunner", "SFLState", "TeacherConfig", "get_method", "method_names", "plr_builder", "plr_method",
           "register_method"]
