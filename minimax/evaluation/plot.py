"""Learning curves from training logs: `python -m minimax.evaluation.plot RUN_DIR [RUN_DIR ...]`.

Training writes `config.json` and `metrics.jsonl` into each run directory, but comparing
methods and seeds means reading several of those logs side by side. This module turns
them into one PNG of learning curves, with no W&B account and no project classes (configs
are read as plain JSON), so it works on logs copied off any machine.

Runs (and the seeds inside a multi-seed run) whose configs agree on everything but
bookkeeping keys (`BOOKKEEPING_OPTIONS`) form one group: one colour, a thin line per seed and a
thick line for the mean across seeds. Seeds of the PLR family log at env-step counts that
never coincide (a cycle with or without a gradient update, new or replayed levels), so the
mean is taken on the union of the seeds' x values inside the range every seed covers, each
seed linearly interpolated there; where all seeds share their x values (DR, or `--x update`)
that is exactly their common grid, with nothing interpolated. Thin seed lines show each
seed's own series.

    python -m minimax.evaluation.plot runs/dr runs/plr --out curves.png --x env_steps
    python -m minimax.evaluation.plot runs/plr --metrics eval/mean_solved_rate,buffer/weighted_score
    python -m minimax.evaluation.plot eval_results/dr+2 --out aggregates.png   # an evaluation: rliable's figures
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from minimax.config.experiments import experiment_groups, experiment_method, experiment_options  # noqa: E402
from minimax.evaluation.aggregate_plot import evaluation_file, plot_aggregates  # noqa: E402
from minimax.training.run_logs import parse_row  # noqa: E402

X_KEYS = ("env_steps", "update")
SUITE_KEYS = ("eval/mean_solved_rate", "eval/mean_return")
TRAIN_KEYS = ("train/return", "train/solved_rate")
BUFFER_KEYS = ("buffer/weighted_score", "buffer/mean_score", "buffer/fill_ratio",
               "buffer/mean_staleness", "replay_fraction")
HOST_KEYS = ("test_return", "train_levels_return", "generalization_gap", "test_normalized", "train_return",
             "sampler/mean_score", "sampler/seen_fraction")
"""A host-environment run's panels (`host/loop.py`): unseen test levels, training levels, their gap."""
_MAZE_STATS = ("solved_rate", "return")
_UNIT_RANGE = ("solved_rate", "fill_ratio", "replay_fraction")


class PlotError(Exception):
    """A user-facing problem with the inputs (reported as one `error:` line, exit code 2)."""


@dataclass
class Run:
    """One run directory: its config and its log rows, split by seed."""

    name: str
    path: Path
    config: dict
    seeds: dict[int, list[dict]] = field(default_factory=dict)

    def columns(self) -> list[str]:
        """Every key seen in the rows, in first-seen order."""
        seen: dict[str, None] = {}
        for rows in self.seeds.values():
            for row in rows:
                seen.update(dict.fromkeys(row))
        return list(seen)


@dataclass
class Group:
    """Runs sharing a config up to `BOOKKEEPING_OPTIONS`: one colour, one mean curve."""

    label: str
    method: str
    config: dict
    runs: list[Run]

    @property
    def seeds(self) -> list[tuple[str, list[dict]]]:
        """(label, rows) for every seed of every run in the group."""
        return [(f"{r.name}/s{s}", rows) for r in self.runs for s, rows in r.seeds.items()]


