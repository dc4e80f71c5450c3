"""Quotient-first solving: solve on the blocks of the zero-set relation, lift, certify.

For the pseudometrics ``pi``, ``psm``, ``bisim`` and ``eps`` the zero set of the
fixed point is the largest relation of the same kind (``docs/relations.md``,
claim C2): related states are at distance 0 and, by the triangle inequality, at
the same distance from every other state. The n x n fixed point is therefore a
k x k matrix on the blocks, and partition refinement finds the blocks in
near-linear time. This module builds that k-state problem, bounds the lift and lifts a solution of it
(the solving itself is a stage of :func:`bisimkit.solvers.solve`).

Construction
------------
Let ``B(s)`` be the block of state s (``relations.relation_labels`` with the
metric's kind and ground) and ``r_b`` the smallest state of block b. The
quotient MDP has one state per block and the rows of the representatives, with
the transition mass gathered onto blocks::

    R~(b, a) = R(r_b, a),   pi~(b) = pi(r_b),   P~(b, a, b') = sum_{s' in b'} P(r_b, a, s'),

the same discount and action values, and for a ground matrix the restriction
``G~((b, a), (b', a')) = G((r_b, a), (r_b', a'))`` (the built-in grounds
``reward`` and ``policy`` restrict by themselves). Its solution d~ is lifted as
``D(s, t) = d~(B(s), B(t))``.

Why the lift is certified although blocks are found with a tolerance
------------------------------------------------------------------------
Blocks are found by clustering real numbers with ``atol`` (``RELATION_ATOL``, 1e-9), so the rows
of s and of ``r_B(s)`` agree only approximately. The certificate is therefore not
assumed but derived from two lemmas and a per-state deviation, all O(nnz).
Write ``B#mu`` for the block aggregate of a law mu on states, ``(B#mu)(b) = mu(b)``.

(L1) Aggregation. If the cost is constant on blocks, ``D(x, y) = d(B(x), B(y))``,
then ``W1(mu, nu; D) = W1(B#mu, B#nu; d)``. Proof: pushing a coupling of (mu, nu)
forward by ``B x B`` gives a coupling of the aggregates with the same cost (>=);
conversely a coupling g of the aggregates lifts to
``g(B(x), B(y)) mu(x)/mu(B(x)) nu(y)/nu(B(y))``, a coupling of (mu, nu) with the
same cost (<=). Nothing is assumed of d on the diagonal.

(L2) Stability. For any cost C with oscillation ``osc C = max C - min C <= M`` and
``TV(mu, mu') = 1/2 ||mu - mu'||_1``::

    |OT_C(mu, nu) - OT_C(mu', nu)| <= M TV(mu, mu').

Proof: subtracting the constant ``min C`` shifts both values equally, so take
``0 <= C <= M``. Let g' be optimal for (mu', nu) and k a coupling of (mu, mu')
that keeps ``min(mu, mu')`` in place, so it moves mass ``TV(mu, mu')``. The glued
plan ``g(x, y) = sum_x' k(x, x') g'(x', y) / mu'(x')`` couples (mu, nu); its cells
with x = x' cost at most the cost of g' (as ``k(x, x) <= mu'(x)`` and C >= 0), the
others at most ``M TV``. Swap the roles for the other inequality.

Per-state deviation. For a bound M on the oscillation of the quotient's fixed
point d~*, and r = r_B(s) (the quotient's quantities are taken from the quotient MDP
as built, its rows divided by their sums as validation leaves any rows, so nothing is
assumed about how exactly its rows match the representatives'):

* ``pi``:  ``delta(s) = |Rpi(s) - R~pi(B(s))| + c M TV(B#Ppi(s), P~pi(B(s)))``;
* ``psm``: the same with ``||abar(s) - abar~(B(s))||_1`` for the reward term;
* ``bisim``: ``delta(s) = max_a |R(s, a) - R~(B(s), a)| + c M TV(B#P(s, a), P~(B(s), a))``;
* ``eps``: with one shared uniform U choosing the actions ``a_s(U)`` of s and
  ``a~(U)`` of B(s) by their quantile functions (the entangled coupling gamma_s of
  pi(s) and pi~(B(s)), whose cells are the merged breakpoint segments),
  ``delta(s) = sum gamma_s(a, a') [g(s, a; r, a') + c M TV(B#P(s, a), P~(B(s), a'))]``
  with ``g(x; x')`` bounding how much G can change when its argument x is replaced by
  x': ``|R(x) - R(x')|`` for the reward ground, ``||abar(s) - abar(r)||_1`` for the
  policy ground, ``max(||G[x, .] - G[x', .]||_inf, ||G[., x] - G[., x']||_inf)`` for
  a matrix (rows and columns, so symmetry is not assumed).

Theorem. Let d~* be the fixed point of the quotient operator F~ and ``D*`` its lift.
Then ``|F(D*)(s, t) - D*(s, t)| <= delta(s) + delta(t)`` for every pair, diagonal and
pairs inside a block included. Proof: ``D*(s, t) = d~*(B(s), B(t)) = F~(d~*)(B(s), B(t))``.
By (L1) every W1 term of ``F(D*)(s, t)`` is a W1 under d~* between aggregated
laws of s and t; the same term of F~ uses the laws of the blocks. Replacing the
laws of s by those of B(s) costs ``c M TV`` per term by (L2), and likewise for t;
replacing the reward / mean-action / ground terms costs the first parts of
``delta(s)`` and ``delta(t)`` (triangle inequality; for bisim
``|max_a f_a - max_a h_a| <= max_a |f_a - h_a|``; for eps the two sides are
expectations over the same U, and the U-integral of the per-U bound is
``delta(s) + delta(t)``).

Certificate. The quotient solver returns d~ with ``||d~ - d~*||_inf <= err_q`` (over
all k x k entries: the solvers charge any diagonal residual to the certificate).
Lifting preserves the sup norm, and the original operator F is a c-contraction
with fixed point d*, so::

    ||D - d*|| <= ||D - D*|| + ||D* - d*|| <= err_q + ||F(D*) - D*|| / (1 - c)
               <= err_q + 2 max_s delta(s) / (1 - c),

with ``M = max d~ + 2 err_q`` (d~ is clipped at 0 and 0 on its diagonal, so d~* lies
in ``[-err_q, max d~ + err_q]``). Before solving, the same bound with the a-priori
``M = C / (1 - c) + 3 tol`` (C the largest one-step term of the quotient, which
bounds its fixed point by ``C / (1 - c)``) decides whether the quotient can meet
``tol`` at all: if the deviation term alone would use more than half of ``tol``,
the original MDP is solved instead; otherwise the quotient is solved to
``tol`` minus that term, so the lifted certificate is at most ``tol``. For copies
of states (``generators.planted_bisimulation``, ``lift``) the deviations are
floating-point round-off, of order 1e-16. The quotient's own certificate charges the
round-off of its solve (``docs/operators.md#the-certificate``). The deviations themselves are
upper bounds on the exact ones, not their float64 values (:func:`_deviation_parts`): the
differences of means in twice the working precision with their bounds, each law's total
variation from the exact one added to the computed TV, the aggregation's rounding, for eps the
measure of uniforms the computed action coupling misplaces, and every sum scaled for its own
rounding; so a float64 mean that equals its representative's while the exact one does not,
or a quotient collapsed to one block, is never certified by 0.

Scope: ``pi``, ``psm``, ``bisim``, ``eps``. Not eps-bar (its fixed point depends on
the state order and need not vanish on E_eps), nor the sampled / independent
operators (mico, psm-sampled, dbc-sampled: ``d(s, s) > 0``), nor dbc (W2) or eps-avg
(no relation of their own is computed), nor ``full_diagonal`` solves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .couplings import entangled_cells, histogram_rows
from .ground import Ground
from .kernels import DenseRows, csr_parts, kernel, on_small_path, valid_csr
from .mdp import FiniteMDP
from .operators import QUOTIENT_METRICS, Operator, mean_action_terms, mean_reward_terms, operator
from .relations import RELATION_ATOL, relation_labels
from .roundoff import U, gamma

#: The deviation term may use at most this fraction of the requested tolerance.
DEVIATION_SHARE = 0.5


@dataclass
class Quotient:
    """The quotient of ``source`` by a relation, with what it takes to certify a lift.

    ``labels[s]`` is the block of state s (blocks numbered by their smallest state),
    ``representatives[b]`` the smallest state of block b, ``mdp`` the quotient MDP and
    ``ground`` its ground (a name, the restricted matrix, or None for metrics without
    one). ``ground_deviation`` and ``transport_deviation`` hold the two parts of the
    per-state deviation (module docstring): ``delta(s) = max_j (ground_deviation[s, j]
    + c M transport_deviation[s, j])`` (one column except for bisim, one per action).
    """

    metric: str
    source: FiniteMDP
    mdp: FiniteMDP
    ground: Ground | None
    labels: np.ndarray
    representatives: np.ndarray
    ground_deviation: np.ndarray
    transport_deviation: np.ndarray

    @property
    def n_blocks(self) -> int:
        """Number of blocks k (states of the quotient)."""
        return int(len(self.representatives))

    def lift(self, d: np.ndarray) -> np.ndarray:
        """``D(s, t) = d(B(s), B(t))``: a block distance matrix on the original states."""
        return np.asarray(d)[np.ix_(self.labels, self.labels)]

    def deviation(self, M: float) -> np.ndarray:
        """``delta(s)`` for every original state, for a bound M on the oscillation of d~*."""
        c = self.mdp.discount
        return np.max(self.ground_deviation + c * M * self.transport_deviation, axis=1) * (1 + 4 * U)

    def lift_error(self, M: float) -> float:
        """``2 max_s delta(s) / (1 - c)``: what lifting adds to the quotient's certificate (the deviation
        parts already bound the exact quantities; the factor covers this formula's own rounding)."""
        delta = self.deviation(M)
        return 2.0 * (1.0 + 8 * U) * float(np.max(delta, initial=0.0)) / (1.0 - self.mdp.discount)

    def certificate(self, d: np.ndarray, certified_error: float) -> float:
        """Certified sup-norm error of ``lift(d)`` on the original MDP, given the quotient's."""
        M = float(np.max(d, initial=0.0)) - min(float(np.min(d, initial=0.0)), 0.0) + 2.0 * certified_error
        return float(certified_error) + self.lift_error(M)

    def one_step_bound(self) -> float:
        """The largest one-step term C of the quotient operator (its fixed point is <= C / (1 - c))."""
        q, op = self.mdp, operator(self.metric)
        if op.term == "reward-mean":
            return float(np.ptp(q.reward_pi))
        if op.compares_mean_actions(self.ground):
            return float(np.ptp(q.mean_action, axis=0).sum())
        if op.term == "ground" and not isinstance(self.ground, str):
            assert self.ground is not None  # kept for every metric with a ground
            return max(float(np.max(self.ground)), 0.0)
        return float(np.ptp(q.rewards))  # the rewards of paired actions, or the reward ground

    def a_priori_error(self, tol: float) -> float:
        """The lift's error bound before solving, with ``M = C / (1 - c) + 3 tol`` (module docstring):
        the quotient is worth solving when this is at most ``DEVIATION_SHARE * tol``."""
        return self.lift_error(self.one_step_bound() / (1.0 - self.mdp.discount) + 3.0 * tol)

    def lift_solution(self, sol, tol: float, offset: float = 0.0):
        """Lift a solution of the quotient MDP onto the original states, in place, or None when the
        lifted certificate misses ``tol`` (or the quotient's solve did not converge).

        ``sol`` is a :class:`bisimkit.engine.Solution`; its ``certified_error`` becomes the lifted
        certificate and its history is shifted by the lift term; ``offset`` seconds (the time spent
        finding the blocks) are added to ``seconds`` and ``history_seconds``."""
        err = self.certificate(sol.distances, sol.certified_error)
        if not (sol.converged and err <= tol):
            return None
        shift = err - sol.certified_error
        sol.distances = self.lift(sol.distances)
        sol.certified_error = err
        sol.tolerance = tol
        sol.history = [h + shift for h in sol.history]
        sol.history_seconds = [t + offset for t in sol.history_seconds]
        sol.seconds += offset
        sol.method = f"{sol.method} on the quotient ({self.n_blocks} of {self.source.n_states} states)"
        return sol


