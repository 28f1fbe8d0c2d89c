"""Domain randomisation on AMaze from the library's parts: `make_train` and `jax.jit(jax.vmap(...))`
over seeds, then each seed's policy scored on held-out mazes. PureJaxRL's pattern, with levels.

    python examples/dr_seeds.py --seeds 4 --num-updates 60     # a few minutes on a 2-core CPU

`make_train(cfg)` returns `train(key)`: one seed's whole run (init, then `num_updates` PPO updates)
as a pure function, the same program `train.py` runs for `--seed s` when `key = jax.random.key(s)`.
Vmapping it trains every seed in one compiled program; nothing here is written to disk.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import minimax
from minimax.core.metrics import summarize
from minimax.training.builder import make_evaluator


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--num-updates", type=int, default=60)
    p.add_argument("--eval-episodes", type=int, default=10)
    args = p.parse_args(argv)

    # The report's DR preset at a CPU size: 9x9 mazes of up to 15 walls, 16 envs x 64 steps per update.
    cfg = minimax.PRESETS["dr"].replace(num_updates=args.num_updates, num_envs=16, num_steps=64, recurrent_size=32,
                                        maze_height=9, maze_width=9, n_walls=15, lr=3e-4,
                                        log_every=args.num_updates, eval_episodes=args.eval_episodes)
    train = minimax.make_train(cfg)
    keys = jax.random.split(jax.random.key(0), args.seeds)
    t0 = time.perf_counter()
    out = jax.block_until_ready(jax.jit(jax.vmap(train))(keys))
    print(f"trained {args.seeds} seeds x {args.num_updates} updates in one program in {time.perf_counter() - t0:.1f}s")

    # Per seed: the training episodes of the last quarter of the run, and the held-out mazes.
    evaluator = make_evaluator(cfg)  # the validation suite, as `train.py`'s periodic evaluation
    metrics = jax.device_get(out["metrics"])
    last = slice(-max(1, args.num_updates // 4), None)
    results = []
    for s in range(args.seeds):
        row = summarize({k: v[s, last] for k, v in metrics.items()})
        params = jax.tree.map(lambda x: x[s], out["runner_state"].train_state.params)
        held_out = evaluator(jax.random.key(1000 + s), params)
        results.append((row["train/solved_rate"], held_out["mean_solved_rate"]))
        print(f"seed {s}: training solved rate {row['train/solved_rate']:.2f}, "
              f"held-out (validation mazes) {held_out['mean_solved_rate']:.2f}")
    train_rates, test_rates = np.array(results).T
    print(f"mean over seeds: training {train_rates.mean():.2f}, held-out {test_rates.mean():.2f}")
    return results


if __name__ == "__main__":
    main()
