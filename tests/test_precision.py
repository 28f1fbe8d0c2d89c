"""`--matmul-dtype` (minimax/models/precision.py): bfloat16 rounds the operands of every product of the
student and the teacher and nothing else; float32 builds the products as before."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_model import init, random_obs

from minimax.config import TrainConfig
from minimax.core.options import ConfigError
from minimax.models import MazeActorCritic, MazeTeacherActorCritic
from minimax.models.mlp import MLPActorCritic
from minimax.models.precision import dense, einsum, matmul
from minimax.models.recurrent import _lstm_cell, lstm_sequence

BF16 = jnp.bfloat16


def rounded(x):
    """`x` rounded to bfloat16 and back: what a bfloat16 product reads."""
    return x.astype(BF16).astype(jnp.float32)


def close(got, want, rel):
    """Max error within `rel` of the reference's largest magnitude (plus a floor near zero)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.abs(got - want).max() <= rel * np.abs(want).max() + 1e-6


def test_a_bfloat16_product_is_the_float32_product_of_the_rounded_operands():
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    a, b = jax.random.normal(k1, (3, 5, 40)), jax.random.normal(k2, (40, 24))
    want = jnp.einsum("tnf,fg->tng", rounded(a), rounded(b))
    for got in (einsum("tnf,fg->tng", a, b, "bfloat16"), matmul(a, b, "bfloat16")):
        assert got.dtype == jnp.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.abs(np.asarray(want - a @ b)).max() > 1e-3  # the rounding is real, so the check above can fail
    np.testing.assert_array_equal(einsum("tnf,fg->tng", a, b), jnp.einsum("tnf,fg->tng", a, b))
    np.testing.assert_array_equal(matmul(a, b), a @ b)

    layer = dense(7, "bfloat16")
    x = jax.random.normal(k3, (6, 24))
    w = layer.init(jax.random.key(1), x)
    assert jax.tree.map(lambda p: p.dtype, w)["params"] == {"kernel": jnp.float32, "bias": jnp.float32}
    got = layer.apply(w, x)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(got, rounded(x) @ rounded(w["params"]["kernel"]) + w["params"]["bias"],
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="float16"):
        einsum("ij,jk->ik", a[0], b, "float16")


