"""The student network: parameter count, shapes, recurrent resets, sequence == step-by-step."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.models import MazeActorCritic, count_params


def random_obs(key, t, n, view=5):
    k1, k2 = jax.random.split(key)
    image = jax.random.randint(k1, (t, n, view, view, 3), 0, 11).astype(jnp.float32) / 10
    return {"image": image, "agent_dir": jax.random.randint(k2, (t, n), 0, 4)}


def init(model, n=3, key=0):
    obs = random_obs(jax.random.key(key), 1, n)
    return model.init(jax.random.key(key), model.initial_carry(n), obs, jnp.ones((1, n), bool))


def test_lstm_student_has_432924_parameters_and_the_published_shapes():
    params = init(MazeActorCritic(n_actions=7))["params"]
    assert count_params(params) == 432_924
    shapes = jax.tree.map(jnp.shape, params)
    assert shapes["conv"]["kernel"] == (3, 3, 3, 16)
    assert shapes["dir_embed"]["embedding"] == (4, 5)
    assert shapes["core"]["input_kernel"] == (149, 1024)  # 144 conv features + 5
    assert shapes["core"]["hidden_kernel"] == (256, 1024)
    assert shapes["policy_hidden"]["kernel"] == (256, 32) and shapes["policy_out"]["kernel"] == (32, 7)
    assert shapes["value_hidden"]["kernel"] == (256, 32) and shapes["value_out"]["kernel"] == (32, 1)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_outputs_have_sequence_shapes(cell):
    model = MazeActorCritic(n_actions=3, recurrent_cell=cell, recurrent_size=16)
    params = init(model, n=4)
    carry, logits, value = model.apply(params, model.initial_carry(4), random_obs(jax.random.key(1), 6, 4),
                                       jnp.zeros((6, 4), bool))
    assert logits.shape == (6, 4, 3) and value.shape == (6, 4)
    assert jax.tree.map(jnp.shape, carry) == jax.tree.map(jnp.shape, model.initial_carry(4))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_after_a_reset_outputs_equal_a_fresh_run(cell):
    model = MazeActorCritic(recurrent_cell=cell, recurrent_size=32)
    params = init(model, n=2)
    obs = random_obs(jax.random.key(2), 8, 2)
    reset = jnp.zeros((8, 2), bool).at[5, 0].set(True)  # env 0 starts a new episode at t=5
    # A non-zero carry coming in, as mid-training.
    carry0, _, _ = model.apply(params, model.initial_carry(2), random_obs(jax.random.key(3), 4, 2),
                               jnp.zeros((4, 2), bool))
    _, logits, value = model.apply(params, carry0, obs, reset)
    fresh_obs = jax.tree.map(lambda x: x[5:, :1], obs)
    _, fresh_logits, fresh_value = model.apply(params, model.initial_carry(1), fresh_obs, jnp.zeros((3, 1), bool))
    np.testing.assert_allclose(logits[5:, 0], fresh_logits[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value[5:, 0], fresh_value[:, 0], rtol=1e-5, atol=1e-6)
    # Env 1 did not reset, so its outputs still depend on the carry.
    _, fresh1, _ = model.apply(params, model.initial_carry(1), jax.tree.map(lambda x: x[5:, 1:], obs),
                               jnp.zeros((3, 1), bool))
    assert not np.allclose(logits[5:, 1], fresh1[:, 0], atol=1e-4)


def test_a_sequence_call_equals_step_by_step_calls():
    """Training replays the rollout as one sequence; it must see what acting saw."""
    model = MazeActorCritic(recurrent_size=32)
    params = init(model, n=3)
    obs = random_obs(jax.random.key(4), 7, 3)
    reset = jax.random.bernoulli(jax.random.key(5), 0.3, (7, 3))
    _, seq_logits, seq_value = model.apply(params, model.initial_carry(3), obs, reset)
    carry = model.initial_carry(3)
    for t in range(7):
        carry, logits, value = model.apply(params, carry, jax.tree.map(lambda x: x[t:t + 1], obs), reset[t:t + 1])
        np.testing.assert_allclose(logits[0], seq_logits[t], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(value[0], seq_value[t], rtol=1e-5, atol=1e-6)


def test_initialisation_is_orthogonal():
    params = init(MazeActorCritic(recurrent_size=64))["params"]
    w = np.asarray(params["core"]["hidden_kernel"])  # [64, 256]: orthonormal rows
    np.testing.assert_allclose(w @ w.T, np.eye(64), atol=1e-5)
    out = np.asarray(params["policy_out"]["kernel"])  # [32, 7], scale 0.01: orthogonal columns
    np.testing.assert_allclose(out.T @ out, 1e-4 * np.eye(7), atol=1e-8)


def reference_lstm(w_in, w_h, b, xs, reset, carry):
    """A plain LSTM (jax.nn.sigmoid, autodiff through the scan) to check the hand-written backward pass."""
    def step(carry, inputs):
        x, r = inputs
        c, h = (jnp.where(r[:, None], 0.0, v) for v in carry)
        i, f, g, o = jnp.split(x @ w_in + h @ w_h + b, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (c, h), h
    return jax.lax.scan(step, carry, (xs, reset))


def test_lstm_hand_written_gradients_equal_autodiff():
    from minimax.models.recurrent import lstm_sequence
    k = jax.random.split(jax.random.key(0), 7)
    t, n, f, h = 9, 3, 5, 4
    args = (jax.random.normal(k[0], (f, 4 * h)), jax.random.normal(k[1], (h, 4 * h)) * 0.5,
            jax.random.normal(k[2], (4 * h,)), jax.random.normal(k[3], (t, n, f)))
    reset = jax.random.bernoulli(k[4], 0.25, (t, n)).at[0, 0].set(False)
    carry = (jax.random.normal(k[5], (n, h)), jax.random.normal(k[6], (n, h)))

    def loss(fn):
        def value(w_in, w_h, b, xs, carry):
            (c, hh), hs = fn(w_in, w_h, b, xs, reset, carry)
            return jnp.sum(jnp.sin(3 * hs)) + jnp.sum(c * hh)  # weights every output differently
        return value

    np.testing.assert_allclose(loss(lstm_sequence)(*args, carry), loss(reference_lstm)(*args, carry), rtol=1e-5)
    got = jax.grad(loss(lstm_sequence), argnums=(0, 1, 2, 3, 4))(*args, carry)
    want = jax.grad(loss(reference_lstm), argnums=(0, 1, 2, 3, 4))(*args, carry)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
