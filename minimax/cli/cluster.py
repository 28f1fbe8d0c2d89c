"""Training runs as cluster jobs: a sweep's grid points, or `reproduce`'s methods, each one submitit job.

`--executor local|slurm` (default `in-process`: today's behaviour, every run in this process, one after
another) hands each run to submitit: `local` starts it as a process of this machine (submitit's
`LocalExecutor`: how the tests run real jobs here), `slurm` submits it with `sbatch` (one job array for all
of them). Each job is the same `train.py` run as in-process, in the same run directory, its seeds
vmapped in one program.

Why the job runs `train.py` as a child process rather than calling `train` in the job's own process:
submitit installs its own handlers for SLURM's signals in the job's process (USR2 before the time limit
or at pre-emption; SIGTERM it ignores), while our training loop stops cleanly on SIGTERM (it finishes
the chunk in flight, saves a checkpoint and exits 143: `minimax.training.stop_signals`). With the run in
a child, the two do not fight: on USR2 the job forwards SIGTERM to its `train.py`, waits for the
checkpoint, and hands submitit a copy of itself to requeue (`TrainJob.checkpoint`), which resumes from
that checkpoint (`--resume`). A child also dies with its job (`PR_SET_PDEATHSIG` on Linux), so a
cancelled job leaves no training behind. Every start of a job is a line in
`<jobs>/<run>.sessions.jsonl` (time, host, job id, PIDs, exit status): the bookkeeping `reproduce`
reads for its wall times and `--status` for the last job.

Multi-host: a job of N tasks (`--slurm-nodes` x `--job-tasks-per-node`) is one run over N processes;
each task passes its `train.py` the coordinator (the job's first host, a port derived from the job id),
the number of processes and its rank, from submitit's view of the job (`task_arguments`). That is what
`jax.distributed.initialize()` would detect from SLURM's variables, computed once for both executors, so
the local executor's two-process run tests the path a SLURM job takes.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import tyro

from minimax.core.options import ConfigError, flag
from minimax.core.versions import RECORD, cpu_model

EXECUTORS = ("in-process", "local", "slurm")
STOPPED = 128 + signal.SIGTERM  # train.py's exit status after a SIGTERM: a checkpoint is saved
STOPPED_STATUSES = {STOPPED, 128 + signal.SIGUSR2}
"""train.py's exit statuses after a cluster's stop signal (`training/stop_signals.py`): the chunk in flight saved."""
LOCAL_TIMEOUT_MIN = 60 * 24 * 365  # the local executor's jobs have no time limit to speak of


class ClusterError(ConfigError):
    """A cluster option is bad, or jobs cannot be submitted or did not finish."""


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """Where the runs train: in this process, as local jobs, or as SLURM jobs (submitit)."""

    executor: str = "in-process"
    """in-process: train the runs here, one after another; local: each run a job of submitit's LocalExecutor (a
    process of this machine); slurm: each run a SLURM job, all in one job array, submitted with sbatch."""
    wait: bool = True
    """With an executor: wait for the jobs, then report (reproduce then evaluates); --no-wait submits and returns
    (rerun the same command later: it skips finished runs, waits on running ones, resubmits missing ones)."""
    status: bool = False
    """Print each run's state (job id, scheduler state, updates done, last return) and submit nothing."""
    dry_run: bool = False
    """Print what would be submitted (each run's train.py arguments; with slurm, the sbatch script of the job array)
    and submit nothing."""
    job_tasks_per_node: int = 1
    """Processes of one run on each node (executor local or slurm); more than one task in all makes the run
    multi-host (jax.distributed). On GPUs give one task per node: each sees its node's GPUs."""
    slurm_partition: str = ""
    """SLURM partition (sbatch --partition; empty: the cluster's default)."""
    slurm_time: int = 1440
    """Minutes each job may run (sbatch --time). A job that reaches it is requeued and resumes from its checkpoint."""
    slurm_gpus_per_job: int = 1
    """GPUs of each job, spread evenly over its nodes (0: a CPU job)."""
    slurm_nodes: int = 1
    """Nodes of each job (more than one: a multi-host run)."""
    slurm_array_parallelism: int = 256
    """Jobs of the array that may run at once."""
    slurm_account: str = ""
    """sbatch --account (empty: your default)."""
    slurm_qos: str = ""
    """sbatch --qos (empty: your default)."""
    slurm_setup: tyro.conf.UseAppendAction[tuple[str, ...]] = ()
    """A shell line each job runs before training (module load ..., source venv/bin/activate); repeatable."""
    slurm_cpus_per_task: int = 0
    """CPUs of each task (sbatch --cpus-per-task; 0: the cluster's default, often one, which XLA's compiler and
    the environments then share)."""
    slurm_mem: str = ""
    """Memory of each node of a job (sbatch --mem: 16G, 64000M; empty: the cluster's default)."""
    slurm_additional: tyro.conf.UseAppendAction[tuple[str, ...]] = ()
    """Any other sbatch option as KEY=VALUE (constraint=a100, exclude=node3, mail_type=END; a bare KEY for a flag:
    requeue); repeatable."""
    job_max_requeues: int = 3
    """Times a run whose job a scheduler stopped (pre-emption or time limit: train.py saved the chunk in flight)
    goes back: requeued by submitit at a SLURM time limit, resubmitted by a command that waits after a SIGTERM."""

    @property
    def jobs(self) -> bool:
        return self.executor != "in-process"


