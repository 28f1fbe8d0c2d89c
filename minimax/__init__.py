"""minimax: fully-jitted autocurricula (Unsupervised Environment Design) in JAX.

What a script or notebook needs, importable from here:

    import jax, minimax
    cfg = minimax.PRESETS["dr"].replace(num_updates=100, num_envs=32)
    train = minimax.make_train(cfg)                       # one seed: train(key) -> result
    result = jax.jit(jax.vmap(train))(jax.random.split(jax.random.key(0), 4))   # four seeds, one program

- configs: `TrainConfig`, `PRESETS`, `ConfigError`;
- training: `make_train` (a pure, jittable program; `train(key, hp)`), `run_training` (the command's
  loop: logs, checkpoints, evaluation, resume), `train_group` (several runs that differ only in traced
  options as one program), `hp_arrays` and `traced_options` (hyperparameters as data);
- extending: `register_method` / `Method` / `plr_method` (a curriculum), `register_score` (a level
  score), `register_env` (an environment), and `make` (gymnax-style `(env, env_params)`), `get_env`,
  `env_names`, `method_names`; a PLR variant subclasses `RobustPLRRunner` and overrides one hook
  (`decide_replay`: when to replay; `replay_distribution`: which levels; `generator`: the new levels), with
  `buffer_ready`, `fill_ratio` and `transform_weights` (the buffer's rank / power transforms) at hand;
- evaluation: `evaluate_runs` (what `evaluate.py` does), `load_policies`.

Names are loaded on first use, so `import minimax` stays cheap (plots and tools that never train
do not start JAX).
"""

from __future__ import annotations

import importlib

from minimax.core.versions import VERSION as __version__

_EXPORTS = {
    "TrainConfig": "minimax.config", "PRESETS": "minimax.config", "ConfigError": "minimax.config",
    "make_train": "minimax.training.make_train", "run_training": ("minimax.training.loop", "train"),
    "hp_arrays": "minimax.config.hyperparams", "traced_options": "minimax.config.hyperparams",
    "train_group": "minimax.training.group",
    "make": "minimax.training.builder", "build_runner": "minimax.training.builder",
    "Method": "minimax.runners", "register_method": "minimax.runners", "get_method": "minimax.runners",
    "method_names": "minimax.runners", "plr_method": "minimax.runners", "RobustPLRRunner": "minimax.runners",
    "buffer_ready": "minimax.runners.plr_parts", "fill_ratio": "minimax.curricula.level_buffer",
    "transform_weights": "minimax.curricula.weights",
    "register_score": "minimax.curricula.scores", "ScoreInputs": "minimax.curricula.scores",
    "register_env": ("minimax.envs.registry", "register"), "get_env": "minimax.envs.registry",
    "env_names": "minimax.envs.registry", "UEDEnv": "minimax.envs.registry",
    "evaluate_runs": "minimax.evaluation.evaluate", "load_policies": "minimax.evaluation.saved_policies",
}
"""Public name -> module (or `(module, attribute)` where the name differs)."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'minimax' has no attribute {name!r}")
    module, attribute = target if isinstance(target, tuple) else (target, name)
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
