"""Start-up with kept programs (issue "Hyperparameters as data"): a resume in the same process, and a second
process served by the persistent compilation cache.

    python benchmarks/startup.py --out benchmarks/results/startup_cpu.json

- `in_process`: a tiny robust PLR run (2 seeds, 2 updates of one chunk) from a cold process, then the same run
  resumed to 4 updates and a second run with another learning rate, each timed from `train()`'s call to its
  return (so each includes one chunk of training: milliseconds here).
- `processes`: the same tiny run as `train.py` in two fresh processes one after another, sharing an empty
  persistent compilation cache (the second loads the first's programs; both trace).
Writes the seconds as JSON and prints them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import cpu_model

TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3, recurrent_size=16, num_envs=8,
            num_steps=16, n_epochs=2, lr=3e-3, num_updates=2, log_every=2, eval_every=0, checkpoint_every=2,
            progress=False, method="robust_plr", preset="plr", buffer_size=16, seeds="0,1")


def in_process(out: Path) -> dict:
    from minimax.config import TrainConfig  # noqa: PLC0415
    from minimax.training.loop import train  # noqa: PLC0415

    cfg = TrainConfig.from_options(**TINY, out_dir=str(out), run_name="first")
    times = {}
    for name, run in (("first_run", cfg), ("resumed", cfg.replace(resume=True, num_updates=4)),
                      ("other_lr", cfg.replace(run_name="other-lr", lr=1e-3))):
        t0 = time.perf_counter()
        train(run)
        times[name] = round(time.perf_counter() - t0, 2)
    times["resumed_over_first"] = round(times["resumed"] / times["first_run"], 3)
    return times


def processes(out: Path) -> dict:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items() if k not in ("progress",)] + ["--no-progress"]
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(out / "cache"), MINIMAX_COMPILE_CACHE="1")
    times = {}
    for name in ("first_process", "second_process"):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "train.py", *flags, "--out-dir", str(out / name)], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name] = round(time.perf_counter() - t0, 2)
    times["second_over_first"] = round(times["second_process"] / times["first_process"], 3)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="benchmarks/results/startup_cpu.json")
    args = p.parse_args()
    os.environ["MINIMAX_COMPILE_CACHE"] = "0"
    with tempfile.TemporaryDirectory() as tmp:
        result = {"machine": f"{cpu_model()}, {os.cpu_count()} cores",
                  "in_process": in_process(Path(tmp) / "a"), "processes": processes(Path(tmp) / "b")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
