"""The jobs of a sweep or of `reproduce`: which runs need one, which still run, and where each stands.

A command with `--executor local|slurm` keeps `<jobs>/jobs.json`: for each run, the job last submitted
for it. A rerun of the same command asks the scheduler about each run's job and
- skips a finished run (its newest checkpoint is at its target number of updates),
- waits on a run whose job is still pending or running (it is not submitted twice),
- submits a job for every other run (never started, or its job died: the job resumes from the run's
  newest checkpoint).
A run whose job, waited on, ended before the run finished gets one more job in the same command; a
run whose job a scheduler stopped with a signal (pre-emption, a time limit: its train.py saved the chunk in
flight and exited 128 + the signal) is submitted again, up to `--job-max-requeues` times; any other job
this command submitted that ends unfinished is reported, not resubmitted (a run that fails the same way
again should be looked at: its log is named). `--status` prints the same facts as a table, each job's
state read from `sacct` at that moment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from minimax.core.files import write_atomically
from minimax.cli.cluster import (STOPPED_STATUSES, ClusterConfig, ClusterError, TrainJob, make_executor, read_sessions,
                                 slurm_parameters, updates_done)

ACTIVE = {"RUNNING", "PENDING", "REQUEUED", "CONFIGURING", "COMPLETING", "RESIZING", "SUSPENDED", "REQUEUE_HOLD",
          "REQUEUE_FED", "STAGE_OUT", "SIGNALING"}
"""Scheduler states of a job that may still train its run (SLURM's names; the local executor's RUNNING)."""
POLL_S = {"local": 1.0, "slurm": 30.0}
"""Seconds between two looks at the jobs while waiting."""
NEVER_RUNS = {"PartitionConfig", "BadConstraints", "PartitionNodeLimit", "PartitionTimeLimit", "InvalidAccount",
              "InvalidQOS"}
"""squeue's reasons for a pending job that no waiting will start (`Scheduler.look_at_pending`)."""
HELD = {"JobHeldUser", "JobHeldAdmin"}
"""squeue's reasons for a pending job that starts only once someone releases it (`scontrol release`; `sbatch
--hold`, `--slurm-additional hold`, submits one so): waited on, and said once."""


@dataclasses.dataclass
class PlannedRun:
    """A run the command wants trained to `target` updates, and the job that trains it."""

    job: TrainJob
    target: int

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def run_dir(self) -> Path:
        return Path(self.job.run_dir)


def last_return(run_dir: Path) -> float | None:
    """`train/return` of the run's last log row (the mean over seeds where several train)."""
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    if not (Path(run_dir) / "metrics.jsonl").exists():
        return None
    rows = read_rows(run_dir)
    means = [r for r in rows if r.get("seed") == "mean"] or rows
    return means[-1].get("train/return") if means else None


class JobBook:
    """`<jobs>/jobs.json`: run name -> {job_id, executor, submitted}, written atomically. A record is read, merged
    and written under a lock (`jobs.json.lock`), so two commands on one `--out-dir` keep each other's jobs."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / "jobs.json"
        self.jobs = self._read()

    def _read(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def record(self, name: str, job_id: str, executor: str) -> None:
        import fcntl  # noqa: PLC0415  (POSIX, as SLURM is)

        with open(self.path.with_name("jobs.json.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.jobs = {**self._read(), name: {"job_id": job_id, "executor": executor, "submitted": time.time()}}
            write_atomically(self.path, json.dumps(self.jobs, indent=2) + "\n")


def _local_alive(pid: int, folder: Path) -> bool:
    """A local job's controller (`submitit.local._local <folder>`) is still running under this PID."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.parent.parent.joinpath("self").exists():  # no /proc (not Linux): trust the PID
        return True
    try:
        line = cmdline.read_bytes()  # a zombie's is empty; a reused PID's names another program or folder
    except OSError:
        return False
    return b"submitit" in line and str(folder).encode() in line


