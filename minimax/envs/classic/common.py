"""What CartPole and Pendulum share: parameter ranges, their uniform draws and perturbations,
the time limit, and argument checks.

A classic-control level is a flat dataclass of float32 scalars: some physical parameters plus a
start state. The physical parameters are what a curriculum designs, so both envs describe them
the same way: a frozen dataclass of `(low, high)` pairs (a "ranges" object, one field per
parameter) from which the generator draws uniformly and inside which the mutator's edits stay.
A range with `low == high` fixes that parameter (generators return it, mutators never pick it).
"""

from __future__ import annotations

import dataclasses
import operator

import jax
import jax.numpy as jnp

from minimax.envs.registry import check_n_edits


def range_table(ranges) -> tuple[tuple[str, float, float], ...]:
    """`((name, low, high), ...)` of a ranges dataclass, in field order."""
    return tuple((f.name, float(getattr(ranges, f.name)[0]), float(getattr(ranges, f.name)[1]))
                 for f in dataclasses.fields(ranges))


def check_ranges(ranges) -> None:
    """Raise `ValueError` unless every field is a `(low, high)` pair with `0 < low <= high`
    (every physical parameter here is a positive quantity: masses, lengths, gravity, forces)."""
    for f in dataclasses.fields(ranges):
        pair = getattr(ranges, f.name)
        try:
            low, high = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"{type(ranges).__name__}.{f.name} must be a (low, high) pair of numbers, "
                             f"got {pair!r}") from None
        if not 0.0 < low <= high:
            raise ValueError(f"{type(ranges).__name__}.{f.name} must satisfy 0 < low <= high, got {pair!r}")


def draw_uniform(key: jax.Array, ranges) -> dict[str, jax.Array]:
    """`{name: float32 scalar}` with each parameter drawn independently and uniformly from its range."""
    table = range_table(ranges)
    low = jnp.array([lo for _, lo, _ in table], jnp.float32)
    high = jnp.array([hi for _, _, hi in table], jnp.float32)
    values = jax.random.uniform(key, (len(table),), jnp.float32, low, high)
    # Guards [low, high] against float rounding in low + (high - low) * u.
    values = jnp.clip(values, low, high)
    return {name: values[i] for i, (name, _, _) in enumerate(table)}


def perturb_uniform(key: jax.Array, values: dict[str, jax.Array], ranges, n_edits: int,
                    step_fraction: float) -> dict[str, jax.Array]:
    """`values` after `n_edits` edits: each picks one parameter uniformly among those with a
    non-degenerate range and adds a step drawn from U(-step_fraction, step_fraction) times the
    width of its range, clipping the result into the range.

    Why steps relative to the range width (not to the value): every parameter then moves the
    same fraction of its designable span per edit, whatever its units, and a value near the
    bottom of its range moves as freely as one near the top. Parameters that no edit picks are
    returned bit for bit, so a mutation changes at most `n_edits` of them.
    """
    table = [(n, lo, hi) for n, lo, hi in range_table(ranges) if hi > lo]
    if not table or n_edits == 0:
        return dict(values)
    low = jnp.array([lo for _, lo, _ in table], jnp.float32)
    high = jnp.array([hi for _, _, hi in table], jnp.float32)
    v = jnp.stack([jnp.asarray(values[n], jnp.float32) for n, _, _ in table])

    def edit(v, k):
        k_pick, k_step = jax.random.split(k)
        i = jax.random.randint(k_pick, (), 0, len(table))
        step = jax.random.uniform(k_step, (), jnp.float32, -step_fraction, step_fraction) * (high[i] - low[i])
        return v.at[i].set(jnp.clip(v[i] + step, low[i], high[i])), None

    v, _ = jax.lax.scan(edit, v, jax.random.split(key, n_edits))
    return {**values, **{n: v[j] for j, (n, _, _) in enumerate(table)}}


def time_limit(time: jax.Array, terminated: jax.Array, max_steps: int) -> tuple[jax.Array, jax.Array]:
    """`(done, truncated)` after a step that brought the clock to `time`: an episode that reached
    a terminal state is terminated, not truncated, even on the last allowed step."""
    terminated = jnp.asarray(terminated, jnp.bool_)
    truncated = (time >= max_steps) & ~terminated
    return terminated | truncated, truncated


def check_step_fraction(step_fraction) -> float:
    """`step_fraction` as a float, or `ValueError` unless it is in (0, 1]."""
    s = float(step_fraction)
    if not 0.0 < s <= 1.0:
        raise ValueError(f"step_fraction must be in (0, 1], got {step_fraction!r}")
    return s


def check_max_steps(owner: str, max_steps) -> None:
    """Raise `ValueError` unless `max_steps` is a positive int (the static time limit)."""
    try:
        n = operator.index(max_steps)
    except TypeError:
        n = None
    if n is None or isinstance(max_steps, bool) or n < 1:
        raise ValueError(f"{owner}.max_steps must be a positive int, got {max_steps!r}")


def unknown_suite(env: str, suite, known) -> ValueError:
    """The error for a held-out suite name an env does not know, naming the ones it does."""
    return ValueError(f"unknown {env} held-out suite {suite!r}; known suites: {', '.join(known)}")


def fmt(value: float) -> str:
    """A parameter value as it appears in held-out level names (`0.25`, `2`, `9.8`)."""
    return f"{value:g}"


def uniform_generator(level_cls, ranges, draw_start):
    """`generator(key) -> level`: physics uniform over `ranges`, start state from `draw_start(key)`."""
    check_ranges(ranges)

    def generator(key: jax.Array):
        k_physics, k_start = jax.random.split(key)
        return level_cls(**draw_uniform(k_physics, ranges), **draw_start(k_start))

    return generator


def perturbing_mutator(level_cls, physics: tuple[str, ...], ranges, draw_start, n_edits: int, step_fraction: float):
    """`mutate(key, level) -> level`: `n_edits` perturbations of one uniformly chosen parameter of `physics`
    each (`perturb_uniform`), then a fresh start state from `draw_start(key)`."""
    n_edits = check_n_edits(n_edits)
    step_fraction = check_step_fraction(step_fraction)
    check_ranges(ranges)

    def mutate(key: jax.Array, level):
        k_edit, k_start = jax.random.split(key)
        values = perturb_uniform(k_edit, {n: getattr(level, n) for n in physics}, ranges, n_edits, step_fraction)
        return level_cls(**values, **draw_start(k_start))

    return mutate


def physics_metrics(physics: tuple[str, ...]):
    """`level_metrics(level) -> {name: value}`: a level's physical parameters, for the logs (vmappable)."""
    return lambda level: {name: getattr(level, name) for name in physics}
