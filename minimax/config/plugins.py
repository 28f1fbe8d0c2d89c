"""Plugins a run remembers: `--plugin FILE` once, and the run resumes, evaluates and sweeps by itself.

A plugin is a user's module or `.py` file that registers a method, a score or an environment when it is
imported (`register_method`, `register_score`, `register_env`). `load` imports it and notes what it
registered (the registries' names before and after) and the SHA-256 of its file. When a run saves its
`config.json`, `records` lists under `plugins` every plugin this process loaded whose registered names the
run's options use (a plugin that registered no name it can be told by is listed whenever it is loaded):

    "plugins": [{"file": "/abs/path/my_score.py", "sha256": "…", "registers": ["--score-function my_score"]}]

`restore` reads that list back wherever a saved config is loaded (`TrainConfig.load`, the host loop's config:
`--resume`, `evaluate.py`, `--config`, a sweep's or `reproduce`'s reruns) and imports what the process lacks.
A record is met, and nothing is imported, when the process already has a plugin from the same place or
with the same content, or already has every name it registers (a `--plugin` given on the command line
wins: that is how a changed or moved plugin is used on purpose). Otherwise its file is imported only if it
is where it was and as it was: a file gone or changed is refused in one line naming it and the way on.

Why the content hash and not the path alone: a resumed run must go on computing what it computed, and a
score edited between two sessions would silently change a run's curriculum halfway. Why only the plugins
whose names the run uses: a `--plugin` passed by habit to every command would otherwise tie every run to
a file it never needed. A plugin that re-registers an existing name (`replace=True`) shows no new name and
is recorded only while it registers nothing else (the diff cannot see it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from minimax.core.methods import method_names
from minimax.core.options import ConfigError
from minimax.curricula.scores import SCORES
from minimax.envs.registry import env_names

PLUGINS = "plugins"
"""The key of `config.json` under which a run lists its plugins (a record, not an option)."""


@dataclasses.dataclass(frozen=True)
class Plugin:
    """A plugin this process imported: where from, its content, what it registered, and how it came."""

    source: str
    """The absolute path of a `.py` file, or a module name."""
    is_file: bool
    sha256: str
    """Of the file's bytes (a module: of its file, '' when it has none)."""
    registers: tuple[str, ...]
    """`--method NAME`, `--score-function NAME`, `--env NAME`: each name its import added."""
    given: bool
    """Given with `--plugin` (True) or imported from a saved run's record (False)."""

    def record(self) -> dict:
        return {"file" if self.is_file else "module": self.source, "sha256": self.sha256,
                "registers": list(self.registers)}


_LOADED: dict[str, Plugin] = {}
"""Every plugin this process imported, by source."""


def registered() -> set[str]:
    """Every registered name as the flag that takes it (`--method dr`, ...)."""
    return ({f"--method {n}" for n in method_names()} | {f"--score-function {n}" for n in SCORES}
            | {f"--env {n}" for n in env_names()})


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _import_file(path: Path) -> None:
    """Import a `.py` file as the module named by its stem (once per path: a second command in one process, a
    test's, keeps the classes its registrations and configs were made with)."""
    loaded = sys.modules.get(path.stem)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
        return
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or not path.is_file():
        raise ImportError(f"no file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(path.stem, None)
        raise


def load(plugin: str, *, given: bool = True) -> Plugin:
    """Import `plugin` (a module name or a `.py` file) and remember it; an import error propagates."""
    if not plugin:
        raise ImportError("--plugin needs a module name or a .py file")
    is_file = plugin.endswith(".py")
    source = str(Path(plugin).resolve()) if is_file else plugin
    before = registered()
    if is_file:
        _import_file(Path(source))
        sha = file_sha256(Path(source))
    else:
        module = importlib.import_module(plugin)
        path = Path(getattr(module, "__file__", "") or "")
        sha = file_sha256(path) if path.is_file() else ""
    known = _LOADED.get(source)
    new = tuple(sorted(registered() - before)) or (known.registers if known else ())
    _LOADED[source] = Plugin(source, is_file, sha, new, given or bool(known and known.given))
    return _LOADED[source]


def load_all(argv: list[str]) -> list[str]:
    """Import every `--plugin MODULE_OR_FILE.py` of `argv` and return `argv` without them; a plugin that
    cannot be imported is a `SystemExit` naming it."""
    rest, plugins = [], []
    it = iter(argv)
    for a in it:
        if a == "--plugin" or a.startswith("--plugin="):
            plugins.append(a.partition("=")[2] if "=" in a else next(it, ""))
        else:
            rest.append(a)
    for plugin in plugins:
        try:
            load(plugin)
        except ImportError as e:
            print(f"error: --plugin {plugin!r}: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    return rest


def _strings(values) -> set[str]:
    if isinstance(values, dict):
        return set().union(*(_strings(v) for v in values.values()))
    return {values} if isinstance(values, str) else set()


def records(options: dict) -> list[dict]:
    """The loaded plugins a run with these `options` (flat or nested) depends on, as `config.json` lists them."""
    used = _strings(options)
    return [p.record() for p in _LOADED.values()
            if not p.registers or any(r.partition(" ")[2] in used for r in p.registers)]


def with_records(saved: dict, options: dict) -> dict:
    """A config's `config.json` dict with `records(options)` under `PLUGINS` when there are any."""
    plugins = records(options)
    return {**saved, PLUGINS: plugins} if plugins else saved


def restore(saved: list, where: str) -> None:
    """Import each plugin a saved config lists (`records`) that this process lacks; a file gone or changed is
    a `ConfigError` naming it, its registrations and what to do."""
    if not isinstance(saved, list) or not all(isinstance(r, dict) for r in saved):
        raise ConfigError(f"{where}: '{PLUGINS}' must be a list of records like {{\"file\": ..., \"sha256\": ...}}, "
                          f"got {saved!r}")
    for record in saved:
        _restore_one(record, where)


def _restore_one(record: dict, where: str) -> None:
    source = record.get("file") or record.get("module") or ""
    sha, names = record.get("sha256", ""), tuple(record.get("registers", ()))
    what = f" (it registers {', '.join(names)})" if names else ""
    known = _LOADED.get(source)
    if known is not None and (known.given or known.sha256 == sha):
        return
    if known is None and (any(p.sha256 == sha and sha for p in _LOADED.values())
                          or (names and set(names) <= registered())):
        return  # the same content from elsewhere, or its names from a --plugin given on purpose
    if known is not None:
        raise ConfigError(f"{where}: the run was trained with another version of the plugin {source}{what} than "
                          f"another run this command read: evaluate them in separate commands")
    if "file" in record:
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"{where}: the run was trained with the plugin {source}{what}, which is gone: put it "
                              "back, or pass --plugin FILE where it is now")
        now = file_sha256(path)
        if sha and now != sha:
            raise ConfigError(f"{where}: the plugin {source}{what} has changed since the run was trained with it "
                              f"(sha256 {sha[:12]} then, {now[:12]} now): restore it, or pass --plugin {source} to "
                              "use it as it is now")
    try:
        load(source, given=False)
    except ImportError as e:
        raise ConfigError(f"{where}: the run was trained with the plugin {source}{what}, which does not import "
                          f"here ({e}): install it, or pass --plugin where it is") from None
    except Exception as e:  # a plugin's own error on import: its message, with the run that asked for it
        raise ConfigError(f"{where}: the plugin {source}{what} failed on import: {type(e).__name__}: {e}") from None


def loaded() -> tuple[Plugin, ...]:
    """The plugins this process imported, in order."""
    return tuple(_LOADED.values())
