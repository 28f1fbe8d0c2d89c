"""CartPole-v1's and Pendulum-v1's transitions as gymnax 1.0 computes them (gym's classic control in JAX),
written here on explicit physics so that the core does not depend on gymnax (issue 69).

Why not call gymnax: gymnax 1.0.1 declares `jax<0.12`, so as a core dependency it held every install back
from the newest jax; these two transitions are all we used of it. They reproduce gymnax's operations in
gymnax's order (Euler steps, the reward of the state before the step, the same reset draws), so a step here
equals gymnax's `step_env` on the same `EnvParams`; `tests/test_classic.py` checks it, field by field,
against gymnax itself where gymnax is installed (the `reference` extra; CI's floor leg).

The states carry gymnax's field names, so checkpoints written while gymnax computed the steps restore.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from flax import struct


@dataclasses.dataclass(frozen=True)
class CartPoleConstants:
    """gymnax's `EnvParams()` of CartPole-v1 (gym's values). `length` is half the pole's length."""

    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5
    force_mag: float = 10.0
    tau: float = 0.02  # seconds per (Euler) step
    theta_threshold_radians: float = 12 * 2 * math.pi / 360
    x_threshold: float = 2.4
    max_steps_in_episode: int = 500


@dataclasses.dataclass(frozen=True)
class PendulumConstants:
    """gymnax's `EnvParams()` of Pendulum-v1 (gym's values)."""

    max_speed: float = 8.0
    max_torque: float = 2.0
    dt: float = 0.05
    g: float = 10.0
    m: float = 1.0
    l: float = 1.0  # noqa: E741 (gym's name)
    max_steps_in_episode: int = 200


CARTPOLE = CartPoleConstants()
PENDULUM = PendulumConstants()


@struct.dataclass
class CartPolePhysics:
    """gymnax's CartPole `EnvState`: cart position and velocity, pole angle and angular velocity, the clock."""

    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array
    time: jax.Array


@struct.dataclass
class PendulumPhysics:
    """gymnax's Pendulum `EnvState`: angle (0 upright), angular velocity, the last clipped torque, the clock."""

    theta: jax.Array
    theta_dot: jax.Array
    last_u: jax.Array
    time: jax.Array


def cartpole_terminated(s: CartPolePhysics, theta_threshold, x_threshold) -> jax.Array:
    """The natural termination: the cart left +-x_threshold or the pole passed +-theta_threshold."""
    off_track = jnp.logical_or(s.x < -x_threshold, s.x > x_threshold)
    fallen = jnp.logical_or(s.theta < -theta_threshold, s.theta > theta_threshold)
    return jnp.logical_or(off_track, fallen)


def cartpole_step(s: CartPolePhysics, action, *, gravity, masscart, masspole, length, force_mag, tau,
                  theta_threshold, x_threshold) -> tuple[CartPolePhysics, jax.Array]:
    """One Euler step under a push of +-force_mag (action 1 right, 0 left): `(next state, reward)`. The
    reward is 1, or 0 for a step taken from an already terminated state (gymnax's `1 - prev_terminal`)."""
    prev_terminal = cartpole_terminated(s, theta_threshold, x_threshold)
    total_mass = masscart + masspole
    polemass_length = masspole * length
    force = force_mag * action - force_mag * (1 - action)
    costheta, sintheta = jnp.cos(s.theta), jnp.sin(s.theta)
    temp = (force + polemass_length * s.theta_dot**2 * sintheta) / total_mass
    thetaacc = (gravity * sintheta - costheta * temp) / (
        length * (4.0 / 3.0 - masspole * costheta**2 / total_mass))
    xacc = temp - polemass_length * thetaacc * costheta / total_mass
    nxt = CartPolePhysics(x=s.x + tau * s.x_dot, x_dot=s.x_dot + tau * xacc,
                          theta=s.theta + tau * s.theta_dot, theta_dot=s.theta_dot + tau * thetaacc,
                          time=s.time + 1)
    return jax.lax.stop_gradient(nxt), jnp.asarray(1.0 - prev_terminal)


def cartpole_obs(s: CartPolePhysics) -> jax.Array:
    return jnp.array([s.x, s.x_dot, s.theta, s.theta_dot])


def cartpole_reset_draw(key: jax.Array) -> jax.Array:
    """gymnax's reset: (x, x_dot, theta, theta_dot) each U(-0.05, 0.05), from one uniform draw of 4."""
    return jax.random.uniform(key, minval=-0.05, maxval=0.05, shape=(4,))


def angle_normalize(x: jax.Array) -> jax.Array:
    """An angle in [-pi, pi)."""
    return ((x + jnp.pi) % (2 * jnp.pi)) - jnp.pi


def pendulum_step(s: PendulumPhysics, action, *, max_torque, m, l, g, max_speed, dt  # noqa: E741
                  ) -> tuple[PendulumPhysics, jax.Array]:
    """One step under the torque `action` clipped to +-max_torque: `(next state, reward)`, the reward the
    negative cost `-(angle^2 + 0.1 theta_dot^2 + 0.001 torque^2)` of the state before the step."""
    u = jnp.clip(action, -max_torque, max_torque)
    reward = -(angle_normalize(s.theta) ** 2 + 0.1 * s.theta_dot**2 + 0.001 * (u**2))
    newthdot = s.theta_dot + (3 * g / (2 * l) * jnp.sin(s.theta) + 3.0 / (m * l**2) * u) * dt
    newthdot = jnp.clip(newthdot, -max_speed, max_speed)
    newth = s.theta + newthdot * dt
    nxt = PendulumPhysics(theta=newth.squeeze(), theta_dot=newthdot.squeeze(), last_u=u.reshape(),
                          time=s.time + 1)
    return jax.lax.stop_gradient(nxt), reward.squeeze()


def pendulum_obs(s: PendulumPhysics) -> jax.Array:
    return jnp.array([jnp.cos(s.theta), jnp.sin(s.theta), s.theta_dot]).squeeze()


def pendulum_reset_draw(key: jax.Array) -> jax.Array:
    """gymnax's reset: (theta, theta_dot) uniform in (-pi, pi) x (-1, 1), from one uniform draw of 2."""
    high = jnp.array([jnp.pi, 1])
    return jax.random.uniform(key, shape=(2,), minval=-high, maxval=high)
