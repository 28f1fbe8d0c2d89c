"""The `reference` tier for classic control: our CartPole and Pendulum transitions, resets and constants
(minimax.envs.classic.dynamics, written here since issue 69) against gymnax 1.0.1's own code, on designed
physics, states inside and outside the failure thresholds, and torques beyond every level's bound.

Needs gymnax (`pip install -e ".[reference]"`; CI's floor leg): gymnax declares jax<0.12, so it is not a
dependency of the core or of the README's tests, and this file is skipped where it is not installed."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

gx_cartpole = pytest.importorskip("gymnax.environments.classic_control.cartpole")
from gymnax.environments.classic_control import pendulum as gx_pendulum  # noqa: E402

from minimax.envs.classic import CartPoleParams, PendulumParams, cartpole_level, pendulum_level  # noqa: E402
from minimax.envs.classic import dynamics  # noqa: E402
from minimax.envs.classic import cartpole as cp  # noqa: E402
from minimax.envs.classic import pendulum as pd  # noqa: E402
from test_classic import (  # noqa: E402 (the unit file's envs, generators, tolerance and tree helpers)
    CARTPOLE, CARTPOLE_GEN, N, PENDULUM, PENDULUM_GEN, TOL, concat, stack, to_np,
)

pytestmark = pytest.mark.reference


# ------------------------------------------------------------ transitions equal gymnax's


def assert_recorded_is(name, theirs):
    """The recording that tests/test_classic.py reads where gymnax is absent is gymnax's step today."""
    from reference_outputs import load  # noqa: PLC0415

    arrays, _ = load(f"gymnax_{name}")
    g_obs, g_reward, g_done, g_state = theirs
    live = {"obs": g_obs, "reward": g_reward, "done": g_done,
            **{f"state_{field}": getattr(g_state, field) for field in g_state.__dataclass_fields__}}
    assert set(live) == {k for k in arrays if k in live or k.startswith("state_")}, sorted(arrays)
    for key, value in live.items():
        np.testing.assert_allclose(arrays[key], value, **TOL, err_msg=f"{name} {key}")


def record(name: str, outputs) -> dict:
    """The arrays of a recording: the inputs (levels, states, actions, times) and gymnax's outputs."""
    _, (g_obs, g_reward, g_done, g_state), inputs = to_np(outputs)
    if name == "cartpole":
        s, times, levels, actions = inputs
        inputs = {"s": s, "times": times, "levels": levels, "actions": actions}
    else:
        levels, actions, s = inputs
        inputs = {"s": s, "levels": levels, "actions": actions}
    return {**inputs, "obs": g_obs, "reward": g_reward, "done": g_done,
            **{f"state_{field}": getattr(g_state, field) for field in g_state.__dataclass_fields__}}


@jax.jit
def cartpole_vs_gymnax(key):
    """Our step and gymnax's `step_env` on N random (level, state, action): generated physics
    (plus gymnax's default physics in row 0), states inside and outside the failure thresholds.
    gymnax's params are built here by hand from the level, independently of `gymnax_params`."""
    k_lv, k_s, k_a, k_t, k_step = jax.random.split(key, 5)
    levels = jax.vmap(CARTPOLE_GEN)(jax.random.split(k_lv, N - 1))
    levels = concat(stack([cartpole_level()]), levels)
    high = jnp.array([3.0, 2.0, 0.35, 2.5])  # beyond x_threshold 2.4 and theta_threshold 0.21
    s = jax.random.uniform(k_s, (N, 4), minval=-high, maxval=high)
    actions = jax.random.randint(k_a, (N,), 0, 2)
    times = jax.random.randint(k_t, (N,), 0, 400)
    params = CartPoleParams()

    def ours(key, level, s, a, t):
        state = CARTPOLE.init_state(level, params)
        state = state.replace(physics=state.physics.replace(x=s[0], x_dot=s[1], theta=s[2], theta_dot=s[3], time=t))
        obs, state, reward, done, info = CARTPOLE.step(key, state, a, params)
        return obs, reward, done, info, state.physics

    def theirs(key, level, s, a, t):
        gp = gx_cartpole.EnvParams(
            gravity=level.gravity, masscart=level.masscart, masspole=level.masspole,
            total_mass=level.masscart + level.masspole, length=level.length,
            polemass_length=level.masspole * level.length, force_mag=level.force_mag)
        gs = gx_cartpole.EnvState(x=s[0], x_dot=s[1], theta=s[2], theta_dot=s[3], time=t)
        obs, gs, reward, done, _ = gx_cartpole.CartPole().step_env(key, gs, a, gp)
        return obs, reward, done, gs

    keys = jax.random.split(k_step, N)
    return (jax.vmap(ours)(keys, levels, s, actions, times), jax.vmap(theirs)(keys, levels, s, actions, times),
            (s, times, levels, actions))


