"""The experiment loop: config -> runner -> compiled chunks of updates -> logs, evals, checkpoints.

The host only calls one compiled program, `k` units of the budget in a `lax.scan` (a unit is one
PPO update by default, as many rollout cycles as that takes: `budget.py`), then logs the chunk's
metrics (JSONL + CSV under `runs/<run-name>/`, W&B when asked), evaluates on the validation mazes
every `eval_every` units and saves the whole run state every `checkpoint_every` units. Chunk
boundaries are multiples of `log_every` counted from 0, so a resumed run executes exactly the same
programs on exactly the same states as an uninterrupted one and (on CPU) reports the same numbers.

The command line is `training/cli.py` (`python train.py --help` lists every option).
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from flax.training.train_state import TrainState

from minimax.training.budget import COUNTER, LABEL, STALLED, stalled_message, unit_size
from minimax.training.checkpoint import Checkpointer, newest_that_restores
from minimax.training.builder import build_runner, device_layout, env_spec, evaluated_params, make_evaluator
from minimax.config import TrainConfig, episode_limit
from minimax.config.hyperparams import hp_arrays
from minimax.core.metrics import RUN_TOTALS, first_nonfinite, log_columns, mean_row, outcome_free
from minimax.training.run_dirs import RunError, missing_dirs, prepare_run_dir, remove_unkept  # noqa: F401
from minimax.training.run_lock import RunLock
from minimax.training.run_logs import RunLogger, log_rows, read_rows, seed_rows
from minimax.training.progress import Progress, buffer_filling
from minimax.training.stop_signals import RunStopped, StopSignals, wait_ready
from minimax.training.devices import (DeviceLayout, committed, initialize_distributed, seed_params, split_seed_key,
                                      to_host)
from minimax.training.programs import programs

# Options a resumed run may change: they do not alter what an update computes.
# Where the run lives (`out_dir`, `run_name`) is not a training option: a moved run resumes.
RESUME_OVERRIDABLE = {"resume", "num_updates", "out_dir", "run_name", "progress", "wandb", "wandb_project",
                      "keep_checkpoints", "buffer_png", "eval_every", "checkpoint_every", "overwrite", "preset",
                      "coordinator_address", "num_processes", "process_id"}


class TrainingDiverged(RunError):
    """A loss or a parameter became NaN or infinite: the run stops before checkpointing it."""


class BudgetStalled(RunError):
    """A unit of the budget could not be spent: the run makes no progress (`budget.py`)."""


# --------------------------------------------------------------------------- the loop


def seed_keys(layout: DeviceLayout):
    """`(init keys, eval keys)`: per seed s, the split of `key(s)`, so a seed trains the same
    alone or with others."""
    keys = [split_seed_key(jax.random.key(s)) for s in layout.seeds]
    if not layout.multi_seed:
        return keys[0][0], [keys[0][1]]
    return jnp.stack([k[0] for k in keys]), [k[1] for k in keys]


def _sync(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils  # noqa: PLC0415

        multihost_utils.sync_global_devices(name)


def save_buffer_pictures(buffer, cfg: TrainConfig, layout: DeviceLayout, out_dir, update: int, lead: bool) -> None:
    """`<out_dir>/update<u>[-seed<s>].png`: the highest-weighted levels of each seed's buffer."""
    from minimax.training.buffer_view import buffer_picture  # noqa: PLC0415
    from minimax.envs.images import save_png  # noqa: PLC0415

    render_levels = env_spec(cfg).render_levels
    host = to_host(buffer)  # every process takes part
    if not lead:
        return
    for i, seed in enumerate(layout.seeds):
        mine = jax.tree.map(lambda x, i=i: x[i], host) if layout.multi_seed else host
        image = buffer_picture(mine, cfg.buffer, render_levels, cfg.curriculum.buffer_png)
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
        return committed(init(init_keys)), 0, {k: np.zeros(n, np.int64) for k in RUN_TOTALS}
    steps = checkpoints.steps()
    if not steps:
        raise RunError(f"--resume: {cfg.run_dir} has no checkpoint yet; start it again without --resume "
                       f"(with --overwrite)")
    step, (state, meta), failed = newest_that_restores(steps, lambda s: checkpoints.restore(abstract, s))
    _sync("checkpoint restored")
    if failed and lead:
        for bad, e in failed:
            moved = checkpoints.set_aside(bad, checkpoints.directory.parent / "corrupt-checkpoints")
            print(f"warning: skipped checkpoint {bad}, which does not restore ({e}); moved it to {moved}",
                  file=sys.stderr)
        print(f"resuming from the newest intact checkpoint, update {step}", file=sys.stderr)
    meta.setdefault("gradient_updates", meta["update"])  # checkpoints of runs whose every step trained
    if meta.get("budget", cfg.budget) != cfg.budget:
        raise RunError(f"--resume: the checkpoint at update {step} counts --budget {meta['budget']}, the run's "
                       f"config --budget {cfg.budget}: the config was edited; restore its budget to resume")
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
    infinite loss or parameter stops it with `TrainingDiverged`, and no checkpoint of it is written;
    a run that cannot spend its budget stops with `BudgetStalled`. A new run that fails before its
    first log row or checkpoint removes the directory it created (`run_dirs.remove_unkept`)."""
    initialize_distributed(cfg.coordinator_address, cfg.num_processes, cfg.process_id)
    layout = device_layout(cfg)
    if not cfg.resume:
        cfg = cfg.replace(devices=layout.devices)  # the config records the devices used
    runner = build_runner(cfg, layout.shard)  # first: a bad setup must not leave a run directory behind
    lead = jax.process_index() == 0  # only process 0 writes logs and the config
    lock = RunLock(cfg.run_dir)
    created = missing_dirs(cfg.run_dir) if lead and not cfg.resume else []
    try:
        run_dir = prepare_run_dir(cfg, lock) if lead else cfg.run_dir
        if lock.took_over:
            print(f"took over the lock of process {lock.took_over}, which is no longer running", file=sys.stderr)
        _sync("run directory ready")
        with StopSignals() as stop:
            return _train(_Loop(cfg, runner, layout, run_dir, lead), stop, on_checkpoint)
    except BaseException:
        remove_unkept(created)  # nothing worth keeping: the same command can simply run again
        raise
    finally:
        lock.release()


def _train(loop: "_Loop", stop: StopSignals, on_checkpoint) -> dict:
    """The loop, one chunk of `--log-every` units at a time: run, check, evaluate, log, checkpoint."""
    cfg = loop.cfg
    if loop.update >= cfg.num_updates:
        return loop.nothing_to_do()
    logger = loop.open_logger()
    progress = Progress(cfg.num_updates, loop.update, int(loop.counters["env_steps"].sum()),
                        enabled=cfg.progress and loop.lead, unit=LABEL[cfg.budget],
                        filling=buffer_filling(cfg, loop.runner, loop.counters))
    row: dict = {}
    try:
        while loop.update < cfg.num_updates:
            rows, metrics = loop.run_chunk()
            loop.check_finite(rows, metrics, logger)
            final = loop.update >= cfg.num_updates
            if cfg.eval.eval_every and (loop.update % cfg.eval.eval_every == 0 or final):
                loop.evaluate(rows)
            if cfg.curriculum.buffer_png and hasattr(loop.state, "buffer"):
                save_buffer_pictures(loop.state.buffer, cfg, loop.layout, loop.run_dir / "buffer", loop.update,
                                     loop.lead)
            rows = rows if loop.binary_outcome else [outcome_free(r) for r in rows]
            row = mean_row(rows) if loop.layout.multi_seed else rows[0]
            if logger is not None:
                logger.log_rows(rows + ([row] if loop.layout.multi_seed else []))
            signum = _stop_requested(stop)
            if (cfg.checkpoint_every and loop.update % cfg.checkpoint_every == 0) or final or signum:
                loop.save_checkpoint()
                asked_to_stop = on_checkpoint is not None and on_checkpoint(loop.update)
                if signum and not final:
                    raise RunStopped(_stopped_message(cfg, signum, loop.update, loop.checkpoints), loop.update,
                                     signum)
                if asked_to_stop and not final:
                    break
            progress.advance(loop.update, int(loop.counters["env_steps"].sum()), row["sps"], row.get("train/return"),
                             buffer_filling(cfg, loop.runner, loop.counters, rows))
    except OSError as e:  # the run directory became unwritable, the disk filled up...
        raise RunError(f"cannot write the run's logs: {e.strerror or e}{f' ({e.filename})' if e.filename else ''}; "
                       f"{_last_checkpoint(loop.checkpoints)}") from None
    finally:
        progress.close()
        if logger is not None:
            logger.close()
    if loop.lead and loop.update >= cfg.num_updates:
        print(f"run written to {loop.run_dir}\nevaluate it with: python evaluate.py {loop.run_dir}", file=sys.stderr)
    return row


class _Loop:
    """The host side of one run: the run state, the budget spent (`update`, in units of `--budget`;
    `counters`: per-seed cycles, env steps and gradient updates), the compiled chunks, the evaluator
    and the checkpoints."""

    def __init__(self, cfg: TrainConfig, runner, layout: DeviceLayout, run_dir: Path, lead: bool):
        self.cfg, self.runner, self.layout, self.run_dir, self.lead = cfg, runner, layout, run_dir, lead
        self.evaluator = make_evaluator(cfg) if cfg.eval.eval_every and lead else None
        init_keys, self.eval_keys = seed_keys(layout)
        self.checkpoints = Checkpointer(run_dir / "checkpoints", keep=cfg.keep_checkpoints)
        # The process's programs for this run's shape (`programs.py`): a resume or another value of a traced
        # option runs the chunks compiled before; states come from their runner's `init`.
        self.programs = programs(cfg, layout)
        self.hp = hp_arrays(cfg, repeat=len(layout.seeds) if layout.multi_seed else 1)
        self.abstract = jax.eval_shape(self.programs.init, init_keys)
        self.state, self.update, self.counters = start_state(cfg, self.checkpoints, self.programs.init, init_keys,
                                                             self.abstract, layout, lead)
        if cfg.resume and lead:  # what the resumed run trains to (an extension's --num-updates, ...) from now on
            cfg.replace(resume=False, overwrite=False).save(run_dir / "config.json")
        self.binary_outcome = env_spec(cfg).binary_outcome
        self.params_finite = jax.jit(all_params_finite)

    def nothing_to_do(self) -> dict:
        if self.lead:
            print(f"{self.run_dir} is already at update {self.update} (--num-updates {self.cfg.num_updates}): "
                  f"nothing to do; pass a larger --num-updates to train it further", file=sys.stderr)
        rows = read_rows(self.run_dir) if self.lead else []
        return next((r for r in reversed(rows) if r.get("seed", "mean") == "mean" and r["update"] <= self.update),
                    {})

    def ahead(self):
        """Per seed, how far its budget counter is past `update` units (`budget.make_chunk`)."""
        counter = self.counters[COUNTER[self.cfg.budget]]
        ahead = (counter - self.update * unit_size(self.cfg.budget, self.runner)).astype(np.int32)
        return ahead if self.layout.multi_seed else ahead[0]

    def program(self, length: int):
        return self.programs.chunk(length, self.state, self.ahead(), self.hp, announce=self.lead)

    def open_logger(self) -> RunLogger | None:
        if not self.lead:
            return None
        # The columns from the first chunk's program, which is compiled anyway (a separate shape pass would trace
        # the whole chunk once more: most of a small run's start-up).
        metrics = dict(self.program(self.next_length()).out_info[1])
        metrics.pop(STALLED)
        return open_logger(self.cfg, self.run_dir, metrics, self.evaluator, self.layout, self.update)

    def next_length(self) -> int:
        """The units of the next chunk: a log row's worth, or what is left of the budget."""
        return min(self.cfg.log_every, self.cfg.num_updates - self.update)

    def run_chunk(self) -> tuple[list[dict], dict]:
        """The next chunk of units, run: `(log rows per seed, host metrics)`; `update` and `counters`
        advanced. A chunk that could not spend its units raises `BudgetStalled`."""
        length = self.next_length()
        run_chunk = self.program(length)
        t0 = time.perf_counter()
        self.state, metrics = run_chunk(self.state, self.ahead(), self.hp)
        wait_ready(metrics)  # polls, so a stop signal is seen while the chunk runs
        metrics = to_host(metrics)
        stalled = np.asarray(metrics.pop(STALLED))
        rows = seed_rows(metrics, self.layout)
        if stalled.any():
            raise BudgetStalled(self.stalled_message(stalled, rows, length))
        self.update += length
        self.length = length
        rows = log_rows(rows, self.layout, self.update, self.counters, time.perf_counter() - t0)
        return (rows if self.binary_outcome else [outcome_free(r) for r in rows]), metrics

    def stalled_message(self, stalled, rows: list[dict], length: int) -> str:
        seed_index, unit = (int(i[0]) for i in np.nonzero(stalled.reshape(-1, length)))
        cfg = self.cfg
        limit = getattr(self.runner, "max_idle_cycles", 0)
        cur, capacity = cfg.curriculum, cfg.buffer.capacity
        return stalled_message(cfg.method, self.layout.seeds[seed_index], self.update + unit + 1, limit,
                               rows[seed_index].get("buffer/size"), cur.ready_at(capacity), cur.min_fill_ratio,
                               capacity, cfg.num_steps, episode_limit(cfg))

    def check_finite(self, rows: list[dict], metrics: dict, logger) -> None:
        """Raise `TrainingDiverged` (after logging the rows that show it) on a non-finite loss or parameter."""
        diverged, length = first_nonfinite(metrics), self.length
        if diverged is None and not bool(self.params_finite(self.state)):
            diverged = ("a parameter", length - 1, None)
        if diverged is None:
            return
        if logger is not None:  # the rows that show it, with "nan" / "inf" values
            logger.log_rows(rows + ([mean_row(rows)] if self.layout.multi_seed else []))
        raise TrainingDiverged(_diverged_message(diverged, self.update - length, self.layout, self.checkpoints))

    def evaluate(self, rows: list[dict]) -> None:
        """Each seed's evaluation on the held-out levels, into its row (every process takes part)."""
        params = seed_params(evaluated_params(self.cfg, self.state.train_state.params, self.layout.multi_seed),
                             self.layout)
        if self.evaluator is not None:
            for r, p, k in zip(rows, params, self.eval_keys):
                r.update({f"eval/{n}": v for n, v in self.evaluator(jax.random.fold_in(k, self.update), p).items()})

    def save_checkpoint(self) -> None:
        counts = (lambda a: a.tolist()) if self.layout.multi_seed else (lambda a: int(a[0]))
        self.checkpoints.save(self.update, self.state, {"update": self.update, "budget": self.cfg.budget,
                                                        **{k: counts(v) for k, v in self.counters.items()}})


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
