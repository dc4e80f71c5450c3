"""Optimal transport between many pairs of histograms at once.

``optimal_transport`` returns ``W_p(X[src[k]], Y[dst[k]]; d)`` for every k, and
optionally an optimal plan for each. Problems are sorted by shape and each
kind is solved by the cheapest exact method:

* identical histograms under a ground cost with zero diagonal: cost 0, the
  identity plan;
* one side a single atom: the only coupling, a weighted sum;
* two atoms against two atoms: the cost is linear in one free cell, so the
  optimum is at an end of its interval (closed form, vectorised);
* everything else: POT's exact network simplex on the supports only.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .couplings import Cells, load_pot, padded_rows
from .simplex import FLOW_EPS, HAVE_NUMBA, solve_padded

#: Problems per batch; bounds the memory of the padded support arrays.
CHUNK = 100_000
#: Problems with at most this many atoms per side go to the compiled simplex.
KERNEL_MAX = 20
#: Entries of the padded cost blocks handed to the compiled simplex at once.
KERNEL_BLOCK = 4_000_000


def optimal_transport(X: sp.csr_matrix, src: np.ndarray, Y: sp.csr_matrix, dst: np.ndarray,
                      d: np.ndarray, p: int = 1, plans: bool = False,
                      zero_diagonal: bool = True) -> tuple[np.ndarray, Cells | None]:
    """Optimal ``W_p`` values (and plans) for the pairs ``(X[src[k]], Y[dst[k]])``.

    Parameters
    ----------
    X, Y : sparse row-stochastic matrices (rows are histograms over n states).
    src, dst : row indices, one pair per problem.
    d : n x n ground distance (non-negative).
    p : 1 or 2; the cost is ``sum g * d**p`` and the value its p-th root.
    plans : also return an optimal plan per problem as :class:`Cells`.
    zero_diagonal : ``d`` has a zero diagonal, so identical histograms cost 0.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    cost_matrix = d if p == 1 else d ** p
    values = np.zeros(len(src))
    parts: list[Cells] = []
    for start in range(0, len(src), CHUNK):
        stop = min(start + CHUNK, len(src))
        v, cells = _transport_chunk(X, src[start:stop], Y, dst[start:stop], cost_matrix, plans, zero_diagonal)
        values[start:stop] = v
        if plans:
            parts.append(Cells(cells.problem + start, cells.i, cells.j, cells.mass))
    if p != 1:
        values = np.sqrt(np.maximum(values, 0.0)) if p == 2 else np.maximum(values, 0.0) ** (1.0 / p)
    return values, (Cells.concat(parts) if plans else None)


