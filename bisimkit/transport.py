"""Optimal transport between many pairs of histograms at once.

``optimal_transport`` returns ``W_p(X[src[k]], Y[dst[k]]; d)`` for every k, and
optionally an optimal plan for each. Problems are sorted by shape and each
kind is solved by the cheapest exact method:

* identical histograms under a ground cost with zero diagonal: cost 0, the
  identity plan;
* up to :data:`KERNEL_MAX` atoms a side, or with a warm-start basis from an
  earlier call: the compiled network simplex of :mod:`bisimkit.simplex`, on the
  supports only, read straight from the CSR rows in one compiled pass over every
  problem (:func:`bisimkit.simplex.solve_rows`: no padded copy of the supports, so
  millions of problems of a few atoms cost little more than their simplex);
* everything else: POT's network simplex on the supports, gathered for those
  problems only.

Every value comes with a bound on its distance to the exact optimum (``gaps``):
the simplex's duality gap and marginal drift (:func:`bisimkit.simplex._plan_gap`),
the same bound from POT's dual potentials, 0 for identical histograms. The
solvers charge it to their certificates.

Plans are *basic* solutions, so problem k has at most ``k_atoms + l_atoms - 1``
positive cells; every method writes its plan into that fixed slot of the output
arrays, which is why the plan of millions of problems is built without copies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .couplings import Cells, load_pot, padded_rows
from .simplex import (
    BASIS_DTYPE,
    FLOW_EPS,
    ROW_LEFT,
    bases_from_flows,
    basis_offsets,
    line_bases,
    marginal_gaps,
    solve_rows,
)

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Problems per batch of padded supports (those left to POT, and the line seeds); bounds their memory.
CHUNK = 200_000
#: Problems with at most this many atoms per side go to the compiled simplex cold.
KERNEL_MAX = 64


class WarmStarts:
    """Optimal bases from the last solve of each problem, to warm-start the next.

    Valid while the problems keep their histograms (only the ground cost
    changes), as in value iteration and coupling iteration. Stored in the same
    slots as the plans. Where a basis was optimal as it was, the plan slots the call wrote keep its flows
    for the next start from it (:meth:`kept`), as long as the next call writes into the same slots.
    """

    def __init__(self) -> None:
        self._layout: tuple | None = None
        self._bases: tuple[np.ndarray, np.ndarray] | None = None
        self._kept: np.ndarray | None = None
        self._kept_in: np.ndarray | None = None  # the plan masses whose slots the flags speak of

    def layout(self, X, src: np.ndarray, Y, dst: np.ndarray) -> np.ndarray:
        """The plan slots' offsets of the problems ``(X[src[k]], Y[dst[k]])``, ``a + b - 1`` slots for
        supports of a and b atoms (:func:`optimal_transport`): kept while the calls pass the same matrices
        and equal rows; the bases are reset when the layout changes."""
        kept = self._layout
        if (
            kept is not None
            and kept[0] is X
            and kept[2] is Y
            and (kept[1] is src or np.array_equal(kept[1], src))
            and (kept[3] is dst or np.array_equal(kept[3], dst))
        ):
            return kept[4]
        off = slot_offsets(X, src, Y, dst)
        self._layout = (X, src, Y, dst, off)
        self._bases = None
        return off

    def bases(self, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(basis, valid)`` of every problem of the layout ``off`` (:meth:`layout`): the slots' (row,
        column) cells and whether they hold a basis."""
        if self._bases is None or len(self._bases[1]) != len(off) - 1:
            self._bases = (np.zeros((int(off[-1]), 2), dtype=BASIS_DTYPE), np.zeros(len(off) - 1, dtype=bool))
            self._kept = None
        return self._bases

    def kept(self, mass: np.ndarray | None) -> np.ndarray:
        """Per problem of the current bases, whether the plan slots ``mass`` (the masses of the call's plan
        arrays) hold the flows of its basis (``kept`` of :func:`bisimkit.simplex.solve_rows`): all False
        unless ``mass`` is the array the last call wrote them into. The call updates the flags; ``mass`` None
        (slots that do not outlive the call) clears them for good."""
        assert self._bases is not None  # bases() first
        if self._kept is None or mass is None or mass is not self._kept_in:
            self._kept = np.zeros(len(self._bases[1]), dtype=bool)
        self._kept_in = mass
        return self._kept


def slot_offsets(X, src: np.ndarray, Y, dst: np.ndarray) -> np.ndarray:
    """Offsets of the plan slots of the problems ``(X[src[k]], Y[dst[k]])``: ``a + b - 1`` for supports of
    a and b atoms (none for an empty side)."""
    slots = np.maximum(np.diff(X.indptr)[src] + np.diff(Y.indptr)[dst] - 1, 0)
    return np.concatenate([[0], np.cumsum(slots)]).astype(np.int64)


