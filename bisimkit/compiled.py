"""Compiled (numba) kernels behind the pair solvers: sparse assembly and products.

* :func:`pair_system_from_slots`: the matrix of fixed couplings from plans
  stored in per-problem slots (coupling iteration);
* :func:`eps_bar_matrix`: the eps-bar operator's constant and matrix, built pair
  by pair with the entangled (north-west-corner) couplings computed on the fly:
  no intermediate cell arrays, so n = 2000 fits in a few GiB;
* :func:`matvec`: a multi-threaded CSR product for the Krylov solves.

The transportation simplex lives in :mod:`bisimkit.simplex`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .simplex import HAVE_NUMBA

MIN_CELL_MASS = 1e-15  # the same threshold as bisimkit.couplings

if HAVE_NUMBA:
    from numba import njit, prange

    @njit(cache=True)
    def _count_slots(off, ci, cj, mass, row_pair, index, counts):
        for p in range(len(off) - 1):
            r = row_pair[p]
            for e in range(off[p], off[p + 1]):
                if mass[e] > 0 and index[ci[e], cj[e]] >= 0:
                    counts[r] += 1

    @njit(cache=True)
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

    @njit(cache=True, nogil=True)
    def _nw(ia, ma, ib, mb, out_i, out_j, out_m):
        """North-west corner of two histograms (atoms ia/ib in increasing order,
        masses ma/mb): cells into out_*, returns their number. Breakpoints are the
        cumulative sums, the last forced to 1, as in bisimkit.couplings."""
        la = len(ma)
        lb = len(mb)
        ta = 0.0
        tb = 0.0
        for x in range(la):
            ta += ma[x]
        for x in range(lb):
            tb += mb[x]
        a = 0
        b = 0
        run_a = ma[0]
        run_b = mb[0]
        ca = 1.0 if la == 1 else min(run_a / ta, 1.0)
        cb = 1.0 if lb == 1 else min(run_b / tb, 1.0)
        prev = 0.0
        n = 0
        while a < la and b < lb:
            nxt = ca if ca < cb else cb
            if nxt - prev > MIN_CELL_MASS:
                out_i[n] = ia[a]
                out_j[n] = ib[b]
                out_m[n] = nxt - prev
                n += 1
            if nxt > prev:
                prev = nxt
            if ca <= nxt:
                a += 1
                if a < la:
                    run_a += ma[a]
                    ca = 1.0 if a == la - 1 else min(run_a / ta, 1.0)
            if cb <= nxt:
                b += 1
                if b < lb:
                    run_b += mb[b]
                    cb = 1.0 if b == lb - 1 else min(run_b / tb, 1.0)
        return n

    @njit(cache=True, nogil=True)
    def _ground(mode, R, abar, G, m, s, a, t, b):
        if mode == 0:
            return abs(R[s, a] - R[t, b])
        if mode == 1:
            total = 0.0
            for x in range(abar.shape[1]):
                total += abs(abar[s, x] - abar[t, x])
            return total
        return G[s * m + a, t * m + b]

    @njit(cache=True, parallel=True)
    def _eps_bar_pass(S, T, index, pi, P_ptr, P_idx, P_val, mode, R, abar, G, fill, counts, b,
                      indptr, indices, data):
        """One pass over the pairs: counts (fill=False) or entries (fill=True)."""
        n_states, m = pi.shape
        actions = np.arange(m)
        for p in prange(len(S)):
            s = S[p]
            t = T[p]
            ai = np.empty(2 * m, dtype=np.int64)
            aj = np.empty(2 * m, dtype=np.int64)
            am = np.empty(2 * m)
            na = _nw(actions, pi[s], actions, pi[t], ai, aj, am)
            width = 0
            for x in range(na):
                la = P_ptr[s * m + ai[x] + 1] - P_ptr[s * m + ai[x]]
                lb = P_ptr[t * m + aj[x] + 1] - P_ptr[t * m + aj[x]]
                width = max(width, la + lb)
            si = np.empty(width, dtype=np.int64)
            sj = np.empty(width, dtype=np.int64)
            sm = np.empty(width)
            const = 0.0
            count = 0
            pos = indptr[p] if fill else 0
            for x in range(na):
                ra = s * m + ai[x]
                rb = t * m + aj[x]
                w = am[x]
                const += w * _ground(mode, R, abar, G, m, s, ai[x], t, aj[x])
                ns = _nw(P_idx[P_ptr[ra]:P_ptr[ra + 1]], P_val[P_ptr[ra]:P_ptr[ra + 1]],
                         P_idx[P_ptr[rb]:P_ptr[rb + 1]], P_val[P_ptr[rb]:P_ptr[rb + 1]], si, sj, sm)
                for y in range(ns):
                    col = index[si[y], sj[y]]
                    if col >= 0:
                        if fill:
                            indices[pos] = col
                            data[pos] = w * sm[y]
                            pos += 1
                        else:
                            count += 1
            b[p] = const
            if not fill:
                counts[p] = count

    @njit(cache=True, parallel=True)
    def _csr_matvec(indptr, indices, data, x, out):
        for r in prange(len(indptr) - 1):
            acc = 0.0  # float64 accumulation, also for float32 data
            for e in range(indptr[r], indptr[r + 1]):
                acc += data[e] * x[indices[e]]
            out[r] = acc


def pair_system_from_slots(offsets, ci, cj, mass, row_pair, row_weight, index, n: int) -> sp.csr_matrix:
    """``T[row_pair[p], index[i, j]] += row_weight[p] * mass`` over the cells of every
    problem p (cells at ``offsets[p]:offsets[p + 1]``), skipping empty cells and
    cells with ``index < 0``. Duplicates are kept (the product adds them)."""
    counts = np.zeros(n, dtype=np.int64)
    _count_slots(offsets, ci, cj, mass, row_pair, index, counts)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]))
    _fill_slots(offsets, ci, cj, mass, row_pair, row_weight, index, indptr, indices, data)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def eps_bar_matrix(S, T, index, pi, P: sp.csr_matrix, ground, R, abar, n_pairs: int):
    """``(b, T)`` of eps-bar over the pairs ``(S[p], T[p])`` (1-D entangled couplings).

    ``ground`` is ``"reward"``, ``"policy"`` or an (n*m) x (n*m) matrix.
    """
    P = P.tocsr()
    P.sort_indices()
    mode = 0 if isinstance(ground, str) and ground == "reward" else 1 if isinstance(ground, str) else 2
    G = np.zeros((1, 1)) if mode < 2 else np.ascontiguousarray(ground, dtype=np.float64)
    abar = np.zeros((1, 1)) if abar is None else np.ascontiguousarray(abar)
    args = (np.ascontiguousarray(S, dtype=np.int64), np.ascontiguousarray(T, dtype=np.int64),
            np.ascontiguousarray(index), np.ascontiguousarray(pi), P.indptr.astype(np.int64),
            P.indices.astype(np.int64), P.data, mode, np.ascontiguousarray(R), abar, G)
    counts = np.zeros(len(S), dtype=np.int64)
    b = np.zeros(len(S))
    dummy_i = np.zeros(1, dtype=np.int32)
    _eps_bar_pass(*args, False, counts, b, np.zeros(1, dtype=np.int64), dummy_i, np.zeros(1))
    indptr = np.zeros(len(S) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]))
    _eps_bar_pass(*args, True, counts, b, indptr, indices, data)
    return b, sp.csr_matrix((data, indices, indptr), shape=(len(S), n_pairs))


def matvec(T: sp.csr_matrix, dtype=np.float64):
    """``x -> T @ x``, multi-threaded when numba is available; with ``dtype=float32``
    a half-size copy of T serves inner solves of mixed-precision refinement."""
    if not HAVE_NUMBA:
        T32 = T.astype(dtype)
        return lambda x: T32 @ x
    indptr, indices, data = T.indptr, T.indices, T.data.astype(dtype, copy=False)

    def product(x):
        out = np.empty(T.shape[0], dtype=dtype)
        _csr_matvec(indptr, indices, data, np.ascontiguousarray(x, dtype=dtype), out)
        return out

    return product
