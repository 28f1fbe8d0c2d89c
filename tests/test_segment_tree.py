"""SumTree (minimax/host/segment_tree.py): sums, the descent against np.searchsorted, the sampled
distribution against the weights and against the O(n) sampler, odd capacities, checkpoints, errors.

Statistical tests use fixed seeds (deterministic) and a p > 1e-4 threshold."""

import numpy as np
import pytest
from scipy import stats

from minimax.host.segment_tree import SumTree

P_MIN = 1e-4


def _reference_find(weights, u):
    return np.searchsorted(np.cumsum(weights), u, side="right")


def _assert_tree_consistent(tree):
    # Every internal node is exactly fl(left + right) of its children (no drift, ever).
    t = tree._tree
    j = np.arange(1, tree._size)
    np.testing.assert_array_equal(t[j], t[2 * j] + t[2 * j + 1])


def test_total_and_values_after_random_updates():
    rng = np.random.default_rng(0)
    n = 1000
    ref = rng.lognormal(0.0, 3.0, n) * 1e6  # weights over many orders of magnitude
    tree = SumTree.from_weights(ref)
    for step in range(200):
        k = int(rng.integers(1, 40))
        idx = rng.integers(0, n, k)  # repeats happen: the last occurrence must win
        vals = rng.lognormal(0.0, 3.0, k) * 1e6 * (rng.random(k) > 0.2)
        tree.update(idx, vals)
        for i, v in zip(idx, vals):
            ref[i] = v
        np.testing.assert_array_equal(tree.values, ref)
        # sums of n non-negative terms: relative error at most ~n * eps of the magnitude
        assert abs(tree.total - ref.sum()) <= 4 * n * np.finfo(float).eps * ref.sum()
    _assert_tree_consistent(tree)
    tree.update(np.array([5, 5, 5]), np.array([1.0, 2.0, 3.0]))
    assert tree[5] == 3.0
    tree.update(7, 0.5)  # scalar index and value
    assert tree[7] == 0.5
    _assert_tree_consistent(tree)


def test_find_matches_searchsorted_exactly_on_integer_weights():
    # Integer weights make every sum exact, so the semantics must agree bit for bit, boundaries
    # (u equal to a prefix sum, ties across runs of zero weights) included.
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 7, 64, 1000):
        w = rng.integers(0, 5, n).astype(float)
        w[rng.integers(0, n)] = 3.0  # at least one positive weight
        tree, total = SumTree.from_weights(w), w.sum()
        c = np.cumsum(w)
        u = np.concatenate([rng.random(500) * total, c[c < total], [0.0]])
        got = tree.find(u)
        np.testing.assert_array_equal(got, _reference_find(w, u))
        assert (w[got] > 0).all()
        np.testing.assert_array_equal([tree.find(x) for x in u[:50]], got[:50])  # scalar path


def test_find_on_float_weights_and_edges_never_returns_zero_weight():
    rng = np.random.default_rng(2)
    n = 1000
    w = rng.random(n) * (rng.random(n) > 0.3)
    w[-50:] = 0.0  # trailing zeros next to the padding
    tree = SumTree.from_weights(w)
    total = tree.total
    u = rng.random(5000) * total
    got, ref = tree.find(u), _reference_find(w, u)
    # tree and cumsum round differently; they may disagree only where u sits on a boundary
    c = np.cumsum(w)
    near = np.abs(u[:, None] - c[None, :]).min(axis=1) <= 1e-9 * total
    assert (got[~near] == ref[~near]).all()
    # the floating-point edges: every boundary and its neighbours, and u just below / at total
    edges = np.concatenate([c, np.nextafter(c, 0), np.nextafter(c, np.inf)])
    edges = np.concatenate([edges[edges <= total], [np.nextafter(total, 0), total]])
    for x in (edges, u):
        idx = tree.find(x)
        assert (w[idx] > 0).all()
    last = np.flatnonzero(w)[-1]
    assert tree.find(total) == last and tree.find(np.array([total, total]))[0] == last


def test_samples_are_proportional_and_match_the_dense_sampler():
    rng = np.random.default_rng(3)
    n_levels, draws = 50, 200_000
    w = rng.random(n_levels) + 0.05
    zero = rng.choice(n_levels, 8, replace=False)
    w[zero] = 0.0
    p = w / w.sum()
    tree = SumTree.from_weights(w)
    tree_counts = np.bincount(tree.sample(np.random.default_rng(4), draws), minlength=n_levels)
    dense_counts = np.bincount(np.random.default_rng(5).choice(n_levels, draws, p=p), minlength=n_levels)
    assert tree_counts[zero].sum() == 0 and tree_counts.sum() == draws
    pos = w > 0
    for counts in (tree_counts, dense_counts):
        assert stats.chisquare(counts[pos], draws * p[pos]).pvalue > P_MIN
    # two-sample: are the tree's and rng.choice's counts from the same distribution?
    assert stats.chi2_contingency(np.stack([tree_counts[pos], dense_counts[pos]])).pvalue > P_MIN

    # the sampler's real loop: one draw, then that level's weight changes (scalar paths)
    r = np.random.default_rng(6)
    single = np.array([tree.sample(r, 1)[0] for _ in range(20_000)])
    assert stats.chisquare(np.bincount(single, minlength=n_levels)[pos], 20_000 * p[pos]).pvalue > P_MIN
    live = SumTree.from_weights(w)
    for _ in range(2000):
        i = live.sample(r, 1)[0]
        assert live[i] > 0
        live.update(i, r.random() * (r.random() > 0.1))
        if live.total == 0:
            live.update(0, 1.0)
    _assert_tree_consistent(live)


