"""The Procgen student (`models/impala.py`): the reference's parameter count, shapes for any leading
dims, uint8 input, the dummy carry, deterministic init, a jitted [T, N] forward, and init scales."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.agents.distributions import Categorical
from minimax.models import count_params
from minimax.models.impala import ImpalaActorCritic


def reference_param_count(in_ch=3, channels=(16, 32, 32), hidden=256, n_actions=15, fc_in=2048):
    """The PyTorch `ResNetBase` + `Categorical` head (level_replay/model.py, distributions.py), by
    hand: per stage a Conv2d_tf(in, c, 3) and 2 BasicBlocks of 2 Conv2d_tf(c, c, 3), all with bias;
    then fc Linear(2048, hidden), critic_linear Linear(hidden, 1), dist.linear Linear(hidden, A)."""
    conv = lambda i, o: 9 * i * o + o
    linear = lambda i, o: i * o + o
    total, c_in = 0, in_ch
    for c in channels:
        total += conv(c_in, c) + 4 * conv(c, c)
        c_in = c
    return total + linear(fc_in, hidden) + linear(hidden, 1) + linear(hidden, n_actions)


def frames(key, shape):
    return jax.random.randint(jax.random.key(key), shape, 0, 256).astype(jnp.uint8)


@pytest.fixture(scope="module")
def model_and_params():
    model = ImpalaActorCritic()
    params = model.init(jax.random.key(0), model.initial_carry(3), frames(1, (1, 3, 64, 64, 3)),
                        jnp.zeros((1, 3), bool))
    return model, params


def test_parameter_count_equals_the_pytorch_reference(model_and_params):
    _, params = model_and_params
    assert reference_param_count() == 626_256
    assert count_params(params["params"]) == reference_param_count()
    shapes = jax.tree.map(jnp.shape, params["params"])
    assert shapes["layer1_conv"]["kernel"] == (3, 3, 3, 16)
    assert shapes["layer3_block1_conv2"]["kernel"] == (3, 3, 32, 32)
    assert shapes["fc"]["kernel"] == (2048, 256)  # 8 x 8 x 32 after three stride-2 pools
    assert shapes["dist_linear"]["kernel"] == (256, 15) and shapes["critic_linear"]["kernel"] == (256, 1)


def test_outputs_for_any_leading_dims_and_uint8_input(model_and_params):
    model, params = model_and_params
    carry = model.initial_carry(3)
    assert carry.shape == (3, 1) and carry.dtype == jnp.float32
    obs = frames(2, (2, 3, 64, 64, 3))
    out_carry, policy, value = model.apply(params, carry, obs, jnp.zeros((2, 3), bool))
    assert out_carry is carry  # memoryless: the carry comes back unchanged
    assert isinstance(policy, Categorical)
    assert policy.logits.shape == (2, 3, 15) and value.shape == (2, 3)
    assert policy.logits.dtype == jnp.float32 and value.dtype == jnp.float32
    # Same frames without the leading [T, N] split: the convs see each frame independently.
    _, flat_policy, flat_value = model.apply(params, carry, obs.reshape(6, 64, 64, 3), jnp.zeros(6, bool))
    np.testing.assert_allclose(flat_policy.logits.reshape(2, 3, 15), policy.logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flat_value.reshape(2, 3), value, rtol=1e-5, atol=1e-6)
    # Pixel units in any dtype: uint8 and float32 frames give the same outputs.
    _, _, value_f = model.apply(params, carry, obs.astype(jnp.float32), jnp.zeros((2, 3), bool))
    np.testing.assert_array_equal(value_f, value)


def test_init_is_deterministic_and_has_the_reference_scales(model_and_params):
    model, params = model_and_params
    again = model.init(jax.random.key(0), model.initial_carry(3), frames(9, (1, 3, 64, 64, 3)),
                       jnp.zeros((1, 3), bool))
    jax.tree.map(np.testing.assert_array_equal, params, again)
    p = params["params"]
    assert all(not np.any(np.asarray(layer["bias"])) for layer in p.values())
    # xavier-uniform 3x3 conv 16 -> 16: bound sqrt(6 / (9*16 + 9*16)), std bound / sqrt 3.
    k = np.asarray(p["layer1_block0_conv1"]["kernel"])
    bound = np.sqrt(6 / (2 * 9 * 16))
    assert np.abs(k).max() <= bound and abs(k.std() - bound / np.sqrt(3)) < 0.1 * bound
    # Orthogonal kernels with gains sqrt 2 (fc), 0.01 (policy), 1 (value): columns of norm = gain.
    for name, gain in (("fc", np.sqrt(2)), ("dist_linear", 0.01), ("critic_linear", 1.0)):
        w = np.asarray(p[name]["kernel"])
        np.testing.assert_allclose(np.linalg.norm(w, axis=0), gain, rtol=1e-4)


def test_jitted_forward_of_a_rollout_batch(model_and_params):
    model, params = model_and_params
    apply = jax.jit(model.apply)
    carry, policy, value = apply(params, model.initial_carry(4), frames(3, (2, 4, 64, 64, 3)),
                                 jnp.zeros((2, 4), bool))
    assert policy.logits.shape == (2, 4, 15) and value.shape == (2, 4) and carry.shape == (4, 1)
    assert np.all(np.isfinite(policy.logits)) and np.all(np.isfinite(value))
    # Near-uniform initial policy (gain 0.01 head), as the reference's.
    assert np.abs(np.asarray(policy.logits)).max() < 0.1
