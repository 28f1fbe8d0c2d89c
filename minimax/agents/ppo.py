"""PPO for recurrent policies: GAE, the clipped losses, and minibatched epochs.

Batches are time-major `[T, N, ...]` rollouts. Minibatches split the env axis N, so each
minibatch holds whole sequences and is replayed through the recurrent core from the
carry stored at its first step (resets inside the sequence zero it where episodes
begin). Advantages are normalised per minibatch.

Data parallel (`shard`, inside `jax.shard_map`): each device holds a slice of the envs;
gradients, advantage moments and statistics are averaged over the devices, so with one
minibatch an update equals the single-device update on the whole batch. With several
minibatches each device splits its own envs by the same permutation (minibatch k is the
union of every device's k-th part): the same distribution, not the same split.

Flags on a rollout (see `minimax.runners.rollout.Rollout`): `done[t]` means the episode
ended with transition t (no bootstrap from t + 1); `reset[t]` means observation t starts
an episode (the recurrent carry is zeroed before it).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal

import jax
import jax.numpy as jnp
import optax
import tyro
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ti_ada import ti_ada
from minimax.core.options import Traced, check
from minimax.core.parallel import NO_SHARD, Shard


@struct.dataclass
class PPOConfig:
    """PPO hyperparameters. Each field is also the training command's option of that name (`--lr`); its
    docstring is the `--help` text. Python values (hashable) in a config; the `Traced` ones are a program's
    inputs inside it (`config/hyperparams.py`), so no Python `if` here reads them."""

    lr: Traced[float] = struct.field(pytree_node=False, default=1e-4)
    """Learning rate of the optimiser (--optimizer)."""
    optimizer: Literal["adam", "ti_ada"] = struct.field(pytree_node=False, default="adam")
    """adam, or ti_ada (TiAda's Adam variant, NCC's authors' student optimiser: agents/ti_ada.py; uses --adam-eps
    as its epsilon)."""
    anneal_lr: bool = struct.field(pytree_node=False, default=False)
    """Anneal the learning rate linearly to 0 over all gradient steps."""
    total_gradient_steps: tyro.conf.Suppress[int] = struct.field(pytree_node=False, default=1)
    """Gradient steps of the whole run, the length of the annealing (set by the builder from --num-updates)."""
    unroll: tyro.conf.Suppress[int] = struct.field(pytree_node=False, default=1)
    """Time steps per iteration of the rollout's and GAE's scans (set by the builder from --scan-unroll)."""
    adam_eps: Traced[float] = struct.field(pytree_node=False, default=1e-5)
    """Adam epsilon."""
    max_grad_norm: Traced[float] = struct.field(pytree_node=False, default=0.5)
    """Clip gradients to this global norm."""
    gamma: Traced[float] = struct.field(pytree_node=False, default=0.995)
    """Discount factor."""
    gae_lambda: Traced[float] = struct.field(pytree_node=False, default=0.98)
    """GAE lambda."""
    n_epochs: int = struct.field(pytree_node=False, default=5)
    """PPO epochs per update."""
    n_minibatches: int = struct.field(pytree_node=False, default=1)
    """Minibatches per epoch, split along the env axis (must divide --num-envs)."""
    clip_eps: Traced[float] = struct.field(pytree_node=False, default=0.2)
    """PPO ratio clip (also the value clip when --clip-value)."""
    clip_value: bool = struct.field(pytree_node=False, default=True)
    """Clip the value loss around the rollout's values."""
    entropy_coef: Traced[float] = struct.field(pytree_node=False, default=1e-3)
    """Entropy bonus coefficient."""
    value_coef: Traced[float] = struct.field(pytree_node=False, default=0.5)
    """Value loss coefficient."""
    reward_scale: Traced[float] = struct.field(pytree_node=False, default=1.0)
    """Multiply rewards by this wherever they are learned from (GAE, the value head, the PLR scores); logged and
    evaluated returns stay the environment's. For large-magnitude rewards (Pendulum: about -1,000 per episode)."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        c.positive("adam_eps", "max_grad_norm", "n_epochs", "n_minibatches", "total_gradient_steps")
        c.non_negative("clip_eps", "entropy_coef", "value_coef")
        if not (math.isfinite(c.obj.reward_scale) and c.obj.reward_scale > 0):
            c.add(f"--reward-scale must be a finite number > 0, got {c.obj.reward_scale!r}")
        if not c.obj.lr >= 0:  # 0 is a policy that does not learn (tests replay rollouts with it)
            c.add(f"--lr must be > 0 (or 0: no learning), got {c.obj.lr!r}")
        c.unit("gamma", "gae_lambda")
        if c.obj.optimizer not in ("adam", "ti_ada"):
            c.add(f"--optimizer must be adam or ti_ada, got {c.obj.optimizer!r}")


def learning_rate_schedule(cfg: PPOConfig):
    """Constant, or linear from `lr` to 0 over `total_gradient_steps` (counted in gradient steps)."""
    if cfg.anneal_lr:
        return optax.linear_schedule(cfg.lr, 0.0, cfg.total_gradient_steps)
    return optax.constant_schedule(cfg.lr)


def make_optimizer(cfg: PPOConfig) -> optax.GradientTransformation:
    schedule = learning_rate_schedule(cfg)
    if cfg.optimizer == "ti_ada":
        step = ti_ada(schedule, eps=cfg.adam_eps)
    elif cfg.optimizer == "adam":
        step = optax.adam(schedule, eps=cfg.adam_eps)
    else:
        raise ValueError(f"--optimizer must be adam or ti_ada, got {cfg.optimizer!r}")
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), step)


def apply_with(tx: optax.GradientTransformation, train_state: TrainState, grads) -> TrainState:
    """`train_state.apply_gradients(grads)` with the optimiser `tx`, not the one stored in the state.

    The state's `tx` is a static field, made at `init` from the config's values; inside a program whose
    learning rate, clipping norm or Adam epsilon are traced (`config/hyperparams.py`) the optimiser must
    be made from the traced config. Both have the same state structure (`opt_state`), which is all the
    stored one contributes; with the same values the update is the same."""
    updates, opt_state = tx.update(grads, train_state.opt_state, train_state.params)
    return train_state.replace(step=train_state.step + 1, params=optax.apply_updates(train_state.params, updates),
                               opt_state=opt_state)


@functools.lru_cache(maxsize=None)
def traced_once(apply_fn):
    """`apply_fn` jitted, one object per function (a model's bound `apply`), so that a program that applies the
    model at the same shapes many times (the rollouts of new, replayed and mutated levels, the PPO loss, its
    gradient) traces the model once: jit keeps the trace per shapes, and XLA inlines the call (the same
    operations). One object per model keeps `TrainState.apply_fn`, a static field, equal between the states
    of a runner and of its traced copies (`runner_from`), as the bound method was. The cache holds the models
    (a few small config objects per process)."""
    return jax.jit(apply_fn)


def create_train_state(apply_fn, params, cfg: PPOConfig) -> TrainState:
    apply_fn = traced_once(apply_fn) if callable(apply_fn) else apply_fn
    state = TrainState.create(apply_fn=apply_fn, params=params, tx=make_optimizer(cfg))
    return state.replace(step=jnp.zeros((), jnp.int32))  # not a weakly typed Python 0: no recompiles


def compute_gae(rewards, values, dones, last_value, gamma: float, gae_lambda: float, unroll: int = 1):
    """Generalised advantage estimates over a `[T, ...]` rollout.

    `delta_t = r_t + gamma * V_{t+1} * (1 - d_t) - V_t`,
    `A_t = delta_t + gamma * lambda * (1 - d_t) * A_{t+1}`, with `V_T = last_value`.
    Returns `(advantages, targets = advantages + values)`.
    """
    not_done = 1.0 - dones.astype(jnp.float32)
    next_values = jnp.concatenate([values[1:], last_value[None]], axis=0)
    deltas = rewards + gamma * next_values * not_done - values

    def backward(adv_next, inputs):
        delta, nd = inputs
        adv = delta + gamma * gae_lambda * nd * adv_next
        return adv, adv

    _, advantages = jax.lax.scan(backward, jnp.zeros_like(last_value), (deltas, not_done), reverse=True,
                                 unroll=unroll)
    return advantages, advantages + values


@struct.dataclass
class PPOBatch:
    """What one PPO update trains on, time-major `[T, N, ...]`."""

    obs: Any
    reset: jax.Array
    actions: jax.Array
    log_probs: jax.Array
    values: jax.Array
    advantages: jax.Array
    targets: jax.Array
    init_carry: Any  # [N, ...]: the recurrent carry before step 0
    mask: Any = None  # bool[T, N] or None: the steps the losses count (ReMiDi's); None: every step


def advantage_moments(advantages, shard: Shard = NO_SHARD):
    """`(mean, std)` of a batch's advantages (over every device's envs), as `ppo_loss` normalises them."""
    mean = shard.mean(advantages.mean())
    return mean, jnp.sqrt(shard.mean(jnp.mean(jnp.square(advantages - mean))))


def masked_moments(advantages, mask, shard: Shard = NO_SHARD):
    """`(mean, std, average)` over the steps of `mask` (every device's): the advantages' moments and the
    masked mean `average(x) = sum(mask x) / max(sum(mask), 1)` of a per-step loss. The entropy bonus stays an
    average over every step, as the authors' masked update keeps it."""
    w = mask.astype(jnp.float32)
    count = jnp.maximum(shard.sum(w.sum()), 1.0)
    mean = shard.sum((w * advantages).sum()) / count
    std = jnp.sqrt(shard.sum((w * jnp.square(advantages - mean)).sum()) / count)
    # This device's share, scaled so that the update's mean over devices (`shard.mean` of the gradient and
    # the statistics) is the masked mean over every device's steps; no collective inside the loss.
    return mean, std, lambda x: (w * x).sum() * shard.size / count


def ppo_loss(params, apply_fn, batch: PPOBatch, cfg: PPOConfig, shard: Shard = NO_SHARD, moments=None):
    """Clipped surrogate + value loss (clipped around the old values) - entropy bonus. The advantages are
    normalised by their own `advantage_moments`, or by `moments` where given (a part of a batch, normalised
    as the whole batch is: `level_update_sq_norms`)."""
    _, policy, values = apply_fn(params, batch.init_carry, batch.obs, batch.reset)
    log_probs = policy.log_prob(batch.actions)
    entropy = policy.entropy().mean()

    if batch.mask is None:
        mean, std = advantage_moments(batch.advantages, shard) if moments is None else moments
        average = jnp.mean
    else:  # the masked steps' moments and means (ReMiDi's update); an all-False mask gives zero losses
        mean, std, average = masked_moments(batch.advantages, batch.mask, shard)
    adv = (batch.advantages - mean) / (std + 1e-8)
    log_ratio = log_probs - batch.log_probs
    ratio = jnp.exp(log_ratio)
    clipped_ratio = jnp.clip(ratio, 1.0 - cfg.clip_eps, 1.0 + cfg.clip_eps)
    policy_loss = -average(jnp.minimum(ratio * adv, clipped_ratio * adv))

    value_err = jnp.square(values - batch.targets)
    if cfg.clip_value:
        clipped = batch.values + jnp.clip(values - batch.values, -cfg.clip_eps, cfg.clip_eps)
        value_err = jnp.maximum(value_err, jnp.square(clipped - batch.targets))
    value_loss = 0.5 * average(value_err)

    loss = policy_loss + cfg.value_coef * value_loss - cfg.entropy_coef * entropy
    stats = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),  # the low-variance k3 estimator
        "clip_fraction": jnp.mean((jnp.abs(ratio - 1.0) > cfg.clip_eps).astype(jnp.float32)),
    }
    return loss, stats


