"""Hyperparameters as data: the traced options of a run, as a pytree a compiled program reads.

An option is **static** (it shapes or chooses the program: sizes, counts, the method, the environment,
the score function, booleans that pick code) or **traced** (`Traced[float]` on its field,
`core/options.py`: learning rate, discount, coefficients, probabilities, temperatures). A run's traced
values travel as `hp`, `{option: float32 array}` by flat option name, beside the run state: the
compiled chunk is `(state, ahead, hp) -> (state, metrics)` and builds its runner from
`traced_view(cfg, hp)`, the config with those fields holding the program's inputs instead of
constants. So one program serves every value of them: `static_part(cfg)` (the config's static options)
is what keys a program, and a sweep over traced options is one `vmap`.

- `hyperparams(cfg)`: the run's traced values (`{option: float}`, the options of the groups the run
  reads), what `hp` holds for it.
- `hp_arrays(cfg, points)`: `hp` for lanes (one per seed, or per sweep point x seed), each point's
  values checked as a config is (`lr=-1` is refused naming the point) before anything is traced.
- `traced_view(cfg, hp)`: inside a program, `cfg` with `hp`'s values in its traced fields (built
  without the range checks, which ran on the concrete values).

The checkpoint keeps its format (the state, not `hp`): a run's values live in its `config.json`,
which a resume reads, so runs saved before hyperparameters were data resume unchanged.
"""

from __future__ import annotations

import copy
import dataclasses

import jax.numpy as jnp

from minimax.config.table import CORE_GROUPS, GROUPS, OPTIONS, OptionGroups, declared_groups
from minimax.core.options import ConfigError, checks_deferred, traced_fields
from minimax.envs.registry import env_group


def traced_options() -> tuple[str, ...]:
    """Every traced option by flat name (the registered groups' included), in the table's order."""
    return tuple(n for n, (g, f) in OPTIONS.items() if g is not None and f in traced_fields(GROUPS[g]))


def run_traced_options(cfg) -> tuple[str, ...]:
    """The traced options `cfg`'s run reads (those of its declared groups)."""
    declared = declared_groups(cfg.method, cfg.env.env_name)
    return tuple(n for n in traced_options() if declared is None or OPTIONS[n][0] in declared)


def hyperparams(cfg) -> dict[str, float]:
    """`{option: value}` of the traced options `cfg`'s run reads."""
    return {n: float(getattr(getattr(cfg, OPTIONS[n][0]), OPTIONS[n][1])) for n in run_traced_options(cfg)}


def static_part(cfg, leave_out=()) -> tuple:
    """`cfg`'s static options as a hashable `((option, value), ...)` (sorted; `leave_out`: options not to
    count): equal for two configs exactly when one compiled program serves both (with the same run shape).
    Read off the options, not built as a config: a config's checks across options could refuse the traced
    options' defaults beside this run's static values."""
    skip = set(traced_options()) | set(leave_out)
    return tuple(sorted((n, v) for n, v in cfg.options().items() if n not in skip))


def check_point(cfg, point: dict):
    """`cfg` with the options of `point` (`{option: value}`), checked as any config is; a bad value is a
    `ConfigError` naming the point by its values."""
    try:
        return cfg.replace(**point)
    except ConfigError as err:
        raise ConfigError(f"sweep point {', '.join(f'{k}={v}' for k, v in point.items())}: {err}") from None


def hp_arrays(cfg, points: list[dict] | None = None, repeat: int = 1) -> dict:
    """`hp` for lanes: without `points`, `cfg`'s values (scalars; `repeat` > 1: `[repeat]`, one per seed);
    with `points` (`[{option: value}]`, traced options only), `[len(points) * repeat]`, the points in
    order, each repeated for its `repeat` seeds. Each point is checked (`check_point`) first."""
    names = run_traced_options(cfg)
    if points is None:
        values = hyperparams(cfg)
        if repeat == 1:
            return {n: jnp.asarray(values[n], jnp.float32) for n in names}
        return {n: jnp.full((repeat,), values[n], jnp.float32) for n in names}
    rows = []
    for point in points:
        static = sorted(set(point) - set(names))
        if static:
            raise ConfigError(f"sweep point {point}: {', '.join(static)} is not a traced option of this run (one "
                              f"program cannot vary it; traced: {', '.join(names)})")
        values = hyperparams(check_point(cfg, point))
        rows.extend([values] * repeat)
    return {n: jnp.asarray([r[n] for r in rows], jnp.float32) for n in names}


def traced_view(cfg, hp: dict):
    """`cfg` whose traced fields named in `hp` hold `hp`'s values (tracers inside a program). Built without
    checks (a tracer has no concrete value to check; `hp_arrays` checked the values), and not hashable:
    only a runner is built from it."""
    unknown = sorted(set(hp) - set(traced_options()))
    if unknown:
        raise ConfigError(f"hp: {', '.join(unknown)} is not a traced option (traced: {', '.join(traced_options())})")
    by_group: dict[str, dict] = {}
    for name, value in hp.items():
        group, field = OPTIONS[name]
        by_group.setdefault(group, {})[field] = value
    with checks_deferred():
        parts = {g: dataclasses.replace(getattr(cfg, g), **fields) for g, fields in by_group.items()}
    view = copy.copy(cfg)
    own = env_group(cfg.env.env_name) if isinstance(cfg.env.env_name, str) else None
    for group, value in parts.items():
        if group in CORE_GROUPS:
            object.__setattr__(view, group, value)
    rest = {g: v for g, v in parts.items() if g not in CORE_GROUPS}
    if rest:
        object.__setattr__(view, "groups", OptionGroups({**cfg.groups, **rest}))
        if own in rest:
            object.__setattr__(view, "env", view.env.with_own(rest[own]))
    return view
