"""Learning parity: does our student learn like the reference implementations?

Trains a preset (default `dr`) for `--updates` rollout cycles (`--budget cycles`: one row per
cycle, the release driver's unit; for DR a cycle is an update) with `--seeds` seeds vmapped in one
program (the way `train.py` trains several seeds: `lax.map` init, `vmap` step) and records,
per update and per seed, the sum of the returns, the number solved and the count of the
training episodes that ended in that update. It then aggregates per `--window` updates:
per seed the mean return and solved rate of the training episodes that ended in the window
(window sums over window counts, so every episode weighs the same), then across seeds the
mean and a Student-t 95% confidence interval (`minimax.core.stats.mean_ci`); reference logs
given with `--reference NAME=PATH` are aggregated the same way and shown side by side.

    python benchmarks/learning_parity.py --out runs/parity-dr                  # 5 seeds x 400 updates
    python benchmarks/learning_parity.py --out runs/parity-dr --resume         # continue a killed run
    python benchmarks/learning_parity.py --out runs/parity-dr --report-only \\
        --reference jaxued=/path/to/jaxued_csvs/ --reference minimax-ref=ref.jsonl
    python benchmarks/learning_parity.py --preset plr --updates 3 --seeds 2 --chunk 1 --out /tmp/p \\
        --set num_envs=4 num_steps=16 recurrent_size=16 buffer_size=16     # a smoke test

Outputs under `--out`:
  ours.csv     source,update,seed,return_sum,solved_sum,episodes: one row per update and seed,
               appended after every chunk (partial results survive a kill);
  ours_curriculum.jsonl  (PLR family) one line per cycle and seed: every group's, the buffer's and the
               level statistics of the cycle, read by benchmarks/curriculum_parity.py;
  run.json     the resolved config, seeds, machine, and the measured seconds per chunk;
  checkpoints/ the whole vmapped run state after every `--checkpoint-every` chunks (`--resume`);
  parity.md    the window table (mean +- 95% CI half-width, seed counts), machine and jax version;
  parity.png   return and solved-rate panels vs update: mean line and CI band per source,
               one thin line per seed.

Reference logs (`--reference NAME=PATH`; PATH is a file, a directory of *.csv / *.jsonl
files, or a glob; several files are merged, e.g. one per seed) come in one of three formats:
  * per-update CSV, the format of ours.csv: columns update, seed, return_sum, solved_sum,
    episodes (a `source` column, if any, is ignored: NAME names the source);
  * JSONL with the same fields, one object per line;
  * a minimax run's `metrics.jsonl` (`train.py`, `python -m minimax.cli.reproduce`): its per-seed
    rows (every `--log-every` updates: `train/return`, `train/solved_rate`, `episodes`) become
    chunk sums, so a window must be a multiple of the run's `--log-every`;
  * per-window CSV: columns update, seed, return, solved, where `update` is the last update
    of a window of `--window` updates (a multiple of it) and return / solved are that seed's
    mean over the training episodes that ended in the window (used as they are).
  * (PLR family) per-cycle lines: ours (`ours_curriculum.jsonl`), the release driver's
    (`benchmarks/reference/release_plr_driver.py`) raw or converted (`curriculum_parity.py`); with
    `--group new|replay|mutated` only the episodes on that group's levels count (ours then read from
    `ours_curriculum.jsonl`; the report is `parity_<group>.md` / `.png`): the new levels' episodes are
    the policy on fresh levels of the generator, the replayed ones the curriculum's.
A log file may have a timing sidecar, the same path with `.json` (`{"chunks": [{"updates": n,
"seconds": s, "cpu_seconds": c, "compile": bool}]}`); its median seconds per update (chunks
marked `compile` left out) are listed in parity.md.

A later row for the same (seed, update) replaces an earlier one. A seed enters a window only
if it has all `--window` updates of it (per-update formats), so a run still in progress
contributes its complete windows only; a seed with no episode ending in a window is left out
of that window (the `n` columns count the seeds used).

"Episodes that ended in an update" counts every ending (goal or time limit); "solved" is the
episode ending at the goal. The return of an episode that spans an update boundary counts in
the update where it ends.

Cost on the 2-core CPU machine (jax 0.10.2): the `dr` preset with 5 vmapped seeds takes about
19-20 CPU seconds per update (one seed: 2.6-3.0; vmapping costs ~1.4x per seed-update here,
see benchmarks/RESULTS.md), so 400 updates take roughly an hour when the machine is quiet.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import glob
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from machine import cpu_model

FIELDS = ("source", "update", "seed", "return_sum", "solved_sum", "episodes")
METRIC_KEYS = ("episode_return_sum", "episode_solved_sum", "episodes")  # what a runner step reports
RUN_INFO_KEYS_FREE = ("num_updates",)  # config entries a resumed run may change


class ParityError(Exception):
    """A user-facing problem (printed as one `error:` line, exit code 2)."""


# --------------------------------------------------------------------------- machine


def cpu_name() -> str:
    """The CPU model and the number of logical CPUs this process may use."""
    model = cpu_model()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    return f"{model} ({cores} logical CPUs)"


def jax_versions() -> str:
    import jax  # noqa: PLC0415
    import jaxlib  # noqa: PLC0415

    return f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, backend {jax.default_backend()}"


# --------------------------------------------------------------------------- config


def build_config(preset: str, updates: int, seeds: list[int], sets: list[str]):
    """The preset with `num_updates` = `updates`, the seeds, and `--set key=value` overrides."""
    from minimax.config import ConfigError, TrainConfig  # noqa: PLC0415
    from minimax.config import PRESETS  # noqa: PLC0415
    from minimax.core.options import parse_assignments  # noqa: PLC0415

    if preset not in PRESETS:
        raise ParityError(f"--preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    base = PRESETS[preset]
    try:
        overrides = parse_assignments(sets, TrainConfig.option_types(), {
            k: "this script's --seeds / --first-seed / --updates / --preset"
            for k in ("seed", "seeds", "num_seeds", "num_updates", "preset")})
    except ConfigError as e:
        raise ParityError(str(e)) from None
    try:
        cfg = base.replace(num_updates=updates, seeds=",".join(map(str, seeds)), num_seeds=1,
                           progress=False, eval_every=0, **overrides)
    except ConfigError as e:
        raise ParityError(str(e)) from None
    return cfg, overrides


# --------------------------------------------------------------------------- training


def _write_rows(path: Path, rows: list[tuple]) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(FIELDS)
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())


def _truncate_csv(path: Path, last_update: int) -> None:
    """Keep the rows of updates <= `last_update` (those a resumed run does not redo)."""
    if not path.exists():
        return
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r["update"]) <= last_update]
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


CURRICULUM_PREFIXES = ("new/", "replay/", "mutated/", "buffer/", "replay_fraction", "gradient_updates", "episode")


def _write_curriculum(path: Path, metrics: dict, update: int, seeds: list[int], length: int) -> None:
    """The PLR family's per-cycle statistics, one JSON line per cycle and seed (the input of
    `benchmarks/curriculum_parity.py`): per group of levels played (new / replay / mutated) the
    sums and counts of returns, solves, walls, solvable levels and shortest paths; the buffer's
    size, scores, staleness and mutations; whether the cycle replayed and trained. Nothing for DR."""
    keys = [k for k in metrics if k.startswith(CURRICULUM_PREFIXES)]
    if not any(k.startswith("buffer/") for k in keys):
        return
    m = {k: np.asarray(metrics[k], np.float64).reshape(len(seeds), length) for k in keys}
    with path.open("a") as f:
        for t in range(length):
            for i, s in enumerate(seeds):
                f.write(json.dumps({"update": update + t + 1, "seed": s,
                                    **{k: float(v[i, t]) for k, v in m.items()}}) + "\n")


def _truncate_jsonl(path: Path, last_update: int) -> None:
    if not path.exists():
        return
    lines = [ln for ln in path.read_text().splitlines() if ln.strip() and json.loads(ln)["update"] <= last_update]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(ln + "\n" for ln in lines))
    tmp.replace(path)


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def train(args, out: Path) -> None:
    """Train (or resume) and append one CSV row per update and seed after every chunk."""
    import jax  # noqa: PLC0415

    from minimax.training.checkpoint import Checkpointer  # noqa: PLC0415
    from minimax.training.devices import distribute_init, distribute_step, to_host  # noqa: PLC0415
    from minimax.training.builder import build_runner, device_layout  # noqa: PLC0415
    from minimax.config import TrainConfig  # noqa: PLC0415
    from minimax.training.loop import seed_keys  # noqa: PLC0415
    from minimax.training.budget import make_chunk  # noqa: PLC0415

    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    cfg, overrides = build_config(args.preset, args.updates, seeds, args.set)
    info_path, csv_path = out / "run.json", out / "ours.csv"
    config_dict = cfg.options()  # flat: compared option by option on --resume

    if args.resume:
        if not info_path.exists():
            raise ParityError(f"--resume: no run to resume in {out} (no run.json)")
        info = json.loads(info_path.read_text())
        keep_schedule = cfg.ppo.anneal_lr  # the learning-rate schedule depends on num_updates
        # Compared with the environment's defaults filled in on both sides, so a run saved before
        # those defaults moved into the environments (250 steps, 'validation') resumes.
        config_dict = cfg.effective_options()
        saved = {k: v for k, v in info["config"].items() if v is not None and k in config_dict}
        info = {**info, "config": {**config_dict, **TrainConfig.from_options(**saved).effective_options()}}
        changed = [k for k in config_dict if config_dict[k] != info["config"].get(k)
                   and not (k in RUN_INFO_KEYS_FREE and not keep_schedule)]
        if changed or info["chunk"] != args.chunk:
            what = ", ".join(f"{k} (saved {info['config'].get(k)!r}, now {config_dict[k]!r})" for k in changed)
            if info["chunk"] != args.chunk:
                what += f"{', ' if what else ''}--chunk (saved {info['chunk']}, now {args.chunk})"
            raise ParityError(f"--resume must train what the saved run trains; these differ: {what} "
                              f"(pass the same --preset / --seeds / --set options)")
    else:
        if csv_path.exists() and not args.overwrite:
            raise ParityError(f"{csv_path} exists: pass --resume to continue that run, --overwrite to start over, "
                              f"or --report-only to rebuild the report")
        if args.overwrite:
            import shutil  # noqa: PLC0415

            csv_path.unlink(missing_ok=True)
            (out / "ours_curriculum.jsonl").unlink(missing_ok=True)
            shutil.rmtree(out / "checkpoints", ignore_errors=True)
        info = {"preset": args.preset, "seeds": seeds, "overrides": overrides, "chunk": args.chunk,
                "config": config_dict, "cpu": cpu_name(), "jax": jax_versions(), "chunks": [],
                "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])}
    info["updates"] = args.updates
    info["config"] = config_dict

    layout = device_layout(cfg)
    runner = build_runner(cfg, layout.shard)
    init_keys, _ = seed_keys(layout)
    init = jax.jit(distribute_init(runner, layout))
    checkpoints = Checkpointer(out / "checkpoints", keep=2)
    update = 0
    if args.resume and checkpoints.latest_step() is not None:
        state, meta = checkpoints.restore(jax.eval_shape(init, init_keys))
        update = int(meta["update"])
        info["chunks"] = [c for c in info["chunks"] if c["end"] <= update]
        print(f"resumed at update {update} from {out / 'checkpoints'}", flush=True)
    else:
        if args.resume:
            print(f"--resume: no checkpoint in {out / 'checkpoints'} yet; starting from update 0", flush=True)
            info["chunks"] = []
        t0 = time.perf_counter()
        state = init(init_keys)
        jax.block_until_ready(state)
        print(f"initialised {len(seeds)} seed(s) in {time.perf_counter() - t0:.1f}s", flush=True)
    _truncate_csv(csv_path, update)
    _truncate_jsonl(out / "ours_curriculum.jsonl", update)
    _write_json(info_path, info)

    programs: dict[int, object] = {}

    def program(length: int):
        if length not in programs:
            t0 = time.perf_counter()
            # One row per rollout cycle, as the release's driver logs its ticks: the cycle budget.
            fn = distribute_step(make_chunk(runner, length, "cycles"), runner, layout)
            programs[length] = jax.jit(fn, donate_argnums=0).lower(state).compile()
            seconds = time.perf_counter() - t0
            info.setdefault("compile_s", {})[str(length)] = seconds
            print(f"compiled a chunk of {length} update(s) in {seconds:.1f}s", flush=True)
        return programs[length]

    n_seeds = len(seeds)
    chunks_done, run_seconds, done_at_start = 0, 0.0, update
    while update < args.updates:
        length = min(args.chunk, args.updates - update)
        run = program(length)
        t0, c0 = time.perf_counter(), time.process_time()
        state, all_metrics = run(state)
        metrics = to_host({k: all_metrics[k] for k in METRIC_KEYS})
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
        _write_curriculum(out / "ours_curriculum.jsonl", to_host(all_metrics), update, seeds, length)
        # [seeds, length] (a single seed has no seed axis)
        m = {k: np.asarray(v, np.float64).reshape(n_seeds, length) for k, v in metrics.items()}
        rows = []
        for t in range(length):
            for i, s in enumerate(seeds):
                rows.append(("ours", update + t + 1, s, repr(float(m["episode_return_sum"][i, t])),
                             int(m["episode_solved_sum"][i, t]), int(m["episodes"][i, t])))
        _write_rows(csv_path, rows)
        update += length
        chunks_done += 1
        info["chunks"].append({"end": update, "updates": length, "seconds": seconds, "cpu_seconds": cpu_seconds})
        if args.checkpoint_every and (chunks_done % args.checkpoint_every == 0 or update >= args.updates):
            checkpoints.save(update, state, {"update": update})
        _write_json(info_path, info)
        episodes = m["episodes"].sum()
        ret = m["episode_return_sum"].sum() / episodes if episodes else float("nan")
        solved = m["episode_solved_sum"].sum() / episodes if episodes else float("nan")
        run_seconds += seconds
        eta = run_seconds / (update - done_at_start) * (args.updates - update)
        print(f"update {update}/{args.updates}: {seconds:.1f}s for {length} update(s) = "
              f"{seconds / length:.2f} s/update ({seconds / length / n_seeds:.2f} s/update/seed, "
              f"{cpu_seconds / length:.2f} CPU s/update); "
              f"chunk return {ret:.3f}, solved {solved:.3f} over {int(episodes)} episodes; ETA {eta / 60:.1f} min",
              flush=True)


# --------------------------------------------------------------------------- reading logs


@dataclasses.dataclass
class Source:
    """One implementation's log: per-update sums, or per-window values, by seed."""

    name: str
    updates: dict = dataclasses.field(default_factory=dict)   # seed -> {update: (return_sum, solved_sum, episodes)}
    windows: dict = dataclasses.field(default_factory=dict)   # seed -> {window end: (return, solved)}
    chunks: dict = dataclasses.field(default_factory=dict)    # seed -> {chunk end: (return_sum, solved_sum, episodes)}
    timings: list = dataclasses.field(default_factory=list)   # per file: (s/update, CPU s/update or nan)


