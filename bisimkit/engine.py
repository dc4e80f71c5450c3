"""The engine: the fixed point of one operator on one MDP, with a certified error.

Operator form (:func:`bisimkit.operators.operator_form`) -> method (value iteration,
Smith's doubling, one linear solve, coupling iteration) -> certificate -> :class:`Solution`.
:func:`bisimkit.solvers.solve` runs the stages before it (checks, orders, derived metrics,
quotient first) and ends here.


Every operator F is a c-contraction in the sup norm, so for any candidate x

    ||F(x) - d*|| <= c ||x - d*|| <= c / (1 - c) * ||F(x) - x||.

All solvers return F(x) for their last x (Smith's doubling returns x) and report
a bound on its error as ``certified_error``. F is not evaluated exactly in
floating point, so the bound charges what the evaluation is unsure of
(``docs/operators.md#the-certificate``): with ``y`` the computed F(x) and ``e`` a bound on
``||y - F(x)||`` (:class:`bisimkit.forms.Evaluation`: transport gaps, the laws, one-step
terms and entangled couplings as computed from the MDP, and the rounding of every sum, each
charged per pair from the quantities it is computed from)::

    ||y - d*|| <= (c ||y - x|| + e) / (1 - c).

The part ``e / (1 - c)`` (the floor) does not shrink with iterations: when it exceeds the
requested ``tol``, the solve says so (:class:`PrecisionWarning`) and ends with
``converged=False`` instead of claiming ``tol``.

Methods
-------
``vi``
    Value iteration from 0 (monotone for every operator here).
``exact``
    * mico, psm-sampled: Smith's doubling for the Stein equation
      ``D = A + c P D P^T`` (2^k terms of the Neumann series after k steps).
    * eps-bar: one sparse linear solve over the state pairs.
    * pi, psm, eps, eps-avg, bisim: *coupling iteration* (policy iteration on
      the couplings): fix an optimal coupling per transport problem, solve the
      resulting linear system, re-optimise the couplings (warm-started from the
      previous round's optimal bases), until the certificate reaches ``tol``;
      typically 4-6 rounds where value iteration needs hundreds of sweeps. For
      bisim the max over actions is solved exactly inside each round by policy
      iteration over actions.
    * dbc, dbc-sampled (W2, not linear in the coupling): value iteration.
``auto``
    ``exact`` where it exists, else ``vi``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from .compiled import lower_mass, matvec, product_residual, residual, scc_gauss_seidel
from .couplings import Cells
from .errors import InputError, check_count
from .forms import Evaluation, PairLinearForm, SteinForm, TransportTerms, pair_system
from .ground import Ground, ground_label
from .kernels import dense_inverse
from .mdp import FiniteMDP
from .operators import diagonal_values, operator, operator_form
from .pairs import PairSpace
from .roundoff import U
from .transport import plan_costs

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Default certified tolerance ("exact" in this project).
DEFAULT_TOL = 1e-9

#: ``callback(iteration, certified_error, elapsed_seconds)``, called after every round.
ProgressCallback = Callable[[int, float, float], None]

METHODS = ("auto", "exact", "vi")


class PrecisionWarning(UserWarning):
    """The requested tolerance is below what float64 can certify for this problem."""


def check_run_options(method: str, tol, max_iterations, progress=None) -> None:
    """The options every solve shares: a known ``method``, a positive finite ``tol`` and, when given,
    a positive integer ``max_iterations`` and a callable ``progress``; otherwise :class:`InputError`
    naming the parameter."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r} (choose from {', '.join(METHODS)})", param="method")
    if isinstance(tol, bool) or not (isinstance(tol, int | float) and math.isfinite(tol) and tol > 0):
        raise InputError(f"must be a positive number, got {tol!r}", param="tol")
    if max_iterations is not None:
        check_count("max_iterations", max_iterations)
    if progress is not None and not callable(progress):
        raise InputError(
            f"expected a function progress(iteration, certified_error, seconds), got {type(progress).__name__}",
            param="progress",
        )


