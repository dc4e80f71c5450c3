"""``bisimkit.solve_between``: the distances between the states of two MDPs.

Put two MDPs A and B side by side (their disjoint union, :func:`disjoint_union`). Each
one's transitions stay inside it, so for s in A and t in B every operator of
``docs/operators.md`` except the derived ``mico-reduced`` reads the distances only on
cross pairs: its transport problems (or couplings, or products) move ``P_A(s, .)``,
which lives on A, onto ``P_B(t, .)``, which lives on B. The cross block of the union's
fixed point is therefore the fixed point of the operator restricted to the n_A x n_B
cross pairs, and the within blocks never need to be computed
(``docs/operators.md#two-mdps``). The pipeline:

    check -> cross form -> engine method -> certificate -> :class:`BetweenSolution`

* **check** (:func:`check_between`): the metric has a closed cross block, both MDPs have what it
  needs (a policy; the same actions where it pairs actions; the same action coordinates where
  it compares mean actions), one discount, and a ground between the two state sets;
* **cross form**: the operator's own computable form (:meth:`bisimkit.operators.Operator.build`) over
  the cross pairs (:meth:`bisimkit.pairs.PairSpace.cross`, an n_A x n_B distance matrix): A's laws
  for the first state of each pair, B's for the second, read where they are (no union of the two is
  built; a two-sided :class:`~bisimkit.forms.SteinForm`, ``Q`` B's ``P_pi``, for mico and
  psm-sampled). Cross pairs never meet the diagonal, so the forms take ``zero_diagonal=False`` (no
  identical-law shortcut and no shared-mass reduction, whose closure argument needs a pseudometric
  on one state set);
* **engine**: :func:`bisimkit.engine.solve_form`, the method ``solve`` would use (coupling
  iteration, value iteration, a sparse linear solve, or Smith's doubling for the two-sided Stein
  equation ``U = A + c P_A U P_B^T``), with the certificate of ``docs/operators.md#the-certificate``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from .engine import (
    DEFAULT_TOL,
    PrecisionWarning,
    ProgressCallback,
    Solution,
    _Reporter,
    check_run_options,
    precision_note,
    solve_form,
)
from .errors import InputError
from .ground import Ground, ground_label, read_ground_file
from .kernels import small_path
from .mdp import FiniteMDP
from .memory import check_memory_between
from .operators import BETWEEN_METRICS, operator, operator_form
from .pairs import PairSpace
from .solvers import small_solve, solve_cells

__all__ = ["BETWEEN_METRICS", "BetweenSolution", "check_between", "cross_pairs", "disjoint_union", "solve_between"]


@dataclass
class BetweenSolution(Solution):
    """The n_A x n_B distances ``distances[s, t] = d(s in A, t in B)`` with their certificate.

    ``initial_distance`` is ``d(initial_a, initial_b)`` when both MDPs declare an
    ``initial_state`` (None otherwise); the certificate covers it like every entry.
    """

    initial_states: tuple[int, int] | None = None
    initial_distance: float | None = None

    def to_json(self) -> dict:
        """The ``--out FILE.json`` object: :meth:`Solution.to_json` plus the shape and the initial pair."""
        out = super().to_json()
        out["shape"] = list(self.distances.shape)
        out["initial_states"] = None if self.initial_states is None else list(self.initial_states)
        out["initial_distance"] = self.initial_distance
        return out


def small_between(mdp_a: FiniteMDP, mdp_b: FiniteMDP, metric: str, method: str) -> bool:
    """Whether the cross pairs of A and B are few enough for the small-problem path (numpy only,
    :mod:`bisimkit.kernels`): :func:`bisimkit.solvers.small_solve`'s rule on their transport cells, each
    pair's problem between a law of A and one of B (:func:`bisimkit.solvers.solve_cells`)."""
    return small_solve(mdp_a, metric, method, solve_cells(mdp_a, mdp_b))


