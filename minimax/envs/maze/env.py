"""AMaze: the MiniGrid goal-reaching maze of the UED literature, as pure JAX functions.

Dynamics and observations replicate MiniGrid (`MiniGrid-*` mazes used by dcd, ACCEL
and minimax) with the minimax convention that the agent does not enter the goal cell:
stepping forward into the goal ends the episode in place.

Observation image layout: `image[row, col, channel]` with the agent at the
bottom-middle cell (row V-1, col V//2) looking "up" the image (row 0 is V-1 cells
ahead) and column 0 on the agent's left. MiniGrid's own `encode()` returns the same
view indexed `[col, row]` (x first); this is its transpose, the way a picture is
stored. Channels are (object, colour, state) with MiniGrid's indices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from minimax.envs.environment import Box, Dict, Discrete, Environment
from minimax.envs.maze.level import DIR_TO_VEC, Level

# MiniGrid actions: only the first three change anything in a maze.
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)
ACTION_NAMES = ("left", "right", "forward", "pickup", "drop", "toggle", "done")

# MiniGrid object / colour indices.
OBJ_UNSEEN, OBJ_EMPTY, OBJ_WALL, OBJ_GOAL, OBJ_AGENT = 0, 1, 2, 8, 10
COLOR_RED, COLOR_GREEN, COLOR_GREY = 0, 1, 5



def view_offsets(view_size: int) -> np.ndarray:
    """int32[4, V, V, 2]: world (dx, dy) of each view cell (row, col), per direction.

    Row r is V-1-r cells ahead of the agent, column c is c - V//2 cells to its right.
    """
    rows = np.arange(view_size)[:, None]
    cols = np.arange(view_size)[None, :]
    out = np.zeros((4, view_size, view_size, 2), dtype=np.int32)
    for d in range(4):
        fwd, right = DIR_TO_VEC[d], DIR_TO_VEC[(d + 1) % 4]
        ahead, side = (view_size - 1 - rows), (cols - view_size // 2)
        out[d] = ahead[..., None] * fwd + side[..., None] * right
    return out


@struct.dataclass
class MazeParams:
    """Static parameters (hashable Python values; no array leaves)."""

    height: int = struct.field(pytree_node=False, default=13)
    width: int = struct.field(pytree_node=False, default=13)
    max_steps: int = struct.field(pytree_node=False, default=250)
    n_actions: int = struct.field(pytree_node=False, default=7)
    agent_view_size: int = struct.field(pytree_node=False, default=5)
    see_through_walls: bool = struct.field(pytree_node=False, default=True)
    see_agent: bool = struct.field(pytree_node=False, default=False)
    normalize_obs: bool = struct.field(pytree_node=False, default=False)
    full_view: bool = struct.field(pytree_node=False, default=False)

    def __post_init__(self):
        for name in ("height", "width", "max_steps"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"MazeParams.{name} must be a positive int, got {value!r}")
        if self.height * self.width < 2:
            raise ValueError(f"a {self.height}x{self.width} maze has no room for an agent and a goal")
        if self.n_actions not in (3, 7):
            raise ValueError(f"MazeParams.n_actions must be 7 (MiniGrid) or 3 (left, right, forward), "
                             f"got {self.n_actions!r}")
        v = self.agent_view_size
        if not isinstance(v, (int, np.integer)) or v < 3 or v % 2 == 0:
            raise ValueError(f"MazeParams.agent_view_size must be an odd int >= 3, got {v!r}")


@struct.dataclass
class MazeState:
    """One episode in progress: the level it started from, plus where the agent is now.

    Keeping the level whole in the state means a replay reset only rewrites the agent
    and the clock (XLA drops the select on the unchanged level), and any consumer can
    read which level each env is playing.
    """

    level: Level          # the episode's level (start position and direction included)
    agent_pos: jax.Array  # int32[2] (x, y), now
    agent_dir: jax.Array  # int32, now
    time: jax.Array       # int32, steps taken in this episode
    padded_walls: jax.Array  # bool[(H + 2p) * (W + 2p)], p = view size - 1: walls with the
    # outer ring written in and flattened, so every cell a step or a view can touch is one
    # bounds-check-free gather (about 1.5x faster than a clipped 2-D gather under vmap).
    # Derived from `level` by `init_state`: build states with it, not by replacing `level`.

    @property
    def wall_map(self) -> jax.Array:
        return self.level.wall_map

    @property
    def goal_pos(self) -> jax.Array:
        return self.level.goal_pos


class AMaze(Environment):
    """The maze environment. `reset_to_level(key, level, params)`, `step(key, state, action, params)`.

    Rewards: `1 - 0.9 * (t + 1) / max_steps` for stepping forward into the goal at step t
    (t steps taken before), else 0. `info["terminated"]` is true when the goal was reached,
    `info["truncated"]` when the time limit (t + 1 >= max_steps) ended the episode instead.
    """

    def default_params(self, **overrides) -> MazeParams:
        return MazeParams(**overrides)

    # ---- state
    def init_state(self, level: Level, params: MazeParams) -> MazeState:
        shape = tuple(jnp.shape(level.wall_map))
        if shape != (params.height, params.width):  # static: checked once, at trace time
            raise ValueError(f"level wall_map has shape {shape} but params are for a "
                             f"{params.height}x{params.width} maze (height x width)")
        level = Level(
            wall_map=jnp.asarray(level.wall_map, jnp.bool_),
            goal_pos=jnp.asarray(level.goal_pos, jnp.int32),
            agent_pos=jnp.asarray(level.agent_pos, jnp.int32),
            agent_dir=jnp.asarray(level.agent_dir, jnp.int32),
        )
        pad = _padding(params)
        padded = jnp.pad(level.wall_map, pad, constant_values=True).reshape(-1)
        return MazeState(level=level, agent_pos=level.agent_pos, agent_dir=level.agent_dir,
                         time=jnp.zeros((), jnp.int32), padded_walls=padded)

    def level_of(self, state: MazeState) -> Level:
        return state.level

    def restart_state(self, state: MazeState, params: MazeParams) -> MazeState:
        """Back to the start of the same level; the walls (and their padded copy) stay."""
        return state.replace(agent_pos=state.level.agent_pos, agent_dir=state.level.agent_dir,
                             time=jnp.zeros((), jnp.int32))

    def step_env(self, key, state: MazeState, action, params: MazeParams):
        del key  # deterministic dynamics
        action = jnp.asarray(action, jnp.int32)
        turn = jnp.where(action == LEFT, -1, jnp.where(action == RIGHT, 1, 0))
        agent_dir = (state.agent_dir + turn) % 4

        ahead = state.agent_pos + jnp.asarray(DIR_TO_VEC)[state.agent_dir]
        blocked = state.padded_walls[_flat_index(ahead, params)]
        facing_goal = jnp.all(ahead == state.goal_pos)
        forward = action == FORWARD
        reached_goal = forward & facing_goal
        moves = forward & ~blocked & ~facing_goal
        agent_pos = jnp.where(moves, ahead, state.agent_pos)

        time = state.time + 1
        reward = jnp.where(reached_goal, 1.0 - 0.9 * time / params.max_steps, 0.0).astype(jnp.float32)
        truncated = (time >= params.max_steps) & ~reached_goal
        done = reached_goal | truncated
        state = state.replace(agent_pos=agent_pos, agent_dir=agent_dir, time=time)
        return state, reward, done, {"terminated": reached_goal, "truncated": truncated, "solved": reached_goal}

    # ---- observations
    def get_obs(self, state: MazeState, params: MazeParams) -> dict:
        image = self._full_image(state) if params.full_view else self._egocentric_image(state, params)
        if params.normalize_obs:
            image = image.astype(jnp.float32) / 10.0
        return {"image": image, "agent_dir": state.agent_dir}

    def _egocentric_image(self, state: MazeState, params: MazeParams) -> jax.Array:
        v = params.agent_view_size
        offsets = view_offsets(v)
        row = params.width + 2 * _padding(params)
        flat_offsets = jnp.asarray(offsets[..., 1] * row + offsets[..., 0])  # [4, V, V]
        cells = _flat_index(state.agent_pos, params) + flat_offsets[state.agent_dir]
        wall = state.padded_walls[cells]
        goal = cells == _flat_index(state.goal_pos, params)
        obj = jnp.where(wall, OBJ_WALL, jnp.where(goal, OBJ_GOAL, OBJ_EMPTY))
        color = jnp.where(wall, COLOR_GREY, jnp.where(goal, COLOR_GREEN, 0))
        image = jnp.stack([obj, color, jnp.zeros_like(obj)], axis=-1).astype(jnp.uint8)
        me = (v - 1, v // 2)
        if params.see_agent:
            agent = jnp.stack([OBJ_AGENT, COLOR_RED, state.agent_dir]).astype(jnp.uint8)
        else:
            agent = jnp.array([OBJ_EMPTY, 0, 0], jnp.uint8)
        image = image.at[me].set(agent)
        if not params.see_through_walls:
            image = jnp.where(visibility_mask(~wall)[..., None], image, jnp.uint8(OBJ_UNSEEN))
        return image

    def _full_image(self, state: MazeState) -> jax.Array:
        """The whole interior grid `[H, W, 3]` in world orientation, agent included."""
        h, w = state.wall_map.shape
        ys, xs = jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij")
        goal = (xs == state.goal_pos[0]) & (ys == state.goal_pos[1])
        agent = (xs == state.agent_pos[0]) & (ys == state.agent_pos[1])
        wall = state.wall_map
        obj = jnp.where(agent, OBJ_AGENT, jnp.where(wall, OBJ_WALL, jnp.where(goal, OBJ_GOAL, OBJ_EMPTY)))
        color = jnp.where(agent, COLOR_RED, jnp.where(wall, COLOR_GREY, jnp.where(goal, COLOR_GREEN, 0)))
        dir_channel = jnp.where(agent, state.agent_dir, 0)
        return jnp.stack([obj, color, dir_channel], axis=-1).astype(jnp.uint8)

    # ---- spaces
    def observation_space(self, params: MazeParams) -> Dict:
        if params.full_view:
            shape = (params.height, params.width, 3)
        else:
            shape = (params.agent_view_size, params.agent_view_size, 3)
        if params.normalize_obs:
            image = Box(0.0, OBJ_AGENT / 10.0, shape, jnp.float32)
        else:
            image = Box(0, 255, shape, jnp.uint8)
        return Dict({"image": image, "agent_dir": Discrete(4)})

    def action_space(self, params: MazeParams) -> Discrete:
        return Discrete(params.n_actions)


def _padding(params: MazeParams) -> int:
    """Wall cells added on each side: enough for the farthest cell a view can reach."""
    return params.agent_view_size - 1


def _flat_index(xy, params: MazeParams):
    """Index of interior cell (x, y) in `MazeState.padded_walls`."""
    pad = _padding(params)
    return (xy[..., 1] + pad) * (params.width + 2 * pad) + xy[..., 0] + pad


def visibility_mask(transparent: jax.Array) -> jax.Array:
    """MiniGrid's `Grid.process_vis` on an egocentric view, as unrolled array code.

    `transparent[row, col]` is False for walls. Visibility spreads from the agent
    (bottom-middle) row by row away from it: along each row left-to-right and then
    right-to-left through see-through cells, and from each visible see-through cell
    to the row ahead (same and neighbouring column). Static view size, so the Python
    loops unroll into a fixed program.
    """
    v = transparent.shape[0]
    # MiniGrid indexes the view as [x, y] with the agent at (v//2, v-1); we index [row, col].
    mask = [[False] * v for _ in range(v)]  # mask[x][y]
    mask[v // 2][v - 1] = jnp.asarray(True)
    see = lambda x, y: transparent[y, x]  # noqa: E731
    for y in reversed(range(v)):
        for x in range(v - 1):
            spread = jnp.asarray(mask[x][y]) & see(x, y)
            mask[x + 1][y] = mask[x + 1][y] | spread
            if y > 0:
                mask[x + 1][y - 1] = mask[x + 1][y - 1] | spread
                mask[x][y - 1] = mask[x][y - 1] | spread
        for x in reversed(range(1, v)):
            spread = jnp.asarray(mask[x][y]) & see(x, y)
            mask[x - 1][y] = mask[x - 1][y] | spread
            if y > 0:
                mask[x - 1][y - 1] = mask[x - 1][y - 1] | spread
                mask[x][y - 1] = mask[x][y - 1] | spread
    return jnp.stack([jnp.stack([jnp.asarray(mask[x][y]) for x in range(v)]) for y in range(v)])
