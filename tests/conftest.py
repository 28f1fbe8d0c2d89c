"""Test-session setup: a persistent compilation cache shared by every xdist worker, so a program
the suite compiles again (a resumed run, a second run of the same config, the same small config
in another module) is loaded instead of recompiled."""

import os

import jax
import pytest


@pytest.fixture(scope="session", autouse=True)
def compilation_cache(tmp_path_factory):
    # Under xdist each worker has its own base temp (<run>/popen-gwN); their parent is the run's,
    # so the workers share one cache (JAX writes cache entries atomically).
    base = tmp_path_factory.getbasetemp()
    cache = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "jax-cache"
    cache.mkdir(exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(cache))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    yield


def pytest_collection_finish(session):
    """Start tests/test_scale.py's multi-device subprocess as soon as collection ends, so it compiles
    while other tests run, but only when a selected test needs it (not under `-m "not slow"`) and
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
