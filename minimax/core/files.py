"""Files written whole or not at all: a run's config, a host run's sampler state, reproduce's state."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (text or bytes) atomically: a crash leaves the old file or the new one,
    never half of one. The temporary file is this process's own, so that two processes writing the same file
    (two commands on one run's bookkeeping) never write into each other's."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data)
    os.replace(tmp, path)
