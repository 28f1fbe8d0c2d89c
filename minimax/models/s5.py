"""S5: a stack of structured state-space layers that runs a sequence with a (parallel) scan.

The minimax report (Section 4, "S5 policies"; Table 6) replaces the student's LSTM with S5
layers (Smith, Warrington and Linderman, "Simplified State Space Layers for Sequence Modeling",
ICLR 2023). Why: a layer's state follows a *linear* recurrence `x_t = Λ̄ x_{t-1} + B̄ u_t`, so a
whole sequence is one associative scan (depth log T) and every other product is one large
matmul over all T x N steps, where an LSTM must run T dependent steps.

The architecture is the report's (as in the minimax release's `models/s5.py`):

    x [T, N, F] -> Dense(H) -> n_layers x S5Layer -> h [T, N, H]
    S5Layer: skip = x; [LayerNorm if pre]; y = SSM(x); y = GELU(y);
                   y = y * sigmoid(Dense(y)); x = skip + y; [LayerNorm if post]

- **SSM** (S5 paper, Section 3): one multi-input multi-output SSM per layer, with a diagonal
  complex state matrix `Λ` (P/2 complex states for `features` = P), input matrix `B̃`, output
  matrix `C̃`, a diagonal feedthrough `D`, and the output `y_t = 2 Re(C̃ x_t) + D u_t`.
- **Initialisation** (S5 paper, Section 3.2 and its block-diagonal variant in the appendix):
  `Λ` from the eigenvalues of the normal part of HiPPO-LegS (HiPPO-N), one copy per block of
  size P / `n_blocks`; `B̃ = V⁻¹B` and `C̃ = CV` with `V` the (block-diagonal) eigenvectors and
  `B`, `C` drawn LeCun-normal, as in the reference code (`C` drawn over its `[H, P, 2]`
  real/imaginary array); `D ~ N(0, 1)`.
- **Conjugate symmetry** (S5 paper, Section 3.2): the eigenvalues of a real matrix come in
  conjugate pairs, so only one of each pair is kept and the output's real part is doubled: P/2
  complex states give the output of P.
- **Discretisation**: zero-order hold, `Λ̄ = exp(ΛΔ)`, `B̄ = Λ⁻¹(Λ̄ - 1)B̃`, with one learned
  timescale `Δ = exp(log_step)` per state, `log_step ~ U[log 0.001, log 0.1]`.
- **Activation**: GELU then a sigmoid gate on a Dense of the same vector (the S5 reference
  code's `half_glu1`, the release's choice for every S5 preset).
- **Layer norm** before the SSM (`pre`) or after the residual sum (`post`): the report found one
  of them essential for mazes, and Table 6 picks it per method.
- **Blocks** (`n_blocks`, the report's "# blocks" swept over {1, 2, 4}): how many HiPPO-N
  blocks `Λ` and `V` are initialised from. They change the initial spectrum, not the parameter
  count; the number of layers sets the size (2 layers of width 256: 451,612 parameters for the
  maze student against the LSTM's 432,924).

**Episode resets inside the scan** (as Lu et al., 2023, "Structured State Space Models for
In-Context Reinforcement Learning"): `reset[t]` starts a new episode at step t, so
`x_t = (1 - reset_t) Λ̄ x_{t-1} + B̄ u_t`. The reset is folded into each scan element's
transition: a reset step's element is `(0, B̄u_t)`, so the composition of any span containing it
forgets everything before it. The operator `(a_i, b_i) ∘ (a_j, b_j) = (a_j a_i, a_j b_i + b_j)`
stays associative and the scan needs no third component (Lu et al.'s three-part operator
reduces to this). The carry entering the sequence enters as `b_0 += a_0 x_{-1}`.

**Which scan** (`scan`): `parallel` (the associative scan, for accelerators), `sequential` (a
`lax.scan` over T: faster on CPU, where the elementwise step is already vectorised over N x P),
or `auto` (by backend). Both share the hand-written backward pass (`linear_recurrence`) and
agree within float rounding. Acting (T = 1) is one step, no scan.

The carry is one `(re, im)` pair of float32 `[N, P/2]` arrays per layer: real arrays checkpoint,
shard and compare like every other carry in the project.
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from minimax.models.initializers import orthogonal
from minimax.models.precision import dense

LAYERNORM_POSITIONS = ("pre", "post", "none")


# ----------------------------------------------------------------------------- initialisation

@functools.lru_cache(maxsize=None)
def hippo_n_eig(n: int):
    """`(Λ [n] complex, V [n, n] complex)`: the eigendecomposition of HiPPO-N, the normal part of
    the `n x n` HiPPO-LegS matrix (S5 paper, Section 3.2; Gu et al. 2022 for the DPLR form).

    HiPPO-LegS is `A_nk = -sqrt(2n+1) sqrt(2k+1)` below the diagonal and `-(n+1)` on it; adding
    `p pᵀ` with `p_n = sqrt(n + 1/2)` leaves `-I/2` plus a skew-symmetric matrix S, whose
    eigenvalues are `-1/2 + iω` with `iω` those of S (from the Hermitian `-iS`).
    Eigenvalues come sorted by ω, so the first half holds one of every conjugate pair.
    """
    k = np.arange(n)
    p = np.sqrt(1.0 + 2.0 * k)
    legs = -(np.tril(p[:, None] * p[None, :]) - np.diag(k))
    normal = legs + np.sqrt(k + 0.5)[:, None] * np.sqrt(k + 0.5)[None, :]
    omega, v = np.linalg.eigh(normal * -1j)
    lam = np.mean(np.diagonal(normal)) + 1j * omega
    return lam, v


def s5_initial_spectrum(state_size: int, n_blocks: int):
    """`(Λ [P/2], V [P, P/2], V⁻¹ [P/2, P])` for `state_size` = P with conjugate symmetry and
    `n_blocks` HiPPO-N blocks on the diagonal (each of size P / n_blocks, half kept)."""
    block = state_size // n_blocks
    lam, v = hippo_n_eig(block)
    lam, v = lam[:block // 2], v[:, :block // 2]
    lam = np.tile(lam, n_blocks)
    v_full = np.zeros((state_size, state_size // 2), complex)
    for i in range(n_blocks):
        v_full[i * block:(i + 1) * block, i * (block // 2):(i + 1) * (block // 2)] = v
    return lam, v_full, v_full.conj().T


def s5_shape_problem(state_size, n_blocks, n_layers,
                     names=("the S5 state size", "the number of S5 blocks", "the number of S5 layers")) -> str | None:
    """Why an S5 of `state_size` with `n_blocks` and `n_layers` cannot be built (None if it can), naming
    the three values by `names` (the config passes its flags)."""
    size_name, blocks_name, layers_name = names
    for name, value in ((layers_name, n_layers), (blocks_name, n_blocks)):
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return f"{name} must be an int >= 1, got {value!r}"
    if state_size % (2 * n_blocks):
        return (f"an S5 core needs {size_name} ({state_size}) to split into {blocks_name} ({n_blocks}) blocks "
                f"of an even size (conjugate pairs): a multiple of {2 * n_blocks}")
    return None


def _complex_pair(init):
    """Store a complex initialiser's `[..., 2]` real/imaginary result."""
    def param_init(key, shape, dtype=jnp.float32):
        z = init(key)
        return jnp.stack([z.real, z.imag], axis=-1).astype(dtype)
    return param_init


