"""The experiment loop: config -> runner -> compiled chunks of updates -> logs, evals, checkpoints.

The host only calls one compiled program, `k` runner steps in a `lax.scan`, then logs the
chunk's metrics (JSONL + CSV under `runs/<run-name>/`, W&B when asked), evaluates on the
validation mazes every `eval_every` updates and saves the whole run state every
`checkpoint_every` updates. Chunk boundaries are multiples of `log_every` counted from
update 0, so a resumed run executes exactly the same programs on exactly the same states
as an uninterrupted one and (on CPU) reports the same numbers.

`python train.py --help` lists every option; `--preset accel` starts from a preset.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from flax.training.train_state import TrainState

from minimax.checkpoint import Checkpointer, CheckpointError
from minimax.build import build_runner, device_layout, env_spec, evaluated_params, make_evaluator
from minimax.config import PRESETS, ConfigError, TrainConfig, flag
from minimax.metrics import RUN_TOTALS, first_nonfinite, log_columns, mean_row, outcome_free, summarize
from minimax.run_lock import LOCK_NAME, RunLock, RunLockError
from minimax.run_logs import RunLogger, read_rows
from minimax.stop_signals import RunStopped, StopSignals, wait_ready
from minimax.devices import (DeviceError, DeviceLayout, distribute_init, distribute_step, initialize_distributed,
                             join_hosts, seed_params, to_host)

# Options a resumed run may change: they do not alter what an update computes.
# Where the run lives (`out_dir`, `run_name`) is not a training option: a moved run resumes.
RESUME_OVERRIDABLE = {"resume", "num_updates", "out_dir", "run_name", "progress", "wandb", "wandb_project",
                      "keep_checkpoints", "buffer_png", "eval_every", "checkpoint_every", "overwrite", "preset",
                      "coordinator_address", "num_processes", "process_id"}


class RunError(RuntimeError):
    """A run cannot start or resume (existing directory, missing checkpoint...)."""


# --------------------------------------------------------------------------- the loop


def seed_keys(layout: DeviceLayout):
    """`(init keys, eval keys)`: per seed s, the split of `key(s)`, so a seed trains the same
    alone or with others."""
    keys = [jax.random.split(jax.random.key(s)) for s in layout.seeds]
    if not layout.multi_seed:
        return keys[0][0], [keys[0][1]]
    return jnp.stack([k[0] for k in keys]), [k[1] for k in keys]


def make_chunk(runner, length: int):
    """`state -> (state, metrics[length])`: `length` runner steps in one `lax.scan`."""
    def chunk(state):
        return jax.lax.scan(lambda s, _: runner.step(s), state, None, length=length)
    return chunk


def prepare_run_dir(cfg: TrainConfig, lock: RunLock) -> Path:
    """The run directory, locked (`lock`) for this process: checked (--resume), created or
    emptied (--overwrite), with the config saved. File-system faults are `RunError`s naming the path."""
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


def _sync(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils  # noqa: PLC0415

        multihost_utils.sync_global_devices(name)


def seed_rows(metrics: dict, layout: DeviceLayout) -> list[dict]:
    """A chunk's metrics (host copies) -> one summarized row per seed."""
    if not layout.multi_seed:
        return [summarize(metrics)]
    return [summarize({k: v[i] for k, v in metrics.items()}) for i in range(len(layout.seeds))]


def save_buffer_pictures(buffer, cfg: TrainConfig, layout: DeviceLayout, out_dir, update: int, lead: bool) -> None:
    """`<out_dir>/update<u>[-seed<s>].png`: the highest-weighted levels of each seed's buffer."""
    from minimax.curricula.buffer_view import buffer_picture  # noqa: PLC0415
    from minimax.envs.images import save_png  # noqa: PLC0415

    render_levels = env_spec(cfg).render_levels
    host = to_host(buffer)  # every process takes part
    if not lead:
        return
    for i, seed in enumerate(layout.seeds):
        mine = jax.tree.map(lambda x, i=i: x[i], host) if layout.multi_seed else host
        image = buffer_picture(mine, cfg.buffer, render_levels, cfg.buffer_png)
        if image is not None:
            suffix = f"-seed{seed}" if layout.multi_seed else ""
            save_png(image, out_dir / f"update{update:07d}{suffix}.png")


