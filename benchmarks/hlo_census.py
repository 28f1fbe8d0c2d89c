"""What one PPO update executes, read from the compiled program's HLO (issue 55, part 2, on any backend).

    PYTHONPATH=. python benchmarks/hlo_census.py --presets dr,plr,accel --seeds 4 --tiny
    PYTHONPATH=. python benchmarks/hlo_census.py --presets dr --seeds 10 --set scan_unroll=8     # a GPU's figures

For one chunk of `--chunk` PPO updates of each preset (the program `train.py` compiles, seeds vmapped), the
census walks the optimized HLO from its entry: a `while` multiplies what its body runs by its known trip count,
a `conditional` counts each branch once (an upper bound: one runs), a `call` is entered, a fusion is one
kernel (its inside is not). Per update it prints the `while` loops (how many there are, and the iterations of
those with a known count: on a GPU each iteration reads its predicate back on the host unless the loop runs in
a command buffer), the loops whose count depends on the data (the update unit's cycles of new levels, the
maze's search: their iterations are per iteration of their parent, `?` below), the executed kernels (fusions,
matmuls, convolutions, custom calls, sorts, scatters and gathers), copies and `conditional`s. Backends fuse
differently, so kernel and copy counts are the compiling backend's; the loops and their counts are the
program's own.

A second table lists where each loop of unknown count and each `conditional` was traced (its `op_name`
scope) and how often it is tested per update at least: on a GPU each test is a host read-back of a
predicate after the queue drains, unless XLA runs the loop in a command buffer (DESIGN "Host round trips").
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_suite import TINY, parse_set, sizes  # noqa: E402
from minimax.config import PRESETS  # noqa: E402
from minimax.training.budget import make_chunk  # noqa: E402
from minimax.training.builder import build_runner, device_layout  # noqa: E402
from minimax.training.devices import distribute_init, distribute_step  # noqa: E402
from minimax.training.loop import seed_keys  # noqa: E402

HEADER = re.compile(r"^(?:ENTRY )?%([\w.\-]+) .*\{$")
INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%[\w.\-]+ = .*? ([a-z][\w\-]*)\(")
KERNELS = {"fusion", "dot", "convolution", "custom-call", "sort", "scatter", "gather", "reduce", "rng-bit-generator"}


def computations(text: str) -> tuple[dict[str, list[str]], str]:
    """`({name: instruction lines}, entry name)` of an HLO module's text."""
    comps, entry, current = {}, "", None
    for line in text.splitlines():
        head = HEADER.match(line)
        if head:
            current = comps.setdefault(head.group(1), [])
            entry = head.group(1) if line.startswith("ENTRY") else entry
        elif line.strip() == "}":
            current = None
        elif current is not None and " = " in line:
            current.append(line)
    return comps, entry


def census(text: str) -> dict:
    """Executed counts of one run of the module: opcodes (by `KERNELS`, copies, conditionals), while loops
    (`loops`, `iterations` of known-count ones) and the data-dependent loops' per-iteration figures."""
    comps, entry = computations(text)
    out = Counter()

    def walk(name: str, times: float, dynamic: bool) -> None:
        for line in comps.get(name, []):
            op = INSTRUCTION.match(line)
            op = op.group(1) if op else ""
            key = "dynamic " if dynamic else ""
            if op in KERNELS:
                out[key + "kernels"] += times
            if op in ("copy", "copy-start"):
                out[key + "copies"] += times
            if op == "conditional":
                out[key + "conditionals"] += times
                out[("where (nested) " if dynamic else "where ") + "branch in " + scope(line)] += times
                branches = re.search(r"branch_computations=\{([^}]*)\}", line)
                names = re.findall(r"%([\w.\-]+)", branches.group(1)) if branches else \
                    re.findall(r"(?:true|false)_computation=%([\w.\-]+)", line)
                for branch in names:
                    walk(branch, times, dynamic)
            elif op == "while":
                trips = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line)
                body = re.search(r"body=%([\w.\-]+)", line).group(1)
                out[key + "loops"] += times
                if trips:
                    out[key + "iterations"] += times * int(trips.group(1))
                    walk(body, times * int(trips.group(1)), dynamic)
                else:
                    out["loops of unknown count"] += 1
                    # Its condition runs at least once per run of the code around it (a loop inside another loop of
                    # unknown count: once per iteration of that one, which may run 0 times).
                    out[("where " if not dynamic else "where (nested) ") + scope(line)] += times
                    walk(body, times, True)
            elif op == "call":
                walk(re.search(r"to_apply=%([\w.\-]+)", line).group(1), times, dynamic)

    walk(entry, 1.0, False)
    return dict(out)


