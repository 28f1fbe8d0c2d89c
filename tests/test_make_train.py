"""`make_train(config) -> train(key)` (minimax/training/make_train.py): the loop's program as one
pure function, vmappable over seeds without hanging, with typed and legacy keys."""

import ast
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from run_helpers import tiny

from minimax.core.metrics import summarize
from minimax.models.initializers import orthogonal
from minimax.training.budget import STALLED
from minimax.training.builder import build_runner
from minimax.training.loop import train as train_loop
from minimax.training.make_train import make_train
from minimax.training.run_logs import read_rows

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

# `jax.jit(jax.vmap(make_train(cfg)))(keys)` for the DR preset, one student core a line. Before the
# vmap-safe orthogonal initialiser (models/initializers.py) the first case deadlocked XLA:CPU at 0%
# CPU, so it runs in a subprocess with a timeout: a regression fails instead of hanging the suite.
HANG_CASES = textwrap.dedent("""
    import jax, numpy as np
    from minimax.config import PRESETS
    from minimax.training.make_train import make_train
    for cell, size in [("lstm", 32), ("lstm", 256), ("gru", 32), ("s5", 16)]:
        cfg = PRESETS["dr"].replace(recurrent_cell=cell, recurrent_size=size, num_envs=4, num_steps=8,
                                    num_updates=1, n_epochs=1, n_minibatches=1)
        train = jax.jit(jax.vmap(make_train(cfg)))
        for kind, make_key in (("typed", jax.random.key), ("legacy", jax.random.PRNGKey)):
            if kind == "legacy" and (cell, size) != ("lstm", 32):
                continue  # the same program with raw keys: once is enough
            out = train(jax.random.split(make_key(0), 8))
            params = out["runner_state"].train_state.params
            checksum = sum(float(np.abs(np.asarray(x)).sum()) for x in jax.tree.leaves(params))
            loss = np.asarray(out["metrics"]["value_loss"]).tolist()
            print("case", cell, size, kind, repr((checksum, loss)), flush=True)
""")
HANG_TIMEOUT_S = 300  # ~40 s on 2 busy cores at the suite's compiler settings


@pytest.fixture(scope="module", autouse=True)
def hang_cases():
    """The subprocess, started with the module's first test so it compiles beside the others."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.Popen([sys.executable, "-c", HANG_CASES], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_orthogonal_draws_what_jax_draws_alone_and_vmapped():
    shapes = [(32, 32)] * 12 + [(149, 32), (3, 3, 3, 16), (4, 5), (32, 1)]

    def draw(init, key):
        return [init(k, s) for k, s in zip(jax.random.split(key, len(shapes)), shapes)]

    keys = jax.random.split(jax.random.key(3), 8)
    ours = jax.jit(jax.vmap(lambda k: draw(orthogonal(2.0), k)))(keys)
    for i in (0, 7):
        alone = jax.jit(lambda k: draw(jax.nn.initializers.orthogonal(2.0), k))(keys[i])
        for a, b in zip(ours, alone):
            np.testing.assert_array_equal(np.asarray(a[i]), np.asarray(b))


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_vmapped_init_equals_each_seed_alone(tmp_path):
    """The loop initialises seeds with `vmap` (it used `lax.map`): the same values as one seed alone."""
    runner = build_runner(tiny(tmp_path))
    keys = jax.random.split(jax.random.key(0), 3)
    together = jax.jit(jax.vmap(runner.init))(keys)
    for i in (0, 2):
        alone = jax.jit(runner.init)(keys[i])
        for a, b in zip(jax.tree.leaves(together), jax.tree.leaves(alone)):
            if jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
                a, b = jax.random.key_data(a), jax.random.key_data(b)
            np.testing.assert_array_equal(np.asarray(a[i]), np.asarray(b))


@pytest.mark.e2e  # over a minute of compiling and training; the default run leaves it out (--slow)
@pytest.mark.parametrize("overrides", [
    dict(method="dr", num_updates=3, log_every=2),  # a chunk of 2 units, then a remainder of 1
    dict(method="robust_plr", num_updates=2, log_every=1, buffer_size=16, min_fill_ratio=0.25, replay_prob=0.5),
], ids=["dr", "robust_plr"])
def test_make_train_logs_what_the_loop_logs(tmp_path, overrides):
    """Two seeds vmapped through `make_train` give, window by window, the rows `train.py` logs."""
    cfg = tiny(tmp_path, num_envs=4, n_epochs=1, eval_every=0, checkpoint_every=1000, num_seeds=2, seed=5,
               **overrides)
    train_loop(cfg)
    logged = [r for r in read_rows(cfg.run_dir) if r.get("seed") != "mean"]
    out = jax.jit(jax.vmap(make_train(cfg)))(jnp.stack([jax.random.key(s) for s in cfg.seed_list]))
    metrics = jax.device_get(out["metrics"])
    assert not metrics[STALLED].any() and metrics["episodes"].shape == (2, cfg.num_updates)
    assert len(logged) == 2 * 2 and {r["update"] for r in logged} == {cfg.log_every, cfg.num_updates}
    for row in logged:
        i, end = cfg.seed_list.index(row["seed"]), row["update"]
        start = (end - 1) // cfg.log_every * cfg.log_every  # the chunk that ends at `end`
        mine = summarize({k: v[i, start:end] for k, v in metrics.items() if k != STALLED})
        compared = [k for k in mine if isinstance(mine[k], float) and isinstance(row.get(k), float)]
        assert {"value_loss", "policy_loss", "entropy", "grad_norm"} <= set(compared), compared
        for k in compared:
            np.testing.assert_allclose(mine[k], row[k], rtol=1e-5, atol=1e-6, err_msg=f"{k} at update {end}")
        for k in ("cycles", "env_steps", "gradient_updates"):
            assert int(metrics[k][i, :end].sum()) == row[k], k


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_make_train_vmaps_for_every_core_and_key_kind(hang_cases):
    """DR preset, LSTM 32 and 256, GRU, S5; typed and legacy keys give the same run."""
    try:
        output, _ = hang_cases.communicate(timeout=HANG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        hang_cases.kill()
        output, _ = hang_cases.communicate()
        pytest.fail(f"jax.jit(jax.vmap(make_train(cfg))) did not finish in {HANG_TIMEOUT_S} s (the init "
                    f"deadlock is back?); output:\n{output}")
    assert hang_cases.returncode == 0, output
    cases = {tuple(line.split()[1:4]): ast.literal_eval(line.split(None, 4)[4]) for line in output.splitlines()
             if line.startswith("case ")}
    assert set(cases) == {("lstm", "32", "typed"), ("lstm", "32", "legacy"), ("lstm", "256", "typed"),
                          ("gru", "32", "typed"), ("s5", "16", "typed")}, output
    typed, legacy = cases[("lstm", "32", "typed")], cases[("lstm", "32", "legacy")]
    assert typed == legacy
    assert all(np.isfinite(c[0]) and np.isfinite(c[1]).all() for c in cases.values())