@dataclass
class Solution:
    """A fixed point with its certificate."""

    metric: str
    distances: np.ndarray
    iterations: int
    certified_error: float
    seconds: float
    method: str
    tolerance: float
    ground: str | None = None
    converged: bool = True
    history: list[float] = field(default_factory=list)
    history_seconds: list[float] = field(default_factory=list)  # elapsed seconds at each history entry
    diagonal_residual: float = 0.0  # max_s |F(d)(s, s)| for the pseudometric operators (0 in theory)
    order: str = "index"  # the state (grid: coordinate) order the entangled coupling followed
    action_order: str = "index"  # the action order of the entangled policy coupling
    floor: float = 0.0  # the part of certified_error that more iterations cannot reduce (round-off, transport gaps)

    @property
    def order_matters(self) -> bool:
        """Whether this metric depends on the state order (eps-bar) or the action order (eps family)."""
        return operator(self.metric).action_order

    def to_json(self) -> dict:
        """The ``--out FILE.json`` object."""
        return {
            "metric": self.metric,
            "ground": self.ground,
            "method": self.method,
            "distances": self.distances.tolist(),
            "iterations": self.iterations,
            "certified_error": self.certified_error,
            "tolerance": self.tolerance,
            "converged": self.converged,
            "diagonal_residual": self.diagonal_residual,
            "order": self.order,
            "action_order": self.action_order,
            "seconds": self.seconds,
        }


@dataclass
class FixedPoint:
    """What a method found for a form (:func:`solve_form`): ``distances`` (the matrix of the result, negative
    round-off clipped to 0), ``iterations``, ``certified_error``, ``converged``, ``floor`` (the part of the
    certificate more iterations cannot reduce) and ``method`` (its name)."""

    distances: np.ndarray
    iterations: int
    certified_error: float
    converged: bool
    floor: float
    method: str


def fixed_point(
    mdp: FiniteMDP,
    metric: str,
    g: Ground | None,
    tol: float,
    method: str = "auto",
    progress: ProgressCallback | None = None,
    max_iterations: int | None = None,
    full_diagonal: bool = False,
) -> Solution:
    """The fixed point of operator ``metric`` on ``mdp`` itself (index orders, no quotient), certified.

    ``g`` is a resolved ground (or None for metrics without one); arguments are as in
    :func:`bisimkit.solvers.solve`, which checks them. Nothing is warned here.
    """
    info = operator(metric)
    start = time.perf_counter()
    pairs = PairSpace(mdp.n_states, diagonal=True) if full_diagonal else None
    form = operator_form(
        mdp, metric, g if g is not None else "reward", pairs, zero_diagonal=False if full_diagonal else None
    )
    c = mdp.discount
    report = _Reporter(progress, start)
    found = solve_form(form, metric, tol, method, report, max_iterations)
    err, ok = found.certified_error, found.converged
    diag_res = 0.0
    if info.pseudometric and not full_diagonal:
        # The solvers stored only s < t with d(s, s) = 0. Check that F(D) really vanishes on the
        # diagonal and charge what does not to the certificate: the full residual of D is at most
        # max(off-diagonal step, diagonal residual), and D's own diagonal is off by at most that much more.
        diag_res = float(
            np.max(np.abs(diagonal_values(mdp, metric, found.distances, g if g is not None else "reward")))
        )
        if diag_res > 0:
            err = max(err, _certificate(c, diag_res)) + diag_res
            ok = ok and err <= tol
    return Solution(
        metric=metric,
        distances=found.distances,
        iterations=found.iterations,
        certified_error=float(err),
        seconds=time.perf_counter() - start,
        method=found.method,
        tolerance=tol,
        ground=None if g is None else ground_label(g),
        converged=bool(ok),
        history=report.history,
        history_seconds=report.seconds,
        diagonal_residual=diag_res,
        floor=float(found.floor),
    )


