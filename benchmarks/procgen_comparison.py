"""PLR against uniform levels on a Procgen game, seeds side by side: `python benchmarks/procgen_comparison.py`.

Trains `--method plr` and `--method dr` (the PLR paper's uniform baseline; `--methods` adds robust_plr)
for each seed with the host loop (`train.py --env procgen-<game>`), then tabulates the final test (unseen
levels) and training-level returns, normalised with the Procgen paper's constants, with 95% t-intervals
over seeds: from each run's own final evaluation, and with `--eval-episodes N` also from `evaluate.py` on
N test levels shared by every run (and N of each run's training levels). `--full` runs the
PLR paper's protocol (25M steps: 1,526 batches of 64 envs x 256 steps, IMPALA [16, 32, 32] + 256, 200 levels): a GPU job;
the default is a reduced CPU budget (see RESULTS.md for what it can and cannot show).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minimax.core.stats import mean_ci  # noqa: E402

REDUCED = ["--num-envs", "16", "--num-steps", "64", "--n-minibatches", "4", "--impala-channels", "8", "16", "16",
           "--hidden", "64", "--train-levels", "50", "--eval-every", "10", "--eval-episodes", "10",
           "--final-eval-episodes", "50"]


def _ci(x):
    """`(mean, half-width of the 95% Student-t interval)` over seeds (`minimax.core.stats.mean_ci`)."""
    mean, low, high = mean_ci(x)
    return mean, (high - low) / 2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--game", default="bigfish")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--env-steps", type=int, default=40_960)
    ap.add_argument("--out-dir", default="runs/procgen_comparison")
    ap.add_argument("--full", action="store_true", help="the PLR paper's protocol (25M steps; a GPU job)")
    ap.add_argument("--methods", nargs="+", default=["plr", "dr"], choices=["plr", "dr", "robust_plr"])
    ap.add_argument("--eval-episodes", type=int, default=0,
                    help="also score every run with evaluate.py on this many shared test levels (0: off)")
    args = ap.parse_args(argv)
    # Methods compare at equal env steps (robust PLR's rollouts of new levels count, as the PLR papers count them).
    reduced_batch = 16 * 64  # REDUCED's --num-envs x --num-steps
    extra = ["--budget", "env_steps"] + ([] if args.full else REDUCED + [
        "--num-updates", str(-(-args.env_steps // reduced_batch))])
    finals, dirs = {}, {}
    for method in args.methods:
        for seed in args.seeds:
            name = f"{args.game}+{method}-seed{seed}"
            run_dir = Path(args.out_dir) / name
            if not (run_dir / "metrics.jsonl").exists() or "final_test_return" not in (run_dir / "metrics.jsonl").read_text():
                subprocess.run([sys.executable, "train.py", "--env", f"procgen-{args.game}", "--method", method,
                                "--seed", str(seed), "--out-dir", args.out_dir, "--run-name", name, "--overwrite",
                                "--no-progress", *extra], check=True)
            last = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()][-1]
            finals.setdefault(method, []).append(last)
            dirs.setdefault(method, []).append(str(run_dir))
    print("Each run's final evaluation (its own test levels):\n")
    print(f"| method | seeds | test return | train-level return | test normalised | train normalised | gap |")
    print("|---|---|---|---|---|---|---|")
    for method, rows in finals.items():
        cells = [_ci([r[f"final_{k}"] for r in rows]) for k in
                 ("test_return", "train_levels_return", "test_normalized", "train_levels_normalized",
                  "generalization_gap")]
        print(f"| {method} | {len(rows)} | " + " | ".join(f"{m:.2f} ± {h:.2f}" for m, h in cells) + " |")
        print(f"|  per seed (test) | | " + ", ".join(f"{r['final_test_return']:.2f}" for r in rows) + " | | | | |")
    if args.eval_episodes:
        out = Path(args.out_dir) / f"evaluate-{args.game}-{args.eval_episodes}"
        print(f"\nevaluate.py, {args.eval_episodes} shared test levels and as many training levels per run ({out}):\n",
              flush=True)
        subprocess.run([sys.executable, "evaluate.py", *[d for m in args.methods for d in dirs[m]], "--episodes",
                        str(args.eval_episodes), "--out", str(out)], check=True)


if __name__ == "__main__":
    main()
