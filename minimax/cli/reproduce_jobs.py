"""`reproduce --executor local|slurm`: each method's training one job, then the evaluation and table as today.

The jobs train exactly what the in-process command trains (the same TrainConfig, saved to
`<out-dir>/jobs/<method>.json` and started with `train.py --config`), in the same run directories, so a
reproduction may switch between in-process and jobs from one command to the next. The checks the in-process
path makes before training (a run trained past `--updates`, a run with other settings) run before anything
is submitted. When the jobs are done the command evaluates every method in this process (`Reproduction.run`
finds them trained) and writes `table.md` and `results.json`. The wall times in `state.json` come from the
jobs' sessions (`minimax.cli.cluster.TrainJob`): each session's time from its start to its end, the
hardware its run reported.
"""

from __future__ import annotations

from pathlib import Path

from minimax.cli.cluster import TrainJob, read_sessions
from minimax.cli.cluster_runs import PlannedRun, dry_run_text, run_jobs, status_rows, status_table, unfinished_message
from minimax.cli.reproduce_state import ReproduceError, job_hardware, note_hardware


def planned_run(repro, method: str) -> PlannedRun:
    """The job of one method, after the checks the in-process path makes (`Reproduction.progress`)."""
    cfg, target, folder = repro.configs[method], repro.rc.updates, repro.out.absolute() / "jobs"
    cfg = cfg.replace(out_dir=str(Path(cfg.out_dir).absolute()))
    repro.progress(method, cfg)
    folder.mkdir(parents=True, exist_ok=True)
    start = folder / f"{method}.json"
    cfg.replace(resume=False, overwrite=False).save(start)
    job = TrainJob(name=method, run_dir=str(cfg.run_dir), sessions=str(folder / f"{method}.sessions.jsonl"),
                   start=["--config", str(start), "--out-dir", cfg.out_dir, "--run-name", cfg.run_dir.name],
                   resume=["--num-updates", str(target), "--checkpoint-every", str(cfg.checkpoint_every)])
    return PlannedRun(job, target)


def count_sessions(repro, run: PlannedRun, fresh: bool) -> None:
    """Add the method's job sessions not yet counted to its wall time and sessions in `state.json`
    (a fresh start resets them, as the in-process path does)."""
    sessions = [s for s in read_sessions(Path(run.job.sessions)) if s.get("task", 0) == 0]
    entry = repro.state.reset(run.name) if fresh else repro.state.method(run.name)
    counted = len(sessions) if fresh else entry.get("job_sessions_counted", 0)
    for s in sessions[counted:]:
        entry["train_seconds"] += s["end"] - s["start"]
        entry["train_sessions"] += 1
        note_hardware(entry, "train", job_hardware(s))
    entry["job_sessions_counted"] = len(sessions)
    entry["updates_done"] = repro.trained_updates(repro.configs[run.name])


def train_in_jobs(repro) -> bool:
    """Train every method short of `--updates` through jobs (`minimax.cli.cluster_runs.run_jobs`);
    True once all are trained, False where the command should be rerun (--no-wait, --status)."""
    cluster, folder = repro.rc.cluster, repro.out.absolute() / "jobs"
    runs = [planned_run(repro, m) for m in repro.methods]
    if cluster.status:
        print(status_table(status_rows(runs, cluster, folder)))
        return False
    if cluster.dry_run:
        print(dry_run_text(runs, cluster, folder))
        return False
    fresh = {r.name for r in runs if repro.trained_updates(repro.configs[r.name]) == 0}
    for r in runs:  # sessions of an abandoned fresh start do not count
        if r.name in fresh:
            count_sessions(repro, r, fresh=True)
    repro.state.save()
    unfinished = run_jobs(runs, cluster, folder)
    for r in runs:
        count_sessions(repro, r, fresh=False)
    repro.state.save()
    if unfinished and cluster.wait:
        raise ReproduceError(unfinished_message(unfinished, runs, folder))
    return not unfinished
