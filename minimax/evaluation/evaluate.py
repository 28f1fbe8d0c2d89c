"""Score trained runs on held-out levels: `python evaluate.py runs/a runs/b --suite dcd12`.

For each run directory: read its saved config, rebuild its model, restore the latest (or
`--checkpoint`) parameters, and evaluate them with `EvalRunner` on the held-out levels of
the runs' environment (`--suite`, default its benchmark suite: AMaze's dcd12) and any `--levels` files; with `--cvar M`, also on M levels sampled from the run's training
generator, the same one for every run (`--cvar-set` picks it where the runs' generators differ;
the SFL paper's robustness protocol: M solvable levels, each played by 10 envs for a
whole step budget; the worst `--alpha` fractions are picked by one such evaluation and their
solved rate measured by a second, independent one). Every run (seed) is one sample: the table reports per maze
the mean and a 95% Student-t confidence interval across them, plus the suite mean. Runs of
different experiments (configs that differ in more than seeds and bookkeeping) are never
pooled silently: each experiment gets its own table and interval, unless `--pool` asks for one. Results
go to `<out>/results.json`, `<out>/per_run.csv` and `<out>/summary.csv` (never pickles);
`--gif` writes one animated episode per maze and run under `<out>/gifs/`.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
import tyro

from minimax.training.builder import env_params, env_spec, level_generator, make_eval_runner, make_model
from minimax.training.checkpoint import CheckpointError
from minimax.config import OPTIONS, ConfigError, TrainConfig
from minimax.config.experiments import experiment_groups
from minimax.host.config import is_host_config
from minimax.envs.images import save_gif
from minimax.envs.registry import UEDEnv, env_groups, get_env
from minimax.core.options import parse_assignments
from minimax.runners.eval import EvalRunner
from minimax.evaluation.aggregates import aggregate_results, print_aggregates, write_aggregates
from minimax.evaluation.report import fresh_out_dir, print_table, summarize, write_results
from minimax.evaluation.saved_policies import EvaluateError, Policy, load_policies, run_config
from minimax.core.stats import cvar_of_worst


DEFAULT_SUITE = "default"
"""`--suite default`: the environment's benchmark suite (`UEDEnv.test_suite`; AMaze: dcd12)."""


def runs_env(runs) -> UEDEnv:
    """The environment the runs were trained on (from their saved configs); they must share one."""
    envs = {}
    for run in runs:
        path = Path(run) / "config.json"
        if path.is_file():
            envs.setdefault(run_config(run).env.env_name, []).append(str(run))
    if len(envs) > 1:
        raise EvaluateError("the runs were trained on different environments: "
                            + "; ".join(f"--env {e}: {', '.join(r)}" for e, r in envs.items()))
    return get_env(next(iter(envs), "maze"))


def load_mazes(suite: str, level_files: list[str], spec: UEDEnv | None = None, options=None):
    """The held-out levels of `suite` (DEFAULT_SUITE: the env's benchmark suite for the runs' env
    `options`; '' none) and level files."""
    spec = spec or get_env("maze")
    test_suite = spec.test_suite if options is None else spec.test_suite_for(options)
    chosen = test_suite if suite == DEFAULT_SUITE else suite
    try:
        train = None if options is None else spec.make_params(options)
        if chosen and train is not None and spec.check_suite is not None:  # before reading the suite's levels
            spec.check_suite(chosen, train)
        mazes = list(spec.held_out(chosen)) if suite else []
        for path in level_files:
            if spec.load_levels is None:
                raise ValueError(f"--levels: --env {spec.name} has no level file format")
            mazes += spec.load_levels(path)
        for maze in mazes if train is not None else ():  # a level the runs' params cannot play: said here
            maze.params_for(train)
    except ValueError as e:
        raise EvaluateError(str(e)) from None
    names = [m.name for m in mazes]
    if len(set(names)) != len(names):
        raise EvaluateError(f"a held-out level is named twice: {sorted({n for n in names if names.count(n) > 1})}")
    if not mazes:
        raise EvaluateError("nothing to evaluate on: give --suite or --levels")
    return mazes


