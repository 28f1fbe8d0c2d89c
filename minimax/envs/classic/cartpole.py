"""CartPole whose physics is the level: CartPole-v1's dynamics (gymnax's) under designed parameters.

Why: UED needs a space of tasks that differ in difficulty. Here a level is the cart-pole's
physics (gravity, cart and pole masses, half pole length, push force) plus its start state, so
a curriculum can move from slow, forgiving poles to short, light-cart, weak-push ones. The
transition is gymnax's CartPole-v1 step on the level's physics (derived `total_mass` and
`polemass_length` computed from it): `minimax.envs.classic.dynamics` computes it as gymnax does,
checked against gymnax step for step (`tests/test_classic.py`).

The time limit is ours (`CartPoleParams.max_steps`, 500 as gymnax's default): gymnax >= 1.0's
`step_env` reports only the natural termination (the cart leaves +-x_threshold or the pole
passes +-theta_threshold), and `terminated` is that test (gymnax's `is_terminated`) on the new
state, never a time test. `info["solved"]` is "the pole stayed up until the time limit"
(the step where the episode is truncated), CartPole-v1's notion of a successful episode.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from minimax.envs.classic.common import (
    check_max_steps, check_ranges, fmt, perturbing_mutator, physics_metrics, time_limit, uniform_generator,
    unknown_suite,
)
from minimax.envs.classic.dynamics import (
    CARTPOLE, CartPolePhysics, cartpole_obs, cartpole_reset_draw, cartpole_step, cartpole_terminated,
)
from minimax.envs.environment import Box, Discrete, Environment
from minimax.envs.registry import HeldOutLevel

PHYSICS = ("gravity", "masscart", "masspole", "length", "force_mag")
"""The designable physical parameters of a level (the fields of `CartPoleRanges`)."""
START = ("x", "x_dot", "theta", "theta_dot")
"""The start-state fields of a level (gymnax's `EnvState` without the clock)."""


@struct.dataclass
class CartPoleLevel:
    """One CartPole task: float32 scalars that fix the whole episode (physics and start state),
    so replaying a level replays the same task. `length` is half the pole's length, as gymnax's."""

    gravity: jax.Array
    masscart: jax.Array
    masspole: jax.Array
    length: jax.Array
    force_mag: jax.Array
    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array


def default_physics() -> dict[str, float]:
    """gymnax's default CartPole-v1 physics, `{name: value}` over `PHYSICS`."""
    return {name: float(getattr(CARTPOLE, name)) for name in PHYSICS}


HELD_OUT_START = {"x": 0.0, "x_dot": 0.0, "theta": 0.02, "theta_dot": 0.0}
"""The start state of the fixed held-out levels: centred, at rest, the pole 0.02 rad off upright
(inside gymnax's reset interval +-0.05), so the policy has to act from the first step."""


def cartpole_level(**values: float) -> CartPoleLevel:
    """A level from Python numbers; fields not given take gymnax's default physics and `HELD_OUT_START`."""
    fields = {**default_physics(), **HELD_OUT_START}
    unknown = set(values) - set(fields)
    if unknown:
        raise ValueError(f"unknown CartPoleLevel fields {sorted(unknown)}; fields: {', '.join(fields)}")
    fields.update(values)
    return CartPoleLevel(**{k: jnp.asarray(v, jnp.float32) for k, v in fields.items()})


@dataclasses.dataclass(frozen=True)
class CartPoleRanges:
    """The designable physics: `(low, high)` per parameter, uniform draws of the generator and
    the bounds of the mutator. Defaults are gymnax's values times [0.5, 1.5] for gravity and push
    force, [0.5, 2] for the cart mass and the half pole length, [0.5, 5] for the pole mass.

    Why these: a shorter pole falls faster (the main difficulty knob: 0.25 leaves about half the
    reaction time of the default 0.5), a heavier pole relative to the cart and a weaker push make
    each correction smaller, and gravity scales how fast every fall develops. Every combination
    keeps the default 0.02 s Euler step stable. Override with `dataclasses.replace`.
    """

    gravity: tuple[float, float] = (4.9, 14.7)
    masscart: tuple[float, float] = (0.5, 2.0)
    masspole: tuple[float, float] = (0.05, 0.5)
    length: tuple[float, float] = (0.25, 1.0)
    force_mag: tuple[float, float] = (5.0, 15.0)

    def __post_init__(self):
        check_ranges(self)


CARTPOLE_RANGES = CartPoleRanges()
assert tuple(f.name for f in dataclasses.fields(CartPoleRanges)) == PHYSICS


@struct.dataclass
class CartPoleParams:
    """Static parameters (hashable; no array leaves). Defaults are gymnax's CartPole-v1 values."""

    max_steps: int = struct.field(pytree_node=False, default=CARTPOLE.max_steps_in_episode)
    tau: float = struct.field(pytree_node=False, default=CARTPOLE.tau)  # seconds per step
    theta_threshold_radians: float = struct.field(pytree_node=False, default=CARTPOLE.theta_threshold_radians)
    x_threshold: float = struct.field(pytree_node=False, default=CARTPOLE.x_threshold)

    def __post_init__(self):
        check_max_steps("CartPoleParams", self.max_steps)


@struct.dataclass
class CartPoleState:
    """An episode in progress: its level and gymnax's state (x, x_dot, theta, theta_dot, time)."""

    level: CartPoleLevel
    physics: CartPolePhysics

    @property
    def time(self) -> jax.Array:
        return self.physics.time


def physics_of(level: CartPoleLevel, params: CartPoleParams) -> dict:
    """The keyword arguments of `cartpole_step` for a level: its physics and our static constants."""
    return dict(gravity=level.gravity, masscart=level.masscart, masspole=level.masspole, length=level.length,
                force_mag=level.force_mag, tau=params.tau, theta_threshold=params.theta_threshold_radians,
                x_threshold=params.x_threshold)


class CartPole(Environment):
    """CartPole on designed physics. Actions `Discrete(2)`: 0 pushes left, 1 right, by the
    level's `force_mag`. Observation float32[4] = (x, x_dot, theta, theta_dot), gymnax's.

    Reward: gymnax's, 1 per step (0 for a step taken from an already terminal state, which the
    auto-reset wrappers never take). `info`: `terminated` (the pole fell or the cart left the
    track), `truncated` (the clock reached `max_steps` without that), `solved` (= `truncated`).
    """

    def default_params(self, **overrides) -> CartPoleParams:
        return CartPoleParams(**overrides)

    def init_state(self, level: CartPoleLevel, params: CartPoleParams) -> CartPoleState:
        """The start of an episode on `level` (deterministic: the start state is in the level)."""
        level = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), level)
        physics = CartPolePhysics(x=level.x, x_dot=level.x_dot, theta=level.theta, theta_dot=level.theta_dot,
                              time=jnp.zeros((), jnp.int32))
        return CartPoleState(level=level, physics=physics)

    def level_of(self, state: CartPoleState) -> CartPoleLevel:
        return state.level

    def step_env(self, key, state: CartPoleState, action, params: CartPoleParams):
        """gymnax's transition on the level's physics; our time limit."""
        physics, reward = cartpole_step(state.physics, jnp.asarray(action, jnp.int32),
                                        **physics_of(state.level, params))
        physics = physics.replace(time=jnp.asarray(physics.time, jnp.int32))
        terminated = cartpole_terminated(physics, params.theta_threshold_radians, params.x_threshold)
        done, truncated = time_limit(physics.time, terminated, params.max_steps)
        info = {"terminated": terminated, "truncated": truncated, "solved": truncated}
        return state.replace(physics=physics), jnp.asarray(reward, jnp.float32), done, info

    def get_obs(self, state: CartPoleState, params: CartPoleParams) -> jax.Array:
        return cartpole_obs(state.physics).astype(jnp.float32)

    def observation_space(self, params: CartPoleParams) -> Box:
        big = float(jnp.finfo(jnp.float32).max)
        return Box(-big, big, (4,), jnp.float32)

    def action_space(self, params: CartPoleParams) -> Discrete:
        return Discrete(2)


