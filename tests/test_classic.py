"""Classic control with physics as levels: our time limit and flags, generators, mutators, held-out grids,
and the MLP student's outputs and distributions. The transitions against gymnax's own step:
tests/test_classic_reference.py (the `reference` tier)."""

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from minimax.agents.distributions import Categorical, DiagGaussian
from minimax.envs.classic import (
    CARTPOLE_MUTATORS, CARTPOLE_RANGES, PENDULUM_MUTATORS, PENDULUM_RANGES, CartPole, CartPoleParams, Pendulum,
    PendulumParams, cartpole_held_out, cartpole_level, cartpole_level_metrics, make_cartpole_generator,
    make_cartpole_mutator, make_pendulum_generator, make_pendulum_mutator, pendulum_held_out, pendulum_level,
)
from minimax.envs.classic import cartpole as cp
from minimax.envs.classic import dynamics
from minimax.envs.classic import pendulum as pd
from minimax.envs.wrappers import GenerateAutoReset, ReplayAutoReset
from minimax.models.mlp import MLPActorCritic

TOL = dict(rtol=1e-5, atol=1e-6)
CARTPOLE, PENDULUM = CartPole(), Pendulum()
CARTPOLE_GEN, PENDULUM_GEN = make_cartpole_generator(), make_pendulum_generator()
N = 256  # batch of random levels / states per equivalence check


def stack(levels):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *levels)


def concat(a, b):
    return jax.tree.map(lambda x, y: jnp.concatenate([x, y]), a, b)


def to_np(tree):
    return jax.tree.map(np.asarray, tree)


# ------------------------------------------------------------ gymnax's steps, recorded


@pytest.mark.parametrize("name", ["cartpole", "pendulum"])
def test_steps_are_gymnaxs_as_recorded(name):
    """Our step on the recorded (level, state, action) of 256 designed-physics cases equals gymnax 1.0.1's
    `step_env` as recorded (`python tests/record_references.py gymnax`): obs, reward, done and the next state.
    Runs without gymnax (the newest leg); tests/test_classic_reference.py runs gymnax live."""
    from reference_outputs import load, tree  # noqa: PLC0415

    arrays, meta = load(f"gymnax_{name}")
    assert meta["source"] == "gymnax==1.0.1"
    env, params = (CARTPOLE, CartPoleParams()) if name == "cartpole" else (PENDULUM, PendulumParams())
    like = cartpole_level() if name == "cartpole" else pendulum_level()
    levels, s, actions = tree(like, arrays["levels"]), jnp.asarray(arrays["s"]), jnp.asarray(arrays["actions"])
    times = jnp.asarray(arrays["times"]) if name == "cartpole" else jnp.zeros(len(s), jnp.int32)

    def ours(level, s, a, t):
        state = env.init_state(level, params)
        fields = dict(zip(("x", "x_dot", "theta", "theta_dot") if name == "cartpole" else ("theta", "theta_dot"), s))
        state = state.replace(physics=state.physics.replace(**fields, time=t))
        obs, state, reward, done, _ = env.step(jax.random.key(0), state, a, params)
        return obs, reward, done, state.physics

    obs, reward, done, physics = to_np(jax.jit(jax.vmap(ours))(levels, s, actions, times))
    np.testing.assert_allclose(obs, arrays["obs"], **TOL)
    np.testing.assert_allclose(reward, arrays["reward"], **TOL)
    np.testing.assert_array_equal(done, arrays["done"])
    recorded = {k[len("state_"):] for k in arrays if k.startswith("state_")}
    assert recorded == {f.name for f in dataclasses.fields(physics)}  # gymnax's EnvState fields, ours by name
    for field in recorded:
        np.testing.assert_allclose(getattr(physics, field), arrays[f"state_{field}"], **TOL, err_msg=field)
    assert 0.05 < np.mean(arrays["done"]) < 0.95 or name == "pendulum"  # both outcomes recorded


