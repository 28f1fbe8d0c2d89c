"""Craftax-Classic as a UED environment: a level is a generated world, played by craftax's own rules.

Craftax-Classic (Matthews et al., 2024) is Crafter in JAX: a 64x64 open world of grass,
water, stone, trees, ores, lava and mobs, where an agent survives (food, drink, energy,
health) and unlocks 22 achievements (collect wood, place a table, ..., collect a diamond).
It is a natural UED domain because its difficulty lives in the world: how far the trees,
water and ores are from the start, how much lava lies in the way. This module exposes it
through minimax's `Environment` API so that DR, PLR and ACCEL can sample, score, replay
and mutate worlds like mazes.

What is reused and what is ours. World generation (`craftax_classic.world_gen.generate_world`),
the dynamics (`craftax_classic.game_logic.craftax_step`, `is_game_over`) and the symbolic
observation (`craftax_classic.renderer.render_craftax_symbolic`) are craftax's own functions,
called as they are: an episode here is step-for-step the episode of craftax's
`CraftaxClassicSymbolicEnvNoAutoReset` from the same state with the same keys (the tests
check it). Ours is only the level/episode split that UED needs:

- A *level* is craftax's `EnvState` exactly as `generate_world` returns it for a key (map,
  start position, empty mob tables, full intrinsics, clock at 0), made canonical
  (`canonical_world`): every leaf a strongly typed array, and `state_rng` stored as raw
  `uint32[2]` key data rather than a typed key. Why: levels go into the PLR buffer, get
  hashed, compared, stacked and checkpointed, which typed-key leaves and weak types do not
  survive, and a `lax.scan` carry needs the same leaf types whatever kind of key drove a step.
- `init_state(level, params)` is that start state with the episode clock reset (`timestep`
  0 and the matching `light_level`); it takes no key, so an episode's start is a function of
  its level alone, which is what replay needs. It also accepts craftax's own `EnvState` as
  `generate_world` returns it (it makes it canonical first).
- The dynamics' randomness (mob movement and attacks, mob spawning, sapling drops) comes from
  the key `step_env` receives every step, passed straight to `craftax_step` as craftax's own
  env does. Replays of a level are therefore stochastic like craftax's episodes, and equal
  only given equal step keys. The level's stored `state_rng` seeds nothing in the Classic
  dynamics or the symbolic observation (craftax reads it only for the texture noise of the
  pixel renderer); `craftax_step` overwrites it with a split of the step key every step.
- There is no success in Craftax, only a score (achievements unlocked) and survival, so
  `info["solved"]` is always False, and a registry entry for it must say `binary_outcome=False`
  (the solved-rate metrics and SFL's learnability do not apply). `info["achievements"]`
  (bool[22], in craftax's `Achievement` order) says which achievements this step unlocked;
  `info["episode_stats"]` which ones the episode has unlocked so far (read where it ends), so
  the training logs report `achievements/<name>`, the fraction of ended episodes that unlocked
  each, and `achievements/total`, the mean number per episode (craftax's score without health).
- `info["terminated"]`: the player died (health 0, or stood in lava), craftax's two deadly
  cases of `is_game_over`; `info["truncated"]`: the time limit (`max_steps`) ended an
  episode in which the player is alive. `done` is their disjunction, i.e. `is_game_over`.

The held-out suite `"worlds"` and the level statistics for the logs are at the end.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from craftax.craftax_classic.constants import Achievement, BlockType
from craftax.craftax_classic.envs.craftax_state import EnvParams, EnvState, StaticEnvParams
from craftax.craftax_classic.envs.craftax_symbolic_env import (
    get_flat_map_obs_shape, get_inventory_obs_shape,
)
from craftax.craftax_classic.game_logic import (
    calculate_light_level, craftax_step, get_distance_map, is_game_over,
)
from craftax.craftax_classic.renderer import render_craftax_symbolic
from craftax.craftax_classic.world_gen import generate_world

from minimax.envs.environment import Box, Discrete, Environment
from minimax.envs.registry import HeldOutLevel

NUM_ACTIONS = 17
NUM_ACHIEVEMENTS = len(Achievement)
ACHIEVEMENT_NAMES = tuple(a.name.lower() for a in Achievement)

# craftax's own defaults, read once so that ours follow the installed version.
_CRAFTAX = EnvParams()
_CRAFTAX_STATIC = StaticEnvParams()


# ----------------------------------------------------------------------------- params


@struct.dataclass
class CraftaxParams:
    """Static parameters (hashable Python values; no array leaves): craftax's `EnvParams` and
    `StaticEnvParams` fields, defaulting to craftax's, with the time limit named `max_steps`.

    `craftax_params` / `craftax_static_params` build craftax's own objects from them, so
    craftax's functions are always called with exactly the settings these describe.
    """

    max_steps: int = struct.field(pytree_node=False, default=_CRAFTAX.max_timesteps)
    day_length: int = struct.field(pytree_node=False, default=_CRAFTAX.day_length)
    always_diamond: bool = struct.field(pytree_node=False, default=_CRAFTAX.always_diamond)
    zombie_health: int = struct.field(pytree_node=False, default=_CRAFTAX.zombie_health)
    cow_health: int = struct.field(pytree_node=False, default=_CRAFTAX.cow_health)
    skeleton_health: int = struct.field(pytree_node=False, default=_CRAFTAX.skeleton_health)
    mob_despawn_distance: int = struct.field(pytree_node=False, default=_CRAFTAX.mob_despawn_distance)
    spawn_cow_chance: float = struct.field(pytree_node=False, default=_CRAFTAX.spawn_cow_chance)
    spawn_zombie_base_chance: float = struct.field(pytree_node=False, default=_CRAFTAX.spawn_zombie_base_chance)
    spawn_zombie_night_chance: float = struct.field(pytree_node=False, default=_CRAFTAX.spawn_zombie_night_chance)
    spawn_skeleton_chance: float = struct.field(pytree_node=False, default=_CRAFTAX.spawn_skeleton_chance)
    map_size: tuple[int, int] = struct.field(pytree_node=False, default=tuple(_CRAFTAX_STATIC.map_size))
    max_zombies: int = struct.field(pytree_node=False, default=_CRAFTAX_STATIC.max_zombies)
    max_cows: int = struct.field(pytree_node=False, default=_CRAFTAX_STATIC.max_cows)
    max_growing_plants: int = struct.field(pytree_node=False, default=_CRAFTAX_STATIC.max_growing_plants)
    max_skeletons: int = struct.field(pytree_node=False, default=_CRAFTAX_STATIC.max_skeletons)
    max_arrows: int = struct.field(pytree_node=False, default=_CRAFTAX_STATIC.max_arrows)

    def __post_init__(self):
        for name in ("max_steps", "day_length", "max_zombies", "max_cows", "max_growing_plants",
                     "max_skeletons", "max_arrows"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"CraftaxParams.{name} must be a positive int, got {value!r}")
        size = self.map_size
        # World generation draws Perlin noise at map_size // 16 resolution: the sides must divide.
        if (not isinstance(size, tuple) or len(size) != 2
                or not all(isinstance(s, (int, np.integer)) and s >= 16 and s % 16 == 0 for s in size)):
            raise ValueError(f"CraftaxParams.map_size must be a (rows, cols) tuple of positive multiples "
                             f"of 16, got {size!r}")

    @property
    def craftax_params(self) -> EnvParams:
        """craftax's `EnvParams` with these settings (the time limit is its `max_timesteps`)."""
        return EnvParams(
            max_timesteps=self.max_steps, day_length=self.day_length, always_diamond=self.always_diamond,
            zombie_health=self.zombie_health, cow_health=self.cow_health,
            skeleton_health=self.skeleton_health, mob_despawn_distance=self.mob_despawn_distance,
            spawn_cow_chance=self.spawn_cow_chance, spawn_zombie_base_chance=self.spawn_zombie_base_chance,
            spawn_zombie_night_chance=self.spawn_zombie_night_chance,
            spawn_skeleton_chance=self.spawn_skeleton_chance)

    @property
    def craftax_static_params(self) -> StaticEnvParams:
        """craftax's `StaticEnvParams` with these settings."""
        return StaticEnvParams(
            map_size=tuple(self.map_size), max_zombies=self.max_zombies, max_cows=self.max_cows,
            max_growing_plants=self.max_growing_plants, max_skeletons=self.max_skeletons,
            max_arrows=self.max_arrows)