def solve_form(
    form,
    metric: str,
    tol: float,
    method: str,
    report: Callable[[int, float], None] | None,
    max_iterations: int | None = None,
) -> FixedPoint:
    """The method for ``form`` (a :class:`~bisimkit.forms.SteinForm`, a :class:`~bisimkit.forms.PairLinearForm`
    or :class:`~bisimkit.forms.TransportTerms`): value iteration for ``vi`` and for W2, else Smith's
    doubling, one sparse linear solve or coupling iteration. ``metric`` only names the operator in the
    refusal of ``method="exact"`` for W2.
    """
    c = form.discount
    exact = method in ("auto", "exact") and not (isinstance(form, TransportTerms) and form.p != 1)
    if method == "exact" and not exact:
        raise InputError(f"'{metric}' has no exact method (W2 is not linear in the coupling); use vi", param="method")
    if not exact:
        to_matrix = (lambda X: X) if isinstance(form, SteinForm) else form.pairs.to_matrix
        x0 = np.zeros_like(form.A) if isinstance(form, SteinForm) else form.pairs.zeros()
        x, its, err, ok, floor = value_iteration(form.evaluate, x0, c, tol, report, max_iterations)
        name = "value iteration"
    elif isinstance(form, SteinForm):
        x, its, err, floor = stein_doubling(form, tol, report)
        ok, name, to_matrix = err <= tol, "Smith doubling (Stein equation)", (lambda X: X)
    elif isinstance(form, PairLinearForm):
        x, its, err, floor = pair_linear_solve(form, tol, report)
        ok, name, to_matrix = err <= tol, "sparse linear solve", form.pairs.to_matrix
    else:
        x, its, err, ok, floor = coupling_iteration(form, tol, report, max_iterations)
        name, to_matrix = "coupling iteration", form.pairs.to_matrix
    # Every operator's fixed point is >= 0, so clipping round-off can only move x closer to it.
    return FixedPoint(np.maximum(to_matrix(x), 0.0), its, float(err), bool(ok), float(floor), name)


class _Reporter:
    """Collects the certificate history and forwards it to a progress callback."""

    def __init__(self, progress: ProgressCallback | None, start: float) -> None:
        self.progress = progress
        self.start = start
        self.history: list[float] = []
        self.seconds: list[float] = []

    def __call__(self, iteration: int, err: float) -> None:
        elapsed = time.perf_counter() - self.start
        self.history.append(float(err))
        self.seconds.append(elapsed)
        if self.progress is not None:
            self.progress(iteration, float(err), elapsed)


def _certificate(c: float, step: float) -> float:
    return 0.0 if c == 0 else c / (1.0 - c) * step


@dataclass
class Bound:
    """The certificate of a computed ``y = F(x)`` (module docstring): ``error`` bounds
    ``||y - d*||``, ``floor`` is its part that does not shrink with the step."""

    error: float
    floor: float

    def reachable(self, tol: float) -> bool:
        """Whether more iterations can still bring the bound to ``tol``."""
        return self.floor <= tol


def bound(c: float, ev: Evaluation, returned: str = "value") -> Bound:
    """The certificate of ``ev.value`` (``returned="value"``: y = F(at) is returned) or of
    ``ev.at`` itself (``returned="at"``: ``||at - d*|| <= (||F(at) - at|| + e) / (1 - c)``)."""
    if ev.value.size == 0:
        return Bound(0.0, 0.0)  # no unknowns (one state): nothing is computed, nothing is off
    step = float(np.max(np.abs(ev.value - ev.at), initial=0.0))
    return bound_from_norms(c, step, ev.error, returned)


