"""Host-side proportional sampling: SumTree (O(log n)) against rng.choice(n, p=...) (O(n)).

What a host PLR sampler does: draw a level with probability proportional to its weight, then
change that level's weight (its new score). The O(n) path must renormalise after every change,
so each step is `w[i] = x; p = w / w.sum(); rng.choice(n, p=p)`; the tree's step is
`tree.sample(rng, 1); tree.update(i, x)`. Batched: 64 draws, then 64 weights change.
Times are the best of several rounds (per call, microseconds), numpy on one core.

    python benchmarks/segment_tree.py [--sizes 16 50 200 ... 1000000] [--batch 64] [--round-s 0.05]
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time

import numpy as np
from machine import cpu_model

from minimax.host.segment_tree import SumTree


def per_call_us(fn, round_s: float, rounds: int = 5) -> float:
    """Best-of-`rounds` mean time per call; each round runs ~round_s seconds of calls."""
    fn()
    t0, number = time.perf_counter(), 1
    while True:  # calibrate the number of calls per round
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= round_s / 4:
            break
        number *= 2
        t0 = time.perf_counter()
    number = max(1, int(number * round_s / elapsed))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e6


def measure(n: int, batch: int, round_s: float) -> dict:
    rng = np.random.default_rng(n)
    w = rng.random(n) + 1e-3
    tree = SumTree.from_weights(w)
    # random indices / new weights drawn ahead, so the timings hold only the sampler's own work
    pool = itertools.cycle(zip(rng.integers(0, n, 4096).tolist(), rng.random(4096).tolist()))
    new_weights = itertools.cycle(rng.random((256, batch)))
    last = [0]  # the O(n) path's last drawn level, whose weight changes next
    r = {}

    def tree_draw():
        return tree.sample(rng, 1)

    def tree_update():
        tree.update(*next(pool))

    def tree_step():  # draw, then that level's weight changes
        i = tree.sample(rng, 1)[0]
        tree.update(i, next(pool)[1])

    def dense_step():
        w[last[0]] = next(pool)[1]
        last[0] = rng.choice(n, p=w / w.sum())

    def tree_batch():
        idx = tree.sample(rng, batch)
        tree.update(idx, next(new_weights))

    def dense_batch():
        idx = rng.choice(n, batch, p=w / w.sum())
        w[idx] = next(new_weights)

    builds = []
    for _ in range(3):
        t0 = time.perf_counter()
        SumTree.from_weights(w)
        builds.append(time.perf_counter() - t0)
    r["build_ms"] = min(builds) * 1e3
    for name, fn in [("tree_draw", tree_draw), ("tree_update", tree_update), ("tree_step", tree_step),
                     ("dense_step", dense_step), ("tree_batch", tree_batch), ("dense_batch", dense_batch)]:
        r[name] = per_call_us(fn, round_s)
    return r


def crossover(sizes, tree_us, dense_us) -> str:
    """Where dense - tree changes sign, log-linear interpolation in n between measured sizes."""
    diff = np.array(dense_us) - np.array(tree_us)
    if (diff > 0).all():
        return f"tree faster at every size measured (from n = {sizes[0]})"
    if (diff <= 0).all() or diff[-1] <= 0:
        return f"O(n) path faster at n = {sizes[-1]:,} (the largest measured)"
    k = int(np.flatnonzero((diff[:-1] <= 0) & (diff[1:] > 0))[-1])  # the last switch to the tree
    a, b = np.log(sizes[k]), np.log(sizes[k + 1])
    x = np.exp(a + (b - a) * diff[k] / (diff[k] - diff[k + 1]))
    return f"n ~ {x:,.0f} (between {sizes[k]:,} and {sizes[k + 1]:,})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 50, 200, 1_000, 2_000, 5_000, 10_000, 20_000, 100_000, 1_000_000])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--round-s", type=float, default=0.05, help="seconds per timing round")
    args = parser.parse_args()

    print(f"CPU: {cpu_model()} | numpy {np.__version__} | Python {platform.python_version()}\n")
    print(f"| n | build (ms) | tree draw (µs) | tree update (µs) | tree draw+update (µs) | "
          f"rng.choice step (µs) | speed-up | tree {args.batch} draws+updates (µs) | "
          f"rng.choice {args.batch} (µs) | speed-up |")
    print("|" + "---:|" * 10)
    rows = []
    for n in args.sizes:
        r = measure(n, args.batch, args.round_s)
        rows.append(r)
        print(f"| {n:,} | {r['build_ms']:.2f} | {r['tree_draw']:.1f} | {r['tree_update']:.1f} | "
              f"{r['tree_step']:.1f} | {r['dense_step']:.1f} | {r['dense_step'] / r['tree_step']:.1f}x | "
              f"{r['tree_batch']:.1f} | {r['dense_batch']:.1f} | {r['dense_batch'] / r['tree_batch']:.1f}x |",
              flush=True)
    print(f"\ncrossover, single draw + update: "
          f"{crossover(args.sizes, [r['tree_step'] for r in rows], [r['dense_step'] for r in rows])}")
    print(f"crossover, {args.batch} draws + updates: "
          f"{crossover(args.sizes, [r['tree_batch'] for r in rows], [r['dense_batch'] for r in rows])}")


if __name__ == "__main__":
    main()