def optimal_transport(
    X: sp.csr_matrix,
    src: np.ndarray,
    Y: sp.csr_matrix,
    dst: np.ndarray,
    d: np.ndarray,
    p: int = 1,
    plans: bool = False,
    zero_diagonal: bool = True,
    warm: WarmStarts | None = None,
    buffers: list | None = None,
    gaps: np.ndarray | None = None,
    marginal: np.ndarray | None = None,
) -> tuple[np.ndarray, Cells | None]:
    """Optimal ``W_p`` values (and plans) for the pairs ``(X[src[k]], Y[dst[k]])``.

    Parameters
    ----------
    X, Y : sparse row-stochastic matrices (rows are histograms over n states).
    src, dst : row indices, one pair per problem.
    d : n x n ground distance (non-negative).
    p : 1 or 2; the cost is ``sum g * d**p`` and the value its p-th root.
    plans : also return an optimal plan per problem as :class:`Cells` (cells of
        zero mass may appear; they carry nothing).
    zero_diagonal : ``d`` has a zero diagonal, so identical histograms cost 0.
    warm : bases kept from the previous call on the *same* problems (same
        histograms, other costs), to warm-start the simplex; updated in place.
    buffers : a list that keeps the plan arrays between calls on the same problems
        (reused instead of allocated; the previous call's plans are overwritten).
    gaps : an array of one entry per problem, filled with a bound on ``|value - W_p|``
        (for p = 2 from the bound g on the squared cost A: ``min(sqrt(g), g / sqrt(A))``).
    marginal : per problem, a bound on how far its two histograms are from the exact laws, in total
        variation (summed over both sides); ``gaps`` then bound the distance to the transport cost
        between the exact laws: moving mass ``TV`` changes an optimal cost by at most ``TV`` times the
        largest cost the two supports meet (``docs/operators.md#the-certificate``, lemma L2).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    C = np.asarray(d if p == 1 else d**p, dtype=np.float64)
    N = len(src)
    values = np.zeros(N)
    gap = np.zeros(N)
    state = np.zeros(N, dtype=np.int8)
    if warm is not None:
        off = warm.layout(X, src, Y, dst)
        basis, valid = warm.bases(off)
    else:
        off = slot_offsets(X, src, Y, dst)
        basis, valid = np.zeros((int(off[-1]), 2), dtype=BASIS_DTYPE), np.zeros(N, dtype=bool)
    X, Y = _sorted(X), _sorted(Y)
    total = int(off[-1])
    if plans:
        if buffers and len(buffers[0][2]) == total:
            out = buffers[0]  # every slot is written again (a method's unused ones with mass 0)
        else:
            out = _slots(total)
            if buffers is not None:
                buffers[:] = [out]
        kept = warm.kept(out[2] if buffers is not None else None) if warm is not None else np.zeros(N, dtype=bool)
        _solve(C, X, src, Y, dst, zero_diagonal, off, basis, valid, kept, values, gap, state, out)
    else:  # the plans are not kept: a chunk's scratch slots at a time
        kept = warm.kept(None) if warm is not None else np.zeros(N, dtype=bool)
        starts = np.arange(0, N, CHUNK)
        scratch = _slots(int(np.max(off[np.minimum(starts + CHUNK, N)] - off[starts], initial=0)))
        for start in starts:
            stop = min(start + CHUNK, N)
            a, b = off[start], off[stop]
            part = slice(start, stop)
            view = (scratch[0][: b - a], scratch[1][: b - a], scratch[2][: b - a])
            chunk_off = off[start : stop + 1] - a
            _solve(
                C,
                X,
                src[part],
                Y,
                dst[part],
                zero_diagonal,
                chunk_off,
                basis[a:b],
                valid[part],
                kept[part],
                values[part],
                gap[part],
                state[part],
                view,
            )
    if marginal is not None and N:
        marginal_gaps(C, X, src, Y, dst, state, np.asarray(marginal, dtype=np.float64), gap)
    if p != 1:
        cost = np.maximum(values, 0.0)
        values = np.sqrt(cost) if p == 2 else cost ** (1.0 / p)
        # |A^(1/p) - B^(1/p)| <= |A - B|^(1/p), and <= |A - B| / A^(1 - 1/p) (concavity, p >= 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(cost > 0, gap / np.where(cost > 0, cost, 1.0) ** (1.0 - 1.0 / p), np.inf)
        gap = np.minimum(gap ** (1.0 / p), relative)
    if gaps is not None:
        gaps[:] = gap
    if not plans:
        return values, None
    return values, Cells.from_slots(off, *out)


def _slots(total: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``total`` empty plan slots ``(i, j, mass)``."""
    return np.zeros(total, dtype=np.int32), np.zeros(total, dtype=np.int32), np.zeros(total)


