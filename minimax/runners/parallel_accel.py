"""Parallel ACCEL (the minimax report's variant): new, replayed and mutated levels in one rollout.

Parallel PLR's cycle (`parallel_plr.py`) with a third group of N envs: the children of this
cycle's replayed levels (mutated by `mutation_criterion` before the rollout), played, scored
and offered to the buffer after the new and replayed levels; only the replay group trains. Until the
buffer is ready, gradient-free rollouts of 3N new levels fill it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.runners.parallel_plr import ParallelPLRRunner
from minimax.runners.plr_method import plr_method
from minimax.runners.plr_parts import mutate
from minimax.core.methods import register_method


class ParallelACCELRunner(ParallelPLRRunner):
    method = "parallel_accel"
    groups = 3
    mutates = True

    def level_groups(self, key, ready, buffer, new):
        """Parallel PLR's groups and a third: the children of the replayed levels (their parents' stored
        scores pick them), or new levels before the buffer is ready."""
        buffer, idx, groups, no_edits = super().level_groups(key, ready, buffer, new)
        slots = jnp.maximum(idx, 0)
        children, edits = mutate(self, jax.random.split(key)[1], groups[1], buffer.scores[slots],
                                 buffer.mutations[slots])
        groups.append(jax.tree.map(lambda c, f: jnp.where(ready, c, f), children, self.new_part(new, 2)))
        return buffer, idx, groups, jnp.concatenate([no_edits, jnp.where(ready, edits, 0)])


register_method(plr_method(ParallelACCELRunner, "parallel ACCEL: new, replayed and mutated levels in one rollout",
                            coin_replay=False))
