"""Score trained runs on held-out mazes: `python evaluate.py runs/a runs/b --suite dcd12`.

For each run directory: read its saved config, rebuild its model, restore the latest (or
`--checkpoint`) parameters, and evaluate them with `EvalRunner` on the suite mazes and
any `--levels` files; with `--cvar M`, also on M levels sampled from the run's training
generator (the SFL paper's robustness protocol: mean solved rate on the worst `--alpha`
fraction of solvable levels). Every run (seed) is one sample: the table reports per maze
the mean and a 95% Student-t confidence interval across them, plus the suite mean. Results
go to `<out>/results.json`, `<out>/per_run.csv` and `<out>/summary.csv` (never pickles);
`--gif` writes one animated episode per maze and run under `<out>/gifs/`.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

from minimax.checkpoint import Checkpointer, CheckpointError
from minimax.config import ConfigError, TrainConfig
from minimax.envs.maze.level import InvalidLevelError
from minimax.envs.maze.ood import get_suite, load_level_file
from minimax.envs.maze.render import episode_frames, save_gif
from minimax.runners.eval import EvalRunner
from minimax.stats import cvar, mean_ci

METRICS = ("solved_rate", "return", "length", "gap")


class EvaluateError(RuntimeError):
    """Bad input to the evaluate command (missing run, no checkpoint, unknown maze...)."""


@dataclass
class Policy:
    """Parameters to evaluate and where they come from."""

    run: str
    seed: int
    step: int
    cfg: TrainConfig
    params: object


def load_policies(run_dir, step: int | None = None) -> list[Policy]:
    """The policies a run directory holds at checkpoint `step` (default: the latest)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise EvaluateError(f"no run directory {run_dir}")
    if not (run_dir / "config.json").exists():
        raise EvaluateError(f"{run_dir} is not a run directory (no config.json)")
    try:
        cfg = TrainConfig.load(run_dir / "config.json")
    except ConfigError as e:
        raise EvaluateError(f"{run_dir}: {e}") from None
    checkpoints = Checkpointer(run_dir / "checkpoints")
    if not checkpoints.steps():
        raise EvaluateError(f"{run_dir} has no checkpoints")
    if step is not None and step not in checkpoints.steps():
        raise EvaluateError(f"{run_dir} has no checkpoint at update {step} (have {checkpoints.steps()})")
    try:
        params, step = checkpoints.restore_params(step)
    except CheckpointError as e:
        raise EvaluateError(str(e)) from None
    seeds = cfg.seed_list
    if len(seeds) == 1:
        return [Policy(run_dir.name, seeds[0], step, cfg, params)]
    return [Policy(run_dir.name, s, step, cfg, jax.tree.map(lambda x, i=i: x[i], params))
            for i, s in enumerate(seeds)]


def load_mazes(suite: str, level_files: list[str]):
    try:
        mazes = get_suite(suite) if suite else []
        for path in level_files:
            mazes += load_level_file(path)
    except (ValueError, InvalidLevelError) as e:
        raise EvaluateError(str(e)) from None
    names = [m.name for m in mazes]
    if len(set(names)) != len(names):
        raise EvaluateError(f"a maze is named twice: {sorted({n for n in names if names.count(n) > 1})}")
    if not mazes:
        raise EvaluateError("nothing to evaluate on: give --suite or --levels")
    return mazes


_RUNNERS: dict = {}
_GENERATORS: dict = {}


def _eval_runner(cfg: TrainConfig, episodes: int, args) -> EvalRunner:
    """One `EvalRunner` (and its compiled programs) per model and observation setup."""
    from minimax.train import make_model, obs_options  # noqa: PLC0415

    model, options = make_model(cfg), obs_options(cfg)
    key = (repr(model), tuple(sorted(options.items())), episodes)
    if key not in _RUNNERS:
        _RUNNERS[key] = EvalRunner(model, episodes, args.greedy, args.chunk_steps, args.max_envs, **options)
    return _RUNNERS[key]