# ----------------------------------------------------------------------------- the linear recurrence
# Complex numbers travel as (real, imaginary) pairs of float32 arrays: XLA:CPU runs complex
# matmuls ~3x slower than the equivalent real ones, and real pairs keep the carry real.

def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


def _combine(earlier, later):
    """The associative operator of `x_t = a_t x_{t-1} + b_t` (complex, as real pairs): apply
    `earlier`, then `later`: `(a_j a_i, a_j b_i + b_j)`."""
    a_ir, a_ii, b_ir, b_ii = earlier
    a_jr, a_ji, b_jr, b_ji = later
    a_r, a_i = _cmul(a_jr, a_ji, a_ir, a_ii)
    b_r, b_i = _cmul(a_jr, a_ji, b_ir, b_ii)
    return a_r, a_i, b_r + b_jr, b_i + b_ji


def _parallel_scan(a, b, x0):
    """States of `x_t = a_t x_{t-1} + b_t` from `x_{-1} = x0` by an associative scan over axis 0
    (depth log T); `a`, `b`: `(re, im)` pairs `[T, ...]`, `x0`: a pair `[...]`."""
    (ar, ai), (br, bi) = a, b
    x0r, x0i = _cmul(ar[0], ai[0], *x0)
    br, bi = br.at[0].add(x0r), bi.at[0].add(x0i)
    _, _, xr, xi = jax.lax.associative_scan(_combine, (ar, ai, br, bi), axis=0)
    return xr, xi


def _step(a_r, a_i, x, b_r, b_i):
    xr, xi = _cmul(a_r, a_i, *x)
    return xr + b_r, xi + b_i


def _sequential_scan(a, b, x0):
    """`_parallel_scan`'s states by a `lax.scan`, T elementwise steps (no matmul in the loop)."""
    def step(x, inputs):
        (a_r, a_i), (b_r, b_i) = inputs
        x = _step(a_r, a_i, x, b_r, b_i)
        return x, x
    _, xs = jax.lax.scan(step, x0, (a, b))
    return xs


