"""Recurrent cores that run a whole sequence with episode resets (LSTM, GRU; S5 in `s5.py`).

Why not `flax.linen.LSTMCell` under `nn.scan`: autodiff of a scan accumulates each
weight gradient with one small matmul per time step inside the reverse loop. The LSTM
here projects the whole input sequence in one matmul before the loop and has a
hand-written backward pass (`lstm_sequence`) that keeps only the hidden-to-hidden product
in the loop and computes weight gradients as single large matmuls, about 1.3x faster for
the 256-step, 5-epoch PPO update on CPU. The parameters
are the same as flax's cells (LSTM: 4 * (F*H + H*H + H); GRU: 3 * (F*H + H*H) + 4 * H), with
each cell's per-gate kernels stored side by side in one fused kernel.

Initialisation follows the minimax reference, which builds flax's `OptimizedLSTMCell` /
`GRUCell` with `orthogonal(1.0)` for both the input and the recurrent kernels: every gate's
`[F, H]` input block and `[H, H]` recurrent block is an orthogonal matrix drawn on its own
(`per_gate`). One orthogonal matrix across all the gates would shrink every block with fewer
rows than the fused width by 1/sqrt(gates) (the recurrent ones always). Biases start at zero,
as flax's.

Episode boundaries: `reset[t]` is true when step t starts a new episode; the carry is
zeroed *before* step t is processed, so the output at t equals a fresh run's.
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from minimax.models.initializers import orthogonal
from minimax.models.precision import einsum, matmul
from minimax.models.s5 import S5


def per_gate(init, n_gates: int):
    """An initialiser for a fused `[..., n_gates * H]` kernel: each gate's `[..., H]` block is
    drawn by `init` with its own key, as if it were a separate layer (flax's cells keep one
    kernel per gate). The blocks are drawn one by one, so no batched QR decomposition appears."""
    def init_fused(key, shape, dtype=jnp.float32):
        *lead, width = shape
        if width % n_gates:
            raise ValueError(f"a fused kernel's last axis ({width}) must split into {n_gates} gates")
        keys = jax.random.split(key, n_gates)
        return jnp.concatenate([init(k, (*lead, width // n_gates), dtype) for k in keys], axis=-1)
    return init_fused


def _gate_activations(gates):
    """`[N, 4H]` pre-activations -> activations, sigmoid on the i, f, o blocks and tanh on g, as one
    elementwise op over the whole row (a per-lane scale, then one `tanh`), not four slices: one
    kernel per step on the sequential path instead of four. The sigmoid is `0.5 + 0.5 * tanh(0.5 * x)`:
    on XLA:CPU about twice as fast as `exp`-based `jax.nn.sigmoid`, and equal to it within float
    rounding; `tanh(1 * x)` is `tanh(x)` exactly."""
    n = gates.shape[-1] // 4
    is_g = np.zeros(4 * n, bool)
    is_g[2 * n:3 * n] = True
    t = jnp.tanh(gates * jnp.asarray(np.where(is_g, 1.0, 0.5), gates.dtype))
    return jnp.where(is_g, t, 0.5 + 0.5 * t)


def _lstm_cell(w_h, xp, reset, c, h, dtype="float32"):
    """One step on the projected input `xp = x @ w_in + b`; returns the gate activations `[N, 4H]`
    (i, f, g, o) and the new carry. `h @ w_h` runs at `dtype` (`models/precision.py`)."""
    keep = ~reset[:, None]
    c, h = jnp.where(keep, c, 0.0), jnp.where(keep, h, 0.0)
    act = _gate_activations(xp + matmul(h, w_h, dtype))
    n = c.shape[-1]
    c_new = act[:, n:2 * n] * c + act[:, :n] * act[:, 2 * n:3 * n]
    return act, (c_new, act[:, 3 * n:] * jnp.tanh(c_new))


def resolve_unroll(unroll: int) -> int:
    """`--scan-unroll`: time steps per iteration of every scan over time (0: the backend's default,
    1 on CPU, where a loop iteration costs nothing extra, 8 on GPU/TPU, where each iteration's
    small kernels wait on the previous ones: the sequential depth of a rollout and of the recurrent
    forward and backward, ~2,800 dependent steps of an LSTM update, shrinks by the factor)."""
    if unroll < 0:
        raise ValueError(f"scan unroll must be >= 0 (0 = the backend's default), got {unroll}")
    return unroll or (1 if jax.default_backend() == "cpu" else 8)


def lstm_sequence(w_in, w_h, b, xs, reset, carry, unroll: int = 1, dtype: str = "float32"):
    """`((c, h), hs[T, N, H])`: an LSTM over `xs[T, N, F]`, zeroing the carry where `reset`.

    Gates are ordered (i, f, g, o): `x @ w_in + h @ w_h + b`. The input projection does not
    depend on the carry, so it is one large matmul over the whole sequence before the loop
    (and so are its gradients, by autodiff); only the hidden-to-hidden product runs per step.
    Per-step input products are small matmuls that re-read `w_in` every step: for PAIRED's
    teacher (a 21,692 x 1,024 input kernel) hoisting them saves ~15% of its PPO update on CPU
    (benchmarks/RESULTS.md, "PAIRED"). Every product runs at `dtype` (`--matmul-dtype`), the
    carry and the gates stay float32.
    """
    xp = einsum("tnf,fg->tng", xs, w_in, dtype) + b
    return _lstm_recurrence(int(unroll), dtype, w_h, xp, reset, carry)


def _at(w, dtype: str):
    """`w` rounded once to a product's dtype outside a loop (not at every step inside it)."""
    return w if dtype == "float32" else w.astype(jnp.dtype(dtype))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _lstm_recurrence(unroll, dtype, w_h, xp, reset, carry):
    """The recurrent part of `lstm_sequence`. Its hand-written backward pass keeps only the
    hidden-to-hidden product and one elementwise op inside the reverse loop: what does not depend on
    the loop's carry (the gate derivatives' factors) is computed for the whole sequence before it, and
    the weight gradient is one large matmul after it (autodiff of a scan accumulates it one small
    matmul per step). It is checked against autodiff in the tests."""
    w = _at(w_h, dtype)

    def step(carry, inputs):
        x, r = inputs
        _, carry = _lstm_cell(w, x, r, *carry, dtype=dtype)
        return carry, carry[1]
    return jax.lax.scan(step, carry, (xp, reset), unroll=unroll)


