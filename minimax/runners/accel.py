"""ACCEL (Parker-Holder et al., 2022): robust PLR whose replayed levels are edited into new ones.

A step is robust PLR's (search cycles, then a replay cycle that trains), followed by one
mutation cycle: the replayed levels are mutated (`mutation_criterion`: every replayed level,
or the q easiest / hardest tiled over the envs), played by the updated policy without a
gradient, scored and offered to the buffer. Levels grow in difficulty from the generator's
(empty rooms, in the report's configuration) by accumulated edits.
"""

from __future__ import annotations

import jax.numpy as jnp

from minimax.runners.plr_family import PLRState
from minimax.runners.robust_plr import RobustPLRRunner


class ACCELRunner(RobustPLRRunner):
    method = "accel"
    mutates = True

    def step(self, state: PLRState):
        c = self.search_then_replay(state)
        k_mut, k_roll = c.mutation_keys
        buffer, metrics = c.buffer, c.metrics
        children, mutations = self.mutate(k_mut, c.levels, buffer.scores[c.idx], buffer.mutations[c.idx])
        rollout = self.rollout(k_roll, c.train_state.params, children)
        scores, max_returns, valid = self.score(rollout, self.advantages(rollout), jnp.full((self.n,), -jnp.inf))
        buffer = self._insert(buffer, children, scores, max_returns, valid & c.trainable, mutations)
        metrics.update(self.group_metrics("mutated", children, rollout, scores, valid))
        return self.finish_robust(state, c, buffer, metrics, c.cycles + 1)
