"""XLand benchmark files: the rulesets of `rulesets.py` generated once into a cache, loaded as numpy.

A benchmark file is an `.npz` of four uint8 arrays (`goals` [N, 5], `rules` [N, R, 7], `init_tiles` [N, T, 2],
`num_rules` [N, 1]), read with `allow_pickle=False`: never a pickle, never a download. Generated files live in
`$MINIMAX_XLAND_DIR` (default `~/.cache/minimax/xland`), named by benchmark, version and row count; a missing one
is generated (about 80 us per `high` ruleset here: 8 s per 100k, 4 minutes for 3M).

Padding. xminigrid places a room's objects, then the agent, on cells drawn for the T padded slots, so a ruleset
padded to another T starts the agent elsewhere. Rulesets keep the padding of the authors' whole file, which
their generator sets to the largest ruleset of all N rows: `PADDING`, measured by generating each whole
benchmark here (benchmarks/RESULTS.md), so a prefix of a benchmark pads like the whole.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from minimax.envs.xland import rulesets

FIELDS = {"goals": (rulesets.GOAL_ENCODING,), "rules": (None, rulesets.RULE_ENCODING), "init_tiles": (None, 2),
          "num_rules": (1,)}
PADDING = {("v2", "trivial-1m"): (1, 5), ("v2", "small-1m"): (4, 10), ("v2", "medium-1m"): (9, 16),
           ("v2", "medium-3m"): (9, 16), ("v2", "high-1m"): (18, 23), ("v2", "high-3m"): (18, 23),
           ("v3", "trivial-21k"): (1, 5), ("v3", "small-1m"): (4, 10), ("v3", "medium-1m"): (9, 16),
           ("v3", "medium-3m"): (9, 16), ("v3", "high-1m"): (18, 23), ("v3", "high-3m"): (18, 23)}
"""`{(version, name): (rules, tiles)}`: the whole file's padded shapes, measured by generating each whole benchmark
here (`benchmarks/RESULTS.md`, issue 73); v2's `high-3m` is also the padding of SFL's evaluation pickle."""


def cache_dir() -> Path:
    return Path(os.environ.get("MINIMAX_XLAND_DIR") or Path.home() / ".cache" / "minimax" / "xland")


def padded(arrays: dict, rules: int, tiles: int) -> dict:
    """`arrays` with rules padded to `rules` rows and initial tiles to `tiles` (zeros); never truncated."""
    have_rules, have_tiles = arrays["rules"].shape[1], arrays["init_tiles"].shape[1]
    if have_rules > rules or have_tiles > tiles:
        raise ValueError(f"rulesets of {have_rules} rules and {have_tiles} tiles do not fit a padding of "
                         f"({rules}, {tiles})")
    return {**arrays, "rules": np.pad(arrays["rules"], ((0, 0), (0, rules - have_rules), (0, 0))),
            "init_tiles": np.pad(arrays["init_tiles"], ((0, 0), (0, tiles - have_tiles), (0, 0)))}


def read(path) -> dict[str, np.ndarray]:
    """A benchmark file's arrays, or a `ValueError` saying why `path` is not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError) as err:
        raise ValueError(f"{path} is not an XLand ruleset file (an .npz of {', '.join(FIELDS)}): {err}") from None
    missing = [name for name in FIELDS if name not in arrays]
    if missing:
        raise ValueError(f"{path} is not an XLand ruleset file: it has no {', '.join(missing)} "
                         f"(it holds {', '.join(arrays) or 'nothing'})")
    n = len(arrays["goals"])
    for name, tail in FIELDS.items():
        a = arrays[name]
        if a.dtype != np.uint8 or a.ndim != 1 + len(tail) or len(a) != n or any(
                t is not None and s != t for s, t in zip(a.shape[1:], tail)):
            shape = "x".join("*" if t is None else str(t) for t in tail)
            raise ValueError(f"{path} is not an XLand ruleset file: {name} is {a.dtype}{list(a.shape)}, not uint8 "
                             f"[{n}, {shape}]")
    if n == 0:
        raise ValueError(f"{path} is not an XLand ruleset file: it holds no ruleset")
    return {name: arrays[name] for name in FIELDS}


