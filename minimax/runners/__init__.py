"""Runners: one pure, jittable `init(key)` / `step(state)` pair per autocurriculum (see `base.Runner`).

One module per method: `dr`, `plr`, `robust_plr`, `accel`, `parallel_plr`, `parallel_accel`;
the PLR family's shared pieces are in `plr_family`; `paired` runs every learned-teacher method
(PAIRED, population PAIRED, the minimax adversary: one runner, three teacher rewards); `sfl`
samples levels and trains on the most learnable (Sampling For Learnability). `RUNNERS` maps `--method` to its class.
"""

from minimax.runners.accel import ACCELRunner
from minimax.runners.base import Runner
from minimax.runners.dr import DRRunner, DRState
from minimax.runners.paired import PAIREDRunner, PAIREDState, TeacherConfig
from minimax.runners.parallel_accel import ParallelACCELRunner
from minimax.runners.parallel_plr import ParallelPLRRunner
from minimax.runners.plr import PLRRunner
from minimax.runners.plr_family import CurriculumConfig, PLRFamilyRunner, PLRState
from minimax.runners.robust_plr import RobustPLRRunner
from minimax.runners.sfl import SFLConfig, SFLRunner, SFLState

RUNNERS: dict[str, type] = {
    "dr": DRRunner,
    "plr": PLRRunner,
    "robust_plr": RobustPLRRunner,
    "parallel_plr": ParallelPLRRunner,
    "accel": ACCELRunner,
    "parallel_accel": ParallelACCELRunner,
    "paired": PAIREDRunner,
    "pop_paired": PAIREDRunner,
    "minimax_adversary": PAIREDRunner,
    "sfl": SFLRunner,
}
"""Every method's runner class, by `--method` name."""

__all__ = ["ACCELRunner", "CurriculumConfig", "DRRunner", "DRState", "PAIREDRunner", "PAIREDState", "PLRFamilyRunner",
           "PLRRunner", "PLRState", "ParallelACCELRunner", "ParallelPLRRunner", "RUNNERS", "RobustPLRRunner", "Runner",
           "SFLConfig", "SFLRunner", "SFLState", "TeacherConfig"]
