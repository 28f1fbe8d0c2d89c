"""ACCEL (Parker-Holder et al., 2022): robust PLR whose replayed levels are edited into new ones.

A step is robust PLR's cycle (`plr.py`); a replay cycle, after its gradient update, also
mutates the replayed levels (`mutation_criterion`: every replayed level, or the q easiest /
hardest tiled over the envs) and plays the children with the updated policy, without a
gradient; they are scored and offered to the buffer. All of it is one cycle, as in the
minimax release. Levels grow in difficulty from the generator's (empty rooms, in the
report's configuration) by accumulated edits.
"""

from __future__ import annotations

import jax

from minimax.runners.branches import cond_or_zeros
from minimax.runners.robust_plr import RobustPLRRunner
from minimax.runners.plr_method import plr_method
from minimax.runners.registry import register_method


class ACCELRunner(RobustPLRRunner):
    method = "accel"
    mutates = True

    def mutation_cycle(self, key, replay, params, buffer, idx, levels, scores):
        """After a replay: play and offer the children of the replayed `levels` (slots `idx`,
        scored `scores`); after a cycle of new levels: nothing. `(buffer, metrics)`."""
        k_mut, k_roll = jax.random.split(key)

        def mutate_and_play(buffer):
            children, mutations = self.mutate(k_mut, levels, scores, buffer.mutations[idx])
            slots, repeat, first = self._locate(buffer, children)
            rollout = self.rollout(k_roll, params, children)
            optimal = self.optimal_returns(children)
            s, best, valid = self.score(rollout, self.advantages(rollout), self.prior_max(buffer, slots), optimal,
                                        params)
            buffer, _ = self._offer(buffer, children, slots, s, best, valid & ~repeat, mutations, first)
            return buffer, self.group_metrics("mutated", children, rollout, s, valid, optimal=optimal)

        return cond_or_zeros(replay, mutate_and_play, buffer)


register_method(plr_method(ACCELRunner, "ACCEL: robust PLR whose replayed levels are mutated into new ones"))