def solve_between(
    mdp_a: FiniteMDP,
    mdp_b: FiniteMDP,
    metric: str,
    ground: Ground | None = None,
    tol: float = DEFAULT_TOL,
    method: str = "auto",
    progress: ProgressCallback | None = None,
    max_iterations: int | None = None,
    force: bool = False,
) -> BetweenSolution:
    """The distances between the states of ``mdp_a`` and those of ``mdp_b`` under ``metric``,
    to certified error ``tol``: the cross block of :func:`bisimkit.solve` on their disjoint union,
    computed on the n_A x n_B cross pairs only.

    Parameters
    ----------
    metric : one of :data:`BETWEEN_METRICS` (every operator; ``mico-reduced`` is refused: it needs
        each MDP's own mico self-distances, which lie outside the cross block).
    ground : eps family only: ``"reward"`` (default, ``|R_A(s,a) - R_B(t,b)|``), ``"policy"``
        (``||abar_A(s) - abar_B(t)||_1``), or a ground between the two state-action sets: an
        (n_A*m) x (n_B*m) matrix (or n_A x m x n_B x m) indexed by ``s*m + a`` and ``t*m + b``, or a
        file holding one; it must be finite and non-negative.
    tol, method, progress, max_iterations, force : as for :func:`bisimkit.solve`; the memory estimate
        is :func:`bisimkit.memory.estimate_between`'s.

    Bad input (a metric without a closed cross block, different discounts, different actions where
    the metric pairs them, a ground of the wrong shape) raises :class:`~bisimkit.errors.InputError`
    naming the parameter before anything is computed.
    """
    g = check_between(mdp_a, mdp_b, metric, ground, tol, method, max_iterations, progress)
    if not force:
        check_memory_between(mdp_a, mdp_b, metric, method)
    start = time.perf_counter()
    with small_path(small_between(mdp_a, mdp_b, metric, method)):
        form = cross_form(mdp_a, mdp_b, metric, g)
        report = _Reporter(progress, start)
        found = solve_form(form, metric, tol, method, report, max_iterations)
    name, its, err, ok, floor = (
        f"{found.method}, cross pairs only",
        found.iterations,
        found.certified_error,
        found.converged,
        found.floor,
    )
    D = np.ascontiguousarray(found.distances)
    initial = None
    if mdp_a.initial_state is not None and mdp_b.initial_state is not None:
        initial = (mdp_a.initial_state, mdp_b.initial_state)
    sol = BetweenSolution(
        metric=metric,
        distances=D,
        iterations=its,
        certified_error=float(err),
        seconds=time.perf_counter() - start,
        method=name,
        tolerance=tol,
        ground=None if g is None else ground_label(g),
        converged=bool(ok and err <= tol),
        history=report.history,
        history_seconds=report.seconds,
        floor=float(floor),
        initial_states=initial,
        initial_distance=None if initial is None else float(D[initial]),
    )
    if not sol.converged and sol.floor > tol:
        warnings.warn(precision_note(metric, tol, sol.floor), PrecisionWarning, stacklevel=2)
    return sol


# ------------------------------------------------------------------- check
def check_between(
    a: FiniteMDP,
    b: FiniteMDP,
    metric: str,
    ground: Ground | None,
    tol: float,
    method: str,
    max_iterations: int | None = None,
    progress: ProgressCallback | None = None,
) -> Ground | None:
    """Stage *check*: refuse what has no closed cross block or does not fit (an :class:`InputError`
    naming ``metric``, ``method``, ``tol``, ``mdp_a``, ``mdp_b`` or ``ground``); returns the ground."""
    info = operator(metric)
    if not info.between:
        raise InputError(
            f"'{metric}' has no closed cross block between two MDPs: it needs each MDP's own mico "
            f"self-distances U(s, s), which lie outside it (solve 'mico' between the two, and each "
            f"MDP's own 'mico'); choose from {', '.join(BETWEEN_METRICS)}",
            param="metric",
        )
    check_run_options(method, tol, max_iterations, progress)
    for mdp, param in ((a, "mdp_a"), (b, "mdp_b")):
        if not isinstance(mdp, FiniteMDP):
            raise InputError(f"expected a FiniteMDP, got {type(mdp).__name__}", param=param)
    if a.discount != b.discount:
        raise InputError(
            f"the second MDP's discount {b.discount:g} differs from the first's {a.discount:g}; "
            f"distances between two MDPs need one discount",
            param="mdp_b",
        )
    if info.uses_policy:
        for mdp, param in ((a, "mdp_a"), (b, "mdp_b")):
            if mdp.policy is None:
                raise InputError(f"metric '{metric}' needs a policy, and this MDP has none", param=param)
    if info.pairs_actions is not None and a.n_actions != b.n_actions:
        raise InputError(
            f"the second MDP has {b.n_actions} actions and the first {a.n_actions}; metric '{metric}' "
            f"pairs {info.pairs_actions}, so both MDPs need the same actions",
            param="mdp_b",
        )
    if info.compares_mean_actions(ground) and a.action_values.shape[1] != b.action_values.shape[1]:
        raise InputError(
            f"the second MDP's action_values have {b.action_values.shape[1]} coordinates and the "
            f"first's {a.action_values.shape[1]}; metric '{metric}' compares mean actions "
            f"||abar_A(s) - abar_B(t)||_1, so they need the same coordinates",
            param="mdp_b",
        )
    if info.state_order:
        for mdp, param in ((a, "mdp_a"), (b, "mdp_b")):
            if mdp.state_shape is not None and len(mdp.state_shape) > 1:
                raise InputError(
                    f"the grid state_shape {list(mdp.state_shape)}: between two MDPs eps-bar's "
                    f"entangled next-state coupling is taken in index order, which is not the grid's "
                    f"coordinate-wise coupling (save the MDP without state_shape to use index order)",
                    param=param,
                )
    return _cross_ground(a, b, ground) if info.uses_ground else None