# ------------------------------------------------------------------ generators and mutators


def draw_start(key: jax.Array) -> dict[str, jax.Array]:
    """A start state drawn as gymnax's `reset_env` draws it (each coordinate U(-0.05, 0.05))."""
    return {name: jnp.asarray(v, jnp.float32) for name, v in zip(START, cartpole_reset_draw(key))}


def make_cartpole_generator(ranges: CartPoleRanges = CARTPOLE_RANGES):
    """`generator(key) -> CartPoleLevel`: physics uniform over `ranges`, start state as gymnax's reset."""
    return uniform_generator(CartPoleLevel, ranges, draw_start)


def make_cartpole_mutator(n_edits: int, ranges: CartPoleRanges = CARTPOLE_RANGES, step_fraction: float = 0.1):
    """`mutate(key, level) -> level`: `n_edits` perturbations of one uniformly chosen physical
    parameter each, by U(-step_fraction, step_fraction) of its range's width, clipped to `ranges`;
    then a fresh start state. Parameters that no edit picks keep their value.

    Why the mutation bounds are exactly the generator's ranges: ACCEL and DR then design over the
    same set of levels (methods differ only in how they pick from it), and the out-of-range values
    of the held-out grid stay unseen by every method.
    """
    return perturbing_mutator(CartPoleLevel, PHYSICS, ranges, draw_start, n_edits, step_fraction)


MUTATORS = {"perturb": make_cartpole_mutator}
"""ACCEL mutators by name: `{name: factory(n_edits) -> mutate(key, level) -> level}`."""


level_metrics = physics_metrics(PHYSICS)
"""The level's physical parameters by name, for the logs (vmappable)."""


# ------------------------------------------------------------------------ held-out levels

GRID_LENGTHS = (0.1, 0.5, 2.0)
"""Half pole lengths of the `grid` suite: 0.1 and 2.0 lie outside the default range [0.25, 1]."""
GRID_MASSPOLES = (0.01, 0.1, 1.0)
"""Pole masses of the `grid` suite: 0.01 and 1.0 lie outside the default range [0.05, 0.5]."""
SUITES = ("grid", "gymnax")


def cartpole_held_out(suite: str) -> list[HeldOutLevel]:
    """The held-out levels of `suite`:
    - `grid`: every (half pole length, pole mass) of `GRID_LENGTHS` x `GRID_MASSPOLES`, other
      physics gymnax's default, each a fixed level starting at `HELD_OUT_START`, named like
      `len0.5_mp0.1`;
    - `gymnax`: gymnax's CartPole-v1 itself: default physics, the start drawn as gymnax's reset.
    """
    same_params = lambda train_params: train_params  # noqa: E731
    if suite == "grid":
        out = []
        for length in GRID_LENGTHS:
            for masspole in GRID_MASSPOLES:
                level = cartpole_level(length=length, masspole=masspole)
                out.append(HeldOutLevel(f"len{fmt(length)}_mp{fmt(masspole)}", sample=lambda key, lv=level: lv,
                                        params_for=same_params, fixed_level=level))
        return out
    if suite == "gymnax":
        physics = CartPoleRanges(**{n: (v, v) for n, v in default_physics().items()})
        return [HeldOutLevel("gymnax", sample=make_cartpole_generator(physics), params_for=same_params)]
    raise unknown_suite("CartPole", suite, SUITES)