def test_a_bfloat16_products_backward_multiplies_the_rounded_cotangent_with_float32_results():
    """Autodiff of the rounding would multiply in float32 (the bfloat16 operand upcast to meet the float32
    cotangent) and round each gradient to bfloat16; the products' backward rounds the cotangent instead and
    keeps the float32 result, so every product of a training step runs at bfloat16."""
    k1, k2, k3 = jax.random.split(jax.random.key(8), 3)
    a, b, ct = jax.random.normal(k1, (3, 5, 40)), jax.random.normal(k2, (40, 24)), jax.random.normal(k3, (3, 5, 24))
    for product in (lambda a, b: einsum("tnf,fg->tng", a, b, "bfloat16"), lambda a, b: matmul(a, b, "bfloat16")):
        _, vjp = jax.vjp(product, a, b)
        da, db = vjp(ct)
        assert da.dtype == db.dtype == jnp.float32
        np.testing.assert_allclose(da, jnp.einsum("tng,fg->tnf", rounded(ct), rounded(b)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(db, jnp.einsum("tnf,tng->fg", rounded(a), rounded(ct)), rtol=1e-5, atol=1e-4)
        assert np.any(np.asarray(da) != np.asarray(rounded(da)))  # not rounded to bfloat16 on the way out
        close(da, jnp.einsum("tng,fg->tnf", ct, b), 2e-2)  # and near the float32 gradient
    layer = dense(7, "bfloat16")
    w = layer.init(jax.random.key(1), a[0])
    grads = jax.grad(lambda w: jnp.sum(jnp.sin(layer.apply(w, a))))(w)["params"]
    want = jax.grad(lambda w: jnp.sum(jnp.sin(dense(7).apply(w, a))))(w)["params"]
    assert grads["kernel"].dtype == jnp.float32
    close(grads["kernel"], want["kernel"], 2e-2)
    for spec in ("ij,jk", "...i,ij->...j", "ii,ij->j", "ijk,jl->il"):
        with pytest.raises(ValueError, match="two-operand einsum spec"):
            einsum(spec, a[0], b, "bfloat16")


@pytest.mark.parametrize("name", ["lstm", "teacher"])
def test_every_product_of_a_bfloat16_gradient_step_reads_bfloat16_operands(name):
    """The student's and the teacher's loss gradients, as the PPO update builds them: every `dot_general` of the
    lowered program (forward and backward) multiplies bfloat16 operands, none at float32 (TF32 on a GPU)."""
    make, obs = next((m, o) for n, m, o in networks() if n == name)
    reset = jnp.zeros(jax.tree.leaves(obs)[0].shape[:2], bool).at[0].set(True)
    counts = {}
    for dtype in ("float32", "bfloat16"):
        model = make(dtype)
        carry = model.initial_carry(4)
        params = model.init(jax.random.key(7), carry, jax.tree.map(lambda x: x[:1], obs), reset[:1])

        def loss(p):
            _, policy, value = model.apply(p, carry, obs, reset)
            return jnp.sum(value ** 2) + jnp.sum(jax.nn.log_softmax(policy.logits)[..., 0])
        text = jax.jit(jax.grad(loss)).lower(params).as_text()
        dots = [line.split(":")[-1] for line in text.splitlines() if "stablehlo.dot_general" in line]
        counts[dtype] = (len(dots), sum(d.count("bf16") == 2 and "xf32>, tensor" not in d for d in dots))
    (n32, low32), (n16, low16) = counts["float32"], counts["bfloat16"]
    assert n16 == n32 >= 3 * 3 and low32 == 0  # forward and two backward products of each of the three-plus layers
    assert low16 == n16, counts


def test_the_lstm_hand_written_backward_at_bfloat16_equals_autodiff_of_the_same_rounding():
    k = jax.random.split(jax.random.key(2), 6)
    t, n, f, h = 12, 3, 6, 8
    w_in, w_h = jax.random.normal(k[0], (f, 4 * h)) * 0.4, jax.random.normal(k[1], (h, 4 * h)) * 0.4
    b, xs = jax.random.normal(k[2], (4 * h,)) * 0.1, jax.random.normal(k[3], (t, n, f))
    reset = jax.random.bernoulli(k[4], 0.2, (t, n))
    carry = (jnp.zeros((n, h)), jax.random.normal(k[5], (n, h)))

    def autodiff_lstm(w_in, w_h, b):
        xp = einsum("tnf,fg->tng", xs, w_in, "bfloat16") + b

        def step(c, inputs):
            _, c = _lstm_cell(w_h, *inputs, *c, dtype="bfloat16")
            return c, c[1]
        return jax.lax.scan(step, carry, (xp, reset))

    def loss(fn):
        def value(w_in, w_h, b):
            (c, hh), hs = fn(w_in, w_h, b)
            return jnp.sum(jnp.sin(3 * hs)) + jnp.sum(c * hh)
        return value

    ours = lambda w_in, w_h, b: lstm_sequence(w_in, w_h, b, xs, reset, carry, 1, "bfloat16")  # noqa: E731
    np.testing.assert_allclose(loss(ours)(w_in, w_h, b), loss(autodiff_lstm)(w_in, w_h, b), rtol=1e-5)
    got = jax.grad(loss(ours), argnums=(0, 1, 2))(w_in, w_h, b)
    want = jax.grad(loss(autodiff_lstm), argnums=(0, 1, 2))(w_in, w_h, b)
    for g, w in zip(got, want):
        assert g.dtype == jnp.float32
        close(g, w, 2e-2)  # autodiff rounds its cotangents' products to bfloat16 in other places


def networks():
    obs = random_obs(jax.random.key(3), 10, 4)
    vec = jax.random.normal(jax.random.key(4), (10, 4, 6))
    yield "lstm", lambda d: MazeActorCritic(recurrent_size=32, matmul_dtype=d), obs
    yield "gru", lambda d: MazeActorCritic(recurrent_cell="gru", recurrent_size=32, matmul_dtype=d), obs
    yield "s5", lambda d: MazeActorCritic(recurrent_cell="s5", recurrent_size=16, s5_layers=1, s5_blocks=1,
                                          matmul_dtype=d), obs
    yield "mlp", lambda d: MLPActorCritic(n_actions=3, hidden=32, matmul_dtype=d), vec
    teacher_obs = {"image": jax.random.uniform(jax.random.key(5), (10, 4, 7, 7, 3)),
                   "time": jnp.broadcast_to(jnp.arange(10)[:, None], (10, 4)),
                   "noise": jax.random.uniform(jax.random.key(6), (10, 4, 5))}
    yield "teacher", lambda d: MazeTeacherActorCritic(n_cells=25, num_steps=12, conv_filters=8, recurrent_size=16,
                                                      matmul_dtype=d), teacher_obs


@pytest.mark.parametrize("name,make,obs", list(networks()), ids=[n for n, *_ in networks()])
def test_bfloat16_networks_keep_float32_parameters_and_outputs_near_float32s(name, make, obs):
    reset = jnp.zeros(jax.tree.leaves(obs)[0].shape[:2], bool).at[0].set(True).at[6, 1].set(True)
    outputs = {}
    for dtype in ("float32", "bfloat16"):
        model = make(dtype)
        carry = model.initial_carry(4)
        params = model.init(jax.random.key(7), carry, jax.tree.map(lambda x: x[:1], obs), reset[:1])
        apply = jax.jit(model.apply)
        _, policy, value = apply(params, carry, obs, reset)
        outputs[dtype] = (params, policy, value, apply.lower(params, carry, obs, reset).as_text())
    (p32, pi32, v32, hlo32), (p16, pi16, v16, hlo16) = outputs["float32"], outputs["bfloat16"]
    # Same parameters, all float32: the option is not in the state, only in the products.
    jax.tree.map(np.testing.assert_array_equal, p16, p32)
    assert {x.dtype for x in jax.tree.leaves(p16)} == {np.dtype(np.float32)}
    assert "bf16" in hlo16 and "bf16" not in hlo32
    leaves32, leaves16 = jax.tree.leaves((pi32, v32)), jax.tree.leaves((pi16, v16))
    for a, b in zip(leaves32, leaves16):
        assert b.dtype == a.dtype == jnp.float32
        close(b, a, 5e-2)
    assert any(np.abs(np.asarray(a - b)).max() > 0 for a, b in zip(leaves32, leaves16))


def test_the_option_is_checked_and_reaches_the_student():
    with pytest.raises(ConfigError, match="--matmul-dtype must be one of float32, bfloat16, got 'float16'"):
        TrainConfig.from_options(matmul_dtype="float16")
    from minimax.envs.maze.spec import maze_model, teacher_model
    cfg = TrainConfig.from_options(method="paired", matmul_dtype="bfloat16")
    assert maze_model(cfg).matmul_dtype == "bfloat16" and teacher_model(cfg).matmul_dtype == "bfloat16"
    assert MLPActorCritic.from_options(cfg.model, n_actions=2).matmul_dtype == "bfloat16"
    assert init(MazeActorCritic(recurrent_size=8, matmul_dtype="bfloat16"))  # builds