def evaluate_policy(policy: Policy, mazes, args, out_dir: Path) -> dict:
    """One policy's results: per maze summaries, and CVaR results when asked."""
    from minimax.train import env_params, level_generator, obs_options  # noqa: PLC0415

    key = jax.random.key(args.seed)
    runner = _eval_runner(policy.cfg, args.episodes, args)
    result = {"run": policy.run, "seed": policy.seed, "checkpoint": policy.step,
              "mazes": {name: r.summary() for name, r in runner.evaluate_mazes(key, policy.params, mazes).items()}}
    if args.cvar:
        generator = _GENERATORS.setdefault((policy.cfg.maze_height, policy.cfg.maze_width, policy.cfg.n_walls),
                                           level_generator(policy.cfg))  # one object: its program is reused
        sampled = _eval_runner(policy.cfg, args.cvar_episodes, args).evaluate_sampled(
            jax.random.fold_in(key, 1), policy.params, generator, args.cvar, env_params(policy.cfg))
        rates = sampled.solved_rate[sampled.solvable]
        result["cvar"] = {"levels": int(args.cvar), "unsolvable": int((~sampled.solvable).sum()),
                          "alpha": args.alpha, "episodes": args.cvar_episodes,
                          "mean_solved_rate": float(rates.mean()) if rates.size else float("nan"),
                          "cvar_solved_rate": cvar(rates, args.alpha) if rates.size else float("nan")}
    if args.gif:
        for i, maze in enumerate(mazes):
            k_level, k_play = jax.random.split(jax.random.fold_in(key, 1000 + i))
            level = maze.sample(k_level)
            trace = runner.trace(k_play, policy.params, level, maze.params(**obs_options(policy.cfg)))
            n = int(trace["length"]) + 1
            tile = max(2, min(16, 480 // (max(maze.height, maze.width) + 2)))
            frames = episode_frames(level, trace["agent_pos"][:n], trace["agent_dir"][:n], tile_size=tile,
                                    agent_view_size=policy.cfg.agent_view_size)
            save_gif(frames, out_dir / "gifs" / f"{policy.run}-seed{policy.seed}" / f"{maze.name}.gif")
    return result


def summarize(results: list[dict], mazes) -> dict:
    """Across policies: `{maze or "suite_mean": {metric: {mean, ci_low, ci_high, n}}}` (and CVaR)."""
    def stat(values):
        mean, low, high = mean_ci(values)
        return {"mean": mean, "ci_low": low, "ci_high": high, "n": len(values)}

    summary = {m.name: {k: stat([r["mazes"][m.name][k] for r in results]) for k in METRICS} for m in mazes}
    summary["suite_mean"] = {k: stat([np.mean([r["mazes"][m.name][k] for m in mazes]) for r in results])
                             for k in METRICS}
    if all("cvar" in r for r in results) and results:
        summary["cvar"] = {k: stat([r["cvar"][k] for r in results]) for k in ("mean_solved_rate", "cvar_solved_rate")}
    return summary


def write_results(out_dir: Path, results: list[dict], summary: dict, settings: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    clean = lambda v: None if isinstance(v, float) and not np.isfinite(v) else v  # noqa: E731
    doc = json.loads(json.dumps({"settings": settings, "runs": results, "summary": summary},
                                default=float), parse_constant=lambda _: None)
    (out_dir / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    with (out_dir / "per_run.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["run", "seed", "checkpoint", "maze", *METRICS])
        for r in results:
            for name, m in r["mazes"].items():
                writer.writerow([r["run"], r["seed"], r["checkpoint"], name, *(clean(m[k]) for k in METRICS)])
            if "cvar" in r:
                writer.writerow([r["run"], r["seed"], r["checkpoint"], f"cvar@{r['cvar']['alpha']}",
                                 r["cvar"]["cvar_solved_rate"], "", "", ""])
    with (out_dir / "summary.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["maze", "metric", "mean", "ci_low", "ci_high", "n"])
        for name, metrics in summary.items():
            for k, s in metrics.items():
                writer.writerow([name, k, clean(s["mean"]), clean(s["ci_low"]), clean(s["ci_high"]), s["n"]])


def print_table(summary: dict, mazes) -> None:
    def cell(s):
        if np.isnan(s["ci_low"]):
            return f"{s['mean']:.3f}"
        return f"{s['mean']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]"

    rows = [(m.name, summary[m.name]) for m in mazes] + [("suite mean", summary["suite_mean"])]
    width = max(len(name) for name, _ in rows)
    n = summary["suite_mean"]["solved_rate"]["n"]
    print(f"{'maze':<{width}}  {'solved rate (95% CI)':<28}  {'return (95% CI)':<28}  n={n}")
    for name, s in rows:
        print(f"{name:<{width}}  {cell(s['solved_rate']):<28}  {cell(s['return']):<28}")
    if "cvar" in summary:
        c = summary["cvar"]
        print(f"sampled levels: mean solved rate {cell(c['mean_solved_rate'])}, "
              f"CVaR {cell(c['cvar_solved_rate'])}")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="evaluate.py", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run directories (each holds config.json and checkpoints/)")
    p.add_argument("--suite", default="dcd12", help="suite name (dcd12, validation) or comma-separated mazes; "
                                                    "'' for none")
    p.add_argument("--levels", nargs="*", default=[], help="level files in the text format (see load_level_file)")
    p.add_argument("--episodes", type=int, default=100, help="episodes per maze (parallel envs, first episodes)")
    p.add_argument("--checkpoint", type=int, default=None, help="the update to evaluate (default: latest)")
    p.add_argument("--greedy", action="store_true", help="argmax actions instead of sampling")
    p.add_argument("--cvar", type=int, nargs="?", const=10_000, default=0, metavar="M",
                   help="also evaluate on M sampled levels (10,000 if M is omitted) and report CVaR")
    p.add_argument("--alpha", type=float, default=0.1, help="CVaR: the worst fraction of levels")
    p.add_argument("--cvar-episodes", type=int, default=10, help="episodes per sampled level")
    p.add_argument("--gif", action="store_true", help="write an animated episode per maze under <out>/gifs/")
    p.add_argument("--out", default="eval_results", help="output directory for results.json and CSVs")
    p.add_argument("--seed", type=int, default=0, help="evaluation key (same levels for every run)")
    p.add_argument("--chunk-steps", type=int, default=16, help="env steps between early-stopping checks")
    p.add_argument("--max-envs", type=int, default=4096, help="most envs per compiled batch (sampled levels)")
    args = p.parse_args(argv)
    for name, low in (("episodes", 1), ("cvar_episodes", 1), ("chunk_steps", 1), ("max_envs", 1), ("cvar", 0)):
        if getattr(args, name) < low:
            raise EvaluateError(f"--{name.replace('_', '-')} must be >= {low}, got {getattr(args, name)}")
    if not 0 < args.alpha <= 1:
        raise EvaluateError(f"--alpha must be in (0, 1], got {args.alpha}")
    return args


def evaluate(args) -> dict:
    mazes = load_mazes(args.suite, args.levels)
    policies = [p for run in args.runs for p in load_policies(run, args.checkpoint)]
    out_dir = Path(args.out)
    results = []
    for policy in policies:
        t0 = time.perf_counter()
        results.append(evaluate_policy(policy, mazes, args, out_dir))
        print(f"evaluated {policy.run} seed {policy.seed} at update {policy.step} "
              f"in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    summary = summarize(results, mazes)
    settings = {k: v for k, v in vars(args).items()}
    write_results(out_dir, results, summary, settings)
    print_table(summary, mazes)
    return {"runs": results, "summary": summary}


def main(argv: list[str] | None = None) -> None:
    try:
        evaluate(parse_args(sys.argv[1:] if argv is None else argv))
    except (EvaluateError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
