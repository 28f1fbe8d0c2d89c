"""The builder: a `TrainConfig` -> the parts of its experiment (like PureJaxRL's `make_train`).

Environment, level generator, mutator, model, optimiser settings, runner, device layout and
evaluator are made here and only here; `train`, `evaluate`, `reproduce`, the benchmarks and
the tests import them. The component configs (`cfg.ppo`, `cfg.buffer`, `cfg.curriculum`)
are passed through as they are; the builder only adds what is derived from the whole run.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.agents.ppo import PPOConfig
from minimax.config import TEACHER_METHODS, ConfigError, TrainConfig
from minimax.curricula.training_set import LevelSet
from minimax.envs.maze.level import InvalidLevelError
from minimax.envs.maze.ood import load_level_file
from minimax.devices import DeviceLayout, plan_layout
from minimax.envs.maze import AMaze, MazeParams, level_layout, make_dr_generator, make_empty_generator
from minimax.envs.maze.teacher import MazeTeacher, TeacherParams
from minimax.envs.maze.mutators import make_mutator
from minimax.envs.maze.paths import env_metrics
from minimax.models import MazeActorCritic
from minimax.models.teacher import MazeTeacherActorCritic
from minimax.parallel import NO_SHARD, Shard
from minimax.runners import RUNNERS, DRRunner, PAIREDRunner
from minimax.runners.eval import EvalRunner, SuiteEvaluator


def make_env(cfg: TrainConfig) -> AMaze:
    """The environment (its static settings are `env_params`)."""
    del cfg  # one environment so far; the config will choose once there are several
    return AMaze()


def obs_options(cfg: TrainConfig) -> dict:
    """Observation settings evaluation envs must share with training envs."""
    e = cfg.env
    return dict(n_actions=e.n_actions, agent_view_size=e.agent_view_size, normalize_obs=e.normalize_obs)


def env_params(cfg: TrainConfig) -> MazeParams:
    e = cfg.env
    return MazeParams(height=e.maze_height, width=e.maze_width, max_steps=e.max_episode_steps, **obs_options(cfg))


def make_model(cfg: TrainConfig) -> MazeActorCritic:
    m = cfg.model
    return MazeActorCritic(n_actions=cfg.env.n_actions, recurrent_cell=m.recurrent_cell,
                           recurrent_size=m.recurrent_size, conv_filters=m.conv_filters,
                           dir_embed_size=m.dir_embed_size, head_hidden=m.head_hidden, **_s5_shape(cfg))


def _s5_shape(cfg: TrainConfig) -> dict:
    m = cfg.model
    return dict(s5_layers=m.s5_layers, s5_blocks=m.s5_blocks, s5_layernorm=m.s5_layernorm, s5_scan=m.s5_scan)


def ppo_config(cfg: TrainConfig) -> PPOConfig:
    """`cfg.ppo` with the run's length in gradient steps (the learning-rate annealing's horizon)."""
    p = cfg.ppo
    return p.replace(total_gradient_steps=cfg.num_updates * p.n_epochs * p.n_minibatches)


def level_generator(cfg: TrainConfig):
    e = cfg.env
    if e.train_level_file:
        return load_training_levels(cfg)
    if e.n_walls == 0:
        return make_empty_generator(e.maze_height, e.maze_width)
    return make_dr_generator(e.maze_height, e.maze_width, n_walls=e.n_walls)


def load_training_levels(cfg: TrainConfig) -> LevelSet:
    """The levels of `--train-level-file`, checked to be fixed levels of the training size."""
    path, e = cfg.env.train_level_file, cfg.env
    try:
        mazes = load_level_file(path)
    except (ValueError, InvalidLevelError) as err:
        raise ConfigError(f"--train-level-file: {err}") from None
    for m in mazes:
        if not m.is_fixed:
            raise ConfigError(f"--train-level-file {path}: {m.name!r} is a procedural maze, not a fixed level")
        if (m.height, m.width) != (e.maze_height, e.maze_width):
            raise ConfigError(f"--train-level-file {path}: level {m.name!r} is {m.height}x{m.width}, the training "
                              f"mazes are --maze-height x --maze-width = {e.maze_height}x{e.maze_width}")
    return LevelSet(jax.tree.map(lambda *x: jnp.stack(x), *[m.fixed_level for m in mazes]))


def with_level_file(cfg: TrainConfig) -> tuple[TrainConfig, LevelSet | None]:
    """`cfg` for the runner, with `--train-level-file`'s levels: the PLR family's finite training
    set is then the file's levels (`train_levels` = their number)."""
    if not cfg.env.train_level_file:
        return cfg, None
    levels = load_training_levels(cfg)
    if cfg.method in TEACHER_METHODS:
        raise ConfigError(f"--train-level-file cannot be used with {cfg.method}: its teacher designs the levels")
    if cfg.method == "dr":
        return cfg, levels
    if cfg.curriculum.train_levels not in (0, levels.size):
        raise ConfigError(f"--train-levels ({cfg.curriculum.train_levels}) and --train-level-file "
                          f"({levels.size} levels) disagree: give one of them")
    try:
        return cfg.replace(train_levels=levels.size), levels
    except ConfigError as err:
        raise ConfigError(f"--train-level-file {cfg.env.train_level_file} holds {levels.size} levels: {err}") from None


