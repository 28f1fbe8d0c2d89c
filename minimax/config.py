"""The training configuration: one typed tree, each option written once, and the method presets.

`TrainConfig` holds the experiment's own options (seeds, run directory, logging, devices) and
one group per component: `env`, `model`, `ppo` (`agents.ppo.PPOConfig`), `eval`, `buffer`
(`curricula.level_buffer.BufferConfig`), `curriculum` (`runners.plr_family.CurriculumConfig`),
`teacher` (`runners.paired.TeacherConfig`, the learned teacher of PAIRED and relatives), `sfl`
(`runners.sfl.SFLConfig`, Sampling For Learnability's level sampling).
A group is the single home of its options (field, default, docstring = `--help`, its own
checks); `TrainConfig` adds the checks across groups. Flags stay flat (`--lr`, `--buffer-size`),
`config.json` is the tree, and flat `config.json` files of older runs still load.

Presets are the minimax report's Table 5 (LSTM student) and Table 6 (S5 student, `*_s5`), value for value (docs/DESIGN.md lists
where the released JSON configs differ); `python train.py --preset plr --lr 1e-3` overrides one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from pathlib import Path
from typing import Annotated, Literal

import tyro

from minimax.agents.ppo import PPOConfig
from minimax.curricula.level_buffer import BufferConfig
from minimax.envs.registry import env_names, get_env
from minimax.models.s5 import s5_shape_problem
from minimax.options import ConfigError, check, flag, flag_names, flatten, option_table, raise_problems
from minimax.runners.paired import TeacherConfig, population_problem
from minimax.runners.plr_family import CurriculumConfig
from minimax.runners.sfl import SFLConfig

Method = Literal["dr", "plr", "robust_plr", "parallel_plr", "accel", "parallel_accel", "paired", "pop_paired",
                 "minimax_adversary", "sfl"]
METHODS: tuple[str, ...] = typing.get_args(Method)
PLR_METHODS = ("plr", "robust_plr", "parallel_plr", "accel", "parallel_accel")
MUTATION_METHODS = ("accel", "parallel_accel")
TEACHER_METHODS = ("paired", "pop_paired", "minimax_adversary")
PresetName = Literal["dr", "plr", "accel", "pplr", "paccel", "paired", "pop_paired", "minimax_adversary",
                     "dr_s5", "plr_s5", "accel_s5", "pplr_s5", "paccel_s5", "paired_s5", "sfl"]


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """The environment and its level generator."""

    env_name: Annotated[str, tyro.conf.arg(name="env")] = "maze"
    """The UED environment (minimax.envs.registry): maze (AMaze), cartpole or pendulum (gymnax physics as levels),
    craftax (Craftax-Classic worlds; needs the craftax package). Each reads its own options below."""
    maze_height: int = 13
    """Maze interior height in cells."""
    maze_width: int = 13
    """Maze interior width in cells."""
    max_episode_steps: int = 0
    """Episode step budget on training levels; 0 = the environment's own (maze 250, cartpole 500, pendulum 200,
    craftax 10000)."""
    n_walls: int = 60
    """Wall draws per generated level (with replacement); 0 generates empty levels (ACCEL)."""
    n_actions: Literal[3, 7] = 7
    """7 = MiniGrid's full action set (the literature's), 3 = left, right, forward."""
    agent_view_size: int = 5
    """Side of the egocentric view (odd)."""
    normalize_obs: bool = True
    """Divide observation images by 10."""
    dr_restart_each_update: bool = False
    """DR: start every env on a fresh level at each update, dropping the episodes in progress and keeping the
    recurrent carry, as the minimax release's DR does (for side-by-side comparisons; default: episodes continue)."""
    train_level_file: str = ""
    """Train on the levels of this text file (evaluate.py's --levels format) instead of generated ones: DR
    draws uniformly among them, the PLR family uses them as its finite training set (as --train-levels)."""
    mutator: str = ""
    """ACCEL edit, one of the environment's mutators; empty = its first. maze: minimax (the default: nothing / flip
    a wall / move the goal) or four_edit (add, remove wall, move agent, goal); cartpole, pendulum: perturb;
    craftax: tiles."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        if self.env_name not in env_names():
            c.add(f"--env must be one of {', '.join(env_names())}, got {self.env_name!r}")
        c.positive("maze_height", "maze_width")
        c.non_negative("n_walls", "max_episode_steps")
        if c.problems:
            return
        h, w = self.maze_height, self.maze_width
        if h * w < 2:
            c.add(f"a {h}x{w} maze (--maze-height x --maze-width) has no room for agent and goal")
        elif self.n_walls > h * w - 2:
            c.add(f"--n-walls must be <= {h * w - 2} for a {h}x{w} maze, got {self.n_walls}")
        v = self.agent_view_size
        if not isinstance(v, int) or v < 3 or v % 2 == 0:
            c.add(f"--agent-view-size must be an odd int >= 3, got {v!r}")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The student network (`minimax.models.MazeActorCritic`)."""

    recurrent_cell: Literal["lstm", "gru", "s5", "none"] = "lstm"
    """Recurrent core of the student network: lstm, gru, or s5 (a stack of S5 state-space layers, whose
    recurrence runs as one scan over the sequence: --s5-scan; models/s5.py); none: a feedforward student
    (the MLP of cartpole, pendulum and craftax)."""
    recurrent_size: int = 256
    """Units of the recurrent core (S5: the layers' width and state size, half of it complex states)."""
    s5_layers: int = 2
    """S5 layers stacked in the core (S5 only; the report's Table 6: 2)."""
    s5_blocks: int = 2
    """HiPPO-N blocks the S5 state matrix is initialised from (S5 only; the report swept 1, 2, 4 and chose 2)."""
    s5_layernorm: Literal["pre", "post", "none"] = "post"
    """Where each S5 layer normalises: its input (pre) or its residual output (post) (S5 only; Table 6 per method)."""
    s5_scan: Literal["auto", "parallel", "sequential"] = "auto"
    """How S5 runs its linear recurrence over a sequence: an associative (parallel) scan, a sequential one, or auto
    (parallel on GPU/TPU, sequential on CPU, where it is faster). Same results within float rounding."""
    conv_filters: int = 16
    """Filters of the 3x3 VALID convolution on the image."""
    dir_embed_size: int = 5
    """Size of the agent-direction embedding."""
    head_hidden: int = 32
    """Hidden units of the policy and value heads."""
    mlp_hidden: int = 64
    """Units of each of the two tanh layers of the MLP student (vector observations: cartpole, pendulum, craftax)."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.positive("recurrent_size", "conv_filters", "dir_embed_size", "head_hidden", "mlp_hidden")
        problem = self.recurrent_cell == "s5" and s5_problem(self.recurrent_size, self, "--recurrent-size")
        if problem and not c.problems:
            c.add(problem)


def s5_problem(size, model: "ModelConfig", size_flag: str) -> str | None:
    """`models/s5.py: s5_shape_problem` for a core of width `size` (given by `size_flag`) with the
    model group's S5 shape, naming the flags."""
    return s5_shape_problem(size, model.s5_blocks, model.s5_layers, (size_flag, "--s5-blocks", "--s5-layers"))


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Periodic evaluation on held-out levels during training."""

    eval_every: int = 100
    """Evaluate on the --eval-suite levels every this many updates (a multiple of --log-every; 0 = never)."""
    eval_suite: str = ""
    """Held-out levels for periodic evaluation: a suite of the environment (maze: validation, dcd12, or
    comma-separated maze names) or empty for the environment's default (maze: validation)."""
    eval_episodes: int = 10
    """Episodes per evaluation level (parallel envs; each env's first episode counts)."""
    eval_greedy: bool = False
    """Evaluate with the most likely action instead of sampling."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.non_negative("eval_every")
        c.positive("eval_episodes")


def _group(cls):
    return dataclasses.field(default_factory=cls)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Train a student with an autocurriculum (domain randomisation, PLR, ACCEL, PAIRED) on a UED environment
    (--env: AMaze by default, cartpole, pendulum, craftax)."""

    # ---------------------------------------------------------------- run
    preset: PresetName = "dr"
    """Start from this method's published configuration; other options override single values."""
    method: Method = "dr"
    """Autocurriculum: dr (domain randomisation), plr, robust_plr, parallel_plr, accel, parallel_accel, paired,
    pop_paired (population PAIRED), minimax_adversary, sfl (Sampling For Learnability)."""
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
    """Updates to train for, as the minimax release counts them: one PPO update each for DR and PAIRED, one rollout
    cycle each for the PLR family (robust PLR and ACCEL train on replay cycles only; logs count gradient_updates)."""
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
    buffer_png: int = 0
    """Save a PNG of the N highest-weighted buffer levels at every log step in <run>/buffer/ (PLR family; 0 = off)."""

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

    env: EnvConfig = _group(EnvConfig)
    """The environment (--env) and its options: maze size, step budget, observations, level generator, mutator."""
    model: ModelConfig = _group(ModelConfig)
    """The student network."""
    ppo: PPOConfig = _group(PPOConfig)
    """PPO (minimax.agents.ppo.PPOConfig)."""
    eval: EvalConfig = _group(EvalConfig)
    """Periodic evaluation on held-out levels."""
    buffer: BufferConfig = _group(BufferConfig)
    """The PLR family's level buffer (minimax.curricula.level_buffer.BufferConfig)."""
    curriculum: CurriculumConfig = _group(CurriculumConfig)
    """How the PLR family uses its buffer (minimax.runners.plr_family.CurriculumConfig)."""
    teacher: TeacherConfig = _group(TeacherConfig)
    """The learned teacher of paired, pop_paired and minimax_adversary (minimax.runners.paired.TeacherConfig)."""
    sfl: SFLConfig = _group(SFLConfig)
    """Sampling For Learnability's level sampling and training set (minimax.runners.sfl.SFLConfig)."""

    def __post_init__(self):
        raise_problems(_problems(self))

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

    # ---------------------------------------------------------------- options by flat name
    def options(self) -> dict:
        """`{option: value}` by flat option name (the flag without dashes), groups included."""
        return {name: getattr(getattr(self, g) if g else self, field) for name, (g, field) in OPTIONS.items()}

    def effective_options(self) -> dict:
        """`options()` with the environment's defaults filled in where an option says "the env's
        own" (`--max-episode-steps 0`, `--eval-suite ''`, `--mutator ''`), so configs saved before
        those defaults moved into the environments compare equal to today's."""
        out = self.options()
        try:
            spec = get_env(self.env.env_name)
        except ValueError:
            return out
        out["max_episode_steps"] = spec.make_params(self.env).max_steps
        out["eval_suite"] = self.eval.eval_suite.strip() or spec.default_suite
        out["mutator"] = self.env.mutator or next(iter(spec.mutators), "")
        return out

    def replace(self, **options) -> "TrainConfig":
        """This config with options changed, given by flat option name (`lr=1e-3, buffer_size=100`)."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"unknown config option(s) {', '.join(unknown)}")
        top = {OPTIONS[n][1]: v for n, v in options.items() if OPTIONS[n][0] is None}
        parts = {g: dataclasses.replace(getattr(self, g), **{OPTIONS[n][1]: v for n, v in options.items()
                                                           if OPTIONS[n][0] == g})
                 for g in {OPTIONS[n][0] for n in options} - {None}}
        return dataclasses.replace(self, **top, **parts)

    @classmethod
    def from_options(cls, **options) -> "TrainConfig":
        """A config from defaults and options given by flat name (`TrainConfig.from_options(lr=1e-3)`)."""
        return cls().replace(**options)

    @staticmethod
    def option_types() -> dict:
        """`{option: type}` by flat option name (Literal types list the allowed values)."""
        return dict(OPTION_TYPES)

    # ---------------------------------------------------------------- files
    def to_dict(self) -> dict:
        """The nested tree of options (derived fields, like the annealing horizon, left out)."""
        out = dataclasses.asdict(self)
        for group, cls in GROUPS.items():
            names = flag_names(cls)
            out[group] = {k: v for k, v in out[group].items() if names[k] in OPTIONS}
        return out

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        """From `to_dict()`'s nested form, or the flat form of configs saved before the groups."""
        values = dict(values)
        flat = {k: v for k, v in values.items() if k not in GROUPS}
        for group in GROUPS:
            nested = values.get(group)
            if isinstance(nested, dict):
                nested = {k: v for k, v in nested.items() if k not in RETIRED}
                names = flag_names(GROUPS[group])
                unknown = sorted(set(nested) - set(names))
                if unknown:
                    raise ConfigError(f"unknown config option(s) {', '.join(f'{group}.{k}' for k in unknown)}")
                flat.update({names[k]: v for k, v in nested.items() if names[k] in OPTIONS})
        for name in RETIRED:
            flat.pop(name, None)
        if "mutation_criterion" not in flat:
            # Configs saved before the criterion existed: q > 0 mutated the q best-scored replays.
            q = flat.get("mutation_subsample", 0)
            flat["mutation_criterion"] = "hard" if q else "batch"
            flat["mutation_subsample"] = q or 4
        return cls.from_options(**flat)

    def save(self, path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path) -> "TrainConfig":
        try:
            values = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"cannot read config {path}: {e}") from None
        return cls.from_dict(values)


