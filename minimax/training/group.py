"""Several runs as one program: a sweep's points that differ only in traced options, trained as lanes.

`train_group(cfgs)` trains runs whose configs share one program (`can_group`: the same static part,
seeds and host options, `programs.program_key`) as one vmapped program of points x seeds lanes, point
major: lane `i * S + j` is point `i`'s seed `j`, its traced values in `hp`'s lane (`config/hyperparams.py`).
Each point keeps its own run directory exactly as if it had trained alone: its `config.json`, its log
rows (its seeds' rows and, with several seeds, their mean; `sps` is the whole program's, as a run's is
for its seeds), its evaluations and its checkpoints (its lanes of the state, the layout of a lone run of
its seeds). So each point resumes, evaluates and is collected alone, and a group resumes from its
points' checkpoints when they stand at the same update.

The loop is `loop._train`'s, over `_GroupLoop`: the lone run's `_Loop` with a state of every lane, a
logger that hands each point its rows, and a checkpoint per point. One device, one process: a group on
a device mesh or across hosts is trained point by point (`can_group` says why not).
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np

from minimax.config import TrainConfig
from minimax.config.hyperparams import hp_arrays, hyperparams
from minimax.core.metrics import RUN_TOTALS, mean_row
from minimax.training.builder import build_runner, env_spec, make_evaluator
from minimax.training.checkpoint import Checkpointer
from minimax.training.devices import DeviceLayout, committed, plan_layout
from minimax.training.budget import STALLED
from minimax.training.loop import _Loop, _sync, _train, all_params_finite, open_logger, seed_keys, start_state
from minimax.training.programs import program_key, programs
from minimax.training.run_dirs import RunError, missing_dirs, prepare_run_dir, remove_unkept
from minimax.training.run_lock import RunLock
from minimax.training.run_logs import RunLogger, read_rows
from minimax.training.stop_signals import StopSignals


def lane_layout(cfgs: list[TrainConfig]) -> DeviceLayout:
    """One device, the lanes' seeds point-major (each point's seeds in its order)."""
    return plan_layout([s for cfg in cfgs for s in cfg.seed_list], devices=1)


def can_group(cfgs: list[TrainConfig]) -> str:
    """Why `cfgs` cannot train as one program ('' when they can): one process and one device (a mesh is
    trained point by point), the same program and seeds, no buffer pictures, and, when resuming, every
    point's newest checkpoint at the same update."""
    if len(cfgs) < 2:
        return "one run"
    if jax.process_count() > 1 or any(cfg.devices not in (0, 1) for cfg in cfgs) or (
            cfgs[0].devices == 0 and len(jax.devices()) > 1):
        return "several devices or processes (a group runs on one device)"
    if any(cfg.curriculum.buffer_png for cfg in cfgs):
        return "--buffer-png"
    layout = plan_layout(cfgs[0].seed_list, devices=1)
    keys = {program_key(cfg, layout) for cfg in cfgs}
    if len(keys) > 1 or len({tuple(cfg.seed_list) for cfg in cfgs}) > 1:
        return "the points differ in a static option (a program each)"
    if len({cfg.resume for cfg in cfgs}) > 1:
        return "some points resume and others start"
    if cfgs[0].resume:
        steps = {Checkpointer(cfg.run_dir / "checkpoints").latest_step() for cfg in cfgs}
        if len(steps) > 1:
            return "the points' newest checkpoints stand at different updates"
    return ""


class _FanOut:
    """The loggers of a group's points: each gets its lanes' rows (and their mean, with several seeds)."""

    def __init__(self, loggers: list[RunLogger], seeds: int):
        self.loggers, self.seeds = loggers, seeds

    def log_rows(self, rows: list[dict]) -> None:
        lanes = rows[:len(self.loggers) * self.seeds]  # the group's mean row (last) is no point's
        for i, logger in enumerate(self.loggers):
            mine = lanes[i * self.seeds:(i + 1) * self.seeds]
            if self.seeds == 1:
                logger.log_rows([{k: v for k, v in mine[0].items() if k != "seed"}])
            else:
                logger.log_rows(mine + [mean_row(mine)])

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()