def bound_from_norms(c: float, step: float, error: float, returned: str = "value") -> Bound:
    """:func:`bound` from the computed step ``max |value - at|`` and the evaluation's error bound ``e``
    (:class:`~bisimkit.forms.Evaluation`), for evaluations whose arrays live elsewhere (a torch
    device, :mod:`bisimkit.engine_torch`): ``(c step + e) / (1 - c)`` for the value, ``(step + e) / (1 - c)``
    for the point, with the floor ``e / (1 - c)``. The step was computed by a rounded subtraction, and the
    bound itself is rounded: both are charged by factors of ``1 + O(u)``."""
    step = step / (1.0 - U)
    factor = c if returned == "value" else 1.0
    return Bound((factor * step + error) / (1.0 - c) * (1.0 + 8.0 * U), error / (1.0 - c) * (1.0 + 4.0 * U))


def precision_note(metric: str, tol: float, floor: float) -> str:
    """The one line said when ``tol`` is below what float64 can certify."""
    return (
        f"{metric}: tol {tol:g} is below what float64 can certify for this MDP (its round-off and "
        f"transport floor is {floor:.3g}); the certificate states what was reached"
    )


# --------------------------------------------------------- value iteration
def value_iteration(
    evaluate: Callable[[np.ndarray], Evaluation],
    x0: np.ndarray,
    c: float,
    tol: float,
    report: Callable[[int, float], None] | None = None,
    max_iterations: int | None = None,
) -> tuple[np.ndarray, int, float, bool, float]:
    """Iterate ``x <- F(x)`` until the certificate of F(x) (:func:`bound`) is within ``tol``.

    Stops early, unconverged, once only the floor stands between the bound and ``tol``.
    Returns ``(x, iterations, certified_error, converged, floor)``.
    """
    x = x0
    limit = max_iterations if max_iterations is not None else _iteration_cap(c, tol)
    err, floor = math.inf, 0.0
    for k in range(1, limit + 1):
        ev = evaluate(x)
        b = bound(c, ev)
        err, floor, x = b.error, b.floor, ev.value
        if report:
            report(k, err)
        if err <= tol:
            return x, k, err, True, floor
        if not b.reachable(tol) and err <= 2.0 * floor:
            return x, k, err, False, floor
    return x, limit, err, False, floor


def _iteration_cap(c: float, tol: float) -> int:
    """Generous bound on the sweeps value iteration needs (rewards up to 1e6)."""
    if c == 0:
        return 2
    return int(math.ceil(math.log(tol * (1 - c) / 1e6) / math.log(c))) + 100


# ------------------------------------------------------------ Stein (mico)
def stein_doubling(form: SteinForm, tol: float, report=None) -> tuple[np.ndarray, int, float, float]:
    """Solve ``D = A + c P D Q^T`` (``Q = P`` when ``form.Q`` is None) by Smith's doubling.

    After k steps ``D_k`` holds the first 2^k terms of ``sum_j c^j P^j A Q^jT``;
    the rest is ``c^(2^k) M D* N^T`` with M and N row-stochastic, so in exact arithmetic
    ``||D_k - D*|| <= c^(2^k) ||A||_max / (1 - c)``, which decides when to stop. The
    certificate returned is a posteriori, from one evaluation of the operator at the
    result (:func:`bound` with ``returned="at"``), so the round-off of the products,
    which the squarings amplify, is measured rather than assumed away. In exact arithmetic
    it is never above the a priori bound: ``F(D_k) - D_k = c^(2^k) P^(2^k) A Q^(2^k)T``.
    With ``Q = P`` the result is symmetrised before the certificate.
    Returns ``(D, steps, certified_error, floor)``.
    """
    A, P, c = form.A, form.P, form.discount
    one_sided = form.Q is None
    a_max = float(np.max(np.abs(A), initial=0.0))
    scale = a_max / (1.0 - c)
    D, M, coef, k = A.copy(), P.copy(), c, 0
    N = M if form.Q is None else form.Q.copy()
    err = coef * scale
    while err > tol:
        closed = _rank_one_tail(A, M, N, coef, c, a_max, tol)
        if closed is not None:
            D, err = D + closed[0], closed[1]
            k += 1
            if report:
                report(k, err)
            break
        D = D + coef * ((M @ D) @ N.T)
        k += 1
        coef = coef * coef
        err = coef * scale
        if err > tol:
            M = M @ M
            N = M if one_sided else N @ N
        if report:
            report(k, err)
    if one_sided:
        D = (D + D.T) / 2
    b = bound(c, form.evaluate(D), returned="at")
    if report:
        report(k, b.error)
    return D, k, b.error, b.floor