SLURM_ONLY = tuple(f.name for f in dataclasses.fields(ClusterConfig) if f.name.startswith("slurm_"))


def field_docs(cls) -> dict[str, str]:
    """`{field: docstring}` of a dataclass's attribute docstrings (tyro's --help text), for argparse."""
    docs, body = {}, ast.parse(inspect.getsource(cls)).body[0].body
    for node, after in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def add_arguments(parser) -> None:
    """ClusterConfig's options on an argparse parser (the sweep's), with the same flags and help as tyro's."""
    docs, defaults = field_docs(ClusterConfig), ClusterConfig()
    for f in dataclasses.fields(ClusterConfig):
        name, default = flag(f.name), getattr(defaults, f.name)
        if isinstance(default, bool):
            parser.add_argument(name, action=argparse.BooleanOptionalAction, default=default,
                                help=docs[f.name])
        elif isinstance(default, tuple):
            parser.add_argument(name, action="append", default=[], help=docs[f.name])
        else:
            parser.add_argument(name, type=str, default=str(default), help=docs[f.name])


def from_arguments(args) -> ClusterConfig:
    """The ClusterConfig of an argparse namespace (`add_arguments`), its integers read with one-line errors."""
    values = {}
    for f in dataclasses.fields(ClusterConfig):
        v = getattr(args, f.name)
        if f.type in ("int", int):
            try:
                v = int(v)
            except ValueError:
                raise ClusterError(f"{flag(f.name)} takes a whole number, got {v!r}") from None
        values[f.name] = tuple(v) if isinstance(v, list) else v
    return ClusterConfig(**values)


def check_cluster(c: ClusterConfig) -> None:
    """Every cluster option checked before anything is submitted: one `ClusterError` line naming the bad one."""
    if c.executor not in EXECUTORS:
        raise ClusterError(f"--executor must be one of {', '.join(EXECUTORS)}, got {c.executor!r}")
    for name, low in (("slurm_time", 3), ("slurm_gpus_per_job", 0), ("slurm_nodes", 1),
                      ("slurm_array_parallelism", 1), ("job_tasks_per_node", 1), ("slurm_cpus_per_task", 0),
                      ("job_max_requeues", 0)):
        if getattr(c, name) < low:
            unit = (" minutes (SLURM signals a job 90 s before its time limit, for its checkpoint)"
                    if name == "slurm_time" else "")
            raise ClusterError(f"{flag(name)} must be >= {low}{unit}, got {getattr(c, name)}")
    for item in c.slurm_additional:
        key = item.partition("=")[0]
        if not key or not key.replace("_", "").replace("-", "").isalnum():
            raise ClusterError(f"--slurm-additional takes KEY=VALUE (an sbatch option: constraint=a100) or a bare KEY, "
                               f"got {item!r}")
    defaults = ClusterConfig()
    if c.executor != "slurm":
        given = [flag(n) for n in SLURM_ONLY if getattr(c, n) != getattr(defaults, n)]
        if given:
            raise ClusterError(f"{given[0]} is an option of --executor slurm (the executor is {c.executor})")
    about_jobs = [name for name, given in (("--job-tasks-per-node", c.job_tasks_per_node != 1),
                                           ("--status", c.status), ("--no-wait", not c.wait),
                                           ("--dry-run", c.dry_run),
                                           ("--job-max-requeues", c.job_max_requeues != defaults.job_max_requeues))
                  if given]
    if not c.jobs and about_jobs:
        raise ClusterError(f"{about_jobs[0]} is about jobs: give --executor local or --executor slurm")
    if c.slurm_gpus_per_job % c.slurm_nodes:
        raise ClusterError(f"--slurm-gpus-per-job ({c.slurm_gpus_per_job}) must be divisible by --slurm-nodes "
                           f"({c.slurm_nodes}): each node gets the same number")
    if c.jobs and importlib.util.find_spec("submitit") is None:
        raise ClusterError(f"--executor {c.executor} needs submitit: pip install -e \".[cluster]\"")
    missing = [tool for tool in ("sbatch", "srun") if shutil.which(tool) is None]
    if c.executor == "slurm" and not (c.status or c.dry_run) and missing:
        raise ClusterError(f"--executor slurm: no {missing[0]} on PATH (submit from a SLURM login node; --executor "
                           f"local runs the same jobs on this machine)")


