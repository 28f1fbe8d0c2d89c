"""A user's PLR variant with an option of its own, in a file outside the package: once the buffer is
ready it replays with probability `--eager-replay-prob` (robust PLR's coin under another name and
default, so that the option has a visible effect: at 1 every cycle after the first replay trains).

    python train.py --plugin tests/plugins/eager_plr.py --method eager_plr --eager-replay-prob 1.0
"""

import dataclasses

import jax

from minimax.core.options import check
from minimax.runners import RobustPLRRunner, plr_method, register_method
from minimax.runners.plr_parts import buffer_ready


@dataclasses.dataclass(frozen=True)
class EagerOptions:
    """Eager PLR: how eagerly it replays."""

    eager_replay_prob: float = 1.0
    """Probability of a replay cycle once the buffer is ready."""

    def __post_init__(self):
        check(self, lambda c: c.unit("eager_replay_prob"))


class EagerPLR(RobustPLRRunner):
    method = "eager_plr"

    def __init__(self, *args, eager: EagerOptions = EagerOptions(), **kwargs):
        super().__init__(*args, **kwargs)
        self.eager = eager

    def decide_replay(self, key, buffer, training_set):
        return buffer_ready(self, buffer) & jax.random.bernoulli(key, self.eager.eager_replay_prob)


register_method(plr_method(EagerPLR, "robust PLR with its own replay probability", coin_replay=False,
                           options={"eager": EagerOptions}), replace=True)