def write(path, arrays: dict) -> None:
    """Write `arrays` as a benchmark file (atomically: a reader never sees half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial.npz")
    np.savez_compressed(partial, **{name: arrays[name] for name in FIELDS})
    os.replace(partial, path)


def _announce(what: str, path: Path) -> None:
    """Say on stderr that a long generation starts (a whole benchmark takes minutes), and where it goes."""
    print(f"generating {what} (once; about 80 us each: cached in {path})", file=sys.stderr, flush=True)


def load(name: str, version: str, count: int = 0) -> dict[str, np.ndarray]:
    """The first `count` rulesets (0: all) of benchmark `name` in `version`, padded as its whole file where
    `PADDING` knows it; generated into the cache on first use."""
    config, total = rulesets.check_benchmark(name, version)
    count = total if count <= 0 else min(int(count), total)
    path = cache_dir() / f"{name}_{version}_{count}.npz"
    if path.exists():
        arrays = read(path)
    else:
        if count >= 10_000:
            _announce(f"{count:,} rulesets of {name} ({version})", path)
        arrays = rulesets.generate(config, count, version)
        if (version, name) in PADDING:
            arrays = padded(arrays, *PADDING[(version, name)])
        write(path, arrays)
    return arrays


# ---------------------------------------------------------------------- SFL's evaluation set

SFL_DATA = Path(__file__).parent / "data" / "sfl_high3m_v2.npz"
"""What SFL's `xland/eval/xland_0_generate_eval_rulesets.py` and `xland_1_rollout_on_eval_rulesets.py` drew, under
the jax threefry of their time (`jax_threefry_partitionable` off, their jax's default; today's default draws
others, so the draws are stored; `draw_sfl` recomputes them where jax still offers the old mode):
- `rows` int32[10000]: the rows of `high-3m` (v2) they evaluate on, in order, duplicates included:
  `randint(k, (), 0, 3_000_000)` for each `k` of `split(key(0), 10_000)`;
- `keys` uint32[10000, 2]: the reset key of each (their seed-0 evaluation: `split(split(key(0))[1], 10_000)`)."""


def draw_sfl() -> dict[str, np.ndarray]:
    """SFL's draws, recomputed with jax's non-partitionable threefry (the stored data's provenance)."""
    import jax  # noqa: PLC0415

    with jax.threefry_partitionable(False):
        keys = jax.random.split(jax.random.key(0), 10_000)
        rows = jax.vmap(lambda k: jax.random.randint(k, (), 0, 3_000_000))(keys)
        reset = jax.random.split(jax.random.split(jax.random.key(0))[1], 10_000)
        return {"rows": np.asarray(rows, np.int32), "keys": np.asarray(jax.random.key_data(reset), np.uint32)}


def sfl_draws() -> dict[str, np.ndarray]:
    with np.load(SFL_DATA, allow_pickle=False) as data:
        return {"rows": data["rows"], "keys": data["keys"]}


def sfl_rulesets() -> dict[str, np.ndarray]:
    """SFL's 10,000 evaluation rulesets (the rows of their 10k pickle): `high-3m` v2 at the stored rows, padded as
    its whole file (18 rules, 23 tiles); generated into the cache on first use (3M rows' stream: minutes)."""
    path = cache_dir() / "sfl_high-3m_v2_10k.npz"
    if path.exists():
        return read(path)
    rows = sfl_draws()["rows"].astype(np.int64)
    unique, where = np.unique(rows, return_inverse=True)
    _announce("SFL's 10,000 evaluation rulesets from high-3m (v2)'s 3,000,000", path)
    config, total = rulesets.check_benchmark("high-3m", "v2")
    arrays = padded(rulesets.generate(config, total, "v2", keep=unique), *PADDING[("v2", "high-3m")])
    arrays = {name: a[where] for name, a in arrays.items()}
    write(path, arrays)
    return arrays
