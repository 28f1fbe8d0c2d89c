"""Training throughput: compile time and seconds per PPO update after compilation.

Builds the runner of a preset (default `dr`: 32 envs x 256 steps, LSTM 256, 5 epochs x 1
minibatch) and times the program the training loop runs: a `lax.scan` over `--chunk`
updates (rollouts, GAE, PPO, level buffer), measured after `block_until_ready`.

For the PLR family an update may take several rollout cycles (robust PLR and ACCEL play
new levels without gradients until they replay), so the report also gives cycles and
env steps per update and seconds per cycle. `--warmup` calls run first: they fill the
level buffer, whose first fill is a long search for robust PLR and ACCEL.

    python benchmarks/train_throughput.py [--preset dr] [--chunk 5] [--repeats 3] [--warmup 1] [--envs 32] [--steps 256]
"""

from __future__ import annotations

import argparse
import platform
import time

import jax

from minimax.config import PRESETS
from minimax.build import build_runner
from minimax.train import make_chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="dr", choices=list(PRESETS))
    parser.add_argument("--chunk", type=int, default=5, help="updates per compiled call")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls (after one warm-up call)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls first (fill the buffer)")
    parser.add_argument("--envs", type=int, default=None, help="override --num-envs")
    parser.add_argument("--steps", type=int, default=None, help="override --num-steps")
    args = parser.parse_args()

    overrides = {k: v for k, v in (("num_envs", args.envs), ("num_steps", args.steps)) if v is not None}
    cfg = PRESETS[args.preset].replace(**overrides)
    runner = build_runner(cfg)
    state = jax.jit(runner.init)(jax.random.key(0))
    jax.block_until_ready(state)

    t0 = time.perf_counter()
    program = jax.jit(make_chunk(runner, args.chunk), donate_argnums=0).lower(state).compile()
    compile_s = time.perf_counter() - t0

    for _ in range(args.warmup):
        state, metrics = program(state)
        jax.block_until_ready(metrics)
    times, cycles, env_steps = [], 0, 0
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        state, metrics = program(state)
        jax.block_until_ready(metrics)
        seconds = time.perf_counter() - t0
        times.append(seconds / args.chunk)
        cycles += int(metrics["cycles"].sum())
        env_steps += int(metrics["env_steps"].sum())
    per_update = min(times)
    mean_update = sum(times) / len(times)
    updates = args.chunk * args.repeats
    print(f"{platform.processor() or platform.machine()} | jax {jax.__version__} | {jax.devices()[0].platform}")
    print(f"preset {args.preset}: {cfg.num_envs} envs x {cfg.num_steps} steps, {cfg.model.recurrent_cell.upper()} "
          f"{cfg.model.recurrent_size}, {cfg.ppo.n_epochs} epochs x {cfg.ppo.n_minibatches} minibatch")
    print(f"compile (chunk of {args.chunk} updates): {compile_s:.1f} s")
    print(f"seconds per update: {per_update:.3f} (best of {args.repeats}; all: "
          f"{', '.join(f'{t:.3f}' for t in times)})")
    print(f"cycles per update: {cycles / updates:.2f}, env steps per update: {env_steps / updates:,.0f}, "
          f"seconds per cycle: {mean_update * updates / cycles:.3f} (mean)")
    print(f"env steps per second (training, incl. PPO): {env_steps / (mean_update * updates):,.0f}")


if __name__ == "__main__":
    main()
