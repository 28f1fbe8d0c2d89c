"""Evaluation throughput: compile time and seconds per evaluation of one checkpoint-sized policy.

Times `EvalRunner` (what `evaluate.py` runs) with the student of a preset (default `dr`: LSTM
256) at freshly initialised parameters, on

  * mazes: every maze of a suite (default `dcd12`), `--episodes` parallel episodes per maze
    (`EvalRunner.evaluate_held_out`, one compiled program per maze size and step budget);
  * sampled: `--levels` levels drawn from the preset's training generator, each played
    `--sampled-episodes` times (`EvalRunner.evaluate_sampled`, batches of `--max-envs` envs),
    as `evaluate.py --cvar` does (its `--cvar-episodes` defaults to 10).

The first call compiles (its time is reported as "first call"; compile ~= first - steady) and
`--repeats` later calls with new keys give the steady-state time (results are fetched to the
host, so the time is end to end). An untrained policy rarely reaches the goal, so nearly every
episode runs to the step budget: this is the worst case; a trained policy's evaluation stops
as soon as the longest episode of a batch ends.

"Env steps" are the steps the batched loop executed: for every compiled batch, its envs times
the loop length (the longest first episode rounded up to `--chunk-steps`), including envs whose
episode already ended and the padding of the last sampled batch (whose padded rows' lengths are
not returned, so that batch's loop length is taken from its real levels).

    python benchmarks/eval_throughput.py [--preset dr] [--suite dcd12] [--episodes 100]
        [--levels 10000] [--sampled-episodes 1] [--chunk-steps 16] [--repeats 3] [--max-envs 4096]
        [--only mazes|sampled]

`--chunk-steps` and `--sampled-episodes` take several values (e.g. `--chunk-steps 1 16`).
The sampled rows include drawing the levels, which `evaluate_sampled` re-jits on every call
(a new `jax.jit(jax.vmap(generator))`): the report also times that part on its own.
"""

from __future__ import annotations

import argparse
import math
import platform
import time

import jax
import numpy as np

from minimax.config import PRESETS
from minimax.envs.maze.ood import get_suite
from minimax.training.builder import build_runner, env_params, level_generator, make_eval_runner


def _loop_steps(lengths: np.ndarray, chunk: int) -> int:
    """Steps of one batch's evaluation loop: the longest first episode rounded up to a chunk."""
    return int(math.ceil(int(lengths.max()) / chunk) * chunk)


def maze_env_steps(results: dict, mazes, episodes: int, chunk: int) -> int:
    """Env steps `evaluate_held_out` executed: one batch per (height, width, max_steps) group."""
    groups: dict = {}
    for maze in mazes:
        groups.setdefault((maze.height, maze.width, maze.max_steps), []).append(maze.name)
    return sum(len(names) * episodes * _loop_steps(np.concatenate([results[n].length for n in names]), chunk)
               for names in groups.values())


