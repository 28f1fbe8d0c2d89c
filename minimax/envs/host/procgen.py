"""Procgen as a `HostEnv`: `ProcgenGym3Env` stepped by procgen's own C++ threads, with any level seed
forced into any slot at any time, exactly as facebookresearch/level-replay does for PLR.

How a level is forced. Procgen has no "reset slot i to seed s" call, but it serialises a slot's whole
game (`get_state`/`set_state`, used by procgen's own state tests). The start state of seed s is the
state of a fresh `ProcgenGym3Env(num=1, start_level=s, num_levels=1)`; we set those bytes into slot i.
Because that state also carries `level_seed_low/high = s, s+1`, procgen's own auto-reset at the end
of the episode replays s: the placeholder level of a finished slot is the finished level itself.

Why not build a fresh env per seed: it costs ~0.5 ms and leaks ~11 KB per env inside cffi (measured;
gym3 re-creates its ffi objects per env), which an evaluation over 10^5 seeds cannot afford. Instead
one helper env (num=1, no threads) makes start states: patch its pristine state's level range to
[s, s+1), `set_state`, take one step with action -1 (procgen's "force reset" action), `get_state`.
That forced step runs one `game_step` on the helper's old level before `game_reset`, and a few
per-step scratch fields survive the reset (e.g. `step_rand_int`, `move_action`, `action_vx`, miner's
`diamonds_remaining`, bossfight's `rand_pct*`, the header's reward/last_reward). Their values after
the forced step do not depend on s (the step ran on the same old level every time) and their values
in a fresh env are the constructor's (= the pristine helper's), so copying those fields back from
the pristine state restores the fresh env's bytes exactly. Which fields differ is *calibrated* once
per (game, mode, options) against truly fresh envs and verified on further seeds; if a procgen
build ever breaks the layout assumptions we fall back to building a fresh env per seed (exact, but
slow and leaky) with a warning. The result is byte-identical to the fresh env's state (tested for all
16 games), so a forced level plays bit for bit the episode a fresh single-level env plays.

Start states are cached per seed in a bounded LRU (default 4096 entries; 20-40 KB each, so up to
~150 MB): PLR replays a few hundred seeds, evaluation draws thousands of distinct ones.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import sys
import time
import types
import warnings
from collections import OrderedDict

import numpy as np

from minimax.envs.host.contract import HostStep, LevelResets, as_int_array

GAMES = ("bigfish", "bossfight", "caveflyer", "chaser", "climber", "coinrun", "dodgeball", "fruitbot",
         "heist", "jumper", "leaper", "maze", "miner", "ninja", "plunder", "starpilot")
# Which distribution modes procgen's C++ accepts per game (game.cpp `parse_options`; it aborts the
# process on others, hence checking here). "exploration" pins procgen to one fixed level seed and so
# contradicts forced levels: we reject it and say how to get the same level.
_MODE_GAMES = {
    "easy": GAMES,
    "hard": GAMES,
    "extreme": ("chaser", "dodgeball", "leaper", "starpilot"),
    "memory": ("caveflyer", "dodgeball", "heist", "jumper", "maze", "miner"),
}
# Visual options a user may pass through (they are part of each slot's serialised state, so the
# helper env must use the same ones). `use_generated_assets` is excluded: procgen cannot serialise it.
VISUAL_OPTIONS = ("center_agent", "use_backgrounds", "use_monochrome_assets", "restrict_themes", "paint_vel_info")
INSTALL_HINT = "pip install cffi imageio && pip install --no-deps procgen-mirror gym3"
MAX_LEVEL = 2**31 - 2          # level_seed_high = s + 1 must fit procgen's int32
_HELPER_RAND_SEED = 0          # fixed, so the start state of seed s depends on (game, mode, options, s) only
_CALIBRATION_SEEDS = (1, 2)    # mask fitted on these ...
_VERIFY_SEEDS = (3, 1_000_003)  # ... and checked on these
_MAX_STATE = 2**20             # procgen's MAX_STATE_SIZE
_END_OF_BUFFER = struct.unpack("<i", struct.pack("<I", 0xCAFECAFE))[0]


def procgen_modes(game: str) -> tuple[str, ...]:
    """The distribution modes `game` supports here."""
    return tuple(mode for mode, games in _MODE_GAMES.items() if game in games)


def validate_procgen_args(game: str, distribution_mode: str, num_envs: int) -> None:
    """One-line ValueErrors for a bad game, mode or env count (no procgen import needed)."""
    if game not in GAMES:
        raise ValueError(f"unknown procgen game {game!r}; choose one of: {', '.join(GAMES)}")
    if distribution_mode == "exploration":
        raise ValueError(f"distribution_mode 'exploration' pins {game} to a single level and cannot take forced "
                         f"levels; use 'hard' and that level seed (procgen.env.EXPLORATION_LEVEL_SEEDS)")
    if distribution_mode not in procgen_modes(game):
        raise ValueError(f"distribution_mode {distribution_mode!r} is not available for procgen {game}; "
                         f"choose one of: {', '.join(procgen_modes(game))}")
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")


def import_procgen():
    """`import procgen`, or a ModuleNotFoundError that gives the install command.

    procgen's `__init__` registers gym ids via `from gym.envs.registration import register`, the
    only reason it needs the unmaintained `gym` package (gym3 imports gym lazily, in its gym
    converters, which we do not use). When `gym` is not installed we put a stand-in module with a
    no-op `register` into `sys.modules` for the duration of the import and remove it afterwards
    (restoring what was there), so a later `import gym` still fails as it should.
    """
    if sys.modules.get("procgen") is not None:
        return sys.modules["procgen"]
    shim = ("gym", "gym.envs", "gym.envs.registration") if _gym_missing() else ()
    saved = {name: sys.modules[name] for name in shim if name in sys.modules}   # e.g. a blocking None
    for name in shim:
        sys.modules[name] = types.ModuleType(name)
    if shim:
        sys.modules["gym.envs.registration"].register = lambda *args, **kwargs: None
        sys.modules["gym"].envs = sys.modules["gym.envs"]
        sys.modules["gym.envs"].registration = sys.modules["gym.envs.registration"]
    try:
        import procgen
    except ImportError as e:
        if sys.version_info >= (3, 13):
            raise ModuleNotFoundError(f"procgen is not importable ({e}): procgen-mirror has no wheel for Python "
                                      f"{sys.version_info.major}.{sys.version_info.minor}; use Python 3.11 or 3.12, "
                                      f"then: {INSTALL_HINT}") from e
        raise ModuleNotFoundError(f"procgen is not importable ({e}); install it with: {INSTALL_HINT}") from e
    finally:
        for name in shim:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
    return procgen


def _gym_missing() -> bool:
    try:
        return importlib.util.find_spec("gym") is None
    except (ImportError, ValueError):
        return True


# ---------------------------------------------------------------- serialised-state layout
# Byte layout of one slot's state (procgen game.cpp / basic-abstract-game.cpp `serialize`, all
# little-endian 4-byte fields; strings and vectors are length-prefixed). We only locate the regions
# the start-state patching touches.
_I32 = struct.Struct("<i")
_ENTITY_FIELDS = 31       # Entity::serialize
_GAME_SCALARS = 15        # Game::serialize after rand_gen: step_data.reward ... is_waiting_for_step
_BASIC_SCALARS = 19       # BasicAbstractGame::serialize after the entities, up to step_rand_int


def _layout(b: bytes) -> dict:
    """Offsets: `low` (level_seed_low; high follows), `seed_rng` (start, end) of level_seed_rand_gen,
    region anchors `step` (Game scalars), `basic` (BasicAbstractGame scalars), `tail` (game-specific
    fields after the grid, up to the END_OF_BUFFER marker), `timeout`, `size`."""
    def skip_rng(o):                                   # is_seeded, then the mt19937 text
        return o + 8 + _I32.unpack_from(b, o + 4)[0]

    o = 8 + _I32.unpack_from(b, 4)[0] + 12 * 4       # version, game name, 12 option ints
    low, seed_rng = o + 4, o + 5 * 4                   # grid_step, low, high, game_type, game_n
    step = skip_rng(skip_rng(seed_rng))                # level_seed_rand_gen, rand_gen
    o = step + _GAME_SCALARS * 4 + 4                   # + grid_size
    basic = o + 4 + _I32.unpack_from(b, o)[0] * _ENTITY_FIELDS * 4
    o = skip_rng(basic + _BASIC_SCALARS * 4) + 9 * 4 + 8   # asset_rand_gen, 9 scalars, grid w, h
    tail = o + 4 + _I32.unpack_from(b, o)[0] * 4
    if tail > len(b) - 4 or _I32.unpack_from(b, len(b) - 4)[0] != _END_OF_BUFFER:
        raise ValueError("unexpected procgen state layout")
    return {"low": low, "seed_rng": (seed_rng, skip_rng(seed_rng)), "step": step, "basic": basic,
            "tail": tail, "timeout": step + 16, "size": len(b)}


def _field_mask(truth: bytes, made: bytes) -> set | None:
    """The 4-byte fields where `made` differs from `truth`, as (anchor, offset) pairs that locate the
    same field in any state of the game; None if a difference lies outside the fixed-layout regions."""
    if len(truth) != len(made):
        return None
    lay = _layout(truth)
    mask = set()
    for p in np.flatnonzero(np.frombuffer(truth, np.uint8) != np.frombuffer(made, np.uint8)).tolist():
        if lay["step"] <= p < lay["step"] + _GAME_SCALARS * 4:
            mask.add(("step", (p - lay["step"]) // 4 * 4))
        elif lay["basic"] <= p < lay["basic"] + _BASIC_SCALARS * 4:
            mask.add(("basic", (p - lay["basic"]) // 4 * 4))
        elif p >= lay["tail"]:
            mask.add(("end", ((lay["size"] - p - 1) // 4 + 1) * 4))
        else:
            return None
    return mask


class LevelStarts:
    """Start states of level seeds for one (game, mode, options), made by a helper env and cached
    in a bounded LRU. `get(s)` returns the bytes to `set_state` into any slot."""

    def __init__(self, make_env, game: str, mode: str, options: dict, cache_size: int = 4096):
        self._make_env = lambda start: make_env(num=1, env_name=game, distribution_mode=mode, num_threads=0,
                                                start_level=start, num_levels=1,
                                                rand_seed=_HELPER_RAND_SEED, **options)
        self._helper = self._make_env(0)
        self._buf = self._helper._ffi.new(f"char[{_MAX_STATE}]")
        self._base = self._read(self._helper)
        self._base_layout = _layout(self._base)
        self.timeout = _I32.unpack_from(self._base, self._base_layout["timeout"])[0]
        self.capacity = int(cache_size)
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self.hits = self.misses = 0
        self.make_seconds = 0.0
        self._mask = self._calibrate()
        if self._mask is None:
            warnings.warn(f"procgen {game}/{mode}: start-state patching did not reproduce fresh envs; "
                          "falling back to one fresh env per level seed (exact, ~0.5 ms and ~11 KB leaked "
                          "in cffi per new seed)", RuntimeWarning, stacklevel=3)

    def get(self, seed: int) -> bytes:
        state = self._cache.get(seed)
        if state is not None:
            self.hits += 1
            self._cache.move_to_end(seed)
            return state
        self.misses += 1
        tick = time.perf_counter()
        state = self._fresh(seed) if self._mask is None else self._patched(seed, self._mask)
        self.make_seconds += time.perf_counter() - tick
        if self.capacity > 0:
            self._cache[seed] = state
            if len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return state

    def info(self) -> dict:
        return {"hits": self.hits, "misses": self.misses, "size": len(self._cache), "capacity": self.capacity,
                "make_seconds": self.make_seconds, "patched": self._mask is not None}

    def close(self) -> None:
        self._helper.close()
        self._cache.clear()

    def _read(self, env) -> bytes:
        n = env.call_c_func("get_state", 0, self._buf, _MAX_STATE)
        return bytes(env._ffi.buffer(self._buf, n))

    def _fresh(self, seed: int) -> bytes:
        env = self._make_env(seed)
        try:
            return self._read(env)
        finally:
            env.close()

    def _patched(self, seed: int, mask) -> bytes:
        """Force-reset the helper into `seed`, then restore the pristine fields listed in `mask`."""
        base, lb = self._base, self._base_layout
        start = bytearray(base)
        _I32.pack_into(start, lb["low"], seed)
        _I32.pack_into(start, lb["low"] + 4, seed + 1)
        self._helper.call_c_func("set_state", 0, bytes(start), len(start))
        self._helper.act(np.full(1, -1, np.int32))
        made = self._read(self._helper)
        lm = _layout(made)
        (a, b), (c, d) = lm["seed_rng"], lb["seed_rng"]
        out = bytearray(made[:a] + base[c:d] + made[b:])   # the pristine level-seed RNG (unused: range 1)
        lo = _layout(out)
        for anchor, rel in mask:
            src = lb["size"] - rel if anchor == "end" else lb[anchor] + rel
            dst = lo["size"] - rel if anchor == "end" else lo[anchor] + rel
            out[dst:dst + 4] = base[src:src + 4]
        return bytes(out)

    def _calibrate(self) -> set | None:
        try:
            mask = set()
            for seed in _CALIBRATION_SEEDS:
                part = _field_mask(self._fresh(seed), self._patched(seed, ()))
                if part is None:
                    return None
                mask |= part
            if any(self._patched(seed, mask) != self._fresh(seed) for seed in _VERIFY_SEEDS):
                return None
            return mask
        except (ValueError, struct.error, IndexError):
            return None


class ProcgenHostEnv(LevelResets):
    """`num_envs` slots of one Procgen game as a `HostEnv` (see `contract.py`).

    Levels are procgen level seeds in [0, 2^31 - 2]. Observations are uint8[N, 64, 64, 3] (RGB, HWC).
    `max_episode_steps` is procgen's own per-game timeout read from the game state (1000 for most
    games; bigfish 6000, bossfight and plunder 4000, jumper 2000 in memory mode, leaper and maze 500).
    `seed` only seeds procgen's internal level RNG, which forced levels override: an episode is a
    pure function of (game, mode, options, level seed, actions).
    """

    max_level = MAX_LEVEL

    def __init__(self, game: str, num_envs: int, *, distribution_mode: str = "easy", seed: int = 0,
                 num_threads: int | None = None, cache_size: int = 4096, **options):
        validate_procgen_args(game, distribution_mode, num_envs)
        unknown = sorted(set(options) - set(VISUAL_OPTIONS))
        if unknown:
            raise ValueError(f"unknown procgen option {unknown[0]!r}; choose from: {', '.join(VISUAL_OPTIONS)}")
        if num_threads is not None and num_threads < 0:     # procgen would abort the process
            raise ValueError(f"num_threads must be >= 0 (0: step on the calling thread), got {num_threads!r}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0 (0: no cache), got {cache_size!r}")
        procgen = import_procgen()
        self.name, self.game, self.distribution_mode = f"procgen-{game}", game, distribution_mode
        self.num_envs = int(num_envs)
        self._options = {k: bool(v) for k, v in options.items()}
        self._rng = np.random.default_rng(seed)
        threads = min(os.cpu_count() or 1, self.num_envs, 8) if num_threads is None else int(num_threads)
        self._starts = LevelStarts(procgen.ProcgenGym3Env, game, distribution_mode, self._options, cache_size)
        self._env = procgen.ProcgenGym3Env(num=self.num_envs, env_name=game, distribution_mode=distribution_mode,
                                           num_threads=threads, start_level=0, num_levels=1,
                                           rand_seed=int(self._rng.integers(2**31 - 1)), **self._options)
        self.num_actions = int(self._env.ac_space.eltype.n)
        self.obs_shape = tuple(self._env.observe()[1]["rgb"].shape[1:])
        self.obs_dtype = np.dtype(np.uint8)
        self.max_episode_steps = int(self._starts.timeout)
        self._levels = np.zeros(self.num_envs, np.int64)
        self._started = False

    def step(self, actions) -> HostStep:
        self._check_started()
        actions = as_int_array("actions", actions, self.num_envs, 0, self.num_actions - 1)
        self._env.act(actions.astype(np.int32))
        reward, obs, first = self._env.observe()          # fresh copies (gym3 copies on observe)
        # gym3: reward/first after act() describe the transition just taken; first[i] means slot i
        # auto-reset, i.e. that transition ended the episode. Slots replay their own seed on
        # auto-reset (level range [s, s+1)), so the level played is the one we track.
        return HostStep(obs=obs["rgb"], reward=reward.astype(np.float32, copy=False),
                        done=first.astype(bool), level=self._levels.copy())

    def set_levels(self, env_ids, levels) -> np.ndarray:
        ids = as_int_array("env_ids", env_ids, None, 0, self.num_envs - 1)
        levels = as_int_array("levels", levels, ids.size, 0, MAX_LEVEL)
        if np.unique(ids).size != ids.size:
            raise ValueError(f"env_ids must be distinct, got {ids.tolist()}")
        for i, seed in zip(ids.tolist(), levels.tolist()):
            state = self._starts.get(seed)
            self._env.call_c_func("set_state", i, state, len(state))
        self._levels[ids] = levels
        return self._env.observe()[1]["rgb"][ids]

    def current_levels(self) -> np.ndarray:
        return self._levels.copy()

    def cache_info(self) -> dict:
        """Start-state cache statistics: hits, misses, size, capacity, make_seconds, patched."""
        return self._starts.info()

    def get_state(self) -> dict:
        return {"format": "minimax.procgen_host/1", "name": self.name, "distribution_mode": self.distribution_mode,
                "options": dict(self._options), "num_envs": self.num_envs,
                "slots": self._env.callmethod("get_state"), "levels": self._levels.copy(),
                "started": self._started, "rng": self._rng.bit_generator.state}

    def set_state(self, state: dict) -> None:
        mine = (self.name, self.distribution_mode, self._options, self.num_envs)
        theirs = tuple(state.get(k) for k in ("name", "distribution_mode", "options", "num_envs"))
        if state.get("format") != "minimax.procgen_host/1" or theirs != mine:
            raise ValueError(f"state of {theirs} does not fit this env {mine}")
        self._env.callmethod("set_state", list(state["slots"]))
        self._levels = np.asarray(state["levels"], np.int64).copy()
        self._started = bool(state["started"])
        self._rng.bit_generator.state = state["rng"]

    def render(self, env_id: int) -> np.ndarray:
        (i,) = as_int_array("env_id", [env_id], 1, 0, self.num_envs - 1).tolist()
        return self._env.observe()[1]["rgb"][i]

    def close(self) -> None:
        if getattr(self, "_env", None) is not None:
            self._env.close()
            self._starts.close()
            self._env = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
