"""Typed training configuration and the method presets.

One flat, frozen dataclass: every option is one command-line flag (`--lr`, `--num-envs`),
its docstring is the `--help` text, and `__post_init__` rejects bad values at once with
a message that names the option. Presets are the minimax report's Table 5 (LSTM student),
value for value; docs/DESIGN.md lists where the released JSON configs differ.
`python train.py --preset plr --lr 1e-3` starts from a preset and overrides single options.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Literal

from minimax.curricula.level_buffer import SCORE_TRANSFORMS, STALENESS_TRANSFORMS
from minimax.curricula.scores import SCORE_FUNCTIONS
from minimax.curricula.training_set import REPLAY_SCHEDULES
from minimax.runners.plr_family import MUTATION_CRITERIA

METHODS = ("dr", "plr", "robust_plr", "parallel_plr", "accel", "parallel_accel")
PLR_METHODS = METHODS[1:]
MUTATION_METHODS = ("accel", "parallel_accel")
MUTATORS = ("minimax", "four_edit")


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the option (as its CLI flag)."""


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Train a student on AMaze with an autocurriculum (domain randomisation, PLR, ACCEL)."""

    # ---------------------------------------------------------------- run
    preset: Literal["dr", "plr", "accel", "pplr", "paccel"] = "dr"
    """Start from this method's published configuration; other options override single values."""
    method: Literal["dr", "plr", "robust_plr", "parallel_plr", "accel", "parallel_accel"] = "dr"
    """Autocurriculum: dr (domain randomisation), plr, robust_plr, parallel_plr, accel, parallel_accel."""
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
    """Gradient updates to train for (learning-rate annealing counts these)."""
    log_every: int = 10
    """Updates per compiled chunk; one log row (JSONL and CSV) per chunk."""
    eval_every: int = 100
    """Evaluate on the --eval-suite mazes every this many updates (a multiple of --log-every; 0 = never)."""
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
    global_buffer: bool = False
    """PLR family on several devices: one level buffer shared by all devices, instead of one of capacity K/D each."""
    coordinator_address: str = ""
    """Multi-host: host:port of process 0 (or JAX_COORDINATOR_ADDRESS); empty = single host unless set there."""
    num_processes: int = 0
    """Multi-host: number of processes (or JAX_NUM_PROCESSES); 0 = from the environment."""
    process_id: int = -1
    """Multi-host: this process's index (or JAX_PROCESS_ID); -1 = from the environment."""

    # ---------------------------------------------------------------- environment
    maze_height: int = 13
    """Maze interior height in cells."""
    maze_width: int = 13
    """Maze interior width in cells."""
    max_episode_steps: int = 250
    """Episode step budget on training levels."""
    n_walls: int = 60
    """Wall draws per generated level (with replacement); 0 generates empty levels (ACCEL)."""
    n_actions: Literal[3, 7] = 7
    """7 = MiniGrid's full action set (the literature's), 3 = left, right, forward."""
    agent_view_size: int = 5
    """Side of the egocentric view (odd)."""
    normalize_obs: bool = True
    """Divide observation images by 10."""

    # ---------------------------------------------------------------- model
    recurrent_cell: Literal["lstm", "gru"] = "lstm"
    """Recurrent core of the student network."""
    recurrent_size: int = 256
    """Units of the recurrent core."""
    conv_filters: int = 16
    """Filters of the 3x3 VALID convolution on the image."""
    dir_embed_size: int = 5
    """Size of the agent-direction embedding."""
    head_hidden: int = 32
    """Hidden units of the policy and value heads."""

    # ---------------------------------------------------------------- PPO
    num_envs: int = 32
    """Parallel environments per rollout."""
    num_steps: int = 256
    """Steps per rollout (per env)."""
    lr: float = 1e-4
    """Adam learning rate."""
    anneal_lr: bool = False
    """Anneal the learning rate linearly to 0 over all gradient steps."""
    adam_eps: float = 1e-5
    """Adam epsilon."""
    max_grad_norm: float = 0.5
    """Clip gradients to this global norm."""
    gamma: float = 0.995
    """Discount factor."""
    gae_lambda: float = 0.98
    """GAE lambda."""
    n_epochs: int = 5
    """PPO epochs per update."""
    n_minibatches: int = 1
    """Minibatches per epoch, split along the env axis (must divide --num-envs)."""
    clip_eps: float = 0.2
    """PPO ratio clip (also the value clip when --clip-value)."""
    clip_value: bool = True
    """Clip the value loss around the rollout's values."""
    entropy_coef: float = 1e-3
    """Entropy bonus coefficient."""
    value_coef: float = 0.5
    """Value loss coefficient."""

    # ---------------------------------------------------------------- evaluation
    eval_suite: str = "validation"
    """Mazes for periodic evaluation: a suite name (validation, dcd12) or comma-separated maze names."""
    eval_episodes: int = 10
    """Episodes per evaluation maze (parallel envs; each env's first episode counts)."""
    eval_greedy: bool = False
    """Evaluate with the most likely action instead of sampling."""

    # ---------------------------------------------------------------- PLR family
    replay_prob: float = 0.5
    """Probability of a replay update once the buffer is full enough (plr, robust_plr, accel; parallel
    methods replay on every step once the buffer is ready, as the reference, and do not use it)."""
    buffer_size: int = 4000
    """Level buffer capacity (PLR family)."""
    staleness_coef: float = 0.3
    """Weight rho of the staleness distribution in the replay distribution."""
    temperature: float = 0.3
    """Temperature beta of the score transform."""
    score_function: Literal["maxmc", "pvl", "l1_value_loss", "gae", "policy_entropy", "least_confidence",
                            "min_margin", "one_step_td", "learnability"] = "maxmc"
    """Level score (PLR family): see minimax/curricula/scores.py."""
    score_transform: Literal["rank", "power", "softmax", "eps_greedy", "top_k"] = "rank"
    """Score-to-weight transform of the replay distribution (PLR family)."""
    score_alpha: float = 1.0
    """Score update on replay: new = (1 - alpha) * old + alpha * observed (1 replaces)."""
    staleness_transform: Literal["power", "rank", "softmax"] = "power"
    """Staleness-to-weight transform (power with temperature 1 is PLR eq. 3)."""
    staleness_temperature: float = 1.0
    """Temperature of the staleness transform."""
    greedy_eps: float = 0.05
    """Exploration mass of --score-transform eps_greedy."""
    top_k: int = 32
    """Levels sampled uniformly by --score-transform top_k."""
    min_fill_ratio: float = 0.5
    """Replay only once this fraction of the buffer is filled."""
    unique_levels: bool = True
    """Keep only distinct levels in the buffer (a duplicate updates the stored entry)."""
    buffer_png: int = 0
    """Save a PNG of the N highest-weighted buffer levels at every log step in <run>/buffer/ (PLR family; 0 = off)."""
    replay_with_replacement: bool = True
    """Sample the replay batch with replacement (else distinct levels, Gumbel top-k)."""
    train_levels: int = 0
    """> 0: train on this many fixed level seeds (the PLR paper's finite training set); 0 = unlimited."""
    replay_schedule: Literal["fixed", "proportionate"] = "fixed"
    """With --train-levels: replay with --replay-prob (fixed) or with the fraction of seeds seen."""
    mutator: Literal["minimax", "four_edit"] = "minimax"
    """ACCEL edit: minimax (nothing / flip a wall / move the goal) or four_edit (add, remove wall, move agent, goal)."""
    n_mutations: int = 20
    """Edits per mutation (ACCEL)."""
    mutation_criterion: Literal["batch", "easy", "hard"] = "batch"
    """ACCEL parents: batch (every replayed level, one child each), easy / hard (the q lowest / highest scores, tiled)."""
    mutation_subsample: int = 4
    """ACCEL: q, the replayed levels mutated by --mutation-criterion easy or hard (unused by batch)."""

    def __post_init__(self):
        problems = list(_problems(self))
        if problems:
            raise ConfigError("; ".join(problems))

    # ---------------------------------------------------------------- derived
    @property
    def seed_list(self) -> list[int]:
        """The seeds this run trains: --seeds, else --seed ... --seed + --num-seeds - 1."""
        if self.seeds.strip():
            return [int(v) for v in self.seeds.split(",") if v.strip()]
        return [self.seed + i for i in range(self.num_seeds)]

    @property
    def name(self) -> str:
        if self.run_name:
            return self.run_name
        seeds = self.seed_list
        if len(seeds) == 1:
            return f"{self.method}-seed{seeds[0]}"
        return f"{self.method}-seeds" + "-".join(map(str, seeds))

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        values = dict(values)
        if "mutation_criterion" not in values:
            # Configs saved before the criterion existed: q > 0 mutated the q best-scored replays.
            q = values.get("mutation_subsample", 0)
            values["mutation_criterion"] = "hard" if q else "batch"
            values["mutation_subsample"] = q or 4
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown config option(s) {', '.join(unknown)}")
        return cls(**values)

    def save(self, path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path) -> "TrainConfig":
        try:
            values = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"cannot read config {path}: {e}") from None
        return cls.from_dict(values)