# ------------------------------------------------------------------------------ state


def _raw_key(key) -> jax.Array:
    """A PRNG key as raw key data (`uint32[2]` for threefry), whether typed or raw already."""
    if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return jnp.asarray(key, jnp.uint32)


def canonical_world(world: EnvState) -> EnvState:
    """`world` with every leaf a strongly typed array of its own dtype and `state_rng` as raw key
    data: the one leaf-type layout that levels and states keep (see the module docstring)."""
    world = world.replace(state_rng=_raw_key(world.state_rng))
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=jnp.result_type(x)), world)


@struct.dataclass
class CraftaxState:
    """One episode in progress: craftax's state now (`world`) and the level it started from.

    Carrying the level lets `restart_state` begin the next episode on the same world without
    regenerating it (XLA drops the select on the unchanged `level` leaves), and lets any
    consumer read which level an env plays.
    """

    world: EnvState   # craftax's state now
    level: EnvState   # the episode's start state (canonical, clock at 0)


class CraftaxClassic(Environment):
    """Craftax-Classic with worlds as levels. `reset_to_level(key, level, params)`, `step(...)`.

    Observations are craftax's symbolic ones (float32[1345]: a one-hot 7x9 local view of
    blocks and mobs, then inventory, intrinsics, direction, light level and sleep), actions
    craftax's 17. Rewards are craftax's: +1 per achievement unlocked, +-0.1 per health point
    gained or lost.
    """

    def default_params(self, **overrides) -> CraftaxParams:
        """craftax's defaults (10000-step episodes, 64x64 maps), with `overrides` applied."""
        return CraftaxParams(**overrides)

    # ---- state
    def init_state(self, level: EnvState, params: CraftaxParams) -> CraftaxState:
        """The level's start state with the episode clock at 0; deterministic (no key)."""
        shape = tuple(jnp.shape(level.map))
        if shape != tuple(params.map_size):  # static: checked once, at trace time
            raise ValueError(f"level map has shape {shape} but params are for a {params.map_size} map")
        level = canonical_world(level)
        return CraftaxState(world=_start_of(level, params), level=level)

    def level_of(self, state: CraftaxState) -> EnvState:
        """The (canonical) world the episode in `state` started from."""
        return state.level

    def restart_state(self, state: CraftaxState, params: CraftaxParams) -> CraftaxState:
        """Back to the start of the same world; the level (already canonical) is kept as it is."""
        return state.replace(world=_start_of(state.level, params))

    def step_env(self, key, state: CraftaxState, action, params: CraftaxParams):
        """craftax's `craftax_step` with the step key (no auto-reset); `done` is `is_game_over`."""
        before = state.world
        craftax_params = params.craftax_params
        world, reward = craftax_step(key, before, jnp.asarray(action, jnp.int32), craftax_params,
                                     params.craftax_static_params)
        world = canonical_world(world)
        done = jnp.asarray(is_game_over(world, craftax_params), bool)
        row, col = world.player_position[0], world.player_position[1]
        terminated = (world.player_health <= 0) | (world.map[row, col] == BlockType.LAVA.value)
        info = {
            "terminated": terminated,
            "truncated": done & ~terminated,
            "solved": jnp.zeros((), bool),  # Craftax has no binary outcome (module docstring)
            "achievements": world.achievements & ~before.achievements,
            "episode_stats": episode_achievements(world.achievements),
        }
        return state.replace(world=world), jnp.asarray(reward, jnp.float32), done, info

    # ---- observations
    def get_obs(self, state: CraftaxState, params: CraftaxParams) -> jax.Array:
        """craftax Classic's symbolic observation of the current state (flat float32)."""
        del params
        return render_craftax_symbolic(state.world).astype(jnp.float32)

    def observation_space(self, params: CraftaxParams) -> Box:
        """float32[1345] in [0, 1], craftax's symbolic observation space."""
        del params  # the view is a fixed 7x9 window whatever the map size
        return Box(0.0, 1.0, (get_flat_map_obs_shape() + get_inventory_obs_shape(),), jnp.float32)

    def action_space(self, params: CraftaxParams) -> Discrete:
        """craftax Classic's 17 actions (noop, 4 moves, do, sleep, 4 placements, 6 crafts)."""
        del params
        return Discrete(NUM_ACTIONS)


