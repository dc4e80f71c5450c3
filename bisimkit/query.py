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

For pi (:attr:`~bisimkit.operators.Operator.value_bracketed`) the policy's values bound every distance,
``|V(u) - V(v)| <= d(u, v) <= V(u) + V(v)`` (rewards shifted to be non-negative, :func:`policy_values`), so a
closure larger than :data:`CLOSURE_PAIRS` is not needed whole: :func:`_explored_solution` solves an explored
set twice, with the pairs beyond it held at the lower and at the upper ends of their brackets, which bound
the fixed point from both sides, and grows the set where the queried brackets are widest until they are
within ``2 tol`` (``docs/operators.md#bracketed-by-the-values-pi-on-large-models``).
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
from .pairs import PairSpace, check_state_pairs, successor_closure, successor_pairs
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
#: For a value-bracketed operator (pi), the closure size up to which the whole closure is solved; beyond it
#: the queries' most influential pairs are explored and the others bracketed by the policy's values.
CLOSURE_PAIRS = 200_000
#: Exploration steps before the explored solve reports what it reached.
MAX_STEPS = 200
#: The least levels of successor pairs explored below each frontier pair chosen in a step.
LOOKAHEAD = 2
#: The share of ``tol`` the frontier may still add, summed over the queries, after a step's choice.
FRONTIER_SHARE = 0.5
#: The most terms of the series of the frontier's weights (:func:`_frontier_weights`).
WEIGHT_TERMS = 2000
#: The most levels of successor pairs explored below a chosen frontier pair in one step.
MAX_LOOKAHEAD = 4


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


def _groups(terms: TransportTerms, frontier: bool = False) -> tuple[list[_Group], np.ndarray, np.ndarray]:
    """The cell table of every transport row of ``terms``, grouped by the shape of its two laws, and the
    frontier ``(fs, ft)``: with ``frontier``, the pairs ``fs < ft`` the rows read outside ``terms.pairs``
    (their cells target ``N + k`` for the k-th, sorted by ``fs n + ft``, and the diagonal ``N + F``);
    without, none may lie outside (the closure) and the diagonal is ``N``."""
    space = terms.pairs
    N, n = len(space), space.n
    lp, lc, lv = _csr(terms.left)
    rp, rc, rv = _csr(terms.right)
    src, dst = np.asarray(terms.row_src, dtype=np.int64), np.asarray(terms.row_dst, dtype=np.int64)
    di, dj = lp[src + 1] - lp[src], rp[dst + 1] - rp[dst]
    shape = di * (int(max(di.max(initial=1), dj.max(initial=1))) + 1) + dj
    order = np.argsort(shape, kind="stable")
    bounds = np.flatnonzero(np.diff(shape[order])) + 1
    left_error = np.zeros(terms.left.shape[0]) if terms.left_law_error is None else terms.left_law_error
    right_error = np.zeros(terms.right.shape[0]) if terms.right_law_error is None else terms.right_law_error
    cells = []
    for rows in np.split(order, bounds) if len(order) else []:
        ka, kb = int(di[rows[0]]), int(dj[rows[0]])
        ia = lp[src[rows]][:, None] + np.arange(ka)
        ib = rp[dst[rows]][:, None] + np.arange(kb)
        u = np.repeat(lc[ia][:, :, None], kb, axis=2)
        v = np.repeat(rc[ib][:, None, :], ka, axis=1)
        target = space.lookup(u.ravel(), v.ravel(), missing=-1).reshape(len(rows), ka, kb)
        outside = (target < 0) & (u != v) & (terms.row_weight[rows] > 0)[:, None, None]
        cells.append((rows, ia, ib, u, v, target, outside))
    parts = [np.minimum(u, v)[o] * n + np.maximum(u, v)[o] for *_, u, v, _, o in cells]
    keys = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    if len(keys) and not frontier:  # pragma: no cover - the closure is closed under every row's laws
        raise RuntimeError("a transport row of the queried pairs reads a pair outside their closure")
    F = len(keys)
    groups = []
    for rows, ia, ib, u, v, target, outside in cells:
        if F:
            k = np.searchsorted(keys, np.minimum(u, v) * n + np.maximum(u, v))
            target = np.where(outside, N + k, target)
        target = np.where(target < 0, N + F, target)
        errors = left_error[src[rows]] + right_error[dst[rows]]
        groups.append(_Group(rows, lv[ia], rv[ib], target, errors))
    return groups, keys // max(n, 1), keys % max(n, 1)


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


def _coupling_cells(groups: list[_Group], plans: list[np.ndarray], row_pair: np.ndarray, weight: np.ndarray, end: int):
    """``(rows, cols, vals)``: per cell of the couplings ``plans`` with mass, weighted by its row's ``weight``
    (0 for a row left out), the pair of its row and the target of the cell, for the targets below ``end``."""
    rows, cols, vals = [], [], []
    for grp, plan in zip(groups, plans):
        w = weight[grp.rows]
        live = (grp.target < end) & (plan > 0) & (w[:, None, None] > 0)
        rows.append(np.broadcast_to(row_pair[grp.rows][:, None, None], grp.target.shape)[live])
        cols.append(grp.target[live])
        vals.append((w[:, None, None] * plan)[live])
    empty = np.zeros(0, np.int64)
    if not rows:
        return empty, empty, np.zeros(0)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def _system(groups: list[_Group], plans: list[np.ndarray], row_pair: np.ndarray, weight: np.ndarray, N: int):
    """``T`` (CSR, N x N) of the couplings ``plans``: pair p's row holds the mass its rows' couplings,
    weighted by ``weight`` (0 for a row left out), put on each successor pair (the diagonal, where d = 0, and
    the frontier left out)."""
    import scipy.sparse as sp  # start-up cost: scipy's sparse modules load when pairs are queried

    r, c, v = _coupling_cells(groups, plans, row_pair, weight, N)
    T = sp.csr_matrix((v, (r, c)), shape=(N, N))
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


@dataclass
class _Coupled:
    """What :func:`_couple` reached: ``y`` = F(x) on the pairs, ``e`` its per-pair error bound, ``err`` the
    certified sup-norm distance of ``y`` to the fixed point, the rounds, whether ``err <= tol``, the couplings
    (one plan array per group) and the certificate after every round."""

    y: np.ndarray
    e: np.ndarray
    err: float
    rounds: int
    converged: bool
    plans: list
    history: list


def _couple(terms: TransportTerms, groups: list[_Group], tail: np.ndarray, tol: float, x0=None, on_round=None):
    """Coupling iteration (module doc) on the pairs of ``terms``, the values beyond them held at ``tail`` (the
    frontier's, then 0 for the diagonal: :func:`_groups`), to the certified error ``tol``. ``x0`` starts the
    first linear solve (default the one-step distances); ``on_round(rounds, err)`` is called after every round.
    Every pair's value is a monotone function of ``tail``, so lower and upper values beyond the pairs give
    lower and upper fixed points on them."""
    N = len(terms.pairs)
    c = float(terms.discount)
    n_rows = len(terms.row_pair)
    const = np.asarray(terms.row_const, dtype=np.float64)

    def evaluate(x: np.ndarray):
        """``(y, e, plans, costs)``: F(x) with its per-pair error bound (the engine's accounting,
        :meth:`bisimkit.forms.TransportTerms.evaluate`), the optimal couplings and their costs per row."""
        ext = np.concatenate([x, tail])
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

    if not N:
        return _Coupled(np.zeros(0), np.zeros(0), 0.0, 0, True, [], [])
    one_step = terms.combine(const)
    beyond = len(tail) > 1  # values held beyond the pairs enter each round's constant
    if beyond and terms.reduce != "sum":  # pragma: no cover - frontiers are explored for sums of rows only
        raise ValueError("values beyond the pairs need a sum over each pair's rows")
    x = one_step if x0 is None else np.asarray(x0, dtype=np.float64)
    y, e, plans, _ = evaluate(x)  # first couplings: optimal under the starting distances
    choice: np.ndarray | None = None
    err = np.inf
    rounds = 0
    converged = False
    history: list[float] = []
    lin_tol = 1e-3  # the linear solves' tolerance, tightened with the certificate as in the engine
    while rounds < MAX_ROUNDS:
        rounds += 1
        if terms.reduce == "sum":
            lin_tol = max(tol * 1e-3, min(lin_tol, 1e-3 * err))
            b = one_step
            if beyond:
                b = terms.combine(const + c * _plan_costs(groups, plans, np.concatenate([np.zeros(N), tail]), n_rows))
            T = _system(groups, plans, terms.row_pair, terms.row_weight, N)
            x, _ = solve_fixed_point(T, b, c, x0=x, tol=lin_tol)
        else:
            x, choice = _max_player(terms, groups, plans, x, choice, tol * 1e-3)
        y, e, new_plans, new_costs = evaluate(x)
        err = (c * float(np.max(np.abs(y - x), initial=0.0)) + float(np.max(e, initial=0.0))) / (1 - c)
        history.append(err)
        if on_round is not None:
            on_round(rounds, err)
        if err <= tol:
            converged = True
            break
        improved = False
        ext = np.concatenate([x, tail])
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
            if terms.reduce == "sum" and lin_tol > tol * 1e-3:
                lin_tol = tol * 1e-3  # the couplings may be optimal only for an inexact x: solve it closely
                continue
            break  # optimal couplings: what is left is the floor of the evaluation
    return _Coupled(y, e, float(err), rounds, converged, plans, history)


def query_solution(
    mdp: FiniteMDP,
    op,
    ground: Ground | None,
    pairs,
    tol: float,
    max_memory: int | None = None,
    progress=None,
    values: tuple[np.ndarray, float] | None = None,
) -> QuerySolution:
    """The distances of the queried ``pairs`` under the operator ``op`` (module doc), certified to ``tol``.

    Parameters
    ----------
    mdp : the model (sparse or dense; the policy's next-state laws are read as CSR rows).
    op : an :class:`~bisimkit.operators.Operator` with ``op.queries``.
    ground : the operator's ground (eps-avg), as for :func:`bisimkit.solve`.
    pairs : ``(q, 2)`` state indices.
    tol : the certified sup-norm error asked for.
    max_memory : bytes the closure (or the explored pairs) may take (default :data:`DEFAULT_QUERY_MEMORY`).
    progress : called as ``progress(round, certified_error, seconds)`` after every round (every exploration
        step for the explored solve).
    values : ``(V, error)`` of :func:`policy_values` when the caller has them (the explored solve's brackets).
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
    first = min(limit, CLOSURE_PAIRS) if op.value_bracketed else limit
    s, t = successor_closure(ptr, cols, queries[:, 0], queries[:, 1], n, first)
    if (s is None or t is None) and op.value_bracketed:
        return _explored_solution(mdp, op, ground, queries, tol, limit, ptr, cols, start, progress, values)
    if s is None or t is None:
        raise InputError(
            f"the {len(queries)} queried pairs reach more than {limit} state pairs through their successors, "
            f"more than {budget / 2**30:.1f} GiB allow (about {PAIR_BYTES + CELL_BYTES * mean_cells:.0f} bytes "
            f"a pair); query fewer or nearer pairs, or solve every pair",
            param="pairs",
        )
    space = PairSpace.listed(n, s, t)
    N = len(space)
    terms = op.build(mdp, mdp, space, ground, True)
    groups, _, _ = _groups(terms)
    seconds: list[float] = []

    def on_round(rounds: int, err: float) -> None:
        seconds.append(time.perf_counter() - start)
        if progress is not None:
            progress(rounds, err, seconds[-1])

    out = _couple(terms, groups, np.zeros(1), tol, on_round=on_round)
    ids = space.lookup(queries[:, 0], queries[:, 1], missing=-1)
    distances = np.where(ids >= 0, out.y[np.maximum(ids, 0)] if N else 0.0, 0.0)
    floor = float(np.max(out.e, initial=0.0)) / (1 - float(mdp.discount)) if N else 0.0
    return QuerySolution(
        metric=op.name,
        distances=distances,
        iterations=out.rounds,
        certified_error=out.err,
        seconds=time.perf_counter() - start,
        method=f"on-the-fly coupling iteration on the {N} pairs the {len(queries)} queried pairs reach",
        tolerance=tol,
        ground=None if ground is None else str(ground) if isinstance(ground, str) else "matrix",
        converged=out.converged,
        history=out.history,
        history_seconds=seconds,
        floor=floor,
        pairs=queries,
        lower=np.maximum(distances - out.err, 0.0),
        upper=distances + out.err,
        explored=N,
    )


def policy_values(mdp: FiniteMDP, tol: float) -> tuple[np.ndarray, float]:
    """``(V, error)``: the policy's discounted values ``V = r0 + c Ppi V`` for the mean rewards shifted to be
    non-negative (``r0 = r_pi - m``, ``m`` at most the least exact mean reward), solved to about ``tol``, and a
    bound on ``|V - V*|`` where ``V*`` is the value of the exact laws and rewards: the float64 residual with
    its rounding, the mean rewards' errors and the laws' total variation times the spread of ``V``, all over
    ``1 - c``."""
    import scipy.sparse as sp  # start-up cost: scipy's sparse modules load when pairs are queried

    n, c = mdp.n_states, float(mdp.discount)
    ptr, cols, vals = _csr(mdp.transition_pi_rows)
    P = sp.csr_matrix((vals, cols, ptr), shape=(n, n))
    r_error = mdp.reward_pi_error
    r0 = mdp.reward_pi - float(np.min(mdp.reward_pi - r_error, initial=0.0))
    V, _ = solve_fixed_point(P, r0, c, tol=tol)
    V = np.maximum(V, 0.0)
    k = int(np.max(np.diff(ptr), initial=1))
    P_abs = P @ V  # V >= 0: the product is its own absolute sum
    residual = np.abs(r0 + c * P_abs - V) + gamma(k + 3) * (r0 + c * P_abs + V)
    law = mdp.roundoff.pi_law_error * float(np.max(V, initial=0.0))
    error = float(np.max(residual + r_error + U * r0 + c * law, initial=0.0)) / (1 - c)
    return V, error * (1 + 4 * U)


def _frontier_weights(
    terms: TransportTerms, groups: list[_Group], plans: list, queried: np.ndarray, width: np.ndarray, small: float
):
    """Per frontier pair, how much its bracket's width widens the queried pairs' brackets, summed over them:
    ``c (B^T w) * width`` with ``w = q + c A^T w``, where ``A`` (pairs to pairs) and ``B`` (pairs to frontier)
    hold the mass of the couplings ``plans`` and ``q`` counts the queried pairs. The series for ``w`` is summed
    until what is left of it could add at most ``small`` to the weights in all (they order the exploration;
    the brackets themselves are certified)."""
    import scipy.sparse as sp  # start-up cost: scipy's sparse modules load when pairs are queried

    N, c, F = len(terms.pairs), float(terms.discount), len(width)
    r, col, v = _coupling_cells(groups, plans, terms.row_pair, terms.row_weight, N + F)
    M = sp.csr_matrix((v, (r, col)), shape=(N, N + F))
    inner, outer = M[:, :N].T.tocsr(), M[:, N:].T.tocsr()
    q = np.bincount(queried, minlength=N).astype(np.float64)
    w, term = q, q
    widest = float(np.max(width, initial=0.0))
    for _ in range(WEIGHT_TERMS):
        term = c * (inner @ term)
        w = w + term
        # the series' rest carries at most sum(term) c / (1 - c) of mass onward, each unit at most c widest
        if float(np.sum(term)) * c / (1 - c) * c * widest <= small:
            break
    return c * (outer @ w) * width


def _below(fs: np.ndarray, ft: np.ndarray, ptr: np.ndarray, cols: np.ndarray, n: int, levels: int) -> np.ndarray:
    """The keys ``s n + t`` (``s < t``) of the pairs ``(fs, ft)`` and of their successor pairs down to ``levels``
    steps, the diagonal left out."""
    found = [np.minimum(fs, ft) * n + np.maximum(fs, ft)]
    a, b = fs, ft
    for _ in range(levels):
        nxt = []
        for _, u, v in successor_pairs(a, b, ptr, cols):
            off = u != v
            nxt.append(np.minimum(u, v)[off] * n + np.maximum(u, v)[off])
        keys = np.unique(np.concatenate(nxt)) if nxt else np.zeros(0, np.int64)
        found.append(keys)
        a, b = keys // n, keys % n
    return np.unique(np.concatenate(found))


def _explored_solution(mdp, op, ground, queries, tol, limit, ptr, cols, start, progress, values) -> QuerySolution:
    """The queried pairs of a value-bracketed operator (:attr:`~bisimkit.operators.Operator.value_bracketed`),
    solved on the pairs they depend on most, the others bracketed (``docs/operators.md#queried-pairs``).

    The explored pairs ``E`` start as the queried ones. Each step builds their transport rows; the pairs those
    rows read outside ``E`` (the frontier) are held at the lower and then at the upper end of their value
    bracket ``|V(u) - V(v)| <= d(u, v) <= V(u) + V(v)`` (:func:`policy_values`, widened by twice its error),
    and :func:`_couple` solves ``E`` twice to ``tol / 4``: every value on ``E`` is monotone in the frontier's,
    so the two fixed points bound the true distances, and each queried pair's bracket is the lower solve
    minus its certificate to the upper solve plus its own. When every bracket is within ``2 tol``, the
    midpoints are the answer. Otherwise the frontier pairs whose widths weigh most on the queries
    (:func:`_frontier_weights` under the lower solve's couplings), in decreasing order until the rest weigh at
    most ``FRONTIER_SHARE * tol``, join ``E`` with their successor pairs :data:`LOOKAHEAD` levels down, or
    down to :data:`MAX_LOOKAHEAD` levels for a pair whose weight stays above the last one chosen for that
    many factors of ``c``. The search stops at the memory budget, after :data:`MAX_STEPS` steps, or where the
    two solves stop above ``tol / 4`` (their floor); the brackets reached are returned, not converged."""
    n = mdp.n_states
    V, v_error = policy_values(mdp, tol * 1e-3) if values is None else values

    def bracket(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        same = a == b
        low = np.where(same, 0.0, np.maximum(np.abs(V[a] - V[b]) - 2 * v_error, 0.0))
        return low, np.where(same, 0.0, V[a] + V[b] + 2 * v_error)

    qa, qb = np.minimum(queries[:, 0], queries[:, 1]), np.maximum(queries[:, 0], queries[:, 1])
    lower, upper = bracket(qa, qb)
    keys = np.unique((qa * n + qb)[qa != qb])
    if len(keys) > limit:
        raise InputError(
            f"the {len(keys)} queried pairs are more than the {limit} state pairs the memory budget allows; "
            f"query fewer pairs",
            param="pairs",
        )
    history: list[float] = []
    seconds: list[float] = []
    previous: tuple | None = None
    err = float(np.max(upper - lower, initial=0.0)) / 2
    converged = err <= tol
    steps = explored = 0
    floor = 0.0
    stop = ""
    while not converged and steps < MAX_STEPS:
        steps += 1
        space = PairSpace.listed(n, keys // n, keys % n)
        N = explored = len(space)
        terms = op.build(mdp, mdp, space, ground, True)
        groups, fs, ft = _groups(terms, frontier=True)
        low_f, high_f = bracket(fs, ft)
        x_low, x_high = bracket(space.s, space.t)
        if previous is not None:  # the pairs explored before start from their values of the last step
            old_keys, old_low, old_high = previous
            at = np.searchsorted(keys, old_keys)
            x_low[at], x_high[at] = old_low, old_high
        low = _couple(terms, groups, np.append(low_f, 0.0), tol / 4, x_low)
        high = _couple(terms, groups, np.append(high_f, 0.0), tol / 4, x_high)
        ids = space.lookup(qa, qb, missing=-1)
        at = ids >= 0
        lower[at] = np.maximum(lower[at], low.y[ids[at]] - low.err)
        upper[at] = np.minimum(upper[at], high.y[ids[at]] + high.err)
        err = float(np.max(upper - lower, initial=0.0)) / 2
        history.append(err)
        seconds.append(time.perf_counter() - start)
        if progress is not None:
            progress(steps, err, seconds[-1])
        if err <= tol:
            converged = True
            break
        if not len(fs) or not (low.converged and high.converged):
            floor = err  # every pair the queries reach is explored, or the solves stopped at their floor
            break
        if N >= limit:
            stop = f", stopped at the {limit} pairs the memory budget allows"
            break
        weight = _frontier_weights(terms, groups, low.plans, ids[at], high_f - low_f, 0.1 * FRONTIER_SHARE * tol)
        order = np.argsort(-weight, kind="stable")
        rest = np.cumsum(weight[order][::-1])[::-1]  # what the frontier adds from each position on
        take = max(1, int(np.searchsorted(-rest, -FRONTIER_SHARE * tol)))
        chosen = order[:take]
        # a pair's successors j levels down weigh at most about c^j its weight: explore as deep as they stay
        # above the weight of the last pair chosen
        cut = max(float(weight[chosen[-1]]), 1e-300)
        depth = np.log(np.maximum(weight[chosen], cut) / cut) / -np.log(float(mdp.discount))
        depth = np.clip(np.ceil(depth), LOOKAHEAD, MAX_LOOKAHEAD).astype(np.int64)
        new = np.unique(
            np.concatenate(
                [_below(fs[chosen[depth == j]], ft[chosen[depth == j]], ptr, cols, n, int(j)) for j in np.unique(depth)]
            )
        )
        new = new[~np.isin(new, keys, assume_unique=True)][: max(limit - N, 0)]
        previous = (keys, low.y, high.y)
        keys = np.union1d(keys, new)
    if not converged and not stop and floor == 0.0 and steps >= MAX_STEPS:
        stop = f", stopped after {MAX_STEPS} steps"
    distances = (lower + upper) / 2
    return QuerySolution(
        metric=op.name,
        distances=distances,
        iterations=steps,
        certified_error=err,
        seconds=time.perf_counter() - start,
        method=(
            f"on-the-fly coupling iteration on the {explored} pairs the {len(queries)} queried pairs depend on "
            f"most, the pairs beyond them bracketed by the policy's values{stop}"
        ),
        tolerance=tol,
        ground=None if ground is None else str(ground) if isinstance(ground, str) else "matrix",
        converged=converged,
        history=history,
        history_seconds=seconds,
        floor=floor,
        pairs=queries,
        lower=lower,
        upper=upper,
        explored=explored,
    )