def _transport_chunk(X, src, Y, dst, C, want_plans, zero_diagonal):
    ip, mp, lp = padded_rows(X, src)
    iq, mq, lq = padded_rows(Y, dst)
    N = len(src)
    cost = np.zeros(N)
    todo = np.ones(N, dtype=bool)
    parts: list[Cells] = []

    if zero_diagonal:
        w = min(ip.shape[1], iq.shape[1])  # equal lengths <= both widths
        same = (lp == lq) & np.all(ip[:, :w] == iq[:, :w], axis=1) & np.all(mp[:, :w] == mq[:, :w], axis=1)
        todo &= ~same
        if want_plans:
            k, a = np.nonzero(same[:, None] & (mp > 0))
            parts.append(Cells(k, ip[k, a], ip[k, a], mp[k, a]))

    # One side is a single atom: the product coupling is the only one.
    single_p = todo & (lp == 1)
    k, b = np.nonzero(single_p[:, None] & (mq > 0))
    cost += np.bincount(k, weights=mq[k, b] * C[ip[k, 0], iq[k, b]], minlength=N)
    if want_plans:
        parts.append(Cells(k, ip[k, 0], iq[k, b], mq[k, b]))
    single_q = todo & (lp > 1) & (lq == 1)
    k, a = np.nonzero(single_q[:, None] & (mp > 0))
    cost += np.bincount(k, weights=mp[k, a] * C[ip[k, a], iq[k, 0]], minlength=N)
    if want_plans:
        parts.append(Cells(k, ip[k, a], iq[k, 0], mp[k, a]))
    todo &= ~(single_p | single_q)

    # Two atoms against two: g11 = t, g12 = p1 - t, g21 = q1 - t, g22 = p2 - q1 + t.
    two = np.nonzero(todo & (lp == 2) & (lq == 2))[0]
    if len(two):
        x1, x2, y1, y2 = ip[two, 0], ip[two, 1], iq[two, 0], iq[two, 1]
        p1, p2, q1 = mp[two, 0], mp[two, 1], mq[two, 0]
        c11, c12, c21, c22 = C[x1, y1], C[x1, y2], C[x2, y1], C[x2, y2]
        slope = c11 - c12 - c21 + c22
        t = np.where(slope >= 0, np.maximum(0.0, q1 - p2), np.minimum(p1, q1))
        g = np.stack([t, p1 - t, q1 - t, p2 - q1 + t], axis=1)
        g[g < FLOW_EPS] = 0.0
        cost[two] = g[:, 0] * c11 + g[:, 1] * c12 + g[:, 2] * c21 + g[:, 3] * c22
        if want_plans:
            rows = np.repeat(two, 4)
            ii = np.stack([x1, x1, x2, x2], axis=1).ravel()
            jj = np.stack([y1, y2, y1, y2], axis=1).ravel()
            keep = g.ravel() > 0
            parts.append(Cells(rows[keep], ii[keep], jj[keep], g.ravel()[keep]))
        todo[two] = False

    general = np.nonzero(todo)[0]
    small = general[(lp[general] <= KERNEL_MAX) & (lq[general] <= KERNEL_MAX)] if HAVE_NUMBA else general[:0]
    if len(small):
        failed = _kernel_solve(small, ip, mp, lp, iq, mq, lq, C, cost, parts, want_plans)
        todo[small] = False
        todo[failed] = True
    for k in np.nonzero(todo)[0]:  # large problems: POT's network simplex
        a, b = mp[k, :lp[k]], mq[k, :lq[k]]
        xs, ys = ip[k, :lp[k]], iq[k, :lq[k]]
        M = C[np.ix_(xs, ys)]
        G = load_pot().emd(a, b, M, numItermax=10_000_000)
        G[G < FLOW_EPS] = 0.0
        cost[k] = float(np.sum(G * M))
        if want_plans:
            r, s = np.nonzero(G)
            parts.append(Cells(np.full(len(r), k), xs[r], ys[s], G[r, s]))

    return cost, (Cells.concat(parts) if want_plans else None)


def _kernel_solve(rows, ip, mp, lp, iq, mq, lq, C, cost, parts, want_plans) -> np.ndarray:
    """Solve problems ``rows`` with the compiled simplex; returns the rows it could not finish."""
    K = int(lp[rows].max())
    L = int(lq[rows].max())
    step = max(1, KERNEL_BLOCK // (K * L))
    failed = []
    for start in range(0, len(rows), step):
        r = rows[start:start + step]
        xs, ys = ip[r, :K], iq[r, :L]
        block = C[xs[:, :, None], ys[:, None, :]]
        values, flows, ok = solve_padded(mp[r, :K], mq[r, :L], block, lp[r], lq[r])
        cost[r] = values
        failed.append(r[~ok])
        if want_plans:
            p, i, j = np.nonzero((flows > 0) & ok[:, None, None])
            parts.append(Cells(r[p], xs[p, i], ys[p, j], flows[p, i, j]))
    return np.concatenate(failed)


def plan_costs(plans: Cells, d: np.ndarray, n_problems: int) -> np.ndarray:
    """``sum_cells mass * d[i, j]`` per problem: the cost of fixed plans under ``d``."""
    return np.bincount(plans.problem, weights=plans.mass * d[plans.i, plans.j], minlength=n_problems)
