"""The runner contract (minimax.runners.base.Runner), checked for every method's runner.

Shapes only (`jax.eval_shape`): nothing here compiles, so the whole contract costs a few
seconds of tracing."""

import dataclasses

import jax
import pytest

from minimax.training.builder import build_runner
from minimax.config import METHODS, PLR_METHODS, TEACHER_METHODS, TrainConfig
from minimax.core.metrics import RUNNER_COUNTS
from minimax.core.parallel import Shard
from minimax.envs.registry import get_env
from minimax.runners import RUNNERS, PAIREDRunner
from minimax.runners.base import Runner

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, n_actions=3, recurrent_size=8,
            num_envs=4, num_steps=8, n_epochs=1, buffer_size=8, n_mutations=2, teacher_n_walls=4,
            teacher_conv_filters=4, teacher_recurrent_size=8, teacher_noise_dim=3, progress=False)


OTHER_ENVS = ("cartpole", "pendulum", "craftax", "jaxnav", "xland")
CONTRACT_ON_EVERY_ENV = ("dr", "accel")
"""The methods whose runner is traced on every environment in the contract tier: DR (the stream and the env's
generator) and ACCEL (the buffer, replay and the env's mutator, with robust PLR's cycle inside). Every method is
traced on the maze there; the other methods on the other environments are the e2e tier's (tracing Craftax's
step for each costs 2-3 s, and their runner code is the maze's: only the level pytree and the action space
differ, which DR and ACCEL already carry through every part)."""
ENV_METHODS = [("maze", m) for m in METHODS] + [
    pytest.param(env, m, marks=() if m in CONTRACT_ON_EVERY_ENV else pytest.mark.e2e, id=f"{env}-{m}")
    for env in OTHER_ENVS for m in METHODS
    if m not in TEACHER_METHODS and not (m in ("sfl", "ncc") and env in ("pendulum", "craftax"))
    and not (m == "remidi" and env == "craftax")]
# (no design MDP outside the maze; SFL's and NCC's learnability needs episodes that succeed or fail; ReMiDi
# replays actions, which Craftax's random steps do not allow)


@pytest.mark.parametrize("env, method", ENV_METHODS)
def test_every_runner_keeps_the_contract(env, method):
    """Every method on every environment: one runner code path, whatever the level pytree and the
    action space (pendulum's continuous torque)."""
    try:
        get_env(env)
    except ValueError as err:  # an optional package that is not installed (the registry says which)
        pytest.skip(str(err))
    extra = {"xland_pool": 64} if env == "xland" else {}  # a few rulesets: the contract, not the benchmark
    runner = build_runner(TrainConfig.from_options(method=method, env=env, **TINY, **extra))
    assert isinstance(runner, Runner)
    assert (runner.num_envs, runner.num_steps) == (4, 8) and runner.local_fields == ()
    state = jax.eval_shape(runner.init, jax.random.key(0))
    assert type(state) is runner.state_type
    next_state, metrics = jax.eval_shape(runner.step, state)
    # the state keeps its structure, shapes and dtypes (a scan carry; checkpoints restore into it)
    assert jax.tree.structure(next_state) == jax.tree.structure(state)
    assert jax.tree.map(lambda a, b: (a.shape, a.dtype) == (b.shape, b.dtype), next_state, state) == \
        jax.tree.map(lambda _: True, state)
    assert all(v.shape == () for v in metrics.values()), {k: v.shape for k, v in metrics.items() if v.shape}
    assert set(RUNNER_COUNTS) <= set(metrics)
    for name in metrics:  # every mean has its denominator (minimax.core.metrics' convention)
        if name.endswith("_sum"):
            base = name[:-len("_sum")]
            assert f"{base}_count" in metrics or ("/" in base and base.rsplit("/", 1)[0] + "/count" in metrics) \
                or "episodes" in metrics, name  # an env's episode_stats (craftax's achievements/*) per episode


@pytest.mark.parametrize("method, global_buffer, local", [
    ("dr", False, ("stream",)), ("robust_plr", False, ("buffer",)), ("robust_plr", True, ())])
def test_sharded_runners_declare_their_per_device_state(method, global_buffer, local):
    cfg = TrainConfig.from_options(method=method, global_buffer=global_buffer, **TINY)
    runner = build_runner(cfg, Shard("data", 2))
    assert runner.local_fields == local
    assert set(local) <= {f.name for f in dataclasses.fields(runner.state_type)}


def test_every_method_has_a_runner_of_that_name():
    assert set(RUNNERS) == set(METHODS)
    assert all(cls.method == name for name, cls in RUNNERS.items() if name in PLR_METHODS)
    assert all(RUNNERS[name] is PAIREDRunner for name in TEACHER_METHODS)