def teacher_params(cfg: TrainConfig) -> TeacherParams:
    """The design MDP of the learned-teacher methods (PAIRED and relatives)."""
    t = cfg.teacher
    return TeacherParams(height=cfg.env.maze_height, width=cfg.env.maze_width, n_walls=t.teacher_n_walls,
                         noise_dim=t.teacher_noise_dim, replace_wall_pos=t.teacher_replace_wall_pos,
                         normalize_obs=cfg.env.normalize_obs)


def make_teacher_model(cfg: TrainConfig) -> MazeTeacherActorCritic:
    t = cfg.teacher
    return MazeTeacherActorCritic(n_cells=cfg.env.maze_height * cfg.env.maze_width,
                                  num_steps=teacher_params(cfg).num_steps, conv_filters=t.teacher_conv_filters,
                                  recurrent_cell=t.teacher_recurrent_cell, recurrent_size=t.teacher_recurrent_size,
                                  **_s5_shape(cfg))


def build_runner(cfg: TrainConfig, shard: Shard = NO_SHARD):
    """The runner of `cfg` for one seed; `shard`: its device's part of a data-parallel mesh."""
    runner = RUNNERS[cfg.method]
    cfg, levels = with_level_file(cfg)
    if runner is PAIREDRunner:
        students = ppo_config(cfg)
        return PAIREDRunner(make_env(cfg), env_params(cfg), MazeTeacher(), teacher_params(cfg), make_model(cfg),
                            make_teacher_model(cfg), students, cfg.teacher.ppo(students, cfg.num_updates), cfg.num_envs,
                            cfg.num_steps, n_students=cfg.teacher.students_for(cfg.method),
                            score=cfg.teacher.score_for(cfg.method), level_metrics=env_metrics, shard=shard)
    generator = levels if levels is not None else level_generator(cfg)
    args = (make_env(cfg), env_params(cfg), generator, make_model(cfg), ppo_config(cfg), cfg.num_envs, cfg.num_steps)
    if runner is DRRunner:
        return DRRunner(*args, shard=shard, restart_each_update=cfg.env.dr_restart_each_update)
    mutator = make_mutator(cfg.env.mutator, cfg.curriculum.n_mutations) if runner.mutates else None
    return runner(*args, buffer=cfg.buffer, curriculum=cfg.curriculum, mutator=mutator, level_metrics=env_metrics,
                  level_identity=level_layout, shard=shard, global_buffer=cfg.global_buffer)


def device_layout(cfg: TrainConfig) -> DeviceLayout:
    """Seeds and devices of `cfg` as a mesh; bad combinations are `DeviceError`s naming the flags."""
    runner, cur = RUNNERS[cfg.method], cfg.curriculum
    plr_family = runner not in (DRRunner, PAIREDRunner)
    per_device_buffer = plr_family and not cfg.global_buffer
    subsample = cur.mutation_subsample if plr_family and runner.mutates and cur.mutation_criterion != "batch" else 0
    return plan_layout(cfg.seed_list, cfg.devices, cfg.num_envs,
                       cfg.buffer.capacity if per_device_buffer else None, subsample)


def evaluated_params(cfg: TrainConfig, params, multi_seed: bool):
    """The evaluated policy's part of a run's `train_state.params` (`[seeds, ...]` when `multi_seed`):
    all of it, or the protagonist of a student population (PAIRED and relatives)."""
    agent = getattr(RUNNERS[cfg.method], "evaluated_agent", None)
    if agent is None:
        return params
    return jax.tree.map(lambda x: x[:, agent] if multi_seed else x[agent], params)


def make_eval_runner(cfg: TrainConfig, episodes: int, greedy: bool = False, **options) -> EvalRunner:
    """An `EvalRunner` for the policy `cfg` trains (its env, model and observation settings)."""
    return EvalRunner(make_env(cfg), make_model(cfg), episodes, greedy, **options, **obs_options(cfg))


def make_evaluator(cfg: TrainConfig) -> SuiteEvaluator:
    """The training loop's periodic evaluation on `--eval-suite`."""
    e = cfg.eval
    return SuiteEvaluator(make_eval_runner(cfg, e.eval_episodes, e.eval_greedy), e.eval_suite)
