r"""Distances of queried state pairs, computed on the fly: only the pairs a query depends on.

For the operators with one W1 transport problem per pair between the policy's next-state laws (pi, psm,
eps-avg: :attr:`bisimkit.operators.Operator.queries`),

.. math::

    F(d)(s, t) = g(s, t) + c\, W_1\big(P_\pi(s), P_\pi(t); d\big),

every coupling of ``P_pi(s)`` and ``P_pi(t)`` lives on ``supp P_pi(s) x supp P_pi(t)``, so ``F(d)(s, t)``
reads ``d`` only on those successor pairs. The set of pairs reachable from the queried ones through
successor pairs (stopping at the diagonal, where ``d = 0``) is closed: the fixed point restricted to it
is the fixed point of ``F`` restricted to it, a c-contraction in the sup norm over those pairs alone
(Bacci, Bacci, Larsen and Mardare, "On-the-fly exact computation of bisimilarity distances", TACAS 2013).

On that closure the solve is the engine's coupling iteration (:mod:`bisimkit.engine`): fix a coupling per
pair, solve ``x = g + c T x`` (block back-substitution over the strongly connected components of the
coupling graph, :func:`bisimkit.lmc.coupling_value`), re-optimise every coupling under ``x`` with the compiled
network simplex (:func:`bisimkit.simplex.solve_padded`), until the certificate reaches ``tol``. The
certificate is the engine's: with ``y`` the computed ``F(x)`` and ``e`` a bound on ``|y - F(x)|`` per pair
(the operator's own one-step charges from :meth:`~bisimkit.operators.Operator.build`, each transport
value's gap to the optimum, the laws' total variation from the exact ones times the largest cost the two
supports meet, and the rounding of ``g + c w``), ``max |y - d*| <= (c max |y - x| + max e) / (1 - c)``
(``docs/operators.md#the-certificate``).

The closure can be far larger than the queried pairs: two runs started apart wander through the product
of their reachable sets. It is refused in one line, before any transport work, when its pairs and cells
would take more than the memory budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .couplings import load_pot
from .engine import Solution
from .errors import InputError
from .ground import Ground
from .lmc import coupling_value
from .mdp import FiniteMDP
from .pairs import PairSpace, check_state_pairs, successor_closure
from .roundoff import U, gamma
from .simplex import BASIS_DTYPE, basis_offsets, solve_padded
from .transport import plan_gap

#: Bytes the closure may take by default (pairs, their cells, the coupling system).
DEFAULT_QUERY_MEMORY = 4 * 2**30
#: Bytes per pair and per transport cell of the closure, for the refusal before the work starts.
PAIR_BYTES = 160
CELL_BYTES = 64
#: Coupling-iteration rounds before the solve reports what it reached.
MAX_ROUNDS = 100


@dataclass
class QuerySolution(Solution):
    """What ``solve(mdp, metric, pairs=...)`` returns for the operators of :mod:`bisimkit.query`: a
    :class:`~bisimkit.engine.Solution` whose ``distances`` are the ``(q,)`` values of the queried pairs, each
    within ``certified_error`` of the fixed point.

    pairs : the queried ``(q, 2)`` state pairs.
    lower, upper : ``distances -/+ certified_error`` (lower clipped at 0), the bracket of every value.
    explored : how many pairs ``s < t`` the queries reach (the unknowns of the solve).
    """

    pairs: np.ndarray | None = None
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    explored: int = 0

    def to_json(self) -> dict:
        """:meth:`Solution.to_json`'s object with the queried pairs, the bracket and the explored count."""
        out = super().to_json()
        out.update(
            pairs=None if self.pairs is None else self.pairs.tolist(),
            lower=None if self.lower is None else self.lower.tolist(),
            upper=None if self.upper is None else self.upper.tolist(),
            explored=self.explored,
        )
        return out


@dataclass
class _Group:
    """The pairs whose supports have ``ka`` and ``kb`` atoms: their laws ``a`` (G, ka), ``b`` (G, kb), the
    targets ``target`` (G, ka, kb) of their cells in the extended value vector (``N`` the diagonal), the
    largest law error of each side, and the simplex bases of the last solve."""

    pairs: np.ndarray
    a: np.ndarray
    b: np.ndarray
    target: np.ndarray
    law_error: np.ndarray
    basis: np.ndarray | None = None
    warm: np.ndarray | None = None

    @property
    def fixed(self) -> bool:
        """One atom on a side: the product is the only coupling."""
        return self.a.shape[1] == 1 or self.b.shape[1] == 1