def _timing(path: Path):
    """`(median s/update, median CPU s/update)` from a sidecar `<log>.json` holding
    `chunks: [{updates, seconds, cpu_seconds?, compile?}]` (chunks marked `compile` are left
    out); None without one."""
    side = path.with_suffix(".json")
    try:
        chunks = [c for c in json.loads(side.read_text()).get("chunks", []) if not c.get("compile")]
    except (OSError, ValueError, AttributeError):
        return None
    if not chunks:
        return None
    wall = float(np.median([c["seconds"] / c["updates"] for c in chunks]))
    cpu = [c["cpu_seconds"] / c["updates"] for c in chunks if "cpu_seconds" in c]
    return wall, float(np.median(cpu)) if cpu else math.nan


def _files(path: str) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        files = sorted([*p.glob("*.csv"), *p.glob("*.jsonl")])
    elif any(c in path for c in "*?["):
        files = sorted(Path(f) for f in glob.glob(path))
    else:
        files = [p] if p.exists() else []
    if not files:
        raise ParityError(f"no log found at {path} (a CSV / JSONL file, a directory of them, or a glob)")
    return files


def _records(path: Path) -> list[dict]:
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        with path.open(newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, json.JSONDecodeError, csv.Error) as e:
        raise ParityError(f"cannot read {path}: {e}") from None


