"""Level mutators (ACCEL): always-valid levels, the stated edit distributions, determinism."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.envs.maze import (
    MUTATORS, Level, make_dr_generator, make_four_edit_mutator, make_minimax_mutator,
    make_mutator, mutate_batch,
)
from minimax.envs.maze.level import validate_level

# Chi-square critical values at p = 0.001 by degrees of freedom; keys are fixed, so the
# tests are deterministic and a correct mutator fails for about 1 seed in 1000.
CHI2_CRIT_001 = {2: 13.82, 3: 16.27, 4: 18.47, 17: 40.79, 22: 48.27}

NAMES = sorted(MUTATORS)
N_EDITS = 5  # edits per mutation in the multi-edit tests (one compilation per shape)

# A fixed 5x5 level with agent top-left, goal bottom-right and 5 walls: 23 cells other
# than agent and goal, 18 of them free.
FIXED_TEXT = """
agent_dir: 2
A.#..
.#...
...#.
#....
..#.G
"""


def chi_square(counts, expected):
    counts = np.asarray(counts, float)
    return float(np.sum((counts - expected) ** 2 / expected))


def to_np(levels):
    return jax.tree.map(np.asarray, levels)


@functools.cache
def batched(name: str, n_edits: int):
    """jit(mutate_batch(mutator, ...)), shared across tests so each (mutator, shape)
    compiles once."""
    return jax.jit(functools.partial(mutate_batch, make_mutator(name, n_edits)))


def run(name, n_edits, key, levels):
    return to_np(batched(name, n_edits)(key, levels))


def broadcast(level: Level, n: int) -> Level:
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + jnp.shape(x)), level)


def dr_levels(h, w, n_walls_list, per, seed=0):
    """`per` DR levels for each wall count (draws with replacement, so the distinct wall
    counts vary around it), concatenated into one batch."""
    batches = [jax.jit(jax.vmap(make_dr_generator(h, w, n_walls=nw)))(
        jax.random.split(jax.random.key(seed + i), per)) for i, nw in enumerate(n_walls_list)]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *batches)


def walled_except_agent_goal(n, h=7, w=7):
    walls = np.ones((h, w), bool)
    walls[1, 1] = walls[3, 4] = False
    return broadcast(Level.create(walls, (4, 3), (1, 1), 1), n)


def all_levels(h, w):
    """Every valid h x w level (all wall maps, agent and goal cells, directions), host-side."""
    cells = h * w
    walls, agents, goals, dirs = [], [], [], []
    for bits in range(2 ** cells):
        wall = np.array([(bits >> i) & 1 for i in range(cells)], bool)
        for a in range(cells):
            for g in range(cells):
                if a != g and not wall[a] and not wall[g]:
                    for d in range(4):
                        walls.append(wall.reshape(h, w))
                        agents.append((a % w, a // w))
                        goals.append((g % w, g // w))
                        dirs.append(d)
    return Level.create(np.stack(walls), np.array(goals), np.array(agents), np.array(dirs))


def n_changes(before, after):
    """Changed wall cells + moved goal + moved agent, per level."""
    return ((before.wall_map != after.wall_map).sum((1, 2))
            + (before.goal_pos != after.goal_pos).any(1)
            + (before.agent_pos != after.agent_pos).any(1))


N_PER_DENSITY = 64
WALLED = slice(3 * N_PER_DENSITY, 4 * N_PER_DENSITY)  # the fully walled 7x7 levels


@pytest.fixture(scope="module")
def validity_batches():
    # 7x7: DR levels with their walls cleared (ACCEL's empty start), DR medium, DR as dense
    # as it allows (as many draws as cells but two), then mazes walled everywhere but the
    # agent and goal cells. Tiny mazes: every valid level.
    dr = dr_levels(7, 7, [15, 47], per=N_PER_DENSITY)
    empty = jax.tree.map(lambda x: x[:N_PER_DENSITY], dr)
    empty = empty.replace(wall_map=jnp.zeros_like(empty.wall_map))
    walled = walled_except_agent_goal(N_PER_DENSITY)
    return {
        "7x7": jax.tree.map(lambda *xs: jnp.concatenate(xs), empty, dr, walled),
        "1x3": all_levels(1, 3),
        "2x2": all_levels(2, 2),
        "1x2": all_levels(1, 2),
    }


@pytest.mark.parametrize("name", NAMES)
def test_mutated_levels_are_always_valid_and_edit_at_most_n_cells(name, validity_batches):
    n_edits = N_EDITS
    key = jax.random.key(11)
    assert len(validity_batches["1x3"].agent_dir) == 48 and len(validity_batches["2x2"].agent_dir) == 192
    for label, levels in validity_batches.items():
        levels = to_np(levels)
        validate_level(levels)
        h, w = levels.wall_map.shape[1:]
        changed = np.zeros(len(levels.wall_map), bool)
        for _ in range(6):  # chain: mutate the mutated levels, as ACCEL does with its buffer
            key, sub = jax.random.split(key)
            out = run(name, n_edits, sub, levels)
            validate_level(out, h, w)
            assert out.wall_map.dtype == np.bool_ and out.goal_pos.dtype == np.int32
            assert out.agent_pos.dtype == np.int32 and out.agent_dir.dtype == np.int32
            assert (n_changes(levels, out) <= n_edits).all(), label
            if name == "minimax":
                np.testing.assert_array_equal(out.agent_pos, levels.agent_pos)
            np.testing.assert_array_equal(out.agent_dir, levels.agent_dir)
            changed |= n_changes(levels, out) > 0
            levels = out
        if label == "1x2":
            # Only agent and goal cells: nothing to flip, add or remove, nowhere to move.
            assert not changed.any()
        else:
            assert changed.mean() > 0.5, label


@pytest.mark.parametrize("name", NAMES)
def test_walled_maze_changes_only_through_the_legal_edit(name, validity_batches):
    # Walled except agent and goal: moves and added walls have no target, so only a flip
    # (minimax) or a wall removal (four-edit) can change the level; the rest are no-ops.
    levels = to_np(validity_batches["7x7"])
    out = jax.tree.map(lambda x: x[WALLED], run(name, N_EDITS, jax.random.key(5), levels))
    levels = jax.tree.map(lambda x: x[WALLED], levels)
    validate_level(out)
    assert (n_changes(levels, out) > 0).any()
    if name == "minimax":
        # The goal can only have moved onto a cell that was a wall and got flipped open.
        moved = (out.goal_pos != levels.goal_pos).any(1)
        gx, gy = out.goal_pos[:, 0], out.goal_pos[:, 1]
        assert levels.wall_map[np.arange(len(gx)), gy, gx][moved].all()


def test_minimax_single_edit_kinds_and_targets_are_uniform():
    level = Level.from_text(FIXED_TEXT)
    n = 6000
    before = to_np(broadcast(level, n))
    out = run("minimax", 1, jax.random.key(3), broadcast(level, n))
    validate_level(out)
    diff = out.wall_map != before.wall_map
    n_flipped = diff.sum((1, 2))
    goal_moved = (out.goal_pos != before.goal_pos).any(1)
    assert n_flipped.max() <= 1 and not (goal_moved & (n_flipped > 0)).any()
    np.testing.assert_array_equal(out.agent_pos, before.agent_pos)
    np.testing.assert_array_equal(out.agent_dir, before.agent_dir)

    # Kinds: unchanged / one flip / goal moved, 1/3 each (every kind has a target here).
    kinds = np.stack([(n_flipped == 0) & ~goal_moved, n_flipped == 1, goal_moved]).sum(1)
    assert kinds.sum() == n
    assert chi_square(kinds, n / 3) < CHI2_CRIT_001[2], kinds

    # Flips: uniform over the 23 cells other than agent (0,0) and goal (4,4), both ways.
    flipped_cells = np.bincount(diff.reshape(n, -1).argmax(1)[n_flipped == 1], minlength=25)
    assert flipped_cells[0] == 0 and flipped_cells[24] == 0
    assert chi_square(flipped_cells[1:24], flipped_cells.sum() / 23) < CHI2_CRIT_001[22]
    walls0 = np.asarray(level.wall_map)
    assert (out.wall_map[n_flipped == 1].sum((1, 2)) != walls0.sum()).all()  # add and remove both occur
    assert {4, 6} <= set(out.wall_map[n_flipped == 1].sum((1, 2)).tolist())

    # Goal moves: onto free cells, never the agent's or the old goal's, uniform over the 18.
    goals = out.goal_pos[goal_moved]
    assert not walls0[goals[:, 1], goals[:, 0]].any()
    targets = np.bincount(goals[:, 1] * 5 + goals[:, 0], minlength=25)
    free_targets = np.flatnonzero(~walls0.reshape(-1))
    free_targets = free_targets[(free_targets != 0) & (free_targets != 24)]
    assert len(free_targets) == 18 and targets.sum() == targets[free_targets].sum()
    assert chi_square(targets[free_targets], targets.sum() / 18) < CHI2_CRIT_001[17]


def test_four_edit_single_edit_kinds_and_targets():
    level = Level.from_text(FIXED_TEXT)
    walls0 = np.asarray(level.wall_map)
    n = 6000
    out = run("four_edit", 1, jax.random.key(4), broadcast(level, n))
    validate_level(out)
    np.testing.assert_array_equal(out.agent_dir, 2)  # direction is kept
    diff = out.wall_map != walls0
    added = diff.any((1, 2)) & (out.wall_map.sum((1, 2)) == walls0.sum() + 1)
    removed = diff.any((1, 2)) & (out.wall_map.sum((1, 2)) == walls0.sum() - 1)
    agent_moved = (out.agent_pos != [0, 0]).any(1)
    goal_moved = (out.goal_pos != [4, 4]).any(1)
    kinds = np.stack([added, removed, agent_moved, goal_moved])
    assert (kinds.sum(0) == 1).all()  # every edit had a target here, and only one thing changed
    assert (diff.sum((1, 2)) <= 1).all()
    counts = kinds.sum(1)
    assert chi_square(counts, n / 4) < CHI2_CRIT_001[3], counts

    cells = diff.reshape(n, -1).argmax(1)
    # Added walls: on the 18 free cells other than agent and goal, uniformly.
    free_targets = np.flatnonzero(~walls0.reshape(-1))
    free_targets = free_targets[(free_targets != 0) & (free_targets != 24)]
    add_counts = np.bincount(cells[added], minlength=25)
    assert add_counts.sum() == add_counts[free_targets].sum()
    assert chi_square(add_counts[free_targets], add_counts.sum() / 18) < CHI2_CRIT_001[17]
    # Removed walls: the 5 walls, uniformly.
    rm_counts = np.bincount(cells[removed], minlength=25)
    wall_cells = np.flatnonzero(walls0.reshape(-1))
    assert rm_counts.sum() == rm_counts[wall_cells].sum()
    assert chi_square(rm_counts[wall_cells], rm_counts.sum() / 5) < CHI2_CRIT_001[4]
    # Agent and goal moves: onto the 18 free cells other than both pieces, uniformly.
    for moved, pos in ((agent_moved, out.agent_pos), (goal_moved, out.goal_pos)):
        idx = pos[moved, 1] * 5 + pos[moved, 0]
        c = np.bincount(idx, minlength=25)
        assert c.sum() == c[free_targets].sum()
        assert chi_square(c[free_targets], c.sum() / 18) < CHI2_CRIT_001[17]


@pytest.mark.parametrize("name", NAMES)
def test_same_key_same_result_different_keys_differ(name, validity_batches):
    levels = validity_batches["7x7"]
    a = run(name, N_EDITS, jax.random.key(0), levels)
    b = run(name, N_EDITS, jax.random.key(0), levels)
    c = run(name, N_EDITS, jax.random.key(1), levels)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(x, y)
    differs = (a.wall_map != c.wall_map).any((1, 2)) | (a.goal_pos != c.goal_pos).any(1) \
        | (a.agent_pos != c.agent_pos).any(1)
    assert differs.mean() > 0.5


@pytest.mark.parametrize("name", NAMES)
def test_vmap_over_batch_equals_per_level_calls(name, validity_batches):
    levels = validity_batches["7x7"]
    key = jax.random.key(9)
    batch = run(name, N_EDITS, key, levels)  # mutate_batch under jit
    single = jax.jit(make_mutator(name, N_EDITS))
    keys = jax.random.split(key, levels.wall_map.shape[0])
    for i in range(0, len(keys), 32):  # a sample across densities and walled mazes
        one = to_np(single(keys[i], jax.tree.map(lambda x: x[i], levels)))
        for x, y in zip(jax.tree.leaves(one), jax.tree.leaves(batch)):
            np.testing.assert_array_equal(x, y[i])


@pytest.mark.parametrize("name", NAMES)
def test_zero_edits_is_identity(name):
    level = Level.from_text(FIXED_TEXT)
    for mutate in (make_mutator(name, 0), jax.jit(make_mutator(name, 0))):
        out = mutate(jax.random.key(0), level)
        for x, y in zip(jax.tree.leaves(out), jax.tree.leaves(level)):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("factory", [make_minimax_mutator, make_four_edit_mutator])
@pytest.mark.parametrize("bad", [-1, -7, 1.5, True, "3"])
def test_bad_n_edits_raises(factory, bad):
    with pytest.raises(ValueError, match=repr(bad).replace(".", r"\.")):
        factory(bad)


def test_unknown_mutator_name_raises_listing_valid_ones():
    with pytest.raises(ValueError, match="no_such_mutator") as info:
        make_mutator("no_such_mutator", 3)
    assert "minimax" in str(info.value) and "four_edit" in str(info.value)
    with pytest.raises(ValueError, match="-2"):
        make_mutator("minimax", -2)
    assert MUTATORS == {"minimax": make_minimax_mutator, "four_edit": make_four_edit_mutator}
