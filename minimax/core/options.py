"""What every configuration dataclass shares: its options' flag names, allowed values and checks.

Each component owns its options as a frozen dataclass (`PPOConfig`, `BufferConfig`,
`CurriculumConfig`, the config groups of `minimax.config.tree`): a field with its default and a
docstring (the `--help` text) is the option, written once. The command line is flat: an
option's flag is its field name (`--lr`), or the name a `tyro.conf.arg(name=...)` annotation
gives it (`BufferConfig.capacity` is `--buffer-size`). `Literal` types are the allowed values,
read here rather than repeated as tuples. `check` runs a dataclass's checks and raises one
`ConfigError` that lists every bad value by its flag; `option_table` and `flatten` address
the options of a tree of groups by flat name; `parse_assignments` reads `--set KEY=VALUE`.
No JAX here.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import json
import math
import typing
from pathlib import Path
from typing import Annotated, Iterable, Literal, TypeVar

import tyro


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the option (as its CLI flag)."""


class _TracedOption:
    """The mark of a traced option (`Traced[float]`): see `Traced`."""

    def __repr__(self):
        return "Traced"


TRACED = _TracedOption()
_T = TypeVar("_T")
Traced = Annotated[_T, TRACED]
"""`lr: Traced[float] = 1e-4`: an option a compiled program reads as data, not as a constant (issue
"Hyperparameters as data", `docs/DESIGN.md`). One program serves every value of it: a resume, another value
or a sweep's points run the program compiled once (`config/hyperparams.py`). An option that shapes or chooses
the program (sizes, counts, names, booleans that pick code) stays static: unmarked."""


@functools.cache
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


@functools.cache
def traced_fields(cls) -> tuple[str, ...]:
    """The fields of `cls` marked `Traced[...]`."""
    return tuple(f.name for f in dataclasses.fields(cls)
                 if any(m is TRACED for m in getattr(_hints(cls)[f.name], "__metadata__", ())))


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


@functools.cache
def literal_fields(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if typing.get_origin(_strip(_hints(cls)[f.name])) is Literal)


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


_DEFERRED = contextvars.ContextVar("minimax_checks_deferred", default=False)


@contextlib.contextmanager
def checks_deferred():
    """Inside, `check` passes everything. For a command-line parser (tyro) building nested option groups: it
    would print an error raised inside a constructor in a box of its own instead of our one line. The
    parser's caller builds each group again after (`checked`), which raises as a library call does."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def checked(group):
    """`group` built again with its checks on (after `checks_deferred`): the same values, or a `ConfigError`."""
    return dataclasses.replace(group)


def check(obj, rules) -> None:
    """Run `rules(checks)` (after the `Literal` checks) and raise every problem as one `ConfigError`
    (nothing inside `checks_deferred`)."""
    if _DEFERRED.get():
        return
    c = Checks(obj)
    c.literals()
    rules(c)
    raise_problems(c.problems)


def read_config_json(path) -> dict:
    """A saved `config.json` as a dict, or one `ConfigError` naming the file: unreadable, not JSON, or
    JSON that is not an object of options (shared by the JAX-env and host-env run configs)."""
    try:
        values = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"cannot read config {path}: {e}") from None
    if not isinstance(values, dict):
        raise ConfigError(f"config {path}: expected a JSON object of options, got {type(values).__name__}")
    return values


def raise_problems(problems: Iterable[str]) -> None:
    problems = list(problems)
    if problems:
        raise ConfigError("; ".join(problems))


# --------------------------------------------------------------------------- a tree of option groups


def is_derived(tp) -> bool:
    """A field marked `tyro.conf.Suppress`: computed by the code, not an option."""
    return any(m is tyro.conf.Suppress for m in getattr(tp, "__metadata__", ()))


def option_table(groups: dict[str | None, type]) -> tuple[dict, dict]:
    """`({option: (group or None, field)}, {option: type})` of option groups (`None`: the top level's own
    options); options are keyed by flat (flag) name, so a name two groups give is a `ConfigError` naming both."""
    paths, types = {}, {}
    for group, cls in groups.items():
        hints = _hints(cls)
        for field, name in flag_names(cls).items():
            if is_derived(hints[field]):
                continue
            if name in paths:
                raise ConfigError(f"option {name!r} of group {group or 'run'!r} is already an option of group "
                                  f"{paths[name][0] or 'run'!r}: flags are flat, so each name is one option")
            paths[name], types[name] = (group, field), _strip(hints[field])
    return paths, types


def flatten(values: dict, groups: dict[str, type]) -> dict:
    """A saved nested config (or a flat one) as `{option: value}` by flat name."""
    flat = {k: v for k, v in values.items() if not (k in groups and isinstance(v, dict))}
    for group, cls in groups.items():
        if isinstance(values.get(group), dict):
            names = flag_names(cls)
            flat.update({names.get(k, k): v for k, v in values[group].items()})
    return flat


def parse_value(name: str, text: str, kind):
    """The text of a `--set name=text` as a value of type `kind` (bool, int, float, str or Literal)."""
    if typing.get_origin(kind) is Literal:
        for option in typing.get_args(kind):
            if str(option) == text:
                return option
        raise ConfigError(f"--set {name}={text}: must be one of {', '.join(map(str, typing.get_args(kind)))}")
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"--set {name}={text}: not a boolean (true or false)")
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise ConfigError(f"--set {name}={text}: not {'an int' if kind is int else 'a number'}") from None
    return text


def parse_assignments(items, types: dict, reserved: dict | None = None) -> dict:
    """`("recurrent_size=16", ...)` -> `{"recurrent_size": 16}`, typed by `types` ({option: type});
    `reserved` options (mapped to the flag that sets them, or None) are refused."""
    reserved = reserved or {}
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lstrip("-").replace("-", "_")
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        if key not in types:
            raise ConfigError(f"--set: unknown training option {key!r} (see python train.py --help)")
        if key in reserved:
            where = reserved[key]
            raise ConfigError(f"--set {key}: this command sets it" + (f" (use {where})" if where else ""))
        out[key] = parse_value(key, value.strip(), types[key])
    return out


def type_problems(values: dict, types: dict, where: str) -> list[str]:
    """A message for every value of `values` (`{option: value}`, as read from JSON) that is not of its
    option's type in `types`, naming the option and `where` it came from (a config file): ints pass as
    floats, nothing else is converted."""
    problems = []
    for name, value in values.items():
        kind = types.get(name)
        if kind is None:
            continue
        if typing.get_origin(kind) is typing.Literal:
            allowed = typing.get_args(kind)
            ok = value in allowed and all(type(value) is type(a) for a in allowed if a == value)
            expected = "one of " + ", ".join(map(repr, allowed))
        elif kind is float:
            ok, expected = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
        elif kind is int:
            ok, expected = isinstance(value, int) and not isinstance(value, bool), "an integer"
        elif kind is bool:
            ok, expected = isinstance(value, bool), "true or false"
        elif kind is str:
            ok, expected = isinstance(value, str), "a string"
        else:
            continue
        if not ok:
            problems.append(f"{flag(name)} must be {expected}, got {value!r} ({where})")
    return problems