ALL_EPISODES = (("episode_return_sum", "episode_solved_sum", "episodes"),  # ours_curriculum.jsonl
                ("ep_return_sum", "ep_n_solved", "ep_n"),  # the release's per-cycle driver, raw
                ("release/ep_return_sum", "release/ep_n_solved", "release/ep_n"))  # the same, converted


def cycle_sums(r: dict, group: str):
    """`(return_sum, solved_sum, episodes)` of a PLR-family per-cycle line: of the episodes that ended on `group`'s
    levels (`new`, `replay`, `mutated`), or on any (`all`). Lines: ours (`ours_curriculum.jsonl`), the release
    driver's raw ones (`benchmarks/reference/release_plr_driver.py`) and their converted form
    (`curriculum_parity.py: from_release_driver`). A cycle without that group's levels counts zero episodes;
    None: no such line."""
    if group == "all":
        fields = next((f for f in ALL_EPISODES if f[2] in r), None)
        if fields is not None:
            return tuple(float(r[k]) for k in fields)
        groups = [cycle_sums(r, g) for g in ("new", "replay", "mutated")]  # converted lines keep the groups only
        return None if any(g is None for g in groups) else tuple(sum(g[i] for g in groups) for i in range(3))
    if "ep_n" in r:
        n = r.get(f"ep_{group}_n") or 0
        return (float(r[f"ep_{group}_return_sum"]), float(r[f"ep_{group}_n_solved"]), float(n)) if n else (0.0, 0.0, 0.0)
    if not any(k.startswith(("new/", "replay/", "mutated/")) for k in r):
        return None
    n = r.get(f"{group}/return_count") or 0
    return (float(r[f"{group}/return_sum"]), float(r[f"{group}/solved_rate_sum"]), float(n)) if n else (0.0, 0.0, 0.0)


