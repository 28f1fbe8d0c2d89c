"""Curriculum parity: do our PLR-family curricula behave like the reference's, cycle by cycle?

Reads per-cycle JSONL logs of several sources (ours from `learning_parity.py`'s
`ours_curriculum.jsonl`; the minimax release from its driver, converted to the same fields)
and compares them per window of `--window` cycles: for every statistic, each seed's window
value, then across seeds the mean and a Student-t 95% interval (`minimax.core.stats.mean_ci`).
A row whose intervals do not overlap between the first source and another is marked
`DISJOINT`: a difference to explain or fix.

    python benchmarks/curriculum_parity.py --window 50 --out benchmarks/results/parity_plr \\
        --source ours=runs/parity-plr/ours_curriculum.jsonl --source minimax-ref=ref/plr/

The fields of a line (one per cycle and seed): `update`, `seed`, and any of
  <group>/return_sum, <group>/return_count      episode returns of the group's envs (count: episodes)
  <group>/solved_rate_sum, <group>/solved_rate_count
  <group>/score_sum, <group>/score_count        the levels' curriculum scores (count: scored levels)
  <group>/count                                 levels played in the group this cycle (0: not played)
  <group>/n_walls_sum, <group>/solvable_sum     summed over the group's levels
  <group>/shortest_path_sum, <group>/shortest_path_count   over the solvable ones
  buffer/size, buffer/mean_score, buffer/max_score, buffer/weighted_score, buffer/mean_staleness,
  buffer/mean_mutations                         the buffer after the cycle
  replay_fraction_sum                           1 if the cycle replayed
  gradient_updates                              1 if the cycle made a PPO update
with <group> one of new, replay, mutated. Missing fields are left out of the table.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minimax.core.stats import mean_ci  # noqa: E402

GROUPS = ("new", "replay", "mutated")
RATIOS = [(f"{g}/{name}", f"{g}/{num}", f"{g}/{den}") for g in GROUPS for name, num, den in (
    ("return", "return_sum", "return_count"), ("solved", "solved_rate_sum", "solved_rate_count"),
    ("score", "score_sum", "score_count"), ("walls", "n_walls_sum", "count"), ("solvable", "solvable_sum", "count"),
    ("shortest path", "shortest_path_sum", "shortest_path_count"))]
"""(row name, numerator, denominator): window sums divided, so every episode / level weighs the same."""
MEANS = [("buffer size", "buffer/size"), ("buffer mean score", "buffer/mean_score"),
         ("buffer max score", "buffer/max_score"), ("buffer weighted score", "buffer/weighted_score"),
         ("buffer mean staleness", "buffer/mean_staleness"), ("buffer mean mutations", "buffer/mean_mutations"),
         ("replay fraction", "replay_fraction_sum"), ("gradient updates per cycle", "gradient_updates")]
"""(row name, field): the mean over the window's cycles."""


def from_release_driver(row: dict) -> dict:
    """A line of the minimax release's per-cycle driver (kept outside the repo; fields `ep_<group>_*`,
    `lvl_<group>_*`, `buf_*`, `is_replay`, `gradient_update`) in this script's fields."""
    out = {"update": row["update"], "seed": row["seed"], "replay_fraction_sum": float(row["is_replay"]),
           "gradient_updates": float(row["gradient_update"])}
    for g in GROUPS:
        n_eps = row.get(f"ep_{g}_n")
        if n_eps is not None:
            out.update({f"{g}/return_sum": row[f"ep_{g}_return_sum"], f"{g}/return_count": n_eps,
                        f"{g}/solved_rate_sum": row[f"ep_{g}_n_solved"], f"{g}/solved_rate_count": n_eps})
        n = row.get(f"lvl_{g}_n_levels") or 0
        walls, passable = row.get(f"lvl_{g}_mean_n_walls"), row.get(f"lvl_{g}_passable_frac")
        out[f"{g}/count"] = float(n if walls is not None else 0)
        out[f"{g}/n_walls_sum"] = (walls or 0.0) * n
        out[f"{g}/solvable_sum"] = (passable or 0.0) * n
        path = row.get(f"lvl_{g}_mean_shortest_path_passable")
        solvable = (passable or 0.0) * n
        out[f"{g}/shortest_path_sum"] = (path or 0.0) * solvable if path is not None else 0.0
        out[f"{g}/shortest_path_count"] = solvable if path is not None else 0.0
    for ours, theirs in (("size", "buf_filled_count"), ("mean_score", "buf_mean_score"), ("max_score", "buf_max_score"),
                         ("weighted_score", "buf_weighted_score"), ("mean_staleness", "buf_mean_staleness"),
                         ("mean_mutations", "buf_mean_n_mutations")):
        value = row.get(theirs)
        out[f"buffer/{ours}"] = float(value) if value is not None else 0.0
    return out