def _rank_one_tail(
    A: np.ndarray, M: np.ndarray, N: np.ndarray, coef: float, c: float, a_max: float, tol: float
) -> tuple[float, float] | None:
    """Close the Neumann tail ``sum_{j >= K} c^j P^j A Q^jT`` when ``M = P^K`` and ``N = Q^K`` have
    (nearly) equal rows (``N is M`` when ``Q = P``).

    With ``M = 1 mu^T + E`` and ``N = 1 nu^T + F`` (``mu``, ``nu`` the mean rows, ``e_p``, ``e_q`` the
    largest L1 norms of a row of E and of F), every later power is ``P^j = 1 mu^T + E_j`` with
    ``||E_j||_inf <= e_p`` (likewise for Q), so each tail term is ``mu^T A nu`` up to
    ``(e_p + e_q + e_p e_q) max|A|`` (``2 eps + eps^2`` when Q = P) and the tail is the constant
    ``mu^T A nu c^K / (1 - c)`` up to ``c^K / (1 - c)`` times that. Fast-mixing chains
    (dense random MDPs) reach this after a few squarings instead of the ~8 the series needs.
    Returns ``(tail constant, error bound)`` when the bound is within ``tol``, else None.
    """
    mu = M.mean(axis=0)
    e_p = float(np.max(np.abs(M - mu).sum(axis=1)))
    if N is M:
        nu, e_q = mu, e_p
    else:
        nu = N.mean(axis=0)
        e_q = float(np.max(np.abs(N - nu).sum(axis=1)))
    bound = coef / (1.0 - c) * (e_p + e_q + e_p * e_q) * a_max
    if bound > tol:
        return None
    return float(mu @ A @ nu) * coef / (1.0 - c), bound


# ------------------------------------------------------ linear pair systems
#: Pair systems up to this many unknowns are factorised directly.
DIRECT_LIMIT = 800
#: Larger pair systems whose Gauss-Seidel solve should take at most this many visits of a stored entry
#: (the entries of T times the sweeps that shrink a residual by 1e-12 at rate c) are solved by compiled
#: Gauss-Seidel sweeps inside the refinement; the others by GMRES, whose interpreted iterations cost more
#: than the sweeps on such systems, unless the sweeps prove fast on them (:data:`GAUSS_SEIDEL_STALE`).
GAUSS_SEIDEL_WORK = 2e7
#: Sweeps per refinement pass of the Gauss-Seidel solve (each shrinks the residual by at least c).
GAUSS_SEIDEL_PASS = 200
#: A larger system whose rows read at most this share of their mass before it is updated in a sweep
#: (:func:`_stale_share`; about a half on random models, a quarter on chains built by exploring a
#: program's states) is first given :data:`GAUSS_SEIDEL_PROBE` + 1 sweeps: where they shrink the change
#: by at least :data:`GAUSS_SEIDEL_RATE` per sweep, Gauss-Seidel solves it; elsewhere GMRES.
GAUSS_SEIDEL_STALE = 0.35
GAUSS_SEIDEL_PROBE = 3
GAUSS_SEIDEL_RATE = 0.4


