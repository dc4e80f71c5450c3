r"""Distances of queried state pairs, computed on the fly: only the pairs a query depends on.

For the W1 transport pseudometrics (bisim, pi, psm, eps, eps-avg: :attr:`bisimkit.operators.Operator.queries`),

.. math::

    F(d)(s, t) = \operatorname{reduce}_r \big( g_r(s, t) + c\, W_1(\mu_r, \nu_r; d) \big),

with one row r per pair for pi, psm and eps-avg (``mu = P_pi(s)``, ``nu = P_pi(t)``), one per action for bisim
(``P(s, a)`` against ``P(t, a)``, reduced by the max) and one per cell of the entangled coupling of the two
policies for eps (``P(s, a)`` against ``P(t, a')``, summed with the cell's mass). Every coupling of two laws
lives on the product of their supports, so ``F(d)(s, t)`` reads ``d`` only on successor pairs: ``(u, v)`` with
``u`` one step from ``s`` and ``v`` one step from ``t`` (under the policy, or under any action for bisim; for
eps every action the policy uses, a superset of the cells'). The set of pairs reachable from the queried ones
through successor pairs (stopping at the diagonal, where ``d = 0``) is closed: the fixed point restricted to it
is the fixed point of ``F`` restricted to it, a c-contraction in the sup norm over those pairs alone
(Bacci, Bacci, Larsen and Mardare, "On-the-fly exact computation of bisimilarity distances", TACAS 2013).

On that closure the solve is the engine's coupling iteration (:mod:`bisimkit.engine`): fix a coupling per
row, solve ``x = g + c T x`` (:func:`bisimkit.engine.solve_fixed_point`, to a tolerance tightened with the
certificate, as the engine does; for the max of bisim, inside a policy iteration over the row each pair takes,
:func:`bisimkit.engine.max_row_iteration`), re-optimise every coupling under ``x`` with the compiled
network simplex (:func:`bisimkit.simplex.solve_padded`), until the certificate reaches ``tol``. The
certificate is the engine's: with ``y`` the computed ``F(x)`` and ``e`` a bound on ``|y - F(x)|`` per pair
(the operator's own one-step charges from :meth:`~bisimkit.operators.Operator.build`, each transport
value's gap to the optimum, the laws' total variation from the exact ones times the largest cost the two
supports meet, the rounding of the weighted sums or the max, and for eps the misplaced uniforms of the
action coupling), ``max |y - d*| <= (c max |y - x| + max e) / (1 - c)``
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
from .engine import Solution, max_row_iteration, solve_fixed_point
from .errors import InputError
from .forms import TransportTerms
from .ground import Ground
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
    """The transport rows whose laws have ``ka`` and ``kb`` atoms: the rows ``rows``, their laws ``a`` (G, ka)
    and ``b`` (G, kb), the targets ``target`` (G, ka, kb) of their cells in the extended value vector (``N``
    the diagonal), the law error of each row (both sides), and the simplex bases of the last solve."""

    rows: np.ndarray
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


def _reach_rows(mdp: FiniteMDP, op):
    """Per state, the states its laws can move to under ``op``, as CSR ``(indptr, indices)``: the support of
    ``P_pi(s)`` for the policy-averaged operators; for the others the union of the supports of ``P(s, a)``
    over the actions a pair's rows can read (every action, or those the policy uses). A pair's successor
    pairs lie in the product of its two states' sets, so the closure under these products is closed."""
    if op.rows == "one":
        ptr, cols, _ = _csr(mdp.transition_pi_rows)
        return ptr, cols
    import scipy.sparse as sp  # start-up cost: scipy's sparse modules load when pairs are queried

    n, m = mdp.n_states, mdp.n_actions
    rows = mdp.transition_rows
    ptr, cols, _ = _csr(rows)
    owner = np.repeat(np.arange(n * m), np.diff(ptr))
    keep = np.ones(len(cols), dtype=bool)
    if op.uses_policy:
        keep = mdp.require_policy("the entangled policy coupling").reshape(-1)[owner] > 0
    X = sp.csr_matrix((np.ones(int(keep.sum())), (owner[keep] // m, cols[keep])), shape=(n, n))
    X.sum_duplicates()
    return np.asarray(X.indptr, dtype=np.int64), np.asarray(X.indices, dtype=np.int64)


def _groups(terms: TransportTerms) -> list[_Group]:
    """The cell table of every transport row of ``terms``, grouped by the shape of its two laws."""
    space = terms.pairs
    N = len(space)
    lp, lc, lv = _csr(terms.left)
    rp, rc, rv = _csr(terms.right)
    src, dst = np.asarray(terms.row_src, dtype=np.int64), np.asarray(terms.row_dst, dtype=np.int64)
    di, dj = lp[src + 1] - lp[src], rp[dst + 1] - rp[dst]
    shape = di * (int(max(di.max(initial=1), dj.max(initial=1))) + 1) + dj
    order = np.argsort(shape, kind="stable")
    bounds = np.flatnonzero(np.diff(shape[order])) + 1
    left_error = np.zeros(terms.left.shape[0]) if terms.left_law_error is None else terms.left_law_error
    right_error = np.zeros(terms.right.shape[0]) if terms.right_law_error is None else terms.right_law_error
    groups = []
    for rows in np.split(order, bounds) if len(order) else []:
        ka, kb = int(di[rows[0]]), int(dj[rows[0]])
        ia = lp[src[rows]][:, None] + np.arange(ka)
        ib = rp[dst[rows]][:, None] + np.arange(kb)
        u = np.repeat(lc[ia][:, :, None], kb, axis=2)
        v = np.repeat(rc[ib][:, None, :], ka, axis=1)
        target = space.lookup(u.ravel(), v.ravel(), missing=N).reshape(len(rows), ka, kb)
        outside = (target == N) & (u != v) & (terms.row_weight[rows] > 0)[:, None, None]
        if outside.any():  # pragma: no cover - the closure is closed under every row's laws
            raise RuntimeError("a transport row of the queried pairs reads a pair outside their closure")
        errors = left_error[src[rows]] + right_error[dst[rows]]
        groups.append(_Group(rows, lv[ia], rv[ib], target, errors))
    return groups


def _transport(grp: _Group, ext: np.ndarray, solve: bool):
    """``(cost, plan, gap)`` of the group under the extended values ``ext``: the optimal couplings (or, with
    ``solve`` False, the product couplings of a fixed group only), and per row a bound on the distance of
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


def _system(groups: list[_Group], plans: list[np.ndarray], row_pair: np.ndarray, weight: np.ndarray, N: int):
    """``T`` (CSR, N x N) of the couplings ``plans``: pair p's row holds the mass its rows' couplings,
    weighted by ``weight`` (0 for a row left out), put on each successor pair (the diagonal, where d = 0, left
    out)."""
    import scipy.sparse as sp  # start-up cost: scipy's sparse modules load when pairs are queried

    rows, cols, vals = [], [], []
    for grp, plan in zip(groups, plans):
        w = weight[grp.rows]
        live = (grp.target < N) & (plan > 0) & (w[:, None, None] > 0)
        rows.append(np.broadcast_to(row_pair[grp.rows][:, None, None], grp.target.shape)[live])
        cols.append(grp.target[live])
        vals.append((w[:, None, None] * plan)[live])
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    T = sp.csr_matrix(
        (np.concatenate(vals) if vals else np.zeros(0), (r, np.concatenate(cols) if cols else r)), shape=(N, N)
    )
    T.sum_duplicates()
    return T


def _plan_costs(groups: list[_Group], plans: list[np.ndarray], ext: np.ndarray, n_rows: int) -> np.ndarray:
    """Per transport row, the cost of its fixed coupling under the extended values ``ext``."""
    out = np.zeros(n_rows)
    for grp, plan in zip(groups, plans):
        out[grp.rows] = np.einsum("gab,gab->g", plan, ext[grp.target])
    return out


def _max_player(
    terms: TransportTerms,
    groups: list[_Group],
    plans: list[np.ndarray],
    x: np.ndarray,
    choice: np.ndarray | None,
    tol: float,
) -> tuple[np.ndarray, np.ndarray]:
    """For a max over rows (bisim), the value of the fixed couplings ``plans`` (:func:`bisimkit.engine.
    max_row_iteration`, each step the engine's linear solve of the chosen rows to ``tol``). Returns
    ``(x, choice)``."""
    c, N = terms.discount, len(terms.pairs)
    n_rows = len(terms.row_pair)

    def solve_rows(choice: np.ndarray, x: np.ndarray) -> np.ndarray:
        weight = np.zeros(n_rows)
        weight[choice] = 1.0
        T = _system(groups, plans, terms.row_pair, weight, N)
        return solve_fixed_point(T, terms.row_const[choice], c, x0=x, tol=tol)[0]

    return max_row_iteration(
        terms, x, choice, solve_rows, lambda x: _plan_costs(groups, plans, np.concatenate([x, [0.0]]), n_rows)
    )


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
    ptr, cols = _reach_rows(mdp, op)
    laws = mdp.transition_pi_rows if op.rows == "one" else mdp.transition_rows
    degrees = np.diff(np.asarray(laws.indptr)).astype(np.float64)
    rows_per_pair = {"one": 1, "per-action": mdp.n_actions}.get(op.rows, 2 * mdp.n_actions - 1)
    mean_cells = rows_per_pair * float(np.mean(degrees**2)) if len(degrees) else 1.0
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
    terms = op.build(mdp, mdp, space, ground, True)
    n_rows = len(terms.row_pair)
    const = np.asarray(terms.row_const, dtype=np.float64)
    groups = _groups(terms)

    def evaluate(x: np.ndarray):
        """``(y, e, plans, costs)``: F(x) with its per-pair error bound (the engine's accounting,
        :meth:`bisimkit.forms.TransportTerms.evaluate`), the optimal couplings and their costs per row."""
        ext = np.concatenate([x, [0.0]])
        costs, gaps = np.zeros(n_rows), np.zeros(n_rows)
        plans = []
        for grp in groups:
            cost, plan, gap = _transport(grp, ext, True)
            plans.append(plan)
            costs[grp.rows], gaps[grp.rows] = cost, gap
        y = terms.combine(const + c * costs)
        e = terms.pair_error(c * gaps, y)
        if terms.pair_coupling is not None:
            assert terms.pair_ground_max is not None  # given with pair_coupling
            reach = terms.pair_ground_max
            if terms.left_state_rows is not None:  # the transport part depends on the cell: any closure value
                reach = reach + c * float(np.max(ext))
            e = e + terms.pair_coupling * reach
        return y, e * (1 + 4 * U), plans, costs

    x = np.zeros(N)
    history: list[float] = []
    seconds: list[float] = []
    one_step = terms.combine(const)
    y, e, plans, _ = evaluate(one_step)  # first couplings: optimal under the one-step distances
    b = one_step if terms.reduce == "sum" else None
    choice: np.ndarray | None = None
    err = np.inf
    rounds = 0
    converged = False
    lin_tol = 1e-3  # the linear solves' tolerance, tightened with the certificate as in the engine
    while N and rounds < MAX_ROUNDS:
        rounds += 1
        if b is not None:
            lin_tol = max(tol * 1e-3, min(lin_tol, 1e-3 * err))
            T = _system(groups, plans, terms.row_pair, terms.row_weight, N)
            x, _ = solve_fixed_point(T, b, c, x0=x if rounds > 1 else one_step, tol=lin_tol)
        else:
            x, choice = _max_player(terms, groups, plans, x, choice, tol * 1e-3)
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
        for i, (grp, old, new) in enumerate(zip(groups, plans, new_plans)):
            if grp.fixed:
                continue
            current = np.einsum("gab,gab->g", old, ext[grp.target])
            cost = new_costs[grp.rows]
            better = cost < current - 16 * new[0].size * U * (current + 1e-300)
            if np.any(better):
                plans[i] = np.where(better[:, None, None], new, old)
                improved = True
        if not improved:
            if b is not None and lin_tol > tol * 1e-3:
                lin_tol = tol * 1e-3  # the couplings may be optimal only for an inexact x: solve it closely
                continue
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
