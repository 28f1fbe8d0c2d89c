"""One process per run directory: an advisory lock held for the whole run.

Two processes writing one run (a `--resume` started while the first still trains) would
interleave their logs and checkpoints. The lock is `flock` on `<run>/.lock`, which the kernel
releases when its holder dies however it dies (kill -9 included), so a stale lock of a dead
process never blocks a resume: the next run simply takes it over. The file holds the
holder's PID and host, for the message the second process prints. On file systems without
`flock` (some network mounts) the PID in the file is checked instead, when it names a
process of this host.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover (not POSIX)
    fcntl = None

LOCK_NAME = ".lock"


class RunLockError(RuntimeError):
    """The run directory is in use by another process, or cannot be written."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """`with RunLock(run_dir):` holds the run directory's lock (created with the directory)."""

    def __init__(self, run_dir):
        self.path = Path(run_dir) / LOCK_NAME
        self._file = None
        self.took_over: str | None = None  # "PID@host" of a dead holder whose lock was taken over

    def acquire(self) -> "RunLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            f = self.path.open("a+")
        except OSError as e:
            raise RunLockError(f"cannot write to run directory {self.path.parent}: "
                               f"{e.strerror or e} (a run needs write access to its directory)") from None
        f.seek(0)
        holder = f.read().strip()
        try:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):  # no flock here: use the PID
                if not self._holder_dead(holder):
                    f.close()
                    raise self._busy(holder) from None
            else:
                f.close()
                raise self._busy(holder) from None
        if holder and holder != self._me():
            self.took_over = holder
        try:
            f.seek(0)
            f.truncate()
            f.write(self._me() + "\n")
            f.flush()
        except OSError as e:
            f.close()
            raise RunLockError(f"cannot write {self.path}: {e.strerror or e}") from None
        self._file = f
        return self

    def release(self) -> None:
        if self._file is None:
            return
        try:
            self._file.seek(0)
            self._file.truncate()  # an empty lock file: nobody holds the run
        except OSError:
            pass
        if fcntl is not None:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            except OSError:
                pass
        self._file.close()
        self._file = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    @staticmethod
    def _me() -> str:
        return f"{os.getpid()}@{socket.gethostname()}"

    @staticmethod
    def _holder_dead(holder: str) -> bool:
        pid, _, host = holder.partition("@")
        if not pid.isdigit() or host != socket.gethostname():
            return not holder  # another host's process cannot be checked: assume it is alive
        return not _alive(int(pid))

    def _busy(self, holder: str) -> RunLockError:
        pid, _, host = holder.partition("@")
        who = f"process {pid}" + (f" on {host}" if host and host != socket.gethostname() else "") if pid else \
            "another process"
        return RunLockError(f"run directory {self.path.parent} is in use by {who}: wait for it to finish or "
                            f"stop it first (a run directory takes one process at a time)")