# ------------------------------------------------------------ our time limit and flags


def push_left(obs):
    return jnp.zeros((), jnp.int32)


def lean_controller(obs):
    """Push towards the side the pole leans to (keeps it up for many steps from near upright)."""
    return (obs[2] + 0.5 * obs[3] > 0).astype(jnp.int32)


def zero_torque(obs):
    return jnp.zeros((1,), jnp.float32)


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 4))
def replay_rollout(env, params, policy, level, n_steps):
    """`n_steps` of `policy` on one level under `ReplayAutoReset`: per step (obs before, reward,
    done, info, time after the step, obs after)."""
    wrapped = ReplayAutoReset(env)
    obs, state = wrapped.reset_to_level(jax.random.key(0), level, params)

    def step(carry, key):
        obs, state = carry
        next_obs, state, reward, done, info = wrapped.step(key, state, policy(obs), params)
        return (next_obs, state), (obs, reward, done, info, state.time, next_obs)

    _, out = jax.lax.scan(step, (obs, state), jax.random.split(jax.random.key(1), n_steps))
    return out


def test_cartpole_survives_to_our_time_limit_and_is_solved_there():
    params = CartPoleParams(max_steps=10)
    level = cartpole_level()
    _, reward, done, info, time, next_obs = to_np(replay_rollout(CARTPOLE, params, lean_controller, level, 25))
    ends = np.flatnonzero(done)
    np.testing.assert_array_equal(ends, [9, 19])
    np.testing.assert_array_equal(info["truncated"], done)
    np.testing.assert_array_equal(info["solved"], done)
    assert not info["terminated"].any()
    np.testing.assert_allclose(reward, 1.0, **TOL)
    # The episode restarts at the level's start state with the clock at 0.
    np.testing.assert_array_equal(time[ends], 0)
    start = np.array([level.x, level.x_dot, level.theta, level.theta_dot])
    np.testing.assert_allclose(next_obs[ends], np.broadcast_to(start, (2, 4)), **TOL)


def test_cartpole_fall_is_terminated_not_solved():
    level = cartpole_level(theta=0.15, theta_dot=0.5)
    _, reward, done, info, _, _ = to_np(replay_rollout(CARTPOLE, CartPoleParams(), push_left, level, 30))
    first = int(np.argmax(done))
    assert done.any() and 0 < first < 20
    assert info["terminated"][first] and not info["truncated"][first] and not info["solved"][first]
    np.testing.assert_allclose(reward[:first + 1], 1.0, **TOL)


@jax.jit
def steps_at(times, thetas):
    """One step from the default physics at rest with the pole at `thetas` and the clock at
    `times`, under `max_steps=601` (gymnax's default limit is 500)."""
    params = CartPoleParams(max_steps=601)

    def one(time, theta):
        state = CARTPOLE.init_state(cartpole_level(theta=theta), params)
        state = state.replace(physics=state.physics.replace(time=time))
        return CARTPOLE.step_env(jax.random.key(0), state, 1, params)[2:]

    return jax.vmap(one)(times, thetas)


def test_our_max_steps_bounds_the_episode_and_a_fall_on_the_last_step_is_not_solved():
    done, info = to_np(steps_at(jnp.array([550, 599, 600, 600], jnp.int32), jnp.array([0.0, 0.0, 0.0, 0.3])))
    np.testing.assert_array_equal(done, [False, False, True, True])
    np.testing.assert_array_equal(info["truncated"], [False, False, True, False])
    np.testing.assert_array_equal(info["solved"], [False, False, True, False])
    np.testing.assert_array_equal(info["terminated"], [False, False, False, True])


