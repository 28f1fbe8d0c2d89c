"""XLand-MiniGrid throughput: our wrapped env beside xminigrid's own, same rulesets, batch, steps and machine.

Each mode runs `jit(scan(vmap(step)))` over `--envs` envs for `--steps` steps with uniformly random actions
(drawn before the timed region), on the first `--envs` rulesets of `high-3m` (v2, generated here), and reduces
every observation to a checksum (so XLA cannot skip computing it):

- ours:       `ReplayAutoReset(XLand())`: on done the level's next room (xminigrid's auto-reset draw);
- ours-gen:   `GenerateAutoReset(XLand(), pool generator)`: on done a fresh ruleset and room (domain randomisation);
- ours-trial: `ReplayAutoReset(Trials(XLand()))`, trials of 4,096 steps (SFL's meta-RL): the episodes of a trial
              restart the level, the previous action and reward join the observation;
- xminigrid:  xminigrid's `XLand-MiniGrid-R4-13x13` under its `GymAutoResetWrapper`, the ruleset in its params
              (vmapped), as SFL's training runs it.

    python benchmarks/xland_throughput.py [--envs 1024] [--steps 64] [--repeats 3] [--modes ...]
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import xminigrid
from machine import cpu_model
from wrapped_env_bench import checksum_rollout, measure, ours_step
from xminigrid.wrappers import GymAutoResetWrapper

from minimax.envs.trials import Trials
from minimax.envs.xland import benchmarks
from minimax.envs.xland.env import XLand, XLandLevel, raw_key

MODES = ("ours", "ours-gen", "ours-trial", "xminigrid")


def pool(num_envs: int):
    arrays = benchmarks.load("high-3m", "v2", num_envs)
    return XLandLevel(goal=jnp.asarray(arrays["goals"]), rules=jnp.asarray(arrays["rules"]),
                      init_tiles=jnp.asarray(arrays["init_tiles"]), key=jnp.zeros((len(arrays["goals"]), 2),
                                                                                  jnp.uint32))


def build(mode: str, num_envs: int):
    """`(init(key) -> state, rollout(state, key, actions) -> (state, key, checksum, dones))`, jitted."""
    levels = pool(num_envs)

    def generator(key):
        k_row, k_room = jax.random.split(key)
        level = jax.tree.map(lambda x: x[jax.random.randint(k_row, (), 0, num_envs)], levels)
        return level.replace(key=raw_key(k_room))

    if mode in ("ours", "ours-gen"):
        env = XLand()
        return checksum_rollout(*ours_step(mode, env, env.default_params(), generator, num_envs))
    if mode == "ours-trial":
        env = Trials(XLand())
        return checksum_rollout(*ours_step("ours", env, env.default_params(steps=4096), generator, num_envs))
    if mode != "xminigrid":
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    theirs, params = xminigrid.make("XLand-MiniGrid-R4-13x13")
    theirs = GymAutoResetWrapper(theirs)
    per_env = jax.vmap(lambda level: params.replace(ruleset=level.ruleset))(levels)

    def init(key):
        return jax.vmap(theirs.reset)(per_env, jax.random.split(key, num_envs))

    def step(key, timestep, actions):
        del key
        timestep = jax.vmap(theirs.step)(per_env, timestep, actions)
        return timestep.observation, timestep, timestep.reward, timestep.last(), {}
    return checksum_rollout(init, step)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, default=1024, help="envs in the vmapped batch")
    parser.add_argument("--steps", type=int, default=64, help="scan length per timed call")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per mode")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({cpu_model()}, {jax.device_count()} device)")
    print(f"{args.envs} envs, {args.steps} steps per call, fastest of {args.repeats} timed calls per mode")
    print("| mode | steps/s (wall) | steps per CPU s | compile s |\n|---|---:|---:|---:|")
    rates = {}
    for mode in args.modes:
        actions = jax.random.randint(jax.random.key(1), (args.steps, args.envs), 0, 6)
        rates[mode], cpu, compile_s = measure(*build(mode, args.envs), actions, args.repeats)
        print(f"| {mode} | {rates[mode]:,.0f} | {cpu:,.0f} | {compile_s:.1f} |", flush=True)
    for mode in ("ours", "ours-gen", "ours-trial"):
        if mode in rates and "xminigrid" in rates:
            print(f"{mode} / xminigrid: {rates[mode] / rates['xminigrid']:.2f}x wall")


if __name__ == "__main__":
    main()
