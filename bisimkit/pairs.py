"""State pairs, the unknowns of the solvers.

Every operator in bisimkit is symmetric, so on one MDP a distance matrix is stored as a vector
over the pairs ``s < t`` (or ``s <= t`` when the diagonal is unknown too, as for the sampled
operators whose fixed points have ``d(s, s) > 0``). Between two MDPs A and B the unknowns are the
cross pairs ``(s, t)``, s a state of A and t one of B (:meth:`PairSpace.cross`): their matrix is
``n_A x n_B`` and not symmetric.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError

#: From this many pairs, :meth:`PairSpace.to_matrix` of the whole upper triangle fills rows and mirrors blocks
#: instead of scattering each value twice.
ROW_FILL_PAIRS = 100_000


class PairSpace:
    """Index of the pairs of states, on one MDP (``{s, t}`` of ``n`` states, with or without ``s == t``) or
    between two (:meth:`cross`).

    ``s`` and ``t`` are the two states of each pair (``t`` a state of the second MDP for cross pairs);
    ``index[i, j]`` is the pair of ``(i, j)`` (-1 for none), of shape :attr:`shape`: ``(n, n)`` and
    symmetric on one MDP, ``(n_A, n_B)`` between two.
    """

    def __init__(self, n: int, diagonal: bool, s: np.ndarray | None = None, t: np.ndarray | None = None) -> None:
        self.n = n
        self.diagonal = diagonal
        self.symmetric = True
        self.shape = (n, n)
        self._row_major = s is None  # every pair of the upper triangle, row by row (to_matrix's fast path)
        if s is None:
            self.s, self.t = np.triu_indices(n, 0 if diagonal else 1)
        else:
            self.s, self.t = np.asarray(s, dtype=np.int64), np.asarray(t, dtype=np.int64)
        self._keys: np.ndarray | None = None
        self._index = np.full((n, n), -1, dtype=np.int64)
        ids = np.arange(len(self.s), dtype=np.int64)
        self._index[self.s, self.t] = ids
        self._index[self.t, self.s] = ids

    @classmethod
    def listed(cls, n: int, s: np.ndarray, t: np.ndarray) -> "PairSpace":
        """The pairs ``(s[k], t[k])``, ``s < t``, sorted by ``s n + t``, of ``n`` states, without the dense
        (n, n) index: a few pairs of a large model (:mod:`bisimkit.query`). :meth:`lookup` finds a pair;
        :attr:`index` and :meth:`to_matrix` are not available."""
        self = cls.__new__(cls)
        self._row_major = False
        self.n = n
        self.diagonal = False
        self.symmetric = True
        self.shape = (n, n)
        self.s, self.t = np.asarray(s, dtype=np.int64), np.asarray(t, dtype=np.int64)
        self._keys = self.s * n + self.t
        if np.any(self.s >= self.t) or np.any(np.diff(self._keys) <= 0):
            raise ValueError("listed pairs must have s < t and be sorted by s n + t, without repeats")
        return self

    def lookup(self, i: np.ndarray, j: np.ndarray, missing: int = -1) -> np.ndarray:
        """The pair of ``(i[k], j[k])`` in either order, ``missing`` where it is not stored (the diagonal of a
        space without it included)."""
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        if self._keys is None:
            out = self.index[i, j]
            return np.where(out >= 0, out, missing)
        keys = np.minimum(i, j) * self.n + np.maximum(i, j)
        pos = np.minimum(np.searchsorted(self._keys, keys), max(len(self._keys) - 1, 0))
        found = (self._keys[pos] == keys) if len(self._keys) else np.zeros(len(keys), dtype=bool)
        return np.where(found & (i != j), pos, missing)

    @classmethod
    def diagonal_only(cls, n: int) -> "PairSpace":
        """Just the pairs (s, s): for checking that F(d) vanishes on the diagonal."""
        states = np.arange(n)
        return cls(n, True, states, states)

    @classmethod
    def cross(cls, n_a: int, n_b: int) -> "PairSpace":
        """The ``n_A n_B`` pairs ``(s, t)`` between the states of two MDPs, pair ``s n_B + t``."""
        self = cls.__new__(cls)
        self._row_major = False
        self.n = n_a
        self.diagonal = False
        self.symmetric = False
        self.shape = (n_a, n_b)
        self.s = np.repeat(np.arange(n_a, dtype=np.int64), n_b)
        self.t = np.tile(np.arange(n_b, dtype=np.int64), n_a)
        self._keys = None
        self._index = np.arange(n_a * n_b, dtype=np.int64).reshape(n_a, n_b)
        return self

    @property
    def index(self) -> np.ndarray:
        """``index[i, j]``: the pair of ``(i, j)``, -1 for none (not for a :meth:`listed` space: :meth:`lookup`)."""
        if self._keys is not None:
            raise ValueError("a listed pair space has no dense index (PairSpace.lookup finds its pairs)")
        return self._index

    def __len__(self) -> int:
        return int(self.s.size)

    def to_matrix(self, x: np.ndarray) -> np.ndarray:
        """The matrix with these pair values: symmetric n x n on one MDP (diagonal 0 if not stored),
        n_A x n_B between two."""
        if self._keys is not None:
            raise ValueError("a listed pair space has no dense matrix (bisimkit.query solves it pair by pair)")
        D = np.zeros(self.shape)
        if self._row_major and len(self.s) >= ROW_FILL_PAIRS:
            return _upper_rows_to_symmetric(D, np.asarray(x, dtype=np.float64), self.diagonal)
        D[self.s, self.t] = x
        if self.symmetric:
            D[self.t, self.s] = x
        return D

    def from_matrix(self, D: np.ndarray) -> np.ndarray:
        """The pair values of a matrix (its upper triangle on one MDP)."""
        return np.asarray(D)[self.s, self.t]

    def zeros(self) -> np.ndarray:
        """A zero vector over the pairs."""
        return np.zeros(len(self))

    def side_maxima(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The row and the column maxima of ``to_matrix(|x|)`` (0 for a missing diagonal), from the pair vector
        without forming the matrix: the largest distance each state of the first and of the second side
        has to anything."""
        rows, cols = np.zeros(self.shape[0]), np.zeros(self.shape[1])
        if len(x):
            x = np.abs(x)
            np.maximum.at(rows, self.s, x)
            np.maximum.at(cols, self.t, x)
            if self.symmetric:
                np.maximum.at(rows, self.t, x)
                np.maximum.at(cols, self.s, x)
        return rows, cols


