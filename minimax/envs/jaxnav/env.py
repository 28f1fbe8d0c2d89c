"""JaxNav (single agent) as a UED environment: a level is a map with a start pose and a goal.

JaxNav (Rutherford et al., the SFL paper's robot-navigation benchmark; in `jaxmarl`) drives a
square differential-drive robot (side 0.5 m) through an occupancy grid of 1 m cells towards a
goal, seeing only a 200-beam 360-degree lidar (range 6 m) and its own velocity and goal bearing.
Its UED difficulty lives in the map: how many walls, whether they block the way.

What is reused and what is ours. The dynamics, collisions, lidar, reward and observation are
jaxmarl's own `JaxNav.step_env` and `_get_obs`, called as they are on a `JaxNav(num_agents=1)`
built with the SFL paper's settings (`config/env/jaxnav.yaml` there: square agent (`rad` 0.3),
goal radius 0.3, 500 steps, lambda 0.5, 11x11 maps filled up to 0.6, start and goal at free cell
centres, no path check). An episode here is step for step the episode of that object from the same
level with the same actions (the tests check it). Ours is only the level/episode split:

- A *level* (`NavLevel`) is what jaxmarl's `EnvInstance` holds for one agent, without the agent
  axis: start position and heading, goal position, and the wall map (`int32[H, W]`, 1 = wall,
  `map_data[y, x]`, metres with cell (x, y) spanning [x, x+1) x [y, y+1)). The reward weight
  lambda is not part of it: with one agent it only shifts the observation's last feature, and
  SFL trains and tests with 0.5.
- `init_state(level)` is jaxmarl's `set_env_instance` with strongly typed leaves (its `step` and
  `ep_done` are Python scalars there, which a `lax.scan` carry does not keep).
- jaxmarl computes the observation inside `step_env` (its lidar-proximity penalty reads it), so
  the state keeps that observation and `get_obs` returns it: one lidar sweep per step. The state
  also keeps its level's first observation, so an auto-reset to the same level costs no sweep.
- Discrete actions (`actions="discrete"`) index jaxmarl's 15-entry (speed, turn rate) table;
  the table is applied here before the continuous step, which is exactly what jaxmarl's discrete
  mode does (without its trace-time print).

Outcomes: `solved` is jaxmarl's `GoalR` (the robot's centre came within 0.3 m of the goal);
`terminated` is goal or collision (either ends the episode); `truncated` is the 500-step limit
otherwise.
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from minimax.envs.environment import Box, Discrete, Environment


JAXMARL_CHATTER = ("Importing submoduled environments...", "Submoduled environments not found. Skipping import.")
"""What jaxmarl prints when its environments package is imported."""


@contextlib.contextmanager
def _quiet():
    """Import jaxmarl without its chatter (`JAXMARL_CHATTER`). Its MABrax module points `sys.stdout` and
    `sys.stderr` back at `sys.__stdout__` / `sys.__stderr__` after its own import (which would undo a plain
    `contextlib.redirect_stdout`), so both pairs are captured while it imports and restored after; anything
    else written meanwhile (another thread's output, a real error) is passed on, not lost."""
    names = ("stdout", "stderr", "__stdout__", "__stderr__")
    saved = {name: getattr(sys, name) for name in names}
    captured = {"stdout": io.StringIO(), "stderr": io.StringIO()}
    for name in names:
        setattr(sys, name, captured[name.strip("_")])
    try:
        yield
    finally:
        for name in names:
            setattr(sys, name, saved[name])
        for stream, buffer in captured.items():
            kept = [line for line in buffer.getvalue().splitlines(keepends=True)
                    if line.strip() not in JAXMARL_CHATTER]
            if kept:
                getattr(sys, stream).write("".join(kept))


@contextlib.contextmanager
def known_warnings():
    """jaxmarl 0.2.0's harmless warnings: its lidar and path check scatter ints into bool and uint32
    arrays (jax's FutureWarning, at every trace) and its map class notes that a goal-distance bound it never
    uses here exceeds small maps."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="scatter inputs have incompatible types", category=FutureWarning)
        warnings.filterwarnings("ignore", message="max_dist_to_goal", category=UserWarning)
        yield


with _quiet():
    from jaxmarl.environments.jaxnav.jaxnav_env import DISCRETE_ACTS, JaxNav
    from jaxmarl.environments.jaxnav.jaxnav_env import State as JaxNavState

REW_LAMBDA = 0.5   # SFL's fixed reward weight (its observation feature is lambda - 0.5 = 0)
ACTION_TYPES = ("continuous", "discrete")


@struct.dataclass
class NavParams:
    """Static parameters (hashable; no array leaves). The defaults are the SFL paper's JaxNav.

    `map_size` is (width, height) in cells, border walls included; `fill` the largest fraction
    of interior cells a generated map walls off (the wall count is uniform below it);
    `valid_path_check`: generated goals lie in the start's connected free region (SFL's test
    sets use it, its training does not); `actions`: `continuous` (target speed and turn rate,
    SFL's) or `discrete` (jaxmarl's 15 (speed, turn) pairs)."""

    max_steps: int = struct.field(pytree_node=False, default=500)
    map_size: tuple[int, int] = struct.field(pytree_node=False, default=(11, 11))
    fill: float = struct.field(pytree_node=False, default=0.6)
    valid_path_check: bool = struct.field(pytree_node=False, default=False)
    actions: str = struct.field(pytree_node=False, default="continuous")

    def __post_init__(self):
        if not isinstance(self.max_steps, (int, np.integer)) or isinstance(self.max_steps, bool) or self.max_steps < 1:
            raise ValueError(f"NavParams.max_steps must be a positive int, got {self.max_steps!r}")
        size = self.map_size
        if (not isinstance(size, tuple) or len(size) != 2
                or not all(isinstance(s, (int, np.integer)) and s >= 4 for s in size)):
            raise ValueError(f"NavParams.map_size must be a (width, height) tuple of ints >= 4, got {size!r}")
        if not 0.0 <= float(self.fill) < 1.0:
            raise ValueError(f"NavParams.fill must be in [0, 1), got {self.fill!r}")
        if self.actions not in ACTION_TYPES:
            raise ValueError(f"NavParams.actions must be one of {', '.join(ACTION_TYPES)}, got {self.actions!r}")


@functools.lru_cache(maxsize=None)
def jaxnav_env(params: NavParams) -> JaxNav:
    """The jaxmarl `JaxNav(num_agents=1)` with the SFL paper's settings and `params`' (one per params).

    Always continuous: discrete actions are mapped through jaxmarl's table before the step. Built
    eagerly even when first asked for inside a `jit` trace: its constructor computes arrays that
    it keeps (and this cache keeps it), which must be constants, not the trace's tracers."""
    with known_warnings(), jax.ensure_compile_time_eval():
        return _make_jaxnav(params)


