"""The builder: a `TrainConfig` -> the parts of its experiment (like PureJaxRL's `make_train`).

Environment, level generator, mutator, model, optimiser settings, runner, device layout and
evaluator are made here and only here; `train`, `evaluate`, `reproduce`, the benchmarks and
the tests import them. The component configs (`cfg.ppo`, `cfg.buffer`, `cfg.curriculum`)
are passed through as they are; the builder only adds what is derived from the whole run.
"""

from __future__ import annotations

import copy
import functools

import jax
import jax.numpy as jnp

from minimax.agents.ppo import PPOConfig
from minimax.models.recurrent import resolve_unroll
from minimax.config import ConfigError, TrainConfig
from minimax.config.hyperparams import traced_view
from minimax.core.options import checks_deferred
from minimax.curricula.training_set import LevelSet
from minimax.training.devices import DeviceLayout, plan_layout
from minimax.envs.registry import UEDEnv, get_env
from minimax.core.parallel import NO_SHARD, Shard
from minimax.runners import get_method
from minimax.runners.eval import EvalRunner, SuiteEvaluator


def env_spec(cfg: TrainConfig) -> UEDEnv:
    """The registered environment of `--env` (`envs/registry.py`): everything env-specific comes from it."""
    return get_env(cfg.env.env_name)


def make_env(cfg: TrainConfig):
    """The environment (its static settings are `env_params`)."""
    return env_spec(cfg).make_env(cfg.env)


def env_params(cfg: TrainConfig):
    """The training levels' static env params."""
    return env_spec(cfg).make_params(cfg.env)


def make_model(cfg: TrainConfig):
    """The student network the environment asks for, with the run's model options."""
    return env_spec(cfg).make_model(cfg)


def make(env: str = "maze", **options):
    """gymnax-style `(env, env_params)` of a registered environment (`--env`), with environment
    options by flat name: `make("maze", maze_height=9, n_walls=10)`."""
    cfg = TrainConfig.from_options(env=env, **options)
    return make_env(cfg), env_params(cfg)


def ppo_config(cfg: TrainConfig) -> PPOConfig:
    """`cfg.ppo` with the run's length in gradient steps (the learning-rate annealing's horizon)."""
    p = cfg.ppo
    return p.replace(total_gradient_steps=cfg.num_updates * p.n_epochs * p.n_minibatches,
                     unroll=resolve_unroll(cfg.model.scan_unroll))


def level_generator(cfg: TrainConfig):
    """The run's levels: `--train-level-file`'s, else the environment's generator, jitted.

    A chunk traces a runner's cycle up to three times (its metrics' shapes, the cycles of new levels
    in a loop, the cycle that trains), and each trace calls the generator, under `vmap` over envs and
    seeds. A jitted generator is one function whose trace and batched trace JAX caches, so the later
    calls are free: Kinetix's sampler (thousands of small operations) took 50 s per trace under two
    vmaps, 151 s of a robust PLR chunk's 228 s of tracing on CPU; jitted, 78 s in all. The program is
    the same (XLA inlines the nested call)."""
    if cfg.env.train_level_file:
        return load_training_levels(cfg)
    return jax.jit(env_spec(cfg).make_generator(cfg.env))


def load_training_levels(cfg: TrainConfig) -> LevelSet:
    """The levels of `--train-level-file`, checked by the environment to be fixed training levels."""
    path, spec = cfg.env.train_level_file, env_spec(cfg)
    if spec.load_levels is None:
        raise ConfigError(f"--train-level-file: --env {spec.name} has no level file format")
    try:
        entries = spec.load_levels(path)
    except ValueError as err:
        raise ConfigError(f"--train-level-file: {err}") from None
    for entry in entries:
        problem = spec.check_training_level(entry, cfg.env) if spec.check_training_level else (
            None if entry.is_fixed else f"{entry.name!r} is not a fixed level")
        if problem:
            raise ConfigError(f"--train-level-file {path}: {problem}")
    return LevelSet(jax.tree.map(lambda *x: jnp.stack(x), *[e.fixed_level for e in entries]))


def with_level_file(cfg: TrainConfig) -> tuple[TrainConfig, LevelSet | None]:
    """`cfg` for the runner, with `--train-level-file`'s levels: the PLR family's finite training
    set is then the file's levels (`train_levels` = their number)."""
    if not cfg.env.train_level_file:
        return cfg, None
    levels = load_training_levels(cfg)
    if get_method(cfg.method).designs_levels:
        raise ConfigError(f"--train-level-file cannot be used with {cfg.method}: its teacher designs the levels")
    if not get_method(cfg.method).level_buffer:  # DR and SFL draw from the file's levels
        return cfg, levels
    if cfg.curriculum.train_levels not in (0, levels.size):
        raise ConfigError(f"--train-levels ({cfg.curriculum.train_levels}) and --train-level-file "
                          f"({levels.size} levels) disagree: give one of them")
    try:
        return cfg.replace(train_levels=levels.size), levels
    except ConfigError as err:
        raise ConfigError(f"--train-level-file {cfg.env.train_level_file} holds {levels.size} levels: {err}") from None