SCANS = {"parallel": _parallel_scan, "sequential": _sequential_scan}
SCAN_CHOICES = ("auto", *SCANS)


def resolve_scan(scan: str) -> str:
    """`auto`: the parallel scan on accelerators, the sequential one on CPU. On CPU the
    elementwise recurrence is already vectorised over N x P and a few cores have no parallelism
    to spare, so the associative scan's extra work (2x the operations, log T passes over memory)
    makes it slower (benchmarks/RESULTS.md, "S5")."""
    if scan not in SCAN_CHOICES:
        raise ValueError(f"S5 scan must be one of {', '.join(SCAN_CHOICES)}, got {scan!r}")
    if scan == "auto":
        return "sequential" if jax.default_backend() == "cpu" else "parallel"
    return scan


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def linear_recurrence(a, b, x0, scan: str = "parallel"):
    """`x [T, ...]` with `x_t = a_t x_{t-1} + b_t`, `x_{-1} = x0`: complex numbers as `(re, im)`
    pairs, by the `parallel` (associative) or `sequential` scan. Its backward pass is the adjoint
    recurrence `g_t = conj(a_{t+1}) g_{t+1} + x̄_t`, the same scan run in reverse, instead of
    autodiff through the scan (through the associative scan's tree: about 3x the forward's cost);
    it is tested against autodiff of the step-by-step form."""
    return SCANS[scan](a, b, x0)


def _recurrence_forward(a, b, x0, scan):
    xs = SCANS[scan](a, b, x0)
    return xs, (a, xs, x0)


def _recurrence_backward(scan, residuals, ct):
    (ar, ai), (xr, xi), (x0r, x0i) = residuals
    # g_t = conj(a_{t+1}) g_{t+1} + ct_t, run backwards in time as a forward scan of the flipped arrays.
    zero = jnp.zeros_like(ar[:1])
    cr = jnp.concatenate([ar[1:], zero])[::-1]
    ci = -jnp.concatenate([ai[1:], zero])[::-1]
    zero_carry = (jnp.zeros_like(x0r), jnp.zeros_like(x0i))
    gr, gi = SCANS[scan]((cr, ci), (ct[0][::-1], ct[1][::-1]), zero_carry)
    gr, gi = gr[::-1], gi[::-1]
    # x_{t-1} for every t; the gradient of a_t is g_t conj(x_{t-1}), of x0 conj(a_0) g_0.
    pr = jnp.concatenate([x0r[None], xr[:-1]])
    pi = jnp.concatenate([x0i[None], xi[:-1]])
    da = _cmul(gr, gi, pr, -pi)
    dx0 = _cmul(ar[0], -ai[0], gr[0], gi[0])
    return da, (gr, gi), dx0


linear_recurrence.defvjp(_recurrence_forward, _recurrence_backward)


def linear_recurrence_reference(a, b, x0):
    """`linear_recurrence` one step at a time with autodiff's gradients: the reference both
    scans and their hand-written backward pass are tested against."""
    return _sequential_scan(a, b, x0)


def reset_transitions(lambda_bar, reset):
    """`a_t = (1 - reset_t) Λ̄` as a `(re, im)` pair `[T, N, P]`: a reset step's element drops the
    state before it (the reset inside the associative operator's elements)."""
    keep = ~reset[..., None]
    return tuple(jnp.where(keep, part, 0.0) for part in lambda_bar)


# ----------------------------------------------------------------------------- modules