def _lstm_forward(unroll, dtype, w_h, xp, reset, carry):
    """The forward pass, saving per step only what the backward pass cannot rebuild outside its loop:
    the gate activations and the cell state (with `hs`, three arrays written per step, not eight)."""
    w = _at(w_h, dtype)

    def step(carry, inputs):
        x, r = inputs
        act, carry = _lstm_cell(w, x, r, *carry, dtype=dtype)
        return carry, (carry[1], carry[0], act)
    last, (hs, cs, acts) = jax.lax.scan(step, carry, (xp, reset), unroll=unroll)
    return (last, hs), (w_h, reset, carry, hs, cs, acts)


def _lstm_backward(unroll, dtype, residuals, cotangents):
    w_h, reset, (c0, h0), hs, cs, acts = residuals
    (dc_last, dh_last), dhs = cotangents
    n = cs.shape[-1]
    keep = ~reset[..., None]  # [T, N, 1]: a reset cut the carry, so nothing flows to earlier steps
    c_prev = jnp.where(keep, jnp.concatenate([c0[None], cs[:-1]]), 0.0)
    h_prev = jnp.where(keep, jnp.concatenate([h0[None], hs[:-1]]), 0.0)
    i, f, g, o = (acts[..., k * n:(k + 1) * n] for k in range(4))
    tanh_c = jnp.tanh(cs)
    # Outside the loop, for every step at once: d(c_t)/d(h_t), each gate's factor (so that the loop
    # computes `dgates` as one product: by dc in the i, f, g blocks, by dh in the o block), and the masks
    # that cut the carry at resets, applied where the carry is read (step t reads step t + 1's).
    dc_dh = o * (1.0 - tanh_c * tanh_c)
    factors = jnp.concatenate([g * i * (1.0 - i), c_prev * f * (1.0 - f), i * (1.0 - g * g),
                               tanh_c * o * (1.0 - o)], axis=-1)
    kept = keep.astype(dhs.dtype)
    f_kept = jnp.concatenate([(f * kept)[1:], jnp.ones_like(f[:1])])  # the last step reads dc_last as is
    h_kept = jnp.concatenate([kept[1:], jnp.ones_like(kept[:1])])
    in_o_block = np.arange(4 * n) >= 3 * n
    w_h_t = _at(jnp.transpose(w_h), dtype)

    def step(carry, inputs):
        dc_next, dh_next = carry  # step t + 1's dc and dgates @ w_h.T, before its reset mask
        dh_out, hk, dcdh, factor, fk = inputs
        dh = dh_out + hk * dh_next
        dc = fk * dc_next + dh * dcdh
        dgates = jnp.where(in_o_block, jnp.tile(dh, (1, 4)), jnp.tile(dc, (1, 4))) * factor
        return (dc, matmul(dgates, w_h_t, dtype)), dgates

    (dc_0, dh_0), dgates = jax.lax.scan(step, (dc_last, dh_last), (dhs, h_kept, dc_dh, factors, f_kept),
                                        reverse=True, unroll=unroll)
    d_carry = (f[0] * kept[0] * dc_0, kept[0] * dh_0)
    d_w_h = einsum("tnh,tng->hg", h_prev, dgates, dtype)
    return d_w_h, dgates, None, d_carry


