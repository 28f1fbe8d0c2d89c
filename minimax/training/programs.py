"""Compiled programs kept in the process, keyed by what shapes them, not by the whole config.

A chunk of training is `(state, ahead, hp) -> (state, metrics)`: `hp` holds the run's traced options
(`config/hyperparams.py`), so the program depends only on the config's static part, the device layout,
the chunk's length and the backend. `programs(cfg, layout)` returns the process's `Programs` for that
key, made on first use and kept: a resume, another seed list of the same size, another learning rate,
`reproduce`'s next run, a sweep's next point or a notebook's second `train()` neither traces nor lowers
again, and `init` (with it the optimiser's and model's static objects, which are part of the state's
pytree structure and so of what a compiled program accepts) is shared too: a method's `init` reads no traced
value (`tests/test_hyperparams.py` checks every method), so the first run's runner makes every later run's state.

Across processes, XLA's persistent compilation cache skips the compile step (not tracing): it is on by
default in the user's cache directory (`enable_compile_cache`; `--no-compile-cache` or
`MINIMAX_COMPILE_CACHE=0` turns it off, `JAX_COMPILATION_CACHE_DIR` or a directory set in jax's config
wins).
"""

from __future__ import annotations

import os
import sys
import time
from collections import OrderedDict
from pathlib import Path

import jax

from minimax.config import TrainConfig
from minimax.config.hyperparams import static_part
from minimax.training.budget import LABEL, make_chunk
from minimax.training.builder import run_parts, runner_from
from minimax.training.devices import DeviceLayout, distribute_init, distribute_step

CHUNK_COMPILER_OPTIONS: dict = {}
"""XLA compiler options for the chunks (`jax.stages.Lowered.compile`); empty: XLA's own. A test suite that compiles
its many small programs cheaply (`tests/conftest.py`: LLVM at -O0) sets full optimisation here around a test
whose chunk runs for many seconds."""


HOST_OPTIONS = ("run_name", "out_dir", "resume", "overwrite", "preset", "progress", "wandb", "wandb_project",
                "keep_checkpoints", "buffer_png", "eval_every", "checkpoint_every", "seed", "seeds", "num_seeds",
                "log_every", "coordinator_address", "num_processes", "process_id", "devices")
"""Options the compiled chunk never reads (where a run lives, what the host logs and saves when; the seeds'
count and the devices are the layout's): left out of a program's key."""


def program_key(cfg: TrainConfig, layout: DeviceLayout) -> tuple:
    """What one compiled chunk serves: the static part of `cfg` without its host options (and without
    `--num-updates` unless the learning rate anneals over it), the layout, the backend and jax."""
    host = HOST_OPTIONS if cfg.ppo.anneal_lr else HOST_OPTIONS + ("num_updates",)
    devices = None if layout.mesh is None else tuple(d.id for d in layout.mesh.devices.flat)
    return (static_part(cfg, leave_out=host), len(layout.seeds), layout.seed_devices, layout.data_devices, devices,
            jax.default_backend(), jax.__version__)


class Programs:
    """The compiled pieces of one program key: the runner that makes states (`init`, its abstract state)
    and the chunks by length. Runners built from `hp` inside each chunk step its states."""

    def __init__(self, cfg: TrainConfig, layout: DeviceLayout):
        self.cfg, self.layout = cfg, layout
        self.parts = run_parts(cfg, layout.shard)
        self.runner = runner_from(self.parts)
        self.init = jax.jit(distribute_init(self.runner, layout))
        self.chunks: dict[int, object] = {}
        self.compile_seconds = 0.0

    def chunk_function(self, length: int):
        """`(state, ahead, hp) -> (state, metrics)` for every seed on every device, uncompiled."""
        parts, budget = self.parts, self.cfg.budget

        def chunk(state, ahead, hp):
            return make_chunk(runner_from(parts, hp), length, budget)(state, ahead)
        return distribute_step(chunk, self.runner, self.layout, with_hp=True)

    def chunk(self, length: int, state, ahead, hp, announce: bool = True):
        """The compiled chunk of `length` units for arguments like these (compiled on first use)."""
        if length not in self.chunks:
            t0 = time.perf_counter()
            jitted = jax.jit(self.chunk_function(length), donate_argnums=0)
            self.chunks[length] = jitted.lower(state, ahead, hp).compile(CHUNK_COMPILER_OPTIONS or None)
            self.compile_seconds += time.perf_counter() - t0
            if announce:
                print(f"compiled a chunk of {length} {LABEL[self.cfg.budget]} in {time.perf_counter() - t0:.1f}s",
                      file=sys.stderr)
        return self.chunks[length]


KEPT_PROGRAMS = 8
"""How many program keys a process keeps, the least recently used dropped first. A compiled program holds its
memory and XLA:CPU's code mappings (about nine kernel memory maps per executable) until it is dropped, and a
process may hold only `vm.max_map_count` maps (65,530 by default): past it the next compile dies inside XLA
(the test suite's workers did, near 61,000 maps each). Eight keys cover a run, its resume, its evaluation
and a sweep's alternating shapes; a dropped key's next use traces again and reads the persistent cache."""

_KEPT: OrderedDict[tuple, Programs] = OrderedDict()


def programs(cfg: TrainConfig, layout: DeviceLayout) -> Programs:
    """This process's `Programs` for `cfg` on `layout` (made on first use, kept among the `KEPT_PROGRAMS` most
    recently used)."""
    key = program_key(cfg, layout)
    if key in _KEPT:
        _KEPT.move_to_end(key)
    else:
        _KEPT[key] = Programs(cfg, layout)
        while len(_KEPT) > KEPT_PROGRAMS:
            _KEPT.popitem(last=False)
    return _KEPT[key]


def forget_programs() -> None:
    """Drop every kept program (tests that time a cold start; a notebook that wants its memory back)."""
    _KEPT.clear()


# --------------------------------------------------------------------------- across processes

_ANNOUNCED: list[str] = []


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/minimax/jax` (`~/.cache/minimax/jax`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minimax" / "jax"


def enable_compile_cache(enabled: bool = True) -> str | None:
    """Turn on XLA's persistent compilation cache (unless `enabled` is False or `MINIMAX_COMPILE_CACHE=0`),
    in the directory jax's config already names, else `JAX_COMPILATION_CACHE_DIR`, else `default_cache_dir()`;
    the directory is printed once per process. Returns it (None: off)."""
    if not enabled or os.environ.get("MINIMAX_COMPILE_CACHE", "1").lower() in ("0", "false", "no", "off"):
        return None
    # XLA:CPU logs an ERROR line per program it loads from the cache, naming two tuning features
    # (+prefer-no-gather, +prefer-no-scatter) that its own host detection never reports ("could lead to
    # SIGILL": they are not instructions). Read when the backend starts: set before, unless the user set it.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    directory = jax.config.jax_compilation_cache_dir or os.environ.get("JAX_COMPILATION_CACHE_DIR") \
        or str(default_cache_dir())
    if jax.config.jax_compilation_cache_dir != directory:
        try:
            Path(directory).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            print(f"warning: no compilation cache ({directory}: {e.strerror or e})", file=sys.stderr)
            return None
        jax.config.update("jax_compilation_cache_dir", directory)
    if directory not in _ANNOUNCED:
        _ANNOUNCED.append(directory)
        print(f"compilation cache: {directory} (--no-compile-cache or MINIMAX_COMPILE_CACHE=0 turns it off)",
              file=sys.stderr)
    return directory
