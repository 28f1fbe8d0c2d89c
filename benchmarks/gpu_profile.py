"""Where one PPO update's device time goes (issue 37): a `jax.profiler` trace, read back and summarised.

    PYTHONPATH=. python benchmarks/gpu_profile.py --preset dr --seeds 10       # on a GPU machine
    PYTHONPATH=. python benchmarks/gpu_profile.py --preset dr --seeds 60
    PYTHONPATH=. python benchmarks/gpu_profile.py --preset plr --seeds 2 --tiny   # toy sizes (CPU)

Builds the same program as `gpu_suite.py` (the preset's seeds vmapped, `--chunk` PPO updates per call,
every buffer warm), traces `--repeats` calls and reads the trace with `jax.profiler.ProfileData`. Printed
per PPO update:
- wall seconds, device-busy seconds (the union of the device's op events) and the idle share: a device
  idle between short kernels is latency-bound (sequential depth, launches), not compute-bound;
- op events (kernel launches on a GPU) per update and per env step of one rollout;
- the ops' self time (time not inside a nested op event) by kind (fusion, gemm, convolution, copy,
  transpose, while/conditional bookkeeping, ...) and the top ops by name, with counts.
On a GPU the ops are the device plane's "XLA Ops" line or, where the raw trace has none, its CUDA
streams' kernels; on CPU, the XLA client threads' HLO ops (a `while` there spans its body's ops, hence
self time). The trace stays in `--trace-dir` for Perfetto or
TensorBoard.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_suite import TINY, compiled_chunk  # noqa: E402


_RUNTIME = ("Execute", "ExecuteChunk", "StartRegion", "StopRegion", "Record")


def op_lines(profile) -> list[list[tuple[str, int, int]]]:
    """`(name, start_ns, duration_ns)` of the device's op events, one list per timeline: a device plane's
    "XLA Ops" line where the trace has one, else its CUDA stream lines (kernels and copies, by kernel
    name); without a device plane (CPU), each XLA client thread's HLO ops (no `end:` markers, no runtime
    events)."""
    device = [p for p in profile.planes if p.name.startswith("/device:")]
    for wanted in (lambda n: n == "XLA Ops", lambda n: n.startswith("Stream")):
        lines = [[(ev.name, ev.start_ns, ev.duration_ns) for ev in line.events]
                 for plane in device for line in plane.lines if wanted(line.name)]
        if any(lines):
            return lines
    return [[(ev.name, ev.start_ns, ev.duration_ns) for ev in line.events
             if not ev.name.startswith("end: ") and " " not in ev.name and "::" not in ev.name
             and ev.name not in _RUNTIME]
            for plane in profile.planes if plane.name.startswith("/host:CPU")
            for line in plane.lines if line.name.startswith("tf_XLA")]


def self_times(line: list[tuple[str, int, int]]) -> list[tuple[str, int]]:
    """Each event of one timeline with its self time: its duration less the events nested in it."""
    ordered = sorted(line, key=lambda e: (e[1], -e[2]))
    own = [e[2] for e in ordered]
    stack: list[int] = []   # indices of the open events
    for i, (_, start, duration) in enumerate(ordered):
        while stack and ordered[stack[-1]][1] + ordered[stack[-1]][2] <= start:
            stack.pop()
        if stack:
            own[stack[-1]] -= duration
        stack.append(i)
    return [(ordered[i][0], max(own[i], 0)) for i in range(len(ordered))]


def busy_ns(lines) -> int:
    """The length of the union of every event's interval: time in which some op ran."""
    spans = sorted((start, start + duration) for line in lines for _, start, duration in line)
    total, end = 0, None
    for a, b in spans:
        if end is None or a > end:
            total, end = total + (b - a), b
        elif b > end:
            total, end = total + (b - end), b
    return total


def kind(name: str) -> str:
    """An op's kind from its HLO name: `loop_add_fusion.12` -> fusion, `custom-call.3` -> custom-call."""
    base = re.sub(r"[._]\d+$", "", name.split(":")[-1].strip())
    for k in ("gemm", "cublas", "cutlass", "xmma", "conv", "fusion", "copy", "transpose", "while", "conditional",
              "all-reduce", "scatter", "gather", "sort", "dynamic-update-slice", "dynamic-slice", "custom-call"):
        if k in base:
            return {"cublas": "gemm", "cutlass": "gemm", "xmma": "gemm", "conv": "convolution"}.get(k, k)
    return base or "?"


PARTS = (("PPO backward", "transpose("), ("PPO forward", "jvp("), ("PPO optimiser", "/optimizer/"),
         ("GAE", "/gae/"), ("rollout: level generation", "/generate/"), ("rollout: observation", "/observation/"),
         ("rollout: auto-reset", "/auto_reset/"), ("rollout: env step", "/env_step/"),
         ("rollout: sampling", "/sample/"), ("rollout: policy forward", "/policy/"), ("rollout: other", "/rollout/"))
"""Where an op belongs, by its HLO `op_name` (the jax name stack: autodiff's `jvp(`/`transpose(` and the
`jax.named_scope`s of `runners/rollout.py`, `envs/wrappers.py` and `agents/ppo.py`); first match wins."""


