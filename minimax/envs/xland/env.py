"""XLand-MiniGrid as a UED environment: a level is a ruleset, played by xminigrid's own engine.

XLand-MiniGrid (Nikulin et al., 2024) is a grid world whose task is a *ruleset*: a goal (hold a
ball; put a red key next to a star) and production rules (a key next to a star becomes a hex)
over the objects a room starts with, every object and door drawn at random positions of a
four-room grid (`R4-13x13`) at each reset. The SFL and NCC papers train meta-RL agents on it with
rulesets as levels. This module exposes it through minimax's `Environment` API.

What is reused and what is ours. The room generation (`XLandMiniGrid._generate_problem`), the
step (`Environment.step`: actions, then the rules, then the goal check, the reward
`1 - 0.9 * t / max_steps` on success) and the egocentric observation (`transparent_field_of_view`,
uint8[5, 5, 2] of tile and colour ids) are xminigrid's own functions called as they are: an
episode here is step for step the episode of xminigrid's env with `GymAutoResetWrapper`, from the
same ruleset and key (the tests check it). Ours is only the level/episode split UED needs:

- A *level* (`XLandLevel`) is a ruleset (goal uint8[5], rules uint8[R, 7], initial tiles
  uint8[T, 2], zero-padded to the benchmark's shapes) and the key of its first layout (raw uint32[2]
  key data). `init_state(level)` is xminigrid's reset with that key, so an episode's start is a
  function of its level alone and a replayed level replays the same rooms (PLR's premise). The
  padding matters: xminigrid draws the agent's cell after T object cells, so a ruleset padded to
  another T starts elsewhere; levels keep the padding of the benchmark they come from.
- The next episode of the same level (`restart_state`, the auto-reset wrappers) is the next
  layout of its key chain, as xminigrid's `GymAutoResetWrapper` draws it (`split(state.key)[0]`):
  the same ruleset in a new room, so the episodes of a trial (`envs/trials.py`, SFL's meta-RL)
  are xminigrid's.
- `info["solved"]` is the goal reached (xminigrid's `discount == 0`); `info["truncated"]` the
  time limit (`max_steps`, xminigrid's default 3 x height x width = 507) without it.

The SFL papers draw a ruleset for training and its reset key from one key (a bug xminigrid's
baseline fixed later); the generator here splits the key, so they are independent.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from xminigrid.core.constants import NUM_ACTIONS, NUM_COLORS, NUM_TILES
from xminigrid.core.observation import transparent_field_of_view
from xminigrid.envs.xland import XLandEnvParams, XLandMiniGrid
from xminigrid.types import RuleSet, State, StepType, TimeStep

from minimax.envs.environment import Box, Dict, Discrete, Environment

GRID_TYPES = ("R1", "R2", "R4", "R6", "R9")
_ENGINE = XLandMiniGrid()


@struct.dataclass
class XLandParams:
    """Static parameters (hashable Python values): the room (`grid_type`, `height`, `width`: xminigrid's
    `XLand-MiniGrid-<grid_type>-<height>x<width>`), the view and the time limit (0: xminigrid's 3 x h x w)."""

    grid_type: str = struct.field(pytree_node=False, default="R4")
    height: int = struct.field(pytree_node=False, default=13)
    width: int = struct.field(pytree_node=False, default=13)
    view_size: int = struct.field(pytree_node=False, default=5)
    max_steps: int = struct.field(pytree_node=False, default=0)

    def __post_init__(self):
        if self.grid_type not in GRID_TYPES:
            raise ValueError(f"XLandParams.grid_type must be one of {', '.join(GRID_TYPES)}, got {self.grid_type!r}")
        for name in ("height", "width", "view_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 3:
                raise ValueError(f"XLandParams.{name} must be an int >= 3, got {value!r}")
        if not isinstance(self.max_steps, int) or self.max_steps < 0:
            raise ValueError(f"XLandParams.max_steps must be a non-negative int, got {self.max_steps!r}")
        if self.max_steps == 0:
            object.__setattr__(self, "max_steps", 3 * self.height * self.width)

    def engine_params(self, ruleset: RuleSet | None = None) -> XLandEnvParams:
        """xminigrid's params with these settings (and `ruleset`, where one is given)."""
        params = XLandEnvParams(height=self.height, width=self.width, view_size=self.view_size,
                                max_steps=self.max_steps, grid_type=self.grid_type)
        return params if ruleset is None else params.replace(ruleset=ruleset)


@struct.dataclass
class XLandLevel:
    """A ruleset and the key of its first layout (see the module docstring)."""

    goal: jax.Array        # uint8[5]: kind id, then up to two (tile, colour) pairs
    rules: jax.Array       # uint8[R, 7]: kind id, input tiles, produced tile; all zeros = no rule
    init_tiles: jax.Array  # uint8[T, 2]: the room's objects; (0, 0) = none
    key: jax.Array         # uint32[2]: the first episode's layout key (raw key data)

    @property
    def ruleset(self) -> RuleSet:
        return RuleSet(goal=self.goal, rules=self.rules, init_tiles=self.init_tiles)


@struct.dataclass
class XLandState:
    """One episode in progress: xminigrid's state (`engine`) and the level it plays."""

    engine: State
    level: XLandLevel


def _canonical(tree):
    """Every leaf a strongly typed array of its own dtype (one leaf layout for scan carries and buffers)."""
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=jnp.result_type(x)), tree)