def check_state_pairs(pairs, n: int) -> np.ndarray:
    """The queried ``pairs`` as a ``(q, 2)`` int64 array of state indices below ``n``; otherwise
    :class:`~bisimkit.errors.InputError` naming the entry."""
    try:
        arr = np.asarray(pairs)
    except (TypeError, ValueError):
        raise InputError("expected a sequence of (s, t) state pairs", param="pairs") from None
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(
            f"expected (s, t) pairs of state indices, got an array of shape {arr.shape} and type {arr.dtype}",
            param="pairs",
        )
    bad = np.argwhere((arr < 0) | (arr >= n))
    if len(bad):
        i, j = (int(x) for x in bad[0])
        raise InputError(f"entry {i}: state {int(arr[i, j])} is out of range ({n} states)", param="pairs")
    return arr.astype(np.int64)


def successor_pairs(left: np.ndarray, right: np.ndarray, ptr: np.ndarray, cols: np.ndarray, chunk_cells: int = 1 << 20):
    """Yield ``(pair, u, v)`` for every cell ``(u, v)`` of ``supp(left[p]) x supp(right[p])`` (CSR rows ``ptr``,
    ``cols``), pair by pair in row-major order, in chunks of about ``chunk_cells`` cells."""
    deg = np.diff(ptr)
    di, dj = deg[left], deg[right]
    nc = di * dj
    ends = np.cumsum(nc)
    start = 0
    while start < len(left):
        stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + chunk_cells, side="right"))
        stop = max(stop, start + 1)
        counts = nc[start:stop]
        p = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
        off = np.repeat(np.cumsum(counts) - counts, counts)
        local = np.arange(len(p), dtype=np.int64) - off
        b_deg = dj[p]
        a, b = local // b_deg, local % b_deg
        yield p, cols[ptr[left[p]] + a], cols[ptr[right[p]] + b]
        start = stop


def _upper_rows_to_symmetric(D: np.ndarray, x: np.ndarray, diagonal: bool, block: int = 512) -> np.ndarray:
    """Fill the zero n x n ``D`` with the values ``x`` of its upper triangle listed row by row (with the
    diagonal or not) and their mirror images: row slices, then the lower triangle block by block (the same
    matrix as scattering ``x`` to ``(s, t)`` and ``(t, s)``, several times faster on large n)."""
    n = D.shape[0]
    off = 0
    first = 0 if diagonal else 1
    for i in range(n):
        k = n - i - first
        D[i, i + first :] = x[off : off + k]
        off += k
    for a in range(0, n, block):
        for b in range(a, n, block):
            upper = D[a : a + block, b : b + block]
            D[b : b + block, a : a + block] += upper.T if b > a else np.triu(upper, 1).T
    return D


def successor_closure(
    ptr: np.ndarray, cols: np.ndarray, seeds_i, seeds_j, k: int, max_pairs: int, live=None
) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """The unordered pairs ``i < j`` of ``k`` states reachable from the seed pairs through successor pairs
    (every cell of ``supp(i) x supp(j)`` of the CSR rows), stopping at the diagonal and, when ``live`` is
    given, at the pairs where ``live(i, j)`` is False; sorted by ``i k + j``. ``(None, None)`` as soon as more
    than ``max_pairs`` are found."""
    lo, hi = np.minimum(seeds_i, seeds_j).astype(np.int64), np.maximum(seeds_i, seeds_j).astype(np.int64)
    keep = lo != hi
    lo, hi = lo[keep], hi[keep]
    if live is not None and len(lo):
        keep = live(lo, hi)
        lo, hi = lo[keep], hi[keep]
    frontier = np.unique(lo * k + hi)
    if len(frontier) > max_pairs:
        return None, None
    seen = set(frontier.tolist())
    found = [frontier]
    while len(frontier):
        fi, fj = frontier // k, frontier % k
        nxt = []
        for _, u, v in successor_pairs(fi, fj, ptr, cols):
            a, b = np.minimum(u, v), np.maximum(u, v)
            off = a != b
            a, b = a[off], b[off]
            if live is not None:
                keep = live(a, b)
                a, b = a[keep], b[keep]
            nxt.append(np.unique(a * k + b))
        cand = np.unique(np.concatenate(nxt)) if nxt else np.zeros(0, np.int64)
        new = [x for x in cand.tolist() if x not in seen]
        seen.update(new)
        if len(seen) > max_pairs:
            return None, None
        frontier = np.asarray(new, dtype=np.int64)
        found.append(frontier)
    keys = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    return keys // k, keys % k