def solve_fixed_point(
    T: sp.csr_matrix,
    b: np.ndarray,
    c: float,
    x0: np.ndarray | None = None,
    tol: float = 1e-12,
    product: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, float]:
    """Solve ``x = b + c T x`` (T substochastic) and bound the error.

    Iterative refinement: the residual ``r = b + cTx - x`` is always computed in
    float64 with the exact T, and each pass adds an approximate solution of
    ``(I - cT) dx = r``: a sparse LU factorisation for small systems, compiled Gauss-Seidel
    sweeps for mid-size ones and for larger ones on which the sweeps prove fast
    (:func:`_gauss_seidel_step`), GMRES on a float32 copy of T for the others (half the
    memory traffic; the float64 residuals still drive the error to ``tol``). Returns ``(x, bound)`` with
    ``||x - x*|| <= ||b + cTx - x|| / (1 - c) = bound``. ``product``, when given, is the
    exact float64 ``x -> T x`` and T itself may be a float32 copy (used for the inner solves only).
    A dense T (the small-problem path) is inverted by :func:`bisimkit.kernels.dense_inverse`.
    """
    N = len(b)
    if N == 0:
        return np.zeros(0), 0.0
    if isinstance(T, np.ndarray):
        inverse = dense_inverse(np.eye(N) - c * T)
        return _refine(product_residual(lambda x: T @ x, b, c), lambda r: inverse @ r, b, c, x0, tol, direct=True)
    # start-up cost: scipy.sparse.linalg loads in ~0.3 s, which a small problem's solve does without
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    direct = N <= DIRECT_LIMIT and product is None
    sweeps = math.log(1e-12) / math.log(c) if 0.0 < c < 1.0 else math.inf
    if direct:
        step = spla.splu((sp.identity(N, format="csr") - c * T).tocsc()).solve
    elif product is None and T.nnz * sweeps <= GAUSS_SEIDEL_WORK:
        step = _gauss_seidel_step(T, c, tol)
    else:
        A = None

        def step(r):
            nonlocal A
            if A is None:  # the float32 copy, made once GMRES is chosen
                T32 = matvec(T, np.float32)
                A = spla.LinearOperator((N, N), matvec=lambda v: v - np.float32(c) * T32(v), dtype=np.float32)
            scale = float(np.max(np.abs(r)))
            dx, _ = spla.gmres(A, (r / scale).astype(np.float32), rtol=1e-5, atol=0.0, restart=20, maxiter=10)
            return dx.astype(np.float64) * scale

        if product is None and _stale_share(T) <= GAUSS_SEIDEL_STALE:
            step = _gauss_seidel_step(T, c, tol, fallback=step)
    residual_of = residual(T, b, c) if product is None else product_residual(product, b, c)
    return _refine(residual_of, step, b, c, x0, tol, direct=direct)


def _stale_share(T: sp.csr_matrix) -> float:
    """The share of T's mass a last-to-first Gauss-Seidel sweep reads before updating it: the entries
    ``T[p, q]`` with ``q < p``."""
    stale, total = lower_mass(T.indptr, T.indices, T.data)
    return float(stale) / float(total) if total > 0.0 else 0.0


