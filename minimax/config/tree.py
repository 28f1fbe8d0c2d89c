"""The training configuration: one typed tree, each option written once, and the method presets.

`TrainConfig` holds the experiment's own options (seeds, run directory, logging, devices) and
one group per component: `env`, `model`, `ppo` (`agents.ppo.PPOConfig`), `eval`, `buffer`
(`curricula.level_buffer.BufferConfig`), `curriculum` (`runners.plr_family.CurriculumConfig`),
`teacher` (`runners.paired.TeacherConfig`, the learned teacher of PAIRED and relatives), `sfl`
(`runners.sfl.SFLConfig`, Sampling For Learnability's level sampling), `ncc` (`runners.ncc.NCCConfig`).
A group is the single home of its options (field, default, docstring = `--help`, its own
checks); `TrainConfig` adds the checks across groups (`config/checks.py`). Flags stay flat
(`--lr`, `--buffer-size`), `config.json` is the tree, and flat `config.json` files of older runs
still load.

The presets (the minimax report's Tables 5 and 6, SFL's and NCC's authors') live in `presets.py`; which
configs are samples of one experiment, in `experiments.py`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from minimax.agents.ppo import PPOConfig
from minimax.core.units import Budget
from minimax.curricula.level_buffer import BufferConfig
from minimax.config.checks import (METHODS, MUTATION_METHODS, PLR_METHODS, TEACHER_METHODS,  # noqa: F401
                                   episode_limit, problems)
from minimax.config.groups import EnvConfig, EvalConfig, ModelConfig
from minimax.config.presets import PRESET_OPTIONS, preset_method
from minimax.envs.registry import get_env
from minimax.core.options import (ConfigError, flag_names, flatten, option_table, raise_problems, read_config_json,
                             type_problems)
from minimax.config.release import is_release_config, release_options
from minimax.runners.paired import TeacherConfig
from minimax.runners.plr_family import CurriculumConfig
from minimax.runners.sfl import SFLConfig
from minimax.runners.ncc import NCCConfig
from minimax.core.files import write_atomically
from minimax.core.versions import with_versions, without_versions

PresetName = Literal[tuple(PRESET_OPTIONS)]  # type: ignore[valid-type]  (follows config/presets.py)


def _group(cls):
    return dataclasses.field(default_factory=cls)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Train a student with an autocurriculum (domain randomisation, PLR, ACCEL, PAIRED, SFL, NCC) on a UED
    environment (AMaze by default)."""

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
    ncc: NCCConfig = _group(NCCConfig)
    """NCC's level buffer and learned replay distribution (minimax.runners.ncc.NCCConfig)."""

    def __post_init__(self):
        raise_problems(problems(self))

    # ---------------------------------------------------------------- derived
    @property
    def seed_list(self) -> list[int]:
        """The seeds this run trains: --seeds, else --seed ... --seed + --num-seeds - 1."""
        if self.seeds.strip():
            return [int(v) for v in self.seeds.split(",") if v.strip()]
        return [self.seed + i for i in range(self.num_seeds)]

    @property
    def name(self) -> str:
        """`--run-name`, else `<what>-seed<s>` (`-seeds0-1-2` for several): `<what>` is the preset
        (`--preset plr` -> `plr-seed0`), or `<preset>+<method>` when `--method` replaced the preset's
        method (`--method plr`, the original PLR, from the dr preset's values -> `dr+plr-seed0`)."""
        if self.run_name:
            return self.run_name
        seeds = self.seed_list
        what = self.preset if self.method == preset_method(self.preset) else f"{self.preset}+{self.method}"
        if len(seeds) == 1:
            return f"{what}-seed{seeds[0]}"
        return f"{what}-seeds" + "-".join(map(str, seeds))

    @property
    def legacy_name(self) -> str:
        """The directory name runs got before names followed the preset: `<method>-seed<s>`."""
        seeds = self.seed_list
        return f"{self.method}-seed{seeds[0]}" if len(seeds) == 1 else f"{self.method}-seeds" + "-".join(
            map(str, seeds))

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
        out["eval_suite"] = self.eval.eval_suite.strip() or spec.default_suite_for(self.env)
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
    def from_dict(cls, values: dict, where: str = "config") -> "TrainConfig":
        """From `to_dict()`'s nested form, or the flat form of configs saved before the groups."""
        values = without_versions(values)
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
        # Runs saved before --budget existed counted rollout cycles (issue 23's reading of the release).
        flat.setdefault("budget", "cycles")
        problems = type_problems(flat, OPTION_TYPES, where)
        if problems:
            raise ConfigError("; ".join(problems))
        if "mutation_criterion" not in flat:
            # Configs saved before the criterion existed: q > 0 mutated the q best-scored replays.
            q = flat.get("mutation_subsample", 0)
            flat["mutation_criterion"] = "hard" if q else "batch"
            flat["mutation_subsample"] = q or 4
        return cls.from_options(**flat)

    def save(self, path) -> None:
        """Write `config.json` atomically (a crash leaves the old file or the new one, never half of one),
        with the versions of minimax, Python, jax and its libraries and the backend under `versions` (a
        record, not an option: `load` ignores it)."""
        write_atomically(Path(path), json.dumps(with_versions(self.to_dict()), indent=2) + "\n")

    @classmethod
    def load(cls, path) -> "TrainConfig":
        values = read_config_json(path)
        if is_release_config(values):  # the minimax release's configs/<env>/*.json
            preset, options = release_options(values, str(path))
            problems = type_problems(options, OPTION_TYPES, str(path))
            if problems:
                raise ConfigError("; ".join(problems))
            return PRESETS[preset].replace(**options)
        return cls.from_dict(values, where=str(path))


RETIRED = ("max_search_rollouts",)
"""Options of older runs that no longer exist (ignored when their config is read): the cap on a
step's gradient-free search, from before a PLR-family step became one cycle."""

GROUPS: dict[str, type] = {"env": EnvConfig, "model": ModelConfig, "ppo": PPOConfig, "eval": EvalConfig,
                           "buffer": BufferConfig, "curriculum": CurriculumConfig, "teacher": TeacherConfig,
                           "sfl": SFLConfig, "ncc": NCCConfig}


OPTIONS, OPTION_TYPES = option_table(TrainConfig, GROUPS)
"""Every option by flat name: `(group or None, field)`, and its type."""


def flat_config(values: dict) -> dict:
    """A saved `config.json` (nested, or flat from before the groups) as `{option: value}`; for tools
    that read run directories without building configs (plots)."""
    return flatten(values, GROUPS)


class _Presets(Mapping):
    """`{preset name: TrainConfig}`, each built (and checked) on first access. Building them all at import
    would make `import minimax` fail wherever an optional environment's package is absent (the JaxNav
    presets check that `jaxmarl` loads); built lazily, only asking for such a preset says what to install."""

    def __init__(self, options: dict[str, dict]):
        self._options, self._built = options, {}

    def __getitem__(self, name: str) -> TrainConfig:
        if name not in self._built:
            self._built[name] = TrainConfig.from_options(**self._options[name])
        return self._built[name]

    def __contains__(self, name) -> bool:  # Mapping's would build the config
        return name in self._options

    def __iter__(self):
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)


PRESETS: Mapping[str, TrainConfig] = _Presets(PRESET_OPTIONS)
"""The published configurations (`config/presets.py`) as configs, by preset name (`--preset`)."""