def read_source(name: str, path: str, window: int, group: str = "all") -> Source:
    """One log's rows (`group`: PLR-family per-cycle lines' episodes on that group's levels only; `cycle_sums`)."""
    src = Source(name)
    for file in _files(path):
        records = _records(file)
        timing = _timing(file) if file.suffix != ".json" else None
        if timing is not None:
            src.timings.append(timing)
        for n, r in enumerate(records):
            try:
                if r.get("seed") == "mean":
                    continue  # a multi-seed minimax run's across-seed row
                update, seed = int(float(r["update"])), int(float(r["seed"]))
                sums = cycle_sums(r, group) if group != "all" or "return_sum" not in r else None
                if sums is not None:
                    src.updates.setdefault(seed, {})[update] = sums
                elif group != "all":
                    raise KeyError(f"{group}/return_sum (a PLR-family per-cycle line, --group {group})")
                elif {"train/return", "train/solved_rate", "episodes"} <= r.keys():
                    eps = float(r["episodes"])
                    src.chunks.setdefault(seed, {})[update] = (
                        float(r["train/return"]) * eps, float(r["train/solved_rate"]) * eps, eps)
                elif {"return_sum", "solved_sum", "episodes"} <= r.keys():
                    src.updates.setdefault(seed, {})[update] = (
                        float(r["return_sum"]), float(r["solved_sum"]), float(r["episodes"]))
                elif {"return", "solved"} <= r.keys():
                    if update % window:
                        raise ParityError(f"{file}: per-window row with update {update}, not a multiple of "
                                          f"--window {window}")
                    src.windows.setdefault(seed, {})[update] = (float(r["return"]), float(r["solved"]))
                else:
                    raise KeyError("return_sum/solved_sum/episodes or return/solved")
            except (KeyError, ValueError, TypeError) as e:
                raise ParityError(f"{file}: record {n + 1} lacks a field or has a bad value ({e}); expected "
                                  f"update, seed, return_sum, solved_sum, episodes (or update, seed, return, "
                                  f"solved per window)") from None
    if not src.updates and not src.windows and not src.chunks:
        raise ParityError(f"{name}: no rows in {path}")
    return src