def raw_key(key) -> jax.Array:
    """A PRNG key as raw uint32[2] key data, whether typed or raw already."""
    if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return jnp.asarray(key, jnp.uint32)


class XLand(Environment):
    """XLand-MiniGrid with rulesets as levels. Observations `{"image": uint8[v, v, 2]}` (tile and colour ids of
    the egocentric view, agent at the bottom centre facing up), xminigrid's 6 actions (forward, turn right,
    turn left, pick up, put down, toggle)."""

    def default_params(self, **overrides) -> XLandParams:
        return XLandParams(**overrides)

    def _start(self, level: XLandLevel, key, params: XLandParams) -> State:
        return _canonical(_ENGINE._generate_problem(params.engine_params(level.ruleset), raw_key(key)))

    def init_state(self, level: XLandLevel, params: XLandParams) -> XLandState:
        """xminigrid's reset of the level's ruleset with the level's key; deterministic."""
        level = _canonical(level)
        return XLandState(engine=self._start(level, level.key, params), level=level)

    def level_of(self, state: XLandState) -> XLandLevel:
        return state.level

    def restart_state(self, state: XLandState, params: XLandParams) -> XLandState:
        """The next layout of the key chain, as xminigrid's `GymAutoResetWrapper` draws it."""
        key, _ = jax.random.split(state.engine.key)
        return state.replace(engine=self._start(state.level, key, params))

    def step_env(self, key, state: XLandState, action, params: XLandParams):
        """xminigrid's step (deterministic: the key is unused). `done` on the goal or the time limit."""
        del key
        before = TimeStep(state=state.engine, step_type=StepType.MID, reward=jnp.asarray(0.0),
                          discount=jnp.asarray(1.0), observation=jnp.zeros((), jnp.uint8))
        after = _ENGINE.step(params.engine_params(), before, jnp.asarray(action, jnp.int32))
        solved = after.discount == 0.0
        truncated = (after.state.step_num >= params.max_steps) & ~solved
        info = {"solved": solved, "terminated": solved, "truncated": truncated}
        reward = jnp.asarray(after.reward, jnp.float32)
        return state.replace(engine=_canonical(after.state)), reward, solved | truncated, info

    def get_obs(self, state: XLandState, params: XLandParams) -> dict:
        engine = state.engine
        view = transparent_field_of_view(engine.grid, engine.agent, params.view_size, params.view_size)
        return {"image": jnp.asarray(view, jnp.uint8)}

    def observation_space(self, params: XLandParams) -> Dict:
        high = max(NUM_TILES, NUM_COLORS) - 1
        return Dict({"image": Box(0, high, (params.view_size, params.view_size, 2), jnp.uint8)})

    def action_space(self, params: XLandParams) -> Discrete:
        del params
        return Discrete(NUM_ACTIONS)


def level_identity(level: XLandLevel):
    """What makes two levels the same for the PLR buffer: the ruleset (not the layout key)."""
    return level.goal, level.rules, level.init_tiles


def level_metrics(level: XLandLevel) -> dict[str, jax.Array]:
    """Per-level statistics for the logs: the rules (non-empty), the room's objects, the goal's kind."""
    return {"rules": jnp.sum(level.rules[:, 0] != 0, dtype=jnp.int32),
            "objects": jnp.sum(level.init_tiles[:, 0] != 0, dtype=jnp.int32),
            "goal_kind": level.goal[0].astype(jnp.int32)}
