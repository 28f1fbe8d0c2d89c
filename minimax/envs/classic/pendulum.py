"""Pendulum whose physics is the level: Pendulum-v1's dynamics (gymnax's) under designed parameters.

Why: the swing-up task gets harder as the motor weakens relative to the pendulum's weight (a
torque above m*g*l/2 can hold it horizontal; below that it has to be swung up in several
swings), so a level is (max_torque, m, l, g) plus the start angle and angular velocity. The
transition is gymnax's Pendulum-v1 step on the level's physics: `minimax.envs.classic.dynamics`
computes it as gymnax does, checked against gymnax step for step (`tests/test_classic.py`).

Actions are the torque itself, unscaled (gymnax's convention): gymnax clips it to the level's
+-max_torque, so the same action means the same torque on every level and a weak level just
saturates sooner. `action_space` is `Box(-action_bound, action_bound, (1,))` with `action_bound`
the largest max_torque of the default ranges (3.0): a nominal range for samplers, not a
constraint (the Gaussian policy's draws are unbounded and clipped by the env).

Pendulum never terminates; episodes end at our time limit (`PendulumParams.max_steps`, 200 as
gymnax). It has no binary outcome: `info["solved"]` is always False (register it with
`binary_outcome=False`).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from flax import struct

from minimax.envs.classic.common import (
    check_max_steps, check_ranges, fmt, perturbing_mutator, physics_metrics, time_limit, uniform_generator,
    unknown_suite,
)
from minimax.envs.classic.dynamics import (
    PENDULUM, PendulumPhysics, pendulum_obs, pendulum_reset_draw, pendulum_step,
)
from minimax.envs.environment import Box, Environment
from minimax.envs.registry import HeldOutLevel

PHYSICS = ("max_torque", "m", "l", "g")
"""The designable physical parameters of a level (the fields of `PendulumRanges`)."""
START = ("theta", "theta_dot")
"""The start-state fields of a level (theta = 0 is upright)."""


@struct.dataclass
class PendulumLevel:
    """One Pendulum task: float32 scalars that fix the whole episode (physics and start state)."""

    max_torque: jax.Array
    m: jax.Array
    l: jax.Array  # noqa: E741 (gymnax's name)
    g: jax.Array
    theta: jax.Array
    theta_dot: jax.Array


def default_physics() -> dict[str, float]:
    """gymnax's default Pendulum-v1 physics, `{name: value}` over `PHYSICS`."""
    return {name: float(getattr(PENDULUM, name)) for name in PHYSICS}


HELD_OUT_START = {"theta": math.pi, "theta_dot": 0.0}
"""The start state of the fixed held-out levels: hanging straight down at rest, the full swing-up
(the hardest start of gymnax's reset distribution, and the one whose return depends most on the
physics; a start near upright would only test balancing)."""


def pendulum_level(**values: float) -> PendulumLevel:
    """A level from Python numbers; fields not given take gymnax's default physics and `HELD_OUT_START`."""
    fields = {**default_physics(), **HELD_OUT_START}
    unknown = set(values) - set(fields)
    if unknown:
        raise ValueError(f"unknown PendulumLevel fields {sorted(unknown)}; fields: {', '.join(fields)}")
    fields.update(values)
    return PendulumLevel(**{k: jnp.asarray(v, jnp.float32) for k, v in fields.items()})


@dataclasses.dataclass(frozen=True)
class PendulumRanges:
    """The designable physics: `(low, high)` per parameter, uniform draws of the generator and the
    bounds of the mutator. Defaults around gymnax's (max_torque 2, m 1, l 1, g 10): max_torque
    [1, 3], m and l [0.5, 1.5], g [5, 15]; the ratio max_torque / (m g l / 2) then spans about
    0.06 to 4.8, from many-swing swing-ups to direct lifts. Override with `dataclasses.replace`.
    """

    max_torque: tuple[float, float] = (1.0, 3.0)
    m: tuple[float, float] = (0.5, 1.5)
    l: tuple[float, float] = (0.5, 1.5)  # noqa: E741
    g: tuple[float, float] = (5.0, 15.0)

    def __post_init__(self):
        check_ranges(self)


PENDULUM_RANGES = PendulumRanges()
assert tuple(f.name for f in dataclasses.fields(PendulumRanges)) == PHYSICS


@struct.dataclass
class PendulumParams:
    """Static parameters (hashable; no array leaves). Defaults are gymnax's Pendulum-v1 values;
    `action_bound` is the bound of `action_space` only (see the module docstring)."""

    max_steps: int = struct.field(pytree_node=False, default=PENDULUM.max_steps_in_episode)
    max_speed: float = struct.field(pytree_node=False, default=PENDULUM.max_speed)
    dt: float = struct.field(pytree_node=False, default=PENDULUM.dt)
    action_bound: float = struct.field(pytree_node=False, default=PENDULUM_RANGES.max_torque[1])

    def __post_init__(self):
        check_max_steps("PendulumParams", self.max_steps)


@struct.dataclass
class PendulumState:
    """An episode in progress: its level and gymnax's state (theta, theta_dot, last_u, time)."""

    level: PendulumLevel
    physics: PendulumPhysics

    @property
    def time(self) -> jax.Array:
        return self.physics.time


def physics_of(level: PendulumLevel, params: PendulumParams) -> dict:
    """The keyword arguments of `pendulum_step` for a level: its physics and our static constants."""
    return dict(max_torque=level.max_torque, m=level.m, l=level.l, g=level.g, max_speed=params.max_speed,
                dt=params.dt)


