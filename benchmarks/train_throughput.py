"""Training throughput: compile time and seconds per PPO update after compilation.

Builds the runner of a preset (default `dr`: 32 envs x 256 steps, LSTM 256, 5 epochs x 1
minibatch) and times the program the training loop runs: a `lax.scan` over `--chunk`
updates (rollout, GAE, PPO), measured after `block_until_ready`.

    python benchmarks/train_throughput.py [--preset dr] [--chunk 5] [--repeats 3] [--envs 32] [--steps 256]
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time

import jax

from minimax.config import PRESETS
from minimax.train import build_runner, make_chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="dr", choices=list(PRESETS))
    parser.add_argument("--chunk", type=int, default=5, help="updates per compiled call")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls (after one warm-up call)")
    parser.add_argument("--envs", type=int, default=None, help="override --num-envs")
    parser.add_argument("--steps", type=int, default=None, help="override --num-steps")
    args = parser.parse_args()

    overrides = {k: v for k, v in (("num_envs", args.envs), ("num_steps", args.steps)) if v is not None}
    cfg = dataclasses.replace(PRESETS[args.preset], **overrides)
    runner = build_runner(cfg)
    state = jax.jit(runner.init)(jax.random.key(0))
    jax.block_until_ready(state)

    t0 = time.perf_counter()
    program = jax.jit(make_chunk(runner, args.chunk), donate_argnums=0).lower(state).compile()
    compile_s = time.perf_counter() - t0

    state, metrics = program(state)  # warm-up
    jax.block_until_ready(metrics)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        state, metrics = program(state)
        jax.block_until_ready(metrics)
        times.append((time.perf_counter() - t0) / args.chunk)
    per_update = min(times)
    steps = cfg.num_envs * cfg.num_steps
    print(f"{platform.processor() or platform.machine()} | jax {jax.__version__} | {jax.devices()[0].platform}")
    print(f"preset {args.preset}: {cfg.num_envs} envs x {cfg.num_steps} steps, {cfg.recurrent_cell.upper()} "
          f"{cfg.recurrent_size}, {cfg.n_epochs} epochs x {cfg.n_minibatches} minibatch")
    print(f"compile (chunk of {args.chunk} updates): {compile_s:.1f} s")
    print(f"seconds per update: {per_update:.3f} (best of {args.repeats}; all: "
          f"{', '.join(f'{t:.3f}' for t in times)})")
    print(f"env steps per second (training, incl. PPO): {steps / per_update:,.0f}")


if __name__ == "__main__":
    main()
