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
import time

import jax
from machine import cpu_model
from craftax.craftax_classic.envs.craftax_symbolic_env import (
    CraftaxClassicSymbolicEnv, CraftaxClassicSymbolicEnvNoAutoReset,
)

from minimax.envs.craftax import CraftaxClassic, make_world_generator
from minimax.envs.wrappers import GenerateAutoReset, ReplayAutoReset

MODES = ("ours", "ours-gen", "craftax", "craftax-noreset")


def build(mode: str, num_envs: int):
    """`(init(key) -> state, rollout(state, key, actions) -> (state, key, checksum, dones))`, jitted."""
    env = CraftaxClassic()
    params = env.default_params()
    generator = make_world_generator(params)
    if mode == "ours":
        wrapped = ReplayAutoReset(env)
        step_one = jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))

        def init(key):
            levels = jax.vmap(generator)(jax.random.split(key, num_envs))
            return jax.vmap(env.init_state, in_axes=(0, None))(levels, params)

        def step(key, state, actions):
            return step_one(jax.random.split(key, num_envs), state, actions, params)
    elif mode == "ours-gen":
        wrapped = GenerateAutoReset(env, generator, num_envs)

        def init(key):
            return wrapped.reset(key, params)[1]

        def step(key, state, actions):
            return wrapped.step(key, state, actions, params)
    elif mode in ("craftax", "craftax-noreset"):
        theirs = CraftaxClassicSymbolicEnv() if mode == "craftax" else CraftaxClassicSymbolicEnvNoAutoReset()
        their_params = theirs.default_params
        step_one = jax.vmap(theirs.step, in_axes=(0, 0, 0, None))

        def init(key):
            return jax.vmap(theirs.reset, in_axes=(0, None))(jax.random.split(key, num_envs), their_params)[1]

        def step(key, state, actions):
            return step_one(jax.random.split(key, num_envs), state, actions, their_params)
    else:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")

    def rollout(state, key, actions):
        def body(carry, acts):
            state, key = carry
            key, sub = jax.random.split(key)
            obs, state, reward, done, _ = step(sub, state, acts)
            # Consume the observation as a policy would, or XLA removes its computation.
            return (state, key), (reward.sum() + obs.sum(), done.sum())

        (state, key), (checksums, dones) = jax.lax.scan(body, (state, key), actions)
        return state, key, checksums.sum(), dones.sum()

    return jax.jit(init), jax.jit(rollout, donate_argnums=(0,))


def measure(mode: str, num_envs: int, steps: int, repeats: int) -> tuple[float, float, float]:
    """`(steps per second, steps per CPU second, compile + first call seconds)` of `mode` on
    `num_envs` envs. Both rates are those of the fastest of `repeats` timed calls; the CPU-time
    rate counts only this process's CPU time, so it is the steadier of the two on a machine
    shared with other jobs (wall-clock also measures the neighbours' load)."""
    init, rollout = build(mode, num_envs)
    key = jax.random.key(0)
    state = init(key)
    actions = jax.random.randint(jax.random.key(1), (steps, num_envs), 0, 17)
    t0 = time.perf_counter()
    state, key, _, _ = rollout(state, key, actions)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t0
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        state, key, _, _ = rollout(state, key, actions)
        jax.block_until_ready(state)
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return num_envs * steps / best_wall, num_envs * steps / best_cpu, compile_s


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
        rates[mode], cpu_rates[mode], compile_s = measure(mode, args.envs, args.steps, args.repeats)
        print(f"| {mode} | {rates[mode]:,.0f} | {cpu_rates[mode]:,.0f} | {compile_s:.1f} |", flush=True)
    for mode in ("ours", "ours-gen"):
        for reference in ("craftax", "craftax-noreset"):
            if mode in rates and reference in rates:
                print(f"{mode} / {reference}: {rates[mode] / rates[reference]:.2f}x wall, "
                      f"{cpu_rates[mode] / cpu_rates[reference]:.2f}x CPU time")


if __name__ == "__main__":
    main()
