"""Two versions of the package timed side by side in one process, alternating calls (issue 48).

    PYTHONPATH=. python benchmarks/ab_update.py --before babcab0 --preset dr --seeds 1 --rounds 8
    PYTHONPATH=. python benchmarks/ab_update.py --before-dir runs/ab/babcab0 --preset dr --seeds 10   # no git

On a shared machine two runs of the same program differ by up to 15% (the 2-core development machine,
measured); here the before and after programs are compiled in one process and called in turn (one PPO
update per call, after one untimed call each), so both see the same load. `--before REV` exports that
commit's `minimax/` with `git archive` into `runs/ab/REV/minimax_before/`, its imports renamed so that it
loads beside the working tree's `minimax`; `--before-dir` uses such an export made elsewhere (a GPU
machine has no git history). Prints compile seconds and the min and median seconds per update per side,
and how far apart the two sides' metrics of their last update are (same seed, same updates: a change that
computes the same update gives gaps at float rounding).
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export_before(rev: str, out: Path) -> Path:
    """`rev`'s `minimax/` as package `minimax_before` under `out` (imports renamed); `out`."""
    target = out / "minimax_before"
    if not target.exists():
        data = subprocess.run(["git", "archive", rev, "minimax"], cwd=ROOT, capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(out / "raw", filter="data")
        (out / "raw" / "minimax").rename(target)
        shutil.rmtree(out / "raw")
        for path in target.rglob("*.py"):
            text = re.sub(r"\bminimax\.", "minimax_before.", path.read_text())
            text = re.sub(r"^(from|import) minimax\b", r"\1 minimax_before", text, flags=re.M)
            path.write_text(text)
    return out


def build(package: str, preset: str, seeds: int, overrides: dict):
    """`[program, state, ahead, compile_s]`: one PPO update of `preset` x `seeds` built by `package`."""
    import jax  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    mod = lambda name: importlib.import_module(f"{package}.{name}")  # noqa: E731
    builder, devices, budget, loop = (mod(n) for n in ("training.builder", "training.devices", "training.budget",
                                                       "training.loop"))
    cfg = mod("config").PRESETS[preset].replace(num_seeds=seeds, devices=1, **overrides)
    layout = builder.device_layout(cfg)
    runner = builder.build_runner(cfg, layout.shard)
    state = jax.jit(devices.distribute_init(runner, layout))(loop.seed_keys(layout)[0])
    ahead = np.zeros(seeds, np.int32) if layout.multi_seed else np.int32(0)
    t0 = time.perf_counter()
    step = devices.distribute_step(budget.make_chunk(runner, 1), runner, layout)
    program = jax.jit(step, donate_argnums=0).lower(state, ahead).compile()
    return [program, state, ahead, time.perf_counter() - t0]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", default="", help="a git revision to compare the working tree with")
    p.add_argument("--before-dir", default="", help="a directory holding an exported minimax_before/")
    p.add_argument("--preset", default="dr")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--rounds", type=int, default=8, help="timed calls per side, alternating")
    p.add_argument("--set", nargs="*", default=[], help="option=value overrides (recurrent_cell=gru)")
    a = p.parse_args(argv)
    if bool(a.before) == bool(a.before_dir):
        p.error("give one of --before REV or --before-dir DIR")
    where = Path(a.before_dir) if a.before_dir else export_before(a.before, ROOT / "runs" / "ab" / a.before)
    if not (where / "minimax_before").is_dir():
        p.error(f"--before-dir {where} holds no minimax_before/")
    sys.path.insert(0, str(where.resolve()))
    sys.path.insert(0, str(ROOT))
    import jax  # noqa: PLC0415

    overrides = {k: (int(v) if v.isdigit() else v) for k, v in (s.split("=", 1) for s in a.set)}
    sides = {"before": build("minimax_before", a.preset, a.seeds, overrides),
             "after": build("minimax", a.preset, a.seeds, overrides)}
    times: dict[str, list[float]] = {k: [] for k in sides}
    last: dict[str, dict] = {}
    for side in sides.values():  # one untimed call each
        side[1], metrics = side[0](side[1], side[2])
        jax.block_until_ready(metrics)
    for _ in range(a.rounds):
        for name, side in sides.items():
            t0 = time.perf_counter()
            side[1], last[name] = side[0](side[1], side[2])
            jax.block_until_ready(last[name])
            times[name].append(time.perf_counter() - t0)
    device = jax.devices()[0].device_kind
    for name, side in sides.items():
        print(f"{device} | {a.preset} x {a.seeds} {' '.join(a.set)} | {name} | compile {side[3]:.1f} s | "
              f"s/update min {min(times[name]):.4f} median {statistics.median(times[name]):.4f} "
              f"({a.rounds} alternating calls)", flush=True)
    print(metric_gaps(last["before"], last["after"]))


def metric_gaps(before: dict, after: dict, worst: int = 4) -> str:
    """How far the two versions' metrics of the last update are apart (same seed, same number of
    updates): the largest relative gaps, `|a - b| / max(|a|, |b|, 1e-6)`."""
    import numpy as np  # noqa: PLC0415

    gaps = {}
    for key in sorted(set(before) & set(after)):
        x, y = np.asarray(before[key], np.float64), np.asarray(after[key], np.float64)
        gaps[key] = (float(np.max(np.abs(x - y) / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1e-6))),
                     float(np.max(np.abs(x))), float(np.max(np.abs(x - y))))
    top = sorted(gaps.items(), key=lambda kv: -kv[1][0])[:worst]
    return (f"metrics ({len(gaps)} shared), largest relative gaps before/after: "
            + ", ".join(f"{k} {r:.1e} (|before| {m:.2g}, |gap| {g:.1e})" for k, (r, m, g) in top))


if __name__ == "__main__":
    main()