class RunParts:
    """The parts a method's `build` makes its runner from (`runners/registry.py: BuildParts`),
    each made on first use: a learned teacher's method never builds the level generator."""

    def __init__(self, cfg: TrainConfig, levels: LevelSet | None, shard: Shard):
        self.cfg, self.levels, self.shard, self.spec = cfg, levels, shard, env_spec(cfg)
        self._made: dict = {}  # the generator and mutator: static options only, shared with `with_hp`'s copies

    @property
    def generator(self):
        """The run's levels: `--train-level-file`'s, else the environment's generator, jitted (`level_generator`)."""
        if "generator" not in self._made:
            self._made["generator"] = self.levels if self.levels is not None else level_generator(self.cfg)
        return self._made["generator"]

    @functools.cached_property
    def args(self) -> tuple:
        """`(env, env_params, generator, model, ppo, num_envs, num_steps)`, the runners' common head."""
        cfg = self.cfg
        return make_env(cfg), env_params(cfg), self.generator, make_model(cfg), ppo_config(cfg), cfg.num_envs, \
            cfg.num_steps

    def mutator(self):
        """The run's mutator, jitted as the generator is (`level_generator`): traced once, not per cycle trace."""
        if "mutator" not in self._made:
            self._made["mutator"] = jax.jit(self.spec.make_mutator(self.cfg.mutation.mutator,
                                                                   self.cfg.mutation.n_mutations))
        return self._made["mutator"]

    def with_hp(self, hp: dict) -> "RunParts":
        """These parts with `hp`'s values in the config's traced fields (inside a program: `config/hyperparams.py`).
        The generator and mutator read static options only and are shared with the copy: a jitted function keeps
        its traces, so the chunks of every length (and `make_train`'s) trace them once, as one runner did when
        the values were constants (Kinetix's sampler: tens of seconds a trace)."""
        out = copy.copy(self)
        out.cfg = traced_view(self.cfg, hp)
        out.__dict__.pop("args", None)
        return out


def run_parts(cfg: TrainConfig, shard: Shard = NO_SHARD) -> RunParts:
    """The parts of `cfg`'s runner for one seed (`--train-level-file`'s levels read here, once); `shard`: its
    device's part of a data-parallel mesh."""
    cfg, levels = with_level_file(cfg)
    return RunParts(cfg, levels, shard)


def runner_from(parts: RunParts, hp: dict | None = None):
    """The runner its registered method builds from `parts`; with `hp` (inside a program), from
    `parts.with_hp(hp)`. A runner built with `hp` steps a state; the state is made by `init` of one built
    without (its optimiser's static parts must not hold a program's inputs)."""
    method = get_method(parts.cfg.method)
    if not hp:
        return method.build(parts)
    with checks_deferred():  # the values are tracers; `hp_arrays` checked them
        return method.build(parts.with_hp(hp))


def build_runner(cfg: TrainConfig, shard: Shard = NO_SHARD, hp: dict | None = None):
    """The runner of `cfg` for one seed (`run_parts`, `runner_from`)."""
    return runner_from(run_parts(cfg, shard), hp)


def device_layout(cfg: TrainConfig) -> DeviceLayout:
    """Seeds and devices of `cfg` as a mesh; bad combinations are `DeviceError`s naming the flags."""
    return plan_layout(cfg.seed_list, cfg.devices, cfg.num_envs, other_splits=get_method(cfg.method).splits(cfg))


def evaluated_params(cfg: TrainConfig, params, multi_seed: bool):
    """The evaluated policy's part of a run's `train_state.params` (`[seeds, ...]` when `multi_seed`):
    all of it, or the protagonist of a student population (PAIRED and relatives)."""
    agent = evaluated_agent(cfg.method)
    if agent is None:
        return params
    return jax.tree.map(lambda x: x[:, agent] if multi_seed else x[agent], params)


def evaluated_agent(method: str) -> int | None:
    """The evaluated student's index on the agent axis of a population method's params (None: one agent)."""
    return getattr(get_method(method).runner, "evaluated_agent", None)


def make_eval_runner(cfg: TrainConfig, episodes: int, greedy: bool = False, **options) -> EvalRunner:
    """An `EvalRunner` for the policy `cfg` trains (its env, model and observation settings)."""
    return EvalRunner(make_env(cfg), make_model(cfg), env_params(cfg), episodes, greedy,
                      level_facts=env_spec(cfg).level_facts, trace_state=env_spec(cfg).trace_state, **options)


def make_evaluator(cfg: TrainConfig) -> SuiteEvaluator:
    """The training loop's periodic evaluation on `--eval-suite`."""
    e = cfg.eval
    return SuiteEvaluator(make_eval_runner(cfg, e.eval_episodes, e.eval_greedy), eval_levels(cfg, e.eval_suite))


def eval_levels(cfg: TrainConfig, suite: str = ""):
    """The held-out levels of `suite` (empty: the environment's default suite)."""
    spec = env_spec(cfg)
    return spec.held_out(suite.strip() or spec.default_suite_for(cfg.env))
