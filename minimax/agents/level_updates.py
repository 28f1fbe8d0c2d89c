"""Each level's own PPO update, measured: the squared L2 norm of the parameter change that training on one
level's rollout alone would make (PACE's level score, `curricula/pace.py`), under the readings PACE's paper
leaves to its reader (`LevelUpdate`; `--pace-loss`, `--pace-params`, `--pace-step`, `--pace-advantages`).

One `vmap(grad)` over the batch's env axis (one level per env), without a Python loop; it holds N gradients at
once (N x the student's parameters in memory). `tests/test_pace.py` checks every reading against a temporary
update taken on one level's data alone, outside the vmap."""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from minimax.agents.ppo import PPOBatch, PPOConfig, advantage_moments, make_optimizer, ppo_loss
from minimax.core.parallel import NO_SHARD, Shard


@dataclasses.dataclass(frozen=True)
class LevelUpdate:
    """Which update of a level is measured (the defaults: PACE's paper where it says, else the cheaper reading)."""

    loss: Literal["policy", "ppo"] = "policy"
    """`policy`: the policy objective (clipped surrogate - entropy bonus), the paper's "policy optimization
    objective"; `ppo`: the whole PPO loss, its value term too."""
    params: Literal["actor", "all"] = "actor"
    """`actor`: the parameters the policy reads (every leaf but the critic's: a path naming `value` or `critic`),
    the paper's "policy parameter change"; `all`: every parameter, the value head's too."""
    step: Literal["gradient", "sgd", "optimizer"] = "gradient"
    """`gradient`: |g|^2, the first-order step up to the learning rate (the paper's derivation; it names no
    optimiser); `sgd`: the SGD step the run would take, `lr x g` clipped at `--max-grad-norm` (the whole gradient's
    norm), so levels above the cap tie; `optimizer`: the step the run's own optimiser (`--optimizer`, Adam by
    default) would take next from its current state on that gradient alone, clipped as the run clips (Adam's
    moments then weigh each parameter by its history: the parameter change the run would really make)."""
    advantages: Literal["batch", "level"] = "batch"
    """Advantages normalised by the whole batch's moments (`batch`: the batch's update is then exactly the mean of
    the levels', a decomposition) or by the level's own (`level`: PPO on that level's data alone)."""


def is_critic(path) -> bool:
    """Whether a parameter leaf (its key path) belongs to the critic alone: our students name its layers
    `value_*` (`value_hidden`, `value_out`, `value_trunk`) or `critic_*` (IMPALA's `critic_linear`)."""
    names = [str(getattr(k, "key", getattr(k, "name", k))) for k in path]
    return any(n.startswith(("value", "critic")) for n in names)


def sq_norm(tree) -> jax.Array:
    """float32: the squared L2 norm of a pytree of arrays."""
    return sum(jnp.sum(jnp.square(g.astype(jnp.float32))) for g in jax.tree.leaves(tree))


def level_update_sq_norms(params, apply_fn, batch: PPOBatch, cfg: PPOConfig, shard: Shard = NO_SHARD,
                          reading: LevelUpdate = LevelUpdate(), opt_state=None):
    """float32[N]: for each env of the batch (one level each), the squared L2 norm of the update `reading` names,
    on that env's T steps alone, at `params` (and, for `step="optimizer"`, the optimiser's `opt_state`)."""
    if reading.step == "optimizer" and opt_state is None:
        raise ValueError("a level's optimizer step needs the optimiser's state (opt_state)")
    moments = advantage_moments(batch.advantages, shard) if reading.advantages == "batch" else None

    def measured(tree):
        """The leaves `reading.params` measures (the critic's zeroed for `actor`)."""
        return jax.tree_util.tree_map_with_path(
            lambda path, g: jnp.zeros_like(g) if reading.params == "actor" and is_critic(path) else g, tree)

    def objective(p, level):
        loss, stats = ppo_loss(p, apply_fn, level, cfg, NO_SHARD, moments)
        return loss if reading.loss == "ppo" else stats["policy_loss"] - cfg.entropy_coef * stats["entropy"]

    def one_level(init_carry, time_major):
        level = PPOBatch(**jax.tree.map(lambda x: x[:, None], time_major),
                         init_carry=jax.tree.map(lambda x: x[None], init_carry))
        grads = jax.grad(objective)(params, level)
        if reading.step == "gradient":
            return sq_norm(measured(grads))
        if reading.step == "optimizer":
            return sq_norm(measured(make_optimizer(cfg).update(grads, opt_state, params)[0]))
        clip = jnp.where(cfg.max_grad_norm > 0, jnp.minimum(1.0, cfg.max_grad_norm / (jnp.sqrt(sq_norm(grads)) + 1e-12)),
                         1.0)  # optax's clip_by_global_norm, on the whole gradient
        return jnp.square(cfg.lr * clip) * sq_norm(measured(grads))

    fields = {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch) if f.name != "init_carry"}
    return jax.vmap(one_level, in_axes=(0, 1))(batch.init_carry, fields)