def quotient(mdp: FiniteMDP, metric: str, ground: Ground = "reward", atol: float = RELATION_ATOL) -> Quotient | None:
    """The quotient of ``mdp`` by the largest relation of ``metric``'s kind, or None when nothing merges.

    ``ground`` is a resolved ground (``"reward"``, ``"policy"`` or a validated matrix) and
    matters for eps only. Also None when the metric needs a policy and the MDP has none
    (the solver then reports that). Raises ValueError for metrics outside
    :data:`QUOTIENT_METRICS`.
    """
    op = operator(metric)
    if op.relation is None:
        raise ValueError(f"no quotient path for '{metric}' (only {', '.join(QUOTIENT_METRICS)})")
    if op.uses_policy and mdp.policy is None:
        return None
    if ground is None:
        ground = "reward"
    labels = relation_labels(mdp, op.relation, ground, atol)
    n, m = mdp.n_states, mdp.n_actions
    k = int(labels.max()) + 1
    if k == n:
        return None
    # canonical labels: block b's smallest state is the first whose label exceeds every label before it
    running = np.maximum.accumulate(labels)
    reps = np.concatenate([[0], np.flatnonzero(running[1:] > running[:-1]) + 1]).astype(np.intp, copy=False)
    rep_rows = (reps[:, None] * m + np.arange(m)).ravel()
    P = _block_rows(_transition_matrix(mdp, False), rep_rows, labels, k)  # (k m) x k: dense on the small path
    policy = None if mdp.policy is None else mdp.policy[reps]
    name = f"quotient[{mdp.label}, {k} of {n} states]"
    if isinstance(P, np.ndarray):
        q_mdp = FiniteMDP(P, mdp.rewards[reps], mdp.discount, policy, mdp.action_values, name=name)
    else:  # the gathered rows are valid as they are, as are the rows of the validated rewards and policy
        q_mdp = FiniteMDP.from_valid_parts(P, mdp.rewards[reps], mdp.discount, policy, mdp.action_values, name)
    q_ground = None
    if op.uses_ground:
        q_ground = ground if isinstance(ground, str) else np.asarray(ground)[np.ix_(rep_rows, rep_rows)]
    g_dev, t_dev = _deviation_parts(mdp, q_mdp, op, ground, labels, reps)
    return Quotient(metric, mdp, q_mdp, q_ground, labels, reps, g_dev, t_dev)


