"""Procgen host-env throughput: env steps per second of 64 envs under random actions.

For each game:
- raw:     `procgen.ProcgenGym3Env` alone (`act` + `observe`), procgen drawing its own levels from
           200 seeds (`num_levels=200`) on auto-reset;
- adapter: `ProcgenHostEnv.step` and, after every step, `set_levels` for the slots whose episode
           ended, each forced to a level drawn from the same 200 seeds (what the PLR loop does);
- the cost of one forced level: making a seed's start state (cache miss; evaluation with fresh
  seeds pays this) and setting a cached one into a slot (cache hit; PLR's usual case).

Both loops use the same procgen thread count and pre-drawn actions, alternate over `--repeats`
rounds of `--steps` vector steps (medians reported) and start warm (the adapter's 200 start states
are cached first). Overhead = the median over rounds of adapter time / raw time - 1: pairing
adjacent rounds keeps it meaningful on a shared, noisy machine where absolute rates drift.

    python benchmarks/host_env_throughput.py [--games coinrun bigfish] [--envs 64] [--steps 300]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from machine import cpu_model

from minimax.envs.host.procgen import LevelStarts, ProcgenHostEnv, import_procgen


def time_raw(env, actions) -> float:
    tick = time.perf_counter()
    for a in actions:
        env.act(a)
        env.observe()
    return time.perf_counter() - tick


def time_adapter(env, actions, seeds, rng) -> tuple[float, int]:
    ends = 0
    tick = time.perf_counter()
    for a in actions:
        step = env.step(a)
        ended = np.flatnonzero(step.done)
        if ended.size:
            env.set_levels(ended, rng.choice(seeds, ended.size))
            ends += ended.size
    return time.perf_counter() - tick, ends


def forced_level_costs(procgen, env, game, n=500) -> tuple[float, float]:
    """ms per start state made (fresh seeds, cache off) and per cached level set into a slot."""
    starts = LevelStarts(procgen.ProcgenGym3Env, game, "easy", {}, cache_size=0)
    tick = time.perf_counter()
    for seed in range(10_000, 10_000 + n):
        starts.get(seed)
    make_ms = (time.perf_counter() - tick) / n * 1e3
    starts.close()
    ids = np.arange(env.num_envs)
    tick = time.perf_counter()
    rounds = max(1, n // env.num_envs)
    for _ in range(rounds):
        env.set_levels(ids, ids % 200)                   # all cached
    hit_ms = (time.perf_counter() - tick) / (rounds * env.num_envs) * 1e3
    return make_ms, hit_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["coinrun", "bigfish"])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=300, help="vector steps per timed round")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=None, help="procgen threads (default: min(cores, envs, 8))")
    args = parser.parse_args()
    procgen = import_procgen()
    threads = min(os.cpu_count() or 1, args.envs, 8) if args.threads is None else args.threads
    seeds = np.arange(200)
    rows = []
    for game in args.games:
        rng = np.random.default_rng(0)
        actions = rng.integers(0, 15, (args.steps, args.envs)).astype(np.int32)
        raw_env = procgen.ProcgenGym3Env(num=args.envs, env_name=game, distribution_mode="easy",
                                         num_threads=threads, start_level=0, num_levels=200, rand_seed=0)
        env = ProcgenHostEnv(game, args.envs, num_threads=threads)
        env.reset(seeds[: args.envs])
        for seed in seeds:                               # warm the start-state cache (PLR's steady state)
            env.set_levels([0], [seed])
        time_raw(raw_env, actions[:50])
        time_adapter(env, actions[:50], seeds, rng)
        raw, ours, ends = [], [], 0
        for _ in range(args.repeats):                    # interleaved, so both see the same machine load
            raw.append(time_raw(raw_env, actions))
            seconds, n = time_adapter(env, actions, seeds, rng)
            ours.append(seconds)
            ends += n
        make_ms, hit_ms = forced_level_costs(procgen, env, game)
        env.close()
        raw_env.close()
        steps = args.steps * args.envs
        overhead = float(np.median(np.array(ours) / np.array(raw))) - 1   # paired rounds: robust to load drift
        rows.append((game, steps / float(np.median(raw)), steps / float(np.median(ours)), overhead * 100,
                     1000 * ends / (steps * args.repeats), make_ms, hit_ms))
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; procgen {procgen.__version__.strip()}, "
          f"{args.envs} envs, {threads} procgen threads, {args.repeats} interleaved rounds of {args.steps} "
          "vector steps (medians)\n")
    print("| game | raw ProcgenGym3Env steps/s | ProcgenHostEnv + forced levels steps/s | overhead "
          "| episode ends / 1k steps | new start state (miss) ms | cached level set (hit) ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for game, r, o, over, ends, make_ms, hit_ms in rows:
        print(f"| {game} | {r:,.0f} | {o:,.0f} | {over:+.1f}% | {ends:.1f} | {make_ms:.3f} | {hit_ms:.3f} |")


if __name__ == "__main__":
    main()
