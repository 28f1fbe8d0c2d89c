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
import dataclasses
import shutil
import sys
import time

import jax
import numpy as np
import tyro

from minimax.agents.ppo import PPOConfig
from minimax.checkpoint import Checkpointer, CheckpointError
from minimax.config import MUTATION_METHODS, PRESETS, ConfigError, TrainConfig, flag
from minimax.curricula.level_buffer import BufferConfig
from minimax.envs.maze import AMaze, MazeParams, make_dr_generator, make_empty_generator
from minimax.envs.maze.mutators import make_mutator
from minimax.envs.maze.paths import env_metrics
from minimax.models import MazeActorCritic
from minimax.run_logs import RunLogger
from minimax.runners import DRRunner
from minimax.runners.plr import CurriculumConfig, PLRRunner
from minimax.runners.eval import SuiteEvaluator

# Options a resumed run may change: they do not alter what an update computes.
RESUME_OVERRIDABLE = {"resume", "num_updates", "progress", "wandb", "wandb_project", "keep_checkpoints",
                      "eval_every", "checkpoint_every", "overwrite", "preset", "coordinator_address",
                      "num_processes", "process_id"}


class RunError(RuntimeError):
    """A run cannot start or resume (existing directory, missing checkpoint...)."""


# --------------------------------------------------------------------------- building blocks


def obs_options(cfg: TrainConfig) -> dict:
    """Observation settings evaluation envs must share with training envs."""
    return dict(n_actions=cfg.n_actions, agent_view_size=cfg.agent_view_size, normalize_obs=cfg.normalize_obs)


def env_params(cfg: TrainConfig) -> MazeParams:
    return MazeParams(height=cfg.maze_height, width=cfg.maze_width, max_steps=cfg.max_episode_steps,
                      **obs_options(cfg))


def make_model(cfg: TrainConfig) -> MazeActorCritic:
    return MazeActorCritic(n_actions=cfg.n_actions, recurrent_cell=cfg.recurrent_cell,
                           recurrent_size=cfg.recurrent_size, conv_filters=cfg.conv_filters,
                           dir_embed_size=cfg.dir_embed_size, head_hidden=cfg.head_hidden)


def ppo_config(cfg: TrainConfig) -> PPOConfig:
    return PPOConfig(lr=cfg.lr, anneal_lr=cfg.anneal_lr,
                     total_gradient_steps=cfg.num_updates * cfg.n_epochs * cfg.n_minibatches,
                     adam_eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm, gamma=cfg.gamma,
                     gae_lambda=cfg.gae_lambda, n_epochs=cfg.n_epochs, n_minibatches=cfg.n_minibatches,
                     clip_eps=cfg.clip_eps, clip_value=cfg.clip_value, entropy_coef=cfg.entropy_coef,
                     value_coef=cfg.value_coef)


def level_generator(cfg: TrainConfig):
    if cfg.n_walls == 0:
        return make_empty_generator(cfg.maze_height, cfg.maze_width)
    return make_dr_generator(cfg.maze_height, cfg.maze_width, n_walls=cfg.n_walls)


def buffer_config(cfg: TrainConfig) -> BufferConfig:
    return BufferConfig(capacity=cfg.buffer_size, score_transform=cfg.score_transform, temperature=cfg.temperature,
                        staleness_coef=cfg.staleness_coef, staleness_transform=cfg.staleness_transform,
                        staleness_temperature=cfg.staleness_temperature, score_alpha=cfg.score_alpha,
                        eps=cfg.greedy_eps, top_k=cfg.top_k, unique_levels=cfg.unique_levels)


def curriculum_config(cfg: TrainConfig) -> CurriculumConfig:
    return CurriculumConfig(method=cfg.method, replay_prob=cfg.replay_prob, min_fill_ratio=cfg.min_fill_ratio,
                            score_function=cfg.score_function, replay_with_replacement=cfg.replay_with_replacement,
                            train_levels=cfg.train_levels, replay_schedule=cfg.replay_schedule,
                            mutation_subsample=cfg.mutation_subsample)


def build_runner(cfg: TrainConfig):
    args = (AMaze(), env_params(cfg), level_generator(cfg), make_model(cfg), ppo_config(cfg), cfg.num_envs,
            cfg.num_steps)
    if cfg.method == "dr":
        return DRRunner(*args)
    mutator = make_mutator(cfg.mutator, cfg.n_mutations) if cfg.method in MUTATION_METHODS else None
    return PLRRunner(*args, buffer=buffer_config(cfg), curriculum=curriculum_config(cfg), mutator=mutator,
                     level_metrics=env_metrics)


def make_chunk(runner, length: int):
    """`state -> (state, metrics[length])`: `length` runner steps in one `lax.scan`."""
    def chunk(state):
        return jax.lax.scan(lambda s, _: runner.step(s), state, None, length=length)
    return chunk


COUNTS = ("episodes", "env_steps", "gradient_updates", "cycles")


def summarize(metrics: dict) -> dict:
    """A chunk's stacked per-step metrics -> one row.

    Counters (and `group/count`, levels played) are summed; `buffer/*` statistics are the
    chunk's last value; a `name_sum` entry becomes `name` = its total over the total of
    `name_count` (or of `group/count` for `group/name_sum`, or of `episodes`), so averages
    weigh every episode or level equally however the steps of the chunk were split;
    everything else is the mean over steps.
    """
    m = {k: np.asarray(v) for k, v in metrics.items()}
    row = {}
    for k, v in m.items():
        if k.endswith(("_sum", "_count")):
            continue
        if k in COUNTS or k.endswith("/count"):
            row[k] = int(v.sum())
        elif k.startswith("buffer/"):
            row[k] = v.reshape(-1)[-1].item()
        else:
            row[k] = float(v.mean())
    renamed = {"episode_return": "train/return", "episode_solved": "train/solved_rate",
               "episode_length": "train/length"}
    for k, v in m.items():
        if not k.endswith("_sum"):
            continue
        name = k[:-len("_sum")]
        if f"{name}_count" in m:
            denominator = m[f"{name}_count"]
        elif "/" in name:
            denominator = m[name.rsplit("/", 1)[0] + "/count"]
        else:
            denominator = m["episodes"]
        total = float(denominator.sum())
        row[renamed.get(name, name)] = float(v.sum()) / total if total else float("nan")
    return row


