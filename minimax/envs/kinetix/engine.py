"""Importing Kinetix (`kinetix-env`) without its training stack, and its objects for one size class.

`kinetix/util/__init__.py` imports the authors' whole training code (hydra, omegaconf, grain, zarr,
their wandb logging), although the environment only needs `kinetix.util.saving` (the level JSON
reader). Registering `kinetix.util` as an empty package before the first import skips that
`__init__` and keeps the install to the physics engine (`jax2d`), the renderer (`jaxgl`) and
`safetensors`; submodules of `kinetix.util` still import normally from its folder.

`kinetix_objects(size, frame_skip, max_steps, dense_reward_scale, obs)` builds the authors' env object
for those static settings once (`make_kinetix_env` with multi-discrete actions, the flat symbolic or
the entity observation, no reset function: minimax resets to levels itself).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types

import jax
import jax.numpy as jnp


def _register_util_package() -> None:
    if "kinetix.util" in sys.modules:
        return
    spec = importlib.util.find_spec("kinetix")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'kinetix' (the kinetix-env package)")
    import kinetix  # noqa: F401, PLC0415 (the parent package first: its __init__ is empty)

    util = types.ModuleType("kinetix.util")
    util.__path__ = [f"{spec.submodule_search_locations[0]}/util"]
    util.__package__ = "kinetix.util"
    sys.modules["kinetix.util"] = util


_register_util_package()


class _NumpyWith2DCross(types.ModuleType):
    """`jax.numpy` for jax2d's modules, whose `cross` also takes 2-D vectors: the z-component `a0 b1 - a1 b0`
    (over the last axis), which jax 0.11 deprecated and jax 0.12 refuses ("Dimension must be 3"). jax2d 1.0.2
    (Kinetix's engine) calls it on 2-D vectors for every torque and impulse, so without this every Kinetix
    step fails on the newest jax. Installed on every jax, so all versions compute the same operations."""

    def __getattr__(self, name):
        return getattr(jnp, name)

    @staticmethod
    def cross(a, b, *args, **kwargs):
        a, b = jnp.asarray(a), jnp.asarray(b)
        if a.shape[-1:] == (2,) and b.shape[-1:] == (2,) and not args and not kwargs:
            return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
        return jnp.cross(a, b, *args, **kwargs)


def _engine_with_2d_cross() -> None:
    import jax2d.collision  # noqa: PLC0415
    import jax2d.engine  # noqa: PLC0415
    import jax2d.joint  # noqa: PLC0415

    for module in (jax2d.collision, jax2d.engine, jax2d.joint):
        if not isinstance(module.jnp, _NumpyWith2DCross):
            module.jnp = _NumpyWith2DCross("jax.numpy")


_engine_with_2d_cross()

from kinetix.environment import (  # noqa: E402
    ActionType, EnvParams, EnvState, ObservationType, UEDParams, make_kinetix_env, make_mutate_env,
    sample_kinetix_level, static_env_params_from_size,
)
from kinetix.util.saving import expand_env_state, load_evaluation_levels  # noqa: E402

SIZES = ("s", "m", "l")
OBSERVATIONS = {"flat": ObservationType.SYMBOLIC_FLAT, "entity": ObservationType.SYMBOLIC_ENTITY}
"""`--kinetix-obs`: the authors' observation types we run (`symbolic_flat`, `symbolic_entity`)."""

__all__ = ["EnvParams", "EnvState", "UEDParams", "OBSERVATIONS", "SIZES", "expand_env_state", "kinetix_objects",
           "load_evaluation_levels",
           "make_mutate_env", "sample_kinetix_level", "static_env_params_from_size"]


@functools.lru_cache(maxsize=None)
def kinetix_objects(size: str, frame_skip: int, max_steps: int, dense_reward_scale: float, obs: str = "flat"):
    """`(env, env_params, static_env_params)`: the authors' `KinetixEnv` for a size class.

    Built eagerly even inside a `jit` trace (their constructors compute arrays that the env keeps,
    which must be constants, not tracers) and cached per settings."""
    if size not in SIZES:
        raise ValueError(f"Kinetix size class must be one of {', '.join(SIZES)}, got {size!r}")
    if obs not in OBSERVATIONS:
        raise ValueError(f"Kinetix observation must be one of {', '.join(OBSERVATIONS)}, got {obs!r}")
    with jax.ensure_compile_time_eval():
        static = static_env_params_from_size(size).replace(frame_skip=int(frame_skip))
        params = EnvParams().replace(max_timesteps=int(max_steps), dense_reward_scale=float(dense_reward_scale))
        env = make_kinetix_env(ActionType.MULTI_DISCRETE, OBSERVATIONS[obs], None, params, static,
                               auto_reset=False)
    return env, params, static
