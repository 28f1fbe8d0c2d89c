"""XLand-MiniGrid's benchmark rulesets, generated here: no hub download, no pickle.

A *ruleset* is an XLand task: a goal (what the agent must make true: hold a ball, put a key next
to a star, ...), production rules (a key next to a star becomes a hex, ...) and the objects the
room starts with. xminigrid's benchmarks (`trivial`, `small`, `medium`, `high`) are rulesets
sampled once by the authors' script (dunnolab/xland-minigrid `scripts/ruleset_generator.py`,
arguments in `scripts/generate_benchmarks.sh`) and served from a hub as bz2 pickles of jax arrays,
which no machine of ours can reach and which do not load on current jax. This module is our own
generator: it makes the same draws from Python's `random.Random(seed)` in the same order, so it
writes the authors' arrays for a given seed and configuration (a test compares them with rows their
script wrote, `tests/data/reference/xland_rulesets.*`), and stores them as a plain `.npz`.

How a ruleset is drawn (Appendix A.2 of "Human-timescale adaptation in an open-ended task space",
as the authors' script implements it):
1. a goal, uniform over 11 kinds (agent holds a tile; agent next to a tile, any side or one of 4;
   tile next to a tile, any side or one of 4), its tiles uniform over the allowed (tile, colour)s;
2. `chain_depth` levels of a binary tree of rules backwards from the goal: every tile the level
   above needs is produced by a new rule (or, with probability `prune_prob`, pruned: the room starts
   with it); the last level's inputs are the room's initial objects. Rules never reuse a tile;
3. `num_distractor_objects` extra objects, and up to `num_distractor_rules` dead-end rules
   (uniform count when `sample_distractor_rules`), whose inputs the room also holds.

Candidate lists are Python sets turned into lists, as in the authors' script: their order (hence
which tile a draw picks) is CPython's set order of `(tile, colour)` int tuples, stable across
CPython 3.8+ (tuple hashing changed in 3.8).

Versions. The authors' benchmarks exist in two samplings under one name:
- `v2` (March 2024; SFL and NCC evaluate on it): rejection of duplicate rulesets was written
  inverted (`while encode(r) not in seen`): on a collision the script draws until it meets an
  already-seen ruleset again, and keeps that duplicate. Reproduced here as written.
- `v3` (December 2025, xminigrid 0.9.3 on PyPI): duplicates rejected (`while encode(r) in seen`),
  and `trivial` shrank to the 21,000 its goal space allows.
"""

from __future__ import annotations

import dataclasses
import random
from itertools import product

import numpy as np

# xminigrid's tile and colour ids (core/constants.py).
BALL, SQUARE, PYRAMID, GOAL, KEY, HEX, STAR, FLOOR = 3, 4, 5, 6, 7, 11, 12, 1
RED, GREEN, BLUE, PURPLE, YELLOW, GREY, BLACK, ORANGE, WHITE, BROWN, PINK = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
GOAL_ENCODING = 5   # kind id + up to two (tile, colour) pairs
RULE_ENCODING = 7   # kind id + up to two input tiles + the produced tile

_COLOURS = (RED, GREEN, BLUE, PURPLE, YELLOW, GREY, WHITE, BROWN, PINK, ORANGE)
_PICKABLE = (BALL, SQUARE, PYRAMID, KEY, STAR, HEX)
NEAR_LHS = list(product(_PICKABLE + (GOAL,), _COLOURS))   # the first tile of a "near": goal tiles too
PICKABLE = list(product(_PICKABLE, _COLOURS))              # what can be held, or be the second tile
PRODUCED = PICKABLE + [(FLOOR, BLACK)]                     # floor: a rule that makes its inputs vanish

# The 11 kinds in the authors' draw order, as xminigrid's encoding ids (core/goals.py, core/rules.py):
# agent holds; agent near (any, up, down, left, right); tile near (any, up, down, left, right).
GOAL_IDS = (1, 3, 11, 13, 14, 12, 4, 7, 9, 10, 8)
RULE_IDS = (1, 2, 8, 10, 11, 9, 3, 4, 6, 7, 5)


@dataclasses.dataclass(frozen=True)
class GenerationConfig:
    """The authors' generator arguments (`scripts/ruleset_generator.py`)."""

    chain_depth: int
    num_distractor_rules: int = 0
    num_distractor_objects: int = 0
    sample_depth: bool = False
    sample_distractor_rules: bool = False
    prune_chain: bool = False
    prune_prob: float = 0.5