def test_cartpole_step_equals_gymnax_on_designed_physics():
    (obs, reward, done, info, state), (g_obs, g_reward, g_done, g_state), (s, times, _, _) = to_np(
        cartpole_vs_gymnax(jax.random.key(0)))
    assert_recorded_is("cartpole", (g_obs, g_reward, g_done, g_state))
    np.testing.assert_allclose(obs, g_obs, **TOL)
    for name in dynamics.CartPolePhysics.__dataclass_fields__:
        np.testing.assert_allclose(getattr(state, name), getattr(g_state, name), **TOL, err_msg=name)
    time = state.time
    np.testing.assert_allclose(reward, g_reward, **TOL)
    # gymnax >= 1.0's done is the natural termination only; ours adds nothing at these times.
    np.testing.assert_array_equal(info["terminated"], g_done)
    # ...and it is the pole / track test on the new state, checked here by hand.
    fell = (np.abs(obs[:, 0]) > 2.4) | (np.abs(obs[:, 2]) > 12 * 2 * math.pi / 360)
    np.testing.assert_array_equal(info["terminated"], fell)
    np.testing.assert_array_equal(done, fell)
    assert 0.1 < fell.mean() < 0.9  # both outcomes are exercised
    # Reward 1 except from an already-failed state (gymnax: reward = 1 - previous terminal).
    prev_failed = (np.abs(s[:, 0]) > 2.4) | (np.abs(s[:, 2]) > 12 * 2 * math.pi / 360)
    np.testing.assert_allclose(reward, np.where(prev_failed, 0.0, 1.0), **TOL)
    np.testing.assert_array_equal(time, times + 1)
    assert not info["truncated"].any() and not info["solved"].any()


@jax.jit
def pendulum_vs_gymnax(key):
    """As `cartpole_vs_gymnax`, for Pendulum: torques up to 5 (beyond every level's max_torque)."""
    k_lv, k_s, k_a, k_step = jax.random.split(key, 4)
    levels = jax.vmap(PENDULUM_GEN)(jax.random.split(k_lv, N - 1))
    levels = concat(stack([pendulum_level()]), levels)
    s = jax.random.uniform(k_s, (N, 2), minval=jnp.array([-7.0, -8.0]), maxval=jnp.array([7.0, 8.0]))
    actions = jax.random.uniform(k_a, (N, 1), minval=-5.0, maxval=5.0)
    params = PendulumParams()

    def ours(key, level, s, a):
        state = PENDULUM.init_state(level, params)
        state = state.replace(physics=state.physics.replace(theta=s[0], theta_dot=s[1]))
        obs, state, reward, done, info = PENDULUM.step(key, state, a, params)
        return obs, reward, done, info, state.physics

    def theirs(key, level, s, a):
        gp = gx_pendulum.EnvParams(max_torque=level.max_torque, m=level.m, l=level.l, g=level.g)
        gs = gx_pendulum.EnvState(theta=s[0], theta_dot=s[1], last_u=jnp.float32(0.0), time=0)
        obs, gs, reward, done, _ = gx_pendulum.Pendulum().step_env(key, gs, a, gp)
        return obs, reward, done, gs

    keys = jax.random.split(k_step, N)
    return jax.vmap(ours)(keys, levels, s, actions), jax.vmap(theirs)(keys, levels, s, actions), (levels, actions, s)


def test_pendulum_step_equals_gymnax_on_designed_physics():
    (obs, reward, done, info, state), (g_obs, g_reward, g_done, g_state), (levels, actions, _) = to_np(
        pendulum_vs_gymnax(jax.random.key(1)))
    assert_recorded_is("pendulum", (g_obs, g_reward, g_done, g_state))
    np.testing.assert_allclose(obs, g_obs, **TOL)
    for name in dynamics.PendulumPhysics.__dataclass_fields__:
        np.testing.assert_allclose(getattr(state, name), getattr(g_state, name), **TOL, err_msg=name)
    np.testing.assert_allclose(reward, g_reward, **TOL)
    assert not g_done.any() and not done.any() and not info["terminated"].any() and not info["solved"].any()
    # The torque is the action itself, clipped by the level's max_torque: clipping happened.
    assert (np.abs(actions[:, 0]) > levels.max_torque).mean() > 0.2


# --------------------------------------------------------------- time limit, falling, flags




def test_constants_are_gymnax_defaults():
    """Our CartPole-v1 and Pendulum-v1 constants (default physics, step lengths, thresholds, time limits) are
    gymnax's `EnvParams()`: the levels' defaults and `CartPoleParams()` / `PendulumParams()` follow from them."""
    for ours, theirs in ((dynamics.CARTPOLE, gx_cartpole.EnvParams()), (dynamics.PENDULUM, gx_pendulum.EnvParams())):
        for f in dataclasses.fields(ours):
            assert math.isclose(getattr(ours, f.name), float(getattr(theirs, f.name)), rel_tol=1e-12), f.name
    assert cp.default_physics() == {n: float(getattr(gx_cartpole.EnvParams(), n)) for n in cp.PHYSICS}
    assert pd.default_physics() == {n: float(getattr(gx_pendulum.EnvParams(), n)) for n in pd.PHYSICS}


@pytest.mark.parametrize("module, gx, fields", [(cp, gx_cartpole, cp.START), (pd, gx_pendulum, pd.START)])
def test_start_states_are_drawn_as_gymnax_resets(module, gx, fields):
    """The generators' start states are gymnax's `reset_env` draws from the same key, bit for bit."""
    keys = jax.random.split(jax.random.key(7), 64)
    ours = jax.vmap(module.draw_start)(keys)
    _, theirs = jax.vmap(lambda k: getattr(gx, "CartPole" if gx is gx_cartpole else "Pendulum")().reset_env(
        k, gx.EnvParams()))(keys)
    for name in fields:
        np.testing.assert_array_equal(np.asarray(ours[name]), np.asarray(getattr(theirs, name), np.float32), name)
