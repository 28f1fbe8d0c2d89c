"""The S5 core: its scans against the step-by-step recurrence, its gradients against autodiff,
episode resets, acting one step at a time, the HiPPO-N initialisation and the student's size."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.config import ConfigError, TrainConfig
from minimax.models import MazeActorCritic, count_params
from minimax.models.s5 import (S5, hippo_n_eig, linear_recurrence, linear_recurrence_reference, resolve_scan,
                               s5_initial_spectrum)

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

T, N, F, H = 37, 3, 11, 16  # an odd length: the associative scan's tree is not a power of two
# Resets at arbitrary steps: env 0 at t = 0 (its incoming carry is dropped), env 1 never (the carry
# flows through the whole sequence), env 2 in the middle and at the last step.
RESET = np.zeros((T, N), bool)
RESET[0, 0] = RESET[[5, 6, 20], 0] = True
RESET[[9, T - 1], 2] = True
RESET = jnp.asarray(RESET)


def random_recurrence(key, shape=(T, N, 5)):
    """`(a, b, x0)` as (re, im) pairs, |a| < 1, with the resets' zero transitions."""
    k = jax.random.split(key, 5)
    mag, phase = jax.random.uniform(k[0], shape, minval=0.5, maxval=0.99), jax.random.uniform(k[1], shape) * 6.3
    keep = ~RESET[..., None]
    a = (jnp.where(keep, mag * jnp.cos(phase), 0.0), jnp.where(keep, mag * jnp.sin(phase), 0.0))
    b = (jax.random.normal(k[2], shape), jax.random.normal(k[3], shape))
    x0 = tuple(jax.random.normal(kk, shape[1:]) for kk in jax.random.split(k[4]))
    return a, b, x0


def naive_states(a, b, x0):
    """The recurrence in NumPy complex numbers, one step at a time."""
    a = np.asarray(a[0]) + 1j * np.asarray(a[1])
    b = np.asarray(b[0]) + 1j * np.asarray(b[1])
    x = np.asarray(x0[0]) + 1j * np.asarray(x0[1])
    out = []
    for t in range(a.shape[0]):
        x = a[t] * x + b[t]
        out.append(x)
    return np.stack(out)


@pytest.mark.parametrize("scan", ["parallel", "sequential"])
def test_the_scans_equal_the_step_by_step_recurrence_and_its_gradients(scan):
    a, b, x0 = random_recurrence(jax.random.key(0))
    want = naive_states(a, b, x0)
    got = jax.jit(linear_recurrence, static_argnums=3)(a, b, x0, scan)
    np.testing.assert_allclose(np.asarray(got[0]) + 1j * np.asarray(got[1]), want, rtol=1e-5, atol=1e-5)

    # The hand-written backward pass against autodiff of the step-by-step form, for every input.
    weights = jax.random.normal(jax.random.key(1), (2, T, N, 5))

    def loss(fn):
        return lambda a, b, x0: jnp.sum(weights[0] * jnp.sin(fn(a, b, x0)[0]) + weights[1] * fn(a, b, x0)[1] ** 2)

    ours = jax.jit(jax.grad(loss(lambda *z: linear_recurrence(*z, scan)), argnums=(0, 1, 2)))(a, b, x0)
    reference = jax.jit(jax.grad(loss(linear_recurrence_reference), argnums=(0, 1, 2)))(a, b, x0)
    jax.tree.map(lambda g, r: np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5), ours, reference)
    # A reset cuts the carry: nothing reaches x0 of env 0, which resets at t = 0.
    assert np.all(np.asarray(ours[2][0])[0] == 0) and np.abs(np.asarray(ours[2][0])[1]).max() > 0


@pytest.fixture(scope="module")
def core_and_params():
    core = S5(H, n_layers=2, n_blocks=2, layernorm="pre", scan="parallel")
    xs = jax.random.normal(jax.random.key(2), (T, N, F))
    carry = jax.tree.map(lambda z: z + 0.3, core.initial_carry(N))  # a carry from an episode in progress
    return core, jax.jit(core.init)(jax.random.key(3), carry, xs, RESET), carry, xs