def make_executor(c: ClusterConfig, folder: Path, name: str = "minimax"):
    """The submitit executor of `c`, its logs in `folder/<job id>/`, its SLURM jobs named `name`."""
    import submitit  # noqa: PLC0415

    logs = str(folder / "%j")
    if c.executor == "local":
        executor = submitit.LocalExecutor(logs)
        executor.update_parameters(timeout_min=LOCAL_TIMEOUT_MIN, tasks_per_node=c.job_tasks_per_node)
        return executor
    executor = submitit.SlurmExecutor(logs, max_num_timeout=c.job_max_requeues)
    executor.update_parameters(**slurm_parameters(c, name))
    return executor


def slurm_parameters(c: ClusterConfig, name: str) -> dict:
    """submitit's SlurmExecutor parameters (its sbatch options) for `c`'s jobs named `name`."""
    params = dict(time=c.slurm_time, nodes=c.slurm_nodes, ntasks_per_node=c.job_tasks_per_node,
                  array_parallelism=c.slurm_array_parallelism, setup=list(c.slurm_setup), job_name=name)
    if c.slurm_gpus_per_job:
        params["gpus_per_node"] = c.slurm_gpus_per_job // c.slurm_nodes
    params.update({k: v for k, v in (("partition", c.slurm_partition), ("account", c.slurm_account),
                                     ("qos", c.slurm_qos), ("cpus_per_task", c.slurm_cpus_per_task),
                                     ("mem", c.slurm_mem)) if v})
    additional = dict(item.partition("=")[::2] for item in c.slurm_additional)
    if additional:
        params["additional_parameters"] = {k.replace("-", "_"): v or True for k, v in additional.items()}
    return params


# --------------------------------------------------------------------------- inside a job


def coordinator_port(job_id: str) -> int:
    """A port for the run's coordinator, the same in every task of a job and unlikely to be another job's: in
    20000-31999, below Linux's ephemeral range (32768-60999), where a port the kernel lent a client may not sit."""
    digits = "".join(ch for ch in str(job_id) if ch.isdigit()) or "0"
    return 20000 + int(digits) % 12000


def task_arguments(env) -> list[str]:
    """The multi-host flags of one task of a job (`env`: submitit's `JobEnvironment`): none for a one-task
    job; else the coordinator (the job's first host; this machine's loopback for local jobs), the number
    of processes and this task's rank."""
    if env.num_tasks <= 1:
        return []
    host = "127.0.0.1" if env.cluster == "local" else env.hostnames[0]
    return ["--coordinator-address", f"{host}:{coordinator_port(env.raw_job_id)}",
            "--num-processes", str(env.num_tasks), "--process-id", str(env.global_rank)]


def _die_with_parent() -> None:  # pragma: no cover (runs in the child between fork and exec)
    """Linux: the child gets SIGTERM when the job's process dies, however it dies (it then saves and stops)."""
    try:
        import ctypes  # noqa: PLC0415

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def updates_done(run_dir: Path) -> int:
    """The update of the run's newest checkpoint (0: none yet), read from the directory's names as Orbax lists its
    steps (a finished checkpoint is the directory `<step>`; one being written has a temporary name). Without
    JAX: the job's own process and the submitting command never start a backend (on a GPU node that would hold
    a CUDA context on every GPU the run's own process needs)."""
    folder = Path(run_dir) / "checkpoints"
    if not folder.is_dir():
        return 0
    return max((int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit()), default=0)