def _block_rows(X, rows: np.ndarray, labels: np.ndarray, k: int):
    """The rows ``rows`` of X with their masses gathered onto the k blocks (``X[rows] @ onehot(labels)``): a
    (k, m, k) array on the small-problem path (X dense), else CSR rows over the blocks in
    the form validation gives any sparse rows (:func:`_gather_block_rows`)."""
    if isinstance(X, np.ndarray):  # bisimkit.kernels: numpy only
        onehot = np.zeros((X.shape[1], k))
        onehot[np.arange(X.shape[1]), labels] = 1.0
        return (X[rows] @ onehot).reshape(k, -1, k)
    indptr, indices, data = csr_parts(X)
    rows = np.asarray(rows, dtype=np.int64)
    size = int((indptr[rows + 1] - indptr[rows]).sum())
    index = np.int32 if max(size, k) < 2**31 else np.int64  # scipy's own choice: kept without a copy
    out_indptr = np.zeros(len(rows) + 1, dtype=index)
    out_indices = np.empty(size, dtype=index)
    out_data = np.empty(size)
    nnz = _gather_block_rows(
        indptr,
        indices,
        data,
        rows,
        np.asarray(labels, dtype=np.int64),
        np.full(k, -1, dtype=np.int64),
        np.zeros(k),
        out_indptr,
        out_indices,
        out_data,
    )
    return valid_csr(out_data[:nnz], out_indices[:nnz], out_indptr, (len(rows), k))


