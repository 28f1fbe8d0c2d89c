"""The teacher's MDP for AMaze: design a level one cell at a time (PAIRED and its relatives).

A learned teacher (PAIRED, population PAIRED, the minimax adversary; Dennis et al., 2020) is
an RL agent whose episode builds a level: `n_walls` wall steps, then one goal step, then one
agent step (62 steps for the report's 60 walls). An action is a cell index `y * W + x` in
`0 .. H*W - 1`. The semantics are the minimax release's `UEDMaze` with its PAIRED settings
(`fixed_n_wall_steps`, `replace_wall_pos`, 50 noise dimensions):

- a wall step may choose a cell that already holds a wall: the level then has fewer distinct
  walls (`replace_wall_pos`); with `replace_wall_pos=False` every step that picks a cell used
  before is moved to a uniformly random unused cell instead;
- the goal step may land on a wall, which it removes; the agent step likewise removes a wall,
  but an agent step on the goal is moved to a uniformly random cell that no earlier step chose;
- the agent's direction is drawn uniformly at reset (the teacher does not choose it).

The observation is the map designed so far as MiniGrid's full `(H+2) x (W+2)` grid with its
outer walls (object, colour, direction channels; divided by 10 with `normalize_obs`), the time
step, and `noise_dim` uniform noise values drawn anew every step, so that one policy can design
diverse levels. The reward is 0 on every step: the teacher's return is the regret the runner
computes once the students have played the level (`level(state)`).

Pure functions of explicit state, like the student's environment: vmap them for batches.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from minimax.envs.environment import Box, Dict, Discrete
from minimax.envs.maze.env import COLOR_GREEN, COLOR_GREY, COLOR_RED, OBJ_AGENT, OBJ_EMPTY, OBJ_GOAL, OBJ_WALL
from minimax.envs.maze.level import Level


@struct.dataclass
class TeacherParams:
    """Static settings of the design MDP (hashable; no array leaves)."""

    height: int = struct.field(pytree_node=False, default=13)
    width: int = struct.field(pytree_node=False, default=13)
    n_walls: int = struct.field(pytree_node=False, default=60)
    noise_dim: int = struct.field(pytree_node=False, default=50)
    replace_wall_pos: bool = struct.field(pytree_node=False, default=True)
    normalize_obs: bool = struct.field(pytree_node=False, default=True)

    def __post_init__(self):
        cells = self.height * self.width
        if self.height < 1 or self.width < 1 or cells < 2:
            raise ValueError(f"a {self.height}x{self.width} maze has no room for an agent and a goal")
        if not 0 <= self.n_walls <= cells - 2:
            raise ValueError(f"the teacher's wall budget ({self.n_walls}) must be in [0, {cells - 2}] "
                             f"for a {self.height}x{self.width} maze")
        if self.noise_dim < 0:
            raise ValueError(f"noise_dim must be >= 0, got {self.noise_dim}")

    @property
    def num_steps(self) -> int:
        """Steps of one design episode: the walls, the goal, the agent."""
        return self.n_walls + 2


@struct.dataclass
class TeacherState:
    cells: jax.Array      # int32[n_walls + 2]: the cell chosen at each step so far (0 where not yet)
    agent_dir: jax.Array  # int32[]: drawn at reset
    time: jax.Array       # int32[]: steps taken


class MazeTeacher:
    """`reset(key, params) -> (obs, state)`, `step(key, state, action, params) -> (obs, state, 0,
    done, info)`, `level(state, params) -> Level` (the design; complete once `done`)."""

    def default_params(self, **overrides) -> TeacherParams:
        return TeacherParams(**overrides)

    def reset(self, key, params: TeacherParams):
        k_dir, k_noise = jax.random.split(key)
        state = TeacherState(cells=jnp.zeros((params.num_steps,), jnp.int32),
                             agent_dir=jax.random.randint(k_dir, (), 0, 4, jnp.int32),
                             time=jnp.zeros((), jnp.int32))
        return self.get_obs(k_noise, state, params), state

    def step(self, key, state: TeacherState, action, params: TeacherParams):
        """Place the cell `action` (a wall, the goal or the agent, by the step); steps after the
        last one leave the state as it is (the episode has exactly `num_steps` steps)."""
        k_free, k_noise = jax.random.split(key)
        n_cells, t = params.height * params.width, state.time
        action = jnp.asarray(action, jnp.int32)
        used = self._used(state, params)
        goal = state.cells[params.n_walls]
        onto_goal = (t == params.n_walls + 1) & (action == goal)
        collision = used[action] & (onto_goal | (not params.replace_wall_pos))
        free = jax.random.choice(k_free, n_cells, p=(~used).astype(jnp.float32) / jnp.maximum((~used).sum(), 1))
        cell = jnp.where(collision, free.astype(jnp.int32), action)
        active = t < params.num_steps
        state = state.replace(cells=jnp.where(active, state.cells.at[t].set(cell, mode="drop"), state.cells),
                              time=jnp.where(active, t + 1, t))
        done = state.time >= params.num_steps
        # A design ends complete, never cut: "terminated" (the rollout helpers' convention); a
        # design has no success ("solved" is the students' outcome, not the teacher's).
        info = {"terminated": done, "truncated": jnp.zeros((), bool), "solved": jnp.zeros((), bool)}
        return self.get_obs(k_noise, state, params), state, jnp.zeros((), jnp.float32), done, info

    # ------------------------------------------------------------------ the design so far

    @staticmethod
    def _used(state: TeacherState, params: TeacherParams) -> jax.Array:
        """bool[H*W]: cells chosen by an earlier step."""
        placed = jnp.arange(params.num_steps) < state.time
        n_cells = params.height * params.width
        return jnp.zeros((n_cells,), bool).at[jnp.where(placed, state.cells, n_cells)].set(True, mode="drop")

    @staticmethod
    def _parts(state: TeacherState, params: TeacherParams):
        """`(wall_map bool[H, W], goal cell, goal placed, agent cell, agent placed)`."""
        h, w, n = params.height, params.width, params.n_walls
        wall_steps = jnp.arange(n) < jnp.minimum(state.time, n)
        walls = jnp.zeros((h * w,), bool).at[jnp.where(wall_steps, state.cells[:n], h * w)].set(True, mode="drop")
        goal, agent = state.cells[n], state.cells[n + 1]
        goal_placed, agent_placed = state.time > n, state.time > n + 1
        cells = jnp.arange(h * w)
        walls = walls & ~((cells == goal) & goal_placed) & ~((cells == agent) & agent_placed)
        return walls.reshape(h, w), goal, goal_placed, agent, agent_placed

    def level(self, state: TeacherState, params: TeacherParams) -> Level:
        """The designed level (meaningful once the episode is done: goal and agent are placed)."""
        walls, goal, _, agent, _ = self._parts(state, params)
        w = params.width
        return Level(wall_map=walls, goal_pos=jnp.stack([goal % w, goal // w]).astype(jnp.int32),
                     agent_pos=jnp.stack([agent % w, agent // w]).astype(jnp.int32), agent_dir=state.agent_dir)

    def image(self, state: TeacherState, params: TeacherParams) -> jax.Array:
        """uint8[H+2, W+2, 3]: the design so far as MiniGrid's full grid, outer walls included."""
        walls, goal, goal_placed, agent, agent_placed = self._parts(state, params)
        cells = jnp.arange(params.height * params.width).reshape(params.height, params.width)
        is_goal, is_agent = (cells == goal) & goal_placed, (cells == agent) & agent_placed
        obj = jnp.where(is_agent, OBJ_AGENT, jnp.where(is_goal, OBJ_GOAL, jnp.where(walls, OBJ_WALL, OBJ_EMPTY)))
        color = jnp.where(is_agent, COLOR_RED, jnp.where(is_goal, COLOR_GREEN, jnp.where(walls, COLOR_GREY, 0)))
        direction = jnp.where(is_agent, state.agent_dir, 0)
        inner = jnp.stack([obj, color, direction], axis=-1).astype(jnp.uint8)
        ring = np.pad(np.zeros((params.height, params.width), bool), 1, constant_values=True)
        border = jnp.array([OBJ_WALL, COLOR_GREY, 0], jnp.uint8)
        return jnp.where(ring[..., None], border, jnp.pad(inner, ((1, 1), (1, 1), (0, 0))))

    def get_obs(self, key, state: TeacherState, params: TeacherParams) -> dict:
        image = self.image(state, params)
        obs = {"image": image / 10.0 if params.normalize_obs else image, "time": state.time}
        if params.noise_dim:
            obs["noise"] = jax.random.uniform(key, (params.noise_dim,))
        return obs

    # ------------------------------------------------------------------ spaces

    def observation_space(self, params: TeacherParams) -> Dict:
        shape = (params.height + 2, params.width + 2, 3)
        if params.normalize_obs:
            image = Box(0.0, OBJ_AGENT / 10.0, shape, jnp.float32)
        else:
            image = Box(0, 255, shape, jnp.uint8)
        spaces = {"image": image, "time": Discrete(params.num_steps + 1)}
        if params.noise_dim:
            spaces["noise"] = Box(0.0, 1.0, (params.noise_dim,), jnp.float32)
        return Dict(spaces)

    def action_space(self, params: TeacherParams) -> Discrete:
        return Discrete(params.height * params.width)
