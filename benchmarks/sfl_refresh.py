"""SFL's refresh cost: one sampling pass (play every sampled level, estimate its success rate)
timed with the early stop against a plain scan to the step limit, and one training update, so
the refresh's share of training time follows (one refresh per `--sfl-refresh-every` updates).

The pass is `SFLRunner.refresh` (every batch, the top-k merge), jitted alone; the update is
`SFLRunner.step` on an update without a refresh. Times are after compilation, best of
`--repeats`. `--train N` first trains N updates so the policy is not the untrained one (an
untrained policy times out everywhere, so the early stop cannot end a pass early).

    python benchmarks/sfl_refresh.py [--batches 1] [--batch-levels 1000] [--repeats 2] [--train 0] [--set k=v ...]
"""

from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp

from minimax.training.builder import build_runner
from minimax.config import TrainConfig
from minimax.config import PRESETS
from minimax.core.options import parse_assignments


def timed(fn, repeats):
    jax.block_until_ready(fn())  # compile
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, default=1, help="sampled batches per refresh (the preset: 5)")
    p.add_argument("--batch-levels", type=int, default=1000, help="levels per batch (the preset: 5000)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--train", type=int, default=0, help="updates to train before timing")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="more options of the sfl preset")
    args = p.parse_args(argv)
    cfg = PRESETS["sfl"].replace(sfl_batches=args.batches, sfl_batch_levels=args.batch_levels,
                                 sfl_set_size=min(1000, args.batches * args.batch_levels),
                                 **parse_assignments(args.set, TrainConfig.option_types()))
    runner = build_runner(cfg)
    state = jax.jit(runner.init)(jax.random.key(0))
    step = jax.jit(runner.step)
    for _ in range(args.train):
        state, _ = step(state)
    ts = state.train_state
    key = jax.random.key(1)
    due = jnp.asarray(True)
    results = {}
    for name, early in (("early stop", True), ("plain scan to the limit", False)):
        fn = jax.jit(lambda early=early: runner.refresh(key, ts.apply_fn, ts.params, state.learnable, due, early))
        seconds, new = timed(fn, args.repeats)
        results[name] = (seconds, int(new.refresh_steps), new)
    a, b = results["early stop"][2], results["plain scan to the limit"][2]
    same = bool(jnp.all(a.learnability == b.learnability))
    # an update without a refresh (the state's counter is not at a multiple of --sfl-refresh-every)
    off = state.replace(updates=state.updates + 1) if int(state.updates) % cfg.sfl.sfl_refresh_every == 0 else state
    update_s, _ = timed(lambda: step(off), args.repeats)
    print(f"device: {jax.devices()[0].device_kind} ({platform.processor() or platform.machine()}), "
          f"jax {jax.__version__}; sfl preset, {args.batches} x {args.batch_levels} sampled levels, "
          f"{cfg.sfl.sfl_rollout_steps} steps limit, policy after {args.train} updates")
    print("| pass | seconds per refresh | steps run (summed over batches) | level-steps per second |")
    print("|---|---:|---:|---:|")
    for name, (seconds, steps, _) in results.items():
        print(f"| {name} | {seconds:.2f} | {steps} | {steps * args.batch_levels / seconds:,.0f} |")
    print(f"same set from both passes: {same}")
    print(f"one update ({cfg.num_envs} envs x {cfg.num_steps} steps, {cfg.ppo.n_epochs} epochs x "
          f"{cfg.ppo.n_minibatches} minibatches): {update_s:.2f} s")
    for name, (seconds, _, _) in results.items():
        share = seconds / (seconds + cfg.sfl.sfl_refresh_every * update_s)
        print(f"refresh share of training time ({name}, one refresh per {cfg.sfl.sfl_refresh_every} updates): "
              f"{share:.1%}")


if __name__ == "__main__":
    main()
