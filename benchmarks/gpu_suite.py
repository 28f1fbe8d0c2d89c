"""The GPU benchmark suite: one command, one markdown table (issue 37).

    PYTHONPATH=. python benchmarks/gpu_suite.py                 # on a GPU machine (about 9 minutes)
    PYTHONPATH=. python benchmarks/gpu_suite.py --tiny          # the same program at toy sizes (CPU, ~2 minutes)
    PYTHONPATH=. python benchmarks/gpu_suite.py --rows dr:10:8,paired:10:8   # chosen rows (preset:seeds:unroll)
    PYTHONPATH=. python benchmarks/gpu_suite.py --rows dr:4:0,plr:4:0 --set num_steps=64 recurrent_size=64   # other sizes

Rows: seconds per PPO update (the release's unit, `--budget updates`; robust PLR and ACCEL's
cycles without a gradient included) of every Table 2 method at 1 and 10 seeds vmapped in one
program; DR over more seeds; DR at 10 seeds over `--scan-unroll`; each with its compile time and
cycles per update. Each program first plays cycles until every seed's buffer is ready (PLR family),
then one untimed call, then `--repeats` timed calls. Last line: the projected device-hours of the
full Table 2 (6 methods x 10 seeds x 30,000 updates, each method's 10 seeds in one program).
Items past `--time-budget` seconds are skipped and listed (the suite must fit one 10-minute call).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_throughput import warm_buffer  # noqa: E402
from minimax.training.budget import make_chunk  # noqa: E402
from minimax.training.builder import build_runner, device_layout  # noqa: E402
from minimax.training.devices import distribute_init, distribute_step  # noqa: E402
from minimax.config import PRESETS, TrainConfig  # noqa: E402
from minimax.training.loop import seed_keys  # noqa: E402

TABLE_2 = ("dr", "paired", "plr", "pplr", "accel", "paccel")
TINY = dict(num_envs=8, num_steps=16, recurrent_size=16, buffer_size=64, maze_height=7, maze_width=7, n_walls=5,
            teacher_n_walls=10, teacher_recurrent_size=16, teacher_conv_filters=8)


def compiled_chunk(preset: str, seeds: int, unroll: int, chunk: int, overrides: dict):
    """`(program, state, ahead, compile_s, cfg)`: `chunk` PPO updates of `preset` with `seeds` seeds vmapped,
    compiled, and a state in the steady state (every seed's buffer ready)."""
    cfg = PRESETS[preset].replace(num_seeds=seeds, scan_unroll=unroll, devices=1, **overrides)
    layout = device_layout(cfg)
    runner = build_runner(cfg, layout.shard)
    state = jax.jit(distribute_init(runner, layout))(seed_keys(layout)[0])
    ahead = np.zeros(seeds, np.int32) if layout.multi_seed else np.int32(0)
    state = warm_buffer(runner, state, layout, verbose=False)
    t0 = time.perf_counter()
    program = jax.jit(distribute_step(make_chunk(runner, chunk), runner, layout),
                      donate_argnums=0).lower(state, ahead).compile()
    return program, state, ahead, time.perf_counter() - t0, cfg


def measure(preset: str, seeds: int, unroll: int, chunk: int, repeats: int, overrides: dict) -> dict:
    program, state, ahead, compile_s, _ = compiled_chunk(preset, seeds, unroll, chunk, overrides)
    state, metrics = program(state, ahead)
    jax.block_until_ready(metrics)
    seconds, cycles = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        state, metrics = program(state, ahead)
        jax.block_until_ready(metrics)
        seconds.append((time.perf_counter() - t0) / chunk)
        cycles += int(np.asarray(metrics["cycles"]).sum())
    return {"compile_s": compile_s, "s_per_update": float(np.mean(seconds)),
            "cycles_per_update": cycles / (repeats * chunk * seeds)}


def plan(tiny: bool) -> list[tuple[str, str, int, int]]:
    """`(section, preset, seeds, unroll)` in order of importance (0: the backend's default unroll)."""
    many = 10 if not tiny else 2
    items = [("method", p, s, 0) for s in (1, many) for p in TABLE_2]
    items += [("seeds", "dr", s, 0) for s in ((30, 60) if not tiny else (4,))]
    items += [("unroll", "dr", many, u) for u in ((1, 4, 16) if not tiny else (1, 2))]
    return items


def parse_rows(text: str) -> list[tuple[str, str, int, int]]:
    """`--rows dr:1:1,paired:10:8` (preset:seeds:unroll, unroll 0 = the backend's default) as plan items."""
    items = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        fields = part.split(":")
        if len(fields) != 3 or fields[0] not in PRESETS or not all(f.isdigit() for f in fields[1:]) \
                or int(fields[1]) < 1:
            raise SystemExit(f"--rows: {part!r} is not preset:seeds:unroll with a known preset, seeds >= 1 and "
                             f"unroll >= 0 (presets: {', '.join(PRESETS)})")
        items.append(("rows", fields[0], int(fields[1]), int(fields[2])))
    return items


def parse_set(pairs: list[str]) -> dict:
    """`--set num_steps=64 recurrent_size=64` as overrides (integers, floats or words)."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in TrainConfig.option_types():
            raise SystemExit(f"--set: {pair!r} is not OPTION=VALUE with an option of the training config")
        for kind in (int, float):
            try:
                value = kind(value)
                break
            except ValueError:
                pass
        out[name] = value
    return out


def sizes(tiny: bool, pairs: list[str]) -> str:
    base = "tiny sizes" if tiny else "Table 5 sizes (32 envs x 256 steps, LSTM 256, K = 4000)"
    return base + (f" with {' '.join(pairs)}" if pairs else "")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true", help="toy sizes: checks the suite runs (CPU)")
    p.add_argument("--chunk", type=int, default=0, help="updates per timed call (0: 5, or 2 with --tiny)")
    p.add_argument("--repeats", type=int, default=2, help="timed calls per row")
    p.add_argument("--time-budget", type=float, default=500.0, help="seconds; later rows are skipped past it")
    p.add_argument("--rows", default="", help="only these rows: preset:seeds:unroll,... (e.g. dr:1:1,dr:1:8)")
    p.add_argument("--set", nargs="*", default=[], metavar="OPTION=VALUE",
                   help="size overrides for every row, on top of --tiny's (num_steps=64 recurrent_size=64)")
    a = p.parse_args(argv)
    items = parse_rows(a.rows) if a.rows else plan(a.tiny)
    overrides = {**(TINY if a.tiny else {}), **parse_set(a.set)}
    start, rows, skipped = time.perf_counter(), [], []
    device = jax.devices()[0]
    for section, preset, seeds, unroll in items:
        if time.perf_counter() - start > a.time_budget:
            skipped.append(f"{section} {preset} x{seeds} unroll {unroll or 'default'}")
            continue
        r = measure(preset, seeds, unroll, a.chunk or (2 if a.tiny else 5), a.repeats, overrides)
        rows.append((section, preset, seeds, unroll, r))
        print(f"{section:7} {preset:7} seeds {seeds:3} unroll {unroll or 'default':>7}: "
              f"{r['s_per_update']:.4f} s/update, compile {r['compile_s']:.1f} s", file=sys.stderr, flush=True)
    print(f"\n{device.platform} {device.device_kind}, jax {jax.__version__}, {platform.machine()}, "
          f"{sizes(a.tiny, a.set)}\n")
    print("| section | preset | seeds | --scan-unroll | compile (s) | s / PPO update | cycles / update |")
    print("|---|---|---|---|---|---|---|")
    for section, preset, seeds, unroll, r in rows:
        print(f"| {section} | {preset} | {seeds} | {unroll or 'default'} | {r['compile_s']:.1f} | "
              f"{r['s_per_update']:.4f} | {r['cycles_per_update']:.2f} |")
    many = 10 if not a.tiny else 2
    per_method = {preset: r["s_per_update"] for section, preset, seeds, unroll, r in rows  # --rows count too
                  if section in ("method", "rows") and preset in TABLE_2 and seeds == many and unroll == 0}
    if len(per_method) == len(TABLE_2):
        hours = sum(per_method.values()) * 30_000 / 3600
        print(f"\nProjected full Table 2 (6 methods x {many} seeds x 30,000 PPO updates, one program per method): "
              f"{hours:.2f} device-hours on this {device.device_kind}.")
    if skipped:
        print(f"\nSkipped past --time-budget {a.time_budget:.0f} s: {'; '.join(skipped)}.")


if __name__ == "__main__":
    main()
