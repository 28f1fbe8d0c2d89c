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
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from minimax.checkpoint import Checkpointer, CheckpointError
from minimax.build import build_runner, device_layout, evaluated_params, make_evaluator
from minimax.config import PRESETS, ConfigError, TrainConfig, flag
from minimax.metrics import RUN_TOTALS, log_columns, mean_row, summarize
from minimax.run_logs import RunLogger
from minimax.devices import (DeviceError, DeviceLayout, distribute_init, distribute_step, initialize_distributed,
                             join_hosts, seed_params, to_host)

# Options a resumed run may change: they do not alter what an update computes.
RESUME_OVERRIDABLE = {"resume", "num_updates", "progress", "wandb", "wandb_project", "keep_checkpoints", "buffer_png",
                      "eval_every", "checkpoint_every", "overwrite", "preset", "coordinator_address",
                      "num_processes", "process_id"}


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


def prepare_run_dir(cfg: TrainConfig):
    run_dir = cfg.run_dir
    if cfg.resume:
        if not (run_dir / "config.json").exists():
            raise RunError(f"--resume: no run to resume at {run_dir} (no config.json)")
        return run_dir
    if run_dir.exists() and any(run_dir.iterdir()):
        if not cfg.overwrite:
            raise RunError(f"run directory {run_dir} already exists: pass --resume to continue it, "
                           f"--overwrite to replace it, or choose another --run-name")
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg.save(run_dir / "config.json")
    return run_dir


