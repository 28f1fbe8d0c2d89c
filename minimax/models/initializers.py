"""Parameter initialisers that stay safe under `vmap` (several seeds initialised in one program).

`orthogonal(scale)` draws exactly what `jax.nn.initializers.orthogonal(scale)` draws (the same
normal matrix, the same QR decomposition, the same sign fix), but a `vmap` over it runs one QR
per batch element in a loop (`jax.custom_batching.sequential_vmap`) instead of one batched QR.

Why: on CPU, jaxlib 0.10's batched LAPACK kernels (`lapack_sgeqrf_ffi`, also `syevd`, ...)
split their batch over XLA's intra-op thread pool and block until the pieces finish
(`jax::ParallelBatchMap` -> `absl::BlockingCounter::Wait`). XLA:CPU runs independent custom
calls concurrently on that same pool, so a program with as many independent batched QRs as the
pool has threads (the cores) parks every pool thread in a kernel waiting for work that no
thread is left to run: a silent deadlock at 0% CPU. `jax.vmap(model.init)` of an LSTM student
has a dozen such QRs (docs/DESIGN.md, "vmap-safe initialisation"). The values are bit-identical
to the plain initialiser, alone or vmapped (tests/test_make_train.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def orthogonal(scale: float = 1.0, column_axis: int = -1):
    """`jax.nn.initializers.orthogonal(scale, column_axis)`, drawn one matrix at a time under `vmap`."""
    inner = jax.nn.initializers.orthogonal(scale, column_axis)

    def init(key, shape, dtype=jnp.float32):
        shape = tuple(shape)
        return jax.custom_batching.sequential_vmap(lambda k: inner(k, shape, dtype))(key)

    return init
