"""Test-session setup: a persistent compilation cache, so a program the suite compiles again
(a resumed run, a second run of the same config) is loaded instead of recompiled."""

import jax
import pytest


@pytest.fixture(scope="session", autouse=True)
def compilation_cache(tmp_path_factory):
    jax.config.update("jax_compilation_cache_dir", str(tmp_path_factory.mktemp("jax-cache")))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    yield


def pytest_collection_finish(session):
    """Start tests/test_scale.py's multi-device subprocess as soon as collection ends, so it compiles
    while other tests run, but only when a selected test needs it (not under `-m "not slow"`)."""
    for item in session.items:
        module = getattr(item, "module", None)
        if "checks" in getattr(item, "fixturenames", ()) and hasattr(module, "start_checks"):
            module.start_checks()
            return
