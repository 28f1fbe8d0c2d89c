"""gymnasium environments as a `HostEnv`: N `gymnasium.make(env_id)` instances stepped in a Python loop.

A level is a reset seed: level `s` is the episode that `env.reset(seed=s)` starts, which for
environments whose only randomness is `np_random` (classic control, toy text, most Box2D) is a
deterministic function of `s` and the actions, the same notion of level as a Procgen seed.

Auto-reset is lazy by default. A finished slot gets a placeholder level drawn from the adapter's own
numpy RNG, but the reset itself is deferred, because the PLR loop immediately replaces it through
`set_levels` and a reset can cost as much as an episode's first steps (MuJoCo, Atari). If the loop
does not replace it, the next `step` starts the placeholder episode and ignores that slot's action,
returning its first obs with reward 0 and done False (gymnasium's NEXT_STEP autoreset mode). With
`lazy_reset=False` the placeholder episode starts inside `step` instead and the done slot's obs row
is its first obs, as with Procgen.

Only Discrete action spaces (actions 0..n-1, shifted by the space's `start`) and array-shaped
observation spaces (Box, Discrete, MultiDiscrete, MultiBinary) are supported; observations keep
the space's dtype (float32 for CartPole).
"""

from __future__ import annotations

import copy

import numpy as np

from minimax.envs.host.contract import HostStep, LevelResets, as_int_array

MAX_LEVEL = 2**63 - 1           # gymnasium seeds are non-negative Python ints
_PLACEHOLDER_HIGH = 2**31 - 1   # placeholder levels: int32-range, like Procgen seeds


def _import_gymnasium():
    try:
        import gymnasium
    except ImportError as e:
        raise ModuleNotFoundError(f"gymnasium is not importable ({e}); install it with: pip install gymnasium") from e
    return gymnasium


def _make(gymnasium, env_id: str, kwargs: dict):
    """`gymnasium.make` with registry errors turned into one-line ValueErrors."""
    try:
        return gymnasium.make(env_id, **kwargs)
    except gymnasium.error.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"cannot make gymnasium env {env_id!r}: {first}") from None


