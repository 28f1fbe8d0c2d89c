"""Kinetix levels: the generator, ACCEL's mutator, the held-out suites and per-level statistics.

- Generator: the authors' `sample_kinetix_level` for the run's size class with their default
  `UEDParams` (what their `train_level_mode: random` resets to), as a canonical level. Their PLR
  and SFL draw new levels through a no-op filter (`filter_levels`, `level_filter_n_steps` 64,
  `level_filter_sample_ratio` 2: of 2n sampled levels, n are kept, drawn without replacement with
  weight 0.001 for a level the no-op action solves within 64 steps and 1 otherwise); their DR does
  not. `--kinetix-filter-steps N` applies it per level: of 2 sampled levels, one is kept with those
  weights. That is the batch filter for a batch of one level; for a larger batch the authors' version
  rejects no-op-solvable levels more often (a batch has more unsolved levels to choose instead).
- Mutator `kinetix`: the authors' `make_mutate_env` (add a shape or a connected shape, swap roles,
  add or remove a thruster, toggle a fixture, resize, move or rotate a shape), `n_edits` times with
  their probabilities. Their ACCEL config edits 5 times.
- Held-out suites `s`, `m`, `l`: the hand-designed levels the wheel ships for each size class
  (`kinetix/levels/<size>/*.json`: 10, 24 and 40 levels, their `configs/eval/<size>.yaml` lists),
  loaded with the size class's static params by the authors' `load_evaluation_levels`, and `all`,
  the 74 together (their `configs/eval/eval_all.yaml`). A run evaluates on any suite whose levels fit
  its size class: smaller levels are padded into its slots at reset (`env.py: fit_level`), as the
  authors evaluate an L agent on S, M and L levels; results are reported per level and per size
  class (`evaluation/report.py`), with the suite mean over all its levels.
"""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

import jax
import jax.numpy as jnp

from minimax.envs.kinetix.engine import SIZES, EnvState, UEDParams, load_evaluation_levels, make_mutate_env, \
    sample_kinetix_level
from minimax.envs.kinetix.env import KinetixParams, action_nvec, canonical_level, size_of
from minimax.envs.registry import HeldOutLevel, check_n_edits

ALL = "all"
SUITES = (*SIZES, ALL)
NOOP_SOLVED_WEIGHT = 0.001  # the authors' weight of a level the no-op action solves
FILTER_SAMPLE_RATIO = 2     # levels sampled per kept level (their level_filter_sample_ratio)


def sample_level(key, params: KinetixParams) -> EnvState:
    """One level of the authors' random distribution for `params`' size class."""
    env, env_params, static = params.objects()
    return canonical_level(sample_kinetix_level(key, env.physics_engine, env_params, static, UEDParams()))


def noop_solves(level: EnvState, params: KinetixParams, n_steps: int) -> jax.Array:
    """Whether the all-zero action's episode from `level` ends solved within `n_steps` steps."""
    env, env_params, _ = params.objects()
    noop = jnp.zeros(len(action_nvec(params)), jnp.int32)

    def step(carry, _):
        scene, ended, solved = carry
        _, scene, reward, done, _ = env.step_env(jax.random.key(0), scene, noop, env_params)  # deterministic
        first = done & ~ended
        return (scene, ended | done, solved | (first & (reward > 0.5))), None

    (_, _, solved), _ = jax.lax.scan(step, (level, jnp.asarray(False), jnp.asarray(False)), None, length=n_steps)
    return solved


def make_kinetix_generator(params: KinetixParams, filter_steps: int = 0):
    """`generate(key) -> level`: the authors' sampler, through the no-op filter when `filter_steps` > 0."""
    if filter_steps < 0:
        raise ValueError(f"filter_steps must be >= 0, got {filter_steps!r}")

    def generate(key) -> EnvState:
        if filter_steps == 0:
            return sample_level(key, params)
        key_levels, key_pick = jax.random.split(key)
        levels = jax.vmap(lambda k: sample_level(k, params))(jax.random.split(key_levels, FILTER_SAMPLE_RATIO))
        solved = jax.vmap(lambda lv: noop_solves(lv, params, filter_steps))(levels)
        weights = jnp.where(solved, NOOP_SOLVED_WEIGHT, 1.0)
        pick = jax.random.choice(key_pick, FILTER_SAMPLE_RATIO, p=weights / weights.sum())
        return jax.tree.map(lambda x: x[pick], levels)
    return generate


def make_kinetix_mutator(n_edits: int):
    """`mutate(key, level) -> level`: the authors' mutations, `n_edits` of them, for the level's size class."""
    n = check_n_edits(n_edits)

    def mutate(key, level: EnvState) -> EnvState:
        if n == 0:
            return level
        return canonical_level(authors_mutator(size_of(level))(key, level, n))
    return mutate


@functools.lru_cache(maxsize=None)
def authors_mutator(size: str):
    """The authors' `mutate_level(key, level, n)` for `size`, built once and eagerly (its constructor
    computes constant arrays, which must not become the tracers of the trace that first asks)."""
    _, env_params, static = KinetixParams(size=size).objects()
    with jax.ensure_compile_time_eval():
        return make_mutate_env(static, env_params, UEDParams())