# `scripts/generate_benchmarks.sh`, the same for v2 and v3 (seed 42 for every benchmark).
KINDS = {
    "trivial": GenerationConfig(chain_depth=0, num_distractor_objects=3),
    "small": GenerationConfig(chain_depth=1, num_distractor_rules=2, num_distractor_objects=2,
                              sample_distractor_rules=True, prune_chain=True, prune_prob=0.3),
    "medium": GenerationConfig(chain_depth=2, num_distractor_rules=3, num_distractor_objects=2,
                               sample_distractor_rules=True, prune_chain=True, prune_prob=0.1),
    "high": GenerationConfig(chain_depth=3, num_distractor_rules=4, num_distractor_objects=1,
                             sample_distractor_rules=True, prune_chain=True, prune_prob=0.1),
}
SEED = 42
VERSIONS = ("v2", "v3")
BENCHMARKS = {
    "v2": {"trivial-1m": ("trivial", 1_000_000), "small-1m": ("small", 1_000_000), "medium-1m": ("medium", 1_000_000),
           "medium-3m": ("medium", 3_000_000), "high-1m": ("high", 1_000_000), "high-3m": ("high", 3_000_000)},
    "v3": {"trivial-21k": ("trivial", 21_000), "small-1m": ("small", 1_000_000), "medium-1m": ("medium", 1_000_000),
           "medium-3m": ("medium", 3_000_000), "high-1m": ("high", 1_000_000), "high-3m": ("high", 3_000_000)},
}
"""`{version: {name: (kind, count)}}`: xminigrid's names (`benchmarks.py: NAME2HFFILENAME`) per sampling."""


def check_benchmark(name: str, version: str) -> tuple[GenerationConfig, int]:
    """`(config, count)` of benchmark `name` in `version`, or a `ValueError` naming the bad one."""
    if version not in BENCHMARKS:
        raise ValueError(f"unknown XLand benchmark version {version!r}; known: {', '.join(VERSIONS)} "
                         f"(v2: the March 2024 sampling SFL and NCC used; v3: xminigrid 0.9.3's)")
    if name not in BENCHMARKS[version]:
        raise ValueError(f"unknown XLand benchmark {name!r} in {version}; known: {', '.join(BENCHMARKS[version])}")
    kind, count = BENCHMARKS[version][name]
    return KINDS[kind], count


# ------------------------------------------------------------------------------ one ruleset


def _unused(tiles: list, used) -> list:
    """The candidates of a draw: `tiles` less `used`, in CPython's set order (the authors' `diff`)."""
    return list(set(tiles) - set(used))


def _goal(rng: random.Random) -> tuple[list[int], tuple]:
    """A goal's encoding and its tiles."""
    kind = rng.randint(0, 10)
    if kind == 0:
        tiles = (rng.choice(PICKABLE),)
    elif kind <= 5:
        tiles = (rng.choice(NEAR_LHS),)
    else:
        tiles = (rng.choice(NEAR_LHS), rng.choice(PICKABLE))
    return [GOAL_IDS[kind], *(v for tile in tiles for v in tile)], tiles


def _rule(rng: random.Random, produced: tuple, used) -> tuple[list[int], tuple]:
    """A rule producing `produced` from tiles not in `used`: its encoding and its input tiles."""
    kind = rng.randint(0, 10)
    if kind <= 5:
        tiles = (rng.choice(_unused(PICKABLE, used)),)
    else:
        tiles = (rng.choice(_unused(NEAR_LHS, used)), rng.choice(_unused(PICKABLE, used)))
    return [RULE_IDS[kind], *(v for tile in tiles for v in tile), *produced], tiles