def episode_achievements(achievements: jax.Array) -> dict:
    """The episode statistics of `info["episode_stats"]`: `achievements/<name>` (1.0 where the
    episode has unlocked it) for each of craftax's 22, and `achievements/total`."""
    unlocked = jnp.asarray(achievements, jnp.float32)
    stats = {f"achievements/{name}": unlocked[i] for i, name in enumerate(ACHIEVEMENT_NAMES)}
    stats["achievements/total"] = unlocked.sum()
    return stats


def _start_of(level: EnvState, params: CraftaxParams) -> EnvState:
    """The first state of an episode on `level`: its clock reset to step 0 (light level to match)."""
    timestep = jnp.zeros_like(level.timestep)
    light = calculate_light_level(timestep, params.craftax_params)
    return level.replace(timestep=timestep, light_level=jnp.asarray(light, level.light_level.dtype))


# -------------------------------------------------------------------------- generator


def make_world_generator(params: CraftaxParams):
    """`generator(key) -> level`: craftax's `generate_world` for `key`, made canonical."""
    craftax_params, static = params.craftax_params, params.craftax_static_params

    def generate(key) -> EnvState:
        return canonical_world(generate_world(key, craftax_params, static))

    return generate


def level_identity(level: EnvState):
    """What makes two worlds the same level: the map and the start position (the rest of a
    start state is the same for every world, up to the renderer-only `state_rng`)."""
    return level.map, level.player_position