def _csr(rows):
    """``(indptr, indices, data)`` as int64, int64, float64 arrays of CSR rows (scipy or DenseRows)."""
    return (
        np.asarray(rows.indptr, dtype=np.int64),
        np.asarray(rows.indices, dtype=np.int64),
        np.asarray(rows.data, dtype=np.float64),
    )


def _groups(space: PairSpace, ptr, cols, probs, law_error: np.ndarray) -> list[_Group]:
    """The cell table of every pair of ``space``, grouped by support shape."""
    N = len(space)
    deg = np.diff(ptr)
    di, dj = deg[space.s], deg[space.t]
    shape = di * (int(deg.max(initial=1)) + 1) + dj
    order = np.argsort(shape, kind="stable")
    bounds = np.flatnonzero(np.diff(shape[order])) + 1
    groups = []
    for pairs in np.split(order, bounds) if N else []:
        ka, kb = int(di[pairs[0]]), int(dj[pairs[0]])
        ia = ptr[space.s[pairs]][:, None] + np.arange(ka)
        ib = ptr[space.t[pairs]][:, None] + np.arange(kb)
        u = np.repeat(cols[ia][:, :, None], kb, axis=2)
        v = np.repeat(cols[ib][:, None, :], ka, axis=1)
        target = space.lookup(u.ravel(), v.ravel(), missing=N).reshape(len(pairs), ka, kb)
        errors = law_error[space.s[pairs]] + law_error[space.t[pairs]]
        groups.append(_Group(pairs, probs[ia], probs[ib], target, errors))
    return groups


def _transport(grp: _Group, ext: np.ndarray, solve: bool):
    """``(cost, plan, gap)`` of the group under the extended values ``ext``: the optimal couplings (or, with
    ``solve`` False, the product couplings of a fixed group only), and per pair a bound on the distance of
    ``cost`` to the optimal transport value between the *exact* laws (the simplex's own gap, the rounding of
    the cost, and the laws' total variation times the largest cost the supports meet)."""
    C = ext[grp.target]
    G, ka, kb = C.shape
    top = C.reshape(G, -1).max(axis=1)
    if grp.fixed:
        plan = grp.a[:, :, None] * grp.b[:, None, :]
        cost = np.einsum("gab,gab->g", plan, C)
        gap = gamma(ka * kb + 2) * cost + 2 * U * top
    else:
        rows = np.full(G, ka, dtype=np.int64)
        columns = np.full(G, kb, dtype=np.int64)
        if grp.basis is None:
            grp.basis = np.zeros((int(basis_offsets(rows, columns)[-1]), 2), dtype=BASIS_DTYPE)
            grp.warm = np.zeros(G, dtype=np.bool_)
        cost, plan, ok, _, grp.basis, gap = solve_padded(grp.a, grp.b, C, rows, columns, grp.basis, grp.warm)
        grp.warm = ok.copy()
        for p in np.flatnonzero(~ok):  # pragma: no cover - the simplex's pivot cap: POT's solver instead
            Gp, log = load_pot().emd(grp.a[p], grp.b[p], C[p], numItermax=10_000_000, log=True)
            plan[p] = Gp
            cost[p] = float(np.sum(Gp * C[p]))
            gap[p] = plan_gap(grp.a[p], grp.b[p], C[p], Gp, log["u"], log["v"], cost[p])
    return cost, plan, gap + grp.law_error * top * (1 + 4 * U)


def _system(groups: list[_Group], plans: list[np.ndarray], N: int, c: float):
    """``c T`` (CSR, N x N) of the couplings ``plans``: pair p's row holds c times the mass its coupling puts
    on each successor pair (the diagonal, where d = 0, left out)."""
    import scipy.sparse as sp  # start-up cost: scipy's sparse modules load when pairs are queried

    rows, cols, vals = [], [], []
    for grp, plan in zip(groups, plans):
        live = (grp.target < N) & (plan > 0)
        rows.append(np.broadcast_to(grp.pairs[:, None, None], grp.target.shape)[live])
        cols.append(grp.target[live])
        vals.append(c * plan[live])
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    T = sp.csr_matrix(
        (np.concatenate(vals) if vals else np.zeros(0), (r, np.concatenate(cols) if cols else r)), shape=(N, N)
    )
    T.sum_duplicates()
    return T