def test_pendulum_is_only_truncated_and_never_solved():
    _, reward, done, info, time, _ = to_np(replay_rollout(PENDULUM, PendulumParams(max_steps=5), zero_torque,
                                                          pendulum_level(), 12))
    np.testing.assert_array_equal(np.flatnonzero(done), [4, 9])
    np.testing.assert_array_equal(info["truncated"], done)
    assert not info["terminated"].any() and not info["solved"].any()
    # Hanging straight down at rest with no torque: cost pi^2 every step.
    np.testing.assert_allclose(reward, -math.pi ** 2, rtol=1e-4)
    np.testing.assert_array_equal(time[[4, 9]], 0)


def test_invalid_params_are_refused():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_steps"):
            CartPoleParams(max_steps=bad)
        with pytest.raises(ValueError, match="max_steps"):
            PendulumParams(max_steps=bad)
    with pytest.raises(ValueError, match="length"):
        dataclasses.replace(CARTPOLE_RANGES, length=(1.0, 0.5))
    with pytest.raises(ValueError, match="0 < low"):
        dataclasses.replace(PENDULUM_RANGES, g=(0.0, 10.0))


# ------------------------------------------------------------------- levels and generators


def test_init_state_is_deterministic_and_starts_at_the_level():
    level = jax.tree.map(lambda x: x[3], draws("cartpole"))
    obs_a, state_a = CARTPOLE.reset_to_level(jax.random.key(0), level, CartPoleParams())
    obs_b, state_b = CARTPOLE.reset_to_level(jax.random.key(99), level, CartPoleParams())
    for a, b in zip(jax.tree.leaves(state_a), jax.tree.leaves(state_b)):
        np.testing.assert_array_equal(a, b)  # copies of the level's values: no arithmetic
    np.testing.assert_array_equal(obs_a, [level.x, level.x_dot, level.theta, level.theta_dot])
    assert int(state_a.time) == 0
    plevel = jax.tree.map(lambda x: x[3], draws("pendulum"))
    obs, state = PENDULUM.reset_to_level(jax.random.key(5), plevel, PendulumParams())
    np.testing.assert_allclose(obs, [np.cos(plevel.theta), np.sin(plevel.theta), plevel.theta_dot], **TOL)
    assert CARTPOLE.level_of(state_a) is state_a.level


def within(values, low, high):
    return np.all((values >= np.float32(low)) & (values <= np.float32(high)))


@functools.cache
def draws(name):
    gen = {"cartpole": CARTPOLE_GEN, "pendulum": PENDULUM_GEN}[name]
    return to_np(jax.jit(jax.vmap(gen))(jax.random.split(jax.random.key(7), 2000)))


@pytest.mark.parametrize("name, ranges", [("cartpole", CARTPOLE_RANGES), ("pendulum", PENDULUM_RANGES)])
def test_generator_draws_physics_uniformly_within_ranges(name, ranges):
    levels = draws(name)
    for f in dataclasses.fields(ranges):
        low, high = getattr(ranges, f.name)
        v = getattr(levels, f.name)
        assert v.dtype == np.float32 and v.shape == (2000,)
        assert within(v, low, high), f.name
        # Uniform: fills the range (min and max within 1% of the ends; 2000 draws), mean in the middle.
        assert v.min() < low + 0.01 * (high - low) and v.max() > high - 0.01 * (high - low), f.name
        assert abs(v.mean() - (low + high) / 2) < 0.05 * (high - low), f.name
    if name == "cartpole":  # gymnax's reset: every start coordinate U(-0.05, 0.05)
        for f in cp.START:
            assert within(getattr(levels, f), -0.05, 0.05) and np.ptp(getattr(levels, f)) > 0.09
    else:  # theta U(-pi, pi), theta_dot U(-1, 1)
        assert within(levels.theta, -np.pi, np.pi) and np.ptp(levels.theta) > 6.0
        assert within(levels.theta_dot, -1, 1) and np.ptp(levels.theta_dot) > 1.9


