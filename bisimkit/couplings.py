"""Couplings of two histograms: independent, entangled and optimal.

For histograms ``p`` and ``q`` on the ordered support ``0..n-1``:

* **independent**: ``g = p q^T``;
* **optimal** for a cost matrix ``C``: ``argmin_g sum_ij g[i, j] C[i, j]`` over the
  couplings of ``p`` and ``q`` (POT's network simplex);
* **entangled** (Bertran et al. 2022, Def. 4.2): the law of
  ``(F_p^-1(U), F_q^-1(U))`` for one uniform ``U`` on [0, 1], with the quantile
  function ``F_p^-1(u) = min{i : p[0] + ... + p[i] >= u}``. Written with the
  *breakpoints* ``B_p[i] = (p[0] + ... + p[i]) / sum(p)``, cell ``(i, j)`` gets
  the length of ``(B_p[i-1], B_p[i]] ∩ (B_q[j-1], B_q[j]]``: merging the two
  sorted breakpoint lists walks the north-west-corner staircase, so the coupling
  has at most ``|supp p| + |supp q| - 1`` cells. It depends on the order of the
  support (relabelling states changes it).

On a grid state space (``state_shape``) the entangled coupling is the Rosenblatt
chain rule: one uniform per coordinate, each coordinate drawn from its law given
the earlier ones, i.e. a north-west corner per coordinate between the
conditional laws of the branches. See ``docs/couplings.md``.

Implementation: one compiled kernel, :func:`merge_breakpoints`, computes every
entangled coupling in the project: the batched :func:`north_west_corner` (and so
:func:`entangled_cells`, :func:`entangled_coupling` and the operators) and the
pair-by-pair eps-bar assembly of :mod:`bisimkit.compiled`. The breakpoints come
from :func:`breakpoints` / :func:`dense_breakpoints` /
:func:`rosenblatt_breakpoints`, which the reparametrised samplers of
:mod:`bisimkit.losses.finite` use too, so a shared uniform there draws exactly
the coupling computed here.

Batched functions return *cells*: parallel arrays ``(problem, i, j, mass)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .kernels import DenseRows, kernel, on_small_path

if TYPE_CHECKING:
    import scipy.sparse as sp


def load_pot():
    """POT, imported on first use (it takes about a second to import)."""
    import ot  # POT takes about a second to import: loaded where an exact plan is needed

    return ot


class Cells:
    """A batch of sparse couplings: cell ``r`` puts ``mass[r]`` on ``(i[r], j[r])``
    in the coupling of problem ``problem[r]``.

    Built either with an explicit ``problem`` array, or (:meth:`from_slots`) with
    the cells of problem p at ``offsets[p]:offsets[p + 1]``; then ``problem`` is
    materialised only when asked for.
    """

    def __init__(
        self,
        problem: np.ndarray | None,
        i: np.ndarray,
        j: np.ndarray,
        mass: np.ndarray,
        offsets: np.ndarray | None = None,
    ) -> None:
        self._problem = problem
        self.i, self.j, self.mass = i, j, mass
        self.offsets = offsets

    @classmethod
    def from_slots(cls, offsets: np.ndarray, i: np.ndarray, j: np.ndarray, mass: np.ndarray) -> "Cells":
        """Cells stored problem by problem, problem p at ``offsets[p]:offsets[p + 1]``."""
        return cls(None, i, j, mass, offsets=np.asarray(offsets, dtype=np.int64))

    @property
    def problem(self) -> np.ndarray:
        """Problem index of every cell."""
        if self._problem is None:
            assert self.offsets is not None  # cells are built with problem or offsets
            sizes = np.diff(self.offsets)
            self._problem = np.repeat(np.arange(len(sizes)), sizes)
        return self._problem

    def __len__(self) -> int:
        return int(self.mass.size)

    def select(self, keep: np.ndarray) -> "Cells":
        """The cells where boolean mask ``keep`` holds."""
        return Cells(self.problem[keep], self.i[keep], self.j[keep], self.mass[keep])

    @staticmethod
    def concat(parts: list["Cells"]) -> "Cells":
        """Concatenate batches (problem ids are kept as they are)."""
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return Cells(empty, empty, empty, np.zeros(0))
        return Cells(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("problem", "i", "j", "mass")))


# ------------------------------------------------------------------ kernel
@kernel
def _row_breakpoints(data, lo, hi, out):
    """Breakpoints of the histogram ``data[lo:hi]`` into ``out[lo:hi]`` (sequential sums)."""
    total = 0.0
    for x in range(lo, hi):
        total += data[x]
    run = 0.0
    for x in range(lo, hi):
        run += data[x]
        out[x] = min(run / total, 1.0) if total > 0 else 1.0
    if hi > lo:
        out[hi - 1] = 1.0  # the quantile function ends at 1 exactly: no crumb past the last atom


@kernel
def _csr_breakpoints(indptr, data, out):
    for r in range(len(indptr) - 1):
        _row_breakpoints(data, indptr[r], indptr[r + 1], out)


@kernel
def merge_breakpoints(ia, ba, ib, bb, out_i, out_j, out_m):
    """The north-west-corner coupling of two histograms given by their breakpoints.

    ``ia`` / ``ib`` are the atoms (any labels, in the support's order) and ``ba`` /
    ``bb`` their breakpoints (non-decreasing, last one 1). Walks the merged
    breakpoints: cell ``(ia[a], ib[b])`` gets ``min(ba[a], bb[b]) - previous``;
    only empty cells are skipped, so however small a cell is, it is priced (a cell of
    mass 1e-15 between rewards 2e8 apart carries 2e-7 of the operator's value). How
    far these cells can be from the exact coupling is bounded by
    :func:`bisimkit.roundoff.breakpoint_errors`. Writes the cells into ``out_*``
    (room for ``len(ia) + len(ib) - 1``) and returns their number.
    Compiled; the one implementation of the entangled coupling.
    """
    la = len(ba)
    lb = len(bb)
    a = 0
    b = 0
    n = 0
    prev = 0.0
    while a < la and b < lb:
        ca = ba[a]
        cb = bb[b]
        nxt = ca if ca < cb else cb
        if nxt > prev:
            out_i[n] = ia[a]
            out_j[n] = ib[b]
            out_m[n] = nxt - prev
            n += 1
            prev = nxt
        if ca <= nxt:
            a += 1
        if cb <= nxt:
            b += 1
    return n


@kernel
def _merge_rows(xptr, xidx, xbp, src, yptr, yidx, ybp, dst, offsets, out_i, out_j, out_m, counts):
    for k in range(len(src)):
        r = src[k]
        s = dst[k]
        lo = offsets[k]
        counts[k] = merge_breakpoints(
            xidx[xptr[r] : xptr[r + 1]],
            xbp[xptr[r] : xptr[r + 1]],
            yidx[yptr[s] : yptr[s + 1]],
            ybp[yptr[s] : yptr[s + 1]],
            out_i[lo:],
            out_j[lo:],
            out_m[lo:],
        )


def breakpoints(X: sp.csr_matrix) -> np.ndarray:
    """Breakpoints of every row of ``X``, parallel to the data of ``X`` with sorted indices.

    For a row with masses ``p[0..k-1]`` on its stored atoms:
    ``B[i] = min((p[0] + ... + p[i]) / (p[0] + ... + p[k-1]), 1)`` and ``B[k-1] = 1``,
    the sums taken left to right. An all-zero row gets breakpoints 1.
    """
    return CSRLaws(X).breakpoints


def dense_breakpoints(masses: np.ndarray) -> np.ndarray:
    """Breakpoints of dense histograms along the last axis (zero masses included), as
    :func:`breakpoints` computes them: ``B[..., i]`` is the quantile function's ``i``-th jump."""
    masses = np.ascontiguousarray(masses, dtype=np.float64)
    k = masses.shape[-1] if masses.ndim else 1
    flat = masses.reshape(-1)
    out = np.empty_like(flat)
    rows = flat.size // max(k, 1)
    _csr_breakpoints(np.arange(rows + 1, dtype=np.int64) * k, flat, out)
    return out.reshape(masses.shape)


def conditional_laws(laws: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Unnormalised laws of each coordinate given the earlier ones, for laws on a grid.

    ``laws`` is (R, prod(shape)) over the C-order cells; entry ``k`` of the result is
    (R, prod(shape[:k]), shape[k]): for every prefix (flat C-order index of the first
    ``k`` coordinates), the mass of each value of coordinate ``k``.
    """
    R = laws.shape[0]
    block = np.asarray(laws, dtype=np.float64).reshape((R,) + tuple(shape))
    out = []
    for axis, size in enumerate(shape):
        prefixes = int(np.prod(shape[:axis], dtype=np.int64))
        out.append(block.reshape(R, prefixes, size, -1).sum(axis=3))
    return out


def rosenblatt_breakpoints(laws: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Breakpoints of the conditional laws of :func:`conditional_laws` (one table per coordinate)."""
    return [dense_breakpoints(c) for c in conditional_laws(laws, shape)]


# ------------------------------------------------------------- single pair
def _as_histogram(name: str, p) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D histogram, got shape {p.shape}")
    if np.any(p < 0) or not np.all(np.isfinite(p)) or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name}: expected non-negative finite entries summing to 1")
    return p / p.sum()


def independent_coupling(p, q) -> np.ndarray:
    """The product coupling ``p q^T``."""
    return np.outer(_as_histogram("p", p), _as_histogram("q", q))


def entangled_coupling(p, q, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The entangled (quantile / north-west-corner) coupling of ``p`` and ``q``.

    With ``shape``, ``p`` and ``q`` are laws on the C-order cells of a grid and
    the coupling follows the Rosenblatt chain rule coordinate by coordinate.
    """
    p = _as_histogram("p", p)
    q = _as_histogram("q", q)
    if p.size != q.size:
        raise ValueError(f"p and q must share a support, got sizes {p.size} and {q.size}")
    X = histogram_rows(np.vstack([p, q]))
    cells = entangled_cells(X, np.array([0]), X, np.array([1]), shape=shape)
    g = np.zeros((p.size, q.size))
    np.add.at(g, (cells.i, cells.j), cells.mass)
    return g


def optimal_coupling(p, q, cost) -> np.ndarray:
    """An optimal coupling of ``p`` and ``q`` for the ``cost`` matrix (POT's network simplex)."""
    p = _as_histogram("p", p)
    q = _as_histogram("q", q)
    cost = np.asarray(cost, dtype=np.float64)
    if cost.shape != (p.size, q.size):
        raise ValueError(f"cost: expected shape {(p.size, q.size)}, got {cost.shape}")
    return load_pot().emd(p, q, cost, numItermax=10_000_000)


# ----------------------------------------------------------------- batched
def histogram_rows(X) -> sp.csr_matrix | DenseRows:
    """``X`` (a dense array, rows last-axis histograms, or a sparse matrix) as CSR rows: a
    ``scipy.sparse.csr_matrix``, or on the small-problem path (:mod:`bisimkit.kernels`) the numpy
    :class:`~bisimkit.kernels.DenseRows` of a dense ``X``."""
    if isinstance(X, DenseRows) or (on_small_path() and isinstance(X, np.ndarray)):
        return X if isinstance(X, DenseRows) else DenseRows(X)
    import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

    return sp.csr_matrix(X)


def padded_rows(X: sp.csr_matrix, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``X[rows]`` as padded arrays ``(index, mass, length)``.

    ``index[k, :length[k]]`` are the support of row ``rows[k]`` in increasing
    order and ``mass`` its masses; padding has index 0 and mass 0.
    """
    if not X.has_sorted_indices:
        X = X.sorted_indices()
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    lengths = (X.indptr[rows + 1] - X.indptr[rows]).astype(np.int64)
    width = max(int(lengths.max(initial=0)), 1)
    index = np.zeros((len(rows), width), dtype=np.int64)
    mass = np.zeros((len(rows), width))
    _gather_rows(X.indptr.astype(np.int64, copy=False), X.indices, X.data, rows, index, mass)
    return index, mass, lengths


@kernel
def _gather_rows(indptr, indices, data, rows, index, mass):
    for k in range(len(rows)):
        lo = indptr[rows[k]]
        for x in range(indptr[rows[k] + 1] - lo):
            index[k, x] = indices[lo + x]
            mass[k, x] = data[lo + x]


def merge_rows(
    xptr: np.ndarray,
    xidx: np.ndarray,
    bx: np.ndarray,
    src: np.ndarray,
    yptr: np.ndarray,
    yidx: np.ndarray,
    by: np.ndarray,
    dst: np.ndarray,
) -> Cells:
    """North-west corners of many row pairs given as CSR arrays with breakpoints.

    Row ``r`` of the first side has atoms ``xidx[xptr[r]:xptr[r + 1]]`` (in the
    support's order) with breakpoints ``bx[xptr[r]:xptr[r + 1]]``; likewise for the
    second side. Problem k couples row ``src[k]`` with row ``dst[k]``; its cells are
    stored along the staircase at ``offsets[k]:offsets[k + 1]`` of the result. Every
    entangled coupling computed in Python goes through here to :func:`merge_breakpoints`.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    sizes = np.maximum((xptr[src + 1] - xptr[src]) + (yptr[dst + 1] - yptr[dst]) - 1, 0)
    offsets = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out_i = np.empty(int(offsets[-1]), dtype=np.int64)
    out_j = np.empty(int(offsets[-1]), dtype=np.int64)
    out_m = np.empty(int(offsets[-1]))
    counts = np.zeros(len(src), dtype=np.int64)
    _merge_rows(xptr, xidx, bx, src, yptr, yidx, by, dst, offsets, out_i, out_j, out_m, counts)
    if int(counts.sum()) != len(out_m):  # drop the unused room of each slot
        slot = np.repeat(np.arange(len(src)), sizes)
        keep = np.arange(len(out_m)) - offsets[slot] < counts[slot]
        out_i, out_j, out_m = out_i[keep], out_j[keep], out_m[keep]
    kept = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(counts, out=kept[1:])
    return Cells.from_slots(kept, out_i, out_j, out_m)


class CSRLaws:
    """Histograms as the rows of a CSR matrix (sorted indices), with their breakpoints."""

    def __init__(self, X) -> None:
        X = X if isinstance(X, DenseRows) else histogram_rows(X)
        if not X.has_sorted_indices:
            X = X.sorted_indices()
        self.indptr = X.indptr.astype(np.int64)
        self.indices = X.indices.astype(np.int64)
        self.breakpoints = np.empty(X.nnz)
        _csr_breakpoints(self.indptr, np.ascontiguousarray(X.data, dtype=np.float64), self.breakpoints)

    @classmethod
    def dense(cls, B: np.ndarray) -> "CSRLaws":
        """Rows of a dense (N x k) array of *breakpoints* (all k atoms of every row kept)."""
        self = cls.__new__(cls)
        N, k = B.shape
        self.indptr = np.arange(N + 1, dtype=np.int64) * k
        self.indices = np.tile(np.arange(k, dtype=np.int64), N)
        self.breakpoints = np.ascontiguousarray(B, dtype=np.float64).ravel()
        return self


def north_west_corner(X: sp.csr_matrix, src: np.ndarray, Y: sp.csr_matrix, dst: np.ndarray) -> Cells:
    """Entangled couplings, in index order, of the row pairs ``(X[src[k]], Y[dst[k]])``."""
    lx = CSRLaws(X)
    ly = lx if Y is X else CSRLaws(Y)
    return merge_rows(lx.indptr, lx.indices, lx.breakpoints, src, ly.indptr, ly.indices, ly.breakpoints, dst)


def entangled_cells(
    X: sp.csr_matrix,
    src: np.ndarray,
    Y: sp.csr_matrix,
    dst: np.ndarray,
    shape: tuple[int, ...] | None = None,
    chunk: int = 200_000,
) -> Cells:
    """Entangled couplings of the row pairs ``(X[src[k]], Y[dst[k]])``.

    Without ``shape`` (or with a 1-D shape) this is the north-west corner in
    index order; with a grid ``shape`` it is the Rosenblatt chain rule.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if shape is not None and len(shape) > 1:
        return _rosenblatt_cells(X, src, Y, dst, tuple(shape), chunk)
    return north_west_corner(X, src, Y, dst)


def _rosenblatt_cells(X, src, Y, dst, shape, chunk) -> Cells:
    """Chain-rule entangled couplings on a grid, one coordinate at a time."""
    parts = []
    chunk = max(1, min(chunk, 2_000_000 // max(X.shape[1], 1)))  # bound the dense blocks
    for start in range(0, len(src), chunk):
        BP = rosenblatt_breakpoints(X[src[start : start + chunk]].toarray(), shape)
        BQ = rosenblatt_breakpoints(Y[dst[start : start + chunk]].toarray(), shape)
        # Each live branch: (problem, flat prefix of x, flat prefix of y, mass so far).
        problem = np.arange(BP[0].shape[0])
        px = np.zeros(len(problem), dtype=np.int64)
        py = np.zeros(len(problem), dtype=np.int64)
        mass = np.ones(len(problem))
        for axis, size in enumerate(shape):
            lp = CSRLaws.dense(BP[axis][problem, px])
            lq = CSRLaws.dense(BQ[axis][problem, py])
            branch = np.arange(len(problem))
            step = merge_rows(
                lp.indptr, lp.indices, lp.breakpoints, branch, lq.indptr, lq.indices, lq.breakpoints, branch
            )
            k = step.problem
            problem, mass = problem[k], mass[k] * step.mass
            px = px[k] * size + step.i
            py = py[k] * size + step.j
            keep = mass > 0
            problem, px, py, mass = problem[keep], px[keep], py[keep], mass[keep]
        parts.append(Cells(problem + start, px, py, mass))
    return Cells.concat(parts)


def independent_cells(X: sp.csr_matrix, src: np.ndarray, Y: sp.csr_matrix, dst: np.ndarray) -> Cells:
    """Product couplings of the row pairs ``(X[src[k]], Y[dst[k]])`` as cells."""
    ip, mp, _ = padded_rows(X, np.asarray(src))
    iq, mq, _ = padded_rows(Y, np.asarray(dst))
    mass = mp[:, :, None] * mq[:, None, :]
    keep = mass > 0
    problem, a, b = np.nonzero(keep)
    return Cells(problem, ip[problem, a], iq[problem, b], mass[keep])