def op_parts(hlo_text: str) -> dict[str, str]:
    """`{instruction name: part}` from a compiled program's HLO text; names normalised (`.` -> `_`) so
    that a GPU kernel named after its fusion (`loop_add_fusion_1`) finds its instruction. An instruction
    without an `op_name` (the copies XLA adds for a loop's carried values) takes that of the instruction
    that calls its computation (the loop)."""
    own, home, caller = {}, {}, {}
    computation = ""
    for line in hlo_text.splitlines():
        header = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$", line)
        if header and not line.startswith(" "):
            computation = header.group(1)
            continue
        inst = re.match(r"\s+(?:ROOT )?%([\w.\-]+) = ", line)
        if not inst:
            continue
        name = inst.group(1)
        home[name] = computation
        op_name = re.search(r'op_name="([^"]*)"', line)
        if op_name:
            own[name] = op_name.group(1)
        for called in re.findall(r"(?:body|condition|calls|to_apply|branch_computations)=\{?%([\w.\-]+)", line):
            caller[called] = name

    def op_name_of(name: str, depth: int = 0) -> str:
        if name in own or depth > 50:
            return own.get(name, "")
        up = caller.get(home.get(name, ""))
        return op_name_of(up, depth + 1) if up else ""

    out = {}
    for name in home:
        op_name = op_name_of(name)
        out[name.replace(".", "_")] = next((part for part, marker in PARTS if marker in op_name), "other")
    return out


def part_table(owned, parts: dict[str, str], updates: int) -> dict[str, tuple[float, float]]:
    """`{part: (op events per update, self seconds per update)}`."""
    events, seconds = Counter(), Counter()
    for name, t in owned:
        part = parts.get(name.split(":")[-1].strip().replace(".", "_"), "unattributed")
        events[part] += 1
        seconds[part] += t
    return {p: (events[p] / updates, seconds[p] / 1e9 / updates) for p in events}


def profile(preset: str, seeds: int, unroll: int, chunk: int, repeats: int, overrides: dict, trace_dir: str) -> dict:
    """Trace `repeats` calls of `chunk` updates; the per-update summary (see the module docstring)."""
    from jax.profiler import ProfileData  # noqa: PLC0415

    program, state, ahead, compile_s, cfg = compiled_chunk(preset, seeds, unroll, chunk, overrides)
    state, metrics = program(state, ahead)  # one untimed call
    jax.block_until_ready(metrics)
    before = set(Path(trace_dir).rglob("*.xplane.pb")) if Path(trace_dir).exists() else set()
    jax.profiler.start_trace(trace_dir)
    t0 = time.perf_counter()
    for _ in range(repeats):
        state, metrics = program(state, ahead)
        jax.block_until_ready(metrics)
    wall = time.perf_counter() - t0
    jax.profiler.stop_trace()
    (path,) = set(Path(trace_dir).rglob("*.xplane.pb")) - before
    lines = op_lines(ProfileData.from_file(str(path)))
    owned = [e for line in lines for e in self_times(line)]
    busy, n_events = busy_ns(lines), sum(len(line) for line in lines)
    updates = repeats * chunk
    by_kind, by_name, counts = Counter(), Counter(), Counter()
    for name, t in owned:
        by_kind[kind(name)] += t
        by_name[name] += t
        counts[name] += 1
    parts = part_table(owned, op_parts(program.as_text()), updates)
    return {"preset": preset, "seeds": seeds, "compile_s": compile_s, "trace": str(path), "parts": parts,
            "loop_steps": {"rollout": cfg.num_steps, "PPO": cfg.num_steps * cfg.ppo.n_epochs},
            "wall_s": wall / updates, "busy_s": busy / 1e9 / updates, "events": n_events / updates,
            "env_steps_per_rollout": cfg.num_steps, "by_kind": {k: v / 1e9 / updates for k, v in by_kind.items()},
            "top": [(n, t / 1e9 / updates, counts[n] / updates) for n, t in by_name.most_common(15)]}


def report(r: dict) -> None:
    idle = 1 - r["busy_s"] / r["wall_s"] if r["wall_s"] > 0 else float("nan")
    print(f"\n{jax.devices()[0].device_kind}, jax {jax.__version__}: {r['preset']} x {r['seeds']} seeds "
          f"(compile {r['compile_s']:.1f} s; trace {r['trace']})\n")
    print(f"per PPO update: wall {r['wall_s'] * 1e3:.1f} ms, device busy {r['busy_s'] * 1e3:.1f} ms "
          f"(idle {idle:.0%}), {r['events']:.0f} op events ({r['events'] / r['env_steps_per_rollout']:.1f} per "
          f"env step of a rollout)\n")
    print("| op kind | ms / update (self) | share |\n|---|---|---|")
    total = sum(r["by_kind"].values()) or 1.0
    for k, t in sorted(r["by_kind"].items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {t * 1e3:.2f} | {t / total:.1%} |")
    print("\n| part | op events / update | per step of its loop | ms / update (self) |\n|---|---|---|---|")
    for part, (n, t) in sorted(r["parts"].items(), key=lambda kv: -kv[1][0]):
        steps = r["loop_steps"]["PPO" if part.startswith("PPO") else "rollout"]
        print(f"| {part} | {n:.0f} | {n / steps:.1f} | {t * 1e3:.2f} |")
    print("\n| top op | ms / update (self) | calls / update |\n|---|---|---|")
    for name, t, n in r["top"]:
        print(f"| `{name}` | {t * 1e3:.3f} | {n:.0f} |")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="dr")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--scan-unroll", type=int, default=0, help="0: the backend's default")
    p.add_argument("--chunk", type=int, default=2, help="PPO updates per traced call")
    p.add_argument("--repeats", type=int, default=2, help="traced calls")
    p.add_argument("--trace-dir", default="runs/profile")
    p.add_argument("--tiny", action="store_true", help="toy sizes: checks the script runs (CPU)")
    a = p.parse_args(argv)
    r = profile(a.preset, a.seeds, a.scan_unroll, a.chunk, a.repeats, TINY if a.tiny else {}, a.trace_dir)
    report(r)
    return r


if __name__ == "__main__":
    main()