def _cross_ground(a: FiniteMDP, b: FiniteMDP, ground: Ground | None) -> Ground:
    """``reward``, ``policy``, or a checked (n_A*m) x (n_B*m) ground between the two state-action sets."""
    if ground is None:
        return "reward"
    source = "ground"
    if isinstance(ground, str):
        if ground in ("reward", "policy"):
            return ground
        source = ground
        ground = read_ground_file(ground)
    (na, m), nb = a.rewards.shape, b.n_states
    where = "" if source == "ground" else f"{source}: "  # the parameter already names an in-memory ground
    try:
        G = np.asarray(ground, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{where}not a rectangular array of numbers", param="ground") from None
    if G.shape == (na, m, nb, m):
        G = G.reshape(na * m, nb * m)
    if G.shape != (na * m, nb * m):
        raise InputError(
            f"{where}a ground between the two MDPs has shape (n_A*m, n_B*m) = {(na * m, nb * m)} "
            f"or (n_A, m, n_B, m) = {(na, m, nb, m)}, got {G.shape}",
            param="ground",
        )
    for bad, what in ((~np.isfinite(G), "is not finite"), (G < 0, "is negative")):
        found = np.argwhere(bad)
        if len(found):
            x, y = found[0]
            raise InputError(
                f"{source}[s={x // m}, a={x % m}, t={y // m}, b={y % m}] = {G[x, y]:.6g} {what}", param="ground"
            )
    return G


# -------------------------------------------------------------- cross forms
def cross_pairs(n_a: int, n_b: int) -> PairSpace:
    """The n_A * n_B pairs ``(s, t)``, s a state of A and t one of B, pair ``s * n_B + t``."""
    return PairSpace.cross(n_a, n_b)


def cross_form(a: FiniteMDP, b: FiniteMDP, metric: str, ground: Ground | None = "reward"):
    """The computable form of ``metric`` over the cross pairs of ``a`` and ``b`` (checked input): the operator's
    own form (:meth:`bisimkit.operators.Operator.build`) with A's laws for the first state of each pair and
    B's for the second, with the bounds on what its evaluation is unsure of from both MDPs' round-off."""
    return operator_form(
        a,
        metric,
        "reward" if ground is None else ground,
        cross_pairs(a.n_states, b.n_states),
        zero_diagonal=False,
        other=b,
    )


# ------------------------------------------------------------------- union
def disjoint_union(mdp_a: FiniteMDP, mdp_b: FiniteMDP) -> FiniteMDP:
    """The MDP with A's states, then B's (B's state t is ``n_A + t``), each moving within its own part.

    Both need the same actions (count and ``action_values``), the same discount, and a policy
    on both or on neither; grids (``state_shape``) and initial states are not carried over.
    ``solve(disjoint_union(a, b), metric).distances[:n_A, n_A:]`` is what :func:`solve_between`
    computes without the two within blocks.
    """
    if mdp_a.n_actions != mdp_b.n_actions or not np.array_equal(mdp_a.action_values, mdp_b.action_values):
        raise InputError(
            "the disjoint union needs the same actions (count and action_values) in both MDPs", param="mdp_b"
        )
    if mdp_a.discount != mdp_b.discount:
        raise InputError(f"discount {mdp_b.discount:g} differs from the first MDP's {mdp_a.discount:g}", param="mdp_b")
    if (mdp_a.policy is None) != (mdp_b.policy is None):
        raise InputError("the disjoint union needs a policy on both MDPs or on neither", param="mdp_b")
    na, nb, m = mdp_a.n_states, mdp_b.n_states, mdp_a.n_actions
    P = np.zeros((na + nb, m, na + nb))
    P[:na, :, :na] = mdp_a.transitions
    P[na:, :, na:] = mdp_b.transitions
    R = np.vstack([mdp_a.rewards, mdp_b.rewards])
    pi = None if mdp_a.policy is None or mdp_b.policy is None else np.vstack([mdp_a.policy, mdp_b.policy])
    return FiniteMDP(P, R, mdp_a.discount, pi, mdp_a.action_values, name=f"{mdp_a.label} + {mdp_b.label}")
