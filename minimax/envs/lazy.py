"""A package whose names load on first use (PEP 562): an optional environment's package whose modules
import its optional dependency, while its `options.py` (read by every run's config through the
registry) must import without it."""

from __future__ import annotations

import importlib
from typing import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` for `package` that imports `exports[name]` (a submodule) on first use."""

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    return __getattr__
