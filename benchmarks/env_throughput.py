"""AMaze throughput: env steps per second under jit(scan(step)) with auto-reset.

Both reset modes, on 13x13 domain-randomised levels (60 walls), random actions drawn
before the timed region (so the number is the environment's, not the RNG's), and
every observation reduced to a checksum (so XLA cannot skip computing it):
- replay:   `jit(scan(vmap(ReplayAutoReset.step)))`, on done reset to the same level;
- generate: `jit(scan(GenerateAutoReset.step))` (batched; vmaps the env inside), on
  done reset to a fresh DR level from the generator's pool.

    python benchmarks/env_throughput.py [--envs 1 32 256 1024 4096] [--steps 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp

from minimax.envs import GenerateAutoReset, ReplayAutoReset
from minimax.envs.maze import AMaze, make_dr_generator


def build(mode: str, num_envs: int, steps: int, max_steps: int):
    env = AMaze()
    params = env.default_params(max_steps=max_steps)
    generator = make_dr_generator(params.height, params.width, n_walls=60)
    if mode == "replay":
        wrapped = ReplayAutoReset(env)
        step_one = jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))

        def init(key):
            k_level, k_reset = jax.random.split(key)
            levels = jax.vmap(generator)(jax.random.split(k_level, num_envs))
            return jax.vmap(wrapped.reset_to_level, in_axes=(0, 0, None))(
                jax.random.split(k_reset, num_envs), levels, params)[1]

        def step(key, state, actions):
            return step_one(jax.random.split(key, num_envs), state, actions, params)
    else:
        wrapped = GenerateAutoReset(env, generator, num_envs)

        def init(key):
            return wrapped.reset(key, params)[1]

        def step(key, state, actions):
            return wrapped.step(key, state, actions, params)

    def rollout(state, key, actions):
        def body(carry, acts):
            state, key = carry
            key, sub = jax.random.split(key)
            obs, state, reward, done, _ = step(sub, state, acts)
            # Consume the observation as a policy would, or XLA removes its computation.
            seen = jnp.sum(obs["image"], dtype=jnp.int32) + jnp.sum(obs["agent_dir"])
            return (state, key), (reward.sum(), done.sum(), seen)

        (state, key), (rewards, dones, seen) = jax.lax.scan(body, (state, key), actions)
        return state, key, rewards.sum() + seen.sum(), dones.sum()

    return jax.jit(init), jax.jit(rollout, donate_argnums=(0,))


def measure(mode: str, num_envs: int, steps: int, repeats: int, max_steps: int) -> tuple[float, float, float]:
    init, rollout = build(mode, num_envs, steps, max_steps)
    key = jax.random.key(0)
    state = init(key)
    actions = jax.random.randint(jax.random.key(1), (steps, num_envs), 0, 3)
    t0 = time.perf_counter()
    state, key, _, _ = rollout(state, key, actions)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t0
    episodes = 0
    t0 = time.perf_counter()
    for _ in range(repeats):
        state, key, _, dones = rollout(state, key, actions)
        episodes += int(dones)
    jax.block_until_ready(state)
    elapsed = time.perf_counter() - t0
    return num_envs * steps * repeats / elapsed, compile_s, episodes / (num_envs * steps * repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 32, 256, 1024, 4096])
    parser.add_argument("--steps", type=int, default=256, help="scan length per timed call")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per setting")
    parser.add_argument("--modes", nargs="+", default=["generate", "replay"], choices=["generate", "replay"])
    parser.add_argument("--max-steps", type=int, default=250,
                        help="episode budget; small values stress level generation (more episodes)")
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({platform.processor() or platform.machine()})")
    print(f"max_steps {args.max_steps}, {args.steps} steps x {args.repeats} timed calls per row")
    print("| mode | envs | steps/s | episodes ended per 1000 steps | compile s |\n|---|---:|---:|---:|---:|")
    for mode in args.modes:
        for n in args.envs:
            sps, compile_s, ended = measure(mode, n, args.steps, args.repeats, args.max_steps)
            print(f"| {mode} | {n} | {sps / 1e6:.3f}M | {1000 * ended:.1f} | {compile_s:.1f} |", flush=True)


if __name__ == "__main__":
    main()