def test_level_metrics_are_the_physics_and_vmap():
    levels = draws("cartpole")
    m = jax.vmap(cartpole_level_metrics)(levels)
    assert set(m) == set(cp.PHYSICS)
    np.testing.assert_array_equal(m["length"], levels.length)
    m = jax.vmap(pd.level_metrics)(draws("pendulum"))
    assert set(m) == {"max_torque", "m", "l", "g"} and m["g"].shape == (2000,)


# ------------------------------------------------------------------------------- mutators

N_EDITS = 3


@functools.cache
def mutated(name, n_edits, ranges=None):
    levels = draws(name)
    module = {"cartpole": cp, "pendulum": pd}[name]
    ranges = ranges or {"cartpole": CARTPOLE_RANGES, "pendulum": PENDULUM_RANGES}[name]
    mutate = module.MUTATORS["perturb"](n_edits, ranges)
    return to_np(jax.jit(jax.vmap(mutate))(jax.random.split(jax.random.key(11), 2000), levels))


@pytest.mark.parametrize("name, ranges", [("cartpole", CARTPOLE_RANGES), ("pendulum", PENDULUM_RANGES)])
def test_mutator_edits_at_most_n_params_within_bounds_and_redraws_the_start(name, ranges):
    before, after = draws(name), mutated(name, N_EDITS)
    module = {"cartpole": cp, "pendulum": pd}[name]
    # Unpicked parameters are passed through untouched, so exact comparison counts the edited ones.
    changed = np.stack([getattr(after, n) != getattr(before, n) for n in module.PHYSICS])
    assert changed.sum(0).max() <= N_EDITS
    assert (changed.sum(0) == N_EDITS).mean() > 0.3 and changed.any(0).mean() > 0.95
    for f in dataclasses.fields(ranges):
        low, high = getattr(ranges, f.name)
        assert within(getattr(after, f.name), low, high), f.name
        # Each edit moves a parameter by at most 10% of its range's width.
        step = np.abs(getattr(after, f.name) - getattr(before, f.name))
        assert step.max() <= N_EDITS * 0.1 * (high - low) * (1 + 1e-5), f.name
        assert changed[module.PHYSICS.index(f.name)].mean() > 0.2, f.name  # every parameter gets picked
    for f in module.START:
        assert (getattr(after, f) != getattr(before, f)).mean() > 0.99


def test_mutator_never_edits_a_fixed_parameter_and_zero_edits_keep_the_physics():
    fixed = dataclasses.replace(CARTPOLE_RANGES, gravity=(9.8, 9.8))
    before = draws("cartpole")
    # Generated levels have gravity in [4.9, 14.7]; a fixed range is never picked, so it is untouched.
    np.testing.assert_array_equal(mutated("cartpole", N_EDITS, fixed).gravity, before.gravity)
    after = mutated("cartpole", 0)
    for n in cp.PHYSICS:
        np.testing.assert_array_equal(getattr(after, n), getattr(before, n))
    with pytest.raises(ValueError, match="n_edits"):
        make_cartpole_mutator(-1)
    with pytest.raises(ValueError, match="step_fraction"):
        make_pendulum_mutator(1, step_fraction=0.0)
    assert set(CARTPOLE_MUTATORS) == set(PENDULUM_MUTATORS) == {"perturb"}


# ------------------------------------------------------------------------ held-out levels


