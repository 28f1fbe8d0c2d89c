"""The compiled half of training on a host environment: acting, advantages and level scores, the PPO update.

The env steps on the host (`minimax.envs.host`), one `step` call per time step for all envs; the
policy runs as one jitted call per time step (`act`), and after the rollout one jitted call computes
the GAE, the PPO targets and the level sampler's per-step score terms (`finish`: the registered score's own
function, `curricula/scores.py`, on the rollout and its policy's logits), and one more runs
the PPO update (`update`, `agents.ppo.ppo_update`). The student is feed-forward (the PLR paper's
IMPALA ResNet), so the rollout is flattened to `[1, T * N]` for the update: a minibatch is a random
subset of transitions, as the reference's `feed_forward_generator`, not of whole env sequences.
Advantages are normalised over the whole batch before the epochs (the reference's `PPO.update`,
`std + 1e-5`); our PPO loss then normalises each minibatch again, which changes a minibatch of
2,048 transitions by its sampling error only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from minimax.agents.distributions import Categorical
from minimax.agents.ppo import (PPOBatch, PPOConfig, compute_gae, create_train_state, explained_variance,
                                learning_rate_schedule, ppo_loss)
from minimax.models.impala import ImpalaActorCritic
from minimax.models.mlp import MLPActorCritic
from minimax.core.options import ConfigError
from minimax.curricula.scores import SCORES, ScoreInputs

def step_score_terms(score_function: str, rewards, values, dones, advantages, logits, last_value, gamma: float,
                     gae_lambda: float) -> jax.Array:
    """float32[T, N]: the per-step terms of the registered score `score_function` (`curricula/scores.py`, the
    compiled path's functions, a plugin's included) for a `[T, N]` rollout with its policy's `logits [T, N, A]`;
    the level sampler averages them over episode segments. Zeros for the sampler's unscored modes
    (random, sequential). Rewards as the learner sees them (normalised where `--normalize-returns`)."""
    score = SCORES.get(score_function)
    if score is None:
        return jnp.zeros_like(advantages)
    dones = jnp.asarray(dones, bool)
    inputs = ScoreInputs(rewards=rewards, values=values, dones=dones, solved=jnp.zeros_like(dones),
                         advantages=advantages, policy=Categorical(logits), last_value=last_value, max_returns=None,
                         gamma=gamma, gae_lambda=gae_lambda)
    return jnp.asarray(score.fn(inputs), jnp.float32)


def host_model(env_name: str, obs_shape: tuple, num_actions: int, impala_channels, hidden: int):
    """The student for a host env's observations: the PLR paper's IMPALA ResNet for images `[H, W, C]`
    (Procgen), an MLP of two `hidden`-wide layers for vectors `[D]` (classic control through gymnasium)."""
    if len(obs_shape) == 3:
        return ImpalaActorCritic(n_actions=num_actions, channels=tuple(impala_channels), hidden=hidden)
    if len(obs_shape) == 1:
        return MLPActorCritic(n_actions=num_actions, hidden=hidden)
    raise ConfigError(f"--env {env_name}: observations of shape {tuple(obs_shape)} are neither images [H, W, C] "
                      f"(IMPALA ResNet) nor vectors [D] (MLP)")


class HostLearner:
    """`act`, `finish` and `update`, jitted once per run for a model and a PPO config."""

    def __init__(self, model, ppo: PPOConfig, score_function: str):
        self.model, self.ppo, self.score_function = model, ppo, score_function
        self.act = jax.jit(self._act)
        self._greedy = jax.jit(lambda params, obs: jnp.argmax(self._forward(params, obs)[0].logits[0], axis=-1))
        self.finish = jax.jit(self._finish)
        self._gradient_step = jax.jit(self._step)
        self._permutations = jax.jit(lambda key, n: jax.vmap(lambda k: jax.random.permutation(k, n))(
            jax.random.split(key, ppo.n_epochs)), static_argnums=1)
        self._explained_variance = jax.jit(explained_variance)

    def init(self, key, example_obs):
        """A fresh `TrainState` for observations shaped like `example_obs` (one env's)."""
        obs = jnp.asarray(example_obs)[None, None]
        params = self.model.init(key, self.model.initial_carry(1), obs, jnp.zeros((1, 1), bool))
        return create_train_state(self.model.apply, params, self.ppo)

    def _forward(self, params, obs):
        n = obs.shape[0]
        _, policy, value = self.model.apply(params, self.model.initial_carry(n), obs[None], jnp.zeros((1, n), bool))
        return policy, value[0]

    def _act(self, params, key, obs):
        """Sampled actions, their log-probabilities, values and the policy's logits for one step of N envs."""
        policy, value = self._forward(params, obs)
        action = policy.sample(key)[0]
        return action, policy.log_prob(action[None])[0], value, policy.logits[0]

    def policy_action(self, params, key, obs, greedy: bool = False):
        """Actions for one step of N envs: sampled (as `act`), or the most likely ones with `greedy`."""
        return self._greedy(params, obs) if greedy else self.act(params, key, obs)[0]

    def _finish(self, params, last_obs, rewards, values, dones, logits):
        """GAE, targets and score terms of a `[T, N]` rollout (rewards already normalised; `logits [T, N, A]`)."""
        _, last_value = self._forward(params, last_obs)
        advantages, targets = compute_gae(rewards, values, dones, last_value, self.ppo.gamma, self.ppo.gae_lambda)
        terms = step_score_terms(self.score_function, rewards, values, dones, advantages, logits, last_value,
                                 self.ppo.gamma, self.ppo.gae_lambda)
        return advantages, targets, terms

    def _step(self, train_state, batch: PPOBatch, idx):
        """One gradient step on the transitions `idx` of the batch (`agents.ppo.ppo_update`'s step)."""
        mb = jax.tree.map(lambda x: jnp.take(x, idx, axis=1), batch.replace(init_carry=None))
        mb = mb.replace(init_carry=self.model.initial_carry(idx.shape[0]))
        grads, stats = jax.grad(ppo_loss, has_aux=True)(train_state.params, train_state.apply_fn, mb, self.ppo)
        stats["grad_norm"] = optax.tree.norm(grads)
        stats["learning_rate"] = learning_rate_schedule(self.ppo)(train_state.step)
        return train_state.apply_gradients(grads=grads), stats

    def update(self, key, train_state, batch: PPOBatch):
        """`agents.ppo.ppo_update` (the same permutations, steps and metrics) with the epochs and minibatches
        looped on the host: XLA on CPU computes a conv's weight gradient about 10x slower inside a
        `lax.scan` body than in a plain jitted call (63 s against 7 s per update of a small IMPALA net)."""
        n = batch.actions.shape[1]
        size = n // self.ppo.n_minibatches
        perms = self._permutations(key, n).reshape(-1, size)
        stats = []
        for idx in perms:
            train_state, s = self._gradient_step(train_state, batch, idx)
            stats.append(s)
        metrics = jax.tree.map(lambda *x: jnp.mean(jnp.stack(x)), *stats)
        metrics["explained_variance"] = self._explained_variance(batch.values, batch.targets)
        return train_state, metrics

    def batch(self, obs, actions, log_probs, values, advantages, targets) -> PPOBatch:
        """The rollout as one PPO batch of `T * N` independent transitions (`[1, T * N, ...]`)."""
        def flat(x):
            x = jnp.asarray(x)
            return x.reshape((1, -1) + x.shape[2:])
        adv = flat(advantages)
        adv = (adv - adv.mean()) / (adv.std() + 1e-5)
        n = adv.shape[1]
        return PPOBatch(obs=flat(obs), reset=jnp.zeros((1, n), bool), actions=flat(actions),
                        log_probs=flat(log_probs), values=flat(values), advantages=adv, targets=flat(targets),
                        init_carry=self.model.initial_carry(n))
