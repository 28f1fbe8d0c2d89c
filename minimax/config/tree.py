"""The training configuration: one typed tree, each option written once, and the method presets.

`TrainConfig` holds the run's own options (`run.py`: seeds, run directory, logging, devices), the
groups every run reads (`env`, `model`, `ppo`, `eval`: `groups.py`, `agents.ppo.PPOConfig`) and the
option groups that travel with the registered methods and environments (`groups`, each also an
attribute: `cfg.buffer`, `cfg.curriculum`, `cfg.teacher`, `cfg.sfl`, `cfg.ncc`, `cfg.maze`, and a
plugin's): a method declares them in its own module (`Method(options=...)`), an environment where it
registers (`register(..., options=...)`), and `table.py` assembles them from the registries. This
package imports nothing from `runners/`. A group is the single home of its options (field, default,
docstring = `--help`, its own checks); `TrainConfig` adds the checks across groups (`checks.py`).
Flags stay flat (`--lr`, `--buffer-size`), `config.json` is the tree, and `config.json` files of
older runs (flat, or with options in the groups they used to live in) still load.

The presets (the minimax report's Tables 5 and 6, SFL's and NCC's authors') live in `presets.py`; which
configs are samples of one experiment, in `experiments.py`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path

from minimax.agents.ppo import PPOConfig
from minimax.config.checks import (METHODS, MUTATION_METHODS, PLR_METHODS, TEACHER_METHODS,  # noqa: F401
                                   episode_limit, problems)
from minimax.config.groups import EnvConfig, EvalConfig, ModelConfig
from minimax.config.plugins import PLUGINS, restore, with_records
from minimax.config.presets import PRESET_OPTIONS, preset_method
from minimax.config.release import is_release_config, release_options
from minimax.config.run import CompiledRunOptions
from minimax.config.table import (CORE_GROUPS, GROUPS, OPTION_TYPES, OPTIONS, OptionGroups,  # noqa: F401
                                  flat_config, registered_groups, with_defaults)
from minimax.core.files import write_atomically
from minimax.core.options import ConfigError, flag_names, raise_problems, read_config_json, type_problems
from minimax.core.versions import with_versions, without_versions
from minimax.envs.registry import env_group, get_env


def _group(cls):
    return dataclasses.field(default_factory=cls)


@dataclasses.dataclass(frozen=True)
class TrainConfig(CompiledRunOptions):
    """Train a student with an autocurriculum (domain randomisation, PLR, ACCEL, PAIRED, SFL, NCC) on a UED
    environment (AMaze by default)."""

    env: EnvConfig = _group(EnvConfig)
    """The environment (--env) and its options: maze size, step budget, observations, level generator, mutator."""
    model: ModelConfig = _group(ModelConfig)
    """The student network."""
    ppo: PPOConfig = _group(PPOConfig)
    """PPO (minimax.agents.ppo.PPOConfig)."""
    eval: EvalConfig = _group(EvalConfig)
    """Periodic evaluation on held-out levels."""
    groups: OptionGroups = dataclasses.field(default_factory=OptionGroups)
    """The option groups of the registered methods and environments, by group name (`config/table.py`),
    each also an attribute: `cfg.buffer`, `cfg.curriculum`, `cfg.maze`. A group not given holds its
    defaults; the chosen environment's own is also read through `cfg.env` (`cfg.env.maze_height`)."""

    def __post_init__(self):
        groups = self.groups if isinstance(self.groups, OptionGroups) else OptionGroups(self.groups)
        object.__setattr__(self, "groups", with_defaults(groups))
        own = env_group(self.env.env_name)
        object.__setattr__(self, "env", self.env.with_own(self.groups.get(own) if own else None))
        raise_problems(problems(self))

    def __getattr__(self, name):
        # Only reached for names that are not fields: the registered option groups.
        if name.startswith("_"):
            raise AttributeError(name)
        groups = self.__dict__.get("groups")
        if groups is not None and name in groups:
            return groups[name]
        cls = registered_groups().get(name)
        if cls is None:
            raise AttributeError(f"TrainConfig has no option or option group {name!r}")
        return cls()

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
        out["mutator"] = self.mutation.mutator or next(iter(spec.mutators), "")
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
        core = {g: parts.pop(g) for g in list(parts) if g in CORE_GROUPS}
        groups = self.groups.replace(**parts) if parts else self.groups
        return dataclasses.replace(self, **top, **core, groups=groups)

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
        """The nested tree of options, one entry per group (derived fields, like the annealing horizon, left out)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(CompiledRunOptions)}
        for group in GROUPS:
            names = flag_names(GROUPS[group])
            values = dataclasses.asdict(getattr(self, group))
            out[group] = {k: v for k, v in values.items() if names[k] in OPTIONS}
        return out

    @classmethod
    def from_dict(cls, values: dict, where: str = "config") -> "TrainConfig":
        """From `to_dict()`'s nested form, or the flat form of configs saved before the groups. An option
        found in a group it no longer lives in (`curriculum.replay_prob`, `env.maze_height` before the
        methods and environments owned their options) is read by its flat name."""
        values = {k: v for k, v in without_versions(values).items() if k != PLUGINS}
        flat = {k: v for k, v in values.items() if not isinstance(v, dict)}
        for group, nested in values.items():
            if not isinstance(nested, dict):
                continue
            names = flag_names(GROUPS[group]) if group in GROUPS else {}
            nested = {names.get(k, k): v for k, v in nested.items() if k not in RETIRED}
            unknown = sorted(k for k in nested if k not in OPTIONS)
            if unknown:
                raise ConfigError(f"unknown config option(s) {', '.join(f'{group}.{k}' for k in unknown)} ({where}; "
                                  f"a method or environment registered by a plugin must be imported first)")
            flat.update(nested)
        for name in RETIRED:
            flat.pop(name, None)
        # Runs saved before --budget existed counted rollout cycles (issue 23's reading of the release).
        flat.setdefault("budget", "cycles")
        problems = type_problems(flat, OPTION_TYPES, where)
        if problems:
            raise ConfigError("; ".join(problems))
        if "traced_transition_coef" in flat:
            # TRACED runs saved before 2026-11-28 (issue 70): their model saw every observation leaf and their
            # scores were per-step means; their traced_obs_scale (0.1 then) is saved and read as it is.
            flat.setdefault("traced_observation", "all")
            flat.setdefault("traced_score_sums", False)
        if "min_fill_ratio" in flat:
            # PLR-family runs saved before 2026-11-28 (issue 70): PACE measured the whole PPO loss's gradient over
            # every parameter.
            flat.setdefault("pace_loss", "ppo")
            flat.setdefault("pace_params", "all")
        if "novelty_window" in flat:
            # CENIE runs saved before 2026-11-28 (issue 70): every cycle's rollouts joined the coverage.
            flat.setdefault("novelty_coverage", "cycles")
        if "mutation_criterion" not in flat:
            # Configs saved before the criterion existed: q > 0 mutated the q best-scored replays.
            q = flat.get("mutation_subsample", 0)
            flat["mutation_criterion"] = "hard" if q else "batch"
            flat["mutation_subsample"] = q or 4
        return cls.from_options(**flat)

    def save(self, path) -> None:
        """Write `config.json` atomically (a crash leaves the old file or the new one, never half of one),
        with the versions of minimax, Python, jax and its libraries and the backend under `versions` (a
        record, not an option: `load` ignores it), and under `plugins` the plugins its names come from
        (`config/plugins.py`: `load` imports them again)."""
        saved = with_records(with_versions(self.to_dict()), self.options())
        write_atomically(Path(path), json.dumps(saved, indent=2) + "\n")

    @classmethod
    def load(cls, path) -> "TrainConfig":
        values = read_config_json(path)
        restore(values.get(PLUGINS, []), str(path))
        if is_release_config(values):  # the minimax release's configs/<env>/*.json
            preset, options = release_options(values, str(path))
            try:
                problems = type_problems(options, OPTION_TYPES, str(path))
                if problems:
                    raise ConfigError("; ".join(problems))
                return PRESETS[preset].replace(**options)
            except ConfigError as e:
                raise ConfigError(in_release_terms(str(e), values)) from None
        try:
            return cls.from_dict(values, where=str(path))
        except ConfigError as e:
            if " must be one of " not in str(e) or values.get(PLUGINS):
                raise
            raise ConfigError(f"{e} ({path} names no plugin: a name a plugin registered needs --plugin FILE, given "
                              "once; runs saved since 2026-11-29 remember their plugins)") from None


def in_release_terms(message: str, values: dict) -> str:
    """`message` with each flag of ours that a release config's argument set named by that argument as the file
    writes it (`n_total_updates (--num-updates)`), so that a refusal points at the file's key."""
    from minimax.config.release import SAME  # noqa: PLC0415

    for key in sorted(values.get("args", {}), key=len, reverse=True):
        if key in SAME:
            ours = "--" + SAME[key].replace("_", "-")
            message = re.sub(re.escape(ours) + r"(?![\w-])", f"{key} ({ours})", message)
    return message


RETIRED = ("max_search_rollouts",)
"""Options of older runs that no longer exist (ignored when their config is read): the cap on a
step's gradient-free search, from before a PLR-family step became one cycle."""

class _Presets(Mapping):
    """`{preset name: TrainConfig}`, each built (and checked) on first access. Building them all at import
    would make `import minimax` fail wherever an optional environment's package is absent (the JaxNav
    presets check that `jaxmarl` loads); built lazily, only asking for such a preset says what to install.
    Kept per registered option groups: a preset read after a plugin registers its environment's options has
    that group, as every config made then has (it once kept the group set of its first reading)."""

    def __init__(self, options: dict[str, dict]):
        self._options, self._built = options, {}

    def __getitem__(self, name: str) -> TrainConfig:
        key = (name, tuple((group, id(cls)) for group, cls in registered_groups().items()))
        if key not in self._built:
            self._built[key] = TrainConfig.from_options(**self._options[name])
        return self._built[key]

    def __contains__(self, name) -> bool:  # Mapping's would build the config
        return name in self._options

    def __iter__(self):
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)


PRESETS: Mapping[str, TrainConfig] = _Presets(PRESET_OPTIONS)
"""The published configurations (`config/presets.py`) as configs, by preset name (`--preset`)."""