def read_source(path: str) -> dict:
    """`{seed: {update: line}}` from a JSONL file, a glob or a directory of them (a later line wins)."""
    p = Path(path)
    files = sorted(p.glob("*.jsonl")) if p.is_dir() else sorted(Path(f) for f in glob.glob(path)) if "*" in path else [p]
    if not files or not all(f.exists() for f in files):
        raise SystemExit(f"error: no JSONL log at {path}")
    out: dict = {}
    for f in files:
        for line in f.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if "ep_n" in row:
                    row = from_release_driver(row)
                out.setdefault(int(row["seed"]), {})[int(row["update"])] = row
    return out


def window_values(runs: dict, start: int, end: int) -> dict:
    """`{row name: [one value per seed]}` over cycles start..end (seeds with every cycle only)."""
    out: dict = {}
    for rows in runs.values():
        cycles = [rows.get(u) for u in range(start, end + 1)]
        if any(c is None for c in cycles):
            continue
        for name, num, den in RATIOS:
            d = sum(c.get(den) or 0.0 for c in cycles)
            if d > 0:
                out.setdefault(name, []).append(sum(c.get(num) or 0.0 for c in cycles) / d)
        for name, field in MEANS:
            if any(field in c for c in cycles):
                out.setdefault(name, []).append(float(np.mean([c.get(field) or 0.0 for c in cycles])))
    return out


def fmt(values) -> tuple[str, float, float]:
    if not values:
        return "–", math.nan, math.nan
    m, lo, hi = mean_ci(values)
    if math.isnan(lo):
        return f"{m:.3f} (n=1)", m, m
    return f"{m:.3f} ± {(hi - lo) / 2:.3f} (n={len(values)})", lo, hi


def report(sources: dict, window: int, last: int | None) -> str:
    names = list(sources)
    horizon = last or max(max(rows) for runs in sources.values() for rows in runs.values())
    lines = [f"Windows of {window} cycles; mean ± 95% interval half-width across seeds (n seeds). "
             f"DISJOINT: the interval of a source does not overlap {names[0]}'s.", ""]
    order = [r[0] for r in RATIOS] + [m[0] for m in MEANS]
    for start in range(1, horizon + 1, window):
        end = min(start + window - 1, horizon)
        vals = {n: window_values(sources[n], start, end) for n in names}
        lines += [f"### cycles {start}-{end}", "", "| statistic | " + " | ".join(names) + " | |",
                  "|---|" + "---|" * (len(names) + 1)]
        for row in order:
            if not any(row in v for v in vals.values()):
                continue
            cells, bounds = [], []
            for n in names:
                text, lo, hi = fmt(vals[n].get(row, []))
                cells.append(text)
                bounds.append((lo, hi))
            ref = bounds[0]
            flag = any(not (math.isnan(lo) or math.isnan(ref[0])) and (hi < ref[0] or lo > ref[1])
                       for lo, hi in bounds[1:])
            lines.append(f"| {row} | " + " | ".join(cells) + f" | {'DISJOINT' if flag else ''} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", action="append", required=True,
                        help="NAME=PATH (a JSONL file, a quoted glob or a directory)")
    parser.add_argument("--window", type=int, default=50)
    parser.add_argument("--last", type=int, default=None, help="the last cycle to report (default: the longest log)")
    parser.add_argument("--out", type=Path, default=None, help="write curriculum_parity.md here (else print)")
    args = parser.parse_args(argv)
    sources = {}
    for spec in args.source:
        if "=" not in spec:
            raise SystemExit(f"error: --source must be NAME=PATH, got {spec!r}")
        name, path = spec.split("=", 1)
        sources[name] = read_source(path)
    text = report(sources, args.window, args.last)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "curriculum_parity.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