def explained_variance(values, targets, shard: Shard = NO_SHARD):
    """`1 - Var(targets - values) / Var(targets)` (0 when the targets do not vary)."""
    def var(x):
        mean = shard.mean(x.mean())
        return shard.mean(jnp.mean(jnp.square(x - mean)))
    v = var(targets)
    return jnp.where(v > 0, 1.0 - var(targets - values) / jnp.where(v > 0, v, 1.0), 0.0)


def ppo_update(key, train_state: TrainState, batch: PPOBatch, cfg: PPOConfig, shard: Shard = NO_SHARD):
    """`n_epochs x n_minibatches` gradient steps; metrics averaged over them."""
    n_envs = batch.actions.shape[1]
    mb_size = n_envs // cfg.n_minibatches

    def minibatch(perm_slice):
        def take(x, axis):
            return jnp.take(x, perm_slice, axis=axis)
        time_major = jax.tree.map(lambda x: take(x, 1),
                                  batch.replace(init_carry=None))
        return time_major.replace(init_carry=jax.tree.map(lambda x: take(x, 0), batch.init_carry))

    def gradient_step(train_state, perm_slice):
        # One minibatch is the whole batch: skip the (order-only) gather.
        mb = batch if cfg.n_minibatches == 1 else minibatch(perm_slice)
        grads, stats = jax.grad(ppo_loss, has_aux=True)(train_state.params, train_state.apply_fn, mb, cfg, shard)
        with jax.named_scope("optimizer"):
            grads, stats = shard.mean((grads, stats))
            stats["grad_norm"] = optax.tree.norm(grads)
            stats["learning_rate"] = learning_rate_schedule(cfg)(train_state.step)
            return apply_with(make_optimizer(cfg), train_state, grads), stats

    perms = jax.vmap(lambda k: jax.random.permutation(k, n_envs))(jax.random.split(key, cfg.n_epochs))
    slices = perms.reshape(cfg.n_epochs * cfg.n_minibatches, mb_size)
    train_state, stats = jax.lax.scan(gradient_step, train_state, slices)
    metrics = jax.tree.map(jnp.mean, stats)
    metrics["explained_variance"] = explained_variance(batch.values, batch.targets, shard)
    return train_state, metrics
