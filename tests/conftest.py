"""Test-session setup: a persistent compilation cache shared by every xdist worker, so a program
the suite compiles again (a resumed run, a second run of the same config, the same small config
in another module) is loaded instead of recompiled, and cheaper compilation (TEST_XLA_FLAGS)."""

import os
import subprocess
import sys

# The suite's programs are tiny and run for milliseconds, but XLA:CPU compiles each for speed:
# compilation is most of the suite's time. Cheaper code generation, set before JAX starts its
# backend, cuts the suite from 910 s to 348 s on this 2-core machine (28 -> 10 min of CPU; the
# first two flags alone: 655 s):
# - LLVM at -O0 without its expensive passes;
# - XLA's older loop emitters for fusions (the newer fusion emitters cost more to compile; jaxlib 0.11
#   has only the newer ones and dropped the flag);
# - one code-generation thread per program (two xdist workers already fill both cores);
# - the compile-time preset, where the jaxlib has one (0.10 accepts it without effect).
# XLA's graph passes (fusion, layout) still run: each program computes the same operations and only
# machine-code quality changes; comparisons between programs already allow for rounding. A test
# whose program runs for seconds compiles it at full optimisation (run_helpers.FULL_OPTIMISATION).
# XLA aborts on a flag it does not know, and jaxlib versions differ in which they know: the whole set
# is probed first, then (when the jaxlib refuses it) each flag alone, and every known one is kept.
# Until this probed each flag, one unknown flag (jaxlib 0.11 dropped the emitter flag) left CI's
# newest leg at the first two. Set XLA_FLAGS with --xla_backend_optimization_level to test at another level.
TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true",
                  "--xla_cpu_use_fusion_emitters=false", "--xla_cpu_parallel_codegen_split_count=1",
                  "--xla_cpu_opt_preset=FAST_COMPILE")


def _xla_accepts(flags: str) -> bool:
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {flags}", JAX_PLATFORMS="cpu")
    probe = "import jax; jax.jit(lambda x: x + 1)(1.0).block_until_ready()"
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True).returncode == 0


def known_test_flags() -> list[str]:
    """The TEST_XLA_FLAGS this jaxlib knows: all of them in one probe, else each probed alone."""
    if _xla_accepts(" ".join(TEST_XLA_FLAGS)):
        return list(TEST_XLA_FLAGS)
    return [flag for flag in TEST_XLA_FLAGS if _xla_accepts(flag)]


# Under xdist the controller sets this before it starts the workers, which inherit it.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *known_test_flags()]).strip()

import jax  # noqa: E402
import pytest


@pytest.fixture(scope="session", autouse=True)
def compilation_cache(tmp_path_factory):
    # Under xdist each worker has its own base temp (<run>/popen-gwN); their parent is the run's,
    # so the workers share one cache (JAX writes cache entries atomically).
    base = tmp_path_factory.getbasetemp()
    cache = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "jax-cache"
    cache.mkdir(exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(cache))
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(cache)  # train.py in a subprocess: this cache, not ~/.cache
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    yield


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (end-to-end checks of over ~20 s each)")


def pytest_collection_modifyitems(config, items):
    """Leave out the `slow` tests unless asked: `--slow`, a `-m` expression (`-m slow`), or a test
    file named on the command line (`tests/test_scale.py`, or a node id in it), whose tests all run. The
    default run is the README's test command, which the guide keeps under 10 minutes on 2 cores;
    the slow checks (end-to-end runs, the multi-device and multi-process ones) take another ~15
    (857 s on their own, 2026-11-28)."""
    if config.getoption("--slow") or config.option.markexpr:
        return
    files = (arg.split("::")[0] for arg in config.args)
    named = {os.path.realpath(path) for path in files if path.endswith(".py")}
    keep, slow = [], []
    for item in items:
        left_out = item.get_closest_marker("slow") and os.path.realpath(item.path) not in named
        (slow if left_out else keep).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep


def pytest_collection_finish(session):
    """Start tests/test_scale.py's multi-device subprocess as soon as collection ends, so it compiles
    while other tests run, but only when a selected test needs it (a `slow` one: `--slow`) and
    a core would otherwise idle: in a single process. With two or more xdist workers every core is
    busy, and a third process only slows them all (measured on 2 cores: 723 s against 674 s for the
    suite), so the worker that runs tests/test_scale.py starts it on first use."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        return
    for item in session.items:
        module = getattr(item, "module", None)
        if "checks" in getattr(item, "fixturenames", ()) and hasattr(module, "start_checks"):
            module.start_checks()
            return
