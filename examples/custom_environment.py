"""A custom environment whose levels are parameters, registered and trained with robust PLR.

The environment is a corridor of `LENGTH` cells: the agent starts at one end and must walk to a
goal. A level is two numbers, the goal cell and a per-step "slip" probability that the chosen move
is reversed; generated uniformly, so most are easy and some (far goals, slippery floors) hard,
which is what a curriculum is for. Everything the library needs is one `UEDEnv` and one
`register_env` call; the training run is the normal loop (`run_training`: logs, checkpoints,
periodic evaluation on the held-out levels below).

    python examples/custom_environment.py --num-updates 50     # about a minute on a 2-core CPU
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
from flax import struct

import minimax
from minimax.envs import Box, Discrete, Environment
from minimax.envs.registry import HeldOutLevel

LENGTH = 12


@struct.dataclass
class CorridorLevel:
    goal: jax.Array   # int32: the goal's cell, 1 .. LENGTH - 1
    slip: jax.Array   # float32: probability that a move goes the other way


@struct.dataclass
class CorridorParams:
    max_steps: int = struct.field(pytree_node=False, default=48)


@struct.dataclass
class CorridorState:
    level: CorridorLevel
    pos: jax.Array
    time: jax.Array


class Corridor(Environment):
    """Actions: 0 left, 1 right. Observation: one-hot position and one-hot goal. Reward on reaching
    the goal: MiniGrid's `1 - 0.9 t / max_steps`; `solved` then."""

    def default_params(self, **overrides):
        return CorridorParams(**overrides)

    def init_state(self, level, params):
        return CorridorState(level=level, pos=jnp.zeros((), jnp.int32), time=jnp.zeros((), jnp.int32))

    def level_of(self, state):
        return state.level

    def step_env(self, key, state, action, params):
        move = jnp.where(action == 1, 1, -1)
        move = jnp.where(jax.random.uniform(key) < state.level.slip, -move, move)
        pos = jnp.clip(state.pos + move, 0, LENGTH - 1)
        time = state.time + 1
        solved = pos == state.level.goal
        truncated = ~solved & (time >= params.max_steps)
        reward = jnp.where(solved, 1.0 - 0.9 * time / params.max_steps, 0.0).astype(jnp.float32)
        info = {"solved": solved, "terminated": solved, "truncated": truncated}
        return state.replace(pos=pos, time=time), reward, solved | truncated, info

    def get_obs(self, state, params):
        return jnp.concatenate([jax.nn.one_hot(state.pos, LENGTH), jax.nn.one_hot(state.level.goal, LENGTH)])

    def observation_space(self, params):
        return Box(0.0, 1.0, (2 * LENGTH,), jnp.float32)

    def action_space(self, params):
        return Discrete(2)


def generate(key):
    k_goal, k_slip = jax.random.split(key)
    return CorridorLevel(goal=jax.random.randint(k_goal, (), 1, LENGTH),
                         slip=jax.random.uniform(k_slip, (), jnp.float32, 0.0, 0.4))


def held_out(suite: str):
    """`far`: far goals on slippery and dry floors (a few fixed levels)."""
    if suite != "far":
        raise ValueError(f"unknown suite {suite!r} of --env corridor; choose from far")
    levels = {f"goal{g}_slip{s}": CorridorLevel(jnp.int32(g), jnp.float32(s)) for g in (8, 11) for s in (0.0, 0.3)}
    return [HeldOutLevel(name, sample=lambda key, lv=lv: lv, params_for=lambda p: p, fixed_level=lv)
            for name, lv in levels.items()]


def make_model(cfg):
    from minimax.models.mlp import MLPActorCritic  # the library's MLP student (vector observations)

    return MLPActorCritic.from_options(cfg.model, 2, 0)


CORRIDOR = minimax.UEDEnv(
    name="corridor", description="a slippery corridor; a level is the goal cell and the slip probability",
    make_env=lambda options: Corridor(), make_params=lambda options: CorridorParams(options.max_episode_steps or 48),
    make_generator=lambda options: generate, make_model=make_model, held_out=held_out, suites=("far",),
    default_suite="far", test_suite="far", level_metrics=lambda level: {"goal": level.goal, "slip": level.slip},
    binary_outcome=True, discrete_actions=True, cores=("none", "lstm", "gru"))

minimax.register_env("corridor", lambda: CORRIDOR)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-updates", type=int, default=50)
    p.add_argument("--out-dir", default="runs")
    args = p.parse_args(argv)
    cfg = minimax.PRESETS["plr"].replace(
        env="corridor", run_name="corridor-robust_plr", out_dir=args.out_dir, overwrite=True, progress=False,
        num_updates=args.num_updates, num_envs=16, num_steps=64, recurrent_cell="none", recurrent_size=32,
        buffer_size=64, log_every=args.num_updates // 5 or 1, eval_every=args.num_updates // 5 or 1,
        eval_episodes=4, checkpoint_every=args.num_updates)
    last = minimax.run_training(cfg)
    print(f"after {args.num_updates} updates: held-out solved rate {last.get('eval/mean_solved_rate')}, "
          f"buffer holds {last.get('buffer/size')} levels; run in {cfg.run_dir}")
    return last


if __name__ == "__main__":
    main()
