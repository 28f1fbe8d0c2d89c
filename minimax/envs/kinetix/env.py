"""Kinetix (Matthews et al., ICLR 2025) as a UED environment: a level is a Kinetix scene.

Kinetix is open-ended 2D rigid-body physics (the `jax2d` engine): a scene of polygons, circles,
joints (motors) and thrusters, where the agent drives the motors and thrusters and succeeds when
a green shape touches a blue one (reward +1, episode over) and fails when a green shape touches a
red one (-1, over). Between those events the reward is dense: 0.2 x the decrease of the green-blue
distance (`dense_reward_scale`). Its size classes s, m, l fix how many shapes, joints and thrusters
a scene can hold (s: 5 polygons, 2 circles, 1 joint, 1 thruster), and so the observation's size.

What is reused and what is ours. The physics, action processing, reward, termination and the
observation are the authors' `KinetixEnv.step_env` and `get_obs` (kinetix-env 3.0.2), called on
their env object for the run's size class (`engine.py`), with the settings of their default
configs (`configs/env/*.yaml`: two physics frames per step (`frame_skip` 2), dense reward 0.2,
256 steps). Ours is only the level/episode split:

- A *level* is the authors' `EnvState` at the start of an episode (the scene: shapes, joints,
  thrusters, their bindings to the action dimensions, roles, densities, gravity), the value their
  samplers, mutators and level files produce and their `reset(override_reset_state=level)`
  starts from. `canonical_level` gives it fixed dtypes (timestep 0, no distance yet, no weak
  types) so that generated, mutated and loaded levels mix in one buffer.
- Actions are the authors' default, multi-discrete: for each of the 4 motor bindings
  {off, one way, the other way} and for each of the 2 thruster bindings {off, on}
  (`MultiDiscrete((3, 3, 3, 3, 2, 2))`, a `MultiCategorical` policy).
- Observations (`--kinetix-obs`): `flat`, the authors' `symbolic_flat` (every shape's, joint's and
  thruster's features concatenated, 140 floats at size s: its length is fixed by the size class),
  for the MLP student; or `entity`, their `symbolic_entity` (`EntityObservation`: one feature row
  per polygon, circle, joint (both directions) and thruster, their active masks, the joints' and
  thrusters' shape indexes and four shape-by-shape attention masks), the input of their default
  student, the entity transformer (`models/entity_transformer.py`), whose feature widths do not
  depend on the size class.
- A level of a smaller size class (a held-out suite below the run's size) is padded into the run's
  slots at reset with the authors' `expand_env_state`, as their `load_evaluation_levels(...,
  static_env_params_override=...)` pads evaluation levels: empty slots appended, the joints' and
  thrusters' shape indexes moved past the added polygons.
- The state keeps its observation (computed once per step) and its level's first one, so an
  auto-reset to the same level costs no render.

Outcomes: `solved` is the authors' `GoalR` (green touched blue); `terminated` is an ending contact
(either colour) or a NaN in the physics (their `done` includes it); `truncated` is reaching
`max_steps` otherwise. A contact on the very last step that is a failure counts as truncated.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from minimax.envs.environment import Box, Environment, MultiDiscrete
from minimax.envs.kinetix.engine import OBSERVATIONS, SIZES, EnvState, expand_env_state, kinetix_objects, \
    static_env_params_from_size


@struct.dataclass
class KinetixParams:
    """Static parameters (hashable; no array leaves). The defaults are the authors' size-s config.

    `size`: the size class (s, m, l); `max_steps`: the episode limit (their `max_timesteps`);
    `frame_skip`: physics frames per step; `dense_reward_scale`: the weight of the distance shaping;
    `obs`: the observation (`flat` or `entity`); `level_size`: the size class of the levels these params
    start from when it is smaller than `size` (a held-out suite below the run's size: padded at reset;
    empty: `size`)."""

    size: str = struct.field(pytree_node=False, default="s")
    max_steps: int = struct.field(pytree_node=False, default=256)
    frame_skip: int = struct.field(pytree_node=False, default=2)
    dense_reward_scale: float = struct.field(pytree_node=False, default=0.2)
    obs: str = struct.field(pytree_node=False, default="flat")
    level_size: str = struct.field(pytree_node=False, default="")

    def __post_init__(self):
        if self.size not in SIZES:
            raise ValueError(f"KinetixParams.size must be one of {', '.join(SIZES)}, got {self.size!r}")
        if self.obs not in OBSERVATIONS:
            raise ValueError(f"KinetixParams.obs must be one of {', '.join(OBSERVATIONS)}, got {self.obs!r}")
        if self.level_size not in ("", *SIZES) or (self.level_size
                                                   and SIZES.index(self.level_size) > SIZES.index(self.size)):
            raise ValueError(f"KinetixParams.level_size must be empty or a size class up to size {self.size!r}, "
                             f"got {self.level_size!r}")
        for name in ("max_steps", "frame_skip"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"KinetixParams.{name} must be a positive int, got {value!r}")
        if not float(self.dense_reward_scale) >= 0.0:
            raise ValueError(f"KinetixParams.dense_reward_scale must be >= 0, got {self.dense_reward_scale!r}")

    def objects(self):
        """The authors' `(env, env_params, static_env_params)` for these settings."""
        return kinetix_objects(self.size, int(self.frame_skip), int(self.max_steps), float(self.dense_reward_scale),
                               self.obs)