def sacct_states(job_ids: list[str]) -> dict[str, str]:
    """`{job id: state}` of SLURM jobs (array tasks as `<array>_<index>`, a pending range expanded), from one
    `sacct` call, asked afresh every time: submitit's watcher stops asking about a job once it counts it done, and
    it counts CONFIGURING or SUSPENDED as done, so a job seen once so would keep that state for good."""
    from submitit.slurm.slurm import SlurmInfoWatcher  # noqa: PLC0415  (its parser of sacct's output only)

    arrays = sorted({j.split("_")[0] for j in job_ids})
    out = _ask(["sacct", "-o", "JobID,State,NodeList", "--parsable2", *[a for j in arrays for a in ("-j", j)]])
    states = {job: info.get("State", "UNKNOWN") for job, info in SlurmInfoWatcher().read_info(out).items()}
    missing = [j for j in job_ids if j not in states]
    if missing:  # accounting lags the controller (a job just submitted): squeue knows the live ones
        states.update({j: s for j, s in squeue(missing, "all", "%T").items() if j not in states})
    return states


def squeue(job_ids: list[str], states: str, column: str) -> dict[str, str]:
    """`{job id: squeue's <column>}` (`%T` the state, `%r` the reason) of these jobs in these states, array ranges
    expanded as `sacct_states` does; {} where squeue knows none of them (it fails on a job it no longer knows)."""
    from submitit.slurm.slurm import SlurmInfoWatcher  # noqa: PLC0415  (its parser, for array ranges)

    arrays = ",".join(sorted({j.split("_")[0] for j in job_ids}))
    out = _ask(["squeue", "-h", "-t", states, "-o", f"%i|{column}", "-j", arrays], quiet=True)
    return {job: info["Value"] for job, info in SlurmInfoWatcher().read_info("JobID|Value\n" + out).items()}


def _ask(command: list[str], quiet: bool = False) -> str:
    """A SLURM query's output; one that fails is a `ClusterError` in one line (`quiet`: '' instead, for squeue,
    which fails on a job it no longer knows)."""
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        if quiet:
            return ""
        raise ClusterError(f"{command[0]} did not answer ({e}): is SLURM (and its accounting, slurmdbd) up?") from None
    if out.returncode != 0:
        if quiet:
            return ""
        raise ClusterError(f"{command[0]} failed (status {out.returncode}): {' '.join(out.stderr.split())}")
    return out.stdout