@functools.lru_cache(maxsize=None)
def level_names(size: str) -> tuple[str, ...]:
    """The hand-designed levels the wheel ships for `size`, as `<size>/<name>` (sorted)."""
    folder = importlib.resources.files("kinetix") / "levels" / size
    return tuple(sorted(f"{size}/{p.name[:-5]}" for p in folder.iterdir() if p.name.endswith(".json")))


@functools.lru_cache(maxsize=None)
def held_out_levels(size: str) -> tuple[tuple[str, EnvState], ...]:
    """`(name, level)` for each hand-designed level of `size`, with the size class's static params."""
    names = level_names(size)
    with jax.ensure_compile_time_eval():
        static = KinetixParams(size=size).objects()[2]
        stacked, _ = load_evaluation_levels(list(names), static_env_params_override=static)
        return tuple((name, canonical_level(jax.tree.map(lambda x, i=i: x[i], stacked)))
                     for i, name in enumerate(names))


def _known(suite: str) -> None:
    if suite not in SUITES:
        raise ValueError(f"unknown Kinetix held-out suite {suite!r}; known suites: {', '.join(SUITES)} "
                         f"(the size classes' hand-designed levels, and all {len(SIZES)} together)")


def suite_sizes(suite: str) -> tuple[str, ...]:
    """The size classes whose hand-designed levels `suite` holds."""
    _known(suite)
    return SIZES if suite == ALL else (suite,)


def check_suite(suite: str, train: KinetixParams) -> None:
    """Raise a `ValueError` unless a run with training params `train` can evaluate on `suite`: a known suite
    whose levels fit the run's size class (a smaller class's levels are padded into its slots, the authors'
    way; a larger one's do not fit). Reads no level file."""
    too_big = [size for size in suite_sizes(suite) if SIZES.index(size) > SIZES.index(train.size)]
    if too_big:
        fits = ", ".join(SIZES[:SIZES.index(train.size) + 1]) + (f", {ALL}" if train.size == SIZES[-1] else "")
        raise ValueError(f"the Kinetix held-out suite {suite!r} holds size-{too_big[0]} levels, larger than this "
                         f"run's size {train.size} (--kinetix-size): its suites are {fits}")


def held_out(suite: str) -> list[HeldOutLevel]:
    """The hand-designed levels of `suite`: a size class (`s`, `m`, `l`: 10, 24 and 40 levels) or `all` (the
    74), each named `<size>/<level>` and evaluated in the run's slots (`params_for`: padded at reset when
    smaller; `KinetixParams.level_size` keeps levels of one class in one program)."""
    _known(suite)
    entries = []
    for size in suite_sizes(suite):
        def params_for(train: KinetixParams, size=size) -> KinetixParams:
            check_suite(size, train)
            return train.replace(level_size="" if size == train.size else size)
        entries += [HeldOutLevel(name, sample=lambda key, lv=level: lv, params_for=params_for, fixed_level=level)
                    for name, level in held_out_levels(size)]
    return entries


def load_level_file(path: str) -> list[HeldOutLevel]:
    """The hand-designed levels a text file names, one `<size>/<level>` per line as the suites name them (blank
    lines and `#` comments skipped): the authors' `train_level_mode: list` with its `train_levels_list`, for
    `--train-level-file` (DR draws among them, the PLR family takes them as its training set) and
    `evaluate.py --levels`. Bad files are `ValueError`s naming the line."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as err:
        raise ValueError(f"cannot read Kinetix level file {path}: {err.strerror}") from None
    entries, by_size = [], {}
    for number, line in enumerate(lines, 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        size = name.split("/", 1)[0]
        if size in SIZES and size not in by_size:
            by_size[size] = {entry.name: entry for entry in held_out(size)}
        known = by_size.get(size, {})
        if name not in known:
            raise ValueError(f"{path}, line {number}: {name!r} is not a hand-designed Kinetix level (names are "
                             f"<size>/<level> with size one of {', '.join(SIZES)}, e.g. {level_names('s')[0]!r})")
        entries.append(known[name])
    if not entries:
        raise ValueError(f"Kinetix level file {path} names no level")
    return entries


def check_training_level(entry: HeldOutLevel, options) -> str | None:
    """Why a level of a `--train-level-file` cannot be a training level of the run, or None: the training levels
    are the run's size class (one shape per batch; the smaller classes are padded at evaluation only)."""
    size = entry.name.split("/", 1)[0]
    if size != options.kinetix_size:
        return f"level {entry.name!r} is size {size}, the training levels are --kinetix-size {options.kinetix_size}"
    return None


def level_metrics(level: EnvState) -> dict[str, jax.Array]:
    """How much a level holds (active shapes, joints, thrusters) and whether the goal is a fixed shape."""
    return {"n_shapes": (jnp.sum(level.polygon.active) + jnp.sum(level.circle.active)).astype(jnp.float32),
            "n_joints": jnp.sum(level.joint.active).astype(jnp.float32),
            "n_thrusters": jnp.sum(level.thruster.active).astype(jnp.float32)}