def _make_jaxnav(params: NavParams) -> JaxNav:
    return JaxNav(
        num_agents=1, act_type="Continuous", rad=0.3, goal_radius=0.3, evaporating=False,
        max_v=1.0, max_v_acc=1.0, max_w=0.6, max_w_acc=1.0, max_steps=int(params.max_steps), dt=0.1,
        fixed_lambda=True, rew_lambda=REW_LAMBDA, goal_rew=4.0, dt_rew=-0.01, coll_rew=-4.0, weight_g=0.25,
        weight_w=-0.0, lidar_thresh=0.1, lidar_rew=-0.1, lidar_num_beams=200, lidar_range_resolution=0.05,
        lidar_max_range=6.0, lidar_min_range=0.0, lidar_angle_factor=1.0, info_by_agent=True,
        share_only_sparse=False, map_id="Grid-Rand-Poly",
        map_params={"map_size": tuple(int(s) for s in params.map_size), "fill": float(params.fill),
                    "start_pad": 1.5, "valid_path_check": bool(params.valid_path_check),
                    "sample_test_case_type": "grid"},
    )


def jaxmarl_singleton(name: str):
    """jaxmarl's hand-designed single-agent map `name` (a `JaxNavSingleton`: its map and poses)."""
    with _quiet(), known_warnings(), jax.ensure_compile_time_eval():
        from jaxmarl.environments.jaxnav.jaxnav_singletons import make_jaxnav_singleton  # noqa: PLC0415
        return make_jaxnav_singleton(name, num_agents=1)