class Scheduler:
    """The scheduler's word on the jobs of one command, each asked by the executor that ran it: the local
    executor's by their process (this command's through their handles), SLURM's from one `sacct` call per
    look for all of them (`refresh`, `sacct_states`)."""

    def __init__(self, cluster: ClusterConfig, folder: Path):
        self.cluster, self.folder, self.handles, self._slurm = cluster, Path(folder), {}, {}
        self._reasons: dict[str, str] = {}  # squeue's reason of each pending SLURM job, at the last look
        self._told: set[str] = set()  # held jobs already named

    def refresh(self, records: list) -> None:
        """Ask SLURM about its jobs among these, once for all of them (and why the pending ones wait)."""
        slurm = [r["job_id"] for r in records if r is not None and r["executor"] == "slurm"]
        if slurm:
            self._slurm = sacct_states(slurm)
            pending = [j for j in slurm if self._slurm.get(j) == "PENDING"]
            self._reasons = squeue(pending, "PD", "%r") if pending else {}

    def state(self, record: dict | None) -> str:
        """The job's state as of the last `refresh` ("-": no job)."""
        if record is None:
            return "-"
        handle = self.handles.get(record["job_id"])
        if record["executor"] == "local":
            if handle is not None:
                return handle.state
            return "RUNNING" if _local_alive(int(record["job_id"]), self.folder) else "ENDED"
        state = self._slurm.get(record["job_id"], "UNKNOWN")
        if state == "UNKNOWN":
            if handle is not None:  # a job of this command that sacct has not seen yet is on its way
                return "PENDING"
            # resubmitting a run whose job may still train would train it twice
            raise ClusterError(f"cannot tell whether SLURM job {record['job_id']} still runs (sacct does not know "
                               f"it): check with squeue, and scancel it or wait before running this command again")
        return state

    def described(self, record: dict | None) -> str:
        """`state`, with squeue's reason for a pending SLURM job ("PENDING (JobHeldUser)", "PENDING (Resources)")."""
        state = self.state(record)
        reason = self._reasons.get(record["job_id"]) if record else None
        return f"{state} ({reason})" if state == "PENDING" and reason not in (None, "", "None") else state

    def submit(self, runs: list[PlannedRun], book: JobBook) -> None:
        if not runs:
            return
        name = "minimax-" + (runs[0].name if len(runs) == 1 else self.folder.parent.name)  # squeue's NAME column
        executor = make_executor(self.cluster, self.folder, name)
        try:
            if self.cluster.executor == "slurm":
                with executor.batch():  # one job array
                    jobs = [executor.submit(r.job) for r in runs]
            else:
                jobs = [executor.submit(r.job) for r in runs]
        except Exception as e:  # sbatch refused (bad partition, account...): its own words, on one line
            reason = " ".join(str(getattr(e, "output", "") or e).split())
            raise ClusterError(f"--executor {self.cluster.executor}: submitting {len(runs)} job(s) failed: "
                               f"{reason}") from None
        for run, job in zip(runs, jobs):
            self.handles[job.job_id] = job
            book.record(run.name, job.job_id, self.cluster.executor)
            print(f"cluster: submitted {run.name} as {self.cluster.executor} job {job.job_id}", file=sys.stderr)

    def active(self, record: dict | None) -> bool:
        words = self.state(record).split()  # SLURM: "CANCELLED by 1234"
        return bool(words) and words[0] in ACTIVE

    def wait(self, records: list[dict]) -> None:
        while True:
            self.refresh(records)
            if not any(self.active(r) for r in records):
                return
            self.look_at_pending(records)
            time.sleep(POLL_S[self.cluster.executor])

    def look_at_pending(self, records: list[dict]) -> None:
        """A pending SLURM job that can never start as asked (more CPUs than a node has, a time over the partition's
        limit: sbatch accepts such a job and it waits forever) is cancelled and named, in one line; a held one is
        named once, with the command that releases it, and waited on."""
        pending = [r["job_id"] for r in records if r and r["executor"] == "slurm" and self.state(r) == "PENDING"]
        reasons = self._reasons
        for job in pending:
            if reasons.get(job) in HELD and job not in self._told:
                self._told.add(job)
                print(f"cluster: SLURM job {job} is held ({reasons[job]}): it starts once released "
                      f"(scontrol release {job}); waiting", file=sys.stderr)
        stuck = {j: reasons[j] for j in pending if reasons.get(j) in NEVER_RUNS}
        if stuck:
            _ask(["scancel", *sorted(stuck)], quiet=True)
            job, reason = next(iter(stuck.items()))
            raise ClusterError(f"SLURM cannot start job {job} as asked ({reason}: more CPUs, memory, nodes or time "
                               f"than the partition gives, or a constraint no node meets); cancelled "
                               f"{', '.join(sorted(stuck))}: ask for less (--slurm-cpus-per-task, --slurm-mem, "
                               "--slurm-time, --slurm-additional) or another --slurm-partition")


def run_jobs(runs: list[PlannedRun], cluster: ClusterConfig, folder: Path) -> list[str]:
    """Bring every run to its target through jobs (see the module's docstring); returns the names of the
    runs still short of it (none where everything finished; every unfinished one with --no-wait)."""
    folder.mkdir(parents=True, exist_ok=True)
    book, scheduler = JobBook(folder), Scheduler(cluster, folder)
    todo = [r for r in runs if updates_done(r.run_dir) < r.target]
    for r in runs:
        if r not in todo:
            print(f"cluster: {r.name} is finished ({r.target} updates)", file=sys.stderr)
    scheduler.refresh([book.jobs.get(r.name) for r in todo])
    running = [r for r in todo if scheduler.active(book.jobs.get(r.name))]
    for r in running:
        print(f"cluster: {r.name} is in job {book.jobs[r.name]['job_id']}: waiting on it", file=sys.stderr)
    scheduler.submit([r for r in todo if r not in running], book)
    if not cluster.wait:
        return [r.name for r in todo]
    scheduler.wait([book.jobs[r.name] for r in todo])
    again = [r for r in running if updates_done(r.run_dir) < r.target]  # an earlier command's job that died
    scheduler.submit(again, book)
    scheduler.wait([book.jobs[r.name] for r in again])
    for _ in range(cluster.job_max_requeues):  # pre-empted or timed out, after saving: back in the queue
        stopped = [r for r in todo if updates_done(r.run_dir) < r.target and stopped_by_signal(r)]
        if not stopped:
            break
        print(f"cluster: {', '.join(r.name for r in stopped)}: stopped by the scheduler's signal after saving; "
              "submitting again", file=sys.stderr)
        scheduler.submit(stopped, book)
        scheduler.wait([book.jobs[r.name] for r in stopped])
    return [r.name for r in todo if updates_done(r.run_dir) < r.target]


