"""Couplings of two histograms: independent, entangled and optimal.

The *entangled* coupling (paper Def. 4.2) draws one uniform U and maps it
through both quantile functions, ``x = F_p^-1(U)``, ``y = F_q^-1(U)`` with
``F^-1(u) = min{i : p[0] + ... + p[i] >= u}``. On an ordered support it is the
north-west-corner coupling and has at most ``|supp p| + |supp q| - 1`` cells.
On a grid state space (``state_shape``) it is the Rosenblatt chain rule: one
uniform per coordinate, each coordinate drawn from its conditional law given
the earlier ones.

Besides single-pair functions returning dense matrices, this module has batched
versions that couple many pairs at once and return *cells*: parallel arrays
``(problem, i, j, mass)``.
"""

from __future__ import annotations


def load_pot():
    """POT, imported on first use (it takes about a second to import)."""
    import ot

    return ot


import numpy as np
import scipy.sparse as sp

#: Cells lighter than this are dropped (floating-point crumbs of cumulative sums).
MIN_CELL_MASS = 1e-15


class Cells:
    """A batch of sparse couplings: cell ``r`` puts ``mass[r]`` on ``(i[r], j[r])``
    in the coupling of problem ``problem[r]``.

    Built either with an explicit ``problem`` array, or (:meth:`from_slots`) with
    the cells of problem p at ``offsets[p]:offsets[p + 1]``; then ``problem`` is
    materialised only when asked for.
    """

    def __init__(self, problem: np.ndarray | None, i: np.ndarray, j: np.ndarray, mass: np.ndarray,
                 offsets: np.ndarray | None = None) -> None:
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
    X = sp.csr_matrix(np.vstack([p, q]))
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
def padded_rows(X: sp.csr_matrix, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``X[rows]`` as padded arrays ``(index, mass, length)``.

    ``index[k, :length[k]]`` are the support of row ``rows[k]`` in increasing
    order and ``mass`` its masses; padding has index 0 and mass 0.
    """
    sub = X[rows]
    sub.sort_indices()
    lengths = np.diff(sub.indptr)
    width = max(int(lengths.max(initial=0)), 1)
    k = np.repeat(np.arange(len(rows)), lengths)
    pos = np.arange(sub.indptr[-1]) - np.repeat(sub.indptr[:-1], lengths)
    index = np.zeros((len(rows), width), dtype=np.int64)
    mass = np.zeros((len(rows), width))
    index[k, pos] = sub.indices
    mass[k, pos] = sub.data
    return index, mass, lengths


def north_west_corner(mass_p: np.ndarray, mass_q: np.ndarray) -> tuple[np.ndarray, ...]:
    """North-west-corner couplings of many padded histogram pairs at once.

    ``mass_p`` (N x W1) and ``mass_q`` (N x W2) hold histograms (rows sum to 1,
    zero padding at the end). Returns ``(problem, i, j, mass)`` where ``i`` and
    ``j`` are column positions in ``mass_p`` and ``mass_q``.
    """
    N, w1 = mass_p.shape
    cp = np.cumsum(mass_p, axis=1)
    cq = np.cumsum(mass_q, axis=1)
    # Both quantile functions must end exactly at 1, or a crumb of mass would
    # fall past the last atom.
    cp = np.minimum(cp / cp[:, -1:], 1.0)
    cq = np.minimum(cq / cq[:, -1:], 1.0)
    cp[:, -1] = 1.0
    cq[:, -1] = 1.0
    merged = np.concatenate([cp, cq], axis=1)
    order = np.argsort(merged, axis=1, kind="stable")  # ties: p's breakpoint first
    values = np.take_along_axis(merged, order, axis=1)
    from_p = order < w1
    i = np.cumsum(from_p, axis=1) - from_p  # breakpoints of p strictly before
    j = np.cumsum(~from_p, axis=1) - ~from_p
    seg = np.diff(values, axis=1, prepend=0.0)
    keep = seg > MIN_CELL_MASS
    problem = np.broadcast_to(np.arange(N)[:, None], keep.shape)[keep]
    return problem, i[keep], j[keep], seg[keep]


def entangled_cells(X: sp.csr_matrix, src: np.ndarray, Y: sp.csr_matrix, dst: np.ndarray,
                    shape: tuple[int, ...] | None = None, chunk: int = 200_000) -> Cells:
    """Entangled couplings of the row pairs ``(X[src[k]], Y[dst[k]])``.

    Without ``shape`` (or with a 1-D shape) this is the north-west corner in
    index order; with a grid ``shape`` it is the Rosenblatt chain rule.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if shape is not None and len(shape) > 1:
        return _rosenblatt_cells(X, src, Y, dst, tuple(shape), chunk)
    parts = []
    for start in range(0, len(src), chunk):
        s, d = src[start:start + chunk], dst[start:start + chunk]
        ip, mp, _ = padded_rows(X, s)
        iq, mq, _ = padded_rows(Y, d)
        problem, i, j, mass = north_west_corner(mp, mq)
        parts.append(Cells(problem + start, ip[problem, i], iq[problem, j], mass))
    return Cells.concat(parts)


def _rosenblatt_cells(X, src, Y, dst, shape, chunk) -> Cells:
    """Chain-rule entangled couplings on a grid, one coordinate at a time."""
    parts = []
    chunk = max(1, min(chunk, 5_000_000 // max(X.shape[1], 1)))  # bound the dense blocks
    for start in range(0, len(src), chunk):
        P = np.asarray(X[src[start:start + chunk]].todense()).reshape((-1,) + shape)
        Q = np.asarray(Y[dst[start:start + chunk]].todense()).reshape((-1,) + shape)
        # Each live branch: (problem, prefix of x, prefix of y, mass so far).
        problem = np.arange(P.shape[0])
        px = np.zeros((P.shape[0], 0), dtype=np.int64)
        py = np.zeros((P.shape[0], 0), dtype=np.int64)
        mass = np.ones(P.shape[0])
        for axis in range(len(shape)):
            # Conditional law of coordinate `axis` given the prefix, per branch.
            cond_p = _conditional(P, problem, px, axis)
            cond_q = _conditional(Q, problem, py, axis)
            k, i, j, m = north_west_corner(cond_p, cond_q)
            problem, mass = problem[k], mass[k] * m
            px = np.column_stack([px[k], i])
            py = np.column_stack([py[k], j])
            keep = mass > MIN_CELL_MASS
            problem, px, py, mass = problem[keep], px[keep], py[keep], mass[keep]
        flat_x = np.ravel_multi_index(tuple(px.T), shape)
        flat_y = np.ravel_multi_index(tuple(py.T), shape)
        parts.append(Cells(problem + start, flat_x, flat_y, mass))
    return Cells.concat(parts)


def _conditional(P: np.ndarray, problem: np.ndarray, prefix: np.ndarray, axis: int) -> np.ndarray:
    """Law of coordinate ``axis`` given the first ``axis`` coordinates, per branch."""
    block = P[(problem,) + tuple(prefix.T)]  # (branches, shape[axis], ...)
    marginal = block.reshape(block.shape[0], block.shape[1], -1).sum(axis=2)
    total = marginal.sum(axis=1, keepdims=True)
    return marginal / np.where(total > 0, total, 1.0)


def independent_cells(X: sp.csr_matrix, src: np.ndarray, Y: sp.csr_matrix, dst: np.ndarray) -> Cells:
    """Product couplings of the row pairs ``(X[src[k]], Y[dst[k]])`` as cells."""
    ip, mp, lp = padded_rows(X, np.asarray(src))
    iq, mq, lq = padded_rows(Y, np.asarray(dst))
    mass = mp[:, :, None] * mq[:, None, :]
    keep = mass > 0
    problem, a, b = np.nonzero(keep)
    return Cells(problem, ip[problem, a], iq[problem, b], mass[keep])


def cells_to_dense(cells: Cells, problem: int, n: int, m: int | None = None) -> np.ndarray:
    """The coupling of one ``problem`` as a dense n x m matrix."""
    sel = cells.problem == problem
    g = np.zeros((n, n if m is None else m))
    np.add.at(g, (cells.i[sel], cells.j[sel]), cells.mass[sel])
    return g
