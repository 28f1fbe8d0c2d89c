"""Finite training sets of level seeds (minimax/curricula/training_set.py): the PLR paper's setting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.curricula import training_set as ts

from buffer_helpers import GEN, GEN_BATCH, chi2_critical, chi_square, same_level, take, tree_np


# --------------------------------------------------------------------------- 7. training set


def test_draw_new_seeds_prefers_unseen():
    draw = jax.jit(ts.draw_new_seeds, static_argnums=2)
    tset = ts.init_training_set(10)
    seen = set()
    key = jax.random.key(0)
    for i in range(3):
        key, sub = jax.random.split(key)
        tset, seeds = draw(sub, tset, 3)
        seeds = np.asarray(seeds).tolist()
        assert len(set(seeds)) == 3 and not (set(seeds) & seen) and all(0 <= s < 10 for s in seeds)
        seen |= set(seeds)
        np.testing.assert_array_equal(np.flatnonzero(np.asarray(tset.seen)), sorted(seen))
    last = (set(range(10)) - seen).pop()
    tset, seeds = draw(jax.random.key(1), tset, 3)
    seeds = np.asarray(seeds).tolist()
    assert seeds[0] == last and all(0 <= s < 10 for s in seeds)
    assert np.asarray(tset.seen).all()
    # all seen: any seeds, still in range
    tset, seeds = draw(jax.random.key(2), tset, 3)
    assert np.asarray(tset.seen).all() and all(0 <= s < 10 for s in np.asarray(seeds))
    # more than the number of levels at once
    tset, seeds = ts.draw_new_seeds(jax.random.key(3), ts.init_training_set(4), 6)
    seeds = np.asarray(seeds)
    assert sorted(seeds[:4].tolist()) == [0, 1, 2, 3] and ((0 <= seeds) & (seeds < 4)).all()
    assert np.asarray(tset.seen).all()
    with pytest.raises(ValueError):
        ts.init_training_set(0)


def test_draw_new_seeds_uniform_over_unseen():
    seen = np.zeros(12, bool)
    seen[[0, 3, 4, 9]] = True
    tset = ts.TrainingSet(seen=jnp.asarray(seen))
    f = jax.jit(jax.vmap(lambda key: ts.draw_new_seeds(key, tset, 2)[1]))
    seeds = np.asarray(f(jax.random.split(jax.random.key(6), 20000)))
    assert (seeds[:, 0] != seeds[:, 1]).all() and not seen[seeds].any()
    counts = np.bincount(seeds.reshape(-1), minlength=12)
    p = (~seen) / (~seen).sum()
    stat, df = chi_square(counts, p)
    assert stat < chi2_critical(df), (stat, df)


def test_replay_probability_schedules():
    seen = jnp.zeros(8, bool).at[jnp.array([1, 5])].set(True)
    part = ts.TrainingSet(seen=seen)
    full = ts.TrainingSet(seen=jnp.ones(8, bool))
    assert float(ts.replay_probability(part, "fixed", 0.4)) == pytest.approx(0.4)
    assert float(ts.replay_probability(full, "fixed", 0.4)) == 1.0
    assert float(ts.replay_probability(part, "proportionate", 0.4)) == pytest.approx(0.25)
    assert float(ts.replay_probability(full, "proportionate", 0.4)) == 1.0
    assert float(ts.replay_probability(ts.init_training_set(8), "proportionate", 0.4)) == 0.0
    with pytest.raises(ValueError, match="bogus"):
        ts.replay_probability(part, "bogus", 0.4)


def test_level_from_seed_is_deterministic():
    # Module docstring: seed i names generator(fold_in(key(LEVEL_SET_KEY), i)), the same in every run.
    n = 160                                                   # the shape GEN_BATCH was compiled for
    f = jax.jit(jax.vmap(lambda s: ts.level_from_seed(GEN, s)))
    seeds = jnp.arange(n)
    a = tree_np(f(seeds))
    b = tree_np(f(seeds[::-1]))                               # same seeds, other calls and positions
    want = tree_np(GEN_BATCH(jax.vmap(lambda s: jax.random.fold_in(jax.random.key(ts.LEVEL_SET_KEY), s))(seeds)))
    for i in range(0, n, 7):
        assert same_level(take(a, i), take(b, n - 1 - i))
        assert same_level(take(a, i), take(want, i))
    distinct = {tuple(np.concatenate([np.ravel(x) for x in jax.tree.leaves(take(a, i))]).tolist())
                for i in range(20)}
    assert len(distinct) > 15                                 # seeds name different levels
