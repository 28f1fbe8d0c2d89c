"""Level generators: the distributions the UED maze literature specifies."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.envs.maze import make_dr_generator, make_empty_generator
from minimax.envs.maze.generators import place_agent_and_goal
from minimax.envs.maze.level import validate_level
from minimax.envs.maze.paths import is_solvable

# Chi-square critical values at p = 0.001 (so a correct generator fails 1 run in 1000 seeds;
# the keys are fixed, so the test is deterministic).
CHI2_CRIT_001 = {3: 16.27, 7: 24.32, 8: 26.12}


def chi_square(counts, expected):
    return float(np.sum((counts - expected) ** 2 / expected))


def sample(generator, n, seed=0):
    levels = jax.jit(jax.vmap(generator))(jax.random.split(jax.random.key(seed), n))
    return jax.tree.map(np.asarray, levels)


def test_dr_walls_with_replacement_match_occupancy_statistics():
    levels = sample(make_dr_generator(13, 13, n_walls=60), 2000)
    validate_level(levels, 13, 13)
    distinct = levels.wall_map.sum((1, 2))
    cells = 169
    mean = cells * (1 - (1 - 1 / cells) ** 60)  # expected distinct cells hit by 60 uniform draws
    var = cells * (1 - 1 / cells) ** 60 * (1 - (1 - 1 / cells) ** 60) \
        + cells * (cells - 1) * ((1 - 2 / cells) ** 60 - (1 - 1 / cells) ** 120)
    assert abs(distinct.mean() - mean) < 4 * np.sqrt(var / len(distinct))
    assert distinct.max() <= 60 and distinct.min() < 60
    # Every cell is equally likely to be a wall.
    per_cell = levels.wall_map.mean(0)
    assert np.abs(per_cell - mean / cells).max() < 0.05


def test_dr_without_replacement_draws_exactly_n_walls():
    levels = sample(make_dr_generator(13, 13, n_walls=25, replacement=False), 500)
    assert (levels.wall_map.sum((1, 2)) == 25).all()
    validate_level(levels, 13, 13)


def test_agent_goal_and_direction_are_uniform_on_free_cells():
    walls = jnp.array([[False, True, False], [False, False, True], [False, False, False]])
    free = np.flatnonzero(~np.asarray(walls))  # 7 free cells
    keys = jax.random.split(jax.random.key(1), 14000)
    levels = jax.tree.map(np.asarray, jax.jit(jax.vmap(place_agent_and_goal, in_axes=(0, None)))(keys, walls))
    agent = levels.agent_pos[:, 1] * 3 + levels.agent_pos[:, 0]
    goal = levels.goal_pos[:, 1] * 3 + levels.goal_pos[:, 0]
    assert np.isin(agent, free).all() and np.isin(goal, free).all() and (agent != goal).all()
    n = len(keys)
    assert chi_square(np.bincount(agent, minlength=9)[free], n / 7) < CHI2_CRIT_001[7]
    assert chi_square(np.bincount(goal, minlength=9)[free], n / 7) < CHI2_CRIT_001[7]
    assert chi_square(np.bincount(levels.agent_dir, minlength=4), n / 4) < CHI2_CRIT_001[3]
    # Given the agent's cell, the goal is uniform over the 6 others.
    given = goal[agent == free[0]]
    assert chi_square(np.bincount(given, minlength=9)[free[1:]], len(given) / 6) < 20.52  # 5 dof


def test_empty_generator_has_no_walls_and_covers_the_grid():
    levels = sample(make_empty_generator(3, 3), 9000, seed=2)
    assert not levels.wall_map.any()
    agent = levels.agent_pos[:, 1] * 3 + levels.agent_pos[:, 0]
    assert chi_square(np.bincount(agent, minlength=9), 1000) < CHI2_CRIT_001[8]


def test_solvable_only_keeps_only_solvable_levels():
    gen = make_dr_generator(13, 13, n_walls=80, solvable_only=True)
    levels = sample(gen, 300, seed=3)
    assert np.asarray(jax.vmap(is_solvable)(levels)).all()
    plain = sample(make_dr_generator(13, 13, n_walls=80), 300, seed=3)
    assert not np.asarray(jax.vmap(is_solvable)(plain)).all()  # the filter is doing something


def test_same_key_same_level_and_bad_wall_counts():
    gen = jax.jit(make_dr_generator(13, 13, 60))
    jax.tree.map(np.testing.assert_array_equal, gen(jax.random.key(7)), gen(jax.random.key(7)))
    with pytest.raises(ValueError, match=r"n_walls must be in \[0, 167\].*got 168"):
        make_dr_generator(13, 13, n_walls=168)
    with pytest.raises(ValueError, match="got -1"):
        make_dr_generator(13, 13, n_walls=-1)
