"""The training configuration: the typed tree (`tree.py`), its option groups (`groups.py`), the
checks across groups (`checks.py`), the published presets (`presets.py`, data), the minimax
release's JSON configs (`release.py`), which options each method reads (`method_options.py`) and
which runs are seeds of one experiment (`experiments.py`).

Sits above the runners (whose option groups it collects) and below training and evaluation.
"""

from minimax.config.checks import METHODS, MUTATION_METHODS, PLR_METHODS, TEACHER_METHODS, episode_limit
from minimax.config.presets import PRESET_OPTIONS, preset_method
from minimax.config.tree import GROUPS, OPTION_TYPES, OPTIONS, PRESETS, TrainConfig, flat_config
from minimax.core.options import ConfigError

__all__ = ["ConfigError", "GROUPS", "METHODS", "MUTATION_METHODS", "OPTIONS", "OPTION_TYPES", "PLR_METHODS",
           "PRESETS", "PRESET_OPTIONS", "TEACHER_METHODS", "TrainConfig", "episode_limit", "flat_config",
           "preset_method"]