@pytest.mark.parametrize("scan", ["parallel", "sequential"])
def test_the_core_equals_its_sequential_reference_with_gradients(core_and_params, scan):
    core, params, carry, xs = core_and_params
    ours, reference = core.clone(scan=scan), core.clone(scan="reference")

    def loss(module):
        def f(params, carry):
            new_carry, h = module.apply(params, carry, xs, RESET)
            return jnp.sum(jnp.sin(h)) + sum(jnp.sum(z ** 2) for z in jax.tree.leaves(new_carry))
        return f

    out = jax.jit(ours.apply)(params, carry, xs, RESET)
    want = jax.jit(reference.apply)(params, carry, xs, RESET)
    jax.tree.map(lambda g, r: np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5), out, want)
    grads = jax.jit(jax.grad(loss(ours), argnums=(0, 1)))(params, carry)
    want_grads = jax.jit(jax.grad(loss(reference), argnums=(0, 1)))(params, carry)
    jax.tree.map(lambda g, r: np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5), grads, want_grads)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))
    assert np.abs(np.asarray(grads[1][0][0])[1]).max() > 0  # the carry of an env without a reset gets gradient


def test_a_reset_starts_the_episode_fresh_and_acting_step_by_step_equals_the_sequence(core_and_params):
    core, params, carry, xs = core_and_params
    apply = jax.jit(core.apply)
    last, h = apply(params, carry, xs, RESET)
    # Env 2 resets at t = 9: from there its outputs are those of a run started at t = 9 from zero.
    fresh_carry = core.initial_carry(N)
    _, h_fresh = apply(params, fresh_carry, xs[9:], RESET[9:].at[0].set(True))
    np.testing.assert_allclose(h[9:T - 1, 2], h_fresh[:T - 10, 2], rtol=1e-5, atol=1e-5)
    # Acting (T = 1 calls threading the carry) gives the whole-sequence outputs and final carry.
    step = jax.jit(lambda c, x, r: core.apply(params, c, x[None], r[None]))
    c, outs = carry, []
    for t in range(T):
        c, y = step(c, xs[t], RESET[t])
        outs.append(y[0])
    np.testing.assert_allclose(jnp.stack(outs), h, rtol=1e-5, atol=1e-5)
    jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5), c, last)


def test_hippo_n_initialisation_conjugate_symmetry_and_blocks():
    lam, v = hippo_n_eig(8)
    k = np.arange(8)
    p = np.sqrt(1 + 2 * k)
    legs = -(np.tril(np.outer(p, p)) - np.diag(k))
    normal = legs + np.outer(np.sqrt(k + 0.5), np.sqrt(k + 0.5))
    eig = np.linalg.eigvals(normal)
    np.testing.assert_allclose(np.sort(eig.imag), np.sort(lam.imag), atol=1e-8)
    np.testing.assert_allclose(eig.real, -0.5, atol=1e-8)
    np.testing.assert_allclose(lam.real, -0.5)
    np.testing.assert_allclose(v @ np.diag(lam) @ v.conj().T, normal, atol=1e-8)  # V unitary, A = V Λ V*
    # Conjugate symmetry keeps one eigenvalue of each pair; two blocks repeat the block's spectrum.
    lam2, v2, v2_inv = s5_initial_spectrum(16, 2)
    assert lam2.shape == (8,) and v2.shape == (16, 8) and v2_inv.shape == (8, 16)
    np.testing.assert_allclose(lam2[:4], lam[:4])
    np.testing.assert_allclose(lam2[4:], lam[:4])
    np.testing.assert_allclose(np.sort(np.abs(lam[:4].imag)), np.sort(np.abs(lam[4:].imag)), atol=1e-8)
    np.testing.assert_allclose(v2_inv @ v2, np.eye(8), atol=1e-8)
    assert np.all(v2[:8, 4:] == 0) and np.all(v2[8:, :4] == 0)  # block diagonal


def test_the_s5_student_has_about_the_lstm_students_parameters(core_and_params):
    def n_params(cell):
        model = MazeActorCritic(recurrent_cell=cell)
        obs = dict(image=jnp.zeros((1, 1, 5, 5, 3)), agent_dir=jnp.zeros((1, 1), jnp.int32))
        shapes = jax.eval_shape(model.init, jax.random.key(0), model.initial_carry(1), obs, jnp.ones((1, 1), bool))
        return count_params(shapes)
    # Input projection 149x256; per layer: B and C (128 x 256 complex each), D, Λ, Δ, gate 256x256, norm.
    assert n_params("s5") == 451_612 and n_params("lstm") == 432_924
    _, params, _, _ = core_and_params
    ssm = params["params"]["layer_0"]["ssm"]
    log_step = np.asarray(ssm["log_step"])
    assert np.log(0.001) <= log_step.min() and log_step.max() <= np.log(0.1)
    np.testing.assert_allclose(ssm["lambda_re"], -0.5)


