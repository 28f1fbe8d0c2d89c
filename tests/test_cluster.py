"""Issue 59: sweeps and `reproduce` through submitit (`--executor local|slurm`): bad options are one line and
submit nothing; SLURM submissions are one job array with the options given (a stand-in `sbatch` records
them); a rerun skips finished runs, waits on live jobs and resubmits the rest; a killed job and a requeued
one (USR2) finish their runs exactly once with the metrics of an uninterrupted run (real local jobs); a job
of two tasks is a two-process run; `--collect` writes the grid's final metrics with intervals."""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from pathlib import Path

import pytest
import submitit  # imported at collection: its logger keeps the streams it finds at import, which a test's
                 # captured ones (closed after the test) must not be

from minimax.cli import cluster, cluster_runs
from minimax.cli.cluster import TrainJob, coordinator_port, task_arguments
from minimax.cli.reproduce import main as reproduce
from minimax.cli.sweep import main as sweep
from minimax.core.stats import mean_ci
from minimax.training.run_logs import read_rows
from run_helpers import without_timing

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes

TINY = ["--maze-height", "5", "--maze-width", "5", "--n-walls", "3", "--max-episode-steps", "32", "--n-actions", "3",
        "--recurrent-size", "16", "--num-envs", "8", "--num-steps", "16", "--n-epochs", "2", "--eval-every", "0"]


def error_line(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("command", ["sweep", "reproduce"])
@pytest.mark.parametrize("args, message", [
    (["--executor", "pbs"], "--executor must be one of in-process, local, slurm, got 'pbs'"),
    (["--executor", "local", "--slurm-time", "-5"], "--slurm-time must be >= 3 minutes (SLURM signals a job 90 s"),
    (["--executor", "slurm", "--slurm-array-parallelism", "0"], "--slurm-array-parallelism must be >= 1, got 0"),
    (["--executor", "slurm"], "--executor slurm: no sbatch on PATH"),
    (["--executor", "local", "--slurm-partition", "gpu"], "--slurm-partition is an option of --executor slurm"),
    (["--status"], "--status is about jobs: give --executor local or --executor slurm"),
    (["--executor", "slurm", "--slurm-nodes", "2", "--slurm-gpus-per-job", "3"], "must be divisible by --slurm-nodes"),
])
def test_bad_cluster_options_are_one_line_and_submit_nothing(tmp_path, capsys, monkeypatch, command, args, message):
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))
    out = tmp_path / "out"
    base = (["--grid", "lr=1e-3,3e-3", "--out-dir", str(out)] if command == "sweep" else
            ["--methods", "dr", "--out-dir", str(out)])
    with pytest.raises(SystemExit) as exit_:
        (sweep if command == "sweep" else reproduce)([*base, *args])
    assert exit_.value.code == 2
    assert message in error_line(capsys)
    assert not (out / "jobs").exists()


def test_options_that_train_nothing_or_stop_this_process_refuse_jobs(tmp_path, capsys):
    with pytest.raises(SystemExit):
        sweep(["--grid", "lr=1e-3", "--out-dir", str(tmp_path), "--executor", "local", "--print"])
    assert "--print trains nothing: leave out --executor" in error_line(capsys)
    with pytest.raises(SystemExit):
        reproduce(["--methods", "dr", "--out-dir", str(tmp_path), "--executor", "local", "--time-limit", "60"])
    assert "--time-limit stops this process's own training" in error_line(capsys)


# --------------------------------------------------------------------------- SLURM, with stand-in commands


