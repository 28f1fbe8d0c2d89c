"""PPO: GAE against NumPy, the loss against hand computation, optimiser and annealing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.distributions import Categorical
from minimax.agents.ppo import (
    PPOBatch, PPOConfig, compute_gae, create_train_state, explained_variance, ppo_loss, ppo_update)


def numpy_gae(rewards, values, dones, last_value, gamma, lam):
    t_len = len(rewards)
    adv = np.zeros_like(values)
    next_adv = np.zeros_like(last_value)
    for t in reversed(range(t_len)):
        next_value = last_value if t == t_len - 1 else values[t + 1]
        nd = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * nd - values[t]
        next_adv = delta + gamma * lam * nd * next_adv
        adv[t] = next_adv
    return adv, adv + values


def test_gae_matches_numpy_with_episode_ends():
    rng = np.random.default_rng(0)
    t, n = 37, 5
    rewards = rng.normal(size=(t, n)).astype(np.float32)
    values = rng.normal(size=(t, n)).astype(np.float32)
    dones = rng.random((t, n)) < 0.15
    last = rng.normal(size=(n,)).astype(np.float32)
    adv, targets = compute_gae(jnp.asarray(rewards), jnp.asarray(values), jnp.asarray(dones), jnp.asarray(last),
                               0.97, 0.9)
    ref_adv, ref_targets = numpy_gae(rewards, values, dones.astype(np.float32), last, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets, ref_targets, rtol=1e-5, atol=1e-5)
    # A done cuts the bootstrap: the step before a done sees only its reward.
    i, j = np.argwhere(dones)[0]
    np.testing.assert_allclose(adv[i, j], rewards[i, j] - values[i, j], rtol=1e-5, atol=1e-6)  # may be near 0


def fixed_outputs_apply(logits, values):
    """An `apply_fn` whose outputs are its parameters: the loss is then a closed form."""
    def apply(params, carry, obs, reset):
        return carry, Categorical(params["logits"]), params["values"]
    return apply


def test_ppo_loss_matches_hand_computation():
    # Two steps, one env, two actions.
    logits = jnp.array([[[0.0, 1.0]], [[2.0, 0.0]]])
    new_values = jnp.array([[0.5], [0.1]])
    batch = PPOBatch(obs=None, reset=jnp.zeros((2, 1), bool), actions=jnp.array([[1], [1]]),
                     log_probs=jnp.log(jnp.array([[0.5], [0.3]])), values=jnp.array([[0.2], [0.4]]),
                     advantages=jnp.array([[1.0], [-1.0]]), targets=jnp.array([[1.0], [0.0]]), init_carry=None)
    cfg = PPOConfig(clip_eps=0.2, value_coef=0.5, entropy_coef=0.01, clip_value=True)
    params = {"logits": logits, "values": new_values}
    loss, stats = ppo_loss(params, fixed_outputs_apply(logits, new_values), batch, cfg)

    p = np.exp(np.array([[0.0, 1.0], [2.0, 0.0]]))
    p /= p.sum(-1, keepdims=True)
    pi_a = p[:, 1]                                  # [0.7311, 0.1192]
    ratio = pi_a / np.array([0.5, 0.3])             # [1.462, 0.397]
    adv = np.array([1.0, -1.0])
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)   # [1, -1]
    surrogate = np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv)  # [1.2, -0.8]: both clipped
    policy_loss = -surrogate.mean()
    v_old, v_new, target = np.array([0.2, 0.4]), np.array([0.5, 0.1]), np.array([1.0, 0.0])
    v_clip = v_old + np.clip(v_new - v_old, -0.2, 0.2)  # [0.4, 0.2]
    value_loss = 0.5 * np.maximum((v_new - target) ** 2, (v_clip - target) ** 2).mean()
    entropy = -(p * np.log(p)).sum(-1).mean()
    np.testing.assert_allclose(stats["policy_loss"], policy_loss, rtol=1e-5)
    np.testing.assert_allclose(stats["value_loss"], value_loss, rtol=1e-5)
    np.testing.assert_allclose(stats["entropy"], entropy, rtol=1e-5)
    np.testing.assert_allclose(loss, policy_loss + 0.5 * value_loss - 0.01 * entropy, rtol=1e-5)
    np.testing.assert_allclose(stats["clip_fraction"], 1.0)
    log_ratio = np.log(ratio)
    np.testing.assert_allclose(stats["approx_kl"], ((ratio - 1) - log_ratio).mean(), rtol=1e-5)
    # Without value clipping the plain squared error is used.
    _, stats = ppo_loss(params, fixed_outputs_apply(logits, new_values), batch, cfg.replace(clip_value=False))
    np.testing.assert_allclose(stats["value_loss"], 0.5 * ((v_new - target) ** 2).mean(), rtol=1e-5)


def test_explained_variance():
    targets = jnp.array([1.0, 2.0, 3.0, 4.0])
    assert float(explained_variance(targets, targets)) == pytest.approx(1.0)
    assert float(explained_variance(jnp.full(4, 2.5), targets)) == pytest.approx(0.0, abs=1e-6)
    assert float(explained_variance(jnp.zeros(4), jnp.ones(4))) == 0.0  # constant targets


@pytest.mark.contract  # builds a training program (tests/conftest.py's tiers)
def test_learning_rate_annealing_really_anneals_in_gradient_steps():
    """With a constant gradient Adam's step direction is constant, so each step's size is the
    learning rate of that gradient step: lr * (1 - k / total)."""
    cfg = PPOConfig(lr=0.1, anneal_lr=True, total_gradient_steps=4, max_grad_norm=1e9)
    state = create_train_state(None, {"w": jnp.zeros(3)}, cfg)
    grads = {"w": jnp.array([1.0, -2.0, 0.5])}
    sizes = []
    for _ in range(4):
        new = state.apply_gradients(grads=grads)
        sizes.append(float(jnp.abs(new.params["w"] - state.params["w"])[0]))
        state = new
    np.testing.assert_allclose(sizes, [0.1, 0.075, 0.05, 0.025], rtol=1e-4)
    assert state.step.dtype == jnp.int32 and not state.step.weak_type


def recurrent_apply(params, carry, obs, reset):
    """A tiny linear recurrent policy, to check minibatches start from their stored carry."""
    def step(h, inp):
        x, r = inp
        h = jnp.where(r[:, None], 0.0, h) * params["decay"] + x
        return h, h
    carry, hs = jax.lax.scan(step, carry, (obs, reset))
    logits = jnp.concatenate([hs * params["w"], -hs * params["w"]], -1)
    return carry, Categorical(logits), hs[..., 0] * params["v"]


@pytest.mark.parametrize("n_minibatches", [1, 2, 4])
def test_update_averages_gradient_step_metrics_and_uses_each_envs_own_carry(n_minibatches):
    t, n = 6, 4
    rng = np.random.default_rng(1)
    obs = jnp.asarray(rng.normal(size=(t, n, 1)), jnp.float32)
    init_carry = jnp.asarray(rng.normal(size=(n, 1)), jnp.float32)
    params = {"decay": jnp.array(0.5), "w": jnp.array(1.0), "v": jnp.array(0.3)}
    reset = jnp.zeros((t, n), bool)
    _, policy, values = recurrent_apply(params, init_carry, obs, reset)
    logits = policy.logits
    actions = jnp.asarray(rng.integers(0, 2, (t, n)), jnp.int32)
    log_probs = jnp.take_along_axis(jax.nn.log_softmax(logits), actions[..., None], -1)[..., 0]
    batch = PPOBatch(obs=obs, reset=reset, actions=actions, log_probs=log_probs, values=values,
                     advantages=jnp.asarray(rng.normal(size=(t, n)), jnp.float32),
                     targets=jnp.asarray(rng.normal(size=(t, n)), jnp.float32), init_carry=init_carry)
    # With a zero learning rate the policy never moves, so every minibatch must reproduce the
    # rollout's log-probs exactly: only true if it is replayed from its own envs' stored carry
    # with whole sequences.
    cfg = PPOConfig(lr=0.0, n_epochs=2, n_minibatches=n_minibatches)
    state = create_train_state(recurrent_apply, params, cfg)
    _, metrics = ppo_update(jax.random.key(0), state, batch, cfg)
    # Exactly up to rounding: the minibatches are another program than the one that computed the
    # log-probs, and (ratio - 1) - log(ratio) of a log-ratio of a few ulps (~1e-7) rounds to up to
    # half an ulp of 1 (6e-8), so an absolute 1e-6; a wrong carry gives > 1e-4 (below).
    np.testing.assert_allclose(metrics["approx_kl"], 0.0, atol=1e-6)
    np.testing.assert_allclose(metrics["clip_fraction"], 0.0)
    # A carry that is not the stored one changes the ratios (so the check above can fail).
    wrong = batch.replace(init_carry=batch.init_carry[::-1])
    _, metrics = ppo_update(jax.random.key(0), state, wrong, cfg)
    assert float(metrics["approx_kl"]) > 1e-4
    # A real update moves the parameters.
    cfg = cfg.replace(lr=1e-2)
    new_state, metrics = ppo_update(jax.random.key(0), create_train_state(recurrent_apply, params, cfg), batch, cfg)
    assert int(new_state.step) == 2 * n_minibatches
    assert not np.allclose(new_state.params["w"], params["w"])
    assert set(metrics) >= {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction",
                            "explained_variance", "grad_norm", "learning_rate"}
    assert all(np.isfinite(float(v)) for v in metrics.values())
