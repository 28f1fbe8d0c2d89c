"""Robust PLR (Jiang et al., 2021, "Replay-guided adversarial environment design").

PLR's cycle (`plr.py`) without a gradient on new levels: a cycle of new levels only scores
them and offers them to the buffer; only replay cycles train. So the agent learns only from
curated levels, the property the paper's robustness argument needs. Each cycle is one step;
about `replay_prob` of them train once the buffer is ready, so one of `--num-updates`' PPO
updates takes about 1 / `replay_prob` cycles (`minimax/training/budget.py`).
"""

from __future__ import annotations

from minimax.runners.plr import PLRRunner
from minimax.runners.plr_method import plr_method
from minimax.runners.registry import register_method


class RobustPLRRunner(PLRRunner):
    method = "robust_plr"
    trains_on_new_levels = False
    trains_every_cycle = False
    trains_only_on_replays = True


register_method(plr_method(RobustPLRRunner, "robust PLR: PLR that trains only on replayed levels"))