def _problems(c: TrainConfig):
    """Every invalid value, as a message naming its flag."""
    def positive(*names):
        for n in names:
            v = getattr(c, n)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0 or v != v:
                yield f"{flag(n)} must be > 0, got {v!r}"

    def in_unit(n):
        v = getattr(c, n)
        if not 0 <= v <= 1:
            yield f"{flag(n)} must be in [0, 1], got {v!r}"

    if c.seeds.strip():
        try:
            seeds = [int(v) for v in c.seeds.split(",") if v.strip()]
        except ValueError:
            yield f"--seeds must be comma-separated integers, got {c.seeds!r}"
        else:
            if len(set(seeds)) != len(seeds):
                yield f"--seeds lists a seed twice: {c.seeds!r}"
            if c.num_seeds != 1:
                yield f"give --seeds or --num-seeds, not both (got --seeds {c.seeds!r} --num-seeds {c.num_seeds})"
    if not (isinstance(c.num_seeds, int) and c.num_seeds >= 1):
        yield f"--num-seeds must be an int >= 1, got {c.num_seeds!r}"
    if not (isinstance(c.devices, int) and c.devices >= 0):
        yield f"--devices must be an int >= 0 (0 = all devices), got {c.devices!r}"
    if not (isinstance(c.buffer_png, int) and c.buffer_png >= 0):
        yield f"--buffer-png must be an int >= 0, got {c.buffer_png!r}"
    if c.num_processes < 0:
        yield f"--num-processes must be >= 0, got {c.num_processes}"
    if c.method not in METHODS:
        yield f"--method must be one of {', '.join(METHODS)}, got {c.method!r}"
    if c.score_function not in SCORE_FUNCTIONS:
        yield f"--score-function must be one of {', '.join(SCORE_FUNCTIONS)}, got {c.score_function!r}"
    if c.score_transform not in SCORE_TRANSFORMS:
        yield f"--score-transform must be one of {', '.join(SCORE_TRANSFORMS)}, got {c.score_transform!r}"
    for n, options in (("staleness_transform", STALENESS_TRANSFORMS), ("replay_schedule", REPLAY_SCHEDULES),
                       ("mutator", MUTATORS), ("mutation_criterion", MUTATION_CRITERIA)):
        if getattr(c, n) not in options:
            yield f"{flag(n)} must be one of {', '.join(options)}, got {getattr(c, n)!r}"
    if c.recurrent_cell not in ("lstm", "gru"):
        yield f"--recurrent-cell must be lstm or gru, got {c.recurrent_cell!r}"
    if c.n_actions not in (3, 7):
        yield f"--n-actions must be 3 or 7, got {c.n_actions!r}"
    yield from positive("num_updates", "log_every", "keep_checkpoints", "maze_height", "maze_width",
                        "max_episode_steps", "recurrent_size", "conv_filters", "dir_embed_size",
                        "head_hidden", "num_envs", "num_steps", "lr", "adam_eps", "max_grad_norm",
                        "n_epochs", "n_minibatches", "eval_episodes", "buffer_size", "temperature")
    for n in ("eval_every", "checkpoint_every", "n_walls", "entropy_coef", "value_coef", "clip_eps",
              "n_mutations"):
        if not getattr(c, n) >= 0:  # NaN fails this too
            yield f"{flag(n)} must be >= 0, got {getattr(c, n)!r}"
    for n in ("gamma", "gae_lambda", "replay_prob", "staleness_coef", "min_fill_ratio"):
        yield from in_unit(n)
    if c.maze_height * c.maze_width < 2:
        yield f"a {c.maze_height}x{c.maze_width} maze (--maze-height x --maze-width) has no room for agent and goal"
    elif c.n_walls > c.maze_height * c.maze_width - 2:
        yield (f"--n-walls must be <= {c.maze_height * c.maze_width - 2} for a {c.maze_height}x{c.maze_width} "
               f"maze, got {c.n_walls}")
    v = c.agent_view_size
    if not isinstance(v, int) or v < 3 or v % 2 == 0:
        yield f"--agent-view-size must be an odd int >= 3, got {v!r}"
    if c.num_envs > 0 and c.n_minibatches > 0 and c.num_envs % c.n_minibatches:
        yield f"--n-minibatches ({c.n_minibatches}) must divide --num-envs ({c.num_envs})"
    if c.log_every > 0:
        for n in ("eval_every", "checkpoint_every"):
            if getattr(c, n) > 0 and getattr(c, n) % c.log_every:
                yield f"{flag(n)} ({getattr(c, n)}) must be a multiple of --log-every ({c.log_every})"
    if c.run_name and (Path(c.run_name).name != c.run_name or c.run_name in (".", "..")):
        yield f"--run-name must be a plain directory name, got {c.run_name!r}"
    if c.method in PLR_METHODS and c.buffer_size < 2:
        yield f"--buffer-size must be >= 2 for {c.method}, got {c.buffer_size}"
    if c.method in MUTATION_METHODS and c.n_mutations < 1:
        yield f"--n-mutations must be >= 1 for {c.method}, got {c.n_mutations}"
    for n in ("train_levels", "mutation_subsample"):
        if not (isinstance(getattr(c, n), int) and getattr(c, n) >= 0):
            yield f"{flag(n)} must be an int >= 0, got {getattr(c, n)!r}"
    yield from positive("staleness_temperature", "top_k")
    yield from in_unit("greedy_eps")
    if not 0 < c.score_alpha <= 1:
        yield f"--score-alpha must be in (0, 1], got {c.score_alpha!r}"
    if c.method in PLR_METHODS:
        ready_at = math.ceil(c.min_fill_ratio * c.buffer_size)
        if c.method in ("robust_plr", "accel") and c.replay_prob <= 0 and not c.train_levels:
            yield f"--replay-prob must be > 0 for {c.method} (it trains only on replays), got {c.replay_prob}"
        if c.train_levels and c.buffer_size < c.train_levels:
            yield (f"--train-levels ({c.train_levels}) needs --buffer-size >= {c.train_levels} (got {c.buffer_size}): "
                   f"the buffer must hold every training level, so none is evicted and lost for good")
        elif c.train_levels and ready_at > c.train_levels:
            yield (f"--train-levels ({c.train_levels}) cannot fill --min-fill-ratio x --buffer-size "
                   f"({c.min_fill_ratio} x {c.buffer_size}) levels: replay would never start")
        if not c.replay_with_replacement and max(ready_at, 1) < c.num_envs:
            yield (f"--no-replay-with-replacement needs --min-fill-ratio x --buffer-size >= --num-envs "
                   f"({c.min_fill_ratio} x {c.buffer_size} < {c.num_envs}): not enough distinct levels to sample")
    if (c.method in MUTATION_METHODS and c.mutation_criterion != "batch"
            and not 1 <= c.mutation_subsample <= c.num_envs):
        yield (f"--mutation-subsample must be in [1, --num-envs ({c.num_envs})] for --mutation-criterion "
               f"{c.mutation_criterion}, got {c.mutation_subsample}")
    if not c.eval_suite.strip():
        yield "--eval-suite must name a suite or mazes"
    else:
        from minimax.envs.maze.ood import get_maze, suite_maze_names  # noqa: PLC0415 (cheap, no jax work)

        for name in suite_maze_names(c.eval_suite):
            try:
                get_maze(name)
            except ValueError:
                yield f"--eval-suite: unknown maze {name!r}"