def _sync(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils  # noqa: PLC0415

        multihost_utils.sync_global_devices(name)


def seed_rows(metrics: dict, layout: DeviceLayout) -> list[dict]:
    """A chunk's metrics -> one summarized row per seed."""
    metrics = to_host(metrics)
    if not layout.multi_seed:
        return [summarize(metrics)]
    return [summarize({k: v[i] for k, v in metrics.items()}) for i in range(len(layout.seeds))]


def save_buffer_pictures(buffer, cfg: TrainConfig, layout: DeviceLayout, out_dir, update: int, lead: bool) -> None:
    """`<out_dir>/update<u>[-seed<s>].png`: the highest-weighted levels of each seed's buffer."""
    from minimax.curricula.buffer_view import buffer_picture  # noqa: PLC0415
    from minimax.envs.maze.render import save_png  # noqa: PLC0415

    host = to_host(buffer)  # every process takes part
    if not lead:
        return
    for i, seed in enumerate(layout.seeds):
        mine = jax.tree.map(lambda x, i=i: x[i], host) if layout.multi_seed else host
        image = buffer_picture(mine, cfg.buffer, cfg.buffer_png)
        if image is not None:
            suffix = f"-seed{seed}" if layout.multi_seed else ""
            save_png(image, out_dir / f"update{update:07d}{suffix}.png")


def start_state(cfg: TrainConfig, checkpoints: Checkpointer, init, init_keys, abstract, layout: DeviceLayout):
    """`(state, update, counters)`: from the latest checkpoint with --resume, else fresh. `counters`
    holds per-seed `cycles`, `env_steps` and `gradient_updates` (they differ between seeds of the
    PLR family, whose steps are cycles with or without a gradient update)."""
    n = len(layout.seeds)
    if not cfg.resume:
        return init(init_keys), 0, {k: np.zeros(n, np.int64) for k in RUN_TOTALS}
    if checkpoints.latest_step() is None:
        raise RunError(f"--resume: {cfg.run_dir} has no checkpoint yet; start it again without --resume "
                       f"(with --overwrite)")
    state, meta = checkpoints.restore(abstract)
    meta.setdefault("gradient_updates", meta["update"])  # checkpoints of runs whose every step trained
    return state, int(meta["update"]), {k: np.broadcast_to(np.asarray(meta[k], np.int64), (n,)).copy()
                                        for k in RUN_TOTALS}


def open_logger(cfg: TrainConfig, run_dir, metrics_abstract: dict, evaluator, layout: DeviceLayout,
                update: int) -> RunLogger:
    """The run's logger, its columns from one step's metrics (resumed: rows after `update` dropped)."""
    if layout.multi_seed:
        metrics_abstract = {k: jax.ShapeDtypeStruct(v.shape[1:], v.dtype) for k, v in metrics_abstract.items()}
    columns = log_columns(metrics_abstract, evaluator.metric_names if evaluator else (), layout.multi_seed)
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


def train(cfg: TrainConfig, on_checkpoint=None) -> dict:
    """Run (or resume) the experiment `cfg` describes; returns the last log row (with several
    seeds, the across-seed mean row). `on_checkpoint(update) -> bool`, when given, is called
    after every checkpoint save; returning True stops the run there (resume continues it)."""
    initialize_distributed(cfg.coordinator_address, cfg.num_processes, cfg.process_id)
    layout = device_layout(cfg)
    if not cfg.resume:
        cfg = cfg.replace(devices=layout.devices)  # the config records the devices used
    runner = build_runner(cfg, layout.shard)  # first: a bad setup must not leave a run directory behind
    lead = jax.process_index() == 0  # only process 0 writes logs and the config
    run_dir = prepare_run_dir(cfg) if lead else cfg.run_dir
    _sync("run directory ready")
    evaluator = make_evaluator(cfg) if cfg.eval.eval_every and lead else None
    init_keys, eval_keys = seed_keys(layout)
    checkpoints = Checkpointer(run_dir / "checkpoints", keep=cfg.keep_checkpoints)
    init = jax.jit(distribute_init(runner, layout))
    abstract = jax.eval_shape(init, init_keys)

    state, update, counters = start_state(cfg, checkpoints, init, init_keys, abstract, layout)

    programs: dict[int, object] = {}

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
    progress = Progress(cfg.num_updates, update, int(counters["env_steps"].sum()), enabled=cfg.progress and lead)
    try:
        while update < cfg.num_updates:
            length = min(cfg.log_every, cfg.num_updates - update)
            run_chunk = program(length)
            t0 = time.perf_counter()
            state, metrics = run_chunk(state)
            rows = seed_rows(metrics, layout)  # waits for the chunk
            update += length  # steps: one gradient update each (DR, PAIRED) or one cycle (the PLR family)
            rows = log_rows(rows, layout, update, counters, time.perf_counter() - t0)
            final = update >= cfg.num_updates
            if cfg.eval.eval_every and (update % cfg.eval.eval_every == 0 or final):
                params = seed_params(evaluated_params(cfg, state.train_state.params, layout.multi_seed),
                                     layout)  # every process takes part
                if evaluator is not None:
                    for r, p, k in zip(rows, params, eval_keys):
                        r.update({f"eval/{n}": v for n, v in evaluator(jax.random.fold_in(k, update), p).items()})
            if cfg.buffer_png and hasattr(state, "buffer"):
                save_buffer_pictures(state.buffer, cfg, layout, run_dir / "buffer", update, lead)
            row = mean_row(rows) if layout.multi_seed else rows[0]
            if logger is not None:
                logger.log_rows(rows + ([row] if layout.multi_seed else []))
            if (cfg.checkpoint_every and update % cfg.checkpoint_every == 0) or final:
                counts = (lambda a: a.tolist()) if layout.multi_seed else (lambda a: int(a[0]))
                checkpoints.save(update, state, {"update": update, **{k: counts(v) for k, v in counters.items()}})
                if on_checkpoint is not None and on_checkpoint(update) and not final:
                    break
            progress.advance(update, int(counters["env_steps"].sum()), row["sps"], row.get("train/return"))
    finally:
        progress.close()
        if logger is not None:
            logger.close()
    return row


class Progress:
    """A rich progress bar: updates, env steps, steps per second (measured) and ETA."""

    def __init__(self, total: int, done: int, env_steps: int, enabled: bool = True):
        self._bar = None
        if not enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn  # noqa: PLC0415
        from rich.progress import Progress as RichProgress  # noqa: PLC0415

        self._bar = RichProgress(TextColumn("updates"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[stats]}"), TimeRemainingColumn(), transient=False)
        self._task = self._bar.add_task("train", total=total, completed=done,
                                        stats=f"env steps {env_steps:,}")
        self._bar.start()

    def advance(self, done: int, env_steps: int, sps: float, train_return) -> None:
        if self._bar is None:
            return
        ret = "" if train_return is None or train_return != train_return else f" return {train_return:.3f}"
        self._bar.update(self._task, completed=done, stats=f"env steps {env_steps:,}  {sps:,.0f} steps/s{ret}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


# --------------------------------------------------------------------------- command line


def parse_config(argv: list[str] | None = None) -> TrainConfig:
    """Preset defaults (or a resumed run's saved config), overridden by the command line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset", default="dr")
    pre.add_argument("--resume", action="store_true")
    for name in ("run-name", "out-dir", "method", "seed"):
        pre.add_argument(f"--{name}")
    known, _ = pre.parse_known_args(argv)
    if known.preset not in PRESETS:
        raise ConfigError(f"--preset must be one of {', '.join(PRESETS)}, got {known.preset!r}")
    default = PRESETS[known.preset]
    saved = None
    if known.resume and "-h" not in argv and "--help" not in argv:
        probe = default.replace(**{k: v for k, v in dict(
            run_name=known.run_name, out_dir=known.out_dir, method=known.method,
            seed=None if known.seed is None else int(known.seed)).items() if v is not None})
        path = probe.run_dir / "config.json"
        if not path.exists():
            raise RunError(f"--resume: no run to resume at {probe.run_dir} (no config.json)")
        saved = TrainConfig.load(path)
        default = saved.replace(resume=True)
    # The groups' flags are flat (`--lr`, not `--ppo.lr`): OmitArgPrefixes.
    cfg = tyro.cli(tyro.conf.OmitArgPrefixes[TrainConfig], default=default, args=argv, prog="train.py",
                   description=TrainConfig.__doc__ + " Presets: " + ", ".join(PRESETS) + " (--preset).")
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
    except (ConfigError, RunError, CheckpointError, DeviceError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