RETIRED = ("max_search_rollouts",)
"""Options of older runs that no longer exist (ignored when their config is read): the cap on a
step's gradient-free search, from before a PLR-family step became one cycle."""

GROUPS: dict[str, type] = {"env": EnvConfig, "model": ModelConfig, "ppo": PPOConfig, "eval": EvalConfig,
                           "buffer": BufferConfig, "curriculum": CurriculumConfig, "teacher": TeacherConfig,
                           "sfl": SFLConfig}


OPTIONS, OPTION_TYPES = option_table(TrainConfig, GROUPS)
"""Every option by flat name: `(group or None, field)`, and its type."""


def flat_config(values: dict) -> dict:
    """A saved `config.json` (nested, or flat from before the groups) as `{option: value}`; for tools
    that read run directories without building configs (plots)."""
    return flatten(values, GROUPS)


BOOKKEEPING_OPTIONS = frozenset({
    "seed", "seeds", "num_seeds", "run_name", "out_dir", "resume", "overwrite", "num_updates",
    "progress", "wandb", "wandb_project", "keep_checkpoints", "checkpoint_every", "eval_every",
    "preset", "devices", "buffer_png", "coordinator_address", "num_processes", "process_id",
})
"""Options that do not change what a run trains: runs differing only in these (and in their
seeds) are samples of one experiment, which `plot` draws as one curve and `evaluate` pools
into one confidence interval."""