def test_stratified_counts_are_within_one_or_two_of_expected():
    w = np.random.default_rng(7).random(50)
    w[::7] = 0.0
    tree = SumTree.from_weights(w)
    counts = np.bincount(tree.sample(np.random.default_rng(8), 10_000, stratified=True), minlength=50)
    assert counts[w == 0].sum() == 0
    assert np.abs(counts - 10_000 * w / w.sum()).max() <= 2


@pytest.mark.parametrize("capacity", [1, 3, 1000])
def test_non_power_of_two_capacities(capacity):
    rng = np.random.default_rng(capacity)
    w = rng.random(capacity) + 0.01
    tree = SumTree.from_weights(w)
    assert len(tree) == capacity and tree.values.shape == (capacity,)
    assert np.isclose(tree.total, w.sum(), rtol=1e-12)
    draws = tree.sample(rng, 5000)
    assert draws.dtype == np.int64 and draws.min() >= 0 and draws.max() < capacity  # padding never drawn
    assert (tree.find(np.array([np.nextafter(tree.total, 0), tree.total])) == capacity - 1).all()
    empty = SumTree(capacity)
    empty.update(capacity - 1, 2.0)
    assert (empty.sample(rng, 100) == capacity - 1).all()
    _assert_tree_consistent(tree)


def test_state_dict_round_trip_is_bit_identical():
    rng = np.random.default_rng(9)
    tree = SumTree.from_weights(rng.random(37))
    tree.update(rng.integers(0, 37, 100), rng.random(100))
    state = tree.state_dict()
    assert set(state) == {"values"} and isinstance(state["values"], np.ndarray)
    restored = SumTree.from_state_dict({k: np.array(v) for k, v in state.items()})
    np.testing.assert_array_equal(restored._tree, tree._tree)
    np.testing.assert_array_equal(restored.sample(np.random.default_rng(1), 100),
                                  tree.sample(np.random.default_rng(1), 100))
    tree.update(0, 123.0)
    assert restored[0] != 123.0  # the state is a copy


def test_values_view_is_read_only():
    tree = SumTree.from_weights([1.0, 2.0])
    with pytest.raises(ValueError):
        tree.values[0] = 5.0
    assert tree.total == 3.0


def test_errors_name_the_offending_value():
    with pytest.raises(ValueError, match="capacity.*0"):
        SumTree(0)
    with pytest.raises(ValueError, match="capacity.*2.5"):
        SumTree(2.5)
    with pytest.raises(ValueError, match=r"-1\.0 at position 1"):
        SumTree.from_weights([1.0, -1.0])
    with pytest.raises(ValueError, match="nan at position 2"):
        SumTree.from_weights([1.0, 2.0, np.nan])
    with pytest.raises(ValueError, match="inf"):
        SumTree.from_weights([np.inf])
    tree = SumTree(3)
    with pytest.raises(ValueError, match="total weight is 0.0"):
        tree.sample(np.random.default_rng(0), 1)
    with pytest.raises(ValueError, match=r"index 3 out of range \[0, 3\)"):
        tree.update(3, 1.0)
    with pytest.raises(ValueError, match="index -1 out of range"):
        tree.update([0, -1], [1.0, 1.0])
    with pytest.raises(ValueError, match="integers"):
        tree.update(np.array([1.0]), 1.0)
    with pytest.raises(ValueError, match="values.*-2.0"):
        tree.update([0, 1], [1.0, -2.0])
    with pytest.raises(ValueError, match="nan"):
        tree.update(1, np.nan)
    with pytest.raises(ValueError, match="2 indices but 3 values"):
        tree.update([0, 1], [1.0, 2.0, 3.0])
    assert tree.total == 0.0  # failed updates changed nothing
    tree.update(1, 1.0)
    with pytest.raises(ValueError, match="u must lie.*1.5"):
        tree.find(1.5)
    with pytest.raises(ValueError, match="u must lie.*nan"):
        tree.find([0.5, np.nan])
    tree.update(1, 0.0)
    with pytest.raises(ValueError, match="total weight is 0.0"):
        tree.find(0.0)
