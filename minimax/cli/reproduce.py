"""Reproduce the minimax report's Table 2 with one command: `python -m minimax.cli.reproduce`
(and its Table 4, the S5 student: `--methods dr_s5,paired_s5,plr_s5,pplr_s5,accel_s5,paccel_s5`).

For each method (presets `dr`, `paired`, `plr` = PLR⊥, `pplr` = PLR∥, `accel`, `paccel` = ACCEL∥), train
`--seeds` seeds in one vmapped program (minimax.training.loop's `--num-seeds`) for `--updates`
PPO updates of the student (default: the report's 30,000, counted as the release counts them:
robust PLR and ACCEL play their cycles without a gradient on top, about 2x and 1.25x DR's
cycles; `table.md` gives each method's expected cycles and env steps), evaluate every seed on the
`--suite` mazes (default
`dcd12`, `--eval-episodes` 100 per maze, with minimax.evaluation.evaluate's code), and write
`<out-dir>/table.md` and `<out-dir>/results.json`: per maze and for the suite mean, the mean
solved rate and return with 95% Student-t confidence intervals across seeds, next to the
report's Table 2 (or Table 4) solved rates and wall times, plus our training and evaluation wall times.

It resumes. Runs live in `<out-dir>/runs/<method>/` (ordinary minimax.training.loop run directories);
`<out-dir>/state.json` keeps the wall time each method's training and evaluation have used,
summed over commands, and each seed's evaluation as soon as it is done. Rerunning the same
command continues every method from its latest checkpoint, never retrains a method that has
reached `--updates`, and never redoes a stored evaluation (unless `--reevaluate`). With
`--time-limit SECONDS` the command stops cleanly at the first checkpoint (or finished seed
evaluation) past that wall time and exits with status 3: rerun it to continue, e.g.

    while python -m minimax.cli.reproduce --time-limit 420; [ $? -eq 3 ]; do :; done
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

import tyro

from minimax.training.checkpoint import CheckpointError
from minimax.config import ConfigError, TrainConfig
from minimax.core.options import flag, parse_assignments
from minimax.config import PRESETS
from minimax.cli.cluster import ClusterConfig, check_cluster, updates_done
from minimax.cli.reproduce_state import ReproduceError, State, hardware, note_hardware
from minimax.cli.reproduce_table import LSTM_METHODS, METHODS, REPORT, REPORT_UPDATES, write_outputs

EXIT_RERUN = 3  # stopped at --time-limit: rerun the same command to continue

# TrainConfig options this command sets itself (or through its own flags); --set cannot change them.
RESERVED = {"preset": "--methods", "method": "--methods", "seed": "--seeds", "seeds": "--seeds",
            "num_seeds": "--seeds", "run_name": "--out-dir", "out_dir": "--out-dir", "num_updates": "--updates",
            "resume": None, "overwrite": None, "log_every": "--log-every", "checkpoint_every": "--checkpoint-every",
            "progress": "--progress/--no-progress"}


class TimeLimitReached(Exception):
    """--time-limit passed at a point where progress is saved."""


@dataclasses.dataclass(frozen=True)
class ReproduceConfig:
    """Reproduce the minimax report's Table 2: train each method's seeds, evaluate on the OOD mazes,
    write <out-dir>/table.md and results.json. Rerun the same command to resume."""

    methods: str = ",".join(LSTM_METHODS)
    """Comma-separated presets to run: dr, paired, plr (PLR⊥, robust PLR), pplr (PLR∥), accel, paccel (ACCEL∥) (Table 2,
    LSTM student), or their S5-student versions dr_s5, paired_s5, plr_s5, pplr_s5, accel_s5, paccel_s5 (Table 4)."""
    updates: int = REPORT_UPDATES
    """PPO updates of the student per method (the report: 30,000), as the minimax release counts them (robust PLR and
    ACCEL play as many cycles without a gradient as they need in between); raising it later extends the runs."""
    seeds: int = 5
    """Seeds per method (0 .. N-1), trained together in one vmapped program."""
    out_dir: str = "reproduce"
    """Output directory: runs/<method>/ (run directories), state.json, table.md, results.json."""
    eval_episodes: int = 100
    """Episodes per maze and seed (parallel envs, each env's first episode counts)."""
    suite: str = "dcd12"
    """Evaluation mazes: a suite name (dcd12, validation) or comma-separated maze names."""
    time_limit: float = 0.0
    """Stop cleanly at the first checkpoint (or finished seed evaluation) after this many seconds, exit 3 (0 = none)."""
    checkpoint_every: int = 200
    """Save each run every this many updates (a multiple of --log-every): the most work a kill can lose."""
    log_every: int = 10
    """Updates per compiled chunk and log row (minimax.training.loop's --log-every)."""
    set: tyro.conf.UseAppendAction[tuple[str, ...]] = ()
    """KEY=VALUE: override a training option (minimax.training.loop's flag without --, e.g. recurrent_size=16); repeatable."""
    reevaluate: bool = False
    """Evaluate again even where this output directory holds an evaluation (use in one command, not in a chain)."""
    progress: bool = True
    """Show minimax.training.loop's progress bar."""
    compile_cache: bool = True
    """Keep compiled programs in <out-dir>/jax_cache so a chain of commands compiles each program once."""
    cluster: ClusterConfig = ClusterConfig()
    """Where the methods train (--executor local|slurm: each method one job; then this command evaluates)."""


# --------------------------------------------------------------------------- inputs


def parse_methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        raise ReproduceError(f"--methods names no method (choose from {', '.join(METHODS)})")
    for m in methods:
        if m not in METHODS:
            raise ReproduceError(f"--methods: unknown method {m!r} (choose from {', '.join(METHODS)})")
    if len(set(methods)) != len(methods):
        raise ReproduceError(f"--methods names a method twice: {text!r}")
    return methods


def parse_overrides(items) -> dict:
    """`("recurrent_size=16", ...)` -> `{"recurrent_size": 16}`, typed like TrainConfig's options."""
    try:
        return parse_assignments(items, TrainConfig.option_types(), RESERVED)
    except ConfigError as e:
        raise ReproduceError(str(e)) from None


def method_config(method: str, rc: ReproduceConfig, overrides: dict) -> TrainConfig:
    """The TrainConfig of one method: its preset, this command's size and the --set overrides."""
    try:
        return PRESETS[method].replace(**overrides, seed=0, seeds="", num_seeds=rc.seeds,
                                   num_updates=rc.updates, out_dir=str(Path(rc.out_dir) / "runs"),
                                   run_name=method, log_every=rc.log_every, checkpoint_every=rc.checkpoint_every,
                                   progress=rc.progress, resume=False, overwrite=False)
    except ConfigError as e:
        raise ReproduceError(f"preset {method} with these options: {e}") from None


def validate(rc: ReproduceConfig):
    """Every input checked before any work: `(methods, overrides, configs, mazes)`."""
    from minimax.envs.registry import get_env  # noqa: PLC0415
    from minimax.evaluation.evaluate import EvaluateError, load_mazes  # noqa: PLC0415

    for name, low in (("updates", 1), ("seeds", 1), ("eval_episodes", 1), ("checkpoint_every", 1),
                      ("log_every", 1)):
        v = getattr(rc, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise ReproduceError(f"{flag(name)} must be an int >= {low}, got {v!r}")
    check_cluster(rc.cluster)
    if rc.cluster.jobs and rc.time_limit:
        raise ReproduceError("--time-limit stops this process's own training; jobs have --slurm-time (a job that "
                             "reaches it resumes by itself): give one of them")
    if not rc.time_limit >= 0:  # NaN fails too
        raise ReproduceError(f"--time-limit must be >= 0 seconds (0 = none), got {rc.time_limit!r}")
    if not rc.out_dir.strip():
        raise ReproduceError("--out-dir must not be empty")
    methods = parse_methods(rc.methods)
    overrides = parse_overrides(rc.set)
    configs = {m: method_config(m, rc, overrides) for m in methods}
    try:
        env = next(iter(configs.values())).env
        mazes = load_mazes(rc.suite, [], get_env(env.env_name), env)
    except EvaluateError as e:
        raise ReproduceError(f"--suite: {e}") from None
    return methods, overrides, configs, mazes


# --------------------------------------------------------------------------- the protocol


class Reproduction:
    def __init__(self, rc: ReproduceConfig):
        self.rc = rc
        self.methods, self.overrides, self.configs, self.mazes = validate(rc)
        self.out = Path(rc.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.state = State(self.out / "state.json")
        self.start, self.wall_start = time.perf_counter(), time.time()
        self.did_work = False  # every command makes progress before the time limit can stop it
        self.hw = None

    # ------------------------------------------------------------ clock
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def out_of_time(self) -> bool:
        return bool(self.rc.time_limit) and self.elapsed() >= self.rc.time_limit

    def checkpoint_stop(self, what: str) -> None:
        """Before a unit of work: stop if the time is up and this command already made progress."""
        if self.did_work and self.out_of_time():
            raise TimeLimitReached(what)

    def hardware(self) -> dict:
        if self.hw is None:
            self.hw = hardware()
        return self.hw

    # ------------------------------------------------------------ training
    def trained_updates(self, cfg: TrainConfig) -> int:
        return updates_done(cfg.run_dir)

    def progress(self, method: str, cfg: TrainConfig) -> tuple[int, TrainConfig | None]:
        """`(updates done, the run's saved config or None)`, checked before any training (in process or in a
        job): a run past `--updates`, or one started with other settings, is a `ReproduceError`."""
        done, target = self.trained_updates(cfg), self.rc.updates
        if done > target:
            raise ReproduceError(f"{cfg.run_dir} is trained to {done} updates, more than --updates {target}; "
                                 f"give --updates {done} or more, or another --out-dir")
        if not done:
            return 0, None
        saved = TrainConfig.load(cfg.run_dir / "config.json")
        self.compatible(method, cfg, saved)
        return done, saved

    def compatible(self, method: str, cfg: TrainConfig, saved: TrainConfig) -> None:
        from minimax.training.loop import RESUME_OVERRIDABLE  # noqa: PLC0415

        ignore = set(RESUME_OVERRIDABLE) | ({"devices"} if cfg.devices == 0 else set())
        now, kept = cfg.options(), saved.options()
        changed = [n for n in now if n not in ignore and now[n] != kept[n]]
        if changed:
            option = lambda n: RESERVED.get(n) or f"--set {n}"  # noqa: E731  (this command's flags)
            raise ReproduceError(
                f"{cfg.run_dir} holds a {method} run with other settings ("
                + ", ".join(f"{option(n)}: saved {kept[n]!r}, now {now[n]!r}" for n in changed)
                + "); give the options it was started with, another --out-dir, or delete that directory")

    def train_method(self, method: str) -> None:
        from minimax.training.loop import train  # noqa: PLC0415

        cfg, target = self.configs[method], self.rc.updates
        done, saved = self.progress(method, cfg)
        if done == target:
            return
        self.checkpoint_stop(f"{method} is at update {done} of {target}")
        if done:
            cfg = cfg.replace(resume=True, devices=saved.devices)
            entry = self.state.method(method)
        else:  # nothing saved yet (or a run killed before its first checkpoint): start afresh
            cfg = cfg.replace(overwrite=True)
            entry = self.state.reset(method)
        entry["train_sessions"] += 1
        note_hardware(entry, "train", self.hardware())
        self.state.save()
        base, t0 = entry["train_seconds"], time.perf_counter()
        label = REPORT[method]["label"]
        print(f"[reproduce] {label} ({method}): training {len(cfg.seed_list)} seeds, updates {done} -> {target}, "
              f"in {cfg.run_dir}", file=sys.stderr, flush=True)

        def on_checkpoint(update: int) -> bool:
            # Wall time counts up to the last checkpoint of each command: the time that produced
            # the saved progress (compilation included); work after it is redone by the next command.
            entry["train_seconds"] = base + time.perf_counter() - t0
            entry["updates_done"] = update
            self.state.save()
            self.did_work = True
            return self.out_of_time()

        train(cfg, on_checkpoint=on_checkpoint)
        done = self.trained_updates(cfg)
        if done < target:
            raise TimeLimitReached(f"{method} is at update {done} of {target}")

    # ------------------------------------------------------------ evaluation
    def eval_key(self) -> dict:
        return {"checkpoint": self.rc.updates, "suite": self.rc.suite, "mazes": [m.name for m in self.mazes],
                "episodes": self.rc.eval_episodes}

    def evaluate_method(self, method: str) -> None:
        from minimax.evaluation.evaluate import PolicyEvaluator, parse_args  # noqa: PLC0415
        from minimax.evaluation.saved_policies import load_policies  # noqa: PLC0415

        cfg, entry = self.configs[method], self.state.method(method)
        key = self.eval_key()
        ev = entry.get("eval")
        stale = ev is None or any(ev.get(k) != v for k, v in key.items())
        if self.rc.reevaluate and ev is not None and ev.get("started", 0) < self.wall_start:
            stale = True
        if stale:
            ev = entry["eval"] = {**key, "seconds": 0.0, "started": time.time(), "runs": {}}
        todo = [s for s in cfg.seed_list if str(s) not in ev["runs"]]
        if not todo:
            return
        self.checkpoint_stop(f"{method} is trained; {len(todo)} of {len(cfg.seed_list)} seeds to evaluate")
        evaluate_policy = PolicyEvaluator(parse_args([str(cfg.run_dir), "--suite", self.rc.suite,
                                                      "--episodes", str(self.rc.eval_episodes)]))
        policies = {p.seed: p for p in load_policies(cfg.run_dir, self.rc.updates)}
        note_hardware(entry, "eval", self.hardware())
        for seed in todo:
            self.checkpoint_stop(f"{method} is trained; {len(cfg.seed_list) - len(ev['runs'])} of "
                                 f"{len(cfg.seed_list)} seeds to evaluate")
            t0 = time.perf_counter()
            result = evaluate_policy(policies[seed], self.mazes, self.out / "eval" / method)
            seconds = time.perf_counter() - t0
            ev["seconds"] += seconds
            ev["runs"][str(seed)] = result
            self.state.save()
            self.did_work = True
            print(f"[reproduce] {REPORT[method]['label']} ({method}): evaluated seed {seed} on {len(self.mazes)} "
                  f"mazes x {self.rc.eval_episodes} episodes in {seconds:.1f}s", file=sys.stderr, flush=True)

    # ------------------------------------------------------------ all of it
    def run(self) -> bool:
        """Train and evaluate every method; False when stopped at the time limit."""
        if self.rc.compile_cache:
            import jax  # noqa: PLC0415

            if not jax.config.jax_compilation_cache_dir:  # keep a cache the caller set (tests do)
                jax.config.update("jax_compilation_cache_dir", str((self.out / "jax_cache").absolute()))
            os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", jax.config.jax_compilation_cache_dir)  # the jobs' too
        if self.rc.cluster.jobs:
            from minimax.cli.reproduce_jobs import train_in_jobs  # noqa: PLC0415

            if not train_in_jobs(self):
                shown = self.rc.cluster.status or self.rc.cluster.dry_run
                if not shown:
                    print("the jobs are submitted; rerun the same command to wait on them and evaluate (--status: "
                          "where each stands)", file=sys.stderr)
                return shown
        try:
            for method in self.methods:
                self.train_method(method)
                self.evaluate_method(method)
        except TimeLimitReached as stop:
            write_outputs(self)
            print(f"time limit reached ({self.elapsed():.0f}s, --time-limit {self.rc.time_limit:g}): {stop}; "
                  f"progress is saved in {self.out}. Rerun the same command to continue.", file=sys.stderr)
            return False
        table = write_outputs(self)
        print(table)
        return True


# --------------------------------------------------------------------------- outputs


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    from minimax.training.devices import DeviceError  # noqa: PLC0415
    from minimax.evaluation.evaluate import EvaluateError  # noqa: PLC0415
    from minimax.training.stop_signals import RunStopped  # noqa: PLC0415
    from minimax.training.loop import RunError  # noqa: PLC0415

    rc = tyro.cli(tyro.conf.OmitArgPrefixes[ReproduceConfig], args=argv, prog="python -m minimax.cli.reproduce",
                  description=ReproduceConfig.__doc__)
    try:
        finished = Reproduction(rc).run()
    except RunStopped as e:  # SIGTERM / SIGINT: the method in training saved a checkpoint
        print(f"{e}\n(or rerun this reproduce command to continue every method)", file=sys.stderr)
        raise SystemExit(e.exit_status) from None
    except (ReproduceError, ConfigError, RunError, CheckpointError, EvaluateError, DeviceError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if not finished:
        raise SystemExit(EXIT_RERUN)


if __name__ == "__main__":
    main()