def query_solution(
    mdp: FiniteMDP,
    op,
    ground: Ground | None,
    pairs,
    tol: float,
    max_memory: int | None = None,
    progress=None,
) -> QuerySolution:
    """The distances of the queried ``pairs`` under the operator ``op`` (module doc), certified to ``tol``.

    Parameters
    ----------
    mdp : the model (sparse or dense; the policy's next-state laws are read as CSR rows).
    op : an :class:`~bisimkit.operators.Operator` with ``op.queries``.
    ground : the operator's ground (eps-avg), as for :func:`bisimkit.solve`.
    pairs : ``(q, 2)`` state indices.
    tol : the certified sup-norm error asked for.
    max_memory : bytes the closure may take (default :data:`DEFAULT_QUERY_MEMORY`).
    progress : called as ``progress(round, certified_error, seconds)`` after every round.
    """
    start = time.perf_counter()
    n = mdp.n_states
    queries = check_state_pairs(pairs, n)
    budget = DEFAULT_QUERY_MEMORY if max_memory is None else int(max_memory)
    ptr, cols, probs = _csr(mdp.transition_pi_rows)
    mean_cells = float(np.mean(np.diff(ptr).astype(np.float64) ** 2)) if n else 1.0
    limit = int(budget / (PAIR_BYTES + CELL_BYTES * mean_cells))
    s, t = successor_closure(ptr, cols, queries[:, 0], queries[:, 1], n, limit)
    if s is None or t is None:
        raise InputError(
            f"the {len(queries)} queried pairs reach more than {limit} state pairs through their successors, "
            f"more than {budget / 2**30:.1f} GiB allow (about {PAIR_BYTES + CELL_BYTES * mean_cells:.0f} bytes "
            f"a pair); query fewer or nearer pairs, or solve every pair",
            param="pairs",
        )
    space = PairSpace.listed(n, s, t)
    N = len(space)
    c = float(mdp.discount)
    form = op.build(mdp, mdp, space, ground, True)
    g = np.asarray(form.row_const, dtype=np.float64)
    g_error = np.zeros(N) if form.row_const_error is None else form.row_const_error
    if form.pair_coupling is not None:
        g_error = g_error + form.pair_coupling * form.pair_ground_max
    law_error = np.asarray(mdp.roundoff.pi_law_error, dtype=np.float64)
    groups = _groups(space, ptr, cols, probs, law_error)

    def evaluate(x: np.ndarray):
        """``(y, e, plans, costs)``: F(x) with its per-pair error bound, the optimal couplings and their costs."""
        ext = np.concatenate([x, [0.0]])
        y = g.copy()
        e = g_error.copy()
        plans, costs = [], []
        for grp in groups:
            cost, plan, gap = _transport(grp, ext, True)
            plans.append(plan)
            costs.append(cost)
            y[grp.pairs] = g[grp.pairs] + c * cost
            e[grp.pairs] += c * gap
        e = (e + gamma(3) * np.abs(y)) * (1 + 4 * U)
        return y, e, plans, costs

    x = np.zeros(N)
    history: list[float] = []
    seconds: list[float] = []
    y, e, plans, _ = evaluate(g.copy())  # first couplings: optimal under the one-step distances
    err = np.inf
    rounds = 0
    converged = False
    while N and rounds < MAX_ROUNDS:
        rounds += 1
        x, _, _, _ = coupling_value(g, _system(groups, plans, N, c))
        y, e, new_plans, new_costs = evaluate(x)
        err = (c * float(np.max(np.abs(y - x), initial=0.0)) + float(np.max(e, initial=0.0))) / (1 - c)
        history.append(err)
        seconds.append(time.perf_counter() - start)
        if progress is not None:
            progress(rounds, err, seconds[-1])
        if err <= tol:
            converged = True
            break
        improved = False
        ext = np.concatenate([x, [0.0]])
        for i, (grp, old, new, cost) in enumerate(zip(groups, plans, new_plans, new_costs)):
            if grp.fixed:
                continue
            current = np.einsum("gab,gab->g", old, ext[grp.target])
            better = cost < current - 16 * new[0].size * U * (current + 1e-300)
            if np.any(better):
                plans[i] = np.where(better[:, None, None], new, old)
                improved = True
        if not improved:
            break  # optimal couplings: what is left is the floor of the evaluation
    if not N:
        err, converged = 0.0, True
    ids = space.lookup(queries[:, 0], queries[:, 1], missing=-1)
    distances = np.where(ids >= 0, y[np.maximum(ids, 0)] if N else 0.0, 0.0)
    floor = float(np.max(e, initial=0.0)) / (1 - c) if N else 0.0
    return QuerySolution(
        metric=op.name,
        distances=distances,
        iterations=rounds,
        certified_error=float(err),
        seconds=time.perf_counter() - start,
        method=f"on-the-fly coupling iteration on the {N} pairs the {len(queries)} queried pairs reach",
        tolerance=tol,
        ground=None if ground is None else str(ground) if isinstance(ground, str) else "matrix",
        converged=converged,
        history=history,
        history_seconds=seconds,
        floor=floor,
        pairs=queries,
        lower=np.maximum(distances - err, 0.0),
        upper=distances + err,
        explored=N,
    )