def _gauss_seidel_step(
    T: sp.csr_matrix, c: float, tol: float, fallback: Callable[[np.ndarray], np.ndarray] | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """``r -> dx``, an approximate solve of ``(I - cT) dx = r`` by at most :data:`GAUSS_SEIDEL_PASS` compiled
    Gauss-Seidel sweeps from 0. The sweeps stop once none changes dx by more than
    ``max(1e-15 max|r|, tol (1 - c) / 2)``: after a sweep, row i's equation is off only by the later
    changes of the entries it reads, at most c times the largest change, so the new residual's bound
    ``c · change / (1 - c)`` is then within ``tol`` (the caller's refinement checks it either way).

    The sweeps visit the unknowns from the last to the first: a model built by exploring a program's
    states numbers most successors after their state, so most entries a row reads are already updated.
    With a ``fallback`` (the GMRES step of a larger system), the first call measures the sweeps' rate: one
    sweep, then :data:`GAUSS_SEIDEL_PROBE` more; where the largest change shrank by less than
    :data:`GAUSS_SEIDEL_RATE` per sweep, that call returns the dx so far and every later call is the
    fallback's."""
    T = T.tocsr()
    N = T.shape[0]
    members = np.arange(N - 1, -1, -1, dtype=np.int64)
    indptr, indices, data = T.indptr, T.indices, np.multiply(T.data, c, dtype=np.float64)  # c T, sharing T's index
    local = np.full(N, -1, dtype=np.int64)
    probe = fallback is not None
    slow = False

    def step(r: np.ndarray) -> np.ndarray:
        nonlocal probe, slow
        if slow and fallback is not None:
            return fallback(r)
        dx = np.zeros((N, 1))
        rhs = np.ascontiguousarray(r, dtype=np.float64).reshape(N, 1)
        target = max(1e-15 * float(np.max(np.abs(r), initial=0.0)), 0.5 * tol * (1.0 - c))
        if probe:
            probe = False
            arrays = (members, indptr, indices, data, rhs, dx, local)
            _, first = scc_gauss_seidel(*arrays, 1, target)
            if first > target:
                runs, last = scc_gauss_seidel(*arrays, GAUSS_SEIDEL_PROBE, target)
                if last > target and last > first * GAUSS_SEIDEL_RATE**runs:
                    slow = True
                    return dx[:, 0]
        scc_gauss_seidel(members, indptr, indices, data, rhs, dx, local, GAUSS_SEIDEL_PASS, target)
        return dx[:, 0]

    return step


def _refine(
    residual_of: Callable[[np.ndarray], tuple[np.ndarray, float]],
    step: Callable[[np.ndarray], np.ndarray],
    b: np.ndarray,
    c: float,
    x0: np.ndarray | None,
    tol: float,
    direct: bool = False,
) -> tuple[np.ndarray, float]:
    """The iterative refinement of :func:`solve_fixed_point` with the exact residual ``residual_of(x)``, the pair
    ``(r, max |r|)`` of ``r = b + cTx - x``, and the approximate solve ``step`` of ``(I - cT) dx = r``. With a
    factorised system (``direct``) a pass costs one product and one back substitution, so it refines past
    ``tol`` for as long as a pass at least halves the residual: the solution is then as accurate as float64
    makes it, and so is the certificate the caller computes from it, instead of stopping wherever ``tol`` is
    first met."""
    x = np.zeros(len(b)) if x0 is None else np.asarray(x0, dtype=np.float64).copy()
    bound = np.inf
    for _ in range(60):
        r, largest = residual_of(x)
        previous, bound = bound, largest / (1.0 - c)
        if bound <= tol and (not direct or bound == 0.0 or bound > 0.5 * previous):
            break
        x = x + step(r)
    return x, bound


def pair_linear_solve(form: PairLinearForm, tol: float, report=None) -> tuple[np.ndarray, int, float, float]:
    """Exact solve of a linear pair operator, returning F(x) with its certificate and floor."""
    c = form.discount
    x, _ = solve_fixed_point(form.T, form.b, c, tol=tol * 0.1, product=form.product)
    ev = form.evaluate(x)
    b = bound(c, ev)
    if report:
        report(1, b.error)
    return ev.value, 1, b.error, b.floor


# ----------------------------------------------------- coupling iteration
def coupling_iteration(
    terms: TransportTerms, tol: float, report=None, max_rounds: int | None = None
) -> tuple[np.ndarray, int, float, bool, float]:
    """Policy iteration over optimal couplings for a W1 operator (see module doc).

    Early rounds solve their linear systems only as accurately as the current
    certificate warrants (modified policy iteration); the certificate itself is
    always computed from F(x) - x with what F's evaluation is unsure of (:func:`bound`).
    Returns ``(F(x), rounds, certified_error, converged, floor)``. The transport solver warm-starts from
    the previous round's bases, so a coupling that is still optimal is kept
    as it is, and the new plans can be adopted wholesale without cycling on ties.
    """
    c = terms.discount
    pairs = terms.pairs
    n_rows = len(terms.row_pair)
    b = np.bincount(terms.row_pair, weights=terms.row_weight * terms.row_const, minlength=len(pairs))
    # Round 0: couplings optimal for the one-step distances F(0).
    x = terms.combine(terms.row_const)
    D0 = pairs.to_matrix(x)
    terms.seed_line(D0)  # optimal bases when F(0) is a line metric (pi: |Rpi(s) - Rpi(t)|)
    _, plans = terms.costs(D0, plans=True, reuse=True)  # one set of plan arrays for every round
    choice = None
    rounds = max_rounds if max_rounds is not None else 100
    err, lin_tol, fx = math.inf, 1e-3, x
    for k in range(1, rounds + 1):
        lin_tol = max(tol * 1e-3, min(lin_tol, 1e-3 * err))
        if terms.reduce == "sum":
            T = pair_system(pairs, terms.row_pair, terms.row_weight, plans, n_rows)
            plans = None  # the system holds what is needed; free the cells before the next plans
            x, _ = solve_fixed_point(T, b, c, x0=fx, tol=lin_tol)
            T = None
        else:
            x, choice = _solve_max_player(terms, plans, fx, choice, lin_tol)
            plans = None
        ev = terms.evaluate(x, plans=True, reuse=True)
        plans, fx = ev.plans, ev.value
        cert = bound(c, ev)
        previous, err = err, cert.error
        if report:
            report(k, err)
        if err <= tol:
            return fx, k, err, True, cert.floor
        if not cert.reachable(tol) and err <= 2.0 * cert.floor:
            return fx, k, err, False, cert.floor  # only the floor is left above tol
        if err > 0.5 * previous and lin_tol <= tol * 1e-3:
            break  # no longer contracting: finish with value iteration
    plans = None
    x, its, err, ok, floor = value_iteration(terms.evaluate, fx, c, tol, report)
    return x, k + its, err, ok, floor


def _solve_max_player(
    terms: TransportTerms, plans: Cells, x: np.ndarray, choice: np.ndarray | None, tol: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact value of ``max_r (const_r + c T_r x)`` per pair with fixed couplings:
    policy iteration over the row (action) chosen at each pair."""
    c, pairs = terms.discount, terms.pairs
    n_rows = len(terms.row_pair)
    ones = np.ones(n_rows)

    def solve_rows(choice: np.ndarray, x: np.ndarray) -> np.ndarray:
        chosen = np.zeros(n_rows, dtype=bool)
        chosen[choice] = True
        T = pair_system(pairs, terms.row_pair, ones, plans.select(chosen[plans.problem]), n_rows)
        return solve_fixed_point(T, terms.row_const[choice], c, x0=x, tol=tol * 1e-3)[0]

    return max_row_iteration(terms, x, choice, solve_rows, lambda x: plan_costs(plans, pairs.to_matrix(x), n_rows))


def max_row_iteration(
    terms: TransportTerms,
    x: np.ndarray,
    choice: np.ndarray | None,
    solve_rows: Callable[[np.ndarray, np.ndarray], np.ndarray],
    row_costs: Callable[[np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """``(x, choice)``: the value ``x = max_r (const_r + c cost_r(x))`` per pair of fixed couplings, by policy
    iteration over the row each pair takes. ``solve_rows(choice, x)`` is the exact value of the rows
    ``choice`` (one per pair; ``x`` a first guess), ``row_costs(x)`` every row's coupling cost under ``x``;
    ``choice`` None starts from the best rows under ``x``. A row is switched only when it gains more than
    1e-12 relative, and on ties the pair keeps its first row."""
    c = terms.discount
    starts = terms.row_starts()

    def best(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = terms.row_const + c * row_costs(x)
        return q, np.lexsort((-q, terms.row_pair))[starts]  # the largest row of each pair, the first on ties

    if choice is None:
        choice = best(x)[1]
    for _ in range(10_000):
        # Evaluate the current choice with the current couplings, then improve it.
        x = solve_rows(choice, x)
        q, top = best(x)
        switch = q[top] - q[choice] > 1e-12 * (1.0 + np.abs(q[choice]))
        if not switch.any():
            return x, choice
        choice = np.where(switch, top, choice)
    raise RuntimeError("policy iteration over the rows did not terminate")  # pragma: no cover