@kernel
def _gather_block_rows(indptr, indices, data, rows, labels, stamp, mass, out_indptr, out_indices, out_data):
    """The rows ``rows`` of the CSR matrix X (indptr, indices, data) over states, each state's mass gathered onto
    its block, written as the CSR rows (out_indptr, out_indices, out_data) over the blocks in the form
    :class:`~bisimkit.mdp.FiniteMDP` gives validated sparse rows: columns ascending, one entry per block, no
    zero entry, each row divided by its sum (the entries added from 0.0 in column order). A block's mass is
    the sum of the row's masses on it in their stored order, as :func:`_block_tv` sums it.

    Arguments
    ---------
    indptr, indices, data : int32 or int64 (one type), float64
        X: row ``r`` holds the masses ``data[indptr[r]:indptr[r + 1]]`` on the states ``indices[...]``
        (non-negative, as validated rows are).
    rows : int64 (R,)
        The rows of X to gather, in output order.
    labels : int64 (n,)
        The block of every state, in ``[0, k)``.
    stamp : int64 (k,)
        Scratch: -1 everywhere on entry (left holding row numbers).
    mass : float64 (k,)
        Scratch (left changed).
    out_indptr : int32 or int64 (R + 1,)
        Output: the row pointers (``out_indptr[0]`` is set to 0).
    out_indices, out_data : the type of out_indptr, float64; at least the entries of the rows
        Output: the blocks and masses of the gathered rows.

    Returns the number of entries written (``out_indptr[R]``).
    """
    nnz = 0
    out_indptr[0] = 0
    for i in range(len(rows)):
        r = rows[i]
        start = nnz
        for e in range(indptr[r], indptr[r + 1]):
            b = labels[indices[e]]
            if stamp[b] != i:
                stamp[b] = i
                mass[b] = 0.0
                out_indices[nnz] = b
                nnz += 1
            mass[b] += data[e]
        for j in range(start + 1, nnz):  # insertion sort: a row reaches few blocks
            b = out_indices[j]
            x = j
            while x > start and out_indices[x - 1] > b:
                out_indices[x] = out_indices[x - 1]
                x -= 1
            out_indices[x] = b
        total = 0.0
        kept = start
        for j in range(start, nnz):
            b = out_indices[j]
            if mass[b] != 0.0:
                out_indices[kept] = b
                out_data[kept] = mass[b]
                total += mass[b]
                kept += 1
        for j in range(start, kept):
            out_data[j] = out_data[j] / total
        nnz = kept
        out_indptr[i + 1] = nnz
    return nnz


