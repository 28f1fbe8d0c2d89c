"""The versions a run ran with (`--version`, and each run's `config.json` under `versions`).

Why record them: a result or a checkpoint is read months later on other versions of jax and its
libraries; the versions it was made with are the first thing to compare when two runs disagree. Read
from the installed distributions' metadata, so importing this module imports none of them.
"""

from __future__ import annotations

import importlib.metadata
import platform
from pathlib import Path

VERSION = "0.1.0"
"""minimax's own version (`minimax.__version__`; `pyproject.toml` says the same, a test checks it)."""

PACKAGES = ("jax", "jaxlib", "flax", "optax", "chex", "orbax-checkpoint", "numpy")
"""The distributions whose versions change what a run computes or how it saves."""


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


RECORD = "versions"
"""The key under which a run's `config.json` records `versions()` (a record, not an option)."""


def versions() -> dict[str, str]:
    """`{"minimax": ..., "python": ..., <PACKAGES>..., "backend": ...}`. Asking for the backend starts JAX's:
    a multi-host run calls this only after it has joined the others."""
    import jax  # noqa: PLC0415

    out = {"minimax": VERSION, "python": platform.python_version()}
    out.update({name: package_version(name) for name in PACKAGES})
    devices = jax.devices()
    out["backend"] = f"{jax.default_backend()} ({len(devices)} x {devices[0].device_kind})"
    return out


def with_versions(options: dict) -> dict:
    """A run config's options as `config.json` holds them: with `versions()` under `RECORD`."""
    return {**options, RECORD: versions()}


def without_versions(saved: dict) -> dict:
    """A saved `config.json`'s options: without the `RECORD` of versions (which any version may hold)."""
    return {k: v for k, v in saved.items() if k != RECORD}


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), for the records that name the hardware beside a figure."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version_text() -> str:
    """One `name version` line per entry of `versions()`, for `--version`."""
    return "\n".join(f"{name} {value}" for name, value in versions().items())
