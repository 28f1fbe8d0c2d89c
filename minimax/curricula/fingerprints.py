"""Level fingerprints: how the PLR buffer tells levels apart without comparing every field.

A buffer of K levels checks each newcomer against every stored level (`--unique-levels`). Comparing
whole levels is K full-size equality tests per newcomer; a 64-bit fingerprint per level, computed
once when it is stored (`LevelBuffer.hashes`), narrows that to one `uint32[2]` comparison, and
`levels_equal` confirms a match field by field. Levels are any pytree: ints and bools count by value,
floats by their bits.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _level_words(level) -> jax.Array:
    """One level as a flat int32 vector (bools and ints as values, floats by their bits)."""
    words = []
    for leaf in jax.tree.leaves(level):
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            leaf = jax.lax.bitcast_convert_type(leaf.astype(jnp.float32), jnp.int32)
        words.append(leaf.astype(jnp.int32).reshape(-1))
    return jnp.concatenate(words)


def level_hash(level) -> jax.Array:
    """uint32[2]: two random linear fingerprints mod 2^32 of one level. Different levels
    collide with probability about 2^-64; equal levels always agree. The multipliers are
    fixed constants, so fingerprints are comparable across runs."""
    words = _level_words(level).astype(jnp.uint32)
    mult = np.random.default_rng(20211108).integers(1, 2**32, size=(words.shape[0], 2), dtype=np.uint64)
    return jnp.sum(words[:, None] * jnp.asarray(mult.astype(np.uint32) | 1), axis=0, dtype=jnp.uint32)


def levels_equal(a, b) -> jax.Array:
    """bool: two single levels are identical in every field."""
    return jnp.all(jnp.stack([jnp.all(x == y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))]))
