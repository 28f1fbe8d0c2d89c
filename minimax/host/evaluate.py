"""`evaluate.py` for host-environment runs (Procgen, gymnasium): score checkpoints on unseen test
levels and on each run's training levels, as the PLR paper reports them.

`python evaluate.py runs/plr-seed0 runs/dr-seed0 --episodes 1000`
restores each run's latest (or `--checkpoint`) parameters and plays one episode on each of
`--episodes` test levels (distinct seeds from `[0, 2^31)` outside every run's training levels, the
same for every run: drawn from `--seed`) and on `--episodes` of the run's own training levels
(distinct while the set is large enough, then with repeats). It reports the mean return on each set,
the generalisation gap (train minus test) and, for Procgen, the returns normalised with the Procgen
paper's constants. Runs whose configs differ only in seeds and bookkeeping are one experiment: its
table row is the mean and 95% Student-t interval across them (`--pool` makes one group of all).
`--gif` writes one episode on the first test level per run (where observations are RGB frames).
Results go to `<out>/results.json`, `per_run.csv` and `summary.csv`.

The reference evaluates with sampled actions (`deterministic=False`), as here by default; `--greedy`
takes the most likely action instead.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from minimax.training.checkpoint import Checkpointer
from minimax.envs.host import make_host_env
from minimax.config.experiments import BOOKKEEPING_OPTIONS
from minimax.host.config import HostTrainConfig
from minimax.host.scoring import evaluate_levels, return_summary, test_levels
from minimax.host.learner import HostLearner, host_model
from minimax.core.options import ConfigError
from minimax.core.stats import mean_ci

HOST_BOOKKEEPING = BOOKKEEPING_OPTIONS | {"log_every", "eval_episodes", "budget"}
"""Options of a host run that do not change what it trains (runs differing only in these are one experiment)."""

METRICS = ("test_return", "train_levels_return", "generalization_gap", "test_normalized",
           "train_levels_normalized")

# evaluate.py options that mean something only for JAX environments, with their defaults.
_JAX_ONLY = {"suite": "default", "levels": (), "cvar": 0, "cvar_set": (), "chunk_steps": 16, "max_envs": 4096}


@dataclasses.dataclass
class HostPolicy:
    run: str
    cfg: HostTrainConfig
    learner: HostLearner
    params: object
    step: int
    obs_shape: tuple


def check_settings(args) -> None:
    """Refuse, in one line, the `evaluate.py` options a host run has no use for."""
    given = [k for k, default in _JAX_ONLY.items() if getattr(args, k) != default]
    if given:
        raise ConfigError("host-environment runs are scored on test and training level seeds; "
                          + ", ".join(f"--{k.replace('_', '-')}" for k in given) + " applies to JAX environments only")


def load_host_policy(run_dir, step: int | None) -> HostPolicy:
    """A host run's config, learner and the parameters of checkpoint `step` (default: the latest)."""
    run_dir = Path(run_dir)
    cfg = HostTrainConfig.load(run_dir / "config.json")
    params, step = Checkpointer(run_dir / "checkpoints").restore_params(step)
    with make_host_env(cfg.env, 1, distribution_mode=cfg.distribution_mode) as probe:
        model = host_model(cfg.env, probe.obs_shape, probe.num_actions, cfg.impala_channels, cfg.hidden)
        obs_shape = tuple(probe.obs_shape)
    learner = HostLearner(model, cfg.ppo, cfg.sampler_config.score_function)
    return HostPolicy(str(run_dir), cfg, learner, params, step, obs_shape)


def training_levels(rng: np.random.Generator, levels: range, n: int) -> np.ndarray:
    """`n` of a run's training levels: distinct when there are enough of them, else every one and repeats."""
    pool = np.arange(levels.start, levels.stop)
    if n <= pool.size:
        return rng.choice(pool, n, replace=False)
    return np.concatenate([rng.permutation(pool), rng.choice(pool, n - pool.size)])


def score_policy(policy: HostPolicy, tests: np.ndarray, args) -> dict:
    """One run's returns on the test levels and on `args.episodes` of its training levels."""
    cfg = policy.cfg
    rng = np.random.default_rng([args.seed, 1])
    trains = training_levels(rng, cfg.level_seeds, args.episodes)
    key = jax.random.key(args.seed)
    with make_host_env(cfg.env, min(64, args.episodes), distribution_mode=cfg.distribution_mode,
                       seed=args.seed) as env:
        test = evaluate_levels(policy.learner, policy.params, env, tests, key, greedy=args.greedy)
        train = evaluate_levels(policy.learner, policy.params, env, trains, jax.random.fold_in(key, 1),
                                greedy=args.greedy)
    row = return_summary(cfg.env, cfg.distribution_mode, test, train)
    return {"run": policy.run, "seed": cfg.seed, "checkpoint": policy.step, "env": cfg.env, "method": cfg.method,
            **row, "test_returns": test.tolist(), "train_levels": trains.tolist(),
            "train_levels_returns": train.tolist()}


