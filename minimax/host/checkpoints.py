"""A host run's checkpoints: the train state with Orbax, and beside it the host state as data.

`<run>/checkpoints/` holds Orbax steps of the train state; `<run>/host_state/<update>.npz` holds
what lives on the host at that update (the envs' states, the sampler, the return normaliser, the
observations, the key: `HostRun.host_state`), written first and atomically, so every Orbax step has
its host state (`minimax.host.state_files`: arrays in `.npz`, the rest JSON, read without pickle).

Host states of runs before this format were pickles (`<update>.pkl`). A pickle can run any code
when it is read, so `--resume` of a run shared by someone else could run theirs: such a checkpoint
is refused, never read. Its parameters (Orbax) still evaluate with `evaluate.py`.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from minimax.host.state_files import StateFileError, load_state, save_state
from minimax.training.checkpoint import Checkpointer, CheckpointError, newest_that_restores

SUFFIX = ".npz"


class HostCheckpoints:
    """Orbax for the train state and one `.npz` of host state per checkpoint (see the module docstring)."""

    def __init__(self, run_dir: Path):
        self.orbax = Checkpointer(Path(run_dir) / "checkpoints")
        self.host_dir = Path(run_dir) / "host_state"

    def path(self, step: int) -> Path:
        return self.host_dir / f"{step}{SUFFIX}"

    def save(self, run) -> None:
        step = run.update_count
        self.host_dir.mkdir(parents=True, exist_ok=True)
        save_state(self.path(step), run.host_state())
        self.orbax.save(step, {"train_state": run.train_state}, {"update": step})
        kept = set(self.orbax.steps())
        for p in self.host_dir.glob(f"*{SUFFIX}"):
            if p.stem.isdigit() and int(p.stem) not in kept:
                p.unlink()

    def restore(self, run) -> int:
        """Load the newest checkpoint that restores into `run` and return its update; a `CheckpointError` (one
        line) when none does. A newer one that fails while an older one restores was damaged (a disk fault, a
        copy cut short): as on the compiled path (`training/loop.py: start_state`), its Orbax step and host state
        are moved to `<run>/corrupt-checkpoints/<update>/` with a warning, and the run goes on from the older one.
        When none restores, the newest one's error is raised (the checkpoints do not fit, or all are damaged)."""
        steps = self.orbax.steps()
        if not steps:
            raise CheckpointError(f"--resume: no checkpoint in {self.orbax.directory}")
        step, _, failed = newest_that_restores(steps, lambda s: self._restore_step(run, s))
        for bad, e in failed:
            moved = self.orbax.set_aside(bad, self.host_dir.parent / "corrupt-checkpoints")
            if self.path(bad).exists():
                shutil.move(str(self.path(bad)), str(moved / self.path(bad).name))
            print(f"warning: skipped checkpoint {bad}, which does not restore ({e}); moved it to {moved}",
                  file=sys.stderr)
        if failed:
            print(f"resuming from the newest intact checkpoint, update {step}", file=sys.stderr)
        return step

    def _restore_step(self, run, step: int) -> None:
        """Checkpoint `step` into `run`, or a `CheckpointError` (one line) for anything it cannot use."""
        path = self.path(step)
        if not path.exists():
            pickled = self.host_dir / f"{step}.pkl"
            if pickled.exists():
                raise CheckpointError(
                    f"checkpoint {step}: its host state {pickled} is a pickle (written before host states were "
                    "stored as data); a pickle can run code when read, so it is not loaded: start the run afresh "
                    "with --overwrite (evaluate.py still scores its saved parameters)")
            raise CheckpointError(f"checkpoint {step}: its host state {path} is missing")
        try:
            host = load_state(path)
        except StateFileError as e:
            raise CheckpointError(f"--resume: {e}") from None
        state, _ = self.orbax.restore({"train_state": run.train_state}, step)
        try:
            run.load_host_state(host)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise CheckpointError(f"--resume: host state {path} does not fit this run ({type(e).__name__}: "
                                  f"{reason})") from None
        run.train_state = state["train_state"]