@pytest.mark.parametrize("held_out, ranges, keys", [
    (cartpole_held_out, CARTPOLE_RANGES, ("length", "masspole")),
    (pendulum_held_out, PENDULUM_RANGES, ("max_torque", "l")),
])
def test_held_out_grid_reaches_outside_the_training_ranges(held_out, ranges, keys):
    grid = held_out("grid")
    names = [h.name for h in grid]
    assert len(names) == len(set(names)) == 9
    for h in grid:
        assert h.is_fixed and h.sample(jax.random.key(0)) is h.fixed_level
        assert h.params_for(CartPoleParams()) == CartPoleParams()
    for k in keys:
        low, high = getattr(ranges, k)
        values = np.array([float(getattr(h.fixed_level, k)) for h in grid])
        assert (values < low).any() and (values > high).any() and ((values >= low) & (values <= high)).any(), k
    (default,) = held_out("gymnax")
    assert not default.is_fixed
    level = default.sample(jax.random.key(4))
    gx_defaults = dynamics.CARTPOLE if held_out is cartpole_held_out else dynamics.PENDULUM
    for f in dataclasses.fields(ranges):
        np.testing.assert_allclose(getattr(level, f.name), getattr(gx_defaults, f.name), **TOL)
    with pytest.raises(ValueError, match=r"'nope'.*grid, gymnax"):
        held_out("nope")


def test_held_out_names_and_starts():
    names = [h.name for h in cartpole_held_out("grid")]
    assert "len0.5_mp0.1" in names and "len0.1_mp1" in names
    upright = cartpole_held_out("grid")[0].fixed_level
    assert abs(float(upright.theta)) < 0.05 and float(upright.x) == 0.0
    down = pendulum_held_out("grid")[0].fixed_level
    np.testing.assert_allclose(down.theta, np.pi, **TOL)


# ------------------------------------------------------------ batched resets and steps


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def generate_rollout(env, params, generator, continuous, key):
    """20 steps of random actions over 8 envs under `GenerateAutoReset` (jit of vmapped resets and steps)."""
    wrapped = GenerateAutoReset(env, generator, num_envs=8)
    k_reset, k_run = jax.random.split(key)
    obs0, state = wrapped.reset(k_reset, params)

    def step(state, key):
        k_a, k_s = jax.random.split(key)
        if continuous:
            actions = 2.0 * jax.random.normal(k_a, (8, 1))
        else:
            actions = jax.random.randint(k_a, (8,), 0, 2)
        obs, new, reward, done, info = wrapped.step(k_s, state, actions, params)
        return new, (obs, reward, done, info, new.env_state.time, new.env_state.level, state.env_state.level)

    _, out = jax.lax.scan(step, state, jax.random.split(k_run, 20))
    return obs0, out


@pytest.mark.parametrize("env, params, generator, continuous, obs_dim", [
    (CARTPOLE, CartPoleParams(max_steps=12), CARTPOLE_GEN, False, 4),
    (PENDULUM, PendulumParams(max_steps=7), PENDULUM_GEN, True, 3),
])
def test_jit_vmap_over_generated_levels(env, params, generator, continuous, obs_dim):
    obs0, (obs, reward, done, info, time, level_after, level_before) = to_np(
        generate_rollout(env, params, generator, continuous, jax.random.key(2)))
    assert obs0.shape == (8, obs_dim) and obs.shape == (20, 8, obs_dim) and reward.shape == done.shape == (20, 8)
    assert np.isfinite(obs).all() and np.isfinite(reward).all()
    np.testing.assert_array_equal(done, info["terminated"] | info["truncated"])
    assert not (info["terminated"] & info["truncated"]).any()
    assert done.any()
    np.testing.assert_array_equal(time[done], 0)  # the next episode has started
    assert (time[~done] > 0).all() and (time <= params.max_steps).all()
    # A finished env moves to a fresh level; an unfinished one keeps its level.
    moved = level_after.length != level_before.length if not continuous else level_after.l != level_before.l
    np.testing.assert_array_equal(moved, done)
    if continuous:
        assert not info["solved"].any() and not info["terminated"].any()
    else:
        np.testing.assert_array_equal(info["solved"], info["truncated"])


# -------------------------------------------------------------------------- MLP student


def init_model(model, n=4, obs_dim=4):
    return model.init(jax.random.key(0), model.initial_carry(n), jnp.zeros((1, n, obs_dim)), jnp.ones((1, n), bool))


