"""Issue 74's parts of the cluster path that need no scheduler: the devices a multi-host task asks JAX for, a
status that asks `sacct` afresh at every look, the sbatch options a job is given, the parent process that never
starts JAX, and a cluster's repeated stop signal merged into one save."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import submitit  # noqa: F401  (imported at collection: its logger keeps the streams it finds at import)

from minimax.cli import cluster_runs
from minimax.cli.cluster import ClusterConfig, ClusterError, check_cluster, make_executor
from minimax.training import devices

SLURM_ONE_TASK_PER_NODE = {"SLURM_JOB_ID": "77", "SLURM_NTASKS_PER_NODE": "1", "SLURM_LOCALID": "0",
                           "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}


def test_a_nodes_only_task_asks_jax_for_every_gpu_of_its_node(tmp_path):
    env = {**SLURM_ONE_TASK_PER_NODE, "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    assert devices.node_devices(env) == list(range(8))  # JAX alone would take [SLURM_LOCALID] = [0]
    no_ntasks = {k: v for k, v in env.items() if k != "SLURM_NTASKS_PER_NODE"}
    assert devices.node_devices({**no_ntasks, "SLURM_TASKS_PER_NODE": "1(x2)"}) == list(range(8))
    driver = tmp_path / "gpus"
    driver.mkdir()
    for bus in ("0000:07:00.0", "0000:0a:00.0"):
        (driver / bus).mkdir()
    assert devices.node_devices(SLURM_ONE_TASK_PER_NODE, str(driver)) == [0, 1]  # no variable: the driver's list
    assert devices.node_devices({**env, "SLURM_NTASKS_PER_NODE": "8"}) is None  # a task per GPU: JAX's own choice
    assert devices.node_devices(SLURM_ONE_TASK_PER_NODE, str(tmp_path / "none")) is None  # a CPU node
    assert devices.node_devices({"CUDA_VISIBLE_DEVICES": "0,1"}) is None  # not a SLURM job


def test_initialize_distributed_passes_the_nodes_gpus_to_jax(monkeypatch):
    calls = []
    monkeypatch.setattr(devices.jax.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(devices.jax.distributed, "initialize", lambda **kw: calls.append(kw))
    for k in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(k)
    for k, v in {**SLURM_ONE_TASK_PER_NODE, "CUDA_VISIBLE_DEVICES": "0,1,2,3"}.items():
        monkeypatch.setenv(k, v)
    assert devices.initialize_distributed("node1:20077", 2, 1)
    assert calls == [{"coordinator_address": "node1:20077", "num_processes": 2, "process_id": 1,
                      "local_device_ids": [0, 1, 2, 3]}]


def fake_sacct(tmp_path, monkeypatch, answers: list[str]) -> Path:
    """A stand-in `sacct` that gives the next of `answers` (one job's state) at each call, and counts the calls."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    (tmp_path / "answers").write_text("\n".join(answers) + "\n")
    (bin_ / "sacct").write_text(f"""#!/bin/sh
n=$(cat {tmp_path}/calls 2>/dev/null || echo 0); echo $((n + 1)) > {tmp_path}/calls
state=$(sed -n "$((n + 1))p" {tmp_path}/answers)
echo 'JobID|State|NodeList'; echo "4242|$state|node1"; echo "4242.batch|$state|node1"
""")
    (bin_ / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    return tmp_path / "calls"


def test_the_status_asks_sacct_at_every_look_whatever_the_state(tmp_path, monkeypatch):
    calls = fake_sacct(tmp_path, monkeypatch, ["CONFIGURING", "SUSPENDED", "RUNNING", "COMPLETED"])
    scheduler = cluster_runs.Scheduler(ClusterConfig(executor="slurm"), tmp_path / "jobs")
    record = {"job_id": "4242", "executor": "slurm"}
    seen = []
    for _ in range(4):
        scheduler.refresh([record])
        seen.append((scheduler.state(record), scheduler.active(record)))
    assert seen == [("CONFIGURING", True), ("SUSPENDED", True), ("RUNNING", True), ("COMPLETED", False)]
    assert calls.read_text().strip() == "4"  # submitit's watcher would have stopped asking after the first
    monkeypatch.setattr(cluster_runs, "POLL_S", {"slurm": 0.01})
    calls.unlink()
    scheduler.wait([record])  # waits through every live state until sacct says it ended
    assert calls.read_text().strip() == "4"


def test_a_held_job_is_named_once_with_its_release_and_waited_on(tmp_path, monkeypatch, capsys):
    calls = fake_sacct(tmp_path, monkeypatch, ["PENDING", "PENDING", "PENDING", "COMPLETED"])
    (tmp_path / "bin" / "squeue").write_text("#!/bin/sh\necho '4242|JobHeldUser'\n")  # as `squeue -o %i|%r` says
    (tmp_path / "bin" / "squeue").chmod(0o755)
    monkeypatch.setattr(cluster_runs, "POLL_S", {"slurm": 0.01})
    scheduler = cluster_runs.Scheduler(ClusterConfig(executor="slurm"), tmp_path / "jobs")
    record = {"job_id": "4242", "executor": "slurm"}
    scheduler.wait([record])  # a held job is not one that can never run: waited on until it ends
    assert calls.read_text().strip() == "4"
    said = [line for line in capsys.readouterr().err.splitlines() if "held" in line]
    assert said == ["cluster: SLURM job 4242 is held (JobHeldUser): it starts once released "
                    "(scontrol release 4242); waiting"]  # once, not at every look
    calls.unlink()
    scheduler.refresh([record])
    assert scheduler.described(record) == "PENDING (JobHeldUser)"  # what --status shows


def test_array_tasks_read_their_states_from_a_pending_range(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "sacct").write_text("#!/bin/sh\necho 'JobID|State|NodeList'\necho '50_0|RUNNING|n1'\n"
                                "echo '50_[1-3]|PENDING|None assigned'\n")
    (bin_ / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    assert cluster_runs.sacct_states(["50_0", "50_2"]) == {"50_0": "RUNNING", "50_1": "PENDING", "50_2": "PENDING",
                                                           "50_3": "PENDING"}


def sbatch_script(tmp_path, **options) -> str:
    """The sbatch script submitit writes for one job of `options` (a stand-in sbatch keeps it)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(parents=True, exist_ok=True)
    (bin_ / "sbatch").write_text(f'#!/bin/sh\ncp "$1" {bin_}/script\necho "Submitted batch job 99"\n')
    (bin_ / "sbatch").chmod(0o755)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_}:{old}"
    try:
        make_executor(ClusterConfig(executor="slurm", **options), tmp_path / "jobs", "minimax-lr=1e-3").submit(print)
    finally:
        os.environ["PATH"] = old
    return (bin_ / "script").read_text()


def test_a_job_asks_for_the_cpus_memory_and_any_sbatch_option_given(tmp_path):
    script = sbatch_script(tmp_path, slurm_cpus_per_task=4, slurm_mem="16G",
                           slurm_additional=("constraint=a100", "exclude=node3", "requeue"))
    for line in ("#SBATCH --cpus-per-task=4", "#SBATCH --mem=16G", "#SBATCH --constraint=a100",
                 "#SBATCH --exclude=node3", "#SBATCH --requeue", "#SBATCH --job-name=minimax-lr=1e-3"):
        assert line in script, line
    assert "--cpus-per-task" not in sbatch_script(tmp_path / "plain")  # nothing asked: the cluster's default


@pytest.mark.parametrize("options, message", [
    (dict(slurm_time=1), "--slurm-time must be >= 3 minutes (SLURM signals a job 90 s before its time limit"),
    (dict(slurm_additional=("=a100",)), "--slurm-additional takes KEY=VALUE"),
    (dict(slurm_cpus_per_task=-1), "--slurm-cpus-per-task must be >= 0, got -1"),
    (dict(job_max_requeues=-2), "--job-max-requeues must be >= 0, got -2"),
    (dict(executor="in-process", job_max_requeues=5), "--job-max-requeues is about jobs: give --executor local"),
])
def test_bad_slurm_requests_are_one_line(options, message):
    with pytest.raises(ClusterError) as err:
        check_cluster(ClusterConfig(**{"executor": "slurm", **options}))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_submitting_process_reads_a_runs_progress_without_starting_jax(tmp_path):
    run = tmp_path / "run" / "checkpoints"
    for name in ("10", "20", "30.orbax-checkpoint-tmp-1732", "notes"):
        (run / name).mkdir(parents=True)
    code = ("import sys; from minimax.cli.cluster import TrainJob, updates_done; from jax._src import xla_bridge\n"
            f"job = TrainJob('r', {str(run.parent)!r}, ['--preset', 'dr'], [], {str(tmp_path / 's.jsonl')!r})\n"
            "print(updates_done(job.run_dir), job.arguments()[0], len(xla_bridge._backends))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["20", "--resume", "0"]  # the newest finished checkpoint; no backend started


def test_a_stopped_runs_last_session_tells_the_command_to_submit_it_again(tmp_path):
    from minimax.cli.cluster import STOPPED, TrainJob  # noqa: PLC0415

    sessions = tmp_path / "s.jsonl"
    run = cluster_runs.PlannedRun(TrainJob("r", str(tmp_path / "r"), [], [], str(sessions)), 30)
    assert not cluster_runs.stopped_by_signal(run)
    sessions.write_text(json.dumps({"task": 0, "end": 1.0, "exit": STOPPED}) + "\n")
    assert cluster_runs.stopped_by_signal(run)
    with sessions.open("a") as f:
        f.write(json.dumps({"task": 0, "end": 2.0, "exit": -9}) + "\n")  # killed: reported, not resubmitted
    assert not cluster_runs.stopped_by_signal(run)


def test_two_commands_on_one_out_dir_keep_each_others_jobs(tmp_path):
    first, second = cluster_runs.JobBook(tmp_path), cluster_runs.JobBook(tmp_path)  # both read an empty book
    first.record("a", "11", "slurm")
    second.record("b", "12", "slurm")  # would have written {"b"} alone over {"a"}
    assert sorted(json.loads((tmp_path / "jobs.json").read_text())) == ["a", "b"]


def test_a_dry_run_prints_the_array_script_and_submits_nothing(tmp_path, capsys, monkeypatch):
    from minimax.cli.sweep import main as sweep  # noqa: PLC0415

    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))  # a dry run needs no sbatch
    sweep(["--grid", "lr=1e-3,3e-3", "--out-dir", str(tmp_path / "out"), "--executor", "slurm", "--dry-run",
           "--slurm-cpus-per-task", "4", "--num-updates", "10"])
    shown = capsys.readouterr().out
    assert "dr-lr=1e-3-seeds0: python -m minimax.cli.train --preset dr --lr 1e-3" in shown
    for line in ("#SBATCH --array=0-1%2", "#SBATCH --cpus-per-task=4", "#SBATCH --job-name=minimax-out",
                 "#SBATCH --signal=USR2@90"):
        assert line in shown, line
    assert not (tmp_path / "out" / "jobs" / "jobs.json").exists()