def _solve(C, X, src, Y, dst, zero_diagonal, off, basis, valid, kept, values, gap, state, out) -> None:
    """The problems ``(X[src[k]], Y[dst[k]])`` with slot offsets ``off``: the compiled simplex on every one it
    takes (:func:`bisimkit.simplex.solve_rows`), POT on those it leaves (never ``kept``: its flows are
    another method's)."""
    solve_rows(C, X, src, Y, dst, zero_diagonal, KERNEL_MAX, off, basis, valid, kept, values, gap, state, out)
    left = np.nonzero(state == ROW_LEFT)[0]
    for start in range(0, len(left), CHUNK):
        _pot_left(X, src, Y, dst, C, left[start : start + CHUNK], off, basis, valid, values, gap, out)


def _sorted(X):
    """``X`` with sorted indices (the simplex reads each row's atoms in increasing order)."""
    return X if X.has_sorted_indices else X.sorted_indices()


def _pot_left(X, src, Y, dst, C, left, off, basis, valid, values, gap, out) -> None:
    """POT's network simplex on the problems ``left`` (more than :data:`KERNEL_MAX` atoms a side without a
    basis, or stopped at the simplex's pivot cap), their supports gathered for them alone; their plans and
    bases written into the slots of the whole call."""
    sup = _Supports(X, src[left], Y, dst[left])
    local = _slots(int(sup.off[-1]))
    bases = (np.zeros((int(sup.off[-1]), 2), dtype=BASIS_DTYPE), np.zeros(len(left), dtype=bool))
    chunk = _Chunk(sup, C, local)
    _pot(chunk, np.ones(len(left), dtype=bool), bases)
    values[left], gap[left] = chunk.cost, chunk.gap
    at = _slot_index(off, left)
    out[0][at], out[1][at], out[2][at] = local
    basis[at] = bases[0]
    valid[left] = bases[1]


def support_maxima(X, row_max: np.ndarray) -> np.ndarray:
    """Per row of the CSR rows ``X``: the largest ``row_max[i]`` over the atoms i of its support (0 for an
    empty row). With ``row_max`` the row maxima of a symmetric cost matrix, this bounds every cost a
    transport problem or a coupling of that row with any other can meet."""
    out = np.zeros(X.shape[0])
    ptr = np.asarray(X.indptr, dtype=np.int64)
    live = np.flatnonzero(ptr[1:] > ptr[:-1])
    if len(live):
        out[live] = np.maximum.reduceat(row_max[np.asarray(X.indices)], ptr[live])
    return out


def seed_line_starts(
    X: sp.csr_matrix,
    src: np.ndarray,
    Y: sp.csr_matrix,
    dst: np.ndarray,
    h: np.ndarray,
    warm: WarmStarts,
    h_right: np.ndarray | None = None,
) -> None:
    """Give every problem of ``warm`` without a basis the monotone coupling along the key ``h`` of the
    states (``h_right`` for the states of Y's rows when they are another MDP's;
    :func:`bisimkit.simplex.line_bases`): optimal when the ground cost is ``|h_i - h_j|``."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    offset = 0
    if h_right is not None:  # one key array: Y's states after X's
        offset = len(h)
        h = np.concatenate([h, h_right])
    off = warm.layout(X, src, Y, dst)
    basis, valid = warm.bases(off)
    for start in range(0, len(src), CHUNK):
        stop = min(start + CHUNK, len(src))
        ip, mp, lp = padded_rows(X, src[start:stop])
        iq, mq, lq = padded_rows(Y, dst[start:stop])
        line_bases(ip, mp, lp, iq + offset, mq, lq, h, basis[off[start] : off[stop]], valid[start:stop])


class _Supports:
    """The problems left to POT as it reads them: both sides' supports as padded arrays
    (:func:`~bisimkit.couplings.padded_rows`: ``ip, mp, lp`` and ``iq, mq, lq``) and their slots' offsets."""

    def __init__(self, X, src: np.ndarray, Y, dst: np.ndarray) -> None:
        self.ip, self.mp, self.lp = padded_rows(X, np.asarray(src, dtype=np.int64))
        self.iq, self.mq, self.lq = padded_rows(Y, np.asarray(dst, dtype=np.int64))
        self.off = basis_offsets(self.lp, self.lq)