def test_scan_choice_and_bad_s5_shapes_fail_with_the_flag_named():
    assert resolve_scan("auto") == ("sequential" if jax.default_backend() == "cpu" else "parallel")
    with pytest.raises(ValueError, match="'fast'"):
        resolve_scan("fast")
    with pytest.raises(ConfigError, match=r"--recurrent-size \(30\).*--s5-blocks \(2\)"):
        TrainConfig.from_options(recurrent_cell="s5", recurrent_size=30, s5_blocks=2)
    with pytest.raises(ConfigError, match="--s5-layers must be an int >= 1, got 0"):
        TrainConfig.from_options(recurrent_cell="s5", s5_layers=0)
    with pytest.raises(ConfigError, match=r"--teacher-recurrent-size \(100\)"):
        TrainConfig.from_options(method="paired", teacher_recurrent_cell="s5", teacher_recurrent_size=100,
                                 s5_blocks=4, n_walls=10, teacher_n_walls=10)
    # Shapes the LSTM accepts stay accepted: the S5 rules apply to S5 only.
    TrainConfig.from_options(recurrent_cell="lstm", recurrent_size=30, s5_blocks=4)


@pytest.mark.parametrize("preset", ["paired_s5", "plr_s5", "paccel_s5"])
def test_s5_cores_fit_every_runner_and_the_teacher(preset):
    """The S5 core behind the runners that keep carries in their own ways (PAIRED's student population
    and teacher, the PLR family's replays and mutations): their programs trace with it."""
    from minimax.training.builder import build_runner  # noqa: PLC0415
    from minimax.config import PRESETS  # noqa: PLC0415

    small = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, num_envs=4, num_steps=8,
                 recurrent_size=16, buffer_size=8, teacher_n_walls=3, teacher_recurrent_size=16,
                 teacher_conv_filters=4, teacher_recurrent_cell="s5")
    runner = build_runner(PRESETS[preset].replace(**small))
    state = jax.eval_shape(runner.init, jax.random.key(0))
    new_state, metrics = jax.eval_shape(runner.step, state)
    assert jax.tree.map(lambda x: (x.shape, x.dtype), new_state) == jax.tree.map(lambda x: (x.shape, x.dtype), state)
    params = state.train_state.params["params"]
    assert "layer_1" in params["core"] and "input_projection" in params["core"]
    if preset == "paired_s5":
        assert params["core"]["layer_0"]["ssm"]["B"].shape == (2, 8, 16, 2)  # 2 students, P/2 = 8, H = 16
        assert "layer_1" in state.teacher.params["params"]["core"]


@pytest.mark.e2e  # a short run, its resumption and an evaluation: ~35 s
def test_an_s5_run_trains_vmapped_seeds_resumes_exactly_and_evaluates(tmp_path, capsys):
    import json  # noqa: PLC0415
    import shutil  # noqa: PLC0415

    from minimax.evaluation.evaluate import main as evaluate_main  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415
    from minimax.training.loop import train  # noqa: PLC0415

    cfg = TrainConfig.from_options(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3,
                                   recurrent_cell="s5", recurrent_size=16, s5_layernorm="pre", num_envs=8,
                                   num_steps=16, n_epochs=2, lr=3e-3, num_updates=10, log_every=5,
                                   checkpoint_every=5, eval_every=0, progress=False, seeds="0,1",
                                   out_dir=str(tmp_path), run_name="full")
    train(cfg)
    rows = read_rows(cfg.run_dir)
    assert [(r["seed"], r["update"]) for r in rows] == [(0, 5), (1, 5), ("mean", 5), (0, 10), (1, 10), ("mean", 10)]
    assert rows[0]["policy_loss"] != rows[1]["policy_loss"]  # two seeds, two runs
    assert all(np.isfinite(r["value_loss"]) for r in rows)
    # Killed after update 5 was logged and checkpointed: the resumed run logs the uninterrupted run's numbers.
    cut = cfg.replace(run_name="cut")
    shutil.copytree(cfg.run_dir, cut.run_dir)
    shutil.rmtree(cut.run_dir / "checkpoints" / "10")
    lines = (cut.run_dir / "metrics.jsonl").read_text().splitlines()
    (cut.run_dir / "metrics.jsonl").write_text("\n".join(lines[:3]) + "\n")
    train(cut.replace(resume=True))
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("time_s", "sps")} for r in rs]  # noqa: E731
    assert strip(read_rows(cut.run_dir)) == strip(rows)
    # The saved config rebuilds the S5 student for evaluation.
    assert TrainConfig.load(cfg.run_dir / "config.json").model == cfg.model
    evaluate_main([str(cfg.run_dir), "--suite", "SixteenRooms", "--episodes", "2", "--out", str(tmp_path / "ev")])
    doc = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert [(r["seed"], r["checkpoint"]) for r in doc["runs"]] == [(0, 10), (1, 10)]
    capsys.readouterr()
