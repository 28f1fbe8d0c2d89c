"""PACE (Yuan et al., 2026, "PACE: Parameter Change for Unsupervised Environment Design", arXiv 2605.01358):
a level is worth the squared L2 norm of the parameter update that training on it induces.

The paper's argument: to first order, a step `d theta` on a level changes the objective by `g . d theta`;
with the step along the level's gradient, `d theta = eta g`, the gain is `eta |g|^2 = |d theta|^2 / eta`,
so the squared norm of a level's update measures the learning it offers, from the rollout the cycle
already played (no extra rollouts). We found no public code; this is built from the paper's definition,
with these choices (docs/methods.md):

- **Which update** is four options (`agents/level_updates.py: LevelUpdate`, `--pace-loss`, `--pace-params`,
  `--pace-step`, `--pace-advantages`): by default the gradient of the policy objective (clipped surrogate -
  entropy bonus) over the policy's parameters (all but the critic's), the abstract's "policy parameter change"
  of the "policy optimization objective"; on the level's T steps, at the parameters that played them, with the
  advantages normalised by the whole batch's moments.
- **The gradient, not Adam's step** (`--pace-step gradient`, or `sgd`: the run's clipped SGD step): the score
  is `|g|^2`, the squared norm of the SGD step up to `eta^2`. A constant factor changes neither the rank nor the
  power prioritisation PLR uses (nor the staleness mix); Adam's per-parameter scaling would make the score a
  function of the optimiser's history, not of the level.
- **Every played level is scored**: a gradient exists for any T steps, finished episode or not.

The cost is one backward pass per level per scored rollout (a `vmap` of `grad` over the envs), on top of
the PPO update; `benchmarks/RESULTS.md` gives it per cycle beside robust PLR's MaxMC.
"""

from __future__ import annotations

import jax.numpy as jnp

from minimax.curricula.scores import ScoreInputs, register_score


def pace(x: ScoreInputs):
    """`(|grad L_level|^2 [N], valid [N])`: the squared norm of each level's own PPO gradient (see above)."""
    if x.update_sq_norms is None:
        raise ValueError("pace needs each level's PPO gradient norm (`update_sq_norms`): a PLR-family runner "
                         "computes it for a score registered with needs_update_norms=True")
    norms = jnp.asarray(x.update_sq_norms, jnp.float32)
    return norms, jnp.ones(norms.shape, bool)


register_score("pace", pace, per_level=True, needs_update_norms=True)
