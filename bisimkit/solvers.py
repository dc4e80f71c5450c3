"""``bisimkit.solve``: a short dispatcher over named stages around the engine.

    check -> relabel -> reduce -> quotient -> engine

The metric's name is looked up once, in the registry (:func:`bisimkit.operators.operator`); every
stage after that asks the :class:`~bisimkit.operators.Operator` what it supports, and the settings
travel as one :class:`SolveOptions`.

* **check** (:func:`_checked`): the metric, method and tolerance, and the ground resolved; then the
  solve's memory estimate against what the process may use (:mod:`bisimkit.memory`, ``force`` overrides);
* **relabel** (:func:`_relabelled`): a state or action order other than the index order
  is applied to the MDP, solved there, and the result mapped back (:mod:`bisimkit.order`);
* **reduce** (:func:`_reduced`): a derived operator (mico-reduced) from its base's fixed point;
* **quotient** (:func:`solve_on_quotient`): the operators with a relation of their own are solved on
  the blocks of their largest relation and lifted, when that can be certified (:mod:`bisimkit.quotient`);
* **engine** (:func:`bisimkit.engine.fixed_point`): operator form, method, certificate.

Then :func:`solve` says what the caller should know: a ground term that vanishes
(:class:`ZeroGroundWarning`), a tolerance float64 cannot certify (:class:`PrecisionWarning`).
The certificate and the methods are described in :mod:`bisimkit.engine`.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .engine import (
    DEFAULT_TOL,
    METHODS,
    PrecisionWarning,
    ProgressCallback,
    Solution,
    check_run_options,
    fixed_point,
    precision_note,
    stein_doubling,
)
from .errors import InputError
from .extras import missing_extra
from .forms import SteinForm, stein_a_error
from .ground import Ground, ground_label, resolve_ground, zero_ground_message, zero_ground_note
from .heap import large_solve
from .kernels import problem_cells, small_path, small_problem
from .mdp import FiniteMDP
from .memory import NotEnoughMemory, check_memory, check_memory_blocks, estimate_solve
from .operators import (
    LABELLED_CHAIN_METRICS,
    QUERY_METRICS,
    TORCH_METRICS,
    Operator,
    operator,
    point_mass_transitions,
    stein_form,
)
from .order import OrderSpec, resolve_order
from .pairs import check_state_pairs
from .quotient import DEVIATION_SHARE, RELATION_ATOL, quotient as find_quotient
from .relations import relation_labels
from .roundoff import U as U_ROUND, gamma

__all__ = [
    "DEFAULT_TOL",
    "METHODS",
    "PrecisionWarning",
    "ProgressCallback",
    "Solution",
    "SolveOptions",
    "ZeroGroundWarning",
    "solve",
    "solve_on_quotient",
]


class ZeroGroundWarning(UserWarning):
    """The operator's ground term is 0 for every pair, so its fixed point is identically 0."""


#: The engines of :func:`solve`'s ``backend``.
BACKENDS = ("numpy", "torch")


