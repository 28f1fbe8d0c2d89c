"""Sweeps: a grid over training options and seeds, run as few programs as possible, or printed as commands.

    python -m minimax.cli.sweep --preset plr --grid lr=1e-4,3e-4 --grid buffer_size=256,4000 --seeds 0,1,2 \\
        --num-updates 2000         # 2 programs (buffer_size is static), each 2 lr points x 3 seeds as lanes
    python -m minimax.cli.sweep ... --print          # the 4 train.py commands instead, one per line (for a cluster)
    python -m minimax.cli.sweep --grid-file grid.json --seeds 0-4   # {"lr": [1e-4, 3e-4], ...}, or a release grid
    python -m minimax.cli.sweep ... --executor slurm --slurm-partition gpu  # each point a SLURM job (one array)
    python -m minimax.cli.sweep ... --executor slurm --status                # where each point's job stands
    python -m minimax.cli.sweep ... --collect        # <out-dir>/sweep.csv: final metrics, intervals over seeds

Every grid point is one `train.py` run in its own run directory `<out-dir>/<preset>-<option>=<value>-...-seeds<...>`
(its config, logs and checkpoints as if it trained alone). Points that differ only in traced options (`lr`,
`replay_prob`, ...: `train.py --help` lists them) train as one vmapped program of points x seeds lanes; points that
differ in a static option (a size, the method) form a program each, trained one after another (`--one-by-one`:
every point alone). A grid file is either ours
(`{option: [values]}`, flat option names) or the minimax release's (`{"args": {argument: [values]}}`,
what its `make_cmd` expands; each point is then read as `train.py --config` reads a release config).
Flags other than the sweep's own pass to every run (`--num-updates 2000 --eval-every 200`). A rerun
of the same sweep resumes each run (`--resume`), never retrains a finished one. With `--executor local|slurm`
each point is a submitit job instead (`minimax.cli.cluster`): the rerun skips finished runs, waits on running
ones and resubmits the rest (`minimax.cli.cluster_runs`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import sys
from pathlib import Path

from minimax.cli.cluster import TrainJob, add_arguments, check_cluster, from_arguments
from minimax.cli.cluster_runs import (PlannedRun, dry_run_text, run_jobs, status_rows, status_table,
                                      unfinished_message)
from minimax.cli.sweep_collect import collect
from minimax.config import ConfigError, TrainConfig
from minimax.config.plugins import PLUGINS, load, restore
from minimax.config.release import is_release_config
from minimax.core.options import flag, read_config_json
from minimax.training.run_dirs import RunError


def parse_seeds(text: str) -> str:
    """`0,1,2` or `0-4` -> the comma-separated seeds of `--seeds`."""
    try:
        if "-" in text and "," not in text:
            low, high = (int(v) for v in text.split("-"))
            return ",".join(str(s) for s in range(low, high + 1))
        return ",".join(str(int(v)) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"--seeds must be like 0,1,2 or 0-4, got {text!r}") from None


def grid_points(grid: dict[str, list]) -> list[dict]:
    """The cartesian product of the grid, in the order its options and values are given."""
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def check_grid(grid: dict, where: str) -> dict[str, list[str]]:
    """`grid` (`{option: [values]}`) with flat option names, each value as a flag's text; an empty
    grid, an unknown option or one without values is a `ConfigError` naming it (`where`: its source)."""
    if not grid:
        raise ConfigError(f"{where}: the grid is empty: give at least one option and its values, e.g. "
                          f'{{"lr": [1e-4, 3e-4]}}')
    for name, values in grid.items():
        if name.replace("-", "_") not in TrainConfig.option_types():
            raise ConfigError(f"{where}: unknown option {name!r} (the flags of train.py, without --)")
        if not values:
            raise ConfigError(f"{where}: option {name!r} has no values: give at least one (a sweep over no value "
                              f"runs nothing)")
    return {k.replace("-", "_"): [str(x).lower() if isinstance(x, bool) else str(x) for x in v]
            for k, v in grid.items()}


def read_grid_file(path: str) -> dict:
    """A grid file: a minimax release config (returned as it is, each argument given a value), or
    ours, `{option: [values]}`, checked (`check_grid`)."""
    where = f"--grid-file {path}"
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{where}: {e}") from None
    if is_release_config(doc):
        empty = [k for k, v in doc["args"].items() if v == []]
        if not doc["args"] or empty:
            raise ConfigError(f"{where}: " + (f"argument {empty[0]!r} has no values: give at least one" if empty
                                              else "the release config has no arguments"))
        return doc
    if not isinstance(doc, dict) or not all(isinstance(v, list) for v in doc.values()):
        raise ConfigError(f"{where}: expected {{option: [values]}} or a release config")
    return check_grid(doc, where)


def parse_grid(items: list[str]) -> dict[str, list]:
    """`["lr=1e-4,3e-4", ...]` -> `{"lr": ["1e-4", "3e-4"]}` (typed later, as flags)."""
    grid = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not values:
            raise ConfigError(f"--grid takes OPTION=V1,V2,..., got {item!r}")
        if name.replace("-", "_") not in TrainConfig.option_types():
            raise ConfigError(f"--grid: unknown option {name!r} (the flags of train.py, without --)")
        grid[name.replace("-", "_")] = values.split(",")
    return grid


def as_flags(name: str, value: str) -> list[str]:
    """One grid value as train.py's flags (a bool option is `--x` or `--no-x`)."""
    if TrainConfig.option_types()[name] is bool:
        if value.lower() not in ("true", "false"):
            raise ConfigError(f"--grid: {flag(name)} takes true or false, got {value!r}")
        return [flag(name) if value.lower() == "true" else "--no-" + flag(name)[2:]]
    return [flag(name), value]


