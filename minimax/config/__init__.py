"""The training configuration: the typed tree (`tree.py`), its option groups (`groups.py`), the
checks across groups (`checks.py`), the published presets (`presets.py`, data), the minimax
release's JSON configs (`release.py`), where each option lives and which a run may set (`table.py`,
assembled from the method and environment registries) and which runs are seeds of one experiment
(`experiments.py`).

Reads the registries (`core/methods.py`, `envs/registry.py`) and imports nothing from `runners/`;
below training and evaluation.
"""

from minimax.config.checks import METHODS, MUTATION_METHODS, PLR_METHODS, TEACHER_METHODS, episode_limit
from minimax.config.presets import PRESET_OPTIONS, preset_method
from minimax.config.table import GROUPS, OPTION_TYPES, OPTIONS, flat_config, unused_options
from minimax.config.tree import PRESETS, TrainConfig
from minimax.core.options import ConfigError

__all__ = ["ConfigError", "GROUPS", "METHODS", "MUTATION_METHODS", "OPTIONS", "OPTION_TYPES", "PLR_METHODS",
           "PRESETS", "PRESET_OPTIONS", "TEACHER_METHODS", "TrainConfig", "episode_limit", "flat_config",
           "preset_method", "unused_options"]
