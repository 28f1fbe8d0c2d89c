"""`sweep --collect`: one CSV of a sweep's final metrics, with 95% intervals over each run's seeds.

Long format, one row per run and metric: `run`, the options the grid varies (read from each run's config,
so a release grid file's points are named the same way), `seeds`, `updates` (the last logged update),
`metric`, `n` (seeds with a value), `mean`, `ci_low`, `ci_high` (Student-t, `minimax.core.stats.mean_ci`;
empty for one seed). A seed's final value of a metric is its last logged value that is not null: the last
row's for the training metrics, the last evaluation's for `eval/*` ones. Counters and timings are not
metrics here. A run with no log row yet is left out, and named on stderr.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from minimax.core.stats import mean_ci
from minimax.training.run_logs import read_rows

NOT_METRICS = {"seed", "update", "cycles", "env_steps", "gradient_updates", "time_s", "sps", "learning_rate"}
NOT_GRID = {"run_name", "out_dir", "resume", "overwrite", "seed", "seeds", "num_seeds"}


def final_values(rows: list[dict]) -> dict:
    """`{seed: {metric: last non-null value, "update": last update}}` of a run's log rows."""
    finals: dict = {}
    for row in rows:
        seed = row.get("seed", "only")
        if seed == "mean":
            continue
        values = finals.setdefault(seed, {})
        values["update"] = row["update"]
        for k, v in row.items():
            if k not in NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool):
                values[k] = v
    return finals


def varied_options(configs) -> list[str]:
    """The options whose values differ between the sweep's runs, in the config's order."""
    options = [c.options() for c in configs]
    return [n for n in options[0] if n not in NOT_GRID and len({repr(o[n]) for o in options}) > 1]


def collect(configs, path: Path) -> int:
    """Write the CSV of the runs of `configs` (their TrainConfigs) to `path`; returns the rows written."""
    varied = varied_options(configs) if len(configs) > 1 else []
    rows = []
    for cfg in configs:
        finals = final_values(read_rows(cfg.run_dir))
        if not finals:
            print(f"sweep --collect: {cfg.run_dir} has no log rows yet; left out", file=sys.stderr)
            continue
        options = cfg.options()
        head = {"run": cfg.run_dir.name, **{n: options[n] for n in varied}, "seeds": len(finals),
                "updates": min(v["update"] for v in finals.values())}
        for metric in sorted({k for v in finals.values() for k in v if k != "update"}):
            values = [v[metric] for v in finals.values() if metric in v]
            mean, low, high = mean_ci(values)
            rows.append({**head, "metric": metric, "n": len(values), "mean": mean,
                         "ci_low": "" if math.isnan(low) else low, "ci_high": "" if math.isnan(high) else high})
    fields = ["run", *varied, "seeds", "updates", "metric", "n", "mean", "ci_low", "ci_high"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)
