"""The host-environment contract: what the training loop may assume of an environment that is
stepped on the host (numpy, outside `jit`) while the policy and PPO stay jitted.

Why a separate contract: the jitted environments of `minimax.envs` carry levels as pytrees and reset
inside `lax.scan`; host environments (Procgen's C++ games, gymnasium) cannot. What PLR needs from
them is exactly what facebookresearch/level-replay needs from Procgen: levels are integer ids
(Procgen level seeds, a gymnasium env's `reset(seed=level)`), and after every `step` the loop asks
the level sampler for a level for each env whose episode ended and forces it with `set_levels`.
Everything else (observation normalisation, frame stacking, reward scaling) is the loop's business.

Semantics the loop relies on (one vectorised env of `num_envs` slots):

* `reset(levels)` starts an episode on `levels[i]` in every slot and returns their first obs.
* `step(actions)` plays one transition in every slot. `reward[i]`, `done[i]` are those of the
  transition just played and `level[i]` names the level it was played in (for a finished episode:
  the finished level, never the one auto-reset into), so PLR scores the right level.
* Auto-reset: a slot whose episode ended holds a *placeholder* next episode. `obs[i]` of a done
  slot is provisional: eager adapters (Procgen) return the placeholder episode's first obs; lazy
  ones (gymnasium, `lazy_reset=True`) return the terminal obs and start the placeholder at the
  next `step`, which then ignores that slot's action (gymnasium's NEXT_STEP autoreset). Loops
  that drive levels (PLR, evaluation) call `set_levels` for every done slot right after `step`,
  which makes the difference moot; placeholders are adapter-specific (Procgen replays the
  finished level, gymnasium draws one from the adapter's RNG).
* `set_levels(ids, levels)` replaces the current episode of those slots with the start of the
  given levels and returns their first obs. It never touches what `step` already returned (the
  arrays of a `HostStep` are fresh copies), so the finished episode's reward/done survive.
* `get_state()` / `set_state()` snapshot and restore every slot, RNGs included, so a resumed run
  continues bit-identically (Procgen: the games' own state bytes; gymnasium: each slot's level and
  the actions since its episode began, replayed). A snapshot is data: dicts and lists of numbers,
  strings, bytes and numpy arrays, which a checkpoint stores without pickle (`minimax.host.state_files`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True, slots=True)
class HostStep:
    """One vectorised transition (leading axis: env slot).

    obs:    [N, *obs_shape] obs_dtype; rows of done slots are provisional (see the module docstring).
    reward: float32[N], the reward of the transition just played.
    done:   bool[N], True where that transition ended the episode (terminated or truncated; the
            loop cannot tell them apart, as level-replay's Procgen loop cannot).
    level:  int64[N], the level the transition was played in (for done slots: the finished one).

    Frozen and made of fresh arrays so that a later `set_levels` cannot overwrite it; the loop may
    still write into `obs` (e.g. `obs[ended] = env.set_levels(...)`).
    """

    obs: np.ndarray
    reward: np.ndarray
    done: np.ndarray
    level: np.ndarray


@runtime_checkable
class HostEnv(Protocol):
    """A vectorised host environment with integer levels and forced level switches.

    Attributes:
        num_envs: number of slots N.
        obs_shape: shape of one slot's observation (Procgen: (64, 64, 3)).
        obs_dtype: numpy dtype of observations (Procgen: uint8 HWC, left un-normalised so the
            model decides on scaling and the host->device copy stays 4x smaller).
        num_actions: size of the Discrete action space (only Discrete actions are supported).
        max_episode_steps: the environment's own time limit (Procgen: per game, e.g. 1000 for
            coinrun, 6000 for bigfish), so the loop can size buffers / bootstrap truncations.
        name: the registry name, e.g. "procgen-coinrun" or "gym-CartPole-v1".
    """

    num_envs: int
    obs_shape: tuple
    obs_dtype: np.dtype
    num_actions: int
    max_episode_steps: int
    name: str

    def reset(self, levels: np.ndarray) -> np.ndarray:
        """Start an episode on `levels[i]` (int64[N]) in every slot; returns obs[N, ...]."""
        ...

    def step(self, actions: np.ndarray) -> HostStep:
        """Play one transition with int actions[N] in every slot (auto-resetting finished ones)."""
        ...

    def set_levels(self, env_ids: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """Replace the episodes of slots `env_ids` (distinct) by the starts of `levels`; returns
        their first obs[len(env_ids), ...] in the order of `env_ids`."""
        ...

    def current_levels(self) -> np.ndarray:
        """int64[N]: the level each slot is playing now (placeholders included)."""
        ...

    def get_state(self) -> Any:
        """A snapshot of every slot (RNGs included) for exact resumption, made of data only (dicts, lists,
        numbers, strings, bytes, numpy arrays: `minimax.host.state_files` stores it without pickle)."""
        ...

    def set_state(self, state: Any) -> None:
        """Restore a snapshot from `get_state` of an adapter with the same configuration."""
        ...

    def render(self, env_id: int) -> np.ndarray:
        """uint8[H, W, 3] picture of one slot; adapters without a renderer raise RuntimeError."""
        ...

    def close(self) -> None:
        """Release native resources; the adapter is unusable afterwards."""
        ...


def as_int_array(name: str, values, size: int | None, low: int, high: int) -> np.ndarray:
    """`values` as a fresh 1-D int64 array (of length `size` if given) with entries in [low, high], or
    a one-line ValueError naming the bad value: the adapters' shared input check, so every adapter
    rejects floats, wrong shapes and out-of-range ids/levels/actions the same way."""
    arr = np.asarray(values)
    if arr.ndim != 1 or (size is not None and arr.shape[0] != size):
        raise ValueError(f"{name} must be a 1-D array of length {size if size is not None else 'k'}, "
                         f"got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    bad = (arr < low) | (arr > high)
    if bad.any():
        raise ValueError(f"{name} must lie in [{low}, {high}], got {arr[bad][0]}")
    return arr


class LevelResets:
    """What the adapters share beyond the input check: `reset(levels)` is `set_levels` on every slot,
    and `step` before any reset is an error. An adapter sets `max_level` (its highest level id) and
    `_started = False`, and calls `_check_started()` first thing in `step`."""

    max_level: int

    def reset(self, levels) -> np.ndarray:
        obs = self.set_levels(np.arange(self.num_envs),
                              as_int_array("levels", levels, self.num_envs, 0, self.max_level))
        self._started = True
        return obs

    def _check_started(self) -> None:
        if not self._started:
            raise RuntimeError(f"{self.name}: call reset(levels) before step()")
