"""A run's own options: which method and seed, where it lives, how long, how it logs. Every training
run reads them, whatever its method and environment, on either path: `RunOptions` is the top level
of the compiled path's `TrainConfig` (`tree.py`, with `CompiledRunOptions`' seeds, presets and
devices) and of the host path's `HostTrainConfig` (`host/config.py`, with the PLR paper's Procgen
protocol's defaults and its sampler). One definition of each option: its flag, type, meaning and
checks (`run_problems`). The options that belong to a method or an environment travel with it
(`config/table.py`).

Where the two paths' defaults differ, the host's are the PLR paper's protocol (64 envs, 1,526
updates, a log row per update) and are declared as overrides in `HostTrainConfig`, beside the
protocol they follow; the compiled path's are the minimax report's (Table 5).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator, Literal

from minimax.config.presets import PRESET_OPTIONS
from minimax.core.options import flag
from minimax.core.units import BUDGETS, Budget

PresetName = Literal[tuple(PRESET_OPTIONS)]  # type: ignore[valid-type]  (follows config/presets.py)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The options of every training run, compiled or on the host."""

    method: str = "dr"
    """Autocurriculum, by registered name (the method registry's: `train.py --help` lists them, built-in and
    registered with minimax.register_method). On a host environment (procgen-*, gym-*): a method that declares a
    host protocol."""
    seed: int = 0
    """Random seed: the same seed and config give the same run, number for number (on one backend)."""
    run_name: str = ""
    """Directory name under --out-dir; empty means '<method>-seed<seed>' ('<method>-seeds0-1-2' for several)."""
    out_dir: str = "runs"
    """Where run directories (logs, config, checkpoints) are created."""
    num_updates: int = 30_000
    """Length of the run in units of --budget: PPO updates of the student by default, as the minimax release and the
    report count them (robust PLR and ACCEL play as many rollout cycles without a gradient as they need in between;
    the logs count cycles, env_steps and gradient_updates)."""
    budget: Budget = "updates"
    """What --num-updates counts: updates (PPO updates of the student), cycles (rollout cycles, with or without an
    update; runs saved before this option resume so), or env_steps (batches of --num-envs x --num-steps env steps,
    one DR update's: methods compare at equal env steps). On the compiled path --log-every, --eval-every and
    --checkpoint-every count the same units; on a host environment they count rollouts (each one cycle).
    Learning-rate annealing spans --num-updates PPO updates whatever the budget."""
    num_envs: int = 32
    """Parallel environments per rollout."""
    num_steps: int = 256
    """Steps per rollout (per env)."""
    log_every: int = 10
    """One log row (JSONL and CSV) every N units (the compiled path runs them as one compiled chunk)."""
    checkpoint_every: int = 1000
    """Save the whole run state every N units (compiled: a multiple of --log-every; 0 = only at the end)."""
    resume: bool = False
    """Continue the run in <out-dir>/<run-name> from its latest checkpoint (its saved config is used)."""
    overwrite: bool = False
    """Delete an existing run directory of the same name instead of refusing to start."""
    progress: bool = True
    """Show a progress bar (updates, env steps, steps per second, ETA)."""


def run_problems(c: RunOptions) -> Iterator[str]:
    """What is wrong with `c`'s run options, each a message naming its flag (both paths' checks call it)."""
    if c.budget not in BUDGETS:
        yield f"--budget must be one of {', '.join(BUDGETS)}, got {c.budget!r}"
    for name in ("num_updates", "log_every", "num_envs", "num_steps"):
        v = getattr(c, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
            yield f"{flag(name)} must be > 0, got {v!r}"
    if not (isinstance(c.checkpoint_every, int) and c.checkpoint_every >= 0):
        yield f"--checkpoint-every must be >= 0, got {c.checkpoint_every!r}"
    if c.run_name and (Path(c.run_name).name != c.run_name or c.run_name in (".", "..")):
        yield f"--run-name must be a plain directory name, got {c.run_name!r}"


@dataclasses.dataclass(frozen=True)
class CompiledRunOptions(RunOptions):
    """The run options only a compiled run has: presets, vmapped seeds, kept checkpoints, W&B, devices."""

    preset: PresetName = "dr"
    """Start from this method's published configuration; other options override single values."""
    seeds: str = ""
    """Comma-separated seeds trained together in one vmapped program (e.g. 0,1,2,3); replaces --seed."""
    num_seeds: int = 1
    """Train seeds --seed, --seed + 1, ..., --seed + N - 1 together in one vmapped program."""
    keep_checkpoints: int = 3
    """How many of the most recent checkpoints to keep."""
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