_lstm_recurrence.defvjp(_lstm_forward, _lstm_backward)


class LSTM(nn.Module):
    """LSTM over `[T, N, F]` inputs. Carry `(c, h)`, each `[N, H]`."""

    features: int
    unroll: int = 1
    """Time steps per loop iteration of the forward and backward scans (`resolve_unroll`)."""
    matmul_dtype: str = "float32"
    """The products' operand dtype (`models/precision.py`)."""

    def initial_carry(self, batch: int):
        zeros = jnp.zeros((batch, self.features), jnp.float32)
        return (zeros, zeros)

    @nn.compact
    def __call__(self, carry, x, reset):
        h_size = self.features
        gate_init = per_gate(orthogonal(1.0), 4)  # gates (i, f, g, o)
        w_in = self.param("input_kernel", gate_init, (x.shape[-1], 4 * h_size))
        w_h = self.param("hidden_kernel", gate_init, (h_size, 4 * h_size))
        b = self.param("bias", nn.initializers.zeros, (4 * h_size,))  # flax: on the hidden side only
        return lstm_sequence(w_in, w_h, b, x, reset, carry, self.unroll, self.matmul_dtype)


class GRU(nn.Module):
    """GRU over `[T, N, F]` inputs, as flax's `GRUCell`. Carry `[N, H]`.

    Gates (r, z, n); the reset gate scales the hidden projection of the candidate (cuDNN form).
    Biases as in flax: one per gate on the input side, plus one on the candidate's hidden
    projection (inside the reset gate's product); the r and z hidden projections have none,
    since a second bias there would only duplicate the input side's.
    """

    features: int
    unroll: int = 1
    """Time steps per loop iteration of the scan (`resolve_unroll`)."""
    matmul_dtype: str = "float32"
    """The products' operand dtype (`models/precision.py`); `w_h` is rounded inside the step, so that
    autodiff accumulates its gradient over the steps in float32."""

    def initial_carry(self, batch: int):
        return jnp.zeros((batch, self.features), jnp.float32)

    @nn.compact
    def __call__(self, carry, x, reset):
        h_size = self.features
        gate_init = per_gate(orthogonal(1.0), 3)  # gates (r, z, n)
        w_in = self.param("input_kernel", gate_init, (x.shape[-1], 3 * h_size))
        b_in = self.param("input_bias", nn.initializers.zeros, (3 * h_size,))
        w_h = self.param("hidden_kernel", gate_init, (h_size, 3 * h_size))
        b_hn = self.param("hidden_bias", nn.initializers.zeros, (h_size,))  # the candidate's only
        x_proj = einsum("tnf,fg->tng", x, w_in, self.matmul_dtype) + b_in

        def step(h, inputs):
            xp, r = inputs
            h = jnp.where(r[:, None], 0.0, h)
            xr, xz, xn = jnp.split(xp, 3, axis=-1)
            hr, hz, hn = jnp.split(matmul(h, w_h, self.matmul_dtype), 3, axis=-1)
            r_gate = jax.nn.sigmoid(xr + hr)
            z = jax.nn.sigmoid(xz + hz)
            n = jnp.tanh(xn + r_gate * (hn + b_hn))
            h = (1.0 - z) * n + z * h
            return h, h

        return jax.lax.scan(step, carry, (x_proj, reset), unroll=self.unroll)