class S5SSM(nn.Module):
    """One S5 state-space model: `(x0, u [T, N, H], reset [T, N])` -> `(x_last, y [T, N, H])`,
    states as `(re, im)` pairs `[N, P/2]`."""

    state_size: int
    n_blocks: int = 1
    dt_min: float = 0.001
    dt_max: float = 0.1
    scan: str = "auto"  # parallel | sequential | auto | reference (the tests' autodiff reference)

    @nn.compact
    def __call__(self, x0, u, reset):
        h = u.shape[-1]
        lam, v, v_inv = s5_initial_spectrum(self.state_size, self.n_blocks)
        half = self.state_size // 2
        lam_re = self.param("lambda_re", lambda k, s: jnp.asarray(lam.real, jnp.float32), (half,))
        lam_im = self.param("lambda_im", lambda k, s: jnp.asarray(lam.imag, jnp.float32), (half,))
        lecun = nn.initializers.lecun_normal()
        b = self.param("B", _complex_pair(lambda k: jnp.asarray(v_inv, jnp.complex64)
                                          @ lecun(k, (self.state_size, h))), (half, h, 2))
        c = self.param("C", _complex_pair(lambda k: _complex(lecun(k, (h, self.state_size, 2)))
                                          @ jnp.asarray(v, jnp.complex64)), (h, half, 2))
        d = self.param("D", nn.initializers.normal(1.0), (h,))
        log_min, log_max = np.log(self.dt_min), np.log(self.dt_max)
        log_step = self.param("log_step", lambda k, s: jax.random.uniform(k, s, jnp.float32, log_min, log_max),
                              (half,))

        # Zero-order hold with one learned timescale per state: Λ̄ = exp(ΛΔ), B̄ = Λ⁻¹(Λ̄ - 1)B̃.
        lambda_ = lam_re + 1j * lam_im
        lambda_bar = jnp.exp(lambda_ * jnp.exp(log_step))
        b_bar = ((lambda_bar - 1.0) / lambda_)[:, None] * _complex(b)                   # [P/2, H]
        bu = jnp.einsum("tnh,hp->tnp", u, jnp.concatenate([b_bar.real, b_bar.imag]).T)  # one real matmul
        bu = (bu[..., :half], bu[..., half:])
        a = reset_transitions((lambda_bar.real, lambda_bar.imag), reset)
        if u.shape[0] == 1:  # acting: one step, no scan
            xs = tuple(part[None] for part in _step(a[0][0], a[1][0], x0, bu[0][0], bu[1][0]))
        elif self.scan == "reference":
            xs = linear_recurrence_reference(a, bu, x0)
        else:
            xs = linear_recurrence(a, bu, x0, resolve_scan(self.scan))
        # y = 2 Re(C̃ x) + D u (conjugate symmetry), as one real matmul.
        c_out = 2.0 * jnp.concatenate([c[..., 0].T, -c[..., 1].T])                    # [P, H]
        y = jnp.einsum("tnp,ph->tnh", jnp.concatenate(xs, axis=-1), c_out) + d * u
        return (xs[0][-1], xs[1][-1]), y


def _complex(pair):
    return pair[..., 0] + 1j * pair[..., 1]


class S5Layer(nn.Module):
    """SSM, GELU, sigmoid gate, residual, and the layer norm `pre` or `post` (or `none`)."""

    state_size: int
    n_blocks: int = 1
    layernorm: str = "post"
    scan: str = "auto"
    matmul_dtype: str = "float32"  # the gate's product (models/precision.py); the SSM stays float32

    @nn.compact
    def __call__(self, carry, x, reset):
        skip = x
        if self.layernorm == "pre":
            x = nn.LayerNorm(name="norm")(x)
        x_last, y = S5SSM(self.state_size, self.n_blocks, scan=self.scan, name="ssm")(carry, x, reset)
        y = nn.gelu(y)
        y = y * jax.nn.sigmoid(dense(y.shape[-1], self.matmul_dtype, name="gate")(y))
        x = skip + y
        if self.layernorm == "post":
            x = nn.LayerNorm(name="norm")(x)
        return x_last, x


class S5(nn.Module):
    """The S5 recurrent core over `[T, N, F]` inputs, with the `LSTM`'s interface.

    `features` is the model width H and the state size P (P/2 complex states). The input is
    first projected to H (orthogonal, gain 1, as the release's `fc_pre_s5`). Carry: a tuple of
    `n_layers` `(re, im)` pairs, each `[N, P/2]`.
    """

    features: int
    n_layers: int = 2
    n_blocks: int = 2
    layernorm: str = "post"
    scan: str = "auto"
    matmul_dtype: str = "float32"  # the dense layers' products (models/precision.py); the SSM stays float32

    def initial_carry(self, batch: int):
        zeros = jnp.zeros((batch, self.features // 2), jnp.float32)
        return tuple((zeros, zeros) for _ in range(self.n_layers))

    @nn.compact
    def __call__(self, carry, x, reset):
        problem = s5_shape_problem(self.features, self.n_blocks, self.n_layers)
        if problem:
            raise ValueError(problem)
        if self.layernorm not in LAYERNORM_POSITIONS:
            raise ValueError(f"S5 layer norm position must be one of {', '.join(LAYERNORM_POSITIONS)}, "
                             f"got {self.layernorm!r}")
        x = dense(self.features, self.matmul_dtype, kernel_init=orthogonal(1.0), name="input_projection")(x)
        new_carry = []
        for i in range(self.n_layers):
            layer_carry, x = S5Layer(self.features, self.n_blocks, self.layernorm, self.scan, self.matmul_dtype,
                                     name=f"layer_{i}")(carry[i], x, reset)
            new_carry.append(layer_carry)
        return tuple(new_carry), x
