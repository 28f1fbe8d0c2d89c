"""ReMiDi's cost per replay cycle at each stage (issue 57).

From the second stage on, ReMiDi steps every level of the earlier stages' buffers beside every env to find
the steps it trains on (`curricula/consistency.py: train_mask`); the loop covers only the stages holding a
considered level, so the first stage pays nothing and stage i pays for i buffers. This times one replay
cycle (rollout, masks, masked PPO update, buffer) of `--preset remidi` with every buffer full, at each
stage given, after one untimed call.

    python benchmarks/remidi_cost.py                          # 32 envs, 64-level buffers, stages 0 1 3
    python benchmarks/remidi_cost.py --buffer-size 256 --stages 0 3 --seeds 3
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minimax.config import PRESETS  # noqa: E402
from minimax.training.builder import build_runner  # noqa: E402


def full_state(runner, key, stages: int):
    """A state whose current and earlier buffers are all full (their levels blank: the cost does not depend
    on them)."""
    state = runner.init(key)
    full = state.buffer.replace(filled=jnp.ones_like(state.buffer.filled))
    return state.replace(buffer=full, earlier=jax.tree.map(lambda x: jnp.broadcast_to(x, (stages,) + x.shape), full))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--buffer-size", type=int, default=64)
    p.add_argument("--envs", type=int, default=32)
    p.add_argument("--seeds", type=int, default=1, help="seeds vmapped in one program")
    p.add_argument("--stages", type=int, nargs="+", default=[0, 1, 3])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    cfg = PRESETS["remidi"].replace(num_envs=args.envs, buffer_size=args.buffer_size, devices=1)
    runner = build_runner(cfg)
    if max(args.stages) >= runner.remidi.remidi_stages:
        p.error(f"--stages {max(args.stages)}: the preset has stages 0..{runner.remidi.remidi_stages - 1}")
    keys = jax.random.split(jax.random.key(0), args.seeds)
    state = jax.vmap(lambda k: full_state(runner, k, runner.remidi.remidi_stages))(keys)
    cycle = jax.jit(jax.vmap(runner.cycle, in_axes=(0, None)))
    print(f"# {platform.processor() or platform.machine()}, {jax.devices()[0].device_kind}, jax {jax.__version__}: "
          f"{args.seeds} seed(s) x {args.envs} envs x {cfg.num_steps} steps, {args.buffer_size}-level buffers")
    for stage in args.stages:
        at = state.replace(stage=jnp.full((args.seeds,), stage, jnp.int32))
        jax.block_until_ready(cycle(at, jnp.bool_(True)))
        start = time.perf_counter()
        for _ in range(args.repeats):
            jax.block_until_ready(cycle(at, jnp.bool_(True)))
        print(f"stage {stage}: {(time.perf_counter() - start) / args.repeats:.2f} s per replay cycle", flush=True)


if __name__ == "__main__":
    main()
