"""Recorded outputs of the authors' code (issue 69): what a comparison with their code reads in the unit and
contract tiers, so that it runs where their code is absent or slow, and runs it live only in the `reference`
tier (which also checks that the recording is still what their code gives).

A recording is `tests/data/reference/<name>.npz` (arrays by name; pytrees as `<field>/<leaf index>`) beside
`<name>.json`: the source (repository, commit), the versions it ran under and the command that records it
again (`python tests/record_references.py <name>`, `tests/record_references.py`). Integer and boolean outputs,
and outputs computed from recorded inputs whose arithmetic is exact, are compared exactly. A float result of
the authors' program on one CPU may differ in its last bits on another (the guide): a recorded one (the Kinetix
transformer's logits and values) is compared with a tolerance scaled to it, and its live comparison stays in
the reference tier."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

DIR = Path(__file__).parent / "data" / "reference"


def save(name: str, arrays: dict, meta: dict) -> None:
    """Write a recording: `arrays` (numpy arrays or pytrees of them) and its metadata."""
    flat = {}
    for key, value in arrays.items():
        leaves = jax.tree.leaves(value)
        if len(leaves) == 1 and not isinstance(value, (dict, list, tuple)) and hasattr(value, "shape"):
            flat[key] = np.asarray(value)
        else:
            flat.update({f"{key}/{i}": np.asarray(leaf) for i, leaf in enumerate(leaves)})
    DIR.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(DIR / f"{name}.npz", **flat)
    (DIR / f"{name}.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


def load(name: str) -> tuple[dict, dict]:
    """`(arrays, meta)` of a recording; a pytree field comes back as its list of leaves (`tree(like, leaves)`)."""
    with np.load(DIR / f"{name}.npz") as data:
        flat = {k: data[k] for k in data.files}
    arrays: dict = {}
    for key, value in flat.items():
        if "/" in key:
            field, index = key.rsplit("/", 1)
            arrays.setdefault(field, {})[int(index)] = value
        else:
            arrays[key] = value
    arrays = {k: [v[i] for i in range(len(v))] if isinstance(v, dict) else v for k, v in arrays.items()}
    return arrays, json.loads((DIR / f"{name}.json").read_text())


def tree(like, leaves):
    """The recorded `leaves` in the structure of `like` (a pytree of the same kind, e.g. a level), as jax arrays."""
    return jax.tree.unflatten(jax.tree.structure(like), [jnp.asarray(x) for x in leaves])
