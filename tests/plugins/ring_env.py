"""A user's environment with options of its own, in a file outside the package: a corridor of
`--ring-length` cells (the agent starts at cell 0 and walks to a goal; a level is the goal and the
probability that a move slips the other way). The options are declared where it registers, and the
spec reads them as `options.ring_length`, as ours read `options.maze_height`.

    python train.py --plugin tests/plugins/ring_env.py --env ring --ring-length 6 --recurrent-cell none
"""

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

import minimax
from minimax.core.options import check
from minimax.envs import Box, Discrete, Environment
from minimax.envs.registry import HeldOutLevel


@dataclasses.dataclass(frozen=True)
class RingOptions:
    """The ring corridor's size."""

    ring_length: int = 8
    """Cells of the corridor (the goal is one of cells 1 .. length - 1)."""

    def __post_init__(self):
        check(self, lambda c: c.integer("ring_length", 2))


@struct.dataclass
class RingLevel:
    goal: jax.Array
    slip: jax.Array


@struct.dataclass
class RingParams:
    length: int = struct.field(pytree_node=False, default=8)
    max_steps: int = struct.field(pytree_node=False, default=32)


@struct.dataclass
class RingState:
    level: RingLevel
    pos: jax.Array
    time: jax.Array


class Ring(Environment):
    def default_params(self, **overrides):
        return RingParams(**overrides)

    def init_state(self, level, params):
        return RingState(level=level, pos=jnp.zeros((), jnp.int32), time=jnp.zeros((), jnp.int32))

    def level_of(self, state):
        return state.level

    def step_env(self, key, state, action, params):
        move = jnp.where(action == 1, 1, -1)
        move = jnp.where(jax.random.uniform(key) < state.level.slip, -move, move)
        pos, time = jnp.clip(state.pos + move, 0, params.length - 1), state.time + 1
        solved = pos == state.level.goal
        truncated = ~solved & (time >= params.max_steps)
        reward = jnp.where(solved, 1.0 - 0.9 * time / params.max_steps, 0.0).astype(jnp.float32)
        info = {"solved": solved, "terminated": solved, "truncated": truncated}
        return state.replace(pos=pos, time=time), reward, solved | truncated, info

    def get_obs(self, state, params):
        return jnp.concatenate([jax.nn.one_hot(state.pos, params.length), jax.nn.one_hot(state.level.goal,
                                                                                         params.length)])

    def observation_space(self, params):
        return Box(0.0, 1.0, (2 * params.length,), jnp.float32)

    def action_space(self, params):
        return Discrete(2)


def make_params(options):
    return RingParams(length=options.ring_length, max_steps=options.max_episode_steps or 4 * options.ring_length)


def make_generator(options):
    def generate(key):
        k_goal, k_slip = jax.random.split(key)
        return RingLevel(goal=jax.random.randint(k_goal, (), 1, options.ring_length),
                         slip=jax.random.uniform(k_slip, (), jnp.float32, 0.0, 0.3))
    return generate


def held_out(suite: str):
    if suite != "far":
        raise ValueError(f"unknown suite {suite!r} of --env ring; choose from far")
    level = RingLevel(jnp.int32(1), jnp.float32(0.0))  # the nearest goal: in every ring
    return [HeldOutLevel("goal1", sample=lambda key: level, params_for=lambda p: p, fixed_level=level)]


def make_model(cfg):
    from minimax.models.mlp import MLPActorCritic

    return MLPActorCritic.from_options(cfg.model, 2, 0)


RING = minimax.UEDEnv(
    name="ring", description="a corridor of --ring-length cells", make_env=lambda options: Ring(),
    make_params=make_params, make_generator=make_generator, make_model=make_model, held_out=held_out,
    suites=("far",), default_suite="far", test_suite="far", binary_outcome=True, discrete_actions=True,
    cores=("none", "lstm", "gru"))

minimax.register_env("ring", lambda: RING, options=RingOptions)
