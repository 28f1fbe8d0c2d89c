"""TRACED's two additions to a regret score (Cho et al., ICLR 2026, "TRACED: Transition-aware Regret
Approximation with Co-learnability for Environment Design", arXiv 2506.19997), as pure functions.

1. **Transition prediction loss (ATPL)**: a level is hard where the student's experience on it is hard
   to predict. A small recurrent model, owned by the curriculum (not a head of the student: the
   authors' code keeps it in the level sampler, trained on its own loss and optimiser, so it never
   changes the student's gradients), predicts each next observation from the observations and actions
   so far; a level's ATPL is its mean prediction error over the transitions of its completed episodes
   (each episode's terminal transition excluded: its next observation is the next episode's start).
   The level's score is `PVL + transition_coef x ATPL` (the paper's regret approximation).
2. **Co-learnability**: after each PPO update, the mean drop of the scores of the levels rescored since
   the previous update, `mean_j (previous score_j - current score_j)`, is credited (times
   `colearnability_coef`) to the levels rescored in the period before, whose training the drop is
   attributed to. The credit is a bonus on the replay priority only (admission into the buffer compares
   the score alone) and lapses when its level is scored again.

What we took from the authors' code (read for facts; its licence is CC BY-NC, nothing is copied) and
where we differ, each said in docs/methods.md: their model encodes MiniGrid's 5x5x3 view with two convs,
concatenates the action index, runs a 128-unit LSTM and decodes the next view (L1 loss on views scaled
by 1/10, AdamW lr 1e-4, weight decay 1e-5, clipping 0.5). Ours encodes the flattened view with one
dense layer (the `image` of a dict observation, as theirs; any other environment's whole observation),
concatenates the one-hot action and decodes with a dense layer; same LSTM width, loss, scale (the maze's
view over 10, once) and optimiser. They take one AdamW step per scored episode; we take one per scored
batch (the cycle's levels at once). Their code stores each level's score as a per-episode sum (the episode's
mean score times its step count, no running mean): `runners/traced.py` does too by default
(`--traced-score-sums`, `completed_episode_length`), the per-step mean is the option.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.training.train_state import TrainState

from minimax.agents.ppo import apply_with
from minimax.models.recurrent import LSTM


class TransitionModel(nn.Module):
    """`(x [T, N, F], a [T, N, A], reset [T, N]) -> predicted next x [T, N, F]`, from a zero LSTM carry."""

    features: int
    hidden: int = 128

    @nn.compact
    def __call__(self, x, a, reset):
        encoded = nn.relu(nn.Dense(self.hidden)(x))
        core = LSTM(self.hidden)
        _, h = core(core.initial_carry(x.shape[1]), jnp.concatenate([encoded, a], axis=-1), reset)
        return nn.Dense(self.features)(h)


def transition_mask(dones) -> jax.Array:
    """bool[T, N]: the transitions t -> t+1 inside completed episodes (not an episode's terminal one, nor
    any of an episode still running when the rollout ends)."""
    return in_completed_episode(dones) & ~dones


def in_completed_episode(dones) -> jax.Array:
    """bool[T, N]: step t belongs to an episode that ends within the rollout (a done at or after t)."""
    return jnp.flip(jnp.cumsum(jnp.flip(dones, 0), 0), 0) > 0


def completed_episode_length(dones) -> jax.Array:
    """float32[N]: the mean length of each level's completed episodes in the rollout (0 where none ended): the
    factor that turns TRACED's per-step score into the authors' per-episode sum."""
    return (in_completed_episode(dones).sum(0) / jnp.maximum(dones.sum(0), 1)).astype(jnp.float32)


def transition_errors(params, model: TransitionModel, x, a, reset, dones):
    """`(per-level ATPL float32[N], transitions int32[N], mean loss)`: the L1 error of each predicted next
    observation, averaged over each level's masked transitions (`transition_mask`); the loss is their mean
    over the batch, what the model's step descends."""
    pred = model.apply(params, x, a, reset)
    target = jnp.concatenate([x[1:], x[-1:]], axis=0)  # the last step has no next observation here: masked
    err = jnp.abs(pred - target).mean(-1)
    mask = transition_mask(dones).astype(jnp.float32)
    count = mask.sum(0)
    per_level = (err * mask).sum(0) / jnp.maximum(count, 1.0)
    loss = (err * mask).sum() / jnp.maximum(mask.sum(), 1.0)
    return per_level, count.astype(jnp.int32), loss


def init_transition_state(key, model: TransitionModel, example_x, example_a, lr: float) -> TrainState:
    """The model's parameters and its AdamW (weight decay 1e-5, global-norm clipping 0.5, as the authors')."""
    reset = jnp.ones(example_x.shape[:2], bool)
    params = model.init(key, example_x, example_a, reset)
    state = TrainState.create(apply_fn=model.apply, params=params, tx=transition_optimizer(lr))
    return state.replace(step=jnp.zeros((), jnp.int32))


def transition_optimizer(lr) -> optax.GradientTransformation:
    """AdamW (weight decay 1e-5) after global-norm clipping at 0.5, the authors' (`lr` may be traced)."""
    return optax.chain(optax.clip_by_global_norm(0.5), optax.adamw(lr, weight_decay=1e-5))


def score_and_step(state: TrainState, model: TransitionModel, x, a, reset, dones, reduce=lambda g: g, lr=None):
    """`(state after one step, per-level ATPL before it, transitions [N], loss)`: the levels are scored by the
    model as it was, then it takes one step on the same transitions (`reduce`: the gradient's mean over
    data-parallel devices, so the model stays one model). `lr`: the step's learning rate (a traced
    `--traced-lr`; the state's stored optimiser, made at `init`, only gives the structure); None: the stored one."""
    def loss_fn(params):
        per_level, count, loss = transition_errors(params, model, x, a, reset, dones)
        return loss, (per_level, count)

    (loss, (per_level, count)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    grads = jax.tree.map(reduce, grads)
    state = state.apply_gradients(grads=grads) if lr is None else apply_with(transition_optimizer(lr), state, grads)
    return state, per_level, count, loss


def credit_colearnability(bonus, changed, previous, scores, last_period, coef: float, trains):
    """The co-learnability step after a PPO update (where `trains`): `(bonus, last_period, changed)`.

    `changed` marks the slots rescored since the previous update, `previous` each slot's score before its
    latest rescoring, `last_period` the slots rescored in the period before; those get `coef x` the mean
    drop `previous - scores` over `changed` added to their bonus. Then this period becomes the last."""
    w = changed.astype(jnp.float32)
    drop = ((previous - scores) * w).sum() / jnp.maximum(w.sum(), 1.0)
    credited = jnp.where(last_period, bonus + coef * drop, bonus)
    return (jnp.where(trains, credited, bonus), jnp.where(trains, changed, last_period),
            jnp.where(trains, jnp.zeros_like(changed), changed))
