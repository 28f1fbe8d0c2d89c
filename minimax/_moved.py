"""Import paths of modules that moved when `minimax/` became one package per concern (issue 45).

`import minimax.train` or `from minimax.build import build_runner` keep working: the old name is the
new module (the same object, not a copy), with a `DeprecationWarning` naming the new path; `python
-m minimax.reproduce` runs `minimax.cli.reproduce`. Old names are served for one release.
`minimax.config` is a package now and exports what the module did (`from minimax.config import
TrainConfig`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

MOVED = {
    "minimax.budget": "minimax.training.budget",
    "minimax.build": "minimax.training.builder",
    "minimax.checkpoint": "minimax.training.checkpoint",
    "minimax.config_checks": "minimax.config.checks",
    "minimax.config_groups": "minimax.config.groups",
    "minimax.curricula.level_sampler": "minimax.host.level_sampler",
    "minimax.curricula.return_normalizer": "minimax.host.return_normalizer",
    "minimax.curricula.segment_tree": "minimax.host.segment_tree",
    "minimax.demo": "minimax.cli.demo",
    "minimax.devices": "minimax.training.devices",
    "minimax.eval_report": "minimax.evaluation.report",
    "minimax.evaluate": "minimax.evaluation.evaluate",
    "minimax.experiments": "minimax.config.experiments",
    "minimax.host_config": "minimax.host.config",
    "minimax.host_eval": "minimax.host.scoring",
    "minimax.host_evaluate": "minimax.host.evaluate",
    "minimax.host_learner": "minimax.host.learner",
    "minimax.host_train": "minimax.host.loop",
    "minimax.method_options": "minimax.config.method_options",
    "minimax.metrics": "minimax.core.metrics",
    "minimax.options": "minimax.core.options",
    "minimax.parallel": "minimax.core.parallel",
    "minimax.plot": "minimax.evaluation.plot",
    "minimax.presets": "minimax.config",  # PRESETS is built in the config package now
    "minimax.progress": "minimax.training.progress",
    "minimax.release_config": "minimax.config.release",
    "minimax.reproduce": "minimax.cli.reproduce",
    "minimax.reproduce_table": "minimax.cli.reproduce_table",
    "minimax.run_lock": "minimax.training.run_lock",
    "minimax.run_logs": "minimax.training.run_logs",
    "minimax.saved_policies": "minimax.evaluation.saved_policies",
    "minimax.stats": "minimax.core.stats",
    "minimax.stop_signals": "minimax.training.stop_signals",
    "minimax.sweep": "minimax.cli.sweep",
    "minimax.train": "minimax.training.loop",
    "minimax.train_cli": "minimax.training.cli",
}
"""Old module path -> new module path."""


class _Alias(importlib.abc.Loader):
    """Loads an old name as the new module: the import system returns whatever `sys.modules`
    holds under the name after `exec_module`, so the old name becomes the new module itself."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        old = module.__spec__.name
        warnings.warn(f"{old} moved to {self.new}; import it from there", DeprecationWarning, stacklevel=2)
        sys.modules[old] = importlib.import_module(self.new)

    def get_code(self, fullname):
        """`python -m <old name>`: run the new module as the program (what runpy asks for)."""
        return compile(f"import runpy, sys\nprint('note: {fullname} moved to {self.new}', file=sys.stderr)\n"
                       f"runpy.run_module({self.new!r}, run_name='__main__', alter_sys=True)", fullname, "exec")

    def is_package(self, fullname):
        return False


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old module names of `MOVED` (and nothing else)."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Serve the old names (once per interpreter)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