@pytest.mark.parametrize("kwargs, carry_shape", [
    (dict(n_actions=2), [(5, 1)]),
    (dict(action_dim=2), [(5, 1)]),
    (dict(n_actions=3, recurrent_cell="gru", recurrent_size=16), [(5, 16)]),
])
def test_mlp_output_shapes(kwargs, carry_shape):
    model = MLPActorCritic(**kwargs)

    @jax.jit
    def run(obs):
        params = init_model(model, n=5, obs_dim=3)
        carry, policy, value = model.apply(params, model.initial_carry(5), obs, jnp.zeros((6, 5), bool))
        action = policy.sample(jax.random.key(3))
        return carry, policy, value, action, policy.log_prob(action), policy.entropy()

    carry, policy, value, action, log_prob, entropy = run(jax.random.normal(jax.random.key(1), (6, 5, 3)))
    assert [x.shape for x in jax.tree.leaves(carry)] == carry_shape
    assert value.shape == (6, 5)
    if model.action_dim:
        assert isinstance(policy, DiagGaussian)
        assert policy.mean.shape == policy.log_std.shape == action.shape == (6, 5, model.action_dim)
        np.testing.assert_allclose(policy.log_std, 0.0, **TOL)  # log_std_init
        assert np.abs(policy.mean).max() < 0.2  # policy output gain 0.01
    else:
        assert isinstance(policy, Categorical) and policy.logits.shape == (6, 5, model.n_actions)
        assert action.shape == (6, 5) and action.dtype == jnp.int32
        assert np.abs(policy.logits).max() < 0.2
    assert log_prob.shape == entropy.shape == (6, 5)


def test_mlp_initialisation_and_core_options():
    params = init_model(MLPActorCritic(action_dim=1, log_std_init=-0.5, shared_trunk=False), obs_dim=3)["params"]
    assert {"policy_trunk_0", "policy_trunk_1", "value_trunk_0", "value_trunk_1"} <= set(params)
    assert "trunk_0" not in params
    np.testing.assert_allclose(params["log_std"], [-0.5], **TOL)
    k = np.asarray(params["policy_trunk_0"]["kernel"])  # [3, 64], orthogonal gain sqrt 2: orthogonal rows
    np.testing.assert_allclose(k @ k.T, 2.0 * np.eye(3), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(params["policy_trunk_0"]["bias"], 0.0)
    v = np.asarray(params["value_out"]["kernel"])[:, 0]
    np.testing.assert_allclose(np.linalg.norm(v), 1.0, rtol=1e-4)
    with pytest.raises(ValueError, match="shared_trunk"):
        init_model(MLPActorCritic(recurrent_cell="lstm", shared_trunk=False))


def test_diag_gaussian_log_prob_and_entropy_match_closed_forms():
    rng = np.random.default_rng(0)
    mean, log_std, x = rng.normal(size=(3, 5, 2)), rng.normal(size=(3, 5, 2)) * 0.5, rng.normal(size=(3, 5, 2))
    dist = DiagGaussian(jnp.asarray(mean, jnp.float32), jnp.asarray(log_std, jnp.float32))
    expected = stats.norm.logpdf(x, loc=mean, scale=np.exp(log_std)).sum(-1)
    np.testing.assert_allclose(dist.log_prob(jnp.asarray(x, jnp.float32)), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dist.entropy(), stats.norm.entropy(scale=np.exp(log_std)).sum(-1),
                               rtol=1e-5, atol=1e-5)


def test_categorical_log_prob_and_entropy_match_numpy():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(4, 6, 3)) * 2
    actions = rng.integers(0, 3, size=(4, 6))
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dist = Categorical(jnp.asarray(logits, jnp.float32))
    np.testing.assert_allclose(dist.log_prob(jnp.asarray(actions)),
                               np.log(np.take_along_axis(p, actions[..., None], -1)[..., 0]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dist.entropy(), -(p * np.log(p)).sum(-1), rtol=1e-5, atol=1e-5)