CORES = {"lstm": LSTM, "gru": GRU, "s5": S5}
"""Recurrent cores by `--recurrent-cell` name. A core maps `(carry, x [T, N, F], reset [T, N])` to
`(carry, h [T, N, features])` and has `initial_carry(batch)`, the zero state of an episode start."""


def make_core(cell: str, features: int, *, s5_layers: int = 2, s5_blocks: int = 2, s5_layernorm: str = "post",
              s5_scan: str = "auto", scan_unroll: int = 0, matmul_dtype: str = "float32",
              name: str | None = None) -> nn.Module:
    """The recurrent core `cell` of width `features` (the S5 options apply to `s5` only), its products
    at `matmul_dtype`. Without a `name` it is a free-standing module (for `initial_carry`), not a
    submodule of the caller."""
    if cell not in CORES:
        raise ValueError(f"unknown recurrent cell {cell!r}; choose from {', '.join(CORES)}")
    where = dict(name=name) if name else dict(parent=None)
    if cell == "s5":
        return S5(features, n_layers=s5_layers, n_blocks=s5_blocks, layernorm=s5_layernorm, scan=s5_scan,
                  matmul_dtype=matmul_dtype, **where)
    return CORES[cell](features, unroll=resolve_unroll(scan_unroll), matmul_dtype=matmul_dtype, **where)


class WithRecurrentCore(nn.Module):
    """The core options of a network built around a recurrent core (the student, the teacher):
    `core(name)` builds it inside the network's `__call__`, `initial_carry(batch)` is its zero state
    (the state at an episode start)."""

    recurrent_cell: str = "lstm"
    recurrent_size: int = 256
    s5_layers: int = 2          # S5 core only (models/s5.py)
    s5_blocks: int = 2
    s5_layernorm: str = "post"
    s5_scan: str = "auto"
    scan_unroll: int = 0      # LSTM / GRU: time steps per scan iteration (0: the backend's default)
    matmul_dtype: str = "float32"  # the products' operand dtype (models/precision.py: --matmul-dtype)

    def initial_carry(self, batch: int):
        return self.core().initial_carry(batch)

    def core(self, name: str | None = None) -> nn.Module:
        return make_core(self.recurrent_cell, self.recurrent_size, s5_layers=self.s5_layers,
                         s5_blocks=self.s5_blocks, s5_layernorm=self.s5_layernorm, s5_scan=self.s5_scan,
                         scan_unroll=self.scan_unroll, matmul_dtype=self.matmul_dtype, name=name)