def seed_windows(src: Source, window: int) -> dict:
    """seed -> {window end: (return, solved)}: each seed's episode means over complete windows."""
    out = {s: dict(w) for s, w in src.windows.items()}
    for seed, chunks in src.chunks.items():
        ends = sorted(chunks)
        starts = dict(zip(ends, [0] + ends[:-1]))  # a chunk covers (previous end, end]
        for end in range(window, max(ends) + 1, window):
            inside = [u for u in ends if end - window < u <= end]
            if not inside or starts[inside[0]] != end - window or inside[-1] != end:
                continue  # chunks that do not tile the window
            r, s_, e = (sum(chunks[u][i] for u in inside) for i in range(3))
            if e > 0:
                out.setdefault(seed, {})[end] = (r / e, s_ / e)
    for seed, ups in src.updates.items():
        ends = range(window, max(ups) + 1, window)
        for end in ends:
            span = [ups.get(u) for u in range(end - window + 1, end + 1)]
            if any(v is None for v in span):
                continue  # incomplete window (a run in progress, or missing rows)
            r, s, e = (sum(v[i] for v in span) for i in range(3))
            if e > 0:
                out.setdefault(seed, {})[end] = (r / e, s / e)
    return out


def aggregate(per_seed: dict) -> dict:
    """{window end: {"return": (mean, lo, hi), "solved": (...), "n": seeds, "seeds": {seed: (r, s)}}}."""
    from minimax.core.stats import mean_ci  # noqa: PLC0415

    ends = sorted({e for w in per_seed.values() for e in w})
    out = {}
    for end in ends:
        values = {s: w[end] for s, w in per_seed.items() if end in w and all(map(math.isfinite, w[end]))}
        if not values:
            continue
        rets = [v[0] for v in values.values()]
        sols = [v[1] for v in values.values()]
        out[end] = {"return": mean_ci(rets), "solved": mean_ci(sols), "n": len(values), "seeds": values}
    return out


