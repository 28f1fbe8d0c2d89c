"""JaxNav levels: the generator, ACCEL's mutator, the held-out suites and per-level statistics.

- Generator: jaxmarl's own `JaxNav.sample_test_case` with the run's `NavParams` (SFL's training
  distribution: up to `fill` x 81 interior walls placed uniformly, start and goal at distinct free
  cell centres, headings uniform), so a generated level is the level jaxmarl's `reset` would start.
- Mutator `flip_goal`: SFL's ACCEL edits (jaxmarl's `jaxnav_ued_utils.make_level_mutator`),
  rewritten for one agent on the level pytree and checked against theirs key for key: each of the
  `n_edits` edits is uniform over {nothing, add a wall on a free cell the robot and the goal do
  not touch, move the goal to a free cell centre the robot does not touch}. Their "flip" only ever
  adds walls (walls are masked out of its choice), and so does ours. One difference: where no
  cell qualifies (a map walled up by many generations of edits), ours leaves the level unchanged,
  where theirs would clear cell (0, 0), a border wall.
- Held-out suites (fixed levels, 11x11): `single`, the SFL paper's five hand-designed
  single-agent maps from jaxmarl (`BlankTest`, `MiddleTest` 7x7 and `SingleNav1-3` 7x11, padded
  with walls to 11x11 below and to the right, which changes neither coordinates nor what the
  lidar sees); `sampled100`, SFL's 100 sampled test maps (`sfl/data/test_sets/
  sampled_tc_100e_1a.pkl`, fill 0.4, path-checked; Apache-2.0, converted by
  `data/convert_sfl_test_set.py`); `sfl`, both (SFL's in-training evaluation). The SFL paper's
  robustness protocol (CVaR over 10,000 levels of the training generator with the path check on)
  is `evaluate.py --cvar 10000 --cvar-set nav_valid_path_check=true`.
"""

from __future__ import annotations

import functools
import importlib.resources

import jax
import jax.numpy as jnp
import numpy as np

from minimax.envs.jaxnav.env import (
    NavLevel, NavParams, known_warnings, jaxnav_env, level_of_jaxnav_state, nav_level,
)
from minimax.envs.registry import HeldOutLevel, check_n_edits

SUITES = ("single", "sampled100", "sfl")
SINGLE_MAPS = ("BlankTest", "MiddleTest", "SingleNav1", "SingleNav2", "SingleNav3")
HELD_OUT_SIZE = (11, 11)
NO_OP, ADD_WALL, MOVE_GOAL = 0, 1, 2


def make_nav_generator(params: NavParams):
    """`generate(key) -> NavLevel`: jaxmarl's `sample_test_case` for `params` (the level its `reset` starts)."""
    env = jaxnav_env(params)

    def generate(key) -> NavLevel:
        with known_warnings():
            return level_of_jaxnav_state(env.sample_test_case(key))
    return generate


# ------------------------------------------------------------------------------- mutator


def _robot_cells(map_obj, level: NavLevel):
    """int32[H, W]: the cells the robot's footprint at its start pose touches."""
    return map_obj.get_agent_map_occupancy_mask(level.agent_pos, level.agent_theta, level.map_data)


def _choose_cell(key, blocked):
    """A uniform cell index among the cells not `blocked` (jaxmarl's draw), and whether one exists."""
    free = jnp.logical_not(blocked.flatten())
    return jax.random.choice(key, np.arange(free.shape[0]), p=free), jnp.any(free)


