"""What the per-environment throughput benchmarks share (`craftax_throughput.py`, `jaxnav_throughput.py`,
`kinetix_throughput.py`, `xland_throughput.py`):
our two wrapped modes of an environment, the checksum rollout, and the timing.

- `ours_step(mode, env, params, generator, num_envs)`: `ours` is `ReplayAutoReset` (on done, back to the
  start of the same level: PLR replay, evaluation), `ours-gen` is `GenerateAutoReset` (on done, a fresh
  level from a pool generated only as episodes end: domain randomisation);
- `checksum_rollout(init, step)`: `jit(scan(step))` that reduces every observation and reward to a
  checksum, so XLA cannot skip computing them;
- `measure(init, rollout, actions, repeats)`: steps per wall and per CPU second, fastest of `repeats`;
- `throughput_table(doc, modes, build, make_actions)`: the command line and markdown table they print.
"""

from __future__ import annotations

import argparse
import time

import jax
from machine import cpu_model

from minimax.envs.wrappers import GenerateAutoReset, ReplayAutoReset

OURS = ("ours", "ours-gen")


def ours_step(mode: str, env, params, generator, num_envs: int):
    """`(init(key) -> state, step(key, state, actions) -> (obs, state, reward, done, info))` of our `mode`."""
    if mode == "ours":
        wrapped = ReplayAutoReset(env)
        step_one = jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))

        def init(key):
            levels = jax.vmap(generator)(jax.random.split(key, num_envs))
            return jax.vmap(env.init_state, in_axes=(0, None))(levels, params)

        def step(key, state, actions):
            return step_one(jax.random.split(key, num_envs), state, actions, params)
        return init, step
    if mode == "ours-gen":
        wrapped = GenerateAutoReset(env, generator, num_envs)
        return (lambda key: wrapped.reset(key, params)[1]), (lambda key, state, actions: wrapped.step(
            key, state, actions, params))
    raise ValueError(f"unknown mode {mode!r}; ours are {', '.join(OURS)}")


def checksum_rollout(init, step):
    """`(jit(init), jit(rollout(state, key, actions) -> (state, key, checksum, episodes ended)))`."""
    def rollout(state, key, actions):
        def body(carry, acts):
            state, key = carry
            key, sub = jax.random.split(key)
            obs, state, reward, done, _ = step(sub, state, acts)
            # Consume the observation as a policy would, or XLA removes its computation.
            return (state, key), (reward.sum() + sum(x.sum() for x in jax.tree.leaves(obs)), done.sum())

        (state, key), (checksums, dones) = jax.lax.scan(body, (state, key), actions)
        return state, key, checksums.sum(), dones.sum()

    return jax.jit(init), jax.jit(rollout, donate_argnums=(0,))


def measure(init, rollout, actions, repeats: int) -> tuple[float, float, float]:
    """`(steps per second, steps per CPU second, compile + first call seconds)` of `rollout` over
    `actions` `[steps, envs, ...]`. Both rates are those of the fastest of `repeats` timed calls; the
    CPU-time rate counts only this process's CPU time, so it is the steadier of the two on a machine
    shared with other jobs (wall-clock also measures the neighbours' load). A second untimed call
    comes before the timed ones: a state from a reset may hold weakly typed leaves that a step
    returns strongly typed (jaxmarl's step counter), which compiles the rollout once more."""
    steps, num_envs = actions.shape[:2]
    key = jax.random.key(0)
    state = init(key)
    t0 = time.perf_counter()
    state, key, _, _ = rollout(state, key, actions)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t0
    state, key, _, _ = rollout(state, key, actions)
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        state, key, _, _ = rollout(state, key, actions)
        jax.block_until_ready(state)
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return num_envs * steps / best_wall, num_envs * steps / best_cpu, compile_s


def throughput_table(doc: str, modes, build, make_actions) -> None:
    """Parse `--envs --steps --repeats --modes` and print one table row per (batch, mode):
    `build(mode, num_envs) -> (init, rollout)`, `make_actions(steps, num_envs) -> actions`."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, nargs="+", default=[32, 1024, 4096], help="vmapped batch sizes")
    parser.add_argument("--steps", type=int, default=64, help="scan length per timed call")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per mode")
    parser.add_argument("--modes", nargs="+", default=list(modes), choices=modes)
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({cpu_model()}, {jax.device_count()} device)")
    print(f"{args.steps} steps per call, fastest of {args.repeats} timed calls per mode")
    print("| envs | mode | steps/s (wall) | steps per CPU s | compile s |\n|---:|---|---:|---:|---:|")
    for num_envs in args.envs:
        for mode in args.modes:
            rate, cpu_rate, compile_s = measure(*build(mode, num_envs), make_actions(args.steps, num_envs),
                                                args.repeats)
            print(f"| {num_envs} | {mode} | {rate:,.0f} | {cpu_rate:,.0f} | {compile_s:.1f} |", flush=True)
