"""The level buffer's own cost per update, at the presets' capacity (4000 AMaze 13x13 levels).

Times, jitted and after compilation, what a PLR-family update asks of the buffer: the
replay distribution (rank transform with staleness), sampling a replay batch, folding the
replay scores back in (`offer` with their slots), and offering a batch of new levels to a
full buffer: found against the batch and the whole buffer (`locate`), then inserted one at
a time by the release's rule (the slot of lowest replay probability, recomputed after each). Batches of 32, 64 and 96 levels are the new-level batch of
robust PLR / ACCEL, parallel PLR and parallel ACCEL at 32 envs. Compare with the seconds
per update of `train_throughput.py`: the issue's budget is 5% of an update.

    python benchmarks/buffer_ops.py [--capacity 4000] [--repeats 20]
"""

from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp

from minimax.curricula.level_buffer import BufferConfig, init_buffer, locate, offer, sample_replay
from minimax.envs.maze import make_dr_generator


def timed(fn, *args, repeats):
    out = fn(*args)
    jax.block_until_ready(out)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    cfg = BufferConfig(capacity=args.capacity, score_transform="rank", temperature=0.3, staleness_coef=0.3)
    generate = jax.jit(jax.vmap(make_dr_generator(13, 13, n_walls=60)))
    full = generate(jax.random.split(jax.random.key(0), args.capacity))
    buffer = init_buffer(jax.tree.map(lambda x: x[0], full), args.capacity)
    fill = jax.jit(lambda b, levels, s: offer(b, levels, jnp.full(s.shape, -1), s, jnp.zeros_like(s),
                                              jnp.ones(s.shape, bool), cfg)[0])
    buffer = fill(buffer, full, jax.random.uniform(jax.random.key(1), (args.capacity,)))
    print(f"{platform.processor() or platform.machine()} | jax {jax.__version__} | {jax.devices()[0].platform}")
    print(f"buffer: {int(buffer.filled.sum())} of {args.capacity} slots filled, 13x13 levels")

    for n in (32, 64, 96):
        new = generate(jax.random.split(jax.random.key(n), n))
        scores = jax.random.uniform(jax.random.key(n + 1), (n,))

        @jax.jit
        def sample_and_update(buffer, key):
            buffer, idx, levels = sample_replay(key, buffer, n, cfg)
            return offer(buffer, levels, idx, scores, scores, jnp.ones(n, bool), cfg)[0]

        @jax.jit
        def offer_new(buffer):
            found = locate(buffer, new, cfg)
            return offer(buffer, new, found.slots, scores, scores, ~found.repeat, cfg)[0]

        t_sample = timed(sample_and_update, buffer, jax.random.key(2), repeats=args.repeats)
        t_insert = timed(offer_new, buffer, repeats=args.repeats)
        print(f"batch {n:3d}: weights + sample + score update {t_sample * 1e3:6.2f} ms | "
              f"insert with de-duplication {t_insert * 1e3:6.2f} ms | both {1e3 * (t_sample + t_insert):6.2f} ms")


if __name__ == "__main__":
    main()
