"""Host environments: non-JAX environments stepped on the host (numpy) with integer levels that a
level sampler (PLR) forces after every episode end, while the policy and PPO stay jitted.

`make_host_env(name, num_envs, ...)` builds one by registry name:

* `procgen-<game>`: a Procgen game (`ProcgenHostEnv`); levels are procgen level seeds. Needs
  `pip install cffi imageio && pip install --no-deps procgen-mirror gym3` (not the unmaintained
  `gym`: see `procgen.import_procgen`).
* `gym-<gymnasium id>`: N gymnasium envs in a Python loop (`GymnasiumHostEnv`), level = the
  `reset(seed=level)` seed; Discrete action spaces only.

The contract every adapter follows (and the loop may rely on) is `contract.HostEnv`. Nothing here
imports procgen or gymnasium until an env of that kind is made.
"""

from __future__ import annotations

from minimax.envs.host.contract import HostEnv, HostStep
from minimax.envs.host.procgen import GAMES as PROCGEN_GAMES
from minimax.envs.host.procgen import validate_procgen_args

__all__ = ["PROCGEN_GAMES", "HostEnv", "HostStep", "is_host_env", "make_host_env"]

_PREFIXES = ("procgen-", "gym-")


def is_host_env(name: str) -> bool:
    """True for names this registry builds (they start with `procgen-` or `gym-`)."""
    return isinstance(name, str) and name.startswith(_PREFIXES)


def make_host_env(name: str, num_envs: int, *, distribution_mode: str = "easy", seed: int = 0, **kw) -> HostEnv:
    """The host env called `name` with `num_envs` slots.

    `distribution_mode` applies to Procgen only (easy/hard for every game; extreme and memory for
    some); `seed` seeds the adapter's own numpy RNG. Extra keywords go to the adapter: Procgen's
    `num_threads`, `cache_size` and visual options (`center_agent`, `use_backgrounds`, ...);
    gymnasium's `lazy_reset`, `max_episode_steps` and `gymnasium.make` keywords. Bad input raises a
    one-line ValueError that names the bad value and the choices.
    """
    if not is_host_env(name):
        raise ValueError(f"unknown host env {name!r}; expected 'procgen-<game>' "
                         f"(games: {', '.join(PROCGEN_GAMES)}) or 'gym-<gymnasium id>' (e.g. gym-CartPole-v1)")
    if name.startswith("procgen-"):
        game = name.removeprefix("procgen-")
        validate_procgen_args(game, distribution_mode, num_envs)
        from minimax.envs.host.procgen import ProcgenHostEnv

        return ProcgenHostEnv(game, num_envs, distribution_mode=distribution_mode, seed=seed, **kw)
    if distribution_mode != "easy":
        raise ValueError(f"distribution_mode {distribution_mode!r} applies to procgen-* envs only, not {name!r}")
    from minimax.envs.host.gym_env import GymnasiumHostEnv

    return GymnasiumHostEnv(name.removeprefix("gym-"), num_envs, seed=seed, **kw)