@dataclass(frozen=True)
class SolveOptions:
    """How to solve (every field a keyword of :func:`solve`).

    tol : certified sup-norm error to reach (default 1e-9).
    method : ``auto``, ``exact`` or ``vi`` (:mod:`bisimkit.engine`).
    progress : called as ``progress(iteration, certified_error, elapsed)``.
    max_iterations : cap on value-iteration sweeps (default: enough for ``tol``).
    full_diagonal : solve for d(s, s) too instead of using d(s, s) = 0 for the
        pseudometric operators (slower; this is how claim C1 tests the zero diagonal).
    order, action_order : the order of states (on a grid: of the coordinates) and of
        actions that the entangled coupling follows: ``"index"`` (default),
        ``"class-contiguous"`` (states only) or a permutation / permutation file
        (:mod:`bisimkit.order`). Only eps-bar depends on the state order, and only the
        eps family on the action order; the solution records both.
    quotient : for the operators with a relation of their own (pi, psm, bisim, eps; not with
        ``full_diagonal``), first find the largest relation of the metric's kind by partition
        refinement and, when it merges states, solve on its blocks and lift the result
        (:mod:`bisimkit.quotient`); the certificate covers the tolerance the blocks were found with,
        and the MDP itself is solved when nothing merges or the lift cannot be certified within
        ``tol``. ``False`` always solves the MDP itself.
    backend, device : ``"numpy"`` (default) or ``"torch"``: Smith's doubling with torch products
        on ``device`` (``"cpu"``, the default, ``"cuda"``, ``"cuda:N"``), for the Stein-form
        operators :data:`~bisimkit.operators.TORCH_METRICS` only (:mod:`bisimkit.engine_torch`; the
        same certificate).
    force : solve even when the memory estimate (:mod:`bisimkit.memory`) says the solve will not fit;
        without it such a solve stops before anything is allocated, with
        :class:`bisimkit.memory.NotEnoughMemory` naming the estimate, the limit and what would fit.
    discount : the labelled-chain distance (``lmc``) only: c in (0, 1], overriding the MDP's own discount
        (:func:`bisimkit.lmc.lmc_solution`).
    pairs : the ``(s, t)`` state pairs to solve (default all), for ``lmc`` and for the operators of
        :data:`~bisimkit.operators.QUERY_METRICS` (bisim, pi, psm, eps, eps-avg): only the pairs the queried ones reach
        through their successors are solved (:mod:`bisimkit.query`), and the result's ``distances`` are the
        ``(q,)`` values of the queried pairs.
    """

    tol: float = DEFAULT_TOL
    method: str = "auto"
    progress: ProgressCallback | None = None
    max_iterations: int | None = None
    full_diagonal: bool = False
    order: OrderSpec = "index"
    action_order: OrderSpec = "index"
    quotient: bool = True
    backend: str = "numpy"
    device: str | None = None
    force: bool = False
    discount: float | None = None
    pairs: object = None


_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(SolveOptions))


