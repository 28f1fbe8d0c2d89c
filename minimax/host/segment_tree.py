"""A sum segment tree for drawing levels with probability proportional to a weight (host side).

Why: a PLR sampler on the host draws a level index with probability ``w_i / sum(w)`` and then
changes one weight (the level's new score or staleness). The O(n) way, ``rng.choice(n,
p=w / w.sum())``, renormalises and re-scans every weight on every draw; with millions of levels
that dominates. A binary segment tree (as in prioritized experience replay, Schaul et al. 2016)
keeps every partial sum, so a draw is one root-to-leaf descent and a weight change one
leaf-to-root repair: O(log n) each.

Layout: the usual 1-indexed implicit heap in one float64 array of ``2 * size`` where ``size`` is
``capacity`` rounded up to a power of two. Node ``j`` has children ``2j`` and ``2j + 1``; the root
is node 1 (the total); leaf ``i`` is node ``size + i``. Padding leaves hold 0 and so are never drawn.
Every internal node is always recomputed as ``fl(left + right)`` from its children (never updated
by adding a delta), so rounding cannot drift over millions of updates, and the whole tree is a
pure function of its leaves: rebuilding from the leaves (``from_state_dict``) is bit-identical.
"""

from __future__ import annotations

import math

import numpy as np


def _check_weights(values: np.ndarray, what: str = "weights") -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(values) | (values < 0)  # NaN fails isfinite, so it is caught here too
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        v = float(values.ravel()[i])
        raise ValueError(f"{what} must be finite and non-negative; got {v!r} at position {i}")
    return values