def size_of(level: EnvState) -> str:
    """The size class whose scenes have `level`'s polygon, circle and joint slots (read from the size
    table, without building an env object per size)."""
    slots = (level.polygon.active.shape[-1], level.circle.active.shape[-1], level.joint.active.shape[-1])
    for size in SIZES:
        static = static_env_params_from_size(size)
        if slots == (static.num_polygons, static.num_circles, static.num_joints):
            return size
    raise ValueError(f"a Kinetix level with (polygons, circles, joints) slots {slots} is of no size class")


def fit_level(level: EnvState, params: KinetixParams) -> EnvState:
    """`level` in the slots of `params`' size class: padded by the authors' `expand_env_state` when it is of a
    smaller class (decided from the arrays' shapes, so it costs nothing when the sizes agree)."""
    own = size_of(level)
    if own == params.size:
        return level
    if SIZES.index(own) > SIZES.index(params.size):
        raise ValueError(f"a size-{own} Kinetix level does not fit the slots of size {params.size}")
    return expand_env_state(level, params.objects()[2])


def canonical_level(level: EnvState) -> EnvState:
    """`level` at the start of an episode with fixed dtypes: timestep 0 (int32), no distance to the
    goal measured yet (-1, the authors' marker), every leaf strongly typed."""
    level = level.replace(timestep=jnp.zeros((), jnp.int32), last_distance=jnp.full((), -1.0, jnp.float32))
    return jax.tree.map(lambda x: jax.lax.convert_element_type(jnp.asarray(x), jnp.asarray(x).dtype), level)


@struct.dataclass
class KinetixState:
    """The authors' state of the episode, its level, its current observation and its level's first one."""

    scene: EnvState
    level: EnvState
    obs: jax.Array
    start_obs: jax.Array


def action_nvec(params: KinetixParams) -> tuple[int, ...]:
    """Options per action dimension: 3 per motor binding, 2 per thruster binding (the authors')."""
    _, _, static = params.objects()
    return (3,) * int(static.num_motor_bindings) + (2,) * int(static.num_thruster_bindings)


class KinetixSingle(Environment):
    """Kinetix with scenes as levels (see the module docstring)."""

    def default_params(self, **overrides) -> KinetixParams:
        return KinetixParams(**overrides)

    def init_state(self, level: EnvState, params: KinetixParams) -> KinetixState:
        env, _, _ = params.objects()
        scene = canonical_level(fit_level(level, params))  # the scene at its start is the level
        obs = env.get_obs(scene)
        return KinetixState(scene=scene, level=scene, obs=obs, start_obs=obs)

    def level_of(self, state: KinetixState) -> EnvState:
        return state.level

    def restart_state(self, state: KinetixState, params: KinetixParams) -> KinetixState:
        return KinetixState(scene=state.level, level=state.level, obs=state.start_obs, start_obs=state.start_obs)

    def step_env(self, key, state: KinetixState, action, params: KinetixParams):
        env, env_params, _ = params.objects()
        obs, scene, reward, done, info = env.step_env(key, state.scene, jnp.asarray(action, jnp.int32), env_params)
        solved = jnp.asarray(info["GoalR"], jnp.bool_)
        terminated = done & (solved | (scene.timestep < env_params.max_timesteps))
        info = {"solved": solved, "terminated": terminated, "truncated": done & ~terminated}
        scene = scene.replace(timestep=jnp.asarray(scene.timestep, jnp.int32),
                              last_distance=jnp.asarray(scene.last_distance, jnp.float32))
        return state.replace(scene=scene, obs=obs), jnp.asarray(reward, jnp.float32), done, info

    def get_obs(self, state: KinetixState, params: KinetixParams) -> jax.Array:
        return state.obs

    def observation_space(self, params: KinetixParams):
        """A `Box` (flat), or the `EntityObservation` of one `Box` per leaf (entity)."""
        env, env_params, _ = params.objects()
        if params.obs == "flat":
            return Box(-np.inf, np.inf, tuple(env.observation_space(env_params).shape), jnp.float32)
        from minimax.envs.kinetix.levels import sample_level  # noqa: PLC0415 (levels imports this module)

        shapes = jax.eval_shape(lambda key: env.get_obs(canonical_level(sample_level(key, params))), jax.random.key(0))
        return jax.tree.map(lambda x: Box(-np.inf, np.inf, tuple(x.shape), x.dtype), shapes)

    def action_space(self, params: KinetixParams) -> MultiDiscrete:
        return MultiDiscrete(action_nvec(params))