class _GroupLoop(_Loop):
    """`_Loop` over every lane of a group: one state and program; per point its directory, logs and checkpoints."""

    def __init__(self, cfgs: list[TrainConfig], layout: DeviceLayout, run_dirs: list):
        cfg = cfgs[0]
        self.cfgs, self.run_dirs, self.seeds = cfgs, run_dirs, len(cfg.seed_list)
        self.cfg, self.layout, self.run_dir, self.lead = cfg, layout, run_dirs[0], True
        self.runner = build_runner(cfg, layout.shard)
        self.evaluator = make_evaluator(cfg) if cfg.eval.eval_every else None
        init_keys, self.eval_keys = seed_keys(layout)
        self.point_checkpoints = [Checkpointer(d / "checkpoints", keep=c.keep_checkpoints)
                                  for c, d in zip(cfgs, run_dirs)]
        self.checkpoints = self.point_checkpoints[0]  # what a message about the group names
        self.programs = programs(cfg, layout)
        self.hp = hp_arrays(cfg, [hyperparams(c) for c in cfgs], repeat=self.seeds)
        self.abstract = jax.eval_shape(self.programs.init, init_keys)
        if cfg.resume:
            self.state, self.update, self.counters = self.restore()
            for c, d in zip(cfgs, run_dirs):
                c.replace(resume=False, overwrite=False).save(d / "config.json")
        else:
            self.state, self.update = committed(self.programs.init(init_keys)), 0
            self.counters = {k: np.zeros(len(layout.seeds), np.int64) for k in RUN_TOTALS}
        self.binary_outcome = env_spec(cfg).binary_outcome
        self.params_finite = jax.jit(all_params_finite)

    def point_abstract(self):
        """A lone run's state of one point's seeds, with the group's pytree structure."""
        s = self.seeds
        return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:] if s == 1 else (s,) + x.shape[1:], x.dtype),
                            self.abstract)

    def restore(self):
        """`(state, update, counters)` from each point's newest intact checkpoint, lanes point-major."""
        point = plan_layout(self.cfg.seed_list, devices=1)
        parts = [start_state(c, ck, None, None, self.point_abstract(), point, True)
                 for c, ck in zip(self.cfgs, self.point_checkpoints)]
        if len({u for _, u, _ in parts}) > 1:
            raise RunError("the points' checkpoints stand at different updates: resume them one by one")
        join = (lambda *x: jnp.stack(x)) if self.seeds == 1 else (lambda *x: jnp.concatenate(x))
        state = jax.tree.map(join, *[p[0] for p in parts])
        counters = {k: np.concatenate([p[2][k] for p in parts]) for k in RUN_TOTALS}
        return committed(state), parts[0][1], counters

    def open_logger(self) -> _FanOut:
        metrics = dict(self.program(self.next_length()).out_info[1])
        metrics.pop(STALLED)
        point = plan_layout(self.cfg.seed_list, devices=1)  # the columns of a lone run of a point's seeds
        return _FanOut([open_logger(c, d, metrics, self.evaluator, point, self.update)
                        for c, d in zip(self.cfgs, self.run_dirs)], self.seeds)

    def save_checkpoint(self) -> None:
        s = self.seeds
        for i, ck in enumerate(self.point_checkpoints):
            lanes = slice(i * s, (i + 1) * s)
            state = jax.tree.map(lambda x: x[i] if s == 1 else x[lanes], self.state)
            counts = {k: (int(v[lanes][0]) if s == 1 else v[lanes].tolist()) for k, v in self.counters.items()}
            ck.save(self.update, state, {"update": self.update, "budget": self.cfg.budget, **counts})


def train_group(cfgs: list[TrainConfig]) -> list[dict]:
    """Train `cfgs` (a sweep's points, `can_group`) as one program; returns each point's last log row
    (with several seeds, its seeds' mean)."""
    why = can_group(cfgs)
    if why:
        raise RunError(f"these runs cannot train as one program: {why}")
    layout = lane_layout(cfgs)
    cfgs = [c if c.resume else c.replace(devices=1) for c in cfgs]  # as a lone run records its devices
    locks = [RunLock(c.run_dir) for c in cfgs]
    created = [d for c in cfgs if not c.resume for d in missing_dirs(c.run_dir)]
    try:
        run_dirs = [prepare_run_dir(c, lock) for c, lock in zip(cfgs, locks)]
        _sync("run directories ready")
        with StopSignals() as stop:
            loop = _GroupLoop(cfgs, layout, run_dirs)
            _train(loop, stop, None)
    except BaseException:
        remove_unkept(created)
        raise
    finally:
        for lock in locks:
            lock.release()
    rows = []
    for d in run_dirs[1:]:
        print(f"run written to {d}", file=sys.stderr)
    for d in run_dirs:
        mine = read_rows(d)
        rows.append(next((r for r in reversed(mine) if r.get("seed", "mean") == "mean"), {}))
    return rows
