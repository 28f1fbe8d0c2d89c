"""Craftax-Classic throughput: our wrapped env beside craftax's own, same batch, steps and machine.

Each mode runs `jit(scan(vmap(step)))` over `--envs` envs for `--steps` steps with uniformly
random actions (drawn before the timed region, so the number is the environment's, not the
RNG's), and reduces every observation to a checksum (so XLA cannot skip computing it):

- ours:     `minimax.envs.wrappers.ReplayAutoReset(CraftaxClassic())`, on done back to the
            start of the same world (PLR replay, evaluation);
- ours-gen: `GenerateAutoReset(CraftaxClassic(), make_world_generator(params))`, on done a
            fresh world from a pool generated only as episodes end (domain randomisation);
- craftax:  craftax's own `CraftaxClassicSymbolicEnv.step`, whose auto-reset generates a
            fresh world on every step and selects it where an episode ended;
- craftax-noreset: craftax's `CraftaxClassicSymbolicEnvNoAutoReset.step`, no reset at all
            (episodes run on past their end): the cost of craftax's dynamics and observation
            alone, the floor that shows what our bookkeeping and replay reset add.

All run craftax's `craftax_step` and symbolic renderer; the differences are the auto-reset and
our canonical-state bookkeeping. Prints steps per second per mode and ours / craftax.

    python benchmarks/craftax_throughput.py [--envs 256] [--steps 64] [--repeats 3] [--modes ...]
"""

from __future__ import annotations

import argparse

import jax
from machine import cpu_model
from wrapped_env_bench import OURS, checksum_rollout, measure, ours_step
from craftax.craftax_classic.envs.craftax_symbolic_env import (
    CraftaxClassicSymbolicEnv, CraftaxClassicSymbolicEnvNoAutoReset,
)

from minimax.envs.craftax import CraftaxClassic, make_world_generator

MODES = ("ours", "ours-gen", "craftax", "craftax-noreset")


def build(mode: str, num_envs: int):
    """`(init(key) -> state, rollout(state, key, actions) -> (state, key, checksum, dones))`, jitted."""
    env = CraftaxClassic()
    params = env.default_params()
    if mode in OURS:
        return checksum_rollout(*ours_step(mode, env, params, make_world_generator(params), num_envs))
    if mode not in ("craftax", "craftax-noreset"):
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    theirs = CraftaxClassicSymbolicEnv() if mode == "craftax" else CraftaxClassicSymbolicEnvNoAutoReset()
    their_params = theirs.default_params
    step_one = jax.vmap(theirs.step, in_axes=(0, 0, 0, None))

    def init(key):
        return jax.vmap(theirs.reset, in_axes=(0, None))(jax.random.split(key, num_envs), their_params)[1]

    def step(key, state, actions):
        return step_one(jax.random.split(key, num_envs), state, actions, their_params)
    return checksum_rollout(init, step)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, default=256, help="envs in the vmapped batch")
    parser.add_argument("--steps", type=int, default=64, help="scan length per timed call")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per mode")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({cpu_model()}, {jax.device_count()} device)")
    print(f"{args.envs} envs, {args.steps} steps per call, fastest of {args.repeats} timed calls per mode")
    print("| mode | steps/s (wall) | steps per CPU s | compile s |\n|---|---:|---:|---:|")
    rates, cpu_rates = {}, {}
    for mode in args.modes:
        actions = jax.random.randint(jax.random.key(1), (args.steps, args.envs), 0, 17)
        rates[mode], cpu_rates[mode], compile_s = measure(*build(mode, args.envs), actions, args.repeats)
        print(f"| {mode} | {rates[mode]:,.0f} | {cpu_rates[mode]:,.0f} | {compile_s:.1f} |", flush=True)
    for mode in ("ours", "ours-gen"):
        for reference in ("craftax", "craftax-noreset"):
            if mode in rates and reference in rates:
                print(f"{mode} / {reference}: {rates[mode] / rates[reference]:.2f}x wall, "
                      f"{cpu_rates[mode] / cpu_rates[reference]:.2f}x CPU time")


if __name__ == "__main__":
    main()
