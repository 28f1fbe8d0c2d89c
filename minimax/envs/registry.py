"""The UED environment contract and the registry that `--env NAME` looks up.

An environment plugs into every runner, `evaluate`, `plot` and `reproduce` by one
`UEDEnv` entry: the runners and curricula only ever see the callables below, so a new
domain is one package under `minimax/envs/` plus one `register(...)` call, nothing else.

What an entry provides, and why each piece exists:
- `make_env(options)`, `make_params(options)`: the `Environment` (pure `init_state` /
  `step_env` / `get_obs`, `environment.py`) and its static params (hashable, with a
  `max_steps` attribute: the evaluation loop's bound). A level is any pytree of arrays of
  fixed shapes that determines the episode (start state included), so that replaying a
  level in the PLR buffer replays the same task.
- `make_generator(options) -> generator(key) -> level`: the level distribution of DR and of
  the PLR family's new levels.
- `mutators`: `{name: factory(n_edits) -> mutate(key, level) -> level}` for ACCEL
  (optional: empty means the mutation methods are refused on this env).
- `level_identity(level) -> pytree`: what makes two levels the same for the buffer's
  de-duplication (`None`: every leaf of the level).
- `level_metrics(level) -> {name: scalar}`: per-level statistics for the logs (optional).
- `held_out(suite) -> [HeldOutLevel]`: named evaluation levels (`--eval-suite`,
  `evaluate.py --suite`); `suites` lists the names it knows, `default_suite` is the one
  training evaluates on periodically, `test_suite` the benchmark `evaluate.py` scores by default;
  `default_suite_of(options) -> str` (optional) replaces both where they depend on the run's
  options (Kinetix: the size class's own levels); `check_suite(suite, params)` (optional) raises a
  `ValueError` naming the problem when a run with training params `params` cannot evaluate on `suite`,
  without loading the suite's levels (the run's checks call it before anything is built; without it they
  load the suite and ask its first level's `params_for`, which is slow where levels are files: Kinetix).
- `make_model(cfg) -> flax module`: the student network that suits the env's
  observations and actions (`(carry, obs, reset) -> (carry, policy, value)`); `cores`: the
  `--recurrent-cell` values it accepts; `student_for(options, student) -> name` (optional): the network
  `--student` picks for the run's env options (`ValueError` when its observation cannot feed that one;
  without it the env has one student, its own, and `--student` stays `auto`).
- `level_facts(levels, params) -> (optimal_return[B], solvable[B][, optimal_steps[B]])` (optional): what
  evaluation reports beside the policy's return (the gap to optimal); NaN / True without it. The third, the
  action count of an optimal episode (int32, -1 where none ends it), is what ReMiDi's discounted true
  regret (`--score-function perfect_regret`) needs beside the optimal return.
- `discrete_actions`: `Discrete` actions (a `Categorical` policy) rather than `Box` ones; the
  scores that read action probabilities (least confidence, min margin) need them.
- `binary_outcome`: episodes end in success or failure (`info["solved"]` means something):
  the solved-rate metrics and learnability (SFL) need it.
- `deterministic`: a step is a function of the state and the action (its key unused), so replaying a
  trajectory's actions on another level shows what it would have seen: ReMiDi's consistency needs it.
- `teacher`: a `TeacherSpec`, the design MDP of the learned-teacher methods (PAIRED and
  relatives), or `None` when the env has none (those methods are then refused).
- `load_levels(path) -> [HeldOutLevel]`, `check_training_level(entry, options) -> str | None`
  (optional): level files for `evaluate.py --levels` and `--train-level-file`.
- `trace_state(state) -> {name: small array}`, `render_episode(level, trace, params)`,
  `render_levels(levels) -> uint8[B, h, w, 3]` (optional): pictures of episodes and buffers.

`options` is the run's environment options (`config/groups.py: EnvConfig`): the options every
environment shares (`env_name`, `max_episode_steps`, `train_level_file`) and, as attributes of the
same object, the environment's own, declared when it registers (`register(..., options=MazeOptions)`;
the maze's `options.maze_height`). An environment's options travel with it: a run may set only
the chosen environment's, and a plugin environment declares its own the same way.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Callable


def check_n_edits(n_edits) -> int:
    """A mutator factory's `n_edits` as an int, or a `ValueError` naming the bad value (every
    environment's mutators take the same argument, so they check it the same way)."""
    try:
        n = operator.index(n_edits)
    except TypeError:
        raise ValueError(f"n_edits must be a non-negative integer, got {n_edits!r}") from None
    if isinstance(n_edits, bool) or n < 0:
        raise ValueError(f"n_edits must be a non-negative integer, got {n_edits!r}")
    return n


