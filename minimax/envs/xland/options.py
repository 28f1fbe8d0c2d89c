"""XLand-MiniGrid's own options (the `xland` group of a run's config, declared where `--env xland` registers;
importing this module does not import xminigrid)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from minimax.core.options import check
from minimax.envs.xland.rulesets import BENCHMARKS


@dataclasses.dataclass(frozen=True)
class XLandOptions:
    """XLand-MiniGrid: the benchmark the levels come from, the room, the meta-RL trial."""

    xland_benchmark: str = "high-3m"
    """The benchmark whose rulesets are the training levels (xminigrid's names: trivial-1m (v2) or trivial-21k
    (v3), small-1m, medium-1m, medium-3m, high-1m, high-3m), generated here (envs/xland/rulesets.py)."""
    xland_version: Literal["v2", "v3"] = "v2"
    """The benchmark's sampling: v2 (March 2024, duplicates kept: what SFL and NCC trained and evaluated on) or v3
    (xminigrid 0.9.3's, duplicates rejected)."""
    xland_pool: int = 100_000
    """Rulesets of the benchmark training draws from (its first N; 0: all of it). SFL draws from all 3M; a prefix
    is the same distribution, and a smaller program (the pool is a constant of it)."""
    xland_room: Literal["R1", "R2", "R4", "R6", "R9"] = "R4"
    """The room layout (xminigrid's grid types: 1, 2, 4, 6 or 9 rooms); SFL and NCC use R4 on 13x13."""
    xland_size: int = 13
    """The room's height and width."""
    xland_trial_steps: int = 0
    """> 0: meta-RL trials of this many steps (envs/trials.py: the level's episodes one after another in new rooms,
    the recurrent state kept, the previous action and reward observed; SFL and NCC: 4,096); 0: plain episodes."""
    xland_trial_episodes: int = 0
    """> 0: a trial also ends after this many episodes (with --xland-trial-steps 0: trials of exactly this many).
    The evaluation suites of a trial-trained run play trials of 10 episodes, SFL's protocol, whatever this is."""
    xland_embed: int = 0
    """> 0: the student embeds tile and colour ids (this many units each) before its convolutions, as xminigrid's
    later baseline; 0: the raw ids, as SFL's and NCC's student (models/xland.py)."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.non_negative("xland_pool", "xland_embed", "xland_trial_steps", "xland_trial_episodes")
        c.positive("xland_size")
        known = BENCHMARKS.get(self.xland_version)
        if known is not None and self.xland_benchmark not in known:
            c.add(f"--xland-benchmark {self.xland_benchmark!r} is not a {self.xland_version} benchmark; known: "
                  f"{', '.join(known)} (--xland-version v2 and v3 name trivial differently)")