class Pendulum(Environment):
    """Pendulum on designed physics. Action float32[1]: the torque (clipped by gymnax to the level's
    +-max_torque). Observation float32[3] = (cos theta, sin theta, theta_dot), gymnax's.

    Reward: gymnax's negative cost `-(angle^2 + 0.1 theta_dot^2 + 0.001 torque^2)` of the state
    before the step and the clipped torque. `info`: `terminated` always False (no terminal state),
    `truncated` at the time limit, `solved` always False (no binary outcome).
    """

    def default_params(self, **overrides) -> PendulumParams:
        return PendulumParams(**overrides)

    def init_state(self, level: PendulumLevel, params: PendulumParams) -> PendulumState:
        """The start of an episode on `level` (deterministic: the start state is in the level)."""
        level = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), level)
        physics = PendulumPhysics(theta=level.theta, theta_dot=level.theta_dot, last_u=jnp.zeros((), jnp.float32),
                              time=jnp.zeros((), jnp.int32))
        return PendulumState(level=level, physics=physics)

    def level_of(self, state: PendulumState) -> PendulumLevel:
        return state.level

    def step_env(self, key, state: PendulumState, action, params: PendulumParams):
        """gymnax's transition on the level's physics; our time limit."""
        physics, reward = pendulum_step(state.physics, jnp.asarray(action, jnp.float32),
                                        **physics_of(state.level, params))
        physics = physics.replace(time=jnp.asarray(physics.time, jnp.int32))
        terminated = jnp.zeros((), jnp.bool_)  # Pendulum has no terminal state
        done, truncated = time_limit(physics.time, terminated, params.max_steps)
        info = {"terminated": terminated, "truncated": truncated, "solved": jnp.zeros((), jnp.bool_)}
        return state.replace(physics=physics), jnp.asarray(reward, jnp.float32), done, info

    def get_obs(self, state: PendulumState, params: PendulumParams) -> jax.Array:
        return pendulum_obs(state.physics).astype(jnp.float32)

    def observation_space(self, params: PendulumParams) -> Box:
        """A common bound for all three coordinates: max_speed (cos and sin lie in [-1, 1] within it)."""
        return Box(-params.max_speed, params.max_speed, (3,), jnp.float32)

    def action_space(self, params: PendulumParams) -> Box:
        return Box(-params.action_bound, params.action_bound, (1,), jnp.float32)


# ------------------------------------------------------------------ generators and mutators


def draw_start(key: jax.Array) -> dict[str, jax.Array]:
    """A start state drawn as gymnax's `reset_env` draws it (theta U(-pi, pi), theta_dot U(-1, 1))."""
    return {name: jnp.asarray(v, jnp.float32) for name, v in zip(START, pendulum_reset_draw(key))}


def make_pendulum_generator(ranges: PendulumRanges = PENDULUM_RANGES):
    """`generator(key) -> PendulumLevel`: physics uniform over `ranges`, start state as gymnax's reset."""
    return uniform_generator(PendulumLevel, ranges, draw_start)


def make_pendulum_mutator(n_edits: int, ranges: PendulumRanges = PENDULUM_RANGES, step_fraction: float = 0.1):
    """`mutate(key, level) -> level`: `n_edits` perturbations of one uniformly chosen physical
    parameter each, by U(-step_fraction, step_fraction) of its range's width, clipped to `ranges`
    (the generator's: see `make_cartpole_mutator` for why); then a fresh start state."""
    return perturbing_mutator(PendulumLevel, PHYSICS, ranges, draw_start, n_edits, step_fraction)


MUTATORS = {"perturb": make_pendulum_mutator}
"""ACCEL mutators by name: `{name: factory(n_edits) -> mutate(key, level) -> level}`."""


level_metrics = physics_metrics(PHYSICS)
"""The level's physical parameters by name, for the logs (vmappable)."""


# ------------------------------------------------------------------------ held-out levels

GRID_MAX_TORQUES = (0.5, 2.0, 4.0)
"""Motor limits of the `grid` suite: 0.5 and 4.0 lie outside the default range [1, 3]."""
GRID_LENGTHS = (0.25, 1.0, 2.5)
"""Pendulum lengths of the `grid` suite: 0.25 and 2.5 lie outside the default range [0.5, 1.5]."""
SUITES = ("grid", "gymnax")


def pendulum_held_out(suite: str) -> list[HeldOutLevel]:
    """The held-out levels of `suite`:
    - `grid`: every (max_torque, length) of `GRID_MAX_TORQUES` x `GRID_LENGTHS`, m and g gymnax's
      default, each a fixed level starting at `HELD_OUT_START` (hanging down), named like `tq2_l1`;
    - `gymnax`: gymnax's Pendulum-v1 itself: default physics, the start drawn as gymnax's reset.
    """
    same_params = lambda train_params: train_params  # noqa: E731
    if suite == "grid":
        out = []
        for torque in GRID_MAX_TORQUES:
            for length in GRID_LENGTHS:
                level = pendulum_level(max_torque=torque, l=length)
                out.append(HeldOutLevel(f"tq{fmt(torque)}_l{fmt(length)}", sample=lambda key, lv=level: lv,
                                        params_for=same_params, fixed_level=level))
        return out
    if suite == "gymnax":
        physics = PendulumRanges(**{n: (v, v) for n, v in default_physics().items()})
        return [HeldOutLevel("gymnax", sample=make_pendulum_generator(physics), params_for=same_params)]
    raise unknown_suite("Pendulum", suite, SUITES)