class SumTree:
    """Proportional sampling over ``capacity`` non-negative weights (all 0 at construction)."""

    def __init__(self, capacity: int):
        if int(capacity) != capacity or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1; got {capacity!r}")
        self.capacity = int(capacity)
        self._depth = max(0, (self.capacity - 1).bit_length())  # levels from root to leaves
        self._size = 1 << self._depth
        self._tree = np.zeros(2 * self._size, dtype=np.float64)  # node 0 unused (1-indexed heap)

    @classmethod
    def from_weights(cls, weights) -> SumTree:
        """Build from a 1-D array in O(n): fill the leaves, then sum one level at a time
        bottom-up, each level a single vectorised add of the even and odd children."""
        weights = _check_weights(weights)
        if weights.ndim != 1:
            raise ValueError(f"weights must be 1-D; got shape {weights.shape}")
        tree = cls(len(weights))
        t, size = tree._tree, tree._size
        t[size:size + len(weights)] = weights
        lo = size // 2
        while lo >= 1:  # level [lo, 2lo) from children [2lo, 4lo)
            t[lo:2 * lo] = t[2 * lo:4 * lo:2] + t[2 * lo + 1:4 * lo:2]
            lo //= 2
        return tree

    @property
    def total(self) -> float:
        """The sum of all weights (the root), as a Python float."""
        return float(self._tree[1])

    @property
    def values(self) -> np.ndarray:
        """The weights, as a read-only view (writes must go through ``update`` to keep sums)."""
        view = self._tree[self._size:self._size + self.capacity]
        view.flags.writeable = False
        return view

    def __getitem__(self, index):
        return self.values[index]

    def __len__(self) -> int:
        return self.capacity

    def _check_indices(self, indices) -> np.ndarray:
        indices = np.asarray(indices)
        if indices.size and not np.issubdtype(indices.dtype, np.integer):
            raise ValueError(f"indices must be integers; got dtype {indices.dtype}")
        indices = indices.astype(np.int64).ravel()
        bad = (indices < 0) | (indices >= self.capacity)
        if bad.any():
            raise ValueError(f"index {int(indices[bad][0])} out of range [0, {self.capacity})")
        return indices

    def update(self, indices, values) -> None:
        """Set ``weights[indices] = values`` (a scalar broadcasts) in O(k log n).

        Repeated indices: the last occurrence wins (made explicit; numpy's fancy assignment does
        not promise an order). Then each level's parents are recomputed from both children;
        parents shared by several updated leaves are written several times with the same value,
        which is harmless and cheaper than deduplicating every level. One index (the sampler's
        usual case) takes a scalar walk: numpy's per-call overhead on tiny arrays would dominate.
        """
        if isinstance(indices, (int, np.integer)) and np.ndim(values) == 0:
            i, v = int(indices), float(values)
            if not 0 <= i < self.capacity:
                raise ValueError(f"index {i} out of range [0, {self.capacity})")
            if not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"values must be finite and non-negative; got {v!r} at position 0")
            return self._update_one(i, v)
        indices = self._check_indices(indices)
        values = _check_weights(np.broadcast_to(values, indices.shape) if np.ndim(values) == 0
                                else np.asarray(values, dtype=np.float64).ravel(), "values")
        if values.shape != indices.shape:
            raise ValueError(f"got {indices.size} indices but {values.size} values")
        if indices.size <= 1:
            return self._update_one(int(indices[0]), float(values[0])) if indices.size else None
        t = self._tree
        rev_unique, first_in_rev = np.unique(indices[::-1], return_index=True)
        nodes = rev_unique + self._size
        t[nodes] = values[::-1][first_in_rev]
        for _ in range(self._depth):
            nodes >>= 1
            children = nodes << 1
            t[nodes] = t[children] + t[children + 1]

    def _update_one(self, i: int, v: float) -> None:
        t, j = self._tree, i + self._size
        t[j] = v
        j >>= 1
        while j:
            t[j] = t[2 * j] + t[2 * j + 1]
            j >>= 1

    def find(self, u) -> np.ndarray:
        """For each ``u`` in [0, total), the smallest index ``i`` with ``prefix_sum(i + 1) > u``
        (what ``np.searchsorted(np.cumsum(w), u, side="right")`` returns), as int64.

        The descent goes right iff ``u >= left``, so a ``u`` on a boundary belongs to the next
        non-zero weight, as with ``side="right"``; zero weights are skipped for free. The
        floating-point edge: a stored sum is ``fl(left + right)``, which can exceed the exact sum,
        and ``fl(u - left)`` rounds too, so a residual can reach a subtree's total (``u`` close to
        total, or to a prefix sum) and walk into zero weights, padding included. Such rare
        descents (their leaf is 0) are redone by ``_find_one``, which also refuses a zero right
        child: every node it visits then has a positive sum, so no zero-weight index is returned,
        and ``u == total`` gives the last non-zero index. The common descent is vectorised over
        the batch: ``log2(size)`` rounds of five whole-array operations, no per-level guard.
        """
        u = np.asarray(u, dtype=np.float64)
        total = self._tree[1]
        if total <= 0:
            raise ValueError(f"cannot sample from a tree whose total weight is {float(total)!r}")
        bad = ~(u >= 0) | (u > total)  # ~(u >= 0) also catches NaN
        if bad.any():
            raise ValueError(f"u must lie in [0, total={float(total)!r}]; got {float(u[bad][0])!r}")
        return self._find(u)

    def _find(self, u: np.ndarray) -> np.ndarray:
        if u.size == 1:
            return np.full(u.shape, self._find_one(float(u.flat[0])), dtype=np.int64)
        t, x = self._tree, u.astype(np.float64, copy=True).ravel()  # never write the caller's u
        j = np.ones(x.size, dtype=np.int64)
        for _ in range(self._depth):
            j <<= 1  # left child
            left = t[j]
            right = x >= left
            np.subtract(x, left, out=x, where=right)
            j += right
        leaf = t[j] == 0
        if leaf.any():
            for k in np.flatnonzero(leaf):
                j[k] = self._find_one(float(u.flat[k])) + self._size
        return (j - self._size).reshape(u.shape)

    def _find_one(self, x: float) -> int:
        """The guarded scalar descent (right only into a positive sum): one draw, and fix-ups."""
        t, j = self._tree, 1
        for _ in range(self._depth):
            j <<= 1
            left = t[j]
            if x >= left and t[j + 1] > 0:
                x -= left
                j += 1
        return j - self._size

    def sample(self, rng: np.random.Generator, n: int, stratified: bool = False) -> np.ndarray:
        """``n`` indices drawn with probability ``w_i / total`` (int64[n]).

        Default: i.i.d. uniform ``u`` (with replacement, like ``rng.choice(p=...)``). With
        ``stratified=True`` the ``k``-th ``u`` is uniform in the ``k``-th of ``n`` equal slices of
        [0, total), as in PER's minibatches: each index still has expected count ``n * p_i``, with
        lower variance (a heavy level cannot be missed by bad luck), but the draws are sorted by
        index and not independent, so use it for a batch, not as a stream of single draws.
        ``u = r * total`` with ``r < 1`` never exceeds total (rounding is monotone), so it skips
        ``find``'s range checks.
        """
        if int(n) != n or n < 0:
            raise ValueError(f"n must be a non-negative integer; got {n!r}")
        total = self._tree[1]
        if total <= 0:
            raise ValueError(f"cannot sample from a tree whose total weight is {float(total)!r}")
        r = rng.random(int(n))
        if stratified:
            r = np.minimum((np.arange(n) + r) / n, 1.0)
        return self._find(r * total)

    def state_dict(self) -> dict:
        """Plain arrays for a checkpoint: only the leaves, since the sums are a function of them."""
        return {"values": self.values.copy()}

    @classmethod
    def from_state_dict(cls, state: dict) -> SumTree:
        """Rebuild (O(n)); the tree is bit-identical to the saved one, so sampling resumes exactly."""
        return cls.from_weights(np.asarray(state["values"]))