class PolicyEvaluator:
    """Evaluates policies with the settings of one `evaluate` command. It owns the compiled
    programs: one `EvalRunner` per model, observation setup and episode count, and one
    generator object per training distribution, reused by every policy that shares them."""

    def __init__(self, settings: "EvaluateConfig"):
        self.settings = settings
        self._runners: dict = {}
        self._generators: dict = {}

    def runner(self, cfg: TrainConfig, episodes: int) -> EvalRunner:
        key = (repr(make_model(cfg)), env_params(cfg), cfg.env.env_name, episodes)
        if key not in self._runners:
            s = self.settings
            self._runners[key] = make_eval_runner(cfg, episodes, s.greedy, chunk_steps=s.chunk_steps,
                                                  max_envs=s.max_envs)
        return self._runners[key]

    def generator(self, cfg: TrainConfig):
        key = tuple(sorted(cfg.env.values().items()))
        return self._generators.setdefault(key, level_generator(cfg))  # one object: its program is reused

    def cvar_config(self, cfg: TrainConfig) -> TrainConfig:
        """The run's config with `--cvar-set`'s environment options: what the CVaR levels are drawn from."""
        return cfg.replace(**self.settings.cvar_overrides()) if self.settings.cvar_set else cfg

    def check_one_cvar_distribution(self, policies) -> None:
        """Refuse to score runs on CVaR levels from different distributions (ACCEL generates empty
        rooms; its 'training generator' is not DR's): the worst-alpha rates of such runs are not
        comparable, and nothing in the table would say so. Generators are compared by what they
        draw from the same keys, so options that do not touch the levels never count."""
        keys = jax.random.split(jax.random.key(0), 8)
        drawn = {}
        for p in policies:
            cfg = self.cvar_config(p.cfg)
            key = tuple(sorted(cfg.env.values().items()))
            if key not in drawn:
                levels = jax.device_get(jax.vmap(self.generator(cfg))(keys))
                drawn[key] = (p.run, cfg, [np.asarray(x) for x in jax.tree.leaves(levels)])
        runs = list(drawn.values())
        for run, cfg, leaves in runs[1:]:
            first_run, first_cfg, first_leaves = runs[0]
            same = len(leaves) == len(first_leaves) and all(
                a.shape == b.shape and np.array_equal(a, b) for a, b in zip(leaves, first_leaves))
            if not same:
                a, b = first_cfg.options(), cfg.options()
                names = [n for n in cvar_options() if a[n] != b[n]]
                differ = "; ".join(f"{n} {a[n]!r} in {first_run} but {b[n]!r} in {run}" for n in names)
                differ = differ or "their generators differ"
                raise EvaluateError(
                    f"--cvar: the runs draw training levels from different distributions ({differ}), so their CVaR "
                    "would rank different levels: score them on one with --cvar-set "
                    f"(e.g. --cvar-set {names[0] if names else 'n_walls'}={a[names[0]] if names else '...'}), "
                    "or evaluate them in separate commands")

    def cvar(self, policy: Policy, key) -> dict:
        """The SFL paper's CVaR evaluation (`eval_minigrid_*.py` of its code): `--cvar` solvable
        levels from the run's generator (with `--cvar-set`'s options); each played by `--cvar-episodes` envs for a whole step
        budget (every completed episode counts); levels ranked by one such pass and measured by a
        second, independent one (so the worst levels' rate is not biased down by the selection)."""
        s, cfg = self.settings, policy.cfg
        runner, params = self.runner(cfg, s.cvar_episodes), env_params(cfg)
        k_levels, k_rank, k_measure = jax.random.split(key, 3)
        levels, drawn = runner.sample_solvable(k_levels, self.generator(self.cvar_config(cfg)), s.cvar, params)
        rank = runner.success_rates(k_rank, policy.params, levels, params)
        measured = runner.success_rates(k_measure, policy.params, levels, params)
        alphas = cvar_alphas(s)
        return {"levels": int(s.cvar), "drawn": drawn, "unsolvable": drawn - int(s.cvar), "episodes": s.cvar_episodes,
                "alpha": alphas, "mean_solved_rate": float(measured.mean()),
                **{f"cvar@{a:g}": cvar_of_worst(rank, measured, a) for a in alphas}}

    def __call__(self, policy: Policy, mazes, out_dir: Path) -> dict:
        """One policy's results: per maze summaries, and CVaR results when asked."""
        s = self.settings
        key = jax.random.key(s.seed)
        runner = self.runner(policy.cfg, s.episodes)
        result = {"run": policy.run, "seed": policy.seed, "checkpoint": policy.step,
                  **({"agent": policy.agent} if policy.agent else {}),
                  "mazes": {name: r.summary() for name, r in runner.evaluate_held_out(key, policy.params, mazes).items()}}
        if not env_spec(policy.cfg).binary_outcome:  # no success outcome (Pendulum, Craftax): no rate, not 0
            for measured in result["mazes"].values():
                measured["solved_rate"] = math.nan
        if s.cvar:
            result["cvar"] = self.cvar(policy, jax.random.fold_in(key, 1))
        if s.gif:
            spec = env_spec(policy.cfg)
            for i, maze in enumerate(mazes):
                k_level, k_play = jax.random.split(jax.random.fold_in(key, 1000 + i))
                level, params = maze.sample(k_level), maze.params_for(env_params(policy.cfg))
                trace = runner.trace(k_play, policy.params, level, params)
                n = int(trace["length"]) + 1
                frames = spec.render_episode(level, {k: v[:n] for k, v in trace.items() if k not in
                                                     ("length", "return")}, params)
                save_gif(frames, out_dir / "gifs" / f"{policy.run}-seed{policy.seed}" / f"{maze.name}.gif")
        return result