class _Chunk:
    """Padded supports of a chunk of problems, their costs, and the plan slots to fill."""

    def __init__(self, sup: _Supports, C, out) -> None:
        self.ip, self.mp, self.lp, self.iq, self.mq, self.lq = sup.ip, sup.mp, sup.lp, sup.iq, sup.mq, sup.lq
        self.C, self.out, self.off = C, out, sup.off
        self.cost = np.zeros(len(sup.lp))
        self.gap = np.zeros(len(sup.lp))

    def write(self, k, pos, i, j, mass) -> None:
        """Put plan cells of problems ``k`` at positions ``pos`` of their slots."""
        if self.out is not None and len(k):
            at = self.off[k] + pos
            self.out[0][at], self.out[1][at], self.out[2][at] = i, j, mass


def _pot(ch: _Chunk, todo: np.ndarray, bases, block: int = 2_000_000) -> None:
    """POT's network simplex on the problems left; their plans seed later warm starts
    (converted to bases in batches of about ``block`` plan entries, to bound memory)."""
    big = np.nonzero(todo)[0]
    keep = bases is not None
    pending: list[int | np.integer] = []
    plans: list[tuple[np.ndarray, np.ndarray]] = []
    size = 0
    for x, k in enumerate(big):
        a, b = ch.mp[k, : ch.lp[k]], ch.mq[k, : ch.lq[k]]
        xs, ys = ch.ip[k, : ch.lp[k]], ch.iq[k, : ch.lq[k]]
        M = ch.C[np.ix_(xs, ys)]
        G, log = load_pot().emd(a, b, M, numItermax=10_000_000, log=True)
        G[G < FLOW_EPS] = 0.0
        ch.cost[k] = float(np.sum(G * M))
        ch.gap[k] = plan_gap(a, b, M, G, log["u"], log["v"], ch.cost[k])
        r, s = np.nonzero(G)
        if len(r) > ch.lp[k] + ch.lq[k] - 1:  # pragma: no cover - POT returns basic solutions
            raise RuntimeError("POT returned a non-basic plan")
        ch.write(np.full(len(r), k), np.arange(len(r)), xs[r], ys[s], G[r, s])
        if keep:
            pending.append(k)
            plans.append((G, M))
            size += G.size
            if size >= block or x == len(big) - 1:
                _record_plans(bases, ch.off, np.array(pending), ch.lp, ch.lq, plans)
                pending, plans, size = [], [], 0


def plan_gap(
    a: np.ndarray, b: np.ndarray, M: np.ndarray, G: np.ndarray, u: np.ndarray, v: np.ndarray, cost: float
) -> float:
    """A bound on ``|cost - OT(a, b; M)|`` for the plan ``G`` with dual potentials ``u, v``
    (the bound of :func:`bisimkit.simplex._plan_gap`: weak duality after shifting ``u`` by the
    largest violation of ``u_i + v_j <= M_ij``, and the plan's marginal drift times ``max M``)."""
    violation = max(0.0, float(np.max(u[:, None] + v[None, :] - M)))
    dual = float(a @ (u - violation) + b @ v)
    drift = float(np.abs(a - G.sum(axis=1)).sum() + np.abs(b - G.sum(axis=0)).sum())
    size = abs(cost) + float(np.abs(a * u).sum() + np.abs(b * v).sum() + a.sum() * violation)
    terms = (len(a) + len(b) + 2) * np.finfo(np.float64).eps
    floor, mass = float(np.min(M)), float(a.sum())
    below = min(cost - dual + terms * size, cost - floor * mass + terms * (abs(cost) + abs(floor) * mass))
    above = float(np.max(np.abs(M), initial=0.0)) * drift + terms * abs(cost)
    return max(below, above, 0.0)


def _slot_index(off: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions of the slots of problems ``rows`` (of the slot offsets ``off``), concatenated in order."""
    sizes = off[rows + 1] - off[rows]
    local = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.repeat(off[rows] - local, sizes) + np.arange(int(sizes.sum()))


def _record_plans(bases, off, rows, lp, lq, plans) -> None:
    """Store bases derived from POT's basic plans of problems ``rows``, for warm starts."""
    K, L = int(lp[rows].max()), int(lq[rows].max())
    F = np.zeros((len(rows), K, L))
    M = np.zeros((len(rows), K, L))
    for x, (G, cost) in enumerate(plans):
        F[x, : G.shape[0], : G.shape[1]] = G
        M[x, : G.shape[0], : G.shape[1]] = cost
    basis, ok = bases_from_flows(F, M, lp[rows], lq[rows])
    bases[0][_slot_index(off, rows)] = basis
    bases[1][rows] = ok


def plan_costs(plans: Cells, d: np.ndarray, n_problems: int) -> np.ndarray:
    """``sum_cells mass * d[i, j]`` per problem: the cost of fixed plans under ``d``."""
    return np.bincount(plans.problem, weights=plans.mass * d[plans.i, plans.j], minlength=n_problems)