def start_state(cfg: TrainConfig, checkpoints: Checkpointer, init, init_keys, abstract, layout: DeviceLayout,
                lead: bool):
    """`(state, update, counters)`: from the newest intact checkpoint with --resume, else fresh.
    `counters` holds per-seed `cycles`, `env_steps` and `gradient_updates` (they differ between
    seeds of the PLR family, whose steps are cycles with or without a gradient update).

    A checkpoint that fails to restore while an older one restores was damaged (a disk fault, a
    copy cut short): it is moved to `<run>/corrupt-checkpoints/` with a warning and the run goes
    on from the older one. When none restores, the newest one's error is raised: then the
    checkpoints do not fit the config, or all are damaged."""
    n = len(layout.seeds)
    if not cfg.resume:
        return init(init_keys), 0, {k: np.zeros(n, np.int64) for k in RUN_TOTALS}
    steps = checkpoints.steps()
    if not steps:
        raise RunError(f"--resume: {cfg.run_dir} has no checkpoint yet; start it again without --resume "
                       f"(with --overwrite)")
    failed: list[tuple[int, CheckpointError]] = []
    for step in reversed(steps):
        try:
            state, meta = checkpoints.restore(abstract, step)
            break
        except CheckpointError as e:
            failed.append((step, e))
    else:
        newest = failed[0][1]
        if len(failed) > 1:
            raise CheckpointError(f"{newest} (and no older checkpoint restores either: updates "
                                  f"{', '.join(str(s) for s, _ in failed[1:])})") from newest
        raise newest
    _sync("checkpoint restored")
    if failed and lead:
        for bad, e in failed:
            moved = checkpoints.set_aside(bad, checkpoints.directory.parent / "corrupt-checkpoints")
            print(f"warning: skipped checkpoint {bad}, which does not restore ({e}); moved it to {moved}",
                  file=sys.stderr)
        print(f"resuming from the newest intact checkpoint, update {step}", file=sys.stderr)
    meta.setdefault("gradient_updates", meta["update"])  # checkpoints of runs whose every step trained
    return state, int(meta["update"]), {k: np.broadcast_to(np.asarray(meta[k], np.int64), (n,)).copy()
                                        for k in RUN_TOTALS}


def open_logger(cfg: TrainConfig, run_dir, metrics_abstract: dict, evaluator, layout: DeviceLayout,
                update: int) -> RunLogger:
    """The run's logger, its columns from one step's metrics (resumed: rows after `update` dropped)."""
    if layout.multi_seed:
        metrics_abstract = {k: jax.ShapeDtypeStruct(v.shape[1:], v.dtype) for k, v in metrics_abstract.items()}
    columns = log_columns(metrics_abstract, evaluator.metric_names if evaluator else (), layout.multi_seed,
                          env_spec(cfg).binary_outcome)
    logger = RunLogger(run_dir, columns, wandb_config=cfg.to_dict() if cfg.wandb else None,
                       wandb_project=cfg.wandb_project, run_name=cfg.name, resume=cfg.resume)
    if cfg.resume:
        logger.truncate_after(update)
    return logger


def log_rows(rows: list[dict], layout: DeviceLayout, update: int, counters: dict, seconds: float) -> list[dict]:
    """A chunk's per-seed rows with the run's totals (`counters`, advanced in place) and its
    timing: the whole program's steps per second."""
    for k in RUN_TOTALS:
        counters[k] += [r[k] for r in rows]
    sps = sum(r["env_steps"] for r in rows) / seconds
    return [{**({"seed": s} if layout.multi_seed else {}), "update": update,
             **{k: int(counters[k][i]) for k in RUN_TOTALS}, "time_s": seconds, "sps": sps,
             **{k: v for k, v in r.items() if k not in RUN_TOTALS}}
            for i, (s, r) in enumerate(zip(layout.seeds, rows))]


class TrainingDiverged(RunError):
    """A loss or a parameter became NaN or infinite: the run stops before checkpointing it."""


def all_params_finite(state) -> jax.Array:
    """True when every parameter of every agent in `state` (students, teacher) is finite."""
    states = [x for x in jax.tree.leaves(state, is_leaf=lambda x: isinstance(x, TrainState))
              if isinstance(x, TrainState)]
    leaves = [x for t in states for x in jax.tree.leaves(t.params) if jnp.issubdtype(x.dtype, jnp.inexact)]
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves])) if leaves else jnp.bool_(True)


def _stop_requested(stop: StopSignals) -> int:
    """The signal to stop on (0: none), agreed by every process (each stops after the same chunk)."""
    signum = stop.requested or 0
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils  # noqa: PLC0415

        signum = int(np.max(multihost_utils.process_allgather(np.int32(signum))))
    return signum


