"""Stop signals (SIGTERM or SIGUSR2 from a cluster's pre-emption or time limit, SIGINT from Ctrl-C) end a run
cleanly.

The first signal only raises a flag: the training loop finishes the chunk in flight, logs it,
writes a checkpoint and stops (`RunStopped`; the command line exits with 128 + the signal's
number, 143 for SIGTERM, 140 for SIGUSR2 and 130 for SIGINT, as a shell reports a process the
signal killed). The chunk in flight is saved, not lost. Once the first signal has been seen,
Ctrl-C's default action is back, so a second SIGINT stops the process at once, at C level,
wherever it is (a checkpoint write included: Orbax renames a checkpoint into place only when
complete, so what is on disk stays intact, and `--resume` drops the logs past the last
checkpoint). A repeated SIGTERM or SIGUSR2 is merged with the first: SLURM signals every process
of a job step (this one, and the job's own process, which forwards the signal: `cli/cluster.py`),
so a cluster's one stop arrives two or three times, and the second must not cut the save short
(SLURM's SIGKILL follows its KillWait anyway; `kill -9` stops a run at once). A first signal that
arrives during a compile is seen when the compile returns (Python cannot run a handler inside
one), and a second signal in that same compile is merged with it.

Python runs signal handlers only between bytecodes, so the loop waits for a chunk by polling
(`wait_ready`) rather than blocking inside XLA: the first signal is seen at once and the
message printed while the chunk still runs.

A cluster's signal can also come while `train.py` starts (its imports, the config, JAX's backend, a
multi-host join: seconds before the loop's handlers exist), e.g. a job pre-empted as it starts or a
requeued job warned again at once. SIGUSR2's default action would kill it there, unsaved, with a status
the cluster path counts as a failure. `train.py`'s `main` therefore runs inside `early_stops`, which
notes such a signal; the loop's `StopSignals` takes it as its first, so the run trains its first chunk,
saves and stops as it would on a signal that came a moment later. This module imports nothing heavy (JAX
only when `wait_ready` runs), so the handlers are up about a tenth of a second after the process starts.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time

CLUSTER_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGUSR2") if hasattr(signal, name))
"""What a cluster stops a job with (pre-emption, time limit): repeats of them are merged."""
STOP_SIGNALS = (*CLUSTER_SIGNALS, signal.SIGINT)
_EARLY: list[int] = []  # cluster signals noted before the loop's handlers (`early_stops`)


@contextlib.contextmanager
def early_stops():
    """Within the block, SIGTERM and SIGUSR2 are noted until a `StopSignals` block takes them over (which
    then starts as if the first had come to it); the previous handlers are back after it. Outside the main
    thread (where Python cannot install handlers) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, lambda signum, frame: _EARLY.append(signum)) for s in CLUSTER_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _EARLY.clear()


class RunStopped(Exception):
    """The run stopped on a signal after saving its state: `update` (the last saved), `signum`; the message
    says how to resume."""

    def __init__(self, message: str, update: int, signum: int):
        super().__init__(message)
        self.update, self.signum = update, signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class StopSignals:
    """`with StopSignals() as stop:` ... `if stop.requested:` -- the handlers last for the block.

    Outside the main thread (where Python cannot install handlers) it installs none and
    `requested` stays None."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.signum: int | None = None
        self._previous: dict = {}

    @property
    def requested(self) -> int | None:
        return self.signum

    def _handle(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C takes the default action: stop now
            print(f"\nreceived {signal.Signals(signum).name}: finishing the current chunk, then saving a "
                  f"checkpoint and stopping (Ctrl-C to stop at once)", file=sys.stderr, flush=True)

    def __enter__(self) -> "StopSignals":
        if self.enabled and threading.current_thread() is threading.main_thread():
            for s in STOP_SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
            if _EARLY and self.signum is None:  # a cluster's stop that came while the process started
                self._handle(_EARLY[0], None)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


def wait_ready(tree, poll_seconds: float = 0.01) -> None:
    """Wait until every array of `tree` is computed, returning to Python between polls (so
    signal handlers run while a long chunk computes)."""
    import jax  # noqa: PLC0415  (not at the top: `early_stops` starts before train.py imports JAX)

    leaves = [x for x in jax.tree.leaves(tree) if hasattr(x, "is_ready")]
    while not all(x.is_ready() for x in leaves):
        time.sleep(poll_seconds)
