"""PLR (Jiang et al., 2021): robust PLR's cycle (`robust_plr.py`) that trains on new levels too.

Each cycle replays buffer levels (with probability `replay_prob`, once the buffer is `min_fill_ratio`
full) or plays new ones, and every cycle makes a PPO update on what it played: the original PLR, whose
gradient on unscored new levels robust PLR removes. So a unit of the update budget is one cycle.
"""

from __future__ import annotations

from minimax.runners.plr_method import plr_method
from minimax.core.methods import register_method
from minimax.runners.robust_plr import RobustPLRRunner


class PLRRunner(RobustPLRRunner):
    method = "plr"
    trains_only_on_replays = False
    trains_every_cycle = True

    def trains_on(self, replay):
        """Every cycle trains, replayed or new."""
        return True


register_method(plr_method(PLRRunner, "PLR: each cycle replays buffer levels (p = --replay-prob) or plays new ones; trains on both",
                            host="sampler"))
