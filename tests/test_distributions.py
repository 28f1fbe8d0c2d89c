"""`MultiCategorical` (multi-discrete actions, the Kinetix authors' default) and the `MultiDiscrete`
space: independent categoricals per dimension, each over its own number of options, the padding of
the shared `[D, K]` logits never drawn; and the MLP student's multi-discrete head."""

import jax
import jax.numpy as jnp
import numpy as np

from minimax.agents.distributions import Categorical, MultiCategorical, noise_per_element, sample_per_element
from minimax.agents.ppo import PPOBatch, PPOConfig, ppo_loss
from minimax.envs.environment import MultiDiscrete
from minimax.models.mlp import MLPActorCritic

NVEC = (3, 3, 2, 2)  # two motors (forward, backward, off) and two thrusters (on, off)


def _dist(seed=0, batch=(5,)):
    logits = jax.random.normal(jax.random.key(seed), batch + (len(NVEC), 3)) * 2
    return MultiCategorical(logits, NVEC)


def test_log_prob_and_entropy_are_sums_of_per_dimension_categoricals_over_their_own_options():
    dist = _dist()
    actions = jnp.asarray([[2, 0, 1, 0], [1, 1, 0, 1], [0, 2, 1, 1], [2, 2, 0, 0], [1, 0, 1, 1]])
    per_dim = [Categorical(dist.logits[:, d, :n]) for d, n in enumerate(NVEC)]
    want = sum(c.log_prob(actions[:, d]) for d, c in enumerate(per_dim))
    np.testing.assert_allclose(dist.log_prob(actions), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dist.entropy(), sum(c.entropy() for c in per_dim), rtol=1e-6, atol=1e-6)
    probs = np.asarray(dist.probs)
    assert (probs[:, 2:, 2] == 0).all() and np.allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert dist.mode().shape == (5, 4) and (np.asarray(dist.mode())[:, 2:] < 2).all()


def test_samples_follow_the_probabilities_and_never_draw_the_padding():
    dist = MultiCategorical(_dist(1).logits[0], NVEC)
    keys = jax.random.split(jax.random.key(2), 20_000)
    draws = np.asarray(jax.vmap(dist.sample)(keys))
    assert draws.shape == (20_000, 4) and (draws[:, 2:] < 2).all() and (draws >= 0).all()
    for d, n in enumerate(NVEC):
        freq = np.bincount(draws[:, d], minlength=n) / len(draws)
        np.testing.assert_allclose(freq, np.asarray(dist.probs)[d, :n], atol=0.015)
    # the rollout's noise drawn beforehand gives the same actions (runners/rollout.py)
    batch = _dist(3, (64,))
    keys = jax.random.split(jax.random.key(4), 64)
    noise = noise_per_element(keys, batch)
    np.testing.assert_array_equal(jax.vmap(MultiCategorical.sample_from_noise)(batch, noise),
                                  sample_per_element(keys, batch))


def test_the_multi_discrete_space_samples_and_checks_its_coordinates():
    space = MultiDiscrete(NVEC)
    draws = jax.vmap(space.sample)(jax.random.split(jax.random.key(5), 500))
    assert space.shape == (4,) and draws.shape == (500, 4) and draws.dtype == jnp.int32
    assert all(bool(space.contains(x)) for x in draws[:20])
    assert not bool(space.contains(jnp.asarray([0, 0, 2, 0]))) and not bool(space.contains(jnp.zeros(3, int)))


def test_the_mlp_student_has_a_multi_discrete_head_that_ppo_trains():
    model = MLPActorCritic(action_nvec=NVEC, hidden=16)
    t, n, obs_dim = 6, 4, 7
    obs = jax.random.normal(jax.random.key(6), (t, n, obs_dim))
    reset = jnp.zeros((t, n), bool)
    params = model.init(jax.random.key(7), model.initial_carry(n), obs, reset)
    _, policy, value = model.apply(params, model.initial_carry(n), obs, reset)
    assert isinstance(policy, MultiCategorical) and policy.logits.shape == (t, n, 4, 3) and value.shape == (t, n)
    np.testing.assert_allclose(policy.entropy(), 2 * np.log(3) + 2 * np.log(2), rtol=1e-3)  # near uniform at init
    actions = jax.vmap(jax.vmap(MultiCategorical.sample))(policy, jax.random.split(jax.random.key(8), (t, n)))
    batch = PPOBatch(obs=obs, reset=reset, actions=actions, log_probs=policy.log_prob(actions), values=value,
                     advantages=jax.random.normal(jax.random.key(9), (t, n)), targets=value + 1.0,
                     init_carry=model.initial_carry(n))
    grads, stats = jax.grad(ppo_loss, has_aux=True)(params, model.apply, batch, PPOConfig())
    assert float(jnp.abs(grads["params"]["policy_out"]["kernel"]).sum()) > 0
    np.testing.assert_allclose(stats["approx_kl"], 0.0, atol=1e-6)  # the batch's own policy: ratio 1
