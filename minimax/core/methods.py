"""The method registry: what the rest of the library knows about an autocurriculum, declared once
by the module that implements it.

A method is one runner file that ends with one `register_method(Method(...))` call. Everything
that used to list methods by hand is derived from these declarations: `--method`'s choices and
help, the config checks (a PLR method's buffer, a teacher method's design environment, a method that
trains only on replays), the option groups a run may set (`options`: the groups the method declares,
and no others), which runs pool into one experiment, the device layout's splits, and how the builder
makes the runner (`training/builder.py`).

A method's options travel with it: `options` maps group names to the frozen dataclasses that hold
them (`{"buffer": BufferConfig, "curriculum": CurriculumConfig}`), defined in the method's own module
or shared with its family. `TrainConfig` is assembled from every registered method's groups
(`config/tree.py`), so a user's method with options of its own registers them the same way, from
their own module (`examples/custom_curriculum.py`, `tests/plugins/`):

    register_method(Method("my_plr", build=plr_builder(MyPLRRunner), options={**PLR_OPTIONS, "mine": MyOptions},
                           level_buffer=True, summary="PLR with my replay rule"))

after which `TrainConfig(method="my_plr")`, `python train.py --method my_plr --my-option 3` (from a
script that imported the module) and `make_train` train it like ours.

This registry sits in `core/` (below `config/`, which reads it, and `runners/`, which fills it):
the built-in methods register when `minimax.runners` is imported, which the first lookup does, as
the environment registry loads its environments on first use.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Protocol


class BuildParts(Protocol):
    """What the builder hands a method's `build` (`training/builder.py`: `RunParts`).

    `args` is the runner constructor's common head `(env, env_params, generator, model, ppo,
    num_envs, num_steps)`; `cfg` the whole `TrainConfig`; `spec` the registered environment
    (`envs/registry.py: UEDEnv`); `shard` the device's part of the mesh; `mutator()` the
    environment's mutator with the run's edit count."""

    cfg: Any
    spec: Any
    shard: Any
    args: tuple

    def mutator(self) -> Callable: ...


@dataclasses.dataclass(frozen=True)
class Method:
    """One `--method`: how to build its runner and what the library must know about it."""

    name: str
    """The `--method` name (also what configs save and experiments group by)."""
    build: Callable[[BuildParts], Any]
    """`parts -> runner` (`runners/base.py: Runner`)."""
    summary: str = ""
    """One line for `--help` and docs."""
    options: Mapping[str, type] = dataclasses.field(default_factory=dict)
    """`{group: frozen dataclass}`: the option groups the method reads beyond the run's own (environment,
    model, PPO, evaluation). A run may set only these (others are refused in one line) and only these
    define its experiment. Groups are shared by name (every PLR-family method declares `buffer`); one
    name is one class, and each option's flag is unique across every group (`config/tree.py` checks)."""
    level_buffer: bool = False
    """Keeps a PLR level buffer: the buffer's checks, `--buffer-png`, per-device buffers."""
    mutates: bool = False
    """Edits levels with the environment's mutator (ACCEL): the env must have one."""
    designs_levels: bool = False
    """A learned teacher designs the levels (PAIRED): the env must have a teacher, no level file."""
    trains_every_cycle: bool = False
    """Every `step` makes one PPO update (a unit of the update budget is one step)."""
    trains_only_on_replays: bool = False
    """Updates only on replayed levels (robust PLR, ACCEL: `plr_method` then checks `--replay-prob` > 0)."""
    needs_success: bool = False
    """Scores levels by episodes that succeed or fail: the env must have a binary outcome (SFL)."""
    problems: Callable[[Any, Any], Iterable[str]] | None = None
    """`(cfg, env spec or None) -> messages`: its own checks across option groups, each naming its flags."""
    device_splits: Callable[[Any], tuple[tuple[str, int], ...]] | None = None
    """`cfg -> ((flag, value), ...)`: sizes that must split evenly over the data-parallel devices."""
    runner: type | None = None
    """The runner class (for class-level facts such as `evaluated_agent`); optional."""
    host: str | None = None
    """How the method runs on a host environment (Procgen, gymnasium: `host/loop.py`), one of
    `HOST_PROTOCOLS`; None: on the compiled path only (`--env procgen-*` refuses it in one line)."""

    def check(self, cfg, spec) -> Iterable[str]:
        """Every problem of `cfg` this method's declaration can see (`config/checks.py` adds the rest)."""
        if self.problems is not None:
            yield from self.problems(cfg, spec)

    def splits(self, cfg) -> tuple[tuple[str, int], ...]:
        return tuple(self.device_splits(cfg)) if self.device_splits is not None else ()


def episode_limit(cfg, spec) -> int | None:
    """The run's episode step limit on training levels (None without an environment spec), for a
    method's `problems` (SFL's and NCC's passes must cover an episode)."""
    return spec.make_params(cfg.env).max_steps if spec is not None else None


HOST_PROTOCOLS = {
    "uniform": "each episode a uniform training level (the PLR paper's baseline)",
    "sampler": "the level sampler picks each episode's level with --score-function (PLR)",
    "robust": "one replay decision per rollout; a PPO update only after a rollout of replayed levels (robust PLR)",
}
"""The curricula the host loop implements (`host/loop.py`), by the name a `Method.host` gives."""

_METHODS: dict[str, Method] = {}
_BUILTINS = "minimax.runners"
_builtins_loaded = False


def _load_builtins() -> None:
    """Import the built-in methods' modules once (each registers itself), before the first lookup."""
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True  # first: the modules being imported register (and may look up) methods
        try:
            importlib.import_module(_BUILTINS)
        except BaseException:
            _builtins_loaded = False
            raise


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Make `method` a `--method` choice; a name already taken is an error unless `replace`, and so is
    an option group whose name another method gave another class."""
    if not isinstance(method, Method):
        raise TypeError(f"register_method takes a minimax.runners.Method, got {type(method).__name__}")
    if not method.name or not method.name.replace("_", "").isalnum():
        raise ValueError(f"a method name is letters, digits and underscores, got {method.name!r}")
    if method.name in _METHODS and not replace and _METHODS[method.name] != method:
        raise ValueError(f"method {method.name!r} is already registered (pass replace=True to replace it)")
    if method.host is not None and method.host not in HOST_PROTOCOLS:
        raise ValueError(f"method {method.name!r}: host must be one of {', '.join(HOST_PROTOCOLS)} or None, "
                         f"got {method.host!r}")
    for group, cls in method.options.items():
        if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
            raise TypeError(f"method {method.name!r}: option group {group!r} must be a dataclass class, got {cls!r}")
        other = next((m for m in _METHODS.values() if m.name != method.name and
                      m.options.get(group, cls) is not cls), None)
        if other is not None:
            raise ValueError(f"method {method.name!r}: option group {group!r} is {other.options[group].__name__} "
                             f"of method {other.name!r}; name its own group differently")
    _METHODS[method.name] = method
    return method


def get_method(name: str) -> Method:
    """The registered method `name`; an unknown name is a `ValueError` listing the registered ones."""
    _load_builtins()
    try:
        return _METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; registered: {', '.join(_METHODS)}") from None


def method_names() -> tuple[str, ...]:
    """Every registered `--method` name, ours first in registration order."""
    _load_builtins()
    return tuple(_METHODS)


def host_method_names() -> tuple[str, ...]:
    """The registered methods that run on a host environment (a `Method.host` protocol)."""
    _load_builtins()
    return tuple(name for name, m in _METHODS.items() if m.host is not None)


def method_groups() -> dict[str, type]:
    """`{group: class}` of every registered method's options, in registration order."""
    _load_builtins()
    return {g: cls for m in _METHODS.values() for g, cls in m.options.items()}
