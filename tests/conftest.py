"""Test-session setup: a persistent compilation cache shared by every xdist worker, so a program
the suite compiles again (a resumed run, a second run of the same config, the same small config
in another module) is loaded instead of recompiled, and cheaper compilation (TEST_XLA_FLAGS)."""

import os
import subprocess
import sys
from pathlib import Path

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
                     help="also run the e2e tier (CLI, faults, cluster, multi-process, multi-device, bigger runs)")
    parser.addoption("--reference", action="store_true",
                     help="also run the reference tier (the authors' code run live beside ours; CI's floor leg)")


TIERS = ("unit", "contract", "e2e", "reference")
"""The suite's tiers (issue 69), one per test:
- `unit`: no training program (no runner is built: `no_runner_in_unit_tests` makes building one fail there);
- `contract`: a method's or environment's training program at its tiny size (`tests/run_helpers.py`), shared
  by the tests of that method where they can share it;
- `e2e`: the command line, faults, the cluster, several processes or devices, the bigger end-to-end runs;
- `reference`: the comparisons that run the authors' code live (gymnax, jaxmarl, Kinetix, Craftax, ReMiDi's
  wrapper). Where the authors' outputs are recorded (`tests/reference_outputs.py`), the other tiers read the
  recording and this tier also checks that the recording is still what their code gives.
The README's command runs unit + contract; `--slow` adds e2e and `--reference` the reference tier (CI's floor
leg passes both); `-m unit` (`contract`, `e2e`, `reference`) runs one. A file marks its tier (`pytestmark`) or a
test does; unmarked tests are unit. A test file named on the command line runs whole, whatever its tiers."""


def tier_of(item) -> str:
    if item.get_closest_marker("reference"):
        return "reference"
    if item.get_closest_marker("e2e"):
        return "e2e"
    return "contract" if item.get_closest_marker("contract") else "unit"


@pytest.hookimpl(tryfirst=True)  # before `-m` reads the markers
def pytest_collection_modifyitems(config, items):
    """Mark every test with its tier, then leave out the e2e tier unless `--slow` and the reference tier unless
    `--reference`; a `-m` expression chooses alone, and a test file named on the command line (`tests/test_scale.py`,
    or a node id in it) runs all its tests."""
    for item in items:
        tier = tier_of(item)
        if not item.get_closest_marker(tier):
            item.add_marker(tier)
    if config.option.markexpr:
        return
    asked = {"unit", "contract"} | ({"e2e"} if config.getoption("--slow") else set()) \
        | ({"reference"} if config.getoption("--reference") else set())
    files = (arg.split("::")[0] for arg in config.args)
    named = {os.path.realpath(path) for path in files if path.endswith(".py")}
    keep, left_out = [], []
    for item in items:
        out = tier_of(item) not in asked and os.path.realpath(item.path) not in named
        (left_out if out else keep).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep


def registry_snapshot():
    """A callable that puts the process's registries back as they are now, and forgets every plugin imported
    since (its module and `config/plugins.py`'s record of it), as a fresh process would not have them."""
    from minimax.config import plugins  # noqa: PLC0415
    from minimax.core import methods  # noqa: PLC0415
    from minimax.curricula import scores  # noqa: PLC0415
    from minimax.envs import registry  # noqa: PLC0415

    kept = [(table, dict(table)) for table in (methods._METHODS, scores.SCORES, registry._REGISTRY,
                                               registry._REQUIRES, registry._OPTIONS, registry._LOADED,
                                               plugins._LOADED)]
    modules = set(sys.modules)

    def restore():
        for source, plugin in list(plugins._LOADED.items()):
            stem = Path(source).stem if plugin.is_file else source
            if stem not in modules:
                sys.modules.pop(stem, None)
        for table, before in kept:
            table.clear()
            table.update(before)

    return restore


@pytest.fixture(scope="module", autouse=True)
def registries_restored():
    """A test module that registers a method, a score or an environment (a user's plugin) leaves the process's
    registries as it found them, so that no later test in the same worker sees its plugin (`RUNNERS` with an
    extra method, configs with an extra option group): which tests share a worker is the scheduler's choice."""
    restore = registry_snapshot()
    yield
    restore()


@pytest.fixture(scope="module", autouse=True)
def compiled_programs_released():
    """After each test module the worker drops its compiled programs (`training/programs.py`'s kept ones and
    jax's caches). Each executable XLA:CPU holds keeps about nine kernel memory maps, and a process may hold
    `vm.max_map_count` (65,530 by default): a worker that kept every program of its modules reached it about
    95% of the way through `--slow --reference` and died inside XLA's next compile (a segfault or an abort in
    the executable's serialisation, 2026-11-29, twice here and once in CI). A later module that builds the
    same program traces it again and loads it from the session's persistent cache. One module must still fit
    on its own: the largest, `test_plr_runners.py`, reaches about 26,000 maps on jaxlib 0.12 (split a module
    long before it nears the limit; a per-test check would cost about 25 ms a test to count the maps)."""
    yield
    import gc  # noqa: PLC0415

    from minimax.training.programs import forget_programs  # noqa: PLC0415

    forget_programs()
    jax.clear_caches()
    gc.collect()


@pytest.fixture
def fresh_registries():
    """`forget()`: the registries as they were when the test began, every plugin it imported forgotten (what a
    new process, a later command, starts from); the test leaves them so too."""
    restore = registry_snapshot()
    yield restore
    restore()


@pytest.fixture(autouse=True)
def no_runner_in_unit_tests(request, monkeypatch):
    """A unit-tier test that builds a runner (`run_parts`, which every runner, loop and `make_train` starts
    from) fails, naming the tier to move it to: the tiers stay what they say."""
    if tier_of(request.node) != "unit":
        yield
        return
    import minimax.training.builder as builder  # noqa: PLC0415
    import minimax.training.make_train as make_train  # noqa: PLC0415
    import minimax.training.programs as programs  # noqa: PLC0415

    def refuse(*args, **kwargs):
        raise AssertionError(f"{request.node.nodeid} builds a training runner: mark it `contract` (or `e2e`), "
                             "tests/conftest.py's tiers")

    for module in (builder, make_train, programs):
        monkeypatch.setattr(module, "run_parts", refuse)
    yield


def pytest_collection_finish(session):
    """Start tests/test_scale.py's multi-device subprocess as soon as collection ends, so it compiles
    while other tests run, but only when a selected test needs it (an e2e one: `--slow`) and
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
