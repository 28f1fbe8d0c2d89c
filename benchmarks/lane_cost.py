"""The cost of one lane-update as a program carries more lanes (points x seeds), DR beside robust PLR.

    python benchmarks/lane_cost.py --out benchmarks/results/lane_cost_cpu.json

A lane of a sweep is one (point, seed). DR's update is one rollout and one PPO update per lane. Robust PLR's
update unit (`training/budget.py: _update_unit`) plays cycles of new levels until the lane's replay coin
falls, and under `vmap` every lane waits for the slowest: with replay probability p the unit runs the
maximum over L lanes of geometric cycle counts, whose mean grows with L (about 2.5 at 4 lanes, 3.7 at 10,
7.0 at 100 for p = 0.5; 1 / p = 2 for one lane). The lanes' learning rates differ (a sweep), so every lane
is its own run. For each method and L in `--lanes`, the program of a chunk of `--updates` updates is compiled,
run once to warm up and once timed; the figure is the timed chunk's seconds / (L x updates), beside the
cycles the slowest lane set (the mean over the chunk of the largest per-lane cycle count of an update).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import jax
import numpy as np

from minimax.config import TrainConfig
from minimax.config.hyperparams import hp_arrays
from minimax.training.devices import plan_layout
from minimax.training.programs import programs
from minimax.training.loop import seed_keys

from machine import cpu_model

SIZES = dict(maze_height=13, maze_width=13, num_envs=8, num_steps=64, recurrent_size=32, progress=False)


def lane_cost(method: str, lanes: int, updates: int, table5: bool = False) -> dict:
    extra = {} if method == "dr" or table5 else dict(buffer_size=32, min_fill_ratio=0.25)
    sizes = dict(progress=False) if table5 else SIZES
    cfg = TrainConfig.from_options(**sizes, **extra, method=method, num_updates=updates, log_every=updates)
    layout = plan_layout(range(lanes), devices=1)
    kept = programs(cfg, layout)
    lrs = np.geomspace(1e-4, 3e-3, lanes)
    hp = hp_arrays(cfg, [{"lr": float(v)} for v in lrs]) if lanes > 1 else hp_arrays(cfg)
    state = kept.init(seed_keys(layout)[0])
    ahead = np.zeros((lanes,) if lanes > 1 else (), np.int32)
    chunk = kept.chunk(updates, state, ahead, hp, announce=False)
    state, _ = chunk(state, ahead, hp)  # warm: fills the buffer, first replays
    jax.block_until_ready(state)
    t0 = time.perf_counter()
    state, metrics = chunk(state, ahead, hp)
    jax.block_until_ready(state)
    seconds = time.perf_counter() - t0
    cycles = np.asarray(metrics["cycles"]).reshape(lanes, updates) if lanes > 1 else \
        np.asarray(metrics["cycles"]).reshape(1, updates)
    return {"method": method, "lanes": lanes, "s_per_lane_update": round(seconds / lanes / updates, 5),
            "mean_cycles_per_update": round(float(cycles.mean()), 2),
            "mean_slowest_lane_cycles": round(float(cycles.max(axis=0).mean()), 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lanes", default="2,8,32")
    p.add_argument("--updates", type=int, default=10)
    p.add_argument("--methods", default="dr,robust_plr")
    p.add_argument("--table5", action="store_true", help="the report's Table 5 sizes (the presets'), for a GPU: "
                   "`--table5 --lanes 10,100` is one 10-seed program against 10 points x 10 seeds")
    p.add_argument("--out", default="benchmarks/results/lane_cost_cpu.json")
    args = p.parse_args()
    rows = [lane_cost(m, int(n), args.updates, args.table5) for m in args.methods.split(",")
            for n in args.lanes.split(",")]
    result = {"machine": f"{cpu_model()}, {os.cpu_count()} cores, {jax.devices()[0].device_kind}",
              "sizes": "Table 5 (the presets')" if args.table5 else SIZES, "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
