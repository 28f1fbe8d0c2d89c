"""A run's directory: checked, created or emptied before the run starts (`prepare_run_dir`), and
removed again when the run that created it fails before it wrote anything worth keeping
(`remove_unkept`), so that the same command can simply be run again (no `--overwrite` needed).

Only what this run created is ever removed: never a directory that existed before it (an
`--overwrite` target, a resumed run), never one that holds a log row or a checkpoint.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from minimax.config import TrainConfig
from minimax.training.run_lock import LOCK_NAME, RunLock, RunLockError


class RunError(RuntimeError):
    """A run cannot start or resume (existing directory, missing checkpoint...)."""


def prepare_run_dir(cfg: TrainConfig, lock: RunLock) -> Path:
    """The run directory, locked (`lock`) for this process: checked (--resume), created or
    emptied (--overwrite), with the config saved. File-system faults are `RunError`s naming the path.
    `cfg` is any run's config with `run_dir`, `resume`, `overwrite` and `save(path)` (a host run's too)."""
    run_dir = cfg.run_dir
    try:
        if cfg.resume:
            if not (run_dir / "config.json").exists():
                raise RunError(f"--resume: no run to resume at {run_dir} (no config.json)")
            lock.acquire()
            return run_dir
        if run_dir.exists() and any(p.name != LOCK_NAME for p in run_dir.iterdir()):
            if not cfg.overwrite:
                raise RunError(f"run directory {run_dir} already exists: pass --resume to continue it, "
                               f"--overwrite to replace it, or choose another --run-name")
            lock.acquire()  # never empty a directory another process still writes
            for p in run_dir.iterdir():
                if p.name != LOCK_NAME:
                    shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        else:
            run_dir.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        cfg.save(run_dir / "config.json")
    except RunLockError as e:
        raise RunError(str(e)) from None
    except OSError as e:
        raise RunError(f"cannot {'use' if cfg.resume else 'create'} run directory {run_dir}: "
                       f"{e.strerror or e}{f' ({e.filename})' if e.filename else ''}") from None
    return run_dir


def missing_dirs(run_dir: Path) -> list[Path]:
    """`run_dir` and those of its parents that do not exist yet (innermost first): what a run
    starting now would create. Empty when `run_dir` exists already."""
    run_dir = Path(run_dir).absolute()
    missing = []
    for d in (run_dir, *run_dir.parents):
        if d.exists():
            break
        missing.append(d)
    return missing


def holds_results(run_dir: Path) -> bool:
    """Whether the run wrote a log row or (the start of) a checkpoint: then it is worth keeping."""
    log = Path(run_dir) / "metrics.jsonl"
    if log.exists() and log.stat().st_size > 0:
        return True
    checkpoints = Path(run_dir) / "checkpoints"
    return checkpoints.is_dir() and any(p.name[:1].isdigit() for p in checkpoints.iterdir())


def remove_unkept(created: list[Path]) -> None:
    """After a failed start: remove the directories this run created (`missing_dirs` before it
    started), unless the run directory holds results; a parent that something else now uses stays."""
    if not created or not created[0].exists() or holds_results(created[0]):
        return
    shutil.rmtree(created[0], ignore_errors=True)
    for parent in created[1:]:
        try:
            parent.rmdir()  # only when empty
        except OSError:
            return