def cvar_alphas(settings: "EvaluateConfig") -> list[float]:
    """The `--alpha` fractions whose worst `floor(alpha M)` of the M = `--cvar` levels hold at least
    one level; a smaller fraction would report one level's score as its CVaR, so it is left out."""
    return [a for a in settings.alpha if math.floor(a * settings.cvar + 1e-9) >= 1]


def check_writable(out_dir: Path) -> None:
    """Fail before any evaluation work when `--out` cannot be written."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise EvaluateError(f"cannot write to --out {out_dir}: {e.strerror or e}") from None


def group_results(results: list[dict], policies: list[Policy], mazes, pool: bool) -> list[dict]:
    """The results split by experiment (runs whose configs differ only in bookkeeping options and
    seeds), each with its own summary; one pooled group with `pool`."""
    if pool:
        found = [("all runs (pooled)", list(range(len(results))))]
    else:
        found = experiment_groups([p.cfg.options() for p in policies], [p.run for p in policies])
    return [{"label": label, "runs": [f"{results[i]['run']}/seed{results[i]['seed']}" for i in members],
             "members": members, "summary": summarize([results[i] for i in members], mazes)}
            for label, members in found]


@dataclass(frozen=True)
class EvaluateConfig:
    """Score trained runs on held-out levels (mean and 95% CI across runs and seeds)."""

    runs: tyro.conf.Positional[tuple[str, ...]]
    """Run directories (each holds config.json and checkpoints/)."""
    suite: str = DEFAULT_SUITE
    """A suite of the runs' environment (maze: dcd12, validation, or comma-separated maze names); 'default' for
    its benchmark suite (maze: dcd12), '' for none."""
    levels: tuple[str, ...] = ()
    """Level files of the runs' environment (maze: the text format of minimax.envs.maze.ood.load_level_file)."""
    episodes: int = 100
    """Episodes per held-out level (parallel envs; each env's first episode counts)."""
    checkpoint: int | None = None
    """The update to evaluate (default: the latest checkpoint)."""
    greedy: bool = False
    """Take the most likely action instead of sampling."""
    cvar: int = 0
    """Also evaluate on M levels sampled from each run's training generator and report CVaR
    (`--cvar` alone means 10,000, the SFL paper's protocol; 0 = off)."""
    alpha: tuple[float, ...] = (0.0001, 0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
    """CVaR: the worst fractions of the solvable sampled levels to report (default: the SFL paper's 0.01% ... 100%)."""
    cvar_episodes: int = 10
    """Envs per sampled level, each playing a whole step budget (every completed episode counts)."""
    cvar_set: tuple[str, ...] = ()
    """KEY=VALUE: an environment option of the generator the CVaR levels come from (e.g. n_walls=60 to score
    ACCEL, which trains from empty rooms, on DR's mazes); repeatable. Runs whose generators differ are refused
    without it."""
    gif: bool = False
    """Write one animated episode per held-out level and run under <out>/gifs/."""
    out: str = ""
    """Output directory for results.json and the CSVs; default eval_results/<first run>[+N], never one that holds
    results already (-2, -3, ... are appended)."""
    seed: int = 0
    """Evaluation key (every run plays the same levels)."""
    chunk_steps: int = 16
    """Env steps between early-stopping checks."""
    max_envs: int = 4096
    """Most envs per compiled batch (sampled levels)."""
    bootstrap_reps: int = 2000
    """Redraws of the stratified bootstrap behind the aggregates' intervals (IQM, mean, median, optimality gap,
    probability of improvement; rliable's method)."""
    pool: bool = False
    """Pool every run into one confidence interval even where their configs differ (by default each
    experiment, runs whose configs differ only in seeds and bookkeeping options, gets its own)."""

    def __post_init__(self):
        if not self.runs:
            raise EvaluateError("give at least one run directory")
        for name, low in (("episodes", 1), ("cvar_episodes", 1), ("chunk_steps", 1), ("max_envs", 1), ("cvar", 0),
                          ("bootstrap_reps", 1)):
            if getattr(self, name) < low:
                raise EvaluateError(f"--{name.replace('_', '-')} must be >= {low}, got {getattr(self, name)}")
        try:
            self.cvar_overrides()
        except ConfigError as e:
            raise EvaluateError(str(e).replace("--set", "--cvar-set")) from None
        bad = [a for a in self.alpha if not 0 < a <= 1]
        if bad or not self.alpha:
            raise EvaluateError(f"--alpha must be in (0, 1], got {' '.join(map(str, self.alpha)) or 'none'}")


    def cvar_overrides(self) -> dict:
        """`--cvar-set` as `{option: value}`; only options of the environment group (the generator's)."""
        overrides = parse_assignments(self.cvar_set, TrainConfig.option_types())
        allowed = cvar_options()
        other = sorted(set(overrides) - set(allowed))
        if other:
            raise ConfigError(f"--cvar-set sets options of the level generator's environment; {', '.join(other)} "
                              f"is not one (these are: {', '.join(sorted(allowed))})")
        return overrides


def cvar_options() -> tuple[str, ...]:
    """Options `--cvar-set` may change: the environment's, shared and own (its level generator reads them)."""
    groups = {"env", *env_groups()}
    return tuple(name for name, (group, _) in OPTIONS.items() if group in groups)

CVAR_DEFAULT_LEVELS = 10_000
"""`--cvar` without a count: the SFL paper's 10,000 sampled levels."""


def _is_number(text: str) -> bool:
    """Whether `text` is a number (a negative one looks like a flag: `--cvar -5` is a bad count, not `--cvar`)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_cvar_count(argv) -> None:
    """`--cvar` takes a level count: a fraction (`--cvar 0.1`, an alpha) is one line saying so."""
    for i, a in enumerate(argv):
        if a == "--cvar" or a.startswith("--cvar="):
            text = a.partition("=")[2] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            try:
                int(text)
            except ValueError:
                raise EvaluateError(f"--cvar takes a number of levels M (an integer, e.g. --cvar 10000; its alphas "
                                    f"are --alpha), got {text!r}") from None


def parse_args(argv) -> EvaluateConfig:
    argv = list(argv)
    for i, a in enumerate(argv):  # `--cvar` with no count
        if a == "--cvar" and (i + 1 == len(argv) or (argv[i + 1].startswith("-") and not _is_number(argv[i + 1]))):
            argv.insert(i + 1, str(CVAR_DEFAULT_LEVELS))
            break
    _check_cvar_count(argv)
    from minimax.training.cli import PLUGIN_HELP  # noqa: PLC0415

    return tyro.cli(EvaluateConfig, args=argv, prog="evaluate.py", description=EvaluateConfig.__doc__ + PLUGIN_HELP)


def evaluate(args: EvaluateConfig) -> dict:
    """Score `args.runs`; an evaluation that fails leaves no empty output directory behind."""
    out_dir = Path(args.out) if args.out else fresh_out_dir(args.runs)
    created = not out_dir.exists()
    try:
        return _evaluate(args, out_dir)
    except BaseException:
        if created and out_dir.is_dir() and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise


def _evaluate(args: EvaluateConfig, out_dir: Path) -> dict:
    if all(is_host_config(Path(run) / "config.json") for run in args.runs):
        from minimax.host.evaluate import evaluate_host_runs  # noqa: PLC0415
        check_writable(out_dir)
        return evaluate_host_runs(args, out_dir)
    spec = runs_env(args.runs)
    if args.gif and spec.render_episode is None:
        raise EvaluateError(f"--gif: --env {spec.name} does not render episodes")
    if args.cvar and not spec.binary_outcome:
        raise EvaluateError(f"--cvar ranks levels by solved rate; --env {spec.name} has no success outcome")
    first = next((run for run in args.runs if (Path(run) / "config.json").is_file()), None)  # others fail below
    mazes = load_mazes(args.suite, list(args.levels), spec, run_config(first).env if first else None)
    policies = [p for run in args.runs for p in load_policies(run, args.checkpoint)]
    check_writable(out_dir)
    results = []
    evaluate_policy = PolicyEvaluator(args)
    if args.cvar:
        evaluate_policy.check_one_cvar_distribution(policies)
        left_out = [a for a in args.alpha if a not in cvar_alphas(args)]
        if left_out:
            print(f"note: CVaR at alpha {', '.join(f'{a:g}' for a in left_out)} left out: fewer than one of the "
                  f"{args.cvar} levels (floor(alpha M) = 0; --cvar {math.ceil(1 / min(left_out) - 1e-9)} reaches them)",
                  file=sys.stderr)
    for policy in policies:
        t0 = time.perf_counter()
        results.append(evaluate_policy(policy, mazes, out_dir))
        print(f"evaluated {policy.run} seed {policy.seed} at update {policy.step}{f' ({policy.agent})' if policy.agent else ''} "
              f"in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    groups = group_results(results, policies, mazes, args.pool)
    agg = aggregate_results(groups, results, [m.name for m in mazes], args.bootstrap_reps, args.seed)
    write_results(out_dir, results, groups, dataclasses.asdict(args) | {"out": str(out_dir)},
                  {"aggregates": agg} if agg else {})
    if agg:
        write_aggregates(out_dir, agg)
    print(f"results written to {out_dir} (results.json, per_run.csv, summary.csv, aggregates.csv)", file=sys.stderr)
    for g in groups:
        if len(groups) > 1:
            print(f"\n{g['label']}: {', '.join(g['runs'])}")
        print_table(g["summary"], mazes)
    if agg:
        print_aggregates(agg)
    out = {"runs": results, "groups": groups} | ({"aggregates": agg} if agg else {})
    return out | ({"summary": groups[0]["summary"]} if len(groups) == 1 else {})


def evaluate_runs(*runs, **settings) -> dict:
    """Score run directories as `evaluate.py` does, from a script: `evaluate_runs("runs/a", suite="dcd12",
    episodes=10)`; settings are `EvaluateConfig`'s fields (`python evaluate.py --help`). Returns the
    results `evaluate.py` writes to results.json."""
    return evaluate(EvaluateConfig(runs=tuple(str(r) for r in runs), **settings))


def main(argv: list[str]) -> None:
    """`evaluate.py`'s command line `argv` (without the program; `cli/evaluate.py` reads `sys.argv`)."""
    try:
        evaluate(parse_args(list(argv)))
    except (EvaluateError, CheckpointError, ConfigError) as e:  # ConfigError: a host run's bad input
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