def dry_run_text(runs: list[PlannedRun], cluster: ClusterConfig, folder: Path) -> str:
    """What `--dry-run` prints: each run's `train.py` arguments as its next job would start it and, for SLURM, the
    sbatch script submitit would submit for them (one array when several), written by submitit itself."""
    lines = [f"{r.name}: python -m minimax.cli.train {shlex.join(r.job.arguments())}" for r in runs]
    if cluster.executor == "slurm" and runs:  # no SlurmExecutor: it refuses to exist where srun is not
        from submitit.slurm.slurm import _make_sbatch_string  # noqa: PLC0415  (what SlurmExecutor writes)

        name = "minimax-" + (runs[0].name if len(runs) == 1 else folder.parent.name)
        logs = folder / "%j"
        command = " ".join([shlex.quote(sys.executable), "-u -m submitit.core._submit", shlex.quote(str(logs))])
        lines += ["", _make_sbatch_string(command=command, folder=logs, **slurm_parameters(cluster, name),
                                          map_count=len(runs) if len(runs) > 1 else None)]
    return "\n".join(lines)


def stopped_by_signal(run: PlannedRun) -> bool:
    """Whether the run's last job ended because a scheduler's signal stopped its train.py: saved first (128 + the
    signal), or killed by the SIGTERM before its handlers were up (then it resumes from its last checkpoint)."""
    ended = [s for s in read_sessions(Path(run.job.sessions)) if s.get("task", 0) == 0]
    return bool(ended) and ended[-1].get("exit") in (*STOPPED_STATUSES, -signal.SIGTERM)


def unfinished_message(names: list[str], runs: list[PlannedRun], folder: Path) -> str:
    """What to tell the user about runs whose jobs ended before the runs finished."""
    book = JobBook(folder)
    where = {r.name: r for r in runs}
    details = [f"{n} (job {book.jobs.get(n, {}).get('job_id', '-')}, at update {updates_done(where[n].run_dir)} "
               f"of {where[n].target}; log: {folder / str(book.jobs.get(n, {}).get('job_id', '-'))})" for n in names]
    return (f"{len(names)} run(s) did not finish: " + "; ".join(details)
            + ". Rerun the same command to resubmit them (each resumes from its newest checkpoint)")


def status_rows(runs: list[PlannedRun], cluster: ClusterConfig, folder: Path) -> list[dict]:
    """One row per run: run, job id, state, updates done, target, last return."""
    book, scheduler = JobBook(folder), Scheduler(cluster, folder)
    done_by_run = {r.name: updates_done(r.run_dir) for r in runs}
    scheduler.refresh([book.jobs.get(r.name) for r in runs if done_by_run[r.name] < r.target])
    rows = []
    for r in runs:
        record, done = book.jobs.get(r.name), done_by_run[r.name]
        state = "finished" if done >= r.target else scheduler.described(record) if record else "not submitted"
        sessions = read_sessions(Path(r.job.sessions))
        rows.append({"run": r.name, "job": record["job_id"] if record else "-", "state": state,
                     "updates": done, "target": r.target, "return": last_return(r.run_dir),
                     "sessions": len(sessions)})
    return rows


def status_table(rows: list[dict]) -> str:
    """`status_rows` as a plain-text table."""
    head = ("run", "job", "state", "updates", "last return", "job sessions")
    lines = [(r["run"], str(r["job"]), r["state"], f"{r['updates']}/{r['target']}",
              "-" if r["return"] is None else f"{r['return']:.4g}", str(r["sessions"])) for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*line) for line in [head, *lines])
