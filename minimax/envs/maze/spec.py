"""AMaze as a registered UED environment (`--env maze`): the one place that tells the
generic layers (runners, curricula, evaluate, plot, reproduce) what a maze run is made of."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from minimax.envs.maze.env import AMaze, MazeParams
from minimax.envs.maze.generators import make_dr_generator, make_empty_generator
from minimax.envs.maze.level import InvalidLevelError, level_layout
from minimax.envs.maze.mutators import MUTATORS
from minimax.envs.maze.ood import SUITES, get_suite, load_level_file
from minimax.envs.maze.paths import env_metrics, optimal_return, shortest_action_count, shortest_path_length
from minimax.envs.maze.render import episode_frames, render_level
from minimax.envs.maze.teacher import MazeTeacher, TeacherParams
from minimax.envs.registry import TeacherSpec, UEDEnv


DEFAULT_MAX_STEPS = 250  # the minimax report's (Table 5) and MiniGrid's budget for 13x13 mazes


def maze_params(options) -> MazeParams:
    """The training mazes' static params from the run's `EnvConfig`."""
    return MazeParams(height=options.maze_height, width=options.maze_width,
                      max_steps=options.max_episode_steps or DEFAULT_MAX_STEPS,
                      n_actions=options.n_actions, agent_view_size=options.agent_view_size,
                      normalize_obs=options.normalize_obs)


def maze_generator(options):
    """DR's levels: `--n-walls` walls drawn with replacement, or empty rooms (ACCEL) for 0."""
    if options.n_walls == 0:
        return make_empty_generator(options.maze_height, options.maze_width)
    return make_dr_generator(options.maze_height, options.maze_width, n_walls=options.n_walls)


def maze_model(cfg):
    from minimax.models import MazeActorCritic  # noqa: PLC0415 (models sit beside envs, not below)

    m = cfg.model
    return MazeActorCritic(n_actions=cfg.env.n_actions, recurrent_cell=m.recurrent_cell,
                           recurrent_size=m.recurrent_size, conv_filters=m.conv_filters,
                           dir_embed_size=m.dir_embed_size, head_hidden=m.head_hidden, s5_layers=m.s5_layers,
                           s5_blocks=m.s5_blocks, s5_layernorm=m.s5_layernorm, s5_scan=m.s5_scan,
                           scan_unroll=m.scan_unroll, matmul_dtype=m.matmul_dtype)


@jax.jit
def level_metrics(level) -> dict:
    """Walls, solvability and the shortest path of a level for the logs; the path is NaN
    (undefined: left out of its mean) where the goal cannot be reached. Jitted, as `level_facts`, so that a
    step's several calls trace its breadth-first search once."""
    m = env_metrics(level)
    path = jnp.where(m["solvable"], m["shortest_path"].astype(jnp.float32), jnp.nan)
    return {"n_walls": m["n_walls"], "shortest_path": path, "solvable": m["solvable"]}


@functools.partial(jax.jit, static_argnums=1)
def level_facts(levels, params):
    """Per level of a batch: the optimal return (in-jit shortest path), whether the goal is reachable, and the
    optimal episode's action count (-1 where no episode within `max_steps` reaches the goal).

    Jitted so that a runner step, which asks it for new, replayed and mutated levels of the same shapes, traces
    its breadth-first searches once: jit keeps the trace per shapes (tracing them costs ~0.4 s each time)."""
    optimal = jax.vmap(optimal_return, in_axes=(0, None))(levels, params.max_steps)
    steps = jax.vmap(shortest_action_count)(levels)
    return optimal, jax.vmap(shortest_path_length)(levels) >= 0, jnp.where(steps <= params.max_steps, steps, -1)


def load_levels(path: str):
    """The mazes of a level file (`evaluate.py --levels`, `--train-level-file`); bad files are `ValueError`s."""
    try:
        return load_level_file(path)
    except InvalidLevelError as err:
        raise ValueError(str(err)) from None


def check_training_level(maze, options) -> str | None:
    """Why a maze of a `--train-level-file` cannot be a training level, or None."""
    if not maze.is_fixed:
        return f"{maze.name!r} is a procedural maze, not a fixed level"
    if (maze.height, maze.width) != (options.maze_height, options.maze_width):
        return (f"level {maze.name!r} is {maze.height}x{maze.width}, the training mazes are --maze-height x "
                f"--maze-width = {options.maze_height}x{options.maze_width}")
    return None


def trace_state(state) -> dict:
    """What a rendered episode needs of each step's state."""
    return {"agent_pos": state.agent_pos, "agent_dir": state.agent_dir}


def render_levels(levels, tile_size: int = 8):
    """uint8 images of a batch of levels (the buffer pictures)."""
    return np.asarray(render_level(jax.tree.map(jnp.asarray, levels), tile_size=max(tile_size, -(
        -100 // (np.shape(levels.wall_map)[-1] + 2)))))


def render_episode(level, trace, params, max_frames: int = 200):
    """uint8[T, h, w, 3]: an episode's frames from `trace_state` records cut to its length."""
    tile = max(2, min(16, 480 // (max(params.height, params.width) + 2)))
    return episode_frames(level, trace["agent_pos"], trace["agent_dir"], tile_size=tile,
                          agent_view_size=params.agent_view_size, max_frames=max_frames)


def teacher_params(cfg) -> TeacherParams:
    t = cfg.teacher
    return TeacherParams(height=cfg.env.maze_height, width=cfg.env.maze_width, n_walls=t.teacher_n_walls,
                         noise_dim=t.teacher_noise_dim, replace_wall_pos=t.teacher_replace_wall_pos,
                         normalize_obs=cfg.env.normalize_obs)


def teacher_model(cfg):
    from minimax.models.teacher import MazeTeacherActorCritic  # noqa: PLC0415

    t, m = cfg.teacher, cfg.model
    return MazeTeacherActorCritic(n_cells=cfg.env.maze_height * cfg.env.maze_width,
                                  num_steps=teacher_params(cfg).num_steps, conv_filters=t.teacher_conv_filters,
                                  recurrent_cell=t.teacher_recurrent_cell, recurrent_size=t.teacher_recurrent_size,
                                  s5_layers=m.s5_layers, s5_blocks=m.s5_blocks, s5_layernorm=m.s5_layernorm,
                                  s5_scan=m.s5_scan, scan_unroll=m.scan_unroll, matmul_dtype=m.matmul_dtype)


MAZE = UEDEnv(
    name="maze",
    description="AMaze: MiniGrid goal-reaching mazes (the minimax report's environment)",
    make_env=lambda options: AMaze(),
    make_params=maze_params,
    make_generator=maze_generator,
    make_model=maze_model,
    held_out=get_suite,
    suites=tuple(SUITES),
    default_suite="validation",
    test_suite="dcd12",
    mutators=dict(MUTATORS),  # the first, minimax's, is the default
    level_identity=level_layout,
    level_metrics=level_metrics,
    level_facts=level_facts,
    binary_outcome=True,
    teacher=TeacherSpec(env=MazeTeacher(), make_params=teacher_params, make_model=teacher_model),
    load_levels=load_levels,
    check_training_level=check_training_level,
    trace_state=trace_state,
    render_levels=render_levels,
    render_episode=render_episode,
)