def sampled_env_steps(result, episodes: int, max_envs: int, chunk: int) -> int:
    """Env steps `evaluate_sampled` executed (padding of the last batch not counted)."""
    batch = max(1, max_envs // episodes)
    n_levels = result.length.shape[0]
    total = 0
    for start in range(0, n_levels, batch):
        lengths = result.length[start:start + batch]
        envs = (batch if n_levels > batch else lengths.shape[0]) * episodes
        total += envs * _loop_steps(lengths, chunk)
    return total


def timed(fn, repeats: int):
    """(first-call seconds, [steady-state seconds], last result); call i gets key i."""
    t0 = time.perf_counter()
    out = fn(jax.random.key(0))
    first = time.perf_counter() - t0
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        out = fn(jax.random.key(i + 1))
        times.append(time.perf_counter() - t0)
    return first, times, out


def report(label: str, first: float, times: list[float], env_steps: int, solved: float, length: float) -> None:
    if not times:  # --repeats 0: the first call is the only measurement
        print(f"{label}: first call {first:.1f} s (incl. compile); env steps {env_steps:,} -> "
              f"{env_steps / first:,.0f} steps/s; solved {solved:.3f}, mean length {length:.0f}")
        return
    best, mean = min(times), sum(times) / len(times)
    compile_s = f"~{first - best:.1f} s" if first - best > 0.05 * best else "within noise"
    print(f"{label}: first call {first:.1f} s (compile {compile_s}); steady {best:.2f} s best of "
          f"{len(times)} (all: {', '.join(f'{t:.2f}' for t in times)}); env steps {env_steps:,} "
          f"-> {env_steps / mean:,.0f} steps/s (mean); solved {solved:.3f}, mean length {length:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="dr", choices=list(PRESETS))
    parser.add_argument("--suite", default="dcd12")
    parser.add_argument("--episodes", type=int, default=100, help="episodes per suite maze")
    parser.add_argument("--levels", type=int, default=10_000, help="sampled levels")
    parser.add_argument("--sampled-episodes", type=int, nargs="+", default=[1], help="episodes per sampled level")
    parser.add_argument("--chunk-steps", type=int, nargs="+", default=[16], help="steps between early-stop checks")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls after the first (compiling) call; 0: the first call only")
    parser.add_argument("--max-envs", type=int, default=4096, help="most envs per batch (sampled levels)")
    parser.add_argument("--greedy", action="store_true", help="greedy actions (default: sampled)")
    parser.add_argument("--only", choices=("mazes", "sampled"), default=None)
    args = parser.parse_args()

    cfg = PRESETS[args.preset]
    params = jax.jit(build_runner(cfg).init)(jax.random.key(0)).train_state.params
    jax.block_until_ready(params)
    n_params = sum(x.size for x in jax.tree.leaves(params))
    print(f"{platform.processor() or platform.machine()} | jax {jax.__version__} | {jax.devices()[0].platform}")
    print(f"preset {args.preset}: {cfg.model.recurrent_cell.upper()} {cfg.model.recurrent_size}, {n_params:,} parameters, "
          f"untrained (episodes mostly run to the step budget: worst case); greedy={args.greedy}")

    for chunk in args.chunk_steps:
        if args.only in (None, "mazes"):
            mazes = get_suite(args.suite)
            runner = make_eval_runner(cfg, args.episodes, args.greedy, chunk_steps=chunk, max_envs=args.max_envs)
            first, times, out = timed(lambda key: runner.evaluate_held_out(key, params, mazes), args.repeats)
            sizes = sorted({(m.height, m.width, m.max_steps) for m in mazes})
            steps = maze_env_steps(out, mazes, args.episodes, chunk)
            solved = float(np.mean([r.solved.mean() for r in out.values()]))
            length = float(np.mean([r.length.mean() for r in out.values()]))
            report(f"{args.suite} ({len(mazes)} mazes, {len(sizes)} programs) x {args.episodes} episodes, "
                   f"chunk {chunk}", first, times, steps, solved, length)

        if args.only in (None, "sampled"):
            for episodes in args.sampled_episodes:
                runner = make_eval_runner(cfg, episodes, args.greedy, chunk_steps=chunk, max_envs=args.max_envs)
                generator, ep = level_generator(cfg), env_params(cfg)
                first, times, out = timed(
                    lambda key: runner.evaluate_sampled(key, params, generator, args.levels, ep), args.repeats)
                steps = sampled_env_steps(out, episodes, args.max_envs, chunk)
                batch = max(1, args.max_envs // episodes)
                report(f"{args.levels:,} sampled levels x {episodes} episodes "
                       f"({math.ceil(args.levels / batch)} batches of <= {min(batch, args.levels) * episodes} "
                       f"envs), chunk {chunk}", first, times, steps, float(out.solved.mean()),
                       float(out.length.mean()))
            # evaluate_sampled wraps the generator in a new `jax.jit(jax.vmap(...))` per call, so
            # every call recompiles it: measure that part on its own.
            keys = jax.random.split(jax.random.key(0), args.levels)
            t0 = time.perf_counter()
            jax.block_until_ready(jax.jit(jax.vmap(level_generator(cfg)))(keys))
            fresh = time.perf_counter() - t0
            cached = jax.jit(jax.vmap(level_generator(cfg)))
            jax.block_until_ready(cached(keys))
            t0 = time.perf_counter()
            jax.block_until_ready(cached(keys))
            print(f"  of which drawing {args.levels:,} levels: {fresh:.2f} s with a fresh jit (as every "
                  f"evaluate_sampled call does), {time.perf_counter() - t0:.3f} s once compiled")


if __name__ == "__main__":
    main()