def _transition_matrix(mdp: FiniteMDP, policy: bool):
    """Ppi (``policy``) or P's (n*m) x n rows: a dense array on the small-problem path, else CSR."""
    if on_small_path():
        return mdp.transition_pi if policy else mdp.transitions.reshape(-1, mdp.n_states)
    return mdp.transition_pi_rows if policy else mdp.transition_rows


@kernel
def _block_tv(indptr, indices, data, labels, q_indptr, q_indices, q_data, rows_x, rows_y, mass, out):
    """``out[i] = TV(B#X[rows_x[i]], Y[rows_y[i]])``: row ``rows_x[i]`` of the CSR matrix X (indptr, indices,
    data) over states, its masses gathered onto blocks (``labels[state]``, k blocks), against row
    ``rows_y[i]`` of the CSR matrix Y over blocks (q_indptr, q_indices, q_data; no repeated columns). ``mass``
    is k zeros of scratch, left as zeros. Each block's aggregated mass is a sum of the row's masses in its
    stored order; the TV is one rounded subtraction per block and a sum of the absolute differences, halved
    (so the exact half-sum of the computed rows is at most ``1 + gamma(k + 2)`` times it). Each matrix's
    pointers and indices are int32 or int64, of one type; the rest int64 and float64."""
    for i in range(len(rows_x)):
        x = rows_x[i]
        y = rows_y[i]
        for e in range(indptr[x], indptr[x + 1]):
            mass[labels[indices[e]]] += data[e]
        total = 0.0
        for e in range(q_indptr[y], q_indptr[y + 1]):
            b = q_indices[e]
            total += abs(mass[b] - q_data[e])
            mass[b] = -1.0  # counted (an aggregated mass is never negative)
        for e in range(indptr[x], indptr[x + 1]):
            b = labels[indices[e]]
            if mass[b] != -1.0:
                total += abs(mass[b])
                mass[b] = -1.0
        for e in range(indptr[x], indptr[x + 1]):
            mass[labels[indices[e]]] = 0.0
        for e in range(q_indptr[y], q_indptr[y + 1]):
            mass[q_indices[e]] = 0.0
        out[i] = 0.5 * total


