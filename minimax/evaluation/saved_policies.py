"""The policies a run directory holds: its saved config and a checkpoint's evaluated parameters.

`evaluate` and `reproduce` score runs from their directories alone: the config rebuilds the
model, the checkpoint gives the parameters, one `Policy` per seed of a multi-seed run, and for
PAIRED and relatives only the protagonist (the evaluated student). Every way a directory can
fail to hold one (missing, no config, no checkpoint, a diverged checkpoint, a host-environment
run) is an `EvaluateError` naming the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

from minimax.training.builder import evaluated_agent, evaluated_params
from minimax.training.checkpoint import Checkpointer, CheckpointError
from minimax.config import ConfigError, TrainConfig
from minimax.host.config import is_host_config


class EvaluateError(RuntimeError):
    """Bad input to the evaluate command (missing run, no checkpoint, unknown maze...)."""


@dataclass
class Policy:
    """Parameters to evaluate and where they come from."""

    run: str
    seed: int
    step: int
    cfg: TrainConfig
    params: object

    @property
    def agent(self) -> str:
        """Which of the run's agents this is, where a run trains several (PAIRED and relatives)."""
        index = evaluated_agent(self.cfg.method)
        if index is None:
            return ""
        return f"its protagonist: student {index} of {self.cfg.teacher.students_for(self.cfg.method)}"


def run_config(run_dir) -> TrainConfig:
    """A run's saved config, or an `EvaluateError` naming the run (a host-environment run, whose
    evaluations live in its own logs, says so rather than listing options this loader does not know)."""
    path = Path(run_dir) / "config.json"
    if is_host_config(path):
        raise EvaluateError(f"{run_dir} is a host-environment run (Procgen, gym): evaluate it apart from JAX-env runs")
    try:
        return TrainConfig.load(path)
    except ConfigError as e:
        raise EvaluateError(f"{run_dir}: {e}") from None


def load_policies(run_dir, step: int | None = None) -> list[Policy]:
    """The policies a run directory holds at checkpoint `step` (default: the latest)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise EvaluateError(f"no run directory {run_dir}")
    if not (run_dir / "config.json").exists():
        raise EvaluateError(f"{run_dir} is not a run directory (no config.json)")
    cfg = run_config(run_dir)
    checkpoints = Checkpointer(run_dir / "checkpoints")
    if not checkpoints.steps():
        raise EvaluateError(f"{run_dir} has no checkpoints")
    if step is not None and step not in checkpoints.steps():
        raise EvaluateError(f"{run_dir} has no checkpoint at update {step} (have {checkpoints.steps()})")
    try:
        params, step = checkpoints.restore_params(step)
    except CheckpointError as e:
        raise EvaluateError(str(e)) from None
    if not all(np.isfinite(x).all() for x in jax.tree.leaves(params) if np.issubdtype(x.dtype, np.inexact)):
        raise EvaluateError(f"{run_dir}: checkpoint {step} holds NaN or infinite parameters (its training "
                            f"diverged); evaluate an earlier one with --checkpoint")
    seeds = cfg.seed_list
    params = evaluated_params(cfg, params, len(seeds) > 1)  # PAIRED and relatives: the protagonist
    if len(seeds) == 1:
        return [Policy(run_dir.name, seeds[0], step, cfg, params)]
    return [Policy(run_dir.name, s, step, cfg, jax.tree.map(lambda x, i=i: x[i], params))
            for i, s in enumerate(seeds)]