@struct.dataclass
class NavLevel:
    """One JaxNav task: `agent_pos` f32[2] and `goal_pos` f32[2] in metres (x, y), `agent_theta`
    f32[] in radians, `map_data` int32[H, W] (1 = wall; the border is walls)."""

    agent_pos: jax.Array
    agent_theta: jax.Array
    goal_pos: jax.Array
    map_data: jax.Array


@struct.dataclass
class NavState:
    """jaxmarl's state of the episode, its level, its current observation and its level's first one."""

    nav: JaxNavState
    level: NavLevel
    obs: jax.Array
    start_obs: jax.Array


def nav_level(agent_pos, agent_theta, goal_pos, map_data) -> NavLevel:
    """A level with canonical dtypes (what generators, mutators and level files all return)."""
    return NavLevel(agent_pos=jnp.asarray(agent_pos, jnp.float32).reshape(2),
                    agent_theta=jnp.asarray(agent_theta, jnp.float32).reshape(()),
                    goal_pos=jnp.asarray(goal_pos, jnp.float32).reshape(2),
                    map_data=jnp.asarray(map_data, jnp.int32))


def level_of_jaxnav_state(state: JaxNavState) -> NavLevel:
    """The level of agent 0 of a jaxmarl `State` (what its generator and singletons return)."""
    return nav_level(state.pos[0], state.theta[0], state.goal[0], state.map_data)


def jaxnav_start(level: NavLevel) -> JaxNavState:
    """jaxmarl's first state of an episode on `level` (its `set_env_instance`, strongly typed)."""
    false = jnp.zeros((1,), jnp.bool_)
    return JaxNavState(pos=level.agent_pos[None], theta=level.agent_theta[None], vel=jnp.zeros((1, 2), jnp.float32),
                       done=false, term=false, goal_reached=false, move_term=false,
                       step=jnp.zeros((), jnp.int32), ep_done=jnp.zeros((), jnp.bool_), goal=level.goal_pos[None],
                       map_data=level.map_data, rew_lambda=jnp.asarray(REW_LAMBDA, jnp.float32))


class JaxNavSingle(Environment):
    """Single-agent JaxNav with levels as values (see the module docstring)."""

    def default_params(self, **overrides) -> NavParams:
        return NavParams(**overrides)

    def init_state(self, level: NavLevel, params: NavParams) -> NavState:
        nav = jaxnav_start(level)
        with known_warnings():
            obs = jaxnav_env(params)._get_obs(nav)[0]
        return NavState(nav=nav, level=level, obs=obs, start_obs=obs)

    def level_of(self, state: NavState) -> NavLevel:
        return state.level

    def restart_state(self, state: NavState, params: NavParams) -> NavState:
        return NavState(nav=jaxnav_start(state.level), level=state.level, obs=state.start_obs,
                        start_obs=state.start_obs)

    def step_env(self, key, state: NavState, action, params: NavParams):
        env = jaxnav_env(params)
        if params.actions == "discrete":
            action = DISCRETE_ACTS[action]
        with known_warnings():
            obs, nav, reward, dones, info = env.step_env(key, state.nav, {"agent_0": jnp.asarray(action, jnp.float32)})
        done = dones["__all__"]
        terminated = nav.goal_reached[0] | nav.move_term[0]
        info = {"solved": info["GoalR"][0] > 0, "terminated": terminated, "truncated": done & ~terminated,
                # read where `done`: the logs' share of ended episodes that ended in a wall
                "episode_stats": {"collided": nav.move_term[0].astype(jnp.float32)}}
        return state.replace(nav=nav, obs=obs["agent_0"]), reward["agent_0"], done, info

    def get_obs(self, state: NavState, params: NavParams) -> jax.Array:
        return state.obs

    def observation_space(self, params: NavParams) -> Box:
        # 200 lidar ranges r/6 - 0.5, speed v - 0.5, turn rate w/0.6, goal distance d/6 - 0.5 (d clipped
        # to 6), goal bearing / pi, lambda - 0.5: all within [-1, 1].
        return Box(-1.0, 1.0, (205,), jnp.float32)

    def action_space(self, params: NavParams):
        if params.actions == "discrete":
            return Discrete(int(DISCRETE_ACTS.shape[0]))
        space = jaxnav_env(params).agent_action_space()  # jaxmarl's (speed, turn rate) bounds
        return Box(tuple(float(x) for x in np.asarray(space.low)), tuple(float(x) for x in np.asarray(space.high)),
                   (2,), jnp.float32)