def scope(line: str) -> str:
    """Where a loop was traced, from its `op_name`, without the jit and loop-body plumbing."""
    name = re.search(r'op_name="([^"]*)"', line)
    parts = [q for q in (name.group(1) if name else "?").split("/")
             if q not in ("while", "body", "closed_call", "cond") and not q.startswith("jit(")]
    return "/".join(parts) or "?"


def chunk_text(preset: str, seeds: int, chunk: int, overrides: dict) -> str:
    cfg = PRESETS[preset].replace(num_seeds=seeds, devices=1, **overrides)
    layout = device_layout(cfg)
    runner = build_runner(cfg, layout.shard)
    state = jax.eval_shape(distribute_init(runner, layout), seed_keys(layout)[0])
    ahead = np.zeros(seeds, np.int32) if layout.multi_seed else np.int32(0)
    program = jax.jit(distribute_step(make_chunk(runner, chunk, cfg.budget), runner, layout), donate_argnums=0)
    return program.lower(state, ahead).compile().as_text()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", default="dr,plr,accel")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--chunk", type=int, default=1, help="updates per program (the figures are per update)")
    p.add_argument("--tiny", action="store_true", help="gpu_suite.py's toy sizes")
    p.add_argument("--set", nargs="*", default=[], metavar="OPTION=VALUE", help="size overrides")
    a = p.parse_args(argv)
    overrides = {**(TINY if a.tiny else {}), **parse_set(a.set)}
    device = jax.devices()[0]
    print(f"{device.platform} {device.device_kind}, jax {jax.__version__}, {a.seeds} seeds, {sizes(a.tiny, a.set)}; "
          f"per PPO update; `?`: per iteration of a loop whose count depends on the data\n")
    columns = ("loops", "iterations", "kernels", "copies", "conditionals")
    print("| preset | " + " | ".join(f"{c}" for c in columns) + " | loops of unknown count | their kernels ? | "
          "their copies ? |\n|---|" + "---:|" * (len(columns) + 3))
    wheres = []
    for preset in a.presets.split(","):
        c = census(chunk_text(preset, a.seeds, a.chunk, overrides))
        per = lambda k: f"{c.get(k, 0) / a.chunk:,.0f}"  # noqa: E731
        print(f"| {preset} | " + " | ".join(per(k) for k in columns) +
              f" | {c.get('loops of unknown count', 0) // a.chunk} | {per('dynamic kernels')} | "
              f"{per('dynamic copies')} |", flush=True)
        wheres.append((preset, {k[6:]: v / a.chunk for k, v in c.items() if k.startswith("where ")}))
    # Each test of a loop whose count depends on the data is read back by the host on a GPU (unless the loop runs
    # in a command buffer): a floor on the round trips per update, where each loop was traced.
    print("\nHost round trips on a GPU: the tests of loops of unknown count and the branches (`lax.cond`), where "
          "they were traced (nested: inside a loop of unknown count, so per iteration of that one, `?`)\n")
    print("| preset | traced in | tests per update, at least |\n|---|---|---:|")
    for preset, where in wheres:
        for name, times in sorted(where.items(), key=lambda kv: -kv[1]):
            nested = name.startswith("(nested) ")
            print(f"| {preset} | `{name[9:] if nested else name}`{' (nested)' if nested else ''} | "
                  f"{'?' if nested else f'{times:,.0f}'} |")


if __name__ == "__main__":
    main()
