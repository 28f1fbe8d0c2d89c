"""A rollout draws all its randomness before its loop (`runners/rollout.py: rollout_randomness`): the
actions, values and transitions equal those of a rollout that draws each step's keys and samples inside
the loop, as the rollouts did before (issue 48), and the split distributions sample what jax samples."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.distributions import Categorical, DiagGaussian, noise_per_element, sample_per_element
from minimax.config import TrainConfig
from minimax.core.parallel import NO_SHARD
from minimax.runners.rollout import collect_rollout, policy_step
from minimax.training.builder import build_runner

TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=12, recurrent_size=8, num_envs=6,
            num_steps=20, n_epochs=1, progress=False)


def per_step_rollout(key, apply_fn, params, env_step, stream, num_steps):
    """The rollout with every random draw inside its loop: step t splits `split(key, T)[t]` into an
    action key (one per env) and an env key, and samples with the action keys."""
    n = stream.reset.shape[0]

    def step(stream, key):
        k_act, k_env = jax.random.split(key)
        carry, action, log_prob, value, _ = policy_step(NO_SHARD.env_keys(k_act, n), apply_fn, params,
                                                        stream.carry, stream.obs, stream.reset)
        obs, env_state, reward, done, _ = env_step(k_env, stream.env_state, action)
        stream = stream.replace(env_state=env_state, obs=obs, reset=done, carry=carry)
        return stream, (action, log_prob, value, reward, done)

    return jax.lax.scan(step, stream, jax.random.split(key, num_steps))[1]


@pytest.mark.contract  # builds a training program (tests/conftest.py's tiers)
def test_a_rollout_with_its_randomness_drawn_first_equals_one_that_draws_step_by_step():
    runner = build_runner(TrainConfig.from_options(**TINY))
    key = jax.random.key(11)

    @jax.jit  # one program: the state and both rollouts
    def both(init_key):
        state = runner.init(init_key)
        ts = state.train_state
        return (collect_rollout(key, ts.apply_fn, ts.params, runner.env_step, state.stream, 20)[0],
                per_step_rollout(key, ts.apply_fn, ts.params, runner.env_step, state.stream, 20))

    hoisted, (actions, log_probs, values, rewards, dones) = both(jax.random.key(3))
    np.testing.assert_array_equal(hoisted.actions, actions)
    assert len(np.unique(np.asarray(actions))) > 2  # a policy that samples, not one action
    np.testing.assert_array_equal(hoisted.dones, dones)
    np.testing.assert_array_equal(hoisted.rewards, rewards)
    np.testing.assert_allclose(hoisted.log_probs, log_probs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hoisted.values, values, rtol=1e-5, atol=1e-6)


def test_split_sampling_is_jax_sampling_and_noise_per_element_is_sample_per_element():
    keys = jax.random.split(jax.random.key(5), 64)
    logits = jax.random.normal(jax.random.key(6), (64, 7))
    categorical = Categorical(logits)
    expected = jax.vmap(jax.random.categorical)(keys, logits)
    np.testing.assert_array_equal(sample_per_element(keys, categorical), expected)
    noise = noise_per_element(keys, Categorical(jnp.zeros_like(logits)))  # only the shapes are read
    np.testing.assert_array_equal(jax.vmap(Categorical.sample_from_noise)(categorical, noise), expected)

    gaussian = DiagGaussian(logits[:, :2], jnp.full((64, 2), -0.5))
    draws = jax.vmap(lambda k, m: m + jnp.exp(-0.5) * jax.random.normal(k, (2,)))(keys, logits[:, :2])
    np.testing.assert_allclose(sample_per_element(keys, gaussian), draws, rtol=1e-6, atol=1e-6)
    noise = noise_per_element(keys, gaussian)  # mean + std * noise: two programs may fuse it differently (FMA)
    np.testing.assert_allclose(jax.vmap(DiagGaussian.sample_from_noise)(gaussian, noise),
                               sample_per_element(keys, gaussian), rtol=1e-6, atol=1e-6)