def point_name(preset: str, point: dict, seeds: str) -> str:
    parts = [f"{k}={v}" for k, v in point.items()]
    return "-".join([preset, *parts]) + "-seeds" + seeds.replace(",", "-")


def refuse_repeated(grid: dict, passthrough: list[str]) -> None:
    """A flag passed to every run must not set an option the grid varies (it would override every point's
    value, later on the command line, while the run names still say the grid's)."""
    for name in grid:
        forms = (flag(name), "--no-" + flag(name)[2:])
        given = [a for a in passthrough if a.split("=")[0] in forms]
        if given:
            raise ConfigError(f"{given[0].split('=')[0]} is given to every run and varied by the grid ({name}=...): "
                              f"give it in one place")


def commands(args, passthrough: list[str]) -> list[list[str]]:
    """One `train.py` argument list per grid point."""
    seeds = parse_seeds(args.seeds)
    out = []
    start, prefix = start_of(args)  # first: a saved config's plugins may own the grid's options
    doc = read_grid_file(args.grid_file) if args.grid_file else None
    if doc is not None and is_release_config(doc):
        if args.config:
            raise ConfigError("--grid-file holds a minimax release config, which gives every point's config: "
                              "leave out --config")
        release_grid = {k: v if isinstance(v, list) else [v] for k, v in doc["args"].items()}
        for i, point in enumerate(grid_points(release_grid)):
            path = Path(args.out_dir) / "sweep-configs" / f"point{i}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"args": {k: [v] for k, v in point.items()}}) + "\n")
            varied = {k: v for k, v in point.items() if len(doc["args"][k]) > 1}
            name = point_name(TrainConfig.load(path).preset, varied, seeds)
            out.append(["--config", str(path), "--seeds", seeds, "--out-dir", args.out_dir, "--run-name", name])
        return [c + passthrough for c in out]
    grid = doc if doc is not None else parse_grid(args.grid)
    refuse_repeated(grid, passthrough)
    for point in grid_points(grid):
        flags = [a for k, v in point.items() for a in as_flags(k, v)]
        out.append([*start, *flags, "--seeds", seeds, "--out-dir", args.out_dir,
                    "--run-name", point_name(prefix, point, seeds)])
    return [c + passthrough for c in out]