class GymnasiumHostEnv(LevelResets):
    """`num_envs` gymnasium envs of one id as a `HostEnv` (see `contract.py` and the module docstring).

    get_state/set_state hold data only (no env objects, nothing pickled): each slot's level and the
    actions it has played since its episode started. `set_state` resets each slot to its level and
    replays those actions, which restores the episode exactly wherever a level is what this adapter
    assumes (`reset(seed=level)` and the actions determine the episode: classic control, toy text,
    most Box2D). Replaying costs at most one episode's steps per slot.
    """

    max_level = MAX_LEVEL

    def __init__(self, env_id: str, num_envs: int, *, seed: int = 0, lazy_reset: bool = True,
                 max_episode_steps: int | None = None, **make_kwargs):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        gymnasium = _import_gymnasium()
        if max_episode_steps is not None:
            make_kwargs["max_episode_steps"] = int(max_episode_steps)
        self._envs = [_make(gymnasium, env_id, make_kwargs) for _ in range(int(num_envs))]
        env = self._envs[0]
        if not isinstance(env.action_space, gymnasium.spaces.Discrete):
            self.close()
            message = f"gym-{env_id} has action space {env.action_space}; only Discrete action spaces are supported"
            raise ValueError(message)  # noqa: TRY004 (a bad registry name, like the other config errors)
        space = env.observation_space
        if space.shape is None or not np.issubdtype(space.dtype, np.number):
            self.close()
            raise ValueError(f"gym-{env_id} has observation space {space}; only array-shaped numeric spaces "
                             "(Box, Discrete, MultiDiscrete, MultiBinary) are supported")
        limit = env.spec.max_episode_steps if env.spec is not None else None
        if limit is None:
            self.close()
            raise ValueError(f"gym-{env_id} has no time limit in its spec; pass max_episode_steps=<int>")
        self.name, self.env_id = f"gym-{env_id}", env_id
        self.num_envs, self.num_actions = int(num_envs), int(env.action_space.n)
        self.obs_shape, self.obs_dtype = tuple(space.shape), np.dtype(space.dtype)
        self.max_episode_steps = int(limit)
        self.lazy_reset = bool(lazy_reset)
        self._action_start = int(env.action_space.start)
        self._rng = np.random.default_rng(seed)
        self._levels = np.zeros(self.num_envs, np.int64)
        self._pending = np.zeros(self.num_envs, bool)     # placeholder chosen, reset not yet done
        self._played: list[list[int]] = [[] for _ in range(self.num_envs)]  # actions since each episode began
        self._started = False

    def _obs_buffer(self, n: int) -> np.ndarray:
        return np.empty((n,) + self.obs_shape, self.obs_dtype)

    def step(self, actions) -> HostStep:
        self._check_started()
        actions = as_int_array("actions", actions, self.num_envs, 0, self.num_actions - 1) + self._action_start
        obs, reward = self._obs_buffer(self.num_envs), np.zeros(self.num_envs, np.float32)
        done, level = np.zeros(self.num_envs, bool), self._levels.copy()
        for i, env in enumerate(self._envs):
            if self._pending[i]:            # deferred placeholder: start it now, ignore the action
                obs[i] = env.reset(seed=int(self._levels[i]))[0]
                self._pending[i] = False
                continue
            o, r, terminated, truncated, _ = env.step(int(actions[i]))
            reward[i], done[i], obs[i] = r, terminated or truncated, o
            self._played[i].append(int(actions[i]))
            if done[i]:
                self._played[i] = []
                self._levels[i] = self._rng.integers(_PLACEHOLDER_HIGH)
                if self.lazy_reset:
                    self._pending[i] = True
                else:
                    obs[i] = env.reset(seed=int(self._levels[i]))[0]
        return HostStep(obs=obs, reward=reward, done=done, level=level)

    def set_levels(self, env_ids, levels) -> np.ndarray:
        ids = as_int_array("env_ids", env_ids, None, 0, self.num_envs - 1)
        levels = as_int_array("levels", levels, ids.size, 0, MAX_LEVEL)
        if np.unique(ids).size != ids.size:
            raise ValueError(f"env_ids must be distinct, got {ids.tolist()}")
        obs = self._obs_buffer(ids.size)
        for k, (i, level) in enumerate(zip(ids.tolist(), levels.tolist())):
            obs[k] = self._envs[i].reset(seed=level)[0]
            self._played[i] = []
        self._levels[ids] = levels
        self._pending[ids] = False
        return obs

    def current_levels(self) -> np.ndarray:
        return self._levels.copy()

    def get_state(self) -> dict:
        played = [np.asarray(a, np.int64) for a in self._played]
        return {"format": "minimax.gym_host/2", "name": self.name, "num_envs": self.num_envs,
                "levels": self._levels.copy(), "pending": self._pending.copy(), "started": self._started,
                "played": np.concatenate(played) if played else np.zeros(0, np.int64),
                "played_lengths": np.array([a.size for a in played], np.int64),
                "rng": copy.deepcopy(self._rng.bit_generator.state)}

    def set_state(self, state: dict) -> None:
        if state.get("format") != "minimax.gym_host/2" or (state.get("name"), state.get("num_envs")) != (
                self.name, self.num_envs):
            raise ValueError(f"state {state.get('format')!r} of {state.get('name')!r} x{state.get('num_envs')} does "
                             f"not fit {self.name!r} x{self.num_envs} (minimax.gym_host/2)")
        levels = np.asarray(state["levels"], np.int64).copy()
        pending = np.asarray(state["pending"], bool).copy()
        lengths = np.asarray(state["played_lengths"], np.int64)
        played = np.split(np.asarray(state["played"], np.int64), np.cumsum(lengths)[:-1])
        self._started = bool(state["started"])
        for i, env in enumerate(self._envs):  # the episode so far: its level's start, then its actions
            self._played[i] = played[i].tolist()
            if not self._started:
                continue
            env.reset(seed=int(levels[i]))
            for action in self._played[i]:
                env.step(action)
        self._levels, self._pending = levels, pending
        self._rng.bit_generator.state = copy.deepcopy(state["rng"])

    def render(self, env_id: int) -> np.ndarray:
        (i,) = as_int_array("env_id", [env_id], 1, 0, self.num_envs - 1).tolist()
        env = self._envs[i]
        if env.render_mode != "rgb_array":
            raise RuntimeError(f"{self.name} renders only when made with render_mode='rgb_array' "
                               f"(got {env.render_mode!r})")
        return np.asarray(env.render(), np.uint8)

    def close(self) -> None:
        for env in getattr(self, "_envs", ()):
            env.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
