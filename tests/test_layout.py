"""The house's shape: layers import only downwards, modules and functions stay readable, the public
API resolves, and the module paths of before the packages still import."""

import ast
from pathlib import Path

import pytest

import minimax

PACKAGE = Path(minimax.__file__).resolve().parent
LAYERS = {"core": 0, "envs": 1, "models": 1, "agents": 1, "curricula": 2, "runners": 3, "config": 4, "training": 5,
          "host": 6, "evaluation": 7, "cli": 8}
"""Subpackage -> floor: a module imports from its own subpackage and from lower floors only
(`envs`, `models`, `agents` share one: an environment names its student network)."""
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if len(p.relative_to(PACKAGE).parts) > 1)


LOADS_UPWARD = {("core/methods.py", "minimax.runners"):
                "the method registry imports the built-in methods' modules on its first lookup (each registers "
                "itself), so `get_method('dr')` works wherever the registry is read; nothing at import time"}
"""The only imports allowed to point upwards, each a module loaded by name at run time, and why."""


def imports(path: Path):
    """`(module, line)` of every import of `path`: statements, and `importlib.import_module` of a string
    constant or of a module-level name bound to one (a load by name is an import too)."""
    tree = ast.parse(path.read_text())
    constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                 for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)
                 and isinstance(n.value.value, str)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, node.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args):
            arg = node.args[0]
            name = arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", None))
            if isinstance(name, str) and name.startswith("minimax"):
                yield name, node.lineno


def test_only_the_commands_read_the_command_line():
    """`sys.argv` is read by the commands in `cli/` only: every other module takes its arguments."""
    readers = [f"{p.relative_to(PACKAGE)}:{node.lineno}" for p in MODULES if p.relative_to(PACKAGE).parts[0] != "cli"
               for node in ast.walk(ast.parse(p.read_text()))
               if isinstance(node, ast.Attribute) and node.attr == "argv" and isinstance(node.value, ast.Name)
               and node.value.id == "sys"]
    assert not readers, readers


def test_the_config_imports_nothing_from_the_runners():
    """`config/` reads the method registry (`core/methods.py`); the option groups it assembles are declared by
    the methods and environments that own them, so no module of `config/` names a runner module."""
    named = [f"{p.relative_to(PACKAGE)}:{line} {module}" for p in MODULES if p.relative_to(PACKAGE).parts[0] == "config"
             for module, line in imports(p) if module.startswith("minimax.runners")]
    assert not named, named


def test_every_module_lives_in_a_layer():
    assert {p.relative_to(PACKAGE).parts[0] for p in MODULES} == set(LAYERS)
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py"], top


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_downwards_only(path):
    own = path.relative_to(PACKAGE).parts[0]
    upward = []
    for module, line in imports(path):
        parts = module.split(".")
        if parts[0] != "minimax" or len(parts) < 2:
            assert module != "minimax", f"{path}:{line} imports the package's top level (import from its module)"
            continue
        other = parts[1]
        assert other in LAYERS, f"{path}:{line} imports {module}, which is in no layer"
        if LAYERS[other] > LAYERS[own] and (str(path.relative_to(PACKAGE)), module) not in LOADS_UPWARD:
            upward.append(f"line {line}: {module}")
    assert not upward, f"{path.relative_to(PACKAGE)} imports upwards: {upward}"


def test_the_loads_by_name_are_seen():
    """`core/methods.py` loads `minimax.runners` by name: the layer check sees it (and allows only it)."""
    seen = {(str(p.relative_to(PACKAGE)), m) for p in MODULES for m, _ in imports(p)}
    assert set(LOADS_UPWARD) <= seen


def test_modules_and_functions_stay_readable():
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 400:
            too_long.append(f"{path.relative_to(PACKAGE)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                too_long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not too_long, f"over 400 lines per module or 80 per function: {too_long}"


def test_public_api_resolves():
    for name in minimax.__all__:
        assert getattr(minimax, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        minimax.nope  # noqa: B018