_UNSET = "<unset>"


def experiment_options(options: dict) -> dict:
    """`{option: value}` (flat names) without the bookkeeping ones: what defines the experiment."""
    return {k: v for k, v in options.items() if k not in BOOKKEEPING_OPTIONS}


def experiment_groups(configs: list[dict], names: list[str] | None = None) -> list[tuple[str, list[int]]]:
    """Group flat configs by experiment, in first-seen order: `[(label, member indices)]`. A label
    is the method, with up to three options that tell apart experiments of one method."""
    keys: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
        keys.setdefault(json.dumps(experiment_options(c), sort_keys=True, default=str), []).append(i)
    groups = list(keys.values())
    names = names or ["run"] * len(configs)
    methods = [experiment_method(configs[g[0]], names[g[0]]) for g in groups]
    labels = list(methods)
    for method in set(methods):
        same = [j for j, m in enumerate(methods) if m == method]
        if len(same) < 2:
            continue
        opts = [experiment_options(configs[groups[j][0]]) for j in same]
        differing = [k for k in sorted({k for o in opts for k in o})
                     if len({json.dumps(o.get(k, _UNSET), default=str) for o in opts}) > 1]
        for j, o in zip(same, opts):
            parts = [f"{k}={_show(o.get(k, _UNSET))}" for k in differing[:3]]
            labels[j] = f"{method} ({', '.join(parts)}{', …' if len(differing) > 3 else ''})"
    return list(zip(labels, groups))