def train(cfg: TrainConfig, on_checkpoint=None) -> dict:
    """Run (or resume) the experiment `cfg` describes; returns the last log row (with several
    seeds, the across-seed mean row). `on_checkpoint(update) -> bool`, when given, is called
    after every checkpoint save; returning True stops the run there (resume continues it).

    The run directory is locked for the whole run (`run_lock.py`). SIGTERM / SIGINT stop it after
    the chunk in flight, with a checkpoint, by raising `RunStopped` (`stop_signals.py`); a NaN or
    infinite loss or parameter stops it with `TrainingDiverged`, and no checkpoint of it is written."""
    initialize_distributed(cfg.coordinator_address, cfg.num_processes, cfg.process_id)
    layout = device_layout(cfg)
    if not cfg.resume:
        cfg = cfg.replace(devices=layout.devices)  # the config records the devices used
    runner = build_runner(cfg, layout.shard)  # first: a bad setup must not leave a run directory behind
    lead = jax.process_index() == 0  # only process 0 writes logs and the config
    lock = RunLock(cfg.run_dir)
    try:
        run_dir = prepare_run_dir(cfg, lock) if lead else cfg.run_dir
        if lock.took_over:
            print(f"took over the lock of process {lock.took_over}, which is no longer running", file=sys.stderr)
        _sync("run directory ready")
        with StopSignals() as stop:
            return _train(cfg, runner, layout, run_dir, lead, stop, on_checkpoint)
    finally:
        lock.release()