def _read_jsonl(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = parse_row(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # a run killed mid-write leaves a partial last line
                continue
            raise PlotError(f"{path}: line {i + 1} is not valid JSON") from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


def load_run(run_dir) -> Run:
    """Read `config.json` and `metrics.jsonl` of one run directory."""
    path = Path(run_dir)
    if not path.is_dir():
        raise PlotError(f"run directory not found: {path}")
    metrics = path / "metrics.jsonl"
    if not metrics.is_file():
        raise PlotError(f"no metrics.jsonl in {path}")
    config: dict = {}
    if (path / "config.json").is_file():
        try:
            config = json.loads((path / "config.json").read_text())
        except json.JSONDecodeError as e:
            raise PlotError(f"{path / 'config.json'} is not valid JSON ({e.msg})") from None
        if not isinstance(config, dict):
            raise PlotError(f"{path / 'config.json'} is not a JSON object")
        from minimax.config import flat_config  # noqa: PLC0415

        config = flat_config(config)  # option by flat name, whether saved nested or (older runs) flat
    default_seed = config.get("seed", 0)
    seeds: dict[int, list[dict]] = {}
    for row in _read_jsonl(metrics):
        seed = row.get("seed", default_seed)
        if isinstance(seed, str):
            if not seed.lstrip("-").isdigit():  # "mean" rows: the plot computes its own mean
                continue
            seed = int(seed)
        if not isinstance(seed, int):
            continue
        seeds.setdefault(seed, []).append(row)
    return Run(name=path.resolve().name, path=path, config=config, seeds=dict(sorted(seeds.items())))


def group_runs(runs: list[Run]) -> list[Group]:
    """Group runs of one experiment (configs equal up to `BOOKKEEPING_OPTIONS`), in first-seen
    order, labelled by method and the options that tell a method's groups apart."""
    out = []
    for label, members in experiment_groups([r.config for r in runs], [r.name for r in runs]):
        first = runs[members[0]]
        out.append(Group(label=label, method=experiment_method(first.config, first.name),
                         config=experiment_options(first.config),
                         runs=[runs[i] for i in members]))
    return out


def _num(v) -> float:
    if isinstance(v, (int, float)):
        return float(v)
    return math.nan


def _series(rows: list[dict], key: str, x: str) -> tuple[np.ndarray, np.ndarray]:
    """Finite (x, y) points of one seed, sorted by x; a repeated x keeps its last value."""
    points: dict[float, float] = {}
    for row in rows:
        xv, yv = _num(row.get(x)), _num(row.get(key))
        if math.isfinite(xv) and math.isfinite(yv):
            points[xv] = yv
    xs = np.array(sorted(points), dtype=float)
    return xs, np.array([points[v] for v in xs], dtype=float)


def group_series(group: Group, key: str, x: str = "env_steps"):
    """(x, per_seed, mean) for `key` against `x`.

    `per_seed` is a list of (x, y) arrays, one per seed with data; `mean` is the across-seed
    mean on `x`: every seed's x value inside the range all seeds cover, each seed linearly
    interpolated between its own points (empty when the ranges do not overlap).
    """
    per_seed = [s for s in (_series(rows, key, x) for _, rows in group.seeds) if len(s[0])]
    if not per_seed:
        return np.array([]), [], np.array([])
    low, high = max(xs[0] for xs, _ in per_seed), min(xs[-1] for xs, _ in per_seed)
    grid = np.unique(np.concatenate([xs for xs, _ in per_seed]))
    grid = grid[(grid >= low) & (grid <= high)]
    mean = np.stack([np.interp(grid, xs, ys) for xs, ys in per_seed]).mean(axis=0) if len(grid) else np.array([])
    return grid, per_seed, mean


def _has_data(runs: list[Run], key: str, x: str) -> bool:
    return any(len(_series(rows, key, x)[0]) for r in runs for rows in r.seeds.values())


def panel_keys(runs: list[Run], metrics=None, x: str = "env_steps") -> list[str]:
    """Log keys to plot, one panel each, in display order; keys without data are left out."""
    columns: dict[str, None] = {}
    for r in runs:
        columns.update(dict.fromkeys(r.columns()))
    if metrics:
        unknown = [m for m in metrics if m not in columns]
        if unknown:
            raise PlotError(f"unknown metric(s): {', '.join(unknown)} (not in any run's metrics.jsonl)")
        wanted = list(dict.fromkeys(metrics))
    else:
        mazes: dict[str, None] = {}
        for c in columns:
            prefix, _, stat = c.rpartition("/")
            if c.startswith("eval/") and prefix != "eval" and stat in _MAZE_STATS:
                mazes[prefix] = None
        wanted = [f"{m}/{s}" for m in mazes for s in _MAZE_STATS]
        wanted += [*SUITE_KEYS, *TRAIN_KEYS, *HOST_KEYS]
        if any(c.startswith("buffer/") for c in columns):
            wanted += list(BUFFER_KEYS)
    return [k for k in wanted if k in columns and _has_data(runs, k, x)]


def _title(key: str) -> str:
    parts = key.split("/")
    stat = parts[-1].replace("_", " ")
    if key in SUITE_KEYS:
        return f"Suite mean: {stat.removeprefix('mean ')}"
    if len(parts) == 3 and parts[0] == "eval":
        return f"{parts[1]}: {stat}"
    if len(parts) == 2:
        return f"{parts[0].capitalize()}: {stat}"
    return stat.capitalize()


def plot_runs(run_dirs, out, x: str = "env_steps", metrics=None) -> Path:
    """Plot learning curves of `run_dirs` into the PNG `out` (parent dirs created); return its path."""
    if x not in X_KEYS:
        raise PlotError(f"unknown x axis {x!r} (choose from {', '.join(X_KEYS)})")
    if not run_dirs:
        raise PlotError("no run directories given")
    dirs = list(dict.fromkeys(Path(d).resolve() for d in run_dirs))
    runs = [load_run(d) for d in dirs]
    keys = panel_keys(runs, metrics, x)
    if not keys:
        raise PlotError("no plottable metric in " + ", ".join(str(d) for d in run_dirs))
    groups = group_runs(runs)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]

    ncols = min(len(keys), 4)
    nrows = math.ceil(len(keys) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.2 * nrows + 0.6),
                             layout="constrained", squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for gi, group in enumerate(groups):
            color = colors[gi % len(colors)]
            common, per_seed, mean = group_series(group, key, x)
            if len(per_seed) > 1:
                for xs, ys in per_seed:
                    ax.plot(xs, ys, color=color, alpha=0.3, linewidth=0.8)
            if len(per_seed) == 1:
                common, mean = per_seed[0]
            if len(common):
                ax.plot(common, mean, color=color, linewidth=2.2,
                        marker="o" if len(common) <= 25 else None, markersize=3)
        ax.set_title(_title(key), fontsize=11)
        ax.set_xlabel(x.replace("_", " "))
        ax.set_ylabel(key.rsplit("/", 1)[-1].replace("_", " "))
        if key.rsplit("/", 1)[-1] in _UNIT_RANGE:
            ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)

    handles = [Line2D([], [], color=colors[i % len(colors)], linewidth=2.2) for i in range(len(groups))]
    labels = [f"{g.label} (n={len(g.seeds)})" for g in groups]
    fig.legend(handles, labels, loc="outside upper center", ncol=min(len(groups), 4), frameon=False)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main(argv=None) -> Path:
    """Command-line entry point; a `PlotError` becomes one `error:` line and exit code 2."""
    parser = argparse.ArgumentParser(prog="python -m minimax.evaluation.plot", description=__doc__.split("\n")[0])
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (runs/<name>)")
    parser.add_argument("--out", default="curves.png", help="PNG to write (default: curves.png)")
    parser.add_argument("--x", choices=X_KEYS, default="env_steps", help="x axis (default: env_steps)")
    parser.add_argument("--metrics", nargs="+", default=None, metavar="KEY",
                        help="only these log keys (comma- or space-separated, e.g. eval/mean_return)")
    args = parser.parse_args(argv)
    metrics = [m.strip() for arg in args.metrics for m in arg.split(",") if m.strip()] if args.metrics else None
    try:
        evaluations = [evaluation_file(d) for d in args.run_dirs]
        if all(evaluations) and len(evaluations) == 1:  # an evaluation's output: rliable's figures
            path = plot_aggregates(evaluations[0], args.out)
        else:
            path = plot_runs(args.run_dirs, args.out, x=args.x, metrics=metrics)
    except (PlotError, ValueError) as e:
        print("error: " + " ".join(str(e).split()), file=sys.stderr)
        raise SystemExit(2) from None
    print(path)
    return path


def cli() -> None:
    """`minimax-plot`: `main` as a console script (whose return value would become the exit status)."""
    main()


if __name__ == "__main__":
    main()
