"""The student network: parameter count, shapes, initialisation (the reference's), recurrent resets,
sequence == step-by-step."""

import flax.linen as nn
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
    carry, policy, value = model.apply(params, model.initial_carry(4), random_obs(jax.random.key(1), 6, 4),
                                       jnp.zeros((6, 4), bool))
    assert policy.logits.shape == (6, 4, 3) and value.shape == (6, 4)
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
    _, policy, value = model.apply(params, carry0, obs, reset)
    logits = policy.logits
    fresh_obs = jax.tree.map(lambda x: x[5:, :1], obs)
    _, fresh_policy, fresh_value = model.apply(params, model.initial_carry(1), fresh_obs, jnp.zeros((3, 1), bool))
    fresh_logits = fresh_policy.logits
    np.testing.assert_allclose(logits[5:, 0], fresh_logits[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value[5:, 0], fresh_value[:, 0], rtol=1e-5, atol=1e-6)
    # Env 1 did not reset, so its outputs still depend on the carry.
    _, fresh1, _ = model.apply(params, model.initial_carry(1), jax.tree.map(lambda x: x[5:, 1:], obs),
                               jnp.zeros((3, 1), bool))
    assert not np.allclose(logits[5:, 1], fresh1.logits[:, 0], atol=1e-4)


def test_a_sequence_call_equals_step_by_step_calls():
    """Training replays the rollout as one sequence; it must see what acting saw."""
    model = MazeActorCritic(recurrent_size=32)
    params = init(model, n=3)
    obs = random_obs(jax.random.key(4), 7, 3)
    reset = jax.random.bernoulli(jax.random.key(5), 0.3, (7, 3))
    _, seq_policy, seq_value = model.apply(params, model.initial_carry(3), obs, reset)
    seq_logits = seq_policy.logits
    carry = model.initial_carry(3)
    for t in range(7):
        carry, policy, value = model.apply(params, carry, jax.tree.map(lambda x: x[t:t + 1], obs), reset[t:t + 1])
        np.testing.assert_allclose(policy.logits[0], seq_logits[t], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(value[0], seq_value[t], rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def student_params():
    return init(MazeActorCritic(n_actions=7))["params"]


def assert_orthonormal_columns(w, gain=1.0):
    w = np.asarray(w, np.float64)
    np.testing.assert_allclose(w.T @ w, gain ** 2 * np.eye(w.shape[1]), atol=1e-5)


def assert_orthonormal_rows(w, gain=1.0):
    assert_orthonormal_columns(np.asarray(w).T, gain)


def test_every_layer_starts_as_in_the_reference_student(student_params):
    """Per layer as in the minimax reference: orthogonal with the activation's gain, constant
    0.01 on the policy output, zero biases."""
    p = student_params
    assert_orthonormal_columns(np.asarray(p["conv"]["kernel"]).reshape(27, 16), np.sqrt(2))  # ReLU gain
    assert_orthonormal_rows(p["dir_embed"]["embedding"])  # [4, 5], gain 1
    assert_orthonormal_columns(p["policy_hidden"]["kernel"], np.sqrt(2))  # [256, 32], tanh gain
    assert_orthonormal_columns(p["value_hidden"]["kernel"], np.sqrt(2))
    assert_orthonormal_columns(p["value_out"]["kernel"])  # [32, 1], gain 1
    np.testing.assert_array_equal(p["policy_out"]["kernel"], np.full((32, 7), 0.01, np.float32))
    biases = [leaf for path, leaf in jax.tree_util.tree_leaves_with_path(p) if "bias" in jax.tree_util.keystr(path)]
    assert len(biases) == 6  # conv, the LSTM's, and the four head layers'
    for leaf in biases:
        np.testing.assert_array_equal(leaf, 0.0)


def test_each_lstm_gate_block_is_orthogonal_on_its_own(student_params):
    """Regression: one orthogonal matrix across the four gates gave each gate's block about half
    the scale (recurrent column norms 0.5, input 0.38); the reference's flax cell draws one per gate."""
    core = student_params["core"]
    w_in, w_h = np.asarray(core["input_kernel"]), np.asarray(core["hidden_kernel"])  # [149, 1024], [256, 1024]
    for g in range(4):  # gates i, f, g, o
        block_in, block_h = w_in[:, 256 * g:256 * (g + 1)], w_h[:, 256 * g:256 * (g + 1)]
        assert_orthonormal_columns(block_h)  # [256, 256]: orthogonal, W^T W = W W^T = I
        assert_orthonormal_rows(block_h)
        assert_orthonormal_rows(block_in)  # [149, 256]: orthonormal rows, W W^T = I
        np.testing.assert_allclose(np.linalg.norm(block_in, axis=0).mean(), np.sqrt(149 / 256), atol=0.02)
    # The gates are drawn independently: their recurrent blocks are not the same matrix.
    assert np.abs(w_h[:, :256] - w_h[:, 256:512]).max() > 0.1
    np.testing.assert_array_equal(core["bias"], 0.0)


def test_each_gru_gate_block_is_orthogonal_and_the_biases_are_flaxs():
    params = init(MazeActorCritic(recurrent_cell="gru", recurrent_size=32))["params"]["core"]
    w_in, w_h = np.asarray(params["input_kernel"]), np.asarray(params["hidden_kernel"])  # [149, 96], [32, 96]
    for g in range(3):  # gates r, z, n
        assert_orthonormal_columns(w_in[:, 32 * g:32 * (g + 1)])  # [149, 32]: orthonormal columns
        assert_orthonormal_columns(w_h[:, 32 * g:32 * (g + 1)])
    # flax's GRUCell: a bias per gate on the input side, one on the candidate's hidden side; all zero.
    assert params["input_bias"].shape == (96,) and params["hidden_bias"].shape == (32,)
    np.testing.assert_array_equal(params["input_bias"], 0.0)
    np.testing.assert_array_equal(params["hidden_bias"], 0.0)
    cell = nn.GRUCell(32)
    flax_params = cell.init(jax.random.key(0), jnp.zeros((1, 32)), jnp.zeros((1, 149)))
    assert count_params(params) == count_params(flax_params)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_the_initial_policy_is_exactly_uniform(cell):
    """The reference's constant 0.01 policy output: every action gets the same logit, whatever
    the observation and the carry."""
    model = MazeActorCritic(n_actions=7, recurrent_cell=cell, recurrent_size=32)
    params = init(model, n=4, key=3)
    carry, _, _ = model.apply(params, model.initial_carry(4), random_obs(jax.random.key(1), 3, 4),
                              jnp.zeros((3, 4), bool))  # a non-zero carry
    reset = jax.random.bernoulli(jax.random.key(2), 0.3, (5, 4))
    _, policy, _ = model.apply(params, carry, random_obs(jax.random.key(4), 5, 4), reset)
    logits = np.asarray(policy.logits)
    assert np.abs(logits).max() > 1e-3  # the logits do depend on the features ...
    np.testing.assert_allclose(logits, logits[..., :1] * np.ones((1, 7)), rtol=0, atol=1e-6)  # ... equally
    np.testing.assert_allclose(jax.nn.softmax(logits), np.full(logits.shape, 1 / 7), rtol=0, atol=1e-6)


def _flax_cell_params_as_ours(cell, flax_params):
    """Our fused layout from a flax cell's per-gate parameters."""
    p = flax_params["params"]
    if cell == "lstm":
        return {"input_kernel": jnp.concatenate([p[f"i{g}"]["kernel"] for g in "ifgo"], axis=-1),
                "hidden_kernel": jnp.concatenate([p[f"h{g}"]["kernel"] for g in "ifgo"], axis=-1),
                "bias": jnp.concatenate([p[f"h{g}"]["bias"] for g in "ifgo"])}
    return {"input_kernel": jnp.concatenate([p[f"i{g}"]["kernel"] for g in "rzn"], axis=-1),
            "input_bias": jnp.concatenate([p[f"i{g}"]["bias"] for g in "rzn"]),
            "hidden_kernel": jnp.concatenate([p[f"h{g}"]["kernel"] for g in "rzn"], axis=-1),
            "hidden_bias": p["hn"]["bias"]}


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_the_cores_compute_flaxs_cells(cell):
    """Same parameters (flax's per-gate ones, perturbed so biases matter), same outputs:
    our fused layout is flax's cell with its gate kernels side by side."""
    from minimax.models.recurrent import CORES
    t, n, f, h = 6, 3, 7, 5
    flax_cell = nn.OptimizedLSTMCell(h) if cell == "lstm" else nn.GRUCell(h)
    carry = flax_cell.initialize_carry(jax.random.key(0), (n, f))
    flax_params = flax_cell.init(jax.random.key(1), carry, jnp.zeros((n, f)))
    leaves, treedef = jax.tree.flatten(flax_params)
    keys = jax.random.split(jax.random.key(2), len(leaves))
    flax_params = treedef.unflatten([x + 0.3 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)])
    xs = jax.random.normal(jax.random.key(3), (t, n, f))

    want = []
    for x in xs:
        carry, y = flax_cell.apply(flax_params, carry, x)
        want.append(y)
    core = CORES[cell](h)
    ours = {"params": _flax_cell_params_as_ours(cell, flax_params)}
    assert jax.tree.map(jnp.shape, ours) == jax.tree.map(
        jnp.shape, core.init(jax.random.key(0), core.initial_carry(n), xs, jnp.zeros((t, n), bool)))
    _, got = core.apply(ours, core.initial_carry(n), xs, jnp.zeros((t, n), bool))
    np.testing.assert_allclose(got, jnp.stack(want), rtol=1e-5, atol=1e-5)


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