# --------------------------------------------------------------------------- held out

SUITES = ("worlds",)
NUM_HELD_OUT_WORLDS = 8
# Held-out keys: `fold_in(key(10_000 + i), HELD_OUT_TAG)`. A training run's generator keys are
# splits of `key(seed)`, a different derivation, so a held-out world coincides with a training
# world only if two independent 64-bit keys collide.
HELD_OUT_TAG = 0xC7A17
HELD_OUT_MAP_SIZE = tuple(_CRAFTAX_STATIC.map_size)


def held_out_key(i: int) -> jax.Array:
    """The key of held-out world `i`."""
    return jax.random.fold_in(jax.random.key(10_000 + i), HELD_OUT_TAG)


@functools.cache
def _held_out_worlds() -> tuple[EnvState, ...]:
    """The held-out worlds (default params), generated once per process in one program."""
    generate = jax.jit(jax.vmap(make_world_generator(CraftaxParams())))
    keys = jnp.stack([held_out_key(i) for i in range(NUM_HELD_OUT_WORLDS)])
    worlds = generate(keys)
    return tuple(jax.tree.map(lambda x, i=i: x[i], worlds) for i in range(NUM_HELD_OUT_WORLDS))


def _with_held_out_map(params: CraftaxParams) -> CraftaxParams:
    """The training params, on the held-out worlds' map size (the observation does not depend on it)."""
    return params.replace(map_size=HELD_OUT_MAP_SIZE)


def check_suite(suite: str, params: CraftaxParams | None = None) -> None:
    """Raise a `ValueError` unless `suite` is a known one, without generating its worlds (any training params
    play them: `_with_held_out_map`)."""
    if suite != "worlds":
        raise ValueError(f"unknown Craftax evaluation suite {suite!r}; known suites: {', '.join(SUITES)}")


def held_out(suite: str) -> list[HeldOutLevel]:
    """Named evaluation worlds. `"worlds"`: `NUM_HELD_OUT_WORLDS` worlds of craftax's generator
    (default params) from fixed keys a training run never uses (`held_out_key`)."""
    check_suite(suite)
    return [HeldOutLevel(name=f"world{i}", sample=lambda key, world=world: world,
                         params_for=_with_held_out_map, fixed_level=world)
            for i, world in enumerate(_held_out_worlds())]


# ---------------------------------------------------------------------------- metrics


def level_metrics(level: EnvState) -> dict[str, jax.Array]:
    """Per-world statistics for the logs (int32 scalars; vmappable): counts of a few block
    types on the map, and the Manhattan distance from the start to the nearest tree, water
    and diamond (rows + cols of the map when there is none)."""
    world_map = level.map
    rows, cols = world_map.shape
    static = StaticEnvParams(map_size=(rows, cols))
    distance = get_distance_map(level.player_position, static)

    def count(block: BlockType) -> jax.Array:
        return jnp.sum(world_map == block.value, dtype=jnp.int32)

    def nearest(block: BlockType) -> jax.Array:
        return jnp.min(jnp.where(world_map == block.value, distance, rows + cols)).astype(jnp.int32)

    return {
        "trees": count(BlockType.TREE),
        "water": count(BlockType.WATER),
        "stone": count(BlockType.STONE),
        "diamonds": count(BlockType.DIAMOND),
        "lava": count(BlockType.LAVA),
        "start_to_tree": nearest(BlockType.TREE),
        "start_to_water": nearest(BlockType.WATER),
        "start_to_diamond": nearest(BlockType.DIAMOND),
    }
