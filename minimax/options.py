"""What every configuration dataclass shares: its options' flag names, allowed values and checks.

Each component owns its options as a frozen dataclass (`PPOConfig`, `BufferConfig`,
`CurriculumConfig`, the config groups of `minimax.config`): a field with its default and a
docstring (the `--help` text) is the option, written once. The command line is flat: an
option's flag is its field name (`--lr`), or the name a `tyro.conf.arg(name=...)` annotation
gives it (`BufferConfig.capacity` is `--buffer-size`). `Literal` types are the allowed values,
read here rather than repeated as tuples. `check` runs a dataclass's checks and raises one
`ConfigError` that lists every bad value by its flag. No JAX here: configs import cheaply.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from typing import Iterable, Literal


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the option (as its CLI flag)."""


def _hints(cls) -> dict:
    return typing.get_type_hints(cls, include_extras=True)


@functools.cache
def flag_names(cls) -> dict[str, str]:
    """`{field: option name}`: the field name, or the name its `tyro.conf.arg` annotation gives."""
    names = {}
    for f in dataclasses.fields(cls):
        name = f.name
        for meta in getattr(_hints(cls)[f.name], "__metadata__", ()):
            if getattr(meta, "name", None):
                name = meta.name
        names[f.name] = name
    return names


def flag(cls_or_name, field: str | None = None) -> str:
    """`--option-name` of a field (`flag(BufferConfig, "capacity") == "--buffer-size"`) or of a name."""
    name = cls_or_name if field is None else flag_names(cls_or_name)[field]
    return "--" + name.replace("_", "-")


def _strip(tp):
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


@functools.cache
def choices(cls, field: str) -> tuple:
    """The allowed values of a `Literal`-typed field."""
    tp = _strip(_hints(cls)[field])
    if typing.get_origin(tp) is not Literal:
        raise TypeError(f"{cls.__name__}.{field} is not a Literal")
    return typing.get_args(tp)


def literal_fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if typing.get_origin(_strip(_hints(cls)[f.name])) is Literal]


class Checks:
    """Collects the problems of one config object, each message naming the option's flag."""

    def __init__(self, obj):
        self.obj, self.cls, self.problems = obj, type(obj), []

    def flag(self, field: str) -> str:
        return flag(self.cls, field)

    def add(self, message: str) -> None:
        self.problems.append(message)

    def _number(self, field):
        v = getattr(self.obj, field)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))
        return v, ok

    def positive(self, *fields: str) -> None:
        for n in fields:
            v, ok = self._number(n)
            if not ok or v <= 0:
                self.add(f"{self.flag(n)} must be > 0, got {v!r}")

    def non_negative(self, *fields: str) -> None:
        for n in fields:
            v, ok = self._number(n)
            if not ok or v < 0:
                self.add(f"{self.flag(n)} must be >= 0, got {v!r}")

    def integer(self, field: str, low: int = 0) -> None:
        v = getattr(self.obj, field)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= low):
            self.add(f"{self.flag(field)} must be an int >= {low}, got {v!r}")

    def unit(self, *fields: str) -> None:
        for n in fields:
            v, ok = self._number(n)
            if not ok or not 0 <= v <= 1:
                self.add(f"{self.flag(n)} must be in [0, 1], got {v!r}")

    def literals(self) -> None:
        """Every `Literal` field holds one of its values (a saved config or a library call may not)."""
        for n in literal_fields(self.cls):
            v, allowed = getattr(self.obj, n), choices(self.cls, n)
            if v not in allowed:
                self.add(f"{self.flag(n)} must be one of {', '.join(map(str, allowed))}, got {v!r}")


def check(obj, rules) -> None:
    """Run `rules(checks)` (after the `Literal` checks) and raise every problem as one `ConfigError`."""
    c = Checks(obj)
    c.literals()
    rules(c)
    raise_problems(c.problems)


def raise_problems(problems: Iterable[str]) -> None:
    problems = list(problems)
    if problems:
        raise ConfigError("; ".join(problems))