def _train(cfg: TrainConfig, runner, layout: DeviceLayout, run_dir: Path, lead: bool, stop: StopSignals,
           on_checkpoint) -> dict:
    evaluator = make_evaluator(cfg) if cfg.eval.eval_every and lead else None
    init_keys, eval_keys = seed_keys(layout)
    checkpoints = Checkpointer(run_dir / "checkpoints", keep=cfg.keep_checkpoints)
    init = jax.jit(distribute_init(runner, layout))
    abstract = jax.eval_shape(init, init_keys)

    state, update, counters = start_state(cfg, checkpoints, init, init_keys, abstract, layout, lead)
    if update >= cfg.num_updates:
        if lead:
            print(f"{run_dir} is already at update {update} (--num-updates {cfg.num_updates}): nothing to do; "
                  f"pass a larger --num-updates to train it further", file=sys.stderr)
        rows = read_rows(run_dir) if lead else []
        return next((r for r in reversed(rows) if r.get("seed", "mean") == "mean" and r["update"] <= update), {})

    programs: dict[int, object] = {}
    params_finite = jax.jit(all_params_finite)

    def chunk_program(length):
        return distribute_step(make_chunk(runner, length), runner, layout)

    def program(length):
        if length not in programs:
            t0 = time.perf_counter()
            programs[length] = jax.jit(chunk_program(length), donate_argnums=0).lower(state).compile()
            if lead:
                print(f"compiled a chunk of {length} updates in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        return programs[length]

    logger = None
    if lead:
        metrics_abstract = jax.eval_shape(chunk_program(1), abstract)[1]
        logger = open_logger(cfg, run_dir, metrics_abstract, evaluator, layout, update)

    row: dict = {}
    binary_outcome = env_spec(cfg).binary_outcome
    progress = Progress(cfg.num_updates, update, int(counters["env_steps"].sum()), enabled=cfg.progress and lead)
    try:
        while update < cfg.num_updates:
            length = min(cfg.log_every, cfg.num_updates - update)
            run_chunk = program(length)
            t0 = time.perf_counter()
            state, metrics = run_chunk(state)
            wait_ready(metrics)  # polls, so a stop signal is seen while the chunk runs
            metrics = to_host(metrics)
            rows = seed_rows(metrics, layout)
            update += length  # steps: one gradient update each (DR, PAIRED) or one cycle (the PLR family)
            rows = log_rows(rows, layout, update, counters, time.perf_counter() - t0)
            rows = rows if binary_outcome else [outcome_free(r) for r in rows]
            diverged = first_nonfinite(metrics)
            if diverged is None and not bool(params_finite(state)):
                diverged = ("a parameter", length - 1, None)
            if diverged is not None:
                if logger is not None:  # the rows that show it, with "nan" / "inf" values
                    logger.log_rows(rows + ([mean_row(rows)] if layout.multi_seed else []))
                raise TrainingDiverged(_diverged_message(diverged, update - length, layout, checkpoints))
            final = update >= cfg.num_updates
            if cfg.eval.eval_every and (update % cfg.eval.eval_every == 0 or final):
                params = seed_params(evaluated_params(cfg, state.train_state.params, layout.multi_seed),
                                     layout)  # every process takes part
                if evaluator is not None:
                    for r, p, k in zip(rows, params, eval_keys):
                        r.update({f"eval/{n}": v for n, v in evaluator(jax.random.fold_in(k, update), p).items()})
            if cfg.buffer_png and hasattr(state, "buffer"):
                save_buffer_pictures(state.buffer, cfg, layout, run_dir / "buffer", update, lead)
            rows = rows if binary_outcome else [outcome_free(r) for r in rows]  # the evaluation's rates
            row = mean_row(rows) if layout.multi_seed else rows[0]
            if logger is not None:
                logger.log_rows(rows + ([row] if layout.multi_seed else []))
            signum = _stop_requested(stop)
            if (cfg.checkpoint_every and update % cfg.checkpoint_every == 0) or final or signum:
                counts = (lambda a: a.tolist()) if layout.multi_seed else (lambda a: int(a[0]))
                checkpoints.save(update, state, {"update": update, **{k: counts(v) for k, v in counters.items()}})
                asked_to_stop = on_checkpoint is not None and on_checkpoint(update)
                if signum and not final:
                    raise RunStopped(_stopped_message(cfg, signum, update, checkpoints), update, signum)
                if asked_to_stop and not final:
                    break
            progress.advance(update, int(counters["env_steps"].sum()), row["sps"], row.get("train/return"))
    except OSError as e:  # the run directory became unwritable, the disk filled up...
        raise RunError(f"cannot write the run's logs: {e.strerror or e}{f' ({e.filename})' if e.filename else ''}; "
                       f"{_last_checkpoint(checkpoints)}") from None
    finally:
        progress.close()
        if logger is not None:
            logger.close()
    if lead and update >= cfg.num_updates:
        print(f"run written to {run_dir}\nevaluate it with: python evaluate.py {run_dir}", file=sys.stderr)
    return row


def _last_checkpoint(checkpoints: Checkpointer) -> str:
    last = checkpoints.latest_step()
    if last is None:
        return "no checkpoint was written yet"
    return f"the last checkpoint is update {last} ({checkpoints.directory / str(last)})"


def _diverged_message(diverged, first_update: int, layout: DeviceLayout, checkpoints: Checkpointer) -> str:
    name, step, seed = diverged
    where = (f"update {first_update + step + 1}" if seed is not None else
             f"updates {first_update + 1}-{first_update + step + 1}")
    of_seed = f" of seed {layout.seeds[seed]}" if seed is not None and layout.multi_seed else ""
    return (f"training diverged: {name}{of_seed} became NaN or infinite at {where}; no checkpoint of it was "
            f"written, {_last_checkpoint(checkpoints)} (lower --lr, raise --max-grad-norm's clipping, or check "
            f"the loss coefficients, and start again)")


def _stopped_message(cfg: TrainConfig, signum: int, update: int, checkpoints: Checkpointer) -> str:
    return (f"stopped by {signal.Signals(signum).name} at update {update} of {cfg.num_updates}: checkpoint "
            f"{checkpoints.directory / str(update)} written; continue with:\n"
            f"  python train.py --resume --out-dir {cfg.out_dir} --run-name {cfg.name}")


def _short(n: float) -> str:
    """`n` in at most 6 characters: 950, 12.3k, 4.56M, 1.2G (a value that rounds up to 1000 of
    a unit takes the next one: 999,700 is 1M, not 1e+03k)."""
    if abs(n) < 999.5:
        return f"{n:.0f}"
    for unit, size in (("k", 1e3), ("M", 1e6)):
        if abs(n) / size < 999.5:
            return f"{n / size:.3g}{unit}"
    return f"{n / 1e9:.3g}G"


class Progress:
    """A rich progress bar of fixed width (at most 80 columns): updates, env steps, measured
    steps per second, the training return (once an episode finished) and the time left."""

    BAR_WIDTH = 12

    def __init__(self, total: int, done: int, env_steps: int, enabled: bool = True):
        self._bar = None
        if not enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn  # noqa: PLC0415
        from rich.progress import Progress as RichProgress  # noqa: PLC0415

        self._bar = RichProgress(TextColumn("updates"), BarColumn(bar_width=self.BAR_WIDTH), MofNCompleteColumn(),
                                 TextColumn("{task.fields[stats]}"), TimeRemainingColumn(), transient=False)
        self._task = self._bar.add_task("train", total=total, completed=done, stats=self.stats(env_steps, None, None))
        self._bar.start()

    @staticmethod
    def stats(env_steps: int, sps: float | None, train_return) -> str:
        """The bar's statistics, always 36 characters wide (no jumping when a value appears)."""
        rate = "-" if sps is None else _short(sps)
        ret = "-" if train_return is None or train_return != train_return else f"{train_return:.3f}"
        return f"{_short(env_steps):>6} steps {rate:>6}/s  return {ret:>6}"

    def advance(self, done: int, env_steps: int, sps: float, train_return) -> None:
        if self._bar is None:
            return
        self._bar.update(self._task, completed=done, stats=self.stats(env_steps, sps, train_return))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


# --------------------------------------------------------------------------- command line


def _given(argv: list[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in argv)


def parse_config(argv: list[str] | None = None) -> TrainConfig:
    """The run's config: preset defaults, or a saved config (`--config PATH`, or the run's own
    with --resume), overridden by the command line.

    A resumed run keeps every option that changes what an update computes; where it lives is
    not one of them, so a run moved or renamed resumes from its new place (`--out-dir`,
    `--run-name`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset", default="dr")
    pre.add_argument("--resume", action="store_true")
    pre.add_argument("--config")
    for name in ("run-name", "out-dir", "method", "seed"):
        pre.add_argument(f"--{name}")
    known, _ = pre.parse_known_args(argv)
    if known.preset not in PRESETS:
        raise ConfigError(f"--preset must be one of {', '.join(PRESETS)}, got {known.preset!r}")
    argv = [a for i, a in enumerate(argv) if not (a == "--config" or a.startswith("--config=")
                                                   or (i and argv[i - 1] == "--config"))]
    default = PRESETS[known.preset]
    if known.config is not None:
        if known.resume:
            raise ConfigError("--config starts a new run from a saved config; --resume continues a run with its "
                              "own config: give one of them")
        path = Path(known.config)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise ConfigError(f"--config: no config file at {path}")
        if _given(argv, "--preset"):
            raise ConfigError("--preset and --config both give the defaults: give one of them")
        default = TrainConfig.load(path).replace(resume=False, overwrite=False)
    saved = None
    if known.resume and "-h" not in argv and "--help" not in argv:
        probe = default.replace(**{k: v for k, v in dict(
            run_name=known.run_name, out_dir=known.out_dir, method=known.method,
            seed=None if known.seed is None else int(known.seed)).items() if v is not None})
        path = probe.run_dir / "config.json"
        if not path.exists():
            raise RunError(f"--resume: no run to resume at {probe.run_dir} (no config.json)")
        saved = TrainConfig.load(path)
        if _given(argv, "--preset") and known.preset != saved.preset:
            raise ConfigError(f"--resume keeps the run's saved config, which started from --preset {saved.preset}: "
                              f"--preset {known.preset} would change nothing (leave it out)")
        # Where the run lives now (it may have been moved or renamed) is where it was found.
        default = saved.replace(resume=True, out_dir=str(probe.run_dir.parent), run_name=probe.run_dir.name)
    # The groups' flags are flat (`--lr`, not `--ppo.lr`): OmitArgPrefixes.
    cfg = tyro.cli(tyro.conf.OmitArgPrefixes[TrainConfig], default=default, args=argv, prog="train.py",
                   description=TrainConfig.__doc__ + " Presets: " + ", ".join(PRESETS) + " (--preset); "
                   "--config PATH starts from a saved config.json instead.")
    if saved is not None:
        given, kept = cfg.options(), saved.options()
        changed = [n for n in given if given[n] != kept[n] and n not in RESUME_OVERRIDABLE]
        if changed:
            raise ConfigError("--resume keeps the run's saved config; these options differ from it: " + ", ".join(
                f"{flag(n)} (saved {kept[n]!r}, given {given[n]!r})" for n in changed))
    return cfg


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        join_hosts(argv)
        cfg = parse_config(argv)
        train(cfg)
    except RunStopped as e:
        print(e, file=sys.stderr)
        raise SystemExit(e.exit_status) from None
    except (ConfigError, RunError, CheckpointError, DeviceError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