def fake_slurm(tmp_path, monkeypatch, states: dict[str, str]) -> Path:
    """`sbatch` (records each script, answers job 4242), `srun`, and `sacct` answering `states`."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    (bin_ / "sbatch").write_text(f'#!/bin/sh\nn=$(ls {bin_}/script* 2>/dev/null | wc -l)\ncp "$1" {bin_}/script$n\n'
                                 f'echo "Submitted batch job 424$n"\n')
    (bin_ / "srun").write_text("#!/bin/sh\nexit 0\n")
    (bin_ / "sacct").write_text("#!/bin/sh\necho 'JobID|State|NodeList'\n" + "".join(
        f"echo '{job}|{state}|node1'\n" for job, state in states.items()))
    for tool in bin_.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    return bin_


def test_slurm_jobs_are_one_array_with_the_options_given_and_a_rerun_resubmits_only_dead_jobs(
        tmp_path, monkeypatch, capsys):
    bin_ = fake_slurm(tmp_path, monkeypatch, {"4240_0": "RUNNING", "4240_1": "PENDING"})
    out = tmp_path / "out"
    args = ["--grid", "lr=1e-3,3e-3", "--out-dir", str(out), "--executor", "slurm", "--no-wait",
            "--slurm-partition", "gpu", "--slurm-time", "120", "--slurm-array-parallelism", "1", "--slurm-qos", "high",
            "--slurm-account", "ued", "--slurm-setup", "module load cuda", "--slurm-gpus-per-job", "2",
            "--num-updates", "10"]
    sweep(args)
    script = (bin_ / "script0").read_text()
    for line in ("#SBATCH --array=0-1%1", "#SBATCH --partition=gpu", "#SBATCH --time=120", "#SBATCH --qos=high",
                 "#SBATCH --account=ued", "#SBATCH --gpus-per-node=2", "#SBATCH --signal=USR2@90", "module load cuda"):
        assert line in script, line
    jobs = json.loads((out / "jobs" / "jobs.json").read_text())
    assert {n: j["job_id"] for n, j in jobs.items()} == {"dr-lr=1e-3-seeds0": "4240_0", "dr-lr=3e-3-seeds0": "4240_1"}
    capsys.readouterr()
    sweep([*args, "--status"])
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["run", "job", "state", "updates"]
    assert table[1].split()[:4] == ["dr-lr=1e-3-seeds0", "4240_0", "RUNNING", "0/10"]
    assert table[2].split()[:4] == ["dr-lr=3e-3-seeds0", "4240_1", "PENDING", "0/10"]
    sweep(args)  # both jobs live: nothing submitted again
    assert not (bin_ / "script1").exists()
    fake_slurm(tmp_path, monkeypatch, {"4240_0": "RUNNING", "4240_1": "NODE_FAIL"})
    sweep(args)  # the dead one's run gets a job of its own
    assert "#SBATCH --array" not in (bin_ / "script1").read_text()
    assert json.loads((out / "jobs" / "jobs.json").read_text())["dr-lr=3e-3-seeds0"]["job_id"] == "4241"
    fake_slurm(tmp_path, monkeypatch, {})  # sacct does not know the job: say so rather than submit twice
    with pytest.raises(SystemExit):
        sweep(args)
    assert "cannot tell whether SLURM job 4240_0 still runs" in error_line(capsys)


def test_a_tasks_multi_host_flags_come_from_its_job_environment(monkeypatch):
    for k in [k for k in os.environ if k.startswith(("SLURM_", "SUBMITIT_"))]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("SUBMITIT_EXECUTOR", "slurm")
    for k, v in dict(SLURM_JOB_ID="123456", SLURM_NTASKS="4", SLURM_JOB_NUM_NODES="2", SLURM_NODEID="1",
                     SLURM_PROCID="3", SLURM_LOCALID="1", SLURM_JOB_NODELIST="gpu[007-008]").items():
        monkeypatch.setenv(k, v)
    port = coordinator_port("123456")
    assert 20000 <= port < 32768  # below Linux's ephemeral ports
    assert task_arguments(submitit.JobEnvironment()) == [
        "--coordinator-address", f"gpu007:{port}", "--num-processes", "4", "--process-id", "3"]
    monkeypatch.setenv("SLURM_NTASKS", "1")
    assert task_arguments(submitit.JobEnvironment()) == []  # one task: a one-process run
    monkeypatch.setenv("SUBMITIT_EXECUTOR", "local")
    for k, v in dict(SUBMITIT_LOCAL_JOB_ID="777", SUBMITIT_LOCAL_NTASKS="2", SUBMITIT_LOCAL_GLOBALID="1").items():
        monkeypatch.setenv(k, v)
    assert task_arguments(submitit.JobEnvironment()) == [
        "--coordinator-address", f"127.0.0.1:{coordinator_port('777')}", "--num-processes", "2", "--process-id", "1"]


def test_a_job_starts_its_run_afresh_until_the_run_has_a_checkpoint(tmp_path):
    job = TrainJob(name="r", run_dir=str(tmp_path / "r"), start=["--preset", "dr"], resume=["--num-updates", "9"],
                   sessions=str(tmp_path / "s.jsonl"))
    assert job.arguments() == ["--preset", "dr", "--no-progress"]
    (tmp_path / "r").mkdir()  # a start killed before its first checkpoint: start again, over it
    assert job.arguments() == ["--preset", "dr", "--overwrite", "--no-progress"]


# --------------------------------------------------------------------------- collect


def test_collect_writes_each_runs_final_metrics_with_intervals_over_seeds(tmp_path, capsys):
    args = ["--grid", "lr=1e-3,3e-3", "--seeds", "0,1,2", "--out-dir", str(tmp_path)]
    rows = {"dr-lr=1e-3-seeds0-1-2": [[0.1, 0.2, 0.6], [0.3, 0.5, 0.4]], "dr-lr=3e-3-seeds0-1-2": None}
    run = tmp_path / "dr-lr=1e-3-seeds0-1-2"
    run.mkdir()
    lines = []
    for update, returns in ((5, rows[run.name][0]), (10, rows[run.name][1])):
        for seed, r in enumerate(returns):
            row = {"seed": seed, "update": update, "env_steps": 40 * update, "train/return": r, "time_s": 0.1}
            if update == 5:
                row["eval/solved_rate"] = [0.5, 1.0, 0.0][seed]  # evaluated at update 5 only: its last value counts
            lines.append(row)
        lines.append({"seed": "mean", "update": update, "train/return": sum(returns) / 3})
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    sweep([*args, "--collect"])
    assert "dr-lr=3e-3-seeds0-1-2 has no log rows yet; left out" in capsys.readouterr().err
    with open(tmp_path / "sweep.csv") as f:
        table = list(csv.DictReader(f))
    assert [(r["run"], r["lr"], r["seeds"], r["updates"], r["metric"]) for r in table] == [
        (run.name, "0.001", "3", "10", "eval/solved_rate"), (run.name, "0.001", "3", "10", "train/return")]
    for row, values in zip(table, ([0.5, 1.0, 0.0], [0.3, 0.5, 0.4])):
        mean, low, high = mean_ci(values)
        assert row["n"] == "3"
        assert [float(row[k]) for k in ("mean", "ci_low", "ci_high")] == pytest.approx([mean, low, high], rel=1e-12)


# --------------------------------------------------------------------------- real local jobs


def first_session(path: Path, timeout: float = 600) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text().strip():
            return json.loads(path.read_text().splitlines()[0])
        time.sleep(0.05)
    raise AssertionError(f"no job session began in {path}")


def wait_for_checkpoint(run_dir: Path, timeout: float = 600) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        done = cluster_runs.updates_done(run_dir) if (run_dir / "checkpoints").is_dir() else 0
        if done:
            return done
        time.sleep(0.05)
    raise AssertionError(f"{run_dir} saved no checkpoint")


def wait_until_gone(pid: int, folder: Path, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while cluster_runs._local_alive(pid, folder) and time.time() < deadline:
        time.sleep(0.1)


@pytest.fixture
def jobs_share_the_compilation_cache(monkeypatch):
    import jax

    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", jax.config.jax_compilation_cache_dir)
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setattr(cluster_runs, "POLL_S", {"local": 0.2, "slurm": 0.2})


@pytest.mark.e2e  # three real jobs and a resubmission: over a minute
def test_a_killed_job_and_a_requeued_job_finish_their_runs_once_as_an_uninterrupted_run_does(
        tmp_path, capsys, jobs_share_the_compilation_cache):
    # Three grid points that train the same thing (the checkpoint cadence changes nothing an update computes):
    # one killed hard (its train.py, SIGKILL), one signalled as SLURM signals a job at its time limit (USR2:
    # submitit requeues it through TrainJob.checkpoint), one left alone as the reference.
    args = ["--grid", "checkpoint_every=6,10,30", "--seeds", "0,1", "--out-dir", str(tmp_path), "--executor", "local",
            *TINY, "--num-updates", "30", "--log-every", "2"]
    sweep([*args, "--no-wait"])
    names = [f"dr-checkpoint_every={c}-seeds0-1" for c in (6, 10, 30)]
    killed, requeued, reference = (tmp_path / n for n in names)
    sessions = {n: tmp_path / "jobs" / f"{n}.sessions.jsonl" for n in names}
    jobs = {n: j["job_id"] for n, j in json.loads((tmp_path / "jobs" / "jobs.json").read_text()).items()}
    first = {n: first_session(sessions[n]) for n in names[:2]}
    wait_for_checkpoint(killed)
    os.kill(first[names[0]]["train_pid"], signal.SIGKILL)
    wait_for_checkpoint(requeued)
    os.kill(first[names[1]]["pid"], signal.SIGUSR2)
    wait_until_gone(int(jobs[names[0]]), tmp_path / "jobs")
    assert 6 <= cluster_runs.updates_done(killed) < 30  # killed midway: its job ended, its run did not
    capsys.readouterr()
    sweep(args)  # the rerun: waits on the two live jobs, resubmits the killed run
    err = capsys.readouterr().err
    assert f"submitted {names[0]} as local job" in err
    # The requeued job may still be running (the rerun waits on it) or may already have finished its run:
    # either way the rerun does not submit it again (its sessions below: one job, stopped then requeued).
    assert f"submitted {names[1]}" not in err
    assert f"{names[1]} is in job" in err or f"{names[1]} is finished" in err
    expected = without_timing(read_rows(reference))
    assert [r["update"] for r in expected] == [u for u in range(2, 31, 2) for _ in (0, 1, "mean")]
    for run in (killed, requeued):
        assert cluster_runs.updates_done(run) == 30
        assert without_timing(read_rows(run)) == expected  # every update once, the same numbers
    ended = {n: cluster.read_sessions(sessions[n]) for n in names}
    assert [s["exit"] for s in ended[names[0]]] == [-signal.SIGKILL, 0]
    # Saved, then requeued by submitit. On a loaded machine the run can reach its 30th update between the checkpoint
    # the test waits for and the signal: the SIGTERM then lands while train.py exits, after its handlers (which last
    # for the training loop) are gone, and ends it by the default action (-SIGTERM); the run is complete either way
    # (its logs are checked above) and the requeued session resumes and finds it so.
    first_exit, second_exit = [s["exit"] for s in ended[names[1]]]
    assert first_exit in (cluster.STOPPED, -signal.SIGTERM) and second_exit == 0, ended[names[1]]
    assert [s["job_id"] for s in ended[names[1]]] == [jobs[names[1]]] * 2  # the same job, requeued
    assert [s["args"][0] for s in ended[names[1]]] == ["--preset", "--resume"]
    assert [s["exit"] for s in ended[names[2]]] == [0]
    sweep(args)  # all finished: nothing runs again
    assert all(len(cluster.read_sessions(sessions[n])) == len(ended[n]) for n in names)
    sweep([*args, "--status"])
    table = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[2:4] for line in table] == [["finished", "30/30"]] * 3


@pytest.mark.e2e  # two methods' jobs, a resubmission and the evaluation: over a minute
def test_reproduce_through_local_jobs_resumes_a_killed_method_and_tables_both(
        tmp_path, capsys, jobs_share_the_compilation_cache):
    from minimax.cli.reproduce import ReproduceConfig, method_config, parse_overrides
    from minimax.training.loop import train

    sets = ["maze_height=5", "maze_width=5", "n_walls=3", "max_episode_steps=32", "n_actions=3", "recurrent_size=16",
            "num_envs=8", "num_steps=16", "n_epochs=2", "lr=3e-3", "eval_every=0", "buffer_size=16",
            "min_fill_ratio=0.25"]
    args = ["--methods", "dr,plr", "--seeds", "2", "--updates", "30", "--out-dir", str(tmp_path / "r"),
            "--eval-episodes", "2", "--suite", "validation", "--log-every", "2", "--checkpoint-every", "6",
            "--no-progress", "--executor", "local", *[a for s in sets for a in ("--set", s)]]
    with pytest.raises(SystemExit) as exit_:
        reproduce([*args, "--no-wait"])
    assert exit_.value.code == 3  # submitted: rerun to wait and evaluate
    run = tmp_path / "r" / "runs" / "dr"
    session = first_session(tmp_path / "r" / "jobs" / "dr.sessions.jsonl")
    wait_for_checkpoint(run)
    os.kill(session["train_pid"], signal.SIGKILL)
    wait_until_gone(int(json.loads((tmp_path / "r" / "jobs" / "jobs.json").read_text())["dr"]["job_id"]),
                    tmp_path / "r" / "jobs")
    assert cluster_runs.updates_done(run) < 30
    reproduce(args)
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    for name, sessions in (("dr", 2), ("plr", 1)):
        m = doc["methods"][name]
        assert (m["status"], m["updates_done"], m["train_sessions"]) == ("done", 30, sessions)
        assert m["train_seconds"] > 0 and m["hardware"][0]["platform"] == "cpu"
    rc = ReproduceConfig(methods="dr", seeds=2, updates=30, out_dir=str(tmp_path / "ref"), log_every=2,
                         checkpoint_every=30, progress=False)
    train(method_config("dr", rc, parse_overrides(sets)))  # the same run, uninterrupted, in this process
    assert without_timing(read_rows(run)) == without_timing(read_rows(tmp_path / "ref" / "runs" / "dr"))


@pytest.mark.e2e  # two processes joining over gloo: about a minute
def test_a_job_of_two_tasks_is_one_two_process_run(tmp_path, jobs_share_the_compilation_cache):
    args = ["--grid", "lr=3e-3", "--out-dir", str(tmp_path), "--executor", "local", "--job-tasks-per-node", "2",
            *TINY, "--num-updates", "2", "--log-every", "1", "--checkpoint-every", "2", "--devices", "2"]
    sweep(args)
    run = tmp_path / "dr-lr=3e-3-seeds0"
    assert [r["update"] for r in read_rows(run)] == [1, 2] and cluster_runs.updates_done(run) == 2
    ended = sorted(cluster.read_sessions(tmp_path / "jobs" / "dr-lr=3e-3-seeds0.sessions.jsonl"),
                   key=lambda s: s["task"])
    assert [(s["task"], s["exit"], s["backend"]) for s in ended] == [(0, 0, "cpu (2 x cpu)"), (1, 0, "cpu (2 x cpu)")]
    for s in ended:
        i = s["args"].index("--coordinator-address")
        assert s["args"][i:i + 6] == ["--coordinator-address", f"127.0.0.1:{coordinator_port(s['job_id'])}",
                                      "--num-processes", "2", "--process-id", str(s["task"])]