def experiment_method(config: dict, name: str = "run") -> str:
    """The method a flat config trains (its preset, or `name`, for configs that lack it)."""
    return str(config.get("method") or config.get("preset") or name)


def _show(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _problems(c: TrainConfig):
    """Every invalid value the groups cannot see alone, as a message naming its flag."""
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
    for name, low in (("num_seeds", 1), ("devices", 0), ("buffer_png", 0), ("num_processes", 0)):
        v = getattr(c, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= low):
            yield f"{flag(name)} must be an int >= {low}, got {v!r}"
    if c.method not in METHODS:
        yield f"--method must be one of {', '.join(METHODS)}, got {c.method!r}"
    elif c.buffer_png and c.method not in PLR_METHODS:
        yield f"--buffer-png draws the PLR family's level buffer; --method {c.method} has none"
    for name in ("num_updates", "log_every", "keep_checkpoints", "num_envs", "num_steps"):
        v = getattr(c, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
            yield f"{flag(name)} must be > 0, got {v!r}"
    if not c.checkpoint_every >= 0:
        yield f"--checkpoint-every must be >= 0, got {c.checkpoint_every!r}"
    if not c.ppo.lr > 0:  # PPOConfig allows 0 (a frozen policy); a training run does not
        yield f"--lr must be > 0, got {c.ppo.lr!r}"
    if c.num_envs > 0 and c.ppo.n_minibatches > 0 and c.num_envs % c.ppo.n_minibatches:
        yield f"--n-minibatches ({c.ppo.n_minibatches}) must divide --num-envs ({c.num_envs})"
    if c.log_every > 0:
        for name, value in (("eval_every", c.eval.eval_every), ("checkpoint_every", c.checkpoint_every)):
            if value > 0 and value % c.log_every:
                yield f"{flag(name)} ({value}) must be a multiple of --log-every ({c.log_every})"
    if c.run_name and (Path(c.run_name).name != c.run_name or c.run_name in (".", "..")):
        yield f"--run-name must be a plain directory name, got {c.run_name!r}"
    if c.env.env_name in env_names():
        yield from _env_problems(c)
    if c.method in PLR_METHODS:
        yield from _curriculum_problems(c)
    if c.method in TEACHER_METHODS:
        yield from _teacher_problems(c)
    if c.method == "sfl":
        yield from c.sfl.problems(c.num_envs, _episode_limit(c))


def _episode_limit(c: TrainConfig) -> int | None:
    """The training levels' episode step limit, when the environment can be loaded."""
    try:
        return get_env(c.env.env_name).make_params(c.env).max_steps
    except ValueError:
        return None


def _env_problems(c: TrainConfig):
    """The method and evaluation against what the environment offers (`envs/registry.py`)."""
    env = c.env.env_name
    try:
        spec = get_env(env)
    except ValueError as err:  # an optional package is missing
        yield str(err)
        return
    if c.eval.eval_every and c.eval.eval_suite.strip():
        try:
            spec.held_out(c.eval.eval_suite)
        except ValueError as err:
            yield f"--eval-suite: {err}"
    if c.method in MUTATION_METHODS:
        try:
            spec.make_mutator(c.env.mutator or next(iter(spec.mutators), ""), 1)
        except ValueError as err:
            yield f"{c.method}: {err}"
    if c.model.recurrent_cell not in spec.cores:
        yield f"--recurrent-cell {c.model.recurrent_cell}: the student of --env {env} takes {', '.join(spec.cores)}"
    if c.buffer_png and spec.render_levels is None:
        yield f"--buffer-png: --env {env} does not render levels"
    if c.method in TEACHER_METHODS and spec.teacher is None:
        yield f"--method {c.method} needs a teacher's design environment, and --env {env} has none"
    if c.curriculum.score_function in ("least_confidence", "min_margin") and not spec.discrete_actions:
        yield (f"--score-function {c.curriculum.score_function} needs discrete actions; --env {env} has "
               f"continuous ones")
    if c.method == "sfl" and not spec.binary_outcome:
        yield (f"--method sfl scores levels by how often their episodes succeed; --env {env} has no success "
               f"outcome (SFL needs episodes that succeed or fail: maze, cartpole)")
    if c.curriculum.score_function == "learnability" and not spec.binary_outcome:
        yield f"--score-function learnability needs episodes that succeed or fail; --env {env} has no such outcome"


def _teacher_problems(c: TrainConfig):
    """The learned teacher's options against the method and the maze (only for those methods)."""
    t, e = c.teacher, c.env
    problem = population_problem(t.score_for(c.method), t.students_for(c.method), c.method)
    if problem:
        yield f"{c.method}: {problem}"
    cells = e.maze_height * e.maze_width
    if t.teacher_n_walls > cells - 2:
        yield (f"--teacher-n-walls ({t.teacher_n_walls}) is larger than a {e.maze_height}x{e.maze_width} maze "
               f"allows: at most {cells - 2} (its cells minus the goal and the agent)")
    if c.num_envs > 0 and c.num_envs % t.teacher_n_minibatches:
        yield f"--teacher-n-minibatches ({t.teacher_n_minibatches}) must divide --num-envs ({c.num_envs})"
    if t.teacher_recurrent_cell == "s5":
        problem = s5_problem(t.teacher_recurrent_size, c.model, "--teacher-recurrent-size")
        if problem:
            yield problem


def _curriculum_problems(c: TrainConfig):
    """The PLR family's options against each other and the batch (only for those methods)."""
    cur, size = c.curriculum, c.buffer.capacity
    if size < 2:
        yield f"--buffer-size must be >= 2 for {c.method}, got {size}"
    if c.method in MUTATION_METHODS and cur.n_mutations < 1:
        yield f"--n-mutations must be >= 1 for {c.method}, got {cur.n_mutations}"
    ready_at = math.ceil(cur.min_fill_ratio * size)
    if c.method in ("robust_plr", "accel") and cur.replay_prob <= 0 and not cur.train_levels:
        yield f"--replay-prob must be > 0 for {c.method} (it trains only on replays), got {cur.replay_prob}"
    if cur.train_levels and c.method in MUTATION_METHODS:
        yield (f"--train-levels ({cur.train_levels}) cannot be used with {c.method}: its mutated levels would take "
               f"the buffer slots of seen training levels, which are then lost for good (use robust_plr, plr or "
               f"parallel_plr)")
    if cur.train_levels and size < cur.train_levels:
        yield (f"--train-levels ({cur.train_levels}) needs --buffer-size >= {cur.train_levels} (got {size}): "
               f"the buffer must hold every training level, so none is evicted and lost for good")
    elif cur.train_levels and ready_at > cur.train_levels:
        yield (f"--train-levels ({cur.train_levels}) cannot fill --min-fill-ratio x --buffer-size "
               f"({cur.min_fill_ratio} x {size}) levels: replay would never start")
    if not cur.replay_with_replacement and max(ready_at, 1) < c.num_envs:
        yield (f"--no-replay-with-replacement needs --min-fill-ratio x --buffer-size >= --num-envs "
               f"({cur.min_fill_ratio} x {size} < {c.num_envs}): not enough distinct levels to sample")
    if (c.method in MUTATION_METHODS and cur.mutation_criterion != "batch"
            and not 1 <= cur.mutation_subsample <= c.num_envs):
        yield (f"--mutation-subsample must be in [1, --num-envs ({c.num_envs})] for --mutation-criterion "
               f"{cur.mutation_criterion}, got {cur.mutation_subsample}")


# --------------------------------------------------------------------------- presets

_SHARED = dict(num_updates=30_000, num_envs=32, num_steps=256, n_epochs=5, n_minibatches=1, clip_eps=0.2,
               clip_value=True, max_grad_norm=0.5, adam_eps=1e-5, value_coef=0.5, gae_lambda=0.98, maze_height=13,
               maze_width=13, normalize_obs=True, recurrent_cell="lstm", recurrent_size=256,
               eval_every=100, eval_episodes=10, checkpoint_every=1000)
"""Shared by every preset. The maze's step budget (250) and evaluation suite (validation) are its
environment defaults (`envs/maze/spec.py`), so a preset with `--env` keeps that env's own."""
_PLR = dict(buffer_size=4000, score_function="maxmc", score_transform="rank", staleness_coef=0.3,
            min_fill_ratio=0.5, unique_levels=True)
_TEACHER = dict(teacher_lr=1e-4, teacher_gamma=0.995, teacher_gae_lambda=0.98, teacher_entropy_coef=0.05,
                teacher_value_coef=0.5, teacher_n_epochs=5, teacher_n_minibatches=1, teacher_clip_eps=0.2,
                teacher_n_walls=60, teacher_noise_dim=50, teacher_replace_wall_pos=True, teacher_conv_filters=128,
                teacher_recurrent_size=256)
"""Table 5's PAIRED column for the generator (teacher), with the release's `maze/paired.json` for
what the table leaves out (design budget, noise, network)."""
_ACCEL = dict(mutation_criterion="batch", mutation_subsample=4, n_walls=0)  # ACCEL grows levels from empty rooms

TABLE_5 = {
    # preset: (method, gamma, lr, student entropy, replay rate p, temperature beta, mutations)
    "dr": ("dr", 0.995, 1e-4, 1e-3, None, None, None),
    "plr": ("robust_plr", 0.995, 5e-5, 0.0, 0.5, 0.1, None),
    "accel": ("accel", 0.995, 1e-4, 0.0, 0.8, 0.1, 20),
    "pplr": ("parallel_plr", 0.999, 1e-4, 0.0, 0.5, 0.3, None),
    "paccel": ("parallel_accel", 0.995, 1e-4, 0.0, 0.8, 0.1, 10),
    "paired": ("paired", 0.995, 1e-4, 1e-3, None, None, None),
    "pop_paired": ("pop_paired", 0.995, 1e-4, 1e-3, None, None, None),
    "minimax_adversary": ("minimax_adversary", 0.995, 1e-4, 1e-3, None, None, None),
}
"""The minimax report's Table 5 (LSTM student), the columns that differ between methods."""


TABLE_6 = {
    # preset: (method, gamma, lr, student entropy, replay rate p, temperature beta, mutations, S5 layer norm)
    "dr_s5": ("dr", 0.995, 3e-5, 1e-3, None, None, None, "post"),
    "paired_s5": ("paired", 0.995, 1e-4, 1e-3, None, None, None, "post"),
    "plr_s5": ("robust_plr", 0.999, 3e-5, 1e-3, 0.5, 0.3, None, "pre"),
    "pplr_s5": ("parallel_plr", 0.995, 3e-5, 1e-3, 0.5, 0.3, None, "post"),
    "accel_s5": ("accel", 0.999, 3e-5, 1e-3, 0.8, 0.3, 10, "post"),
    "paccel_s5": ("parallel_accel", 0.999, 1e-5, 0.0, 0.8, 0.3, 20, "post"),
}
"""The minimax report's Table 6 (S5 student), the columns that differ between methods. Shared with
Table 5: everything in `_SHARED`, `_PLR` (staleness 0.3, buffer 4000, MaxMC, rank) and ACCEL's batch
mutation of 4; S5: 2 layers, 2 blocks. The PAIRED column's generator entropy is 1e-3 (Table 5: 0.05)."""
_S5 = dict(recurrent_cell="s5", s5_layers=2, s5_blocks=2)


def _preset(name: str) -> TrainConfig:
    if name in TABLE_6:
        method, gamma, lr, entropy, p, beta, mutations, layernorm = TABLE_6[name]
    else:
        (method, gamma, lr, entropy, p, beta, mutations), layernorm = TABLE_5[name], None
    values = dict(preset=name, method=method, gamma=gamma, lr=lr, entropy_coef=entropy, n_walls=60, **_SHARED)
    if method in TEACHER_METHODS:
        values.update(_TEACHER)
    elif method != "dr":
        values.update(_PLR, replay_prob=p, temperature=beta)
    if mutations:
        values.update(_ACCEL, n_mutations=mutations)
    if layernorm:
        values.update(_S5, s5_layernorm=layernorm)
        if method in TEACHER_METHODS:
            values.update(teacher_entropy_coef=1e-3)
    return TrainConfig.from_options(**values)


SFL_MAZE = dict(preset="sfl", method="sfl", num_updates=4500, num_envs=256, num_steps=256, lr=2.5e-4, anneal_lr=True,
                gamma=0.99, gae_lambda=0.95, n_epochs=4, n_minibatches=4, clip_eps=0.04, clip_value=True,
                entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5, adam_eps=1e-5, n_walls=60, maze_height=13,
                maze_width=13, normalize_obs=True, recurrent_cell="lstm", recurrent_size=256, eval_every=100,
                eval_episodes=10, checkpoint_every=1000)
"""SFL's authors' MiniGrid maze run (`amacrutherford/sampling-for-learnability`, `sfl/train/config/
minigrid-sfl.yaml` with `env/minigrid.yaml` and `learning/ippo-minigrid.yaml`): 256 envs x 256 steps,
4 epochs x 4 minibatches, clip 0.04 (ratio and value), gamma 0.99, lambda 0.95, no entropy bonus,
lr 2.5e-4 annealed linearly, 4,500 updates (the 45 blocks of 100 its loop runs of the nominal 4,577),
60-wall 13x13 mazes; the sampling options are `SFLConfig`'s defaults. docs/DESIGN.md lists each
value's source and where we differ."""


def _sfl_preset() -> TrainConfig:
    return TrainConfig.from_options(**SFL_MAZE)


PRESETS: dict[str, TrainConfig] = {**{name: _preset(name) for name in (*TABLE_5, *TABLE_6)}, "sfl": _sfl_preset()}
"""The methods' published maze configurations, by preset name: the minimax report's with an LSTM
student (its Table 5; the learned-teacher presets share Table 5's PAIRED column) and with an S5
student (its Table 6, `*_s5`; the S5 PAIRED teacher keeps Table 5's LSTM network, as the report
replaces the student's LSTM only), and SFL's authors' (`sfl`)."""
