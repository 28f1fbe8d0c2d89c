"""The builder: a `TrainConfig` -> the parts of its experiment (like PureJaxRL's `make_train`).

Environment, level generator, mutator, model, optimiser settings, curriculum, runner,
device layout and evaluator are made here and only here; `train`, `evaluate`, `reproduce`,
the benchmarks and the tests import them, so a new option or component is wired in once.
"""

from __future__ import annotations

from minimax.agents.ppo import PPOConfig
from minimax.config import MUTATION_METHODS, TrainConfig
from minimax.curricula.level_buffer import BufferConfig
from minimax.devices import DeviceLayout, plan_layout
from minimax.envs.maze import AMaze, MazeParams, make_dr_generator, make_empty_generator
from minimax.envs.maze.mutators import make_mutator
from minimax.envs.maze.paths import env_metrics
from minimax.models import MazeActorCritic
from minimax.parallel import NO_SHARD, Shard
from minimax.runners import RUNNERS, CurriculumConfig, DRRunner
from minimax.runners.eval import EvalRunner, SuiteEvaluator


def make_env(cfg: TrainConfig) -> AMaze:
    """The environment (its static settings are `env_params`)."""
    del cfg  # one environment so far; the config will choose once there are several
    return AMaze()


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
    return CurriculumConfig(replay_prob=cfg.replay_prob, min_fill_ratio=cfg.min_fill_ratio,
                            score_function=cfg.score_function, replay_with_replacement=cfg.replay_with_replacement,
                            train_levels=cfg.train_levels, replay_schedule=cfg.replay_schedule,
                            mutation_criterion=cfg.mutation_criterion, mutation_subsample=cfg.mutation_subsample)


def build_runner(cfg: TrainConfig, shard: Shard = NO_SHARD):
    """The runner of `cfg` for one seed; `shard`: its device's part of a data-parallel mesh."""
    args = (make_env(cfg), env_params(cfg), level_generator(cfg), make_model(cfg), ppo_config(cfg), cfg.num_envs,
            cfg.num_steps)
    runner = RUNNERS[cfg.method]
    if runner is DRRunner:
        return DRRunner(*args, shard=shard)
    mutator = make_mutator(cfg.mutator, cfg.n_mutations) if runner.mutates else None
    return runner(*args, buffer=buffer_config(cfg), curriculum=curriculum_config(cfg), mutator=mutator,
                     level_metrics=env_metrics, shard=shard, global_buffer=cfg.global_buffer)


def device_layout(cfg: TrainConfig) -> DeviceLayout:
    """Seeds and devices of `cfg` as a mesh; bad combinations are `DeviceError`s naming the flags."""
    per_device_buffer = cfg.method != "dr" and not cfg.global_buffer
    return plan_layout(cfg.seed_list, cfg.devices, cfg.num_envs, cfg.buffer_size if per_device_buffer else None,
                       cfg.mutation_subsample if cfg.method in MUTATION_METHODS and cfg.mutation_criterion != "batch"
                       else 0)


def make_eval_runner(cfg: TrainConfig, episodes: int, greedy: bool = False, **options) -> EvalRunner:
    """An `EvalRunner` for the policy `cfg` trains (its env, model and observation settings)."""
    return EvalRunner(make_env(cfg), make_model(cfg), episodes, greedy, **options, **obs_options(cfg))


def make_evaluator(cfg: TrainConfig) -> SuiteEvaluator:
    """The training loop's periodic evaluation on `--eval-suite`."""
    return SuiteEvaluator(make_eval_runner(cfg, cfg.eval_episodes, cfg.eval_greedy), cfg.eval_suite)
