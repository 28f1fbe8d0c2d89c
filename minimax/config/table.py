"""Where each option lives: the run's own options, the groups every run reads, and the groups the
registered methods and environments declare, assembled from the registries when asked.

A method declares its option groups (`core/methods.py: Method.options`), an environment its own
(`envs/registry.py: register(..., options=...)`); nothing here names them. The tables are rebuilt
whenever a registry has grown (a plugin registered after `import minimax`), so a plugin's options
are flags, `config.json` entries and `replace(...)` names like ours. Flags stay flat (`--lr`,
`--replay-prob`): an option's flat name must be unique across every group, and a group name is one
class; a registration that breaks either is refused here, naming both owners.

What a run may set (`declared_groups`): its own options, the groups every run reads (environment,
model, PPO, evaluation), its method's groups and its environment's. The others are refused when
given (`training/cli.py`) and left out of what defines an experiment (`experiments.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

from minimax.agents.ppo import PPOConfig
from minimax.config.groups import EnvConfig, EvalConfig, ModelConfig
from minimax.config.run import CompiledRunOptions
from minimax.core.methods import get_method, method_groups, method_names
from minimax.core.options import ConfigError, flatten, option_table
from minimax.envs.registry import env_group, env_groups, env_names

CORE_GROUPS: dict[str, type] = {"env": EnvConfig, "model": ModelConfig, "ppo": PPOConfig, "eval": EvalConfig}
"""The groups every run reads, whatever its method and environment."""


class OptionGroups(Mapping):
    """`{group name: options}`, immutable and hashable (a config is a static argument of `jit`)."""

    def __init__(self, items=()):
        self._items = dict(items)

    def __getitem__(self, name):
        return self._items[name]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __hash__(self):
        return hash(tuple(sorted(self._items.items(), key=lambda kv: kv[0])))

    def __eq__(self, other):
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __repr__(self):
        return f"OptionGroups({self._items!r})"

    def replace(self, **groups) -> "OptionGroups":
        return OptionGroups({**self._items, **groups})


def registered_groups() -> dict[str, type]:
    """`{group: class}` of every registered environment's and method's options (environments first)."""
    envs, methods = env_groups(), method_groups()
    for name in set(envs) & set(methods):
        if envs[name] is not methods[name]:
            raise ConfigError(f"option group {name!r} is declared by --env {name} ({envs[name].__name__}) and by a "
                              f"method ({methods[name].__name__}): one of them must name it differently")
    return {**envs, **methods}


def with_defaults(groups: OptionGroups) -> OptionGroups:
    """`groups` with every registered group it lacks at its defaults; a group of the wrong class is refused."""
    registered = registered_groups()
    for name, value in groups.items():
        cls = registered.get(name)
        if cls is not None and not isinstance(value, cls):
            raise ConfigError(f"option group {name!r} must be a {cls.__name__}, got {type(value).__name__}")
    missing = {name: cls() for name, cls in registered.items() if name not in groups}
    return groups.replace(**missing) if missing else groups


_CACHE: dict = {}


def tables() -> tuple[dict, dict, dict]:
    """`(groups, paths, types)` for the registries as they are now (cached until one grows)."""
    groups = {**CORE_GROUPS, **registered_groups()}
    key = tuple((n, id(c)) for n, c in groups.items())
    if _CACHE.get("key") != key:
        _CACHE.update(key=key, value=(groups, *option_table({None: CompiledRunOptions, **groups})))
    return _CACHE["value"]


class _Live(Mapping):
    """A read-only view of one of `tables()`, current whenever it is read."""

    def __init__(self, index: int):
        self._index = index

    def _table(self):
        return tables()[self._index]

    def __getitem__(self, name):
        return self._table()[name]

    def __iter__(self):
        return iter(self._table())

    def __len__(self):
        return len(self._table())


GROUPS: Mapping[str, type] = _Live(0)
"""Every option group by name: the core groups, then the environments', then the methods'."""
OPTIONS: Mapping[str, tuple] = _Live(1)
"""Every option by flat name: `(group or None, field)`."""
OPTION_TYPES: Mapping[str, type] = _Live(2)
"""Every option's type by flat name (Literal types list the allowed values)."""


def declared_groups(method: str, env: str) -> frozenset[str] | None:
    """The groups a run of `method` on `env` may set: the core ones, its method's, its environment's
    (None for a method that is not registered: its runs are read, not trained, and nothing is refused)."""
    try:
        own = get_method(method).options
    except (ValueError, TypeError):
        return None
    own_env = env_group(env) if isinstance(env, str) else None
    return frozenset(CORE_GROUPS) | set(own) | ({own_env} if own_env else set())


def unused_options(method: str, env: str = "maze") -> frozenset[str]:
    """The options (flat names) a run of `method` on `env` never reads: setting them changes nothing."""
    declared = declared_groups(method, env)
    if declared is None:
        return frozenset()
    return frozenset(n for n, (g, _) in OPTIONS.items() if g is not None and g not in declared)


def owners(group: str) -> str:
    """Who declares `group`, in words (`--method robust_plr, plr, accel`), for refusals."""
    methods = [m for m in method_names() if group in get_method(m).options]
    envs = [e for e in env_names() if env_group(e) == group]
    out = [f"--env {', '.join(envs)}"] if envs else []
    return ", ".join(out + ([f"--method {', '.join(methods)}"] if methods else [])) or "nothing registered"


def flat_config(values: dict) -> dict:
    """A saved `config.json` (nested, or flat from before the groups) as `{option: value}`; for tools
    that read run directories without building configs (plots)."""
    return flatten(values, dict(GROUPS))
