"""Budget parity: for the same `--num-updates`, do our runs play the release's rollout cycles and env steps?

Reads the minimax release's runs (`release_runs.json`: per config and seed, the loop's ticks, its
`steps` column and `n_updates` when it stopped) and ours (run directories of `train.py`, their last
log row per seed), and prints one markdown row per method: each side's cycles and env steps per
seed, their mean with a Student-t 95% interval (`minimax.core.stats.mean_ci`), and the expectation from
the method's replay schedule (`minimax.cli.reproduce_table.expected_budget`).

    python benchmarks/budget_parity.py --release benchmarks/results/budget_release/release_runs.json \\
        --run plr=benchmarks/results/budget_release/ours_plr --run accel=... --run pplr=...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from minimax.config import TrainConfig
from minimax.cli.reproduce_table import expected_budget
from minimax.training.run_logs import read_rows
from minimax.core.stats import mean_ci

RELEASE_CONFIG = {"plr": "maze/plr.json", "accel": "maze/accel.json", "pplr": "maze/pplr.json",
                  "paccel": "maze/paccel.json"}
"""Our preset -> the release's config it is compared with."""


def cell(values) -> str:
    mean, low, high = mean_ci(values)
    return f"{mean:,.1f} [{low:,.1f}, {high:,.1f}]"


def ours(run: Path) -> tuple[list[dict], TrainConfig]:
    """The last log row of each seed of a run (its per-seed rows; a single seed's rows as they are)."""
    rows = [r for r in read_rows(run) if r.get("seed", 0) != "mean"]
    last = {}
    for r in rows:
        last[r.get("seed", 0)] = r
    return [last[s] for s in sorted(last)], TrainConfig.load(run / "config.json")


def report(release: dict, runs: dict[str, Path]) -> list[str]:
    lines = ["| method | updates | source | seeds | cycles per seed | cycles, mean [95% CI] | env steps, mean [95% CI] "
             "| expected cycles | expected env steps |", "|---|---|---|---|---|---|---|---|---|"]
    for name, run in runs.items():
        rows, cfg = ours(run)
        updates = rows[0]["gradient_updates"]
        if any(r["gradient_updates"] != updates for r in rows):
            raise SystemExit(f"{run}: its seeds made different numbers of updates")
        theirs = [r for r in release["runs"] if r["config"] == RELEASE_CONFIG[name]
                  and r["final_n_updates"] == updates]
        expected = expected_budget(cfg, updates)
        for source, cycles, steps in (
                ("ours", [r["cycles"] for r in rows], [r["env_steps"] for r in rows]),
                ("release", [r["ticks"] for r in theirs], [r["env_steps"] for r in theirs])):
            if not cycles:
                continue
            lines.append(f"| {name} | {updates} | {source} | {len(cycles)} | {', '.join(map(str, cycles))} | "
                         f"{cell(cycles)} | {cell(steps)} | {expected['cycles']:,} | {expected['env_steps']:,} |")
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--release", type=Path, required=True, help="release_runs.json of the release's runs")
    p.add_argument("--run", action="append", required=True, help="PRESET=RUN_DIR of ours (repeatable)")
    a = p.parse_args(argv)
    runs = {}
    for item in a.run:
        name, _, path = item.partition("=")
        if name not in RELEASE_CONFIG or not Path(path, "config.json").exists():
            p.error(f"--run {item!r}: expected PRESET=RUN_DIR, PRESET one of {', '.join(RELEASE_CONFIG)}")
        runs[name] = Path(path)
    print("\n".join(report(json.loads(a.release.read_text()), runs)))


if __name__ == "__main__":
    main()