def start_of(args) -> tuple[list[str], str]:
    """What every point starts from (`--preset P` or `--config PATH`), and the prefix of its run names: the preset,
    or the saved run's directory name. A saved config is loaded here first, so that its plugins are imported
    (`config/plugins.py`) before the grid's option names are read."""
    if not args.config:
        return ["--preset", args.preset or "dr"], args.preset or "dr"
    if args.preset:
        raise ConfigError("--preset and --config both give the points' defaults: give one of them")
    path = Path(args.config)
    path = path / "config.json" if path.is_dir() else path
    if not path.is_file():
        raise ConfigError(f"--config: no config file at {path}")
    TrainConfig.load(path)
    return ["--config", str(path)], path.parent.name if path.name == "config.json" else path.stem


def parse_args(argv: list[str]):
    """`(args, cluster options, passthrough flags)` of the sweep's command line."""
    p = argparse.ArgumentParser(prog="python -m minimax.cli.sweep", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", help="the preset every grid point starts from (default: dr)")
    p.add_argument("--config", help="a saved config.json (or a run directory) every grid point starts from instead "
                   "of a preset: a sweep around a run, a plugin run's included (its plugins are imported from it)")
    p.add_argument("--grid", action="append", default=[], help="OPTION=V1,V2,... (repeatable: a cartesian product)")
    p.add_argument("--grid-file", help="a JSON grid: {option: [values]}, or a minimax release config with grids")
    p.add_argument("--seeds", default="0", help="seeds of every run, vmapped in its one program: 0,1,2 or 0-4")
    p.add_argument("--out-dir", default="runs", help="where the runs' directories are made")
    p.add_argument("--print", action="store_true", help="print the train.py commands instead of running them")
    p.add_argument("--collect", action="store_true", help="write <out-dir>/sweep.csv: each run's final metrics "
                   "with 95%% intervals over its seeds (one row per run and metric), and train nothing")
    p.add_argument("--one-by-one", action="store_true", help="train every point in a program of its own, one "
                   "after another (default: the points that differ only in traced options, `train.py --help` lists "
                   "them, train as one vmapped program of points x seeds lanes)")
    p.add_argument("--max-lanes", type=int, default=0, help="at most this many lanes (points x seeds) in one "
                   "program; a larger group is split into programs of consecutive points (0: no limit; for a "
                   "device whose memory holds fewer runs)")
    p.add_argument("--no-compile-cache", action="store_true", help="leave XLA's persistent compilation cache off")
    p.add_argument("--plugin", action="append", default=[], help="MODULE_OR_FILE.py (repeatable): import a user's "
                   "method, score or environment first; every run records it (a rerun of the sweep, a --config of a "
                   "plugin run, --resume and evaluate.py import it again by themselves)")
    add_arguments(p)
    args, passthrough = p.parse_known_args(argv)
    cluster = from_arguments(args)
    check_cluster(cluster)
    if args.max_lanes < 0:
        raise ConfigError(f"--max-lanes must be >= 0 (0: no limit), got {args.max_lanes}")
    if not args.grid and not args.grid_file:
        raise ConfigError("give --grid OPTION=V1,V2 (repeatable) or --grid-file")
    if cluster.jobs:
        if args.print or args.collect:
            raise ConfigError(f"--{'print' if args.print else 'collect'} trains nothing: leave out --executor")
        args.out_dir = str(Path(args.out_dir).absolute())  # a job may start in another directory
    return args, cluster, passthrough


def train_in_jobs(runs, configs, passthrough, cluster, out_dir: Path) -> None:
    """Each grid point a job (`minimax.cli.cluster_runs`); `--status` prints where each stands."""
    folder = out_dir / "jobs"
    planned = [PlannedRun(TrainJob(name=cfg.run_dir.name, run_dir=str(cfg.run_dir), start=command,
                                   resume=passthrough, sessions=str(folder / f"{cfg.run_dir.name}.sessions.jsonl")),
                          cfg.num_updates) for command, cfg in zip(runs, configs)]
    if cluster.status:
        print(status_table(status_rows(planned, cluster, folder)))
        return
    if cluster.dry_run:
        print(dry_run_text(planned, cluster, folder))
        return
    unfinished = run_jobs(planned, cluster, folder)
    if unfinished and cluster.wait:
        raise RunError(unfinished_message(unfinished, planned, folder))


def point_config(command: list[str]):
    """The config of one grid point's `train.py` arguments (the plugins of its run, when it has trained
    before, imported first); a bad value is refused naming the point."""
    from minimax.training.cli import parse_config  # noqa: PLC0415

    try:
        saved = Path(command[command.index("--out-dir") + 1]) / command[command.index("--run-name") + 1] / "config.json"
        if saved.is_file():
            restore(read_config_json(saved).get(PLUGINS, []), str(saved))
        return parse_config(command)
    except ConfigError as err:
        name = command[command.index("--run-name") + 1] if "--run-name" in command else " ".join(command)
        raise ConfigError(f"sweep point {name}: {err}") from None


def program_groups(configs) -> list[list]:
    """The points in groups of one program each (the same static part and seeds: `training/programs.py`), in
    the order of their first point."""
    from minimax.training.group import lane_layout  # noqa: PLC0415
    from minimax.training.programs import program_key  # noqa: PLC0415

    groups: dict = {}
    for cfg in configs:
        groups.setdefault((program_key(cfg, lane_layout([cfg])), tuple(cfg.seed_list)), []).append(cfg)
    return list(groups.values())


def split_lanes(group: list, max_lanes: int) -> list[list]:
    """`group` in consecutive parts of at most `max_lanes` lanes (points x seeds; 0: one part), at least one
    point each."""
    if not max_lanes:
        return [group]
    size = max(1, max_lanes // len(group[0].seed_list))
    return [group[i:i + size] for i in range(0, len(group), size)]


def train_points(configs, passthrough: list[str], one_by_one: bool = False, max_lanes: int = 0) -> None:
    """Train (or resume) every point: each group of points that share a program as one vmapped program
    (`training/group.py`; at most `max_lanes` lanes a program), the others one after another (their programs
    kept in the process: a point traces only when its static part is new)."""
    from minimax.training.cli import parse_config  # noqa: PLC0415
    from minimax.training.group import can_group, train_group  # noqa: PLC0415
    from minimax.training.loop import train  # noqa: PLC0415

    def resumed(cfg):
        if not (cfg.run_dir / "config.json").exists():
            return cfg  # the run's saved config, below; the flags passed to every run may extend it
        return parse_config(["--resume", "--out-dir", str(cfg.run_dir.parent), "--run-name", cfg.run_dir.name,
                             *passthrough])

    for group in (part for whole in program_groups(configs) for part in split_lanes(whole, max_lanes)):
        group = [resumed(cfg) for cfg in group]
        why = "--one-by-one" if one_by_one else can_group(group)
        if not why:
            print(f"sweep: {len(group)} points x {len(group[0].seed_list)} seeds as one program: "
                  + ", ".join(c.run_dir.name for c in group), file=sys.stderr)
            train_group(group)
            continue
        for cfg in group:
            if len(group) > 1:
                print(f"sweep: {cfg.run_dir.name} alone ({why})", file=sys.stderr)
            print(f"sweep: {'resuming' if cfg.resume else 'training'} {cfg.run_dir}", file=sys.stderr)
            train(cfg)


def main(argv: list[str] | None = None) -> None:
    from minimax.training.programs import enable_compile_cache  # noqa: PLC0415

    if "--no-compile-cache" not in (sys.argv[1:] if argv is None else argv):  # before JAX starts its backend
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # (`programs.enable_compile_cache` says why)

    try:
        args, cluster, passthrough = parse_args(sys.argv[1:] if argv is None else argv)
        plugins = [a for plugin in args.plugin for a in ("--plugin", str(load(plugin).source))]
        runs = commands(args, passthrough)
        configs = [point_config(c) for c in runs]  # every point checked before any trains
        if args.print:
            print("\n".join("python train.py " + shlex.join(plugins + c) for c in runs))
            return
        if args.collect:
            path = Path(args.out_dir) / "sweep.csv"
            print(f"sweep: {collect(configs, path)} rows in {path}", file=sys.stderr)
            return
        if cluster.jobs:
            return train_in_jobs([plugins + c for c in runs], configs, passthrough, cluster, Path(args.out_dir))
        enable_compile_cache(not args.no_compile_cache)
        train_points(configs, passthrough, one_by_one=args.one_by_one, max_lanes=args.max_lanes)
    except ImportError as e:
        print(f"error: --plugin: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except (ConfigError, RunError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
