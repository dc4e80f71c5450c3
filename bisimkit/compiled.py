"""Compiled kernels behind the pair solvers: sparse assembly and products (:mod:`bisimkit.kernels`).

* :func:`pair_system_from_slots`: the matrix of fixed couplings from plans
  stored in per-problem slots (coupling iteration);
* :func:`eps_bar_matrix`: the eps-bar operator's matrix, built pair by pair with
  the entangled couplings of :func:`bisimkit.couplings.merge_breakpoints`
  computed on the fly: no intermediate cell arrays, so n = 2000 fits in a few GiB;
* :func:`matvec`: a multi-threaded CSR product for the Krylov solves;
* :func:`residual`: the residual ``b + c T x - x`` of a fixed-point system and its largest entry, in one pass;
* :func:`lower_mass`: the mass of a CSR matrix below its diagonal, and its total;
* :func:`scc_gauss_seidel`: Gauss-Seidel sweeps of ``x = rhs + T x`` over a set of pairs (the labelled-chain
  solver's strongly connected components, the engine's mid-size pair systems).

The transportation simplex lives in :mod:`bisimkit.simplex`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .couplings import CSRLaws, merge_breakpoints
from .kernels import kernel, prange, valid_csr

if TYPE_CHECKING:
    import scipy.sparse as sp


@kernel
def _count_slots(off, ci, cj, mass, row_pair, index, counts):
    for p in range(len(off) - 1):
        r = row_pair[p]
        for e in range(off[p], off[p + 1]):
            if mass[e] > 0 and index[ci[e], cj[e]] >= 0:
                counts[r] += 1


@kernel
def _fill_slots(off, ci, cj, mass, row_pair, row_weight, index, indptr, indices, data):
    fill = indptr[:-1].copy()
    for p in range(len(off) - 1):
        r = row_pair[p]
        w = row_weight[p]
        for e in range(off[p], off[p + 1]):
            col = index[ci[e], cj[e]]
            if mass[e] > 0 and col >= 0:
                indices[fill[r]] = col
                data[fill[r]] = w * mass[e]
                fill[r] += 1


@kernel
def _fill_in_order(off, ci, cj, mass, row_pair, row_weight, index, indptr, indices, data):
    """:func:`_count_slots` and :func:`_fill_slots` in one pass, for problems whose rows never decrease (a pair
    system's rows, in pair order): each row's entries follow the last row's, and ``indptr[r + 1]`` is where row
    r ends (the same arrays the two passes write). ``indices`` and ``data`` have room for every slot. Returns
    the entries written, or -1 at the first problem whose row is below the one before (nothing else then
    holds)."""
    at = 0
    row = 0
    indptr[0] = 0
    for p in range(len(off) - 1):
        r = row_pair[p]
        if r < row:
            return -1
        while row < r:
            row += 1
            indptr[row] = at
        w = row_weight[p]
        for e in range(off[p], off[p + 1]):
            col = index[ci[e], cj[e]]
            if mass[e] > 0 and col >= 0:
                indices[at] = col
                data[at] = w * mass[e]
                at += 1
    while row < len(indptr) - 1:
        row += 1
        indptr[row] = at
    return at


@kernel(parallel=True)
def _eps_bar_pass(
    S, T, index, m, a_ptr, a_idx, a_bp, x_ptr, x_idx, x_bp, mode, counts, indptr, indices, data, vec, out
):
    """One pass over the pairs: counts (mode 0), entries (mode 1) or the product
    ``out = T @ vec`` in float64 without storing T (mode 2)."""
    fill = mode == 1
    for p in prange(len(S)):
        s = S[p]
        t = T[p]
        ai = np.empty(a_ptr[s + 1] - a_ptr[s] + a_ptr[t + 1] - a_ptr[t], dtype=np.int64)
        aj = np.empty_like(ai)
        am = np.empty(len(ai))
        na = merge_breakpoints(
            a_idx[a_ptr[s] : a_ptr[s + 1]],
            a_bp[a_ptr[s] : a_ptr[s + 1]],
            a_idx[a_ptr[t] : a_ptr[t + 1]],
            a_bp[a_ptr[t] : a_ptr[t + 1]],
            ai,
            aj,
            am,
        )
        width = 0
        for x in range(na):
            ra = s * m + ai[x]
            rb = t * m + aj[x]
            width = max(width, x_ptr[ra + 1] - x_ptr[ra] + x_ptr[rb + 1] - x_ptr[rb])
        si = np.empty(width, dtype=np.int64)
        sj = np.empty(width, dtype=np.int64)
        sm = np.empty(width)
        count = 0
        acc = 0.0
        pos = indptr[p] if fill else 0
        for x in range(na):
            ra = s * m + ai[x]
            rb = t * m + aj[x]
            w = am[x]
            ns = merge_breakpoints(
                x_idx[x_ptr[ra] : x_ptr[ra + 1]],
                x_bp[x_ptr[ra] : x_ptr[ra + 1]],
                x_idx[x_ptr[rb] : x_ptr[rb + 1]],
                x_bp[x_ptr[rb] : x_ptr[rb + 1]],
                si,
                sj,
                sm,
            )
            for y in range(ns):
                col = index[si[y], sj[y]]
                if col >= 0:
                    if mode == 2:
                        acc += w * sm[y] * vec[col]
                    elif fill:
                        indices[pos] = col
                        data[pos] = w * sm[y]
                        pos += 1
                    else:
                        count += 1
        if mode == 0:
            counts[p] = count
        elif mode == 2:
            out[p] = acc


@kernel(parallel=True)
def _csr_matvec(indptr, indices, data, x, out):
    for r in prange(len(indptr) - 1):
        acc = np.float64(0.0)  # float64 accumulation, also for float32 data (a float would sum them in float32)
        for e in range(indptr[r], indptr[r + 1]):
            acc += data[e] * x[indices[e]]
        out[r] = acc


@kernel
def _csr_matvec_serial(indptr, indices, data, x, out):
    for r in range(len(indptr) - 1):
        acc = np.float64(0.0)
        for e in range(indptr[r], indptr[r + 1]):
            acc += data[e] * x[indices[e]]
        out[r] = acc


@kernel
def _csr_residual(indptr, indices, data, b, c, x, out):
    """``out = b + c (T x) - x`` for the float64 CSR matrix T (indptr, indices, data), each row's product
    summed in stored order from 0 (as :func:`_csr_matvec_serial`); returns the largest ``|out|`` (NaN if
    any entry is NaN, as ``np.max`` says)."""
    largest = 0.0
    for r in range(len(indptr) - 1):
        acc = 0.0
        for e in range(indptr[r], indptr[r + 1]):
            acc += data[e] * x[indices[e]]
        value = b[r] + c * acc - x[r]
        out[r] = value
        size = abs(value)
        if size > largest or size != size:  # a NaN stays: nothing compares greater than it
            largest = size
    return largest


@kernel
def lower_mass(indptr, indices, data):
    """``(sum of T[p, q] over q < p, sum of all T[p, q])`` of a CSR matrix T: the mass a last-to-first
    Gauss-Seidel sweep reads before it updates it (:func:`bisimkit.engine._stale_share`), in one pass."""
    stale = 0.0
    total = 0.0
    for r in range(len(indptr) - 1):
        for e in range(indptr[r], indptr[r + 1]):
            total += data[e]
            if indices[e] < r:
                stale += data[e]
    return stale, total


#: Products with at least this many nonzeros use every core; smaller ones one thread (waking the
#: thread pool costs more than they take, milliseconds when another process holds the other core).
MATVEC_PARALLEL_MIN_NNZ = 1_000_000


#: Plan slots up to which :func:`pair_system_from_slots` writes a system in one pass, into arrays with room for
#: every slot (a few of them, the empty and diagonal cells, stay unused).
IN_ORDER_SLOTS = 1_000_000


def pair_system_from_slots(offsets, ci, cj, mass, row_pair, row_weight, index, n: int) -> sp.csr_matrix:
    """``T[row_pair[p], index[i, j]] += row_weight[p] * mass`` over the cells of every
    problem p (cells at ``offsets[p]:offsets[p + 1]``), skipping empty cells and
    cells with ``index < 0``. Duplicates are kept (the product adds them). Up to :data:`IN_ORDER_SLOTS` slots,
    with rows that never decrease, in one pass (:func:`_fill_in_order`), else counted first."""
    slots = len(mass)
    if slots <= IN_ORDER_SLOTS:
        indptr32 = np.empty(n + 1, dtype=np.int32)
        indices32 = np.empty(slots, dtype=np.int32)
        values = np.empty(slots)
        nnz = _fill_in_order(offsets, ci, cj, mass, row_pair, row_weight, index, indptr32, indices32, values)
        if nnz >= 0:
            return valid_csr(values[:nnz], indices32[:nnz], indptr32, (n, n))
    counts = np.zeros(n, dtype=np.int64)
    _count_slots(offsets, ci, cj, mass, row_pair, index, counts)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]))
    _fill_slots(offsets, ci, cj, mass, row_pair, row_weight, index, indptr, indices, data)
    if indptr[-1] < 2**31:  # scipy's own index type for both arrays
        indptr = indptr.astype(np.int32)
        return valid_csr(data, indices, indptr, (n, n))
    import scipy.sparse as sp  # start-up cost: scipy.sparse is loaded only where a sparse matrix is built

    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def eps_bar_counts(S: np.ndarray, T: np.ndarray, index: np.ndarray, policy, transitions, n_actions: int) -> np.ndarray:
    """Entries per row of the eps-bar matrix of :func:`eps_bar_matrix` (its first pass)."""
    acts, nxt = CSRLaws(policy), CSRLaws(transitions)
    args = (
        np.ascontiguousarray(S, dtype=np.int64),
        np.ascontiguousarray(T, dtype=np.int64),
        np.ascontiguousarray(index),
        n_actions,
        acts.indptr,
        acts.indices,
        acts.breakpoints,
        nxt.indptr,
        nxt.indices,
        nxt.breakpoints,
    )
    counts = np.zeros(len(S), dtype=np.int64)
    none = np.zeros(1)
    _eps_bar_pass(*args, 0, counts, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int32), none, none, none)
    return counts


def eps_bar_matrix(
    S: np.ndarray,
    T: np.ndarray,
    index: np.ndarray,
    policy,
    transitions,
    n_actions: int,
    n_pairs: int,
    dtype=np.float64,
    counts: np.ndarray | None = None,
) -> sp.csr_matrix:
    """The matrix of eps-bar over the pairs ``(S[p], T[p])`` (1-D entangled couplings):
    row p holds ``ge(a, a') * ge_P(s', t')`` at column ``index[s', t']`` for the entangled
    couplings ge of ``policy[S[p]], policy[T[p]]`` and ge_P of the transition rows
    ``S[p] * m + a`` and ``T[p] * m + a'``; columns ``index < 0`` are left out.
    """
    acts, nxt = CSRLaws(policy), CSRLaws(transitions)
    args = (
        np.ascontiguousarray(S, dtype=np.int64),
        np.ascontiguousarray(T, dtype=np.int64),
        np.ascontiguousarray(index),
        n_actions,
        acts.indptr,
        acts.indices,
        acts.breakpoints,
        nxt.indptr,
        nxt.indices,
        nxt.breakpoints,
    )
    if counts is None:
        counts = eps_bar_counts(S, T, index, policy, transitions, n_actions)
    none = np.zeros(1)
    indptr = np.zeros(len(S) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]), dtype=dtype)
    _eps_bar_pass(*args, 1, counts, indptr, indices, data, none, none)
    import scipy.sparse as sp  # start-up cost: scipy.sparse is loaded only where a sparse matrix is built

    return sp.csr_matrix((data, indices, indptr), shape=(len(S), n_pairs))


def eps_bar_product(S: np.ndarray, T: np.ndarray, index: np.ndarray, policy, transitions, n_actions: int):
    """``x -> T @ x`` for the eps-bar matrix of :func:`eps_bar_matrix`, in float64, recomputing the
    couplings on the fly instead of storing T (used for exact residuals when T is kept in float32)."""
    acts, nxt = CSRLaws(policy), CSRLaws(transitions)
    args = (
        np.ascontiguousarray(S, dtype=np.int64),
        np.ascontiguousarray(T, dtype=np.int64),
        np.ascontiguousarray(index),
        n_actions,
        acts.indptr,
        acts.indices,
        acts.breakpoints,
        nxt.indptr,
        nxt.indices,
        nxt.breakpoints,
    )
    dummy = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int32), np.zeros(1))

    def product(x):
        out = np.empty(len(S))
        _eps_bar_pass(*args, 2, *dummy, np.ascontiguousarray(x, dtype=np.float64), out)
        return out

    return product


def matvec(T: sp.csr_matrix, dtype=np.float64):
    """``x -> T @ x``, multi-threaded; with ``dtype=float32`` a half-size copy of T
    serves inner solves of mixed-precision refinement."""
    indptr, indices, data = T.indptr, T.indices, T.data.astype(dtype, copy=False)
    kernel = _csr_matvec if T.nnz >= MATVEC_PARALLEL_MIN_NNZ else _csr_matvec_serial

    def product(x):
        out = np.empty(T.shape[0], dtype=dtype)
        kernel(indptr, indices, data, np.ascontiguousarray(x, dtype=dtype), out)
        return out

    return product


def residual(T: sp.csr_matrix, b: np.ndarray, c: float):
    """``x -> (r, max |r|)`` with ``r = b + c T x - x`` computed in float64 from the exact T, as
    ``b + c * (T @ x) - x`` rounds it: one compiled pass (:func:`_csr_residual`) where a product takes one
    thread, the multi-threaded product (:func:`matvec`) and numpy otherwise."""
    if T.nnz >= MATVEC_PARALLEL_MIN_NNZ or T.dtype != np.float64:
        return product_residual(matvec(T), b, c)
    indptr, indices, data = T.indptr, T.indices, T.data
    rhs = np.ascontiguousarray(b, dtype=np.float64)

    def fused(x):
        out = np.empty(T.shape[0])
        largest = _csr_residual(indptr, indices, data, rhs, float(c), np.ascontiguousarray(x, dtype=np.float64), out)
        return out, float(largest)

    return fused


def product_residual(product, b: np.ndarray, c: float):
    """``x -> (r, max |r|)`` with ``r = b + c product(x) - x`` in numpy, for any exact float64 ``product``."""

    def of(x):
        r = b + c * product(x) - x
        return r, float(np.max(np.abs(r), initial=0.0))

    return of


@kernel
def scc_gauss_seidel(members, indptr, indices, data, rhs, x, local, max_sweeps, target):
    """Gauss-Seidel sweeps of ``x_S = rhs_S + T x`` over one component ``S = members`` (the states outside S
    already solved) until the largest residual is at most ``target`` or ``max_sweeps`` have run.

    Parameters
    ----------
    members : the states of the component.
    indptr, indices, data : ``T`` in CSR form.
    rhs, x : (N, r) right-hand sides and values (x read outside S, written on S; its entries on S are the
        start).
    local : int64 (N,) scratch, -1 outside S on entry and exit (members distinct).
    max_sweeps : the most sweeps; target : the residual at which to stop.

    Returns the sweeps run and the largest change in the last sweep.
    """
    r = rhs.shape[1]
    size = len(members)
    for i in range(size):
        local[members[i]] = i
    # the part of the right-hand side from outside S is fixed
    fixed = np.empty((size, r))
    for i in range(size):
        p = members[i]
        for j in range(r):
            fixed[i, j] = rhs[p, j]
        for e in range(indptr[p], indptr[p + 1]):
            q = indices[e]
            if local[q] < 0:
                for j in range(r):
                    fixed[i, j] += data[e] * x[q, j]
    # each row's divisor 1 - T[p, p] (its diagonal entries summed in their stored order)
    divisor = np.empty(size)
    for i in range(size):
        p = members[i]
        diag = 0.0
        for e in range(indptr[p], indptr[p + 1]):
            if indices[e] == p:
                diag += data[e]
        divisor[i] = 1.0 - diag
    sweeps = 0
    resid = np.inf
    while sweeps < max_sweeps:
        sweeps += 1
        resid = 0.0
        for i in range(size):
            p = members[i]
            for j in range(r):
                acc = fixed[i, j]
                for e in range(indptr[p], indptr[p + 1]):
                    q = indices[e]
                    if q != p and local[q] >= 0:
                        acc += data[e] * x[q, j]
                new = acc / divisor[i]
                change = abs(new - x[p, j])
                if change > resid:
                    resid = change
                x[p, j] = new
        if resid <= target:
            break
    for i in range(size):
        local[members[i]] = -1
    return sweeps, resid
