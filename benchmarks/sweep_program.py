"""A sweep as one program against one process per point (issue "Hyperparameters as data").

    python benchmarks/sweep_program.py --preset dr  --out benchmarks/results/sweep_program_cpu
    python benchmarks/sweep_program.py --preset plr --out benchmarks/results/sweep_program_cpu

Three ways to train the same 4-point x 2-seed grid (`--grid lr=...`, `--seeds 0-1`) at small sizes, each
from a fresh process and an empty output directory, with XLA's persistent compilation cache off (every way
pays its own tracing and compiling, as a first run does):
- `group`: `minimax-sweep` (the points differ only in a traced option: one vmapped program of 8 lanes);
- `processes`: one `train.py` process per point, one after another (what the sweep did before, and what an
  executor does with one job per point);
- `one_by_one`: `minimax-sweep --one-by-one`, one process, a program per point run one after another (the
  program cache: the points after the first neither trace nor compile).
Wall time includes start-up and compilation. The per-lane cost of an update is read from the logs: the
mean `time_s` of every chunk after the first (the compiled program running), divided by the lanes the
program carries and the updates of a chunk. Writes `<out>/<preset>.json` and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from machine import cpu_model

SIZES = ["--maze-height", "13", "--maze-width", "13", "--num-envs", "8", "--num-steps", "64", "--recurrent-size", "32",
         "--num-updates", "20", "--log-every", "5", "--eval-every", "0", "--checkpoint-every", "20", "--no-progress"]
PLR_SIZES = ["--buffer-size", "32"]
LRS = ("1e-4", "3e-4", "1e-3", "3e-3")


def run(command: list[str]) -> float:
    env = dict(os.environ, MINIMAX_COMPILE_CACHE="0")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *command], check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def steady_seconds(run_dir: Path) -> float:
    """The mean `time_s` of the run's chunks after its first (one row per chunk: the seeds' mean rows)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    times = {r["update"]: r["time_s"] for r in rows}
    later = [t for u, t in sorted(times.items())[1:]]
    return sum(later) / len(later)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="dr")
    p.add_argument("--out", default="benchmarks/results/sweep_program_cpu")
    args = p.parse_args()
    out = Path(args.out)
    sizes = SIZES + (PLR_SIZES if args.preset != "dr" else [])
    grid = ["--preset", args.preset, "--grid", "lr=" + ",".join(LRS), "--seeds", "0-1"]
    result = {"preset": args.preset, "points": len(LRS), "seeds": 2, "sizes": " ".join(sizes),
              "machine": f"{cpu_model()}, {os.cpu_count()} cores", "wall_s": {},
              "per_lane_update_s": {}}
    for way in ("group", "one_by_one", "processes"):
        where = out / "runs" / args.preset / way
        subprocess.run(["rm", "-rf", str(where)], check=True)
        if way == "processes":
            seconds = sum(run(["train.py", "--preset", args.preset, "--lr", lr, "--seeds", "0,1", "--out-dir",
                               str(where), "--run-name", f"lr{lr}", *sizes]) for lr in LRS)
        else:
            seconds = run(["-m", "minimax.cli.sweep", *grid, "--out-dir", str(where), *sizes]
                          + (["--one-by-one"] if way == "one_by_one" else []))
        lanes = 2 * len(LRS) if way == "group" else 2
        chunk = steady_seconds(next(d for d in sorted(where.iterdir()) if d.is_dir()))
        result["wall_s"][way] = round(seconds, 1)
        result["per_lane_update_s"][way] = round(chunk / lanes / 5, 5)
        print(f"{args.preset} {way}: {seconds:.1f} s wall", file=sys.stderr)
    result["group_over_processes"] = round(result["wall_s"]["group"] / result["wall_s"]["processes"], 3)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.preset}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