def solve(
    mdp: FiniteMDP,
    metric: str,
    ground: Ground | None = None,
    tol: float = DEFAULT_TOL,
    options: SolveOptions | None = None,
    **settings,
) -> Solution:
    """The fixed point of operator ``metric`` on ``mdp`` to certified error ``tol``.

    Parameters
    ----------
    metric : a name from :data:`bisimkit.operators.METRIC_NAMES`.
    ground : ``"reward"`` (default), ``"policy"``, a file path or an (n*m) x (n*m)
        matrix; used by the eps family. For ``lmc``: an (n, n) ground in [0, 1] (or a file) in place
        of the labels.
    tol : certified sup-norm error to reach (default 1e-9).
    options, settings : a :class:`SolveOptions`, and/or its fields as keywords (``method``,
        ``progress``, ``max_iterations``, ``full_diagonal``, ``order``, ``action_order``,
        ``quotient``, ``backend``, ``device``, ``force``; ``discount`` for ``lmc``; ``pairs`` for ``lmc`` and
        the metrics of :data:`~bisimkit.operators.QUERY_METRICS`), which
        override it.
    """
    unknown = sorted(set(settings) - set(_OPTION_NAMES))
    if unknown:
        raise TypeError(
            f"solve() got an unexpected keyword argument '{unknown[0]}' (the settings are {', '.join(_OPTION_NAMES)})"
        )
    opts = dataclasses.replace(options or SolveOptions(), tol=tol, **settings)
    op = operator(metric)
    if op.kind == "labelled-chain":
        return _labelled_chain(mdp, op, ground, opts)
    if opts.discount is not None:
        raise InputError(
            f"applies to the labelled-chain distance only ({', '.join(LABELLED_CHAIN_METRICS)}); "
            f"'{op.name}' is solved at the MDP's own discount",
            param="discount",
        )
    if opts.pairs is not None:
        return _queried_pairs(mdp, op, ground, opts)
    g = _checked(mdp, op, ground, opts)
    _checked_backend(mdp, op, opts)
    blocks_only = False if opts.force else _fits_in_memory(mdp, op, g, opts)
    zero = zero_ground_note(mdp, op, g)
    n = mdp.n_states
    with small_path(small_solve(mdp, metric, opts.method)), large_solve(n * (n - 1) // 2):
        sol = _pipeline(mdp, op, g, opts, blocks_only)
    if zero is not None:
        message = zero_ground_message(metric, *zero, float(np.max(sol.distances, initial=0.0)), sol.certified_error)
        if message:
            warnings.warn(message, ZeroGroundWarning, stacklevel=2)
    if not sol.converged and sol.floor > opts.tol:
        warnings.warn(precision_note(metric, opts.tol, sol.floor), PrecisionWarning, stacklevel=2)
    return sol


#: The settings of :class:`SolveOptions` that only the engine's all-pairs solve takes, with their defaults: the
#: labelled-chain distance and queried pairs have solvers of their own and refuse other values.
ENGINE_SETTINGS = {
    "method": ("auto", "exact"),
    "max_iterations": (None,),
    "full_diagonal": (False,),
    "order": ("index",),
    "action_order": ("index",),
    "backend": ("numpy",),
    "device": (None,),
}


def _queried_pairs(mdp: FiniteMDP, op: Operator, ground, opts: SolveOptions) -> Solution:
    """Only the queried pairs and those they reach (:mod:`bisimkit.query`), for the operators that allow it."""
    if not op.queries:
        raise InputError(
            f"'{op.name}' solves every pair; queried pairs are solved on the fly for "
            f"{', '.join(QUERY_METRICS + LABELLED_CHAIN_METRICS)}",
            param="pairs",
        )
    for name, allowed in ENGINE_SETTINGS.items():
        if not any(getattr(opts, name) == value for value in allowed):
            raise InputError(
                f"{getattr(opts, name)!r} does not apply to queried pairs (solved by on-the-fly coupling iteration)",
                param=name,
            )
    from .query import query_solution  # the on-the-fly solve: loaded when pairs are queried

    g = _checked(mdp, op, ground, opts)
    if op.uses_policy:
        mdp.require_policy(f"metric '{op.name}'")
    budget = None if not opts.force else 2**62
    sol = None
    if opts.quotient and op.relation is not None and not (op.uses_policy and mdp.policy is None):
        sol = _queried_on_quotient(mdp, op, g, opts, budget)
    if sol is None:
        sol = query_solution(mdp, op, g, opts.pairs, opts.tol, max_memory=budget, progress=opts.progress)
    if not sol.converged and sol.floor > opts.tol:
        warnings.warn(precision_note(op.name, opts.tol, sol.floor), PrecisionWarning, stacklevel=3)
    return sol


def _queried_on_quotient(mdp: FiniteMDP, op: Operator, g, opts: SolveOptions, budget):
    """The queried pairs solved between the blocks of the largest relation, when it merges states and its lift
    can be certified a priori within ``tol`` (``docs/operators.md#quotient-first``): the lift adds its a-priori
    bound, taken with the bound ``C / (1 - c)`` on every distance, since only some pairs are solved."""
    from .query import query_solution  # the on-the-fly solve: loaded when pairs are queried

    queries = check_state_pairs(opts.pairs, mdp.n_states)
    start = time.perf_counter()
    q = find_quotient(mdp, op.name, g if g is not None else "reward", RELATION_ATOL)
    if q is None:
        return None
    a_priori = q.a_priori_error(opts.tol)
    values = None
    if op.value_bracketed:  # d(u, v) <= V(u) + V(v) bounds every distance more tightly than C / (1 - c)
        from .query import policy_values  # the on-the-fly solve: loaded when pairs are queried

        values = V, v_error = policy_values(q.mdp, opts.tol * 1e-3)
        a_priori = min(a_priori, q.lift_error(2 * (float(np.max(V, initial=0.0)) + v_error) + 3 * opts.tol))
    if not a_priori <= DEVIATION_SHARE * opts.tol:
        return None
    found = time.perf_counter() - start
    sol = query_solution(
        q.mdp,
        op,
        q.ground,
        q.labels[queries],
        opts.tol - a_priori,
        max_memory=budget,
        progress=opts.progress,
        values=values,
    )
    sol.certified_error += a_priori
    sol.converged = sol.converged and sol.certified_error <= opts.tol
    sol.tolerance = opts.tol
    sol.history = [h + a_priori for h in sol.history]
    sol.history_seconds = [t + found for t in sol.history_seconds]
    sol.seconds += found
    sol.pairs = queries
    assert sol.lower is not None and sol.upper is not None  # set by query_solution
    sol.lower = np.maximum(sol.lower - a_priori, 0.0)
    sol.upper = sol.upper + a_priori
    sol.method = f"{sol.method}, between the blocks of the largest relation ({q.n_blocks} of {mdp.n_states} states)"
    return sol


def _labelled_chain(mdp: FiniteMDP, op: Operator, ground, opts: SolveOptions) -> Solution:
    """The labelled-chain distance (:mod:`bisimkit.lmc`): its own algorithm, with the settings it takes."""
    for name, allowed in ENGINE_SETTINGS.items():
        if not any(getattr(opts, name) == value for value in allowed):
            raise InputError(
                f"{getattr(opts, name)!r} does not apply to '{op.name}' (solved by refinement, the pair "
                f"graph and policy iteration with a certified bracket)",
                param=name,
            )
    check_run_options(opts.method, opts.tol, opts.max_iterations, opts.progress)
    # start-up cost: the labelled-chain solver (and scipy's sparse graphs) load only for this operator
    from .lmc import lmc_solution

    sol = lmc_solution(mdp, opts.discount, ground, opts.pairs, opts.tol, opts.force)
    if not sol.converged and sol.floor > opts.tol:
        warnings.warn(precision_note(op.name, opts.tol, sol.floor), PrecisionWarning, stacklevel=3)
    return sol


def small_solve(mdp: FiniteMDP, metric: str, method: str, cells: float | None = None) -> bool:
    """Whether this solve takes the small-problem path (numpy only, :mod:`bisimkit.kernels`): its transport
    work, ``cells`` (default its MDP's, :func:`solve_cells`), is small
    (:data:`bisimkit.kernels.SMALL_PROBLEM_CELLS`), counted more for the methods that sweep (value
    iteration, and W2, which has no other)."""
    sweeps = method == "vi" or not operator(metric).exact
    cells = solve_cells(mdp) if cells is None else cells
    return small_problem(cells, sweeps)


def solve_cells(mdp: FiniteMDP, other: FiniteMDP | None = None) -> float:
    """:func:`bisimkit.kernels.problem_cells` of a solve on ``mdp`` (or between ``mdp`` and ``other``): its pairs,
    up to ``m_A + m_B - 1`` rows per pair (an entangled coupling of two policies), problems between the largest
    policy mixtures (m times the largest support of a ``P(s, a)``, at most n), read from the supports."""
    b = mdp if other is None else other
    pairs = mdp.n_states * (mdp.n_states - 1) // 2 if other is None else mdp.n_states * b.n_states
    rows = max(mdp.n_actions + b.n_actions - 1, 1)

    def mixture(x: FiniteMDP) -> int:
        return min(int(np.max(x.supports, initial=1)) * x.n_actions, x.n_states)

    return problem_cells(pairs, rows, mixture(mdp), mixture(b))


def _checked(mdp: FiniteMDP, op: Operator, ground: Ground | None, opts: SolveOptions) -> Ground | None:
    """Stage *check*: the arguments are valid; returns the resolved ground (None if the metric has none)."""
    if not isinstance(mdp, FiniteMDP):
        hint = (
            " (a Gaussian model's distances: bisimkit.gaussian.solve_pairs)"
            if type(mdp).__module__.startswith("bisimkit.gaussian")
            else ""
        )
        raise InputError(f"expected a FiniteMDP, got {type(mdp).__name__}{hint}", param="mdp")
    check_run_options(opts.method, opts.tol, opts.max_iterations, opts.progress)
    return resolve_ground(mdp, ground) if op.uses_ground else None


def _fits_in_memory(mdp: FiniteMDP, op: Operator, g: Ground | None, opts: SolveOptions) -> bool:
    """Stage *check*, memory: nothing (False) when the MDP's own solve fits; True when only the solve on the
    blocks of the largest relation fits (the quotient path, which the pipeline must then take); otherwise
    :class:`~bisimkit.memory.NotEnoughMemory`, before any work but the relation's refinement."""
    try:
        check_memory(mdp, op.name, opts.method, opts.full_diagonal, opts.quotient)
        return False
    except NotEnoughMemory:
        plain = _is_index(opts.order) and _is_index(opts.action_order) and op.base is None
        if not (plain and _quotient_applies(mdp, op, opts)):
            raise
        assert op.relation is not None  # _quotient_applies
        labels = relation_labels(mdp, op.relation, g if g is not None else "reward", RELATION_ATOL)
        blocks = int(np.max(labels)) + 1
        if blocks == mdp.n_states:
            raise
        check_memory_blocks(mdp, op.name, blocks, opts.method)
        return True


def _quotient_applies(mdp: FiniteMDP, op: Operator, opts: SolveOptions) -> bool:
    """Whether the quotient stage runs: asked for, a metric with a relation, no full diagonal, and the policy
    the metric needs."""
    return (
        opts.quotient
        and op.relation is not None
        and not opts.full_diagonal
        and opts.backend == "numpy"
        and not (op.uses_policy and mdp.policy is None)
    )


def _pipeline(
    mdp: FiniteMDP, op: Operator, g: Ground | None, opts: SolveOptions, blocks_only: bool = False
) -> Solution:
    """Stages relabel -> reduce -> quotient -> engine, each handing the rest to the next; ``blocks_only``: only
    the quotient's solve fits in memory, so a quotient that cannot be certified ends the solve."""
    if not (_is_index(opts.order) and _is_index(opts.action_order)):
        return _relabelled(mdp, op, g, opts)
    if op.base is not None:
        return _reduced(mdp, op, opts)
    if opts.quotient and op.relation is not None and not opts.full_diagonal:
        sol = solve_on_quotient(mdp, op.name, g, opts.tol, opts.method, opts.progress, opts.max_iterations)
        if sol is not None:
            return sol
    if blocks_only:
        estimate = estimate_solve(mdp, op.name, opts.method, opts.full_diagonal)
        raise NotEnoughMemory(
            f"memory: {op.name} fits on the blocks of its largest relation but their lift cannot be certified "
            f"within tol = {opts.tol:g}, and the {mdp.n_states} states themselves need about {estimate}"
        )
    if opts.backend == "torch":
        from .engine_torch import fixed_point_torch  # the optional torch extra, loaded only for backend="torch"

        return fixed_point_torch(mdp, op.name, opts.tol, opts.device, opts.progress)
    return fixed_point(mdp, op.name, g, opts.tol, opts.method, opts.progress, opts.max_iterations, opts.full_diagonal)


def _checked_backend(mdp: FiniteMDP, op: Operator, opts: SolveOptions) -> None:
    """Stage *check*, the engine: ``backend`` and ``device`` are valid for this metric and machine."""
    backend, device = opts.backend, opts.device
    if backend not in BACKENDS:
        raise InputError(f"unknown backend '{backend}' (choose from {', '.join(BACKENDS)})", param="backend")
    if backend == "numpy":
        if device is not None:
            raise InputError(f"'{device}' needs backend 'torch' (the numpy backend runs on the CPU)", param="device")
        return
    if not op.torch:
        raise InputError(f"'torch' solves {', '.join(TORCH_METRICS)} only, not '{op.name}'", param="backend")
    if opts.method == "vi":
        raise InputError("'torch' runs Smith's doubling only; method 'vi' needs backend 'numpy'", param="backend")
    if op.kind == "transport" and not point_mass_transitions(mdp):
        raise InputError(
            f"'torch' solves {op.name} only when every P(s, a) with pi(a|s) > 0 is a point mass "
            "(a Stein equation then); this MDP's are not",
            param="backend",
        )
    try:
        from .engine_torch import resolve_device  # the optional torch extra, loaded only for backend="torch"
    except ModuleNotFoundError as exc:
        raise InputError(missing_extra(exc) or str(exc), param="backend") from None
    resolve_device(device)


def _is_index(order: OrderSpec) -> bool:
    return isinstance(order, str) and order == "index"


def _relabelled(mdp: FiniteMDP, op: Operator, g: Ground | None, opts: SolveOptions) -> Solution:
    """Stage *relabel*: solve with the states and actions put in the requested order, then map back."""
    start = time.perf_counter()
    relabel = resolve_order(mdp, opts.order, opts.action_order, g if g is not None else "reward")
    ground = relabel.relabel_ground(g, mdp.n_actions) if g is not None else None
    sol = _pipeline(relabel.relabel(mdp), op, ground, dataclasses.replace(opts, order="index", action_order="index"))
    sol.distances = relabel.restore(sol.distances)
    sol.order, sol.action_order = relabel.label, relabel.action_label
    sol.ground = None if g is None else ground_label(g)
    sol.seconds = time.perf_counter() - start
    return sol


def _reduced(mdp: FiniteMDP, op: Operator, opts: SolveOptions) -> Solution:
    """Stage *reduce*: ``mico-reduced`` ``D = L(U)``, ``L(U)(s, t) = U(s, t) - U(s, s)/2 - U(t, t)/2``, from the
    mico fixed point U, refined and certified in its own scale by :func:`reduced_fixed_point` (numpy
    backend); with the torch backend ``|D - D*| <= 2 err(U)``."""
    start = time.perf_counter()
    assert op.base is not None  # a reduced metric names the metric it reduces
    sol = _pipeline(mdp, operator(op.base), None, dataclasses.replace(opts, tol=opts.tol / 2))
    U = sol.distances
    diag = np.diag(U)
    sol.distances = U - diag[:, None] / 2 - diag[None, :] / 2
    sol.metric, sol.tolerance = op.name, opts.tol
    sol.certified_error, sol.floor = 2 * sol.certified_error, 2 * sol.floor
    if opts.backend == "numpy":
        D, bound, floor = reduced_fixed_point(mdp, U)
        if bound < sol.certified_error:
            sol.distances, sol.certified_error, sol.floor = D, bound, floor
    sol.converged = sol.certified_error <= opts.tol
    sol.seconds = time.perf_counter() - start
    return sol


def reduced_fixed_point(mdp: FiniteMDP, U: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(D, bound, floor)``: the mico-reduced distances from an approximate mico fixed point U, refined in
    their own scale, with a certified bound on ``max |D - D*|`` and its part the evaluation's error makes up.

    The reduced distances solve an equation of their own: with ``L`` as above and the mico operator
    ``U = A + c P U P^T``, ``L`` removes every matrix of the form ``v 1^T + 1 v^T`` and P's rows sum to 1, so
    ``D* = L(U*)`` satisfies ``D = L(A) + c L(P D P^T)`` (A has a zero diagonal, ``L(A) = A``). For any
    zero-diagonal D with residual ``rho = A + c L(P D P^T) - D``, ``D - D* = -sum_j c^j L(P^j rho P^jT)``;
    ``|L(M)| <= spread(M) = max M - min M`` and averaging by P does not widen a spread, so

        ``|D - D*| <= spread(rho) / (1 - c)``.

    U, and so ``L(U)``, is only as accurate as U's own scale allows, which for mico can be thousands of
    times the reduced distances (the self-distances U(s, s) are large). One correction fixes that: the
    error ``E = D - D*`` solves the same equation with ``-rho`` for A, so ``E = L(V)`` with ``V = -rho + c P V
    P^T``, a Stein equation at the scale of rho, solved by Smith's doubling. The bound is then computed at
    the corrected D, from its residual's spread plus twice the residual's error bound e (A's own error,
    the products' ``gamma(2n)`` relative to ``P |D| P^T`` and the laws' relative errors, on the three entries
    L combines, and the few roundings after them)."""
    form = stein_form(mdp, "mico")
    c = mdp.discount
    D = U - np.diag(U)[:, None] / 2 - np.diag(U)[None, :] / 2
    rho, error = reduced_residual(form, D)
    for _ in range(2):  # each correction gains many digits; a second one mops up the first's own round-off
        spread = float(np.max(rho, initial=0.0) - np.min(rho, initial=0.0))
        if spread <= 4 * error:
            break  # the residual is the evaluation's own noise: nothing left to correct
        V, _, _, _ = stein_doubling(SteinForm(-rho, form.P, c), spread * 1e-6, None)
        D = D + (V - np.diag(V)[:, None] / 2 - np.diag(V)[None, :] / 2)
        rho, error = reduced_residual(form, D)
    spread = float(np.max(rho, initial=0.0) - np.min(rho, initial=0.0))
    bound = (spread + 2 * error) / (1 - c) * (1 + 8 * U_ROUND)
    return D, bound, 2 * error / (1 - c) * (1 + 8 * U_ROUND)


def reduced_residual(form: SteinForm, D: np.ndarray) -> tuple[np.ndarray, float]:
    """``(rho, e)``: the computed residual ``A + c L(P D P^T) - D`` of the reduced mico equation
    (:func:`reduced_fixed_point`) and a bound on the distance of every entry to the exact residual."""
    P, c = form.P, form.discount
    n = D.shape[0]
    Z = P @ D @ P.T
    z = np.diag(Z)
    G = form.A + c * (Z - z[:, None] / 2 - z[None, :] / 2)
    rho = G - D
    S = Z if float(np.min(D, initial=0.0)) >= 0 else P @ np.abs(D) @ P.T
    s = np.diag(S)
    kappa = form.P_relative if form.P_relative is not None else np.zeros(n)
    relative = 2 * gamma(n) + gamma(n) ** 2 + 2 * gamma(2) + 2 * float(np.max(kappa, initial=0.0))
    a_error = stein_a_error(form.A, form.A_error)
    error = (
        a_error
        + c * relative * (1 + 4 * U_ROUND) * (S + s[:, None] / 2 + s[None, :] / 2)
        + gamma(3) * (np.abs(G) + np.abs(rho))
    )
    return rho, float(np.max(error, initial=0.0)) * (1 + 4 * U_ROUND)


def solve_on_quotient(
    mdp: FiniteMDP,
    metric: str,
    g: Ground | None,
    tol: float,
    method: str = "auto",
    progress: ProgressCallback | None = None,
    max_iterations: int | None = None,
    atol: float = RELATION_ATOL,
) -> Solution | None:
    """Stage *quotient*: the lifted, certified solution, or None when nothing merges or the blocks
    deviate too much to certify within ``tol`` (``docs/operators.md#quotient-first``); the
    pipeline then solves ``mdp`` itself."""
    start = time.perf_counter()
    q = find_quotient(mdp, metric, g if g is not None else "reward", atol)
    if q is None:
        return None
    a_priori = q.a_priori_error(tol)
    if not a_priori <= DEVIATION_SHARE * tol:
        return None
    sol = fixed_point(q.mdp, metric, q.ground, tol - a_priori, method, progress, max_iterations)
    return q.lift_solution(sol, tol, time.perf_counter() - start - sol.seconds)