def _row_tv(X, rows_x: np.ndarray, Y, rows_y: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``TV(B#X[rows_x[i]], Y[rows_y[i]])`` for every i, O(nnz): X's rows over states gathered onto the blocks
    ``labels``, Y's over blocks (CSR, or :class:`~bisimkit.kernels.DenseRows` on the small-problem path), as
    computed by :func:`_block_tv`: the exact half-sum of the computed rows is at most ``(1 + gamma(k + 2))``
    times this, k the number of blocks."""
    out = np.zeros(len(rows_x))
    if not len(rows_x):
        return out
    k = Y.shape[1]
    X, Y = _csr_of(X), _csr_of(Y)
    _block_tv(
        *csr_parts(X),
        np.asarray(labels, dtype=np.int64),
        *csr_parts(Y),
        np.asarray(rows_x, dtype=np.int64),
        np.asarray(rows_y, dtype=np.int64),
        np.zeros(k),
        out,
    )
    return out


def _csr_of(X):
    """X's rows in CSR layout with no repeated column in a row: a dense array (the small-problem path) as
    :class:`~bisimkit.kernels.DenseRows`, a CSR matrix as it is once its duplicates are summed."""
    if isinstance(X, np.ndarray):
        return DenseRows(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _deviation_parts(
    mdp: FiniteMDP,
    q: FiniteMDP,
    op: Operator,
    ground: Ground,
    labels: np.ndarray,
    reps: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(ground part, transport part) of delta(s), compared with the quotient's own arrays, each an upper bound
    on the exact quantity of the module docstring: what is computed, scaled for the rounding of its own
    arithmetic, plus the errors of the quantities it is computed from (:mod:`bisimkit.roundoff`): the mean
    rewards and mean actions of both MDPs, their laws against the exact ones (the stored rows' renormalisation,
    Ppi's sums), the block aggregation (sums of n non-negative masses: ``gamma(n)`` of a total mass 1), and
    for eps the entangled coupling of pi(s) with pi~(B(s)) (a measure of misplaced uniforms, on which the
    ground term is at most its largest value and the total variation at most 1)."""
    n, m = mdp.n_states, mdp.n_actions
    k = q.n_states
    ro, qo = mdp.roundoff, q.roundoff
    aggregate = 0.5 * gamma(n) + U  # the aggregated masses' rounding, in total variation
    tv_scale = 1.0 + gamma(k + 2)
    if op.term in ("reward-mean", "action-mean"):  # the policy's averages: one law per state
        tv = _row_tv(_transition_matrix(mdp, True), np.arange(n), _transition_matrix(q, True), labels, labels)
        tv = tv * tv_scale
        tv = tv + ro.pi_law_error + qo.pi_law_error[labels] + aggregate
        terms = mean_reward_terms if op.term == "reward-mean" else mean_action_terms
        g, g_error = terms(ro, np.arange(n), qo, labels)
        return (g + g_error)[:, None], tv[:, None]
    P = _transition_matrix(mdp, False)
    if op.term == "reward":  # every action, paired with itself
        q_rows = (labels[:, None] * m + np.arange(m)).ravel()
        tv = _row_tv(P, np.arange(n * m), _transition_matrix(q, False), q_rows, labels).reshape(n, m) * tv_scale
        tv = tv + (ro.transition_law_error + qo.transition_law_error[q_rows]).reshape(n, m) + aggregate
        return np.abs(mdp.rewards - q.rewards[labels]) * (1 + U), tv
    # eps: the entangled coupling of pi(s) and pi~(B(s)), cell by cell (the merged breakpoint segments).
    cells = entangled_cells(histogram_rows(mdp.policy), np.arange(n), histogram_rows(q.policy), labels)
    s, a, b = cells.problem, cells.i, cells.j
    block = labels[s]
    tv = _row_tv(P, s * m + a, _transition_matrix(q, False), block * m + b, labels) * tv_scale
    tv = tv + ro.transition_law_error[s * m + a] + qo.transition_law_error[block * m + b] + aggregate
    if isinstance(ground, str) and ground == "reward":
        g = np.abs(mdp.rewards[s, a] - q.rewards[block, b]) * (1 + U)
        high = np.maximum(
            np.abs(ro.reward_high - qo.reward_low[labels]), np.abs(qo.reward_high[labels] - ro.reward_low)
        )
    elif isinstance(ground, str):  # policy
        g, g_error = mean_action_terms(ro, s, qo, block)
        g = g + g_error
        high = np.zeros(n)
        np.maximum.at(high, s, g)
    else:
        g = _ground_matrix_deviation(np.asarray(ground), s * m + a, reps[block] * m + b) * (1 + U)
        high = np.full(n, float(np.max(ground, initial=0.0)))
    rounding = 1.0 + gamma(2 * m + 3)  # the cell-weighted sums below, their masses off by u relative
    misplaced = ro.policy_breakpoints + qo.policy_breakpoints[labels]
    g_dev = np.bincount(s, weights=cells.mass * g, minlength=n) * rounding + misplaced * high
    t_dev = np.bincount(s, weights=cells.mass * tv, minlength=n) * rounding + misplaced
    return g_dev[:, None], t_dev[:, None]


def _ground_matrix_deviation(G: np.ndarray, x: np.ndarray, y: np.ndarray, chunk: int = 512) -> np.ndarray:
    """``max(||G[x] - G[y]||_inf, ||G[:, x] - G[:, y]||_inf)`` per index pair (0 where x == y)."""
    out = np.zeros(len(x))
    todo = np.nonzero(x != y)[0]
    for start in range(0, len(todo), chunk):
        idx = todo[start : start + chunk]
        rows = np.max(np.abs(G[x[idx]] - G[y[idx]]), axis=1)
        cols = np.max(np.abs(G[:, x[idx]] - G[:, y[idx]]), axis=0)
        out[idx] = np.maximum(rows, cols)
    return out