def record_gif(policy: HostPolicy, level: int, path: Path, args) -> int:
    """Play one episode of `level` and write its frames (observations, scaled x4) as a GIF; its length."""
    from minimax.envs.images import save_gif  # noqa: PLC0415

    cfg = policy.cfg
    with make_host_env(cfg.env, 1, distribution_mode=cfg.distribution_mode, seed=args.seed) as env:
        obs = env.reset(np.array([level]))
        frames, key, done = [obs[0]], jax.random.key(args.seed), False
        while not done:
            action = policy.learner.policy_action(policy.params, jax.random.fold_in(key, len(frames)), obs,
                                                  args.greedy)
            step = env.step(np.asarray(action))
            done = bool(step.done[0])
            obs = step.obs
            if not done:
                frames.append(obs[0])
    big = [np.repeat(np.repeat(np.asarray(f, np.uint8), 4, 0), 4, 1) for f in frames]
    save_gif(np.stack(big), path, fps=15)
    return len(frames)


def group_rows(results: list[dict], configs: list[HostTrainConfig], pool: bool) -> list[dict]:
    """Runs grouped by experiment (configs equal but for `HOST_BOOKKEEPING`), each with mean and 95% CI."""
    groups: dict[str, list[int]] = {}
    for i, cfg in enumerate(configs):
        key = "all" if pool else json.dumps({k: v for k, v in cfg.to_dict().items() if k not in HOST_BOOKKEEPING},
                                            sort_keys=True, default=str)
        groups.setdefault(key, []).append(i)
    out = []
    for members in groups.values():
        first = configs[members[0]]
        label = "all runs" if pool else f"{first.env} {first.method}"
        summary = {}
        for m in METRICS:
            values = [results[i][m] for i in members if m in results[i]]
            if values:
                mean, low, high = mean_ci(values)
                summary[m] = {"mean": mean, "ci_low": low, "ci_high": high, "n": len(values)}
        out.append({"label": label, "runs": [results[i]["run"] for i in members], "summary": summary})
    labels = [g["label"] for g in out]
    for g in out:  # one label for two experiments: number them
        if labels.count(g["label"]) > 1:
            g["label"] += f" #{labels[:out.index(g) + 1].count(g['label'])}"
    return out


def write_host_results(out_dir: Path, results: list[dict], groups: list[dict], settings: dict) -> None:
    doc = json.loads(json.dumps({"settings": settings, "runs": results, "groups": groups}, default=float),
                     parse_constant=lambda _: None)
    (out_dir / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    with (out_dir / "per_run.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "seed", "checkpoint", *METRICS])
        for r in results:
            w.writerow([r["run"], r["seed"], r["checkpoint"], *(r.get(m, "") for m in METRICS)])
    with (out_dir / "summary.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "metric", "mean", "ci_low", "ci_high", "n"])
        for g in groups:
            for m, s in g["summary"].items():
                w.writerow([g["label"], m, s["mean"], *("" if np.isnan(s[k]) else s[k] for k in ("ci_low", "ci_high")),
                            s["n"]])


def print_host_table(groups: list[dict]) -> None:
    def cell(s):
        if s is None:
            return "–"
        if np.isnan(s["ci_low"]):
            return f"{s['mean']:.2f}"
        return f"{s['mean']:.2f} [{s['ci_low']:.2f}, {s['ci_high']:.2f}]"

    print("| experiment | runs | " + " | ".join(METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    for g in groups:
        print(f"| {g['label']} | {len(g['runs'])} | " + " | ".join(cell(g["summary"].get(m)) for m in METRICS) + " |")


def evaluate_host_runs(args, out_dir: Path) -> dict:
    """`evaluate.py` on host-environment runs (`args`: its `EvaluateConfig`)."""
    check_settings(args)
    policies = [load_host_policy(run, args.checkpoint) for run in args.runs]
    envs = sorted({p.cfg.env for p in policies})
    if len(envs) > 1:
        raise ConfigError(f"the runs train on different environments ({', '.join(envs)}): evaluate them separately")
    shape = policies[0].obs_shape
    if args.gif and (len(shape) != 3 or shape[-1] != 3):
        raise ConfigError(f"--gif: {envs[0]}'s observations are not RGB frames (shape {shape})")
    tests = test_levels(np.random.default_rng([args.seed, 0]), args.episodes,
                        exclude=[p.cfg.level_seeds for p in policies])
    results = []
    for policy in policies:
        t0 = time.perf_counter()
        results.append(score_policy(policy, tests, args))
        if args.gif:
            path = out_dir / "gifs" / f"{Path(policy.run).name}-level{tests[0]}.gif"
            results[-1]["gif"] = str(path)
            results[-1]["gif_length"] = record_gif(policy, int(tests[0]), path, args)
        print(f"evaluated {policy.run} at update {policy.step} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    groups = group_rows(results, [p.cfg for p in policies], args.pool)
    write_host_results(out_dir, results, groups, dataclasses.asdict(args) | {"out": str(out_dir)})
    print(f"results written to {out_dir} (results.json, per_run.csv, summary.csv)", file=sys.stderr)
    print_host_table(groups)
    return {"runs": results, "groups": groups}