def sample_ruleset(rng: random.Random, config: GenerationConfig) -> tuple[list[int], list[list[int]], list[tuple]]:
    """One ruleset: `(goal encoding, rule encodings, initial tiles)`, unpadded (an empty rule is all zeros)."""
    goal, goal_tiles = _goal(rng)
    used, chain = list(goal_tiles), list(goal_tiles)
    rules, initial = [], []
    depth = rng.randint(0, config.chain_depth) if config.sample_depth else config.chain_depth
    if depth == 0:
        initial.extend(goal_tiles)
        rules.append([0] * RULE_ENCODING)
    for level in range(depth):
        below = []
        while chain:
            produced = chain.pop()
            if config.prune_chain and rng.random() < config.prune_prob:
                initial.append(produced)
                continue
            rule, inputs = _rule(rng, produced, used)
            used.extend(inputs)
            below.extend(inputs)
            rules.append(rule)
            if level == depth - 1:
                initial.extend(inputs)
        chain = below
    initial.extend(rng.choices(_unused(NEAR_LHS, used), k=config.num_distractor_objects))
    n_distractors = config.num_distractor_rules
    if config.sample_distractor_rules:
        n_distractors = rng.randint(0, n_distractors)
    for _ in range(n_distractors):
        rule, inputs = _rule(rng, rng.choice(_unused(PRODUCED, used)), ())
        rules.append(rule)
        initial.extend(inputs)
    if not rules:
        rules.append([0] * RULE_ENCODING)
    return _padded(goal, GOAL_ENCODING), [_padded(r, RULE_ENCODING) for r in rules], initial


def _padded(encoding: list[int], length: int) -> list[int]:
    return encoding + [0] * (length - len(encoding))


# --------------------------------------------------------------------------- a benchmark


def stream(config: GenerationConfig, version: str = "v3", seed: int = SEED):
    """The rulesets of a benchmark in order, endlessly: row `i` of every benchmark of `config` and `seed` is the
    `i`-th (a prefix of a benchmark is the benchmark generated shorter). `version` picks the duplicate handling
    (module docstring); duplicates are told apart by the goal and rules' bytes."""
    if version not in VERSIONS:
        raise ValueError(f"unknown XLand benchmark version {version!r}; known: {', '.join(VERSIONS)}")
    rng, seen = random.Random(seed), set()
    while True:
        ruleset = sample_ruleset(rng, config)
        if _key(ruleset) in seen:
            keep_drawing = (lambda r: _key(r) not in seen) if version == "v2" else (lambda r: _key(r) in seen)
            while keep_drawing(ruleset):
                ruleset = sample_ruleset(rng, config)
        seen.add(_key(ruleset))
        yield ruleset


def generate(config: GenerationConfig, count: int, version: str = "v3", seed: int = SEED,
             keep=None) -> dict[str, np.ndarray]:
    """The first `count` rulesets of `stream` (or only rows `keep`, sorted indices below `count`, in that order) as the
    authors' script writes them: `goals` uint8[N, 5], `rules` uint8[N, R, 7] and `init_tiles` uint8[N, T, 2]
    (zero-padded to the largest kept), `num_rules` uint8[N, 1] (the non-empty rules)."""
    rows = np.arange(int(count)) if keep is None else np.asarray(keep, np.int64)
    if rows.size and (np.any(np.diff(rows) < 0) or rows[0] < 0 or rows[-1] >= count):
        raise ValueError(f"keep must be sorted indices in [0, {count}), got {rows[:5]}...")
    depth = 2 ** (config.chain_depth + 1)   # a bound on the chain's rules and initial tiles
    goals = np.zeros((rows.size, GOAL_ENCODING), np.uint8)
    rules = np.zeros((rows.size, depth + config.num_distractor_rules + 1, RULE_ENCODING), np.uint8)
    tiles = np.zeros((rows.size, depth + config.num_distractor_objects + 2 * config.num_distractor_rules + 2, 2),
                     np.uint8)
    n_rules, n_tiles, out = 1, 1, 0
    for i, (goal, rule_rows, initial) in enumerate(stream(config, version, seed)):
        if out == rows.size:
            break
        if i != rows[out]:
            continue
        goals[out] = goal
        rules[out, :len(rule_rows)] = rule_rows
        tiles[out, :len(initial)] = initial if initial else np.zeros((0, 2))
        n_rules, n_tiles = max(n_rules, len(rule_rows)), max(n_tiles, len(initial))
        out += 1
    return {"goals": goals, "rules": rules[:, :n_rules], "init_tiles": tiles[:, :n_tiles],
            "num_rules": (rules[:, :n_rules, 0] != 0).sum(1, keepdims=True).astype(np.uint8)}


def _key(ruleset) -> bytes:
    """What makes two rulesets duplicates: the goal and the rules, in order (not the initial tiles)."""
    goal, rules, _ = ruleset
    return bytes(goal) + b"".join(bytes(rule) for rule in rules)
