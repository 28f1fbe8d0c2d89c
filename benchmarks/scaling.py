"""Scaling: training env steps per second against seeds (one vmapped program) and devices.

Times the training loop's program (a `lax.scan` over `--chunk` updates) exactly as
`train.py` builds it (`minimax.training.devices`: vmap over seeds, shard_map over devices), after
compilation and `--warmup` calls. Env steps count every simulated step of every seed.

    python benchmarks/scaling.py --seeds 1,2,4,8                 # seeds in one program
    python benchmarks/scaling.py --devices 1,2,4 [--envs 32]     # forced CPU devices (subprocesses)

For `--devices`, each count runs in a fresh process with
`XLA_FLAGS=--xla_force_host_platform_device_count=N` (XLA fixes the device count at start).
`--preset plr` measures what vmap costs where a runner branches (robust PLR's replay
decision becomes a select computing both sides, and its search loop runs until every seed
replays).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import jax


def measure(preset: str, seeds: int, devices: int, envs: int | None, steps: int | None, chunk: int, repeats: int,
            warmup: int, buffer_size: int | None = None) -> dict:
    from minimax.config import PRESETS  # noqa: PLC0415
    from minimax.training.devices import distribute_init, distribute_step  # noqa: PLC0415
    from minimax.training.builder import build_runner, device_layout  # noqa: PLC0415
    from minimax.training.loop import seed_keys  # noqa: PLC0415
    from minimax.training.budget import make_chunk  # noqa: PLC0415

    overrides = {k: v for k, v in (("num_envs", envs), ("num_steps", steps), ("buffer_size", buffer_size))
                 if v is not None}
    cfg = PRESETS[preset].replace(num_seeds=seeds, devices=devices, **overrides)
    layout = device_layout(cfg)
    runner = build_runner(cfg, layout.shard)
    keys, _ = seed_keys(layout)
    state = jax.jit(distribute_init(runner, layout))(keys)
    jax.block_until_ready(state)
    t0 = time.perf_counter()
    program = jax.jit(distribute_step(make_chunk(runner, chunk), runner, layout),
                      donate_argnums=0).lower(state).compile()
    compile_s = time.perf_counter() - t0
    for _ in range(warmup):
        state, metrics = program(state)
        jax.block_until_ready(metrics)
    best, env_steps = float("inf"), 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        state, metrics = program(state)
        jax.block_until_ready(metrics)
        seconds = time.perf_counter() - t0
        steps_done = int(jax.device_get(metrics["env_steps"]).sum())
        if seconds < best:
            best, env_steps = seconds, steps_done
    return {"preset": preset, "seeds": seeds, "devices": layout.devices, "mesh": [layout.seed_devices,
            layout.data_devices], "envs": cfg.num_envs, "steps": cfg.num_steps, "compile_s": compile_s,
            "s_per_update": best / chunk, "env_steps_per_s": env_steps / best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="dr")
    parser.add_argument("--seeds", default="1", help="comma-separated seed counts")
    parser.add_argument("--devices", default="", help="comma-separated forced CPU device counts (subprocesses)")
    parser.add_argument("--envs", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--buffer-size", type=int, default=None, help="PLR presets: a smaller buffer fills sooner")
    parser.add_argument("--chunk", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    seed_counts = [int(s) for s in args.seeds.split(",")]
    common = dict(preset=args.preset, envs=args.envs, steps=args.steps, chunk=args.chunk, repeats=args.repeats,
                  warmup=args.warmup, buffer_size=args.buffer_size)

    if args.child:  # one measurement in this process (its device count is fixed)
        print(json.dumps(measure(seeds=seed_counts[0], devices=int(args.devices or 1), **common)))
        return
    results = []
    if args.devices:
        for d in (int(v) for v in args.devices.split(",")):
            env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={d}")
            cmd = [sys.executable, __file__, "--child", "--devices", str(d), "--seeds", str(seed_counts[0])]
            cmd += [f"--{k.replace('_', '-')}={v}" for k, v in common.items() if v is not None]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    else:
        results = [measure(seeds=s, devices=1, **common) for s in seed_counts]
    print(f"jax {jax.__version__} | {jax.devices()[0].platform} | preset {args.preset}")
    print("| seeds | devices (seed x data) | envs x steps | compile s | s / update | env steps / s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['seeds']} | {r['devices']} ({r['mesh'][0]} x {r['mesh'][1]}) | {r['envs']} x {r['steps']} | "
              f"{r['compile_s']:.1f} | {r['s_per_update']:.3f} | {r['env_steps_per_s']:,.0f} |")
    if not args.devices and seed_counts[0] == 1:
        one = results[0]["env_steps_per_s"]
        for r in results[1:]:
            print(f"{r['seeds']} seeds in one program: {r['env_steps_per_s'] / one:.2f}x the steps/s of running "
                  f"them one after another")


if __name__ == "__main__":
    main()
