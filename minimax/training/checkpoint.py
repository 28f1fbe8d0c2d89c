"""Checkpoints of a whole run state with Orbax: atomic, the last few kept, checked on restore.

A checkpoint holds the runner state (parameters, optimiser, RNG keys, env streams,
recurrent carries, counters, level buffers: every array the next update reads) plus a
small JSON record of host-side counters. Orbax writes each step to a temporary directory
and renames it when complete, so a run killed mid-save leaves the previous checkpoint
intact. Restoring checks the saved arrays against the shapes and dtypes the current
config expects, and any failure is a `CheckpointError` naming the checkpoint, never a
silent fresh start.

Typed PRNG keys are stored as their raw `uint32` key data and re-wrapped on restore.
"""

from __future__ import annotations

import logging
import shutil
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, or does not fit the current config."""


def newest_that_restores(steps, restore):
    """`(step, what restore(step) gave, failed)` for the newest of `steps` whose `restore` does not raise a
    `CheckpointError`; `failed` lists the newer ones that did, as `(step, error)`, newest first (the caller
    moves them aside: the compiled loop's `start_state`, `host/checkpoints.py`). When none restores, the
    newest one's error is raised: then the checkpoints do not fit the config, or all are damaged."""
    failed: list[tuple[int, CheckpointError]] = []
    for step in reversed(steps):
        try:
            return step, restore(step), failed
        except CheckpointError as e:
            failed.append((step, e))
    newest = failed[0][1]
    if len(failed) > 1:
        raise CheckpointError(f"{newest} (and no older checkpoint restores either: updates "
                              f"{', '.join(str(s) for s, _ in failed[1:])})") from newest
    raise newest


def _is_key(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _to_storable(tree):
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _abstract_storable(abstract_tree):
    # Shardings, when the abstract state has them, place restored arrays on the run's devices
    # (each host reads only its shards).
    def convert(x):
        sharding = getattr(x, "sharding", None)
        if _is_key(x):
            data = jax.eval_shape(jax.random.key_data, x)
            return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=sharding)
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)
    return jax.tree.map(convert, abstract_tree)


ABANDONED_READ = "_read_array_index_and_device_put"
"""Orbax's coroutine that reads one array: those still pending when a restore fails are dropped."""


def _is_abandoned_read(unraisable) -> bool:
    """An unraisable that a failed restore leaves behind: a pending Orbax read finishing on a closed event
    loop, or its coroutine collected unawaited or with its error unretrieved."""
    e, obj = unraisable.exc_value, unraisable.object
    if isinstance(e, RuntimeError) and str(e) == "Event loop is closed":
        return True
    where = f"{getattr(obj, '__qualname__', '')} {unraisable.err_msg or ''} {e}"
    return ABANDONED_READ in where


def _quiet_closed_loop_callbacks() -> None:
    """After a failed restore, the reads Orbax still had in flight finish on a closed event loop or
    are collected unawaited, and each prints a traceback through `sys.unraisablehook` (or a
    RuntimeWarning): dozens to thousands of lines of noise after the one error that matters. Drop
    exactly those (installed once, for the rest of the process); every other unraisable goes on as before."""
    warnings.filterwarnings("ignore", message=f"coroutine '{ABANDONED_READ}' was never awaited")
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, _DropsAbandonedReads) for f in asyncio_log.filters):
        asyncio_log.addFilter(_DropsAbandonedReads())
    previous = sys.unraisablehook
    if getattr(previous, "_drops_closed_loop", False):
        return

    def hook(unraisable):
        if _is_abandoned_read(unraisable):
            return
        previous(unraisable)

    hook._drops_closed_loop = True
    sys.unraisablehook = hook