@dataclasses.dataclass
class TrainJob:
    """One run as a submitit job: `train.py <start>` the first time, `train.py --resume <resume>` once the
    run has a checkpoint (a requeued or resubmitted job), with `--no-progress` (a job's log is a file)."""

    name: str
    run_dir: str
    start: list[str]
    resume: list[str]
    sessions: str
    grace_s: float = 75.0  # how long `checkpoint` waits for train.py to save (SLURM signals 90 s ahead)

    def arguments(self) -> list[str]:
        run_dir = Path(self.run_dir)
        if updates_done(run_dir):
            return ["--resume", "--out-dir", str(run_dir.parent), "--run-name", run_dir.name, *self.resume,
                    "--no-progress"]
        fresh = ["--overwrite"] if run_dir.exists() else []  # a start killed before its first checkpoint
        return [*self.start, *fresh, "--no-progress"]

    def __call__(self) -> int:
        import submitit  # noqa: PLC0415

        env = submitit.JobEnvironment()
        args = [*self.arguments(), *task_arguments(env)]
        self._child = subprocess.Popen([sys.executable, "-m", "minimax.cli.train", *args],
                                       preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        self._asked = False
        usr = getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2"))  # submitit's choice
        submitit_handler = signal.getsignal(usr)

        def forward(signum, frame):  # every task stops its train.py; submitit's handler then requeues (rank 0)
            self._ask_child_to_stop()
            if callable(submitit_handler):
                submitit_handler(signum, frame)

        def forward_stop(signum, frame):  # SLURM's SIGTERM (pre-emption, time limit, scancel --signal=TERM)
            self._ask_child_to_stop()  # train.py saves; the command that waits resubmits the run (cluster_runs)

        signal.signal(usr, forward)
        signal.signal(signal.SIGTERM, forward_stop)
        session = {"start": time.time(), "host": socket.gethostname(), "job_id": env.job_id, "task": env.global_rank,
                   "pid": os.getpid(), "train_pid": self._child.pid, "args": args}
        self._record(session)
        try:
            while self._child.poll() is None:
                time.sleep(0.2)
        finally:  # also when submitit exits the job to requeue it, or the job is cancelled
            self._stop_child()
            status = self._child.returncode
            self._record({**session, "end": time.time(), "exit": status, **self._machine()})
        if status == 0 or status in STOPPED_STATUSES:  # stopped by a signal after saving: resumable, not a failure
            return status
        raise RuntimeError(f"train.py {' '.join(args)} exited with status {status}: see this job's log")

    def checkpoint(self, *args, **kwargs):
        """submitit calls this on USR2 (time limit, pre-emption): let train.py save, then requeue a copy."""
        import submitit  # noqa: PLC0415

        self._stop_child()
        return submitit.helpers.DelayedSubmission(dataclasses.replace(self))

    def _ask_child_to_stop(self) -> None:
        """SIGTERM, once: train.py saves and stops on the first, and dies at once on a second."""
        if not getattr(self, "_asked", False) and self._child.poll() is None:
            self._asked = True
            self._child.send_signal(signal.SIGTERM)

    def _stop_child(self) -> None:
        """Ask train.py to stop, give it `grace_s` to save, then kill it."""
        child = getattr(self, "_child", None)
        if child is None or child.poll() is not None:
            return
        self._ask_child_to_stop()
        deadline = time.time() + self.grace_s
        while child.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        if child.poll() is None:
            child.kill()
            child.wait()

    def _machine(self) -> dict:
        """Where the session trained: the backend the run's config recorded, the host's CPU."""
        try:
            backend = json.loads((Path(self.run_dir) / "config.json").read_text())[RECORD]["backend"]
        except (OSError, ValueError, KeyError, TypeError):
            backend = None
        return {"backend": backend, "cpu": cpu_model(), "cpu_count": os.cpu_count()}

    def _record(self, entry: dict) -> None:
        with open(self.sessions, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def __getstate__(self) -> dict:  # pickled to submit and to requeue: without the child process
        return {k: v for k, v in self.__dict__.items() if k not in ("_child", "_asked")}


def read_sessions(path: Path) -> list[dict]:
    """The ended sessions of a run's jobs (`TrainJob._record`), oldest first."""
    if not Path(path).exists():
        return []
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [r for r in rows if "end" in r]