@dataclasses.dataclass(frozen=True, eq=False)
class HeldOutLevel:
    """One named evaluation level (or level distribution): `sample(key) -> level`
    (a fixed level ignores the key: `fixed_level` is then that level), and
    `params_for(train_params)`: the static env params to evaluate it with, given the
    training env's (a maze of another size keeps the training observation options).

    Compared and hashed by identity, so an entry can be a static argument of `jit`."""

    name: str
    sample: Callable[[Any], Any]
    params_for: Callable[[Any], Any]
    fixed_level: Any = None

    @property
    def is_fixed(self) -> bool:
        return self.fixed_level is not None


@dataclasses.dataclass(frozen=True, eq=False)
class TeacherSpec:
    """A learned teacher's design MDP: `env` (`reset` / `step` / `level`, see
    `envs/maze/teacher.py`), its static params and its network, both from the run's config."""

    env: Any
    make_params: Callable[[Any], Any]
    make_model: Callable[[Any], Any]


@dataclasses.dataclass(frozen=True, eq=False)
class UEDEnv:
    """A registered UED environment (see the module docstring for each field's role)."""

    name: str
    description: str
    make_env: Callable[[Any], Any]
    make_params: Callable[[Any], Any]
    make_generator: Callable[[Any], Callable]
    make_model: Callable[[Any], Any]
    held_out: Callable[[str], list[HeldOutLevel]]
    suites: tuple[str, ...] = ()
    default_suite: str = ""
    test_suite: str = ""
    default_suite_of: Callable[[Any], str] | None = None
    check_suite: Callable[[str, Any], None] | None = None
    mutators: dict[str, Callable[[int], Callable]] = dataclasses.field(default_factory=dict)
    level_identity: Callable | None = None
    level_metrics: Callable | None = None
    level_facts: Callable | None = None
    binary_outcome: bool = True
    discrete_actions: bool = True
    deterministic: bool = True
    cores: tuple[str, ...] = ("lstm", "gru", "s5")
    student_for: Callable[[Any, str], str] | None = None
    teacher: "TeacherSpec | None" = None
    load_levels: Callable[[str], list] | None = None
    check_training_level: Callable | None = None
    trace_state: Callable | None = None
    render_episode: Callable | None = None
    render_levels: Callable | None = None

    def default_suite_for(self, options) -> str:
        """The suite training evaluates on, for a run's `EnvConfig`."""
        return self.default_suite_of(options) if self.default_suite_of else self.default_suite

    def test_suite_for(self, options) -> str:
        """The suite `evaluate.py` scores by default, for a run's `EnvConfig`."""
        return self.default_suite_of(options) if self.default_suite_of else self.test_suite

    def make_mutator(self, name: str, n_edits: int) -> Callable:
        """The mutator `name` (empty: the env's first, its default) applying `n_edits` edits."""
        if self.mutators and not name:
            name = next(iter(self.mutators))
        if not self.mutators:
            raise ValueError(f"--env {self.name} has no mutator: the mutation methods (accel, parallel_accel) "
                             f"need one")
        if name not in self.mutators:
            raise ValueError(f"--mutator {name!r} is not a mutator of --env {self.name}; choose from "
                             f"{', '.join(sorted(self.mutators))}")
        return self.mutators[name](n_edits)