class _DropsAbandonedReads(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" for the reads of a failed restore, before any
    handler formats them. Those records are logged when the garbage collector finalizes the tasks, which
    may happen inside an unrelated `ast.parse` (tyro reads docstrings with it); Python 3.11 formats a
    traceback's carets with `ast.parse` too, and a parse nested in a parse breaks CPython's AST recursion
    count (gh-106905): a `SystemError` in whatever code was parsing. Dropped here, nothing is formatted."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        tb = getattr(error, "__traceback__", None)
        while tb is not None:
            if tb.tb_frame.f_code.co_name == ABANDONED_READ:
                return False
            tb = tb.tb_next
        return True


def _first_line(e: Exception, limit: int = 300) -> str:
    line = str(e).splitlines()[0] if str(e) else ""
    for noise in (" [tensorstore_spec=", " See full TensorStore details", " <bound method"):
        line = line.split(noise)[0]  # the storage spec or a TensorStore object's repr: noise to a user
    return f"{type(e).__name__}: {line if len(line) <= limit else line[:limit] + '…'}"


def _from_storable(tree, abstract_tree):
    # Keys are made with the default implementation (threefry unless configured otherwise).
    return jax.tree.map(lambda x, a: jax.random.wrap_key_data(x) if _is_key(a) else x, tree, abstract_tree)


class Checkpointer:
    """`save(step, state, meta)`, `latest_step()`, `restore(abstract_state, step) -> (state, meta)`."""

    def __init__(self, directory, keep: int = 3):
        self.directory = Path(directory).absolute()
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                                 enable_async_checkpointing=False))

    def save(self, step: int, state, meta: dict) -> None:
        try:
            self._manager.save(int(step), args=ocp.args.Composite(
                state=ocp.args.StandardSave(_to_storable(state)), meta=ocp.args.JsonSave(meta)), force=True)
            self._manager.wait_until_finished()
        except Exception as e:  # noqa: BLE001 (orbax wraps file-system errors in many types)
            raise CheckpointError(f"cannot write checkpoint {self.directory / str(step)}: {_first_line(e)}") from e

    def set_aside(self, step: int, where) -> Path:
        """Move checkpoint `step` (found corrupt) out of the way into the folder `where`, keeping
        its files for inspection; returns its new path."""
        dest = Path(where) / str(step)
        n = 1
        while dest.exists():
            dest, n = Path(where) / f"{step}.{n}", n + 1
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self.directory / str(step)), str(dest))
        self._manager.reload()
        return dest

    def steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def latest_step(self) -> int | None:
        steps = self.steps()
        return steps[-1] if steps else None

    def restore_params(self, step: int | None = None):
        """`(params, step)`: only the policy parameters of a checkpoint, as saved (a leading seed
        axis for multi-seed runs), whatever device layout wrote it. For evaluation."""
        step = self.latest_step() if step is None else int(step)
        if step is None or step not in self.steps():
            raise CheckpointError(f"no checkpoint for update {step} in {self.directory} (have {self.steps()})")
        where = self.directory / str(step)
        _quiet_closed_loop_callbacks()
        try:
            restored = self._manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
            params = restored["state"]["train_state"]["params"]
        except Exception as e:  # noqa: BLE001 (orbax raises many types)
            raise CheckpointError(f"checkpoint {where} is corrupt or holds no policy parameters: "
                                  f"{_first_line(e)}") from e
        return jax.tree.map(np.asarray, params), step

    def restore(self, abstract_state, step: int | None = None):
        step = self.latest_step() if step is None else int(step)
        if step is None:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        if step not in self.steps():
            raise CheckpointError(f"no checkpoint for step {step} in {self.directory} (have {self.steps()})")
        where = self.directory / str(step)
        target = _abstract_storable(abstract_state)
        _quiet_closed_loop_callbacks()
        try:
            restored = self._manager.restore(step, args=ocp.args.Composite(
                state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()))
        except Exception as e:  # orbax raises many types; all mean "cannot use this checkpoint"
            raise CheckpointError(f"checkpoint {where} is corrupt or does not match this config: "
                                  f"{_first_line(e)}") from e
        state, meta = restored["state"], restored["meta"]
        _check_matches(state, target, where)
        return _from_storable(state, abstract_state), dict(meta or {})


def _check_matches(state, target, where) -> None:
    got, want = jax.tree.structure(state), jax.tree.structure(target)
    if got != want:
        raise CheckpointError(f"checkpoint {where} holds a different state structure than this config builds")
    for path, (x, t) in zip(jax.tree_util.tree_flatten_with_path(target)[0],
                            zip(jax.tree.leaves(state), jax.tree.leaves(target))):
        if tuple(np.shape(x)) != tuple(t.shape) or np.dtype(x.dtype) != np.dtype(t.dtype):
            name = jax.tree_util.keystr(path[0])
            raise CheckpointError(f"checkpoint {where}: {name} has shape {tuple(np.shape(x))} {x.dtype}, "
                                  f"this config expects {tuple(t.shape)} {t.dtype}")