def add_wall(key, map_obj, level: NavLevel) -> NavLevel:
    """Wall up a free cell that neither the robot's start footprint nor the goal's cell touches."""
    walls = level.map_data
    w = walls.shape[1]
    goal = jnp.floor(level.goal_pos).astype(jnp.int32)
    blocked = _robot_cells(map_obj, level) | map_obj._gen_base_grid() | walls.at[goal[1], goal[0]].set(1)
    idx, ok = _choose_cell(key, blocked)
    new = walls.at[idx // w, idx % w].set(1 - walls[idx // w, idx % w])
    return level.replace(map_data=jnp.where(ok, new, walls))


def move_goal(key, map_obj, level: NavLevel) -> NavLevel:
    """Move the goal to the centre of a free cell the robot's start footprint does not touch."""
    walls = level.map_data
    w = walls.shape[1]
    key, _ = jax.random.split(key)  # jaxmarl draws which agent's goal moves with the second key: one agent here
    goal = jnp.floor(level.goal_pos).astype(jnp.int32)
    blocked = _robot_cells(map_obj, level) | map_obj._gen_base_grid() | (walls > 0).at[goal[1], goal[0]].set(False)
    idx, ok = _choose_cell(key, blocked)
    new = jnp.stack([idx % w, idx // w]).astype(jnp.float32) + 0.5
    return level.replace(goal_pos=jnp.where(ok, new, level.goal_pos))


def make_nav_mutator(params: NavParams):
    """`factory(n_edits) -> mutate(key, level) -> level` (see the module docstring); with
    `n_edits` as jaxmarl's `max_num_edits`, the keys are used as theirs are."""
    map_obj = jaxnav_env(params).map_obj

    def factory(n_edits: int):
        n = check_n_edits(n_edits)

        def mutate(key, level: NavLevel) -> NavLevel:
            if n == 0:
                return level
            _, key_kinds, *keys = jax.random.split(key, n + 2)
            kinds = jax.random.choice(key_kinds, np.arange(3), (n,))

            def edit(level, step):
                key, kind = step
                _, key_wall, key_goal = jax.random.split(key, 3)
                out = jax.tree.map(lambda a, b: jnp.where(kind == ADD_WALL, a, b),
                                   add_wall(key_wall, map_obj, level), level)
                out = jax.tree.map(lambda a, b: jnp.where(kind == MOVE_GOAL, a, b),
                                   move_goal(key_goal, map_obj, level), out)
                return out, None

            level, _ = jax.lax.scan(edit, level, (jnp.stack(keys), kinds))
            return level
        return mutate
    return factory


# ---------------------------------------------------------------------------- held out


def pad_map(map_data, size=HELD_OUT_SIZE) -> np.ndarray:
    """A wall map padded with walls below and to the right to `size` = (width, height)."""
    map_data = np.asarray(map_data, np.int32)
    h, w = map_data.shape
    if h > size[1] or w > size[0]:
        raise ValueError(f"a {w}x{h} map does not fit a {size[0]}x{size[1]} level")
    out = np.ones((size[1], size[0]), np.int32)
    out[:h, :w] = map_data
    return out


@functools.lru_cache(maxsize=None)
def single_maps() -> tuple[tuple[str, NavLevel], ...]:
    """SFL's five single-agent test maps, read from jaxmarl's singleton classes."""
    from minimax.envs.jaxnav.env import jaxmarl_singleton  # noqa: PLC0415

    out = []
    for name in SINGLE_MAPS:
        env = jaxmarl_singleton(name)
        start, goal = np.asarray(env.start_pose)[0], np.asarray(env.goal_pose)[0]
        out.append((name, nav_level(start[:2], start[2], goal[:2], pad_map(env.map_data))))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def sampled_maps() -> tuple[tuple[str, NavLevel], ...]:
    """SFL's 100 sampled test maps (see the module docstring)."""
    path = importlib.resources.files("minimax.envs.jaxnav") / "data" / "sfl_sampled_100.npz"
    with importlib.resources.as_file(path) as file, np.load(file) as data:
        arrays = {k: data[k] for k in ("agent_pos", "agent_theta", "goal_pos", "map_data")}
    return tuple((f"sampled_{i:03d}", nav_level(arrays["agent_pos"][i], arrays["agent_theta"][i],
                                                arrays["goal_pos"][i], arrays["map_data"][i]))
                 for i in range(arrays["map_data"].shape[0]))


def held_out(suite: str) -> list[HeldOutLevel]:
    """The fixed levels of `suite` (`single`, `sampled100` or `sfl`; see the module docstring)."""
    if suite not in SUITES:
        raise ValueError(f"unknown JaxNav held-out suite {suite!r}; known suites: {', '.join(SUITES)}")
    named = (single_maps() if suite in ("single", "sfl") else ()) + (
        sampled_maps() if suite in ("sampled100", "sfl") else ())
    params_for = lambda train: train.replace(map_size=HELD_OUT_SIZE)  # noqa: E731
    return [HeldOutLevel(name, sample=lambda key, lv=level: lv, params_for=params_for, fixed_level=level)
            for name, level in named]


# ---------------------------------------------------------------------------- statistics


def reachable_cells(level: NavLevel) -> jax.Array:
    """bool[H, W]: the free cells 4-connected to the start cell (1 m corridors fit the 0.6 m robot)."""
    free = level.map_data == 0
    start = jnp.floor(level.agent_pos).astype(jnp.int32)
    seen = jnp.zeros_like(free).at[start[1], start[0]].set(True) & free

    def grow(carry):
        seen, _ = carry
        nxt = seen | jnp.pad(seen[1:], ((0, 1), (0, 0))) | jnp.pad(seen[:-1], ((1, 0), (0, 0)))
        nxt = nxt | jnp.pad(seen[:, 1:], ((0, 0), (0, 1))) | jnp.pad(seen[:, :-1], ((0, 0), (1, 0)))
        nxt = nxt & free
        return nxt, jnp.any(nxt != seen)

    seen, _ = jax.lax.while_loop(lambda c: c[1], grow, (seen, jnp.asarray(True)))
    return seen


def level_metrics(level: NavLevel) -> dict[str, jax.Array]:
    """Interior walls, the straight-line start-goal distance and solvability (a grid path), for the logs."""
    goal = jnp.floor(level.goal_pos).astype(jnp.int32)
    return {"n_walls": jnp.sum(level.map_data[1:-1, 1:-1]).astype(jnp.float32),
            "goal_distance": jnp.linalg.norm(level.goal_pos - level.agent_pos),
            "solvable": reachable_cells(level)[goal[1], goal[0]]}
