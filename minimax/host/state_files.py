"""A host run's checkpointed host state as data: one `.npz` file, never a pickle.

What the next update of a host run reads lives on the host (the envs' serialized states, the level
sampler's scores and random stream, the return normaliser, the current observations, ...). It is a
tree of dicts and lists whose leaves are numbers, strings, booleans, None, bytes and numpy arrays.
`save_state` writes it as one `.npz` (numpy's zip of `.npy` arrays): every array (and every bytes
value, as uint8) is an entry of its own, and the tree itself, with the scalars and a placeholder
`{"$array": name}` / `{"$bytes": name}` where an array or bytes value was, is JSON in the entry
`__tree__`. `load_state` reads it with `allow_pickle=False`: a file cannot run code when read, and
a damaged or foreign file is one `StateFileError` naming it. The file is written whole or not at
all (`core/files.write_atomically`).

Exact by construction: arrays keep their dtype and bytes, Python floats round-trip through JSON's
`repr`, and integers of any size (numpy's PCG64 state has 128-bit ones) stay integers.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from minimax.core.files import write_atomically

FORMAT = "minimax.host_state/1"
_TREE = "__tree__"


class StateFileError(ValueError):
    """A host-state file that is not one this module wrote (damaged, truncated or foreign)."""


def _encode(value, arrays: dict, where: str):
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"host state at {where or '/'}: dict keys must be strings, got {list(value)!r}")
        if any(k.startswith("$") for k in value):
            raise TypeError(f"host state at {where or '/'}: keys starting with '$' are reserved, got {list(value)!r}")
        return {k: _encode(v, arrays, f"{where}/{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v, arrays, f"{where}/{i}") for i, v in enumerate(value)]
    if isinstance(value, (bytes, bytearray)):
        name = f"a{len(arrays)}"
        arrays[name] = np.frombuffer(bytes(value), np.uint8)
        return {"$bytes": name}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise TypeError(f"host state at {where or '/'}: an array of Python objects cannot be stored as data")
        name = f"a{len(arrays)}"
        arrays[name] = array
        return {"$array": name, "scalar": isinstance(value, np.generic)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"host state at {where or '/'}: {type(value).__name__} is not data "
                    "(dicts, lists, numbers, strings, bytes, numpy arrays)")


def _decode(value, arrays):
    if isinstance(value, dict):
        if "$bytes" in value:
            return arrays[value["$bytes"]].tobytes()
        if "$array" in value:
            array = arrays[value["$array"]]
            return array[()] if value.get("scalar") else array
        return {k: _decode(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    return value


def encode_state(state) -> bytes:
    """The `.npz` bytes of a host-state tree (a `TypeError` naming the first leaf that is not data)."""
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(state, arrays, "")
    meta = json.dumps({"format": FORMAT, "tree": tree}, allow_nan=True).encode()
    buffer = io.BytesIO()
    np.savez(buffer, **{_TREE: np.frombuffer(meta, np.uint8)}, **arrays)
    return buffer.getvalue()


def decode_state(data: bytes, where: str = "host state"):
    """The tree `encode_state` stored; a `StateFileError` naming `where` for anything else."""
    if not data.startswith(b"PK"):  # np.load would read anything else as a .npy or a pickle
        raise StateFileError(f"{where} is damaged or no minimax host state (not a .npz: it starts {data[:8]!r})")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        meta = json.loads(arrays.pop(_TREE).tobytes().decode())
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise StateFileError(f"{where} is no minimax host state (format {found!r}, expected {FORMAT!r})")
        return _decode(meta["tree"], arrays)
    except StateFileError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, TypeError, AttributeError, EOFError) as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise StateFileError(f"{where} is damaged or no minimax host state ({type(e).__name__}: {reason})") from None


def save_state(path, state) -> None:
    """Write `state` to `path` atomically: a crash leaves the old file or the new one, never half of one."""
    write_atomically(Path(path), encode_state(state))


def load_state(path):
    """The host state saved at `path` (`StateFileError` for a damaged or foreign file)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise StateFileError(f"cannot read host state {path}: {e.strerror or e}") from None
    return decode_state(data, str(path))
