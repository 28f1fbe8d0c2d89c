"""Issue 74: the cluster path against a running SLURM (`scripts/local_slurm.sh`: one node with accounting), not
stand-ins: a sweep is one job array; a job pre-empted with SIGTERM saves, is submitted again and ends with the
rows of an uninterrupted run, and so do one the scheduler requeues and one cut short by its time limit; a
suspended job is reported as such and waited through; a held job is named and trains once released; a job of
two tasks is one two-process run joined over SLURM's own variables; `reproduce` trains through the executor and
tables; a request the cluster cannot give is its refusal in one line.

Skipped where no SLURM answers (`scripts/local_slurm.sh status`), unless `MINIMAX_REQUIRE_SLURM=1` (CI's floor
leg starts one and sets it): then its absence fails."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
import submitit  # noqa: F401  (imported at collection: its logger keeps the streams it finds at import, which a
                 # test's captured ones, closed after the test, must not be)

from minimax.cli import cluster, cluster_runs
from minimax.cli.sweep import main as sweep
from minimax.training.run_logs import read_rows
from run_helpers import without_timing

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: real jobs on a real scheduler

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "local_slurm.sh"
TINY = ["--maze-height", "5", "--maze-width", "5", "--n-walls", "3", "--max-episode-steps", "32", "--n-actions", "3",
        "--recurrent-size", "16", "--num-envs", "8", "--num-steps", "16", "--n-epochs", "2", "--eval-every", "0"]
SLURM = ["--executor", "slurm", "--slurm-gpus-per-job", "0", "--slurm-time", "20"]
TIME_LIMITED_UPDATES = 4000  # 40-60 s of training here: still training when SLURM's warning comes (<= 30 s)


@pytest.fixture(scope="module", autouse=True)
def slurm_cluster():
    up = subprocess.run(["bash", str(SCRIPT), "status"], capture_output=True).returncode == 0
    if not up:
        if os.environ.get("MINIMAX_REQUIRE_SLURM") == "1":
            pytest.fail("MINIMAX_REQUIRE_SLURM=1 but no SLURM answers: sudo scripts/local_slurm.sh start")
        pytest.skip("no SLURM here (sudo scripts/local_slurm.sh start runs one)")


@pytest.fixture
def jobs_env(monkeypatch, tmp_path):
    """Jobs (sbatch exports this environment) compile on the CPU into this process's persistent cache; every job
    the test submitted is cancelled when it ends (a failed test leaves no suspended job holding the node)."""
    import jax

    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", jax.config.jax_compilation_cache_dir)
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setattr(cluster_runs, "POLL_S", {"local": 0.5, "slurm": 1.0})
    yield
    book = tmp_path / "jobs" / "jobs.json"
    ids = {j["job_id"].split("_")[0] for j in json.loads(book.read_text()).values()} if book.exists() else set()
    if ids:
        subprocess.run(["scancel", *sorted(ids)], capture_output=True)


def wait_until(what: str, condition, timeout: float = 600.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen in {timeout:.0f} s")


def session_started(path: Path):
    return path.exists() and path.read_text().strip() and json.loads(path.read_text().splitlines()[0])


def test_a_sweep_is_one_array_that_outlives_a_preemption_and_a_suspension(tmp_path, capsys, jobs_env):
    # Four points that train the same thing (the checkpoint cadence changes nothing an update computes): one
    # pre-empted by SIGTERM as soon as its job starts, one requeued by the scheduler, one suspended and resumed,
    # one left alone as the reference.
    args = ["--grid", "checkpoint_every=6,8,10,60", "--out-dir", str(tmp_path), *SLURM, *TINY,
            "--num-updates", "60", "--log-every", "2"]
    sweep([*args, "--no-wait"])
    names = [f"dr-checkpoint_every={c}-seeds0" for c in (6, 8, 10, 60)]
    jobs = {n: j["job_id"] for n, j in json.loads((tmp_path / "jobs" / "jobs.json").read_text()).items()}
    array = {j.split("_")[0] for j in jobs.values()}
    assert len(array) == 1 and sorted(j.split("_")[1] for j in jobs.values()) == ["0", "1", "2", "3"]  # one array
    sessions = {n: tmp_path / "jobs" / f"{n}.sessions.jsonl" for n in names}
    preempted, requeued, suspended, reference = names

    wait_until(f"{preempted}'s job to start", lambda: session_started(sessions[preempted]))
    subprocess.run(["scancel", "--signal=TERM", jobs[preempted]], check=True)
    wait_until(f"{requeued}'s job to start", lambda: session_started(sessions[requeued]))
    subprocess.run(["scontrol", "requeue", jobs[requeued]], check=True)  # SLURM stops it and queues it again
    wait_until(f"{suspended}'s job to start", lambda: session_started(sessions[suspended]))
    subprocess.run(["scontrol", "suspend", jobs[suspended]], check=True)
    capsys.readouterr()
    sweep([*args, "--status"])
    states = {line.split()[0]: line.split()[2] for line in capsys.readouterr().out.splitlines()[1:]}
    assert states[suspended] == "SUSPENDED", states
    subprocess.run(["scontrol", "resume", jobs[suspended]], check=True)

    sweep(args)  # waits on the live jobs and submits the pre-empted run again: it resumes where it saved
    err = capsys.readouterr().err
    # Its job had ended before this command looked (then it is submitted again at once), or ends while it waits.
    assert f"submitted {preempted} as slurm job" in err or f"{preempted}: stopped by the scheduler's signal" in err
    expected = without_timing(read_rows(tmp_path / reference))
    assert [r["update"] for r in expected] == list(range(2, 61, 2))
    for name in (preempted, requeued, suspended):
        assert cluster_runs.updates_done(tmp_path / name) == 60
        assert without_timing(read_rows(tmp_path / name)) == expected  # every update once, the same numbers
    first, *rest = [s["exit"] for s in cluster.read_sessions(sessions[preempted])]
    assert first in (*cluster.STOPPED_STATUSES, -15) and rest == [0]
    first, *rest = [s["exit"] for s in cluster.read_sessions(sessions[requeued])]
    assert first in (*cluster.STOPPED_STATUSES, -15) and rest == [0]
    assert len({s["job_id"] for s in cluster.read_sessions(sessions[requeued])}) == 1  # the same job, back again
    assert [s["exit"] for s in cluster.read_sessions(sessions[suspended])] == [0]
    states = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", array.pop()], capture_output=True,
                            text=True, check=True).stdout.split()
    assert len(states) == 4, states  # the array's four tasks, each accounted


def test_a_job_at_its_time_limit_saves_comes_back_and_ends_with_an_uninterrupted_runs_rows(tmp_path, jobs_env):
    # A short --slurm-time, made deterministic: once the job trains, its limit is cut to 1 minute, so SLURM's
    # warning (submitit's `--signal=USR2@90`) is due at slurmctld's next look (every 30 s), well before the limit.
    args = ["--grid", "checkpoint_every=100,5000", "--out-dir", str(tmp_path), *SLURM, *TINY,
            "--num-updates", str(TIME_LIMITED_UPDATES), "--log-every", "50"]
    sweep([*args, "--no-wait"])
    limited, reference = [f"dr-checkpoint_every={c}-seeds0" for c in (100, 5000)]
    job = json.loads((tmp_path / "jobs" / "jobs.json").read_text())[limited]["job_id"]
    sessions = tmp_path / "jobs" / f"{limited}.sessions.jsonl"
    wait_until(f"{limited}'s job to start", lambda: session_started(sessions))
    subprocess.run(["scontrol", "update", f"JobId={job}", "TimeLimit=1"], check=True)
    wait_until("its train.py to stop at the warning", lambda: any("exit" in s for s in cluster.read_sessions(sessions)))
    subprocess.run(["scontrol", "update", f"JobId={job}", "TimeLimit=20"], check=True)  # for the requeued job
    sweep(args)  # waits on both: the requeued job resumes from the checkpoint saved at the warning
    ended = cluster.read_sessions(sessions)  # (on a slow machine the requeued job may be warned again: 3 or more)
    assert all(s["exit"] in cluster.STOPPED_STATUSES for s in ended[:-1]) and ended[-1]["exit"] == 0 and len(ended) > 1
    assert {s["job_id"] for s in ended} == {job}  # warned and requeued by submitit, not killed at the limit
    expected = without_timing(read_rows(tmp_path / reference))
    assert [r["update"] for r in expected] == list(range(50, TIME_LIMITED_UPDATES + 1, 50))
    assert without_timing(read_rows(tmp_path / limited)) == expected


def test_a_held_job_is_named_waited_on_and_trains_once_released(tmp_path, capsys, jobs_env):
    args = ["--grid", "lr=3e-3", "--out-dir", str(tmp_path), *SLURM, "--slurm-additional", "hold", *TINY,
            "--num-updates", "2", "--log-every", "1", "--checkpoint-every", "2"]
    sweep([*args, "--no-wait"])  # sbatch --hold: submitted held
    job = json.loads((tmp_path / "jobs" / "jobs.json").read_text())["dr-lr=3e-3-seeds0"]["job_id"]
    capsys.readouterr()
    sweep([*args, "--status"])
    assert "PENDING (JobHeldUser)" in capsys.readouterr().out
    ended = {}
    waiting = threading.Thread(target=lambda: ended.update(value=sweep(args)))  # the command that waits on it
    waiting.start()
    said = []

    named = f"SLURM job {job} is held (JobHeldUser): it starts once released (scontrol release {job})"

    def hold_named():  # what the waiting command has printed so far names the hold and its release
        said.append(capsys.readouterr().err)
        return named in "".join(said)

    wait_until("the waiting command to name the hold", hold_named)
    assert waiting.is_alive()  # waited on, not refused
    subprocess.run(["scontrol", "release", job], check=True)
    waiting.join(timeout=600)
    assert not waiting.is_alive() and "value" in ended
    assert [r["update"] for r in read_rows(tmp_path / "dr-lr=3e-3-seeds0")] == [1, 2]


def test_a_job_of_two_tasks_joins_over_slurms_variables(tmp_path, jobs_env):
    args = ["--grid", "lr=3e-3", "--out-dir", str(tmp_path), *SLURM, "--job-tasks-per-node", "2", *TINY,
            "--num-updates", "2", "--log-every", "1", "--checkpoint-every", "2", "--devices", "2"]
    sweep(args)
    run = tmp_path / "dr-lr=3e-3-seeds0"
    assert [r["update"] for r in read_rows(run)] == [1, 2] and cluster_runs.updates_done(run) == 2
    ended = sorted(cluster.read_sessions(tmp_path / "jobs" / "dr-lr=3e-3-seeds0.sessions.jsonl"),
                   key=lambda s: s["task"])
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
    assert [(s["task"], s["exit"], s["backend"]) for s in ended] == [(0, 0, "cpu (2 x cpu)"), (1, 0, "cpu (2 x cpu)")]
    for s in ended:
        i = s["args"].index("--coordinator-address")
        assert s["args"][i:i + 6] == ["--coordinator-address", f"{host}:{cluster.coordinator_port(s['job_id'])}",
                                      "--num-processes", "2", "--process-id", str(s["task"])]


@pytest.mark.parametrize("request_, refusal", [
    # sbatch refuses more memory than the node has at once ...
    (["--slurm-mem", "99999999M"], "error: --executor slurm: submitting 1 job(s) failed: sbatch: error: Memory "
                                   "specification can not be satisfied"),
    # ... but takes more CPUs than it has, and the job would wait forever: it is cancelled and named
    (["--slurm-cpus-per-task", "4096"], "as asked (PartitionConfig: more CPUs, memory, nodes or time than the "
                                        "partition gives"),
])
def test_a_request_the_cluster_cannot_give_is_one_line(tmp_path, capsys, jobs_env, request_, refusal):
    with pytest.raises(SystemExit) as exit_:
        sweep(["--grid", "lr=3e-3", "--out-dir", str(tmp_path), *SLURM, *request_, *TINY])
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert refusal in line, line
    live = subprocess.run(["squeue", "-h", "-o", "%i", "-u", os.environ.get("USER", "root")], capture_output=True,
                          text=True).stdout.split()
    book = tmp_path / "jobs" / "jobs.json"
    assert not book.exists() or not {j["job_id"] for j in json.loads(book.read_text()).values()} & set(live)


def test_reproduce_trains_its_methods_as_slurm_jobs_and_tables_them(tmp_path, jobs_env):
    from minimax.cli.reproduce import main as reproduce  # noqa: PLC0415

    sets = ["maze_height=5", "maze_width=5", "n_walls=3", "max_episode_steps=32", "n_actions=3", "recurrent_size=16",
            "num_envs=8", "num_steps=16", "n_epochs=2", "lr=3e-3", "eval_every=0"]
    reproduce(["--methods", "dr", "--seeds", "2", "--updates", "4", "--out-dir", str(tmp_path), "--eval-episodes", "2",
               "--suite", "validation", "--log-every", "2", "--checkpoint-every", "4", "--no-progress", *SLURM,
               *[a for s in sets for a in ("--set", s)]])
    doc = json.loads((tmp_path / "results.json").read_text())
    m = doc["methods"]["dr"]
    assert (m["status"], m["updates_done"], m["train_sessions"]) == ("done", 4, 1)
    assert m["hardware"][0]["platform"] == "cpu" and (tmp_path / "table.md").exists()
    job = json.loads((tmp_path / "jobs" / "jobs.json").read_text())["dr"]
    assert job["executor"] == "slurm"
    state = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", job["job_id"]], capture_output=True,
                           text=True).stdout.split()
    assert state == ["COMPLETED"], state