# --------------------------------------------------------------------------- report


def _fmt(ci) -> str:
    mean, lo, hi = ci
    if not math.isfinite(lo):
        return f"{mean:.3f}"
    return f"{mean:.3f} ± {(hi - lo) / 2:.3f}"


def _has_ci(ci) -> bool:
    return math.isfinite(ci[1]) and math.isfinite(ci[2])


def _overlap(a, b) -> bool:
    (_, alo, ahi), (_, blo, bhi) = a, b
    return alo <= bhi and blo <= ahi


def make_table(results: dict, window: int) -> str:
    names = list(results)
    ends = sorted({e for r in results.values() for e in r})
    head = ["window (updates)"]
    for n in names:
        head += [f"{n} return", f"{n} solved", f"{n} n"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for end in ends:
        cells = [f"{end - window + 1}-{end}"]
        for n in names:
            w = results[n].get(end)
            cells += ["–", "–", "0"] if w is None else [_fmt(w["return"]), _fmt(w["solved"]), str(w["n"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def differences(results: dict, base: str = "ours") -> list[str]:
    """Per reference: the windows where the 95% CIs of `base` and the reference do not overlap."""
    if base not in results:
        return []
    lines = []
    for name, res in results.items():
        if name == base:
            continue
        common = sorted(set(res) & set(results[base]))
        if not common:
            lines.append(f"- {name}: no window in common with {base}.")
            continue
        for metric in ("return", "solved"):
            both = [e for e in common if _has_ci(results[base][e][metric]) and _has_ci(res[e][metric])]
            if not both:
                lines.append(f"- {name} vs {base}, {metric}: no window with a CI on both sides (needs >= 2 seeds).")
                continue
            apart = [e for e in both if not _overlap(results[base][e][metric], res[e][metric])]
            where = f" (windows ending at {', '.join(map(str, apart))})" if apart else ""
            lines.append(f"- {name} vs {base}, {metric}: the 95% CIs are disjoint in {len(apart)} of "
                         f"{len(both)} windows{where}.")
    return lines


def plot(results: dict, window: int, path: Path) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, res) in enumerate(results.items()):
        color = colors[i % len(colors)]
        ends = sorted(res)
        if not ends:
            continue
        for ax, metric, k in ((axes[0], "return", 0), (axes[1], "solved", 1)):
            seeds = sorted({s for e in ends for s in res[e]["seeds"]})
            for s in seeds:
                xs = [e for e in ends if s in res[e]["seeds"]]
                ax.plot(xs, [res[e]["seeds"][s][k] for e in xs], color=color, lw=0.6, alpha=0.35)
            mean = np.array([res[e][metric][0] for e in ends])
            lo = np.array([res[e][metric][1] for e in ends])
            hi = np.array([res[e][metric][2] for e in ends])
            n_max = max(res[e]["n"] for e in ends)
            ax.plot(ends, mean, color=color, lw=2, marker="o", ms=3, label=f"{name} (n={n_max})")
            ok = np.isfinite(lo) & np.isfinite(hi)
            if ok.any():
                ax.fill_between(np.array(ends)[ok], lo[ok], hi[ok], color=color, alpha=0.2, lw=0)
    for ax, title in zip(axes, ("training episode return", "training episode solved rate")):
        ax.set_xlabel(f"update (end of a {window}-update window)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle("mean across seeds, 95% Student-t CI band; thin lines: seeds", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(args, out: Path) -> str:
    sources = []
    ours_csv = out / ("ours.csv" if args.group == "all" else "ours_curriculum.jsonl")
    if ours_csv.exists():
        sources.append(read_source("ours", str(ours_csv), args.window, args.group))
    for ref in args.reference:
        if "=" not in ref:
            raise ParityError(f"--reference expects NAME=PATH, got {ref!r}")
        name, path = ref.split("=", 1)
        if not name or name in [s.name for s in sources]:
            raise ParityError(f"--reference {ref}: the name must be new and non-empty")
        sources.append(read_source(name, path, args.window, args.group))
    if not sources:
        raise ParityError(f"nothing to report: no {ours_csv} and no --reference")
    # Windows up to --updates only (a longer reference run, e.g. a 1,600-update Table 2 run, is cut).
    results = {s.name: aggregate({seed: {end: v for end, v in w.items() if end <= args.updates}
                                  for seed, w in seed_windows(s, args.window).items()}) for s in sources}
    table = make_table(results, args.window)
    info = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}

    lines = ["# Learning parity", ""]
    if info:
        steady = [c["seconds"] / c["updates"] for c in info.get("chunks", [])]
        overrides = ", ".join(f"{k}={v}" for k, v in info.get("overrides", {}).items()) or "none"
        lines += [f"- ours: preset `{info['preset']}` (overrides: {overrides}), seeds {info['seeds']} vmapped in one "
                  f"program, {max([c['end'] for c in info.get('chunks', [])], default=0)} of {info['updates']} "
                  f"updates done, chunks of {info['chunk']} updates",
                  f"- machine: {info['cpu']}; {info['jax']}"]
        if steady:
            cpu = [c["cpu_seconds"] / c["updates"] for c in info["chunks"] if "cpu_seconds" in c]
            lines.append(f"- ours: {np.median(steady):.2f} s/update for the {len(info['seeds'])} seed(s) together "
                         f"(median over {len(steady)} chunks, compilation excluded; "
                         f"{np.median(steady) / len(info['seeds']):.2f} s per seed-update"
                         + (f"; {np.median(cpu):.2f} CPU s/update" if cpu else "") + ")")
        lines.append(f"- command: `{info.get('command', '')}`")
    else:
        lines += [f"- machine (report only): {cpu_name()}; {jax_versions()}"]
    lines += [f"- references: {', '.join(args.reference) if args.reference else 'none'}",
              f"- episodes: {'every training episode' if args.group == 'all' else f'those on {args.group} levels'}",
              f"- windows of {args.window} updates; per seed: training episodes that ended in the window "
              f"(return sum / episodes, solved / episodes); across seeds: mean ± half-width of the Student-t "
              f"95% CI; n: seeds with a complete window", "", table, ""]
    timed = [s for s in sources if s.timings and s.name != "ours"]
    if timed:
        lines += ["Speed of the references (from the timing sidecars `<log>.json`; one run per file, "
                  "compilation left out; seeds of a reference run one after another):", ""]
        for s in timed:
            wall = ", ".join(f"{w:.2f}" for w, _ in s.timings)
            cpu = ", ".join(f"{c:.2f}" for _, c in s.timings)
            lines.append(f"- {s.name}: s/update per run {wall}; CPU s/update {cpu}")
        lines.append("")
    diff = differences(results)
    if diff:
        lines += ["CI overlap (a rough check, not a test):", "", *diff, ""]
    text = "\n".join(lines)
    suffix = "" if args.group == "all" else f"_{args.group}"
    (out / f"parity{suffix}.md").write_text(text)
    plot(results, args.window, out / f"parity{suffix}.png")
    return table + ("\n\n" + "\n".join(diff) if diff else "")


# --------------------------------------------------------------------------- command line


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[1:]))
    p.add_argument("--preset", default="dr", help="preset to train (minimax.config.tree.PRESETS): dr, plr, ...")
    p.add_argument("--updates", type=int, default=400,
                   help="updates to train; with --report-only, the last update reported (default 400)")
    p.add_argument("--seeds", type=int, default=5, help="seeds, vmapped in one program (default 5)")
    p.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed .. first-seed + seeds - 1")
    p.add_argument("--window", type=int, default=50, help="updates per aggregation window (default 50)")
    p.add_argument("--chunk", type=int, default=10, help="updates per compiled call (progress printed per chunk)")
    p.add_argument("--checkpoint-every", type=int, default=1,
                   help="save the run state every this many chunks, for --resume (0 = only at the end)")
    p.add_argument("--out", default="runs/parity", help="output directory (default runs/parity)")
    p.add_argument("--set", action="append", nargs="+", default=[], metavar="KEY=VALUE",
                   help="override TrainConfig fields, e.g. --set num_envs=4 num_steps=16 (tiny smoke runs)")
    p.add_argument("--reference", action="append", default=[], metavar="NAME=PATH",
                   help="a reference log to compare (repeatable); formats above")
    p.add_argument("--group", choices=("all", "new", "replay", "mutated"), default="all",
                   help="PLR family: report the episodes on this group's levels only, from per-cycle lines (ours: "
                   "ours_curriculum.jsonl; the release driver's); default all, every training episode")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--overwrite", action="store_true", help="discard an existing run in --out")
    p.add_argument("--report-only", action="store_true", help="no training: rebuild parity.md / .png from the logs")
    args = p.parse_args(argv)
    args.set = [item for group in args.set for item in group]
    for name in ("updates", "seeds", "window", "chunk"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if args.checkpoint_every < 0:
        p.error("--checkpoint-every must be >= 0")
    if args.resume and args.overwrite:
        p.error("--resume and --overwrite exclude each other")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        if not args.report_only:
            train(args, out)
        print(report(args, out))
        suffix = "" if args.group == "all" else f"_{args.group}"
        print(f"\nwrote {out / f'parity{suffix}.md'} and {out / f'parity{suffix}.png'}")
    except ParityError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