_REGISTRY: dict[str, Callable[[], UEDEnv]] = {}
_REQUIRES: dict[str, str] = {}
_OPTIONS: dict[str, type] = {}


def register(name: str, loader: Callable[[], UEDEnv], requires: str = "", options: type | None = None) -> None:
    """Register `loader() -> UEDEnv` under `name`. Loaders run on first use, so listing the
    environments imports none of them (their packages may pull in heavy dependencies);
    `requires` names the optional extra whose absence makes `get_env` say what to install;
    `options`, a frozen dataclass of the environment's own options (its fields are flags of
    `train.py`, its docstrings their help), becomes the run config's group `env_group(name)`: `name`,
    or the first environment's that registered the same class. It must import without the
    environment's package."""
    if options is not None and not (dataclasses.is_dataclass(options) and isinstance(options, type)):
        raise TypeError(f"register({name!r}, options=...) takes a dataclass class, got {options!r}")
    _REGISTRY[name] = loader
    _REQUIRES[name] = requires
    _LOADED.pop(name, None)
    if options is None:
        _OPTIONS.pop(name, None)
    else:
        _OPTIONS[name] = options


def env_options(name: str) -> type | None:
    """The options dataclass environment `name` declared (None: it has none beyond the shared ones)."""
    return _OPTIONS.get(name)


def env_group(name: str) -> str | None:
    """The config group of environment `name`'s options: the name of the first environment that
    registered the same class (a variant of the maze, registered with `MazeOptions`, reads `maze`)."""
    cls = _OPTIONS.get(name)
    return None if cls is None else next(n for n, c in _OPTIONS.items() if c is cls)


def env_groups() -> dict[str, type]:
    """`{group: options dataclass}` of the registered environments' own options."""
    return {env_group(n): c for n, c in _OPTIONS.items()}


def env_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


_LOADED: dict[str, UEDEnv] = {}


def get_env(name: str) -> UEDEnv:
    """The environment registered as `name`; an unknown name is a `ValueError` listing the known ones."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown environment {name!r} (--env); registered: {', '.join(env_names())}")
    if name not in _LOADED:
        try:
            _LOADED[name] = _REGISTRY[name]()
        except ImportError as err:
            if not _REQUIRES.get(name):
                raise
            raise ValueError(f"--env {name} needs the optional package {_REQUIRES[name]!r} ({err}): "
                             f"pip install 'minimax[{_REQUIRES[name]}]'") from None
    return _LOADED[name]


def _entry(module: str, attribute: str) -> Callable[[], UEDEnv]:
    def load():
        import importlib  # noqa: PLC0415

        return getattr(importlib.import_module(module), attribute)
    return load


# The built-in environments' options, imported last: their packages import this module's names.
from minimax.envs.jaxnav.options import NavOptions  # noqa: E402
from minimax.envs.kinetix.options import KinetixOptions  # noqa: E402
from minimax.envs.maze.options import MazeOptions  # noqa: E402
from minimax.envs.xland.options import XLandOptions  # noqa: E402

register("maze", _entry("minimax.envs.maze.spec", "MAZE"), options=MazeOptions)
register("cartpole", _entry("minimax.envs.classic.spec", "CARTPOLE"))
register("pendulum", _entry("minimax.envs.classic.spec", "PENDULUM"))
register("craftax", _entry("minimax.envs.craftax.spec", "CRAFTAX"), requires="craftax")
register("jaxnav", _entry("minimax.envs.jaxnav.spec", "JAXNAV"), requires="jaxnav", options=NavOptions)
register("kinetix", _entry("minimax.envs.kinetix.spec", "KINETIX"), requires="kinetix", options=KinetixOptions)
register("xland", _entry("minimax.envs.xland.spec", "XLAND"), requires="xland", options=XLandOptions)
