"""Same seed, same metrics: record every method's logged rows at a small size, and compare
two recordings (before and after a refactor that must not change what a run computes).

    python benchmarks/same_seed.py record before.json            # at the old commit
    python benchmarks/same_seed.py record after.json             # at the new one
    python benchmarks/same_seed.py compare before.json after.json
    python benchmarks/same_seed.py record after.json dr,sfl     # some cases only

Each case is a short run through the training loop (`minimax.training.loop.train`): one seed and
two vmapped seeds, a finite training set with the proportionate schedule, ACCEL's hard criterion,
PACE's score, and two devices (per-device and global buffers; run with
`XLA_FLAGS=--xla_force_host_platform_device_count=2`, else those cases are skipped). `compare` prints
the largest relative difference of any logged value per case; 0 means bit-identical rows.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import jax
import numpy as np

SMALL = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3, recurrent_size=16,
             num_envs=8, num_steps=16, n_epochs=2, lr=3e-3, num_updates=12, log_every=3, eval_every=6,
             checkpoint_every=12, eval_episodes=2, progress=False, buffer_size=16, min_fill_ratio=0.25)
METHODS = ("plr", "robust_plr", "accel", "parallel_plr", "parallel_accel")
CASES = {
    **{m: dict(method=m) for m in METHODS},
    **{f"{m}_2seeds": dict(method=m, num_seeds=2) for m in METHODS},
    "robust_plr_train_levels": dict(method="robust_plr", train_levels=12, replay_schedule="proportionate"),
    "plr_train_levels": dict(method="plr", train_levels=12),
    "accel_hard": dict(method="accel", mutation_criterion="hard", mutation_subsample=2),
    "parallel_accel_easy": dict(method="parallel_accel", mutation_criterion="easy", mutation_subsample=2),
    "plr_pace": dict(method="plr", score_function="pace"),
    "accel_no_replacement": dict(method="accel", replay_with_replacement=False, min_fill_ratio=0.5),
    # The other methods at their defaults (issue "Hyperparameters as data": their traced options became data).
    **{m: dict(method=m) for m in ("dr", "sfl", "ncc", "cenie", "accel_cenie", "traced", "remidi")},
    **{m: dict(method=m, teacher_n_walls=3) for m in ("paired", "pop_paired", "minimax_adversary")},
    "dr_2seeds": dict(method="dr", num_seeds=2),
}
TWO_DEVICES = {
    **{f"{m}_2dev": dict(method=m, devices=2) for m in METHODS},
    **{f"{m}_2dev_global": dict(method=m, devices=2, global_buffer=True) for m in METHODS},
    "accel_hard_2dev": dict(method="accel", devices=2, mutation_criterion="hard", mutation_subsample=2),
}


def run_case(name: str, options: dict, out_dir: str) -> list[dict]:
    from minimax.config import TrainConfig  # noqa: PLC0415
    from minimax.training.loop import train  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    cfg = TrainConfig.from_options(**{**SMALL, "devices": 1, **options, "out_dir": out_dir, "run_name": name})
    train(cfg)
    rows = read_rows(f"{out_dir}/{name}")
    return [{k: v for k, v in r.items() if k not in ("time_s", "sps")} for r in rows]


def record(path: str, only: str = "") -> None:
    """Every case's rows (or those of the comma-separated `only`) into `path`, written after each case; cases
    already in `path` are kept (a rerun finishes an interrupted recording)."""
    cases = dict(CASES, **(TWO_DEVICES if jax.device_count() >= 2 else {}))
    if only:
        cases = {n: cases[n] for n in only.split(",")}
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            out = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in cases.items():
            if name in out:
                continue
            out[name] = run_case(name, options, tmp)
            print(name, len(out[name]), "rows", flush=True)
            with open(path, "w") as f:
                json.dump(out, f)


def largest_difference(a: list[dict], b: list[dict]) -> float:
    """The largest relative difference of any logged number (inf where the rows' shapes or keys differ)."""
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for ra, rb in zip(a, b):
        if ra.keys() != rb.keys():
            return float("inf")
        for k in ra:
            x, y = ra[k], rb[k]
            if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                x, y = float(x), float(y)
                if np.isnan(x) and np.isnan(y):
                    continue
                worst = max(worst, abs(x - y) / max(abs(x), abs(y), 1e-12))
            elif x != y:
                return float("inf")
    return worst


def compare(before: str, after: str) -> int:
    with open(before) as f:
        a = json.load(f)
    with open(after) as f:
        b = json.load(f)
    bad = 0
    for name in a:
        d = largest_difference(a[name], b[name]) if name in b else float("inf")
        bad += d != 0.0
        print(f"{name:28s} rows {len(a[name]):3d}  largest relative difference {d:.3g}")
    return bad


if __name__ == "__main__":
    command, *paths = sys.argv[1:]
    if command == "record":
        record(*paths)
    else:
        sys.exit(1 if compare(*paths) else 0)
