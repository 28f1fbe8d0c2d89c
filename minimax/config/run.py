"""A run's own options: which method and seeds, where it lives, how long, how it logs, on which
devices. Every training run reads them, whatever its method and environment; the options that belong
to a method or an environment travel with it (`config/table.py`). `TrainConfig` (`tree.py`) is these
plus the groups.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from minimax.config.presets import PRESET_OPTIONS
from minimax.core.units import Budget

PresetName = Literal[tuple(PRESET_OPTIONS)]  # type: ignore[valid-type]  (follows config/presets.py)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The options of every training run."""

    # ---------------------------------------------------------------- run
    preset: PresetName = "dr"
    """Start from this method's published configuration; other options override single values."""
    method: str = "dr"
    """Autocurriculum, by registered name: dr (domain randomisation), plr, robust_plr, parallel_plr, accel,
    parallel_accel, paired, pop_paired (population PAIRED), minimax_adversary, sfl (Sampling For Learnability),
    ncc (a learned replay distribution), or one registered with minimax.runners.register_method."""
    seed: int = 0
    """Random seed: the same seed and config give the same run, number for number (on one backend)."""
    seeds: str = ""
    """Comma-separated seeds trained together in one vmapped program (e.g. 0,1,2,3); replaces --seed."""
    num_seeds: int = 1
    """Train seeds --seed, --seed + 1, ..., --seed + N - 1 together in one vmapped program."""
    run_name: str = ""
    """Directory name under --out-dir; empty means '<method>-seed<seed>' ('<method>-seeds0-1-2' for several)."""
    out_dir: str = "runs"
    """Where run directories (logs, config, checkpoints) are created."""
    num_updates: int = 30_000
    """Length of the run in units of --budget: PPO updates of the student by default, as the minimax release and the
    report count them (robust PLR and ACCEL play as many rollout cycles without a gradient as they need in between;
    the logs count cycles, env_steps and gradient_updates)."""
    budget: Budget = "updates"
    """What --num-updates, --log-every, --eval-every and --checkpoint-every count: updates (PPO updates of the
    student), cycles (rollout cycles, with or without an update; runs saved before this option resume so), or
    env_steps (batches of --num-envs x --num-steps env steps, one DR update's: methods compare at equal env steps).
    Learning-rate annealing spans --num-updates PPO updates whatever the budget."""
    num_envs: int = 32
    """Parallel environments per rollout."""
    num_steps: int = 256
    """Steps per rollout (per env)."""
    log_every: int = 10
    """Updates per compiled chunk; one log row (JSONL and CSV) per chunk."""
    checkpoint_every: int = 1000
    """Save the whole run state every this many updates (a multiple of --log-every; 0 = only at the end)."""
    keep_checkpoints: int = 3
    """How many of the most recent checkpoints to keep."""
    resume: bool = False
    """Continue the run in <out-dir>/<run-name> from its latest checkpoint (its saved config is used)."""
    overwrite: bool = False
    """Delete an existing run directory of the same name instead of refusing to start."""
    progress: bool = True
    """Show a progress bar (updates, env steps, steps per second, ETA)."""
    wandb: bool = False
    """Also log to Weights & Biases (offline unless logged in; never logs environment variables)."""
    wandb_project: str = "minimax"
    """W&B project name (only with --wandb)."""

    # ---------------------------------------------------------------- scale
    devices: int = 0
    """Devices to shard the env batch over with shard_map (0 = every device: all local devices of every host)."""
    coordinator_address: str = ""
    """Multi-host: host:port of process 0 (or JAX_COORDINATOR_ADDRESS); empty = single host unless set there."""
    num_processes: int = 0
    """Multi-host: number of processes (or JAX_NUM_PROCESSES); 0 = from the environment."""
    process_id: int = -1
    """Multi-host: this process's index (or JAX_PROCESS_ID); -1 = from the environment."""