# --------------------------------------------------------------------------- presets

_SHARED = dict(num_updates=30_000, num_envs=32, num_steps=256, n_epochs=5, n_minibatches=1, clip_eps=0.2,
               clip_value=True, max_grad_norm=0.5, adam_eps=1e-5, value_coef=0.5, gae_lambda=0.98, maze_height=13,
               maze_width=13, max_episode_steps=250, normalize_obs=True, recurrent_cell="lstm", recurrent_size=256,
               eval_every=100, eval_suite="validation", eval_episodes=10, checkpoint_every=1000)
_PLR = dict(buffer_size=4000, score_function="maxmc", score_transform="rank", staleness_coef=0.3,
            min_fill_ratio=0.5, unique_levels=True)
_ACCEL = dict(mutation_criterion="batch", mutation_subsample=4, n_walls=0)  # ACCEL grows levels from empty rooms

TABLE_5 = {
    # preset: (method, gamma, lr, student entropy, replay rate p, temperature beta, mutations)
    "dr": ("dr", 0.995, 1e-4, 1e-3, None, None, None),
    "plr": ("robust_plr", 0.995, 5e-5, 0.0, 0.5, 0.1, None),
    "accel": ("accel", 0.995, 1e-4, 0.0, 0.8, 0.1, 20),
    "pplr": ("parallel_plr", 0.999, 1e-4, 0.0, 0.5, 0.3, None),
    "paccel": ("parallel_accel", 0.995, 1e-4, 0.0, 0.8, 0.1, 10),
}
"""The minimax report's Table 5 (LSTM student), the columns that differ between methods."""


def _preset(name: str) -> TrainConfig:
    method, gamma, lr, entropy, p, beta, mutations = TABLE_5[name]
    values = dict(preset=name, method=method, gamma=gamma, lr=lr, entropy_coef=entropy, n_walls=60, **_SHARED)
    if method != "dr":
        values.update(_PLR, replay_prob=p, temperature=beta)
    if mutations:
        values.update(_ACCEL, n_mutations=mutations)
    return TrainConfig(**values)


PRESETS: dict[str, TrainConfig] = {name: _preset(name) for name in TABLE_5}
"""The minimax report's maze configurations with an LSTM student (its Table 5), by preset name."""