def metric_columns(runner, state_abstract, evaluator) -> list[str]:
    _, metrics = jax.eval_shape(runner.step, state_abstract)
    row = summarize({k: np.zeros((1,), v.dtype) for k, v in metrics.items()})
    columns = ["update", "cycles", "env_steps", "time_s", "sps"] + [k for k in row if k not in ("env_steps", "cycles")]
    if evaluator is not None:
        columns += [f"eval/{n}" for n in evaluator.metric_names]
    return columns


# --------------------------------------------------------------------------- the loop


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


def train(cfg: TrainConfig) -> dict:
    """Run (or resume) the experiment `cfg` describes; returns the last log row."""
    runner = build_runner(cfg)  # first: a runner that cannot be built must not leave a run directory behind
    run_dir = prepare_run_dir(cfg)
    evaluator = (SuiteEvaluator(make_model(cfg), cfg.eval_suite, cfg.eval_episodes, cfg.eval_greedy,
                                **obs_options(cfg)) if cfg.eval_every else None)
    key_init, key_eval = jax.random.split(jax.random.key(cfg.seed))
    checkpoints = Checkpointer(run_dir / "checkpoints", keep=cfg.keep_checkpoints)
    abstract = jax.eval_shape(runner.init, key_init)

    if cfg.resume:
        if checkpoints.latest_step() is None:
            raise RunError(f"--resume: {run_dir} has no checkpoint yet; start it again without --resume "
                           f"(with --overwrite)")
        state, meta = checkpoints.restore(abstract)
        update, cycles, env_steps = int(meta["update"]), int(meta["cycles"]), int(meta["env_steps"])
    else:
        state = jax.jit(runner.init)(key_init)
        update = cycles = env_steps = 0

    logger = RunLogger(run_dir, metric_columns(runner, abstract, evaluator),
                       wandb_config=cfg.to_dict() if cfg.wandb else None, wandb_project=cfg.wandb_project,
                       run_name=cfg.name, resume=cfg.resume)
    if cfg.resume:
        logger.truncate_after(update)

    programs: dict[int, object] = {}

    def program(length):
        if length not in programs:
            t0 = time.perf_counter()
            programs[length] = jax.jit(make_chunk(runner, length), donate_argnums=0).lower(state).compile()
            print(f"compiled a chunk of {length} updates in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        return programs[length]

    row: dict = {}
    progress = Progress(cfg.num_updates, update, env_steps, enabled=cfg.progress)
    try:
        while update < cfg.num_updates:
            length = min(cfg.log_every, cfg.num_updates - update)
            run_chunk = program(length)
            t0 = time.perf_counter()
            state, metrics = run_chunk(state)
            metrics = jax.device_get(metrics)  # waits for the chunk
            seconds = time.perf_counter() - t0
            row = summarize(metrics)
            update += row["gradient_updates"]
            cycles += row["cycles"]
            env_steps += row["env_steps"]
            row = {"update": update, "cycles": cycles, "env_steps": env_steps, "time_s": seconds,
                   "sps": row["env_steps"] / seconds,
                   **{k: v for k, v in row.items() if k not in ("env_steps", "cycles")}}
            final = update >= cfg.num_updates
            if evaluator is not None and (update % cfg.eval_every == 0 or final):
                params = state.train_state.params
                row.update({f"eval/{k}": v for k, v in evaluator(jax.random.fold_in(key_eval, update), params).items()})
            logger.log(row)
            if (cfg.checkpoint_every and update % cfg.checkpoint_every == 0) or final:
                checkpoints.save(update, state, {"update": update, "cycles": cycles, "env_steps": env_steps})
            progress.advance(update, env_steps, row["sps"], row.get("train/return"))
    finally:
        progress.close()
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
        probe = dataclasses.replace(default, **{k: v for k, v in dict(
            run_name=known.run_name, out_dir=known.out_dir, method=known.method,
            seed=None if known.seed is None else int(known.seed)).items() if v is not None})
        path = probe.run_dir / "config.json"
        if not path.exists():
            raise RunError(f"--resume: no run to resume at {probe.run_dir} (no config.json)")
        saved = TrainConfig.load(path)
        default = dataclasses.replace(saved, resume=True)
    cfg = tyro.cli(TrainConfig, default=default, args=argv, prog="train.py",
                   description=TrainConfig.__doc__ + " Presets: " + ", ".join(PRESETS) + " (--preset).")
    if saved is not None:
        changed = [f.name for f in dataclasses.fields(cfg)
                   if getattr(cfg, f.name) != getattr(saved, f.name) and f.name not in RESUME_OVERRIDABLE]
        if changed:
            raise ConfigError("--resume keeps the run's saved config; these options differ from it: " + ", ".join(
                f"{flag(n)} (saved {getattr(saved, n)!r}, given {getattr(cfg, n)!r})" for n in changed))
    return cfg


def main(argv: list[str] | None = None) -> None:
    try:
        cfg = parse_config(argv)
        train(cfg)
    except (ConfigError, RunError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
