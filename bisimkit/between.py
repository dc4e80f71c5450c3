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
* **cross form**: the operator's computable form over the cross pairs
  (:class:`CrossTerms` for the transport operators, a two-sided
  :class:`~bisimkit.operators.SteinForm` (``Q`` is B's ``P_pi``) for mico and psm-sampled, a
  :class:`~bisimkit.operators.PairLinearForm` for eps-bar). The pairs are
  those of the union's numbering (B's states after A's), so the transport, coupling and
  pair-system machinery of the engine applies as it is; cross pairs never meet the
  diagonal, so the forms take ``zero_diagonal=False`` (no identical-law shortcut and no
  shared-mass reduction, whose closure argument needs a pseudometric on one state set);
* **engine**: :func:`bisimkit.engine.solve_form`, the method ``solve`` would use (coupling
  iteration, value iteration, a sparse linear solve, or Smith's doubling for the two-sided Stein
  equation ``U = A + c P_A U P_B^T``), with the certificate of ``docs/operators.md#the-certificate``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np

from .compiled import eps_bar_matrix
from .couplings import entangled_cells, histogram_rows
from .engine import (DEFAULT_TOL, PrecisionWarning, ProgressCallback, Solution, _Reporter, check_run_options,
                     precision_note, solve_form)
from .errors import InputError
from .ground import Ground, ground_label, read_ground_file
from .kernels import DenseRows, between_cells, small_path
from .mdp import FiniteMDP
from .memory import check_memory_between
from .operators import (COMPILED_EPS_BAR_PAIRS, PairLinearForm, SteinForm, TransportTerms, coupling_errors,
                        ground_reach, ground_terms, mean_action_terms, mean_reward_terms, operator_info, pair_system,
                        state_rows, stein_constant)
from .roundoff import U, UnionRoundOff, gamma, gamma_array
from .pairs import PairSpace
from .solvers import small_solve
from .transport import seed_line_starts

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["BETWEEN_METRICS", "BetweenSolution", "CrossTerms", "check_between", "cross_pairs",
           "disjoint_union", "solve_between"]

#: Metrics whose cross block is closed (``docs/operators.md#two-mdps``); ``mico-reduced`` is not.
BETWEEN_METRICS = ("bisim", "pi", "psm", "psm-sampled", "mico", "dbc", "dbc-sampled", "eps", "eps-avg", "eps-bar")
#: Metrics that pair an action of A with an action of B: bisim pairs action a with action a, the
#: eps family couples the two policies over the action indices in order.
PAIRED_ACTIONS = ("bisim", "eps", "eps-avg", "eps-bar")
#: How each metric with paired actions pairs them, for the message that refuses unequal action sets.
_PAIRING = {"bisim": "action a with action a", "eps": "actions by the entangled coupling of the two policies",
            "eps-avg": "actions by the entangled coupling of the two policies",
            "eps-bar": "actions by the entangled coupling of the two policies"}


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
    pair's problem between a law of A and one of B (:func:`bisimkit.kernels.between_cells`)."""
    return small_solve(mdp_a, metric, method, between_cells(mdp_a.transitions, mdp_b.transitions))


def solve_between(mdp_a: FiniteMDP, mdp_b: FiniteMDP, metric: str, ground: Ground | None = None,
                  tol: float = DEFAULT_TOL, method: str = "auto", progress: ProgressCallback | None = None,
                  max_iterations: int | None = None, force: bool = False) -> BetweenSolution:
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
        D, its, err, ok, floor, name = solve_form(form, metric, tol, method, report, max_iterations)
    name = f"{name}, cross pairs only"
    if not isinstance(form, SteinForm):
        D = D[:mdp_a.n_states, mdp_a.n_states:]  # the union-numbered matrix's cross block
    D = np.ascontiguousarray(D)
    initial = None
    if mdp_a.initial_state is not None and mdp_b.initial_state is not None:
        initial = (mdp_a.initial_state, mdp_b.initial_state)
    sol = BetweenSolution(metric=metric, distances=D, iterations=its, certified_error=float(err),
                          seconds=time.perf_counter() - start, method=name, tolerance=tol,
                          ground=None if g is None else ground_label(g), converged=bool(ok and err <= tol),
                          history=report.history, history_seconds=report.seconds, floor=float(floor),
                          initial_states=initial,
                          initial_distance=None if initial is None else float(D[initial]))
    if not sol.converged and sol.floor > tol:
        warnings.warn(precision_note(metric, tol, sol.floor), PrecisionWarning, stacklevel=2)
    return sol


# ------------------------------------------------------------------- check
def check_between(a: FiniteMDP, b: FiniteMDP, metric: str, ground: Ground | None, tol: float,
                  method: str, max_iterations: int | None = None,
                  progress: ProgressCallback | None = None) -> Ground | None:
    """Stage *check*: refuse what has no closed cross block or does not fit (an :class:`InputError`
    naming ``metric``, ``method``, ``tol``, ``mdp_a``, ``mdp_b`` or ``ground``); returns the ground."""
    info = operator_info(metric)
    if metric not in BETWEEN_METRICS:
        raise InputError(f"'{metric}' has no closed cross block between two MDPs: it needs each MDP's own mico "
                         f"self-distances U(s, s), which lie outside it (solve 'mico' between the two, and each "
                         f"MDP's own 'mico'); choose from {', '.join(BETWEEN_METRICS)}", param="metric")
    check_run_options(method, tol, max_iterations, progress)
    for mdp, param in ((a, "mdp_a"), (b, "mdp_b")):
        if not isinstance(mdp, FiniteMDP):
            raise InputError(f"expected a FiniteMDP, got {type(mdp).__name__}", param=param)
    if a.discount != b.discount:
        raise InputError(f"the second MDP's discount {b.discount:g} differs from the first's {a.discount:g}; "
                         f"distances between two MDPs need one discount", param="mdp_b")
    if info.uses_policy:
        for mdp, param in ((a, "mdp_a"), (b, "mdp_b")):
            if mdp.policy is None:
                raise InputError(f"metric '{metric}' needs a policy, and this MDP has none", param=param)
    if metric in PAIRED_ACTIONS and a.n_actions != b.n_actions:
        raise InputError(f"the second MDP has {b.n_actions} actions and the first {a.n_actions}; metric '{metric}' pairs "
                         f"{_PAIRING[metric]}, so both MDPs need the same actions", param="mdp_b")
    policy_ground = info.uses_ground and isinstance(ground, str) and ground == "policy"
    if (metric in ("psm", "psm-sampled") or policy_ground) and a.action_values.shape[1] != b.action_values.shape[1]:
        raise InputError(f"the second MDP's action_values have {b.action_values.shape[1]} coordinates and the "
                         f"first's {a.action_values.shape[1]}; metric '{metric}' compares mean actions "
                         f"||abar_A(s) - abar_B(t)||_1, so they need the same coordinates", param="mdp_b")
    if metric == "eps-bar":
        for mdp, param in ((a, "mdp_a"), (b, "mdp_b")):
            if mdp.state_shape is not None and len(mdp.state_shape) > 1:
                raise InputError(f"the grid state_shape {list(mdp.state_shape)}: between two MDPs eps-bar's "
                                 f"entangled next-state coupling is taken in index order, which is not the grid's "
                                 f"coordinate-wise coupling (save the MDP without state_shape to use index order)",
                                 param=param)
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
        raise InputError(f"{where}a ground between the two MDPs has shape (n_A*m, n_B*m) = {(na * m, nb * m)} "
                         f"or (n_A, m, n_B, m) = {(na, m, nb, m)}, got {G.shape}", param="ground")
    for bad, what in ((~np.isfinite(G), "is not finite"), (G < 0, "is negative")):
        found = np.argwhere(bad)
        if len(found):
            x, y = found[0]
            raise InputError(f"{source}[s={x // m}, a={x % m}, t={y // m}, b={y % m}] = {G[x, y]:.6g} {what}",
                             param="ground")
    return G


# -------------------------------------------------------------- cross forms
def cross_pairs(n_a: int, n_b: int) -> PairSpace:
    """The n_A * n_B pairs (s, n_A + t) of the union's numbering, pair ``s * n_B + t``."""
    s = np.repeat(np.arange(n_a, dtype=np.int64), n_b)
    t = n_a + np.tile(np.arange(n_b, dtype=np.int64), n_a)
    return PairSpace(n_a + n_b, diagonal=False, s=s, t=t)


@dataclass
class CrossTerms(TransportTerms):
    """:class:`~bisimkit.operators.TransportTerms` over cross pairs.

    ``line_key`` (over the union's states), when given, makes the one-step distances
    ``|h(s) - h(t)|`` on every cross pair (pi: ``h = R_pi``), so the first round's plans are
    the monotone couplings along ``h`` (optimal under a line cost), as ``solve`` seeds them.
    """

    line_key: np.ndarray | None = None

    def seed_line(self, D: np.ndarray) -> None:
        """Seed the first round from monotone couplings along ``line_key`` when ``D`` is its line cost."""
        h = self.line_key
        if self.p != 1 or h is None or not len(self.pairs):
            return
        x = self.pairs.from_matrix(D)
        line = np.abs(h[self.pairs.s] - h[self.pairs.t])
        if np.allclose(x, line, rtol=0.0, atol=1e-12 * (1.0 + float(np.max(np.abs(h))))):
            seed_line_starts(self.dists, self.row_src, self.dists, self.row_dst, h, self.warm)


def cross_form(a: FiniteMDP, b: FiniteMDP, metric: str, ground: Ground | None = "reward"):
    """The computable form of ``metric`` over the cross pairs of ``a`` and ``b`` (checked input), with the
    bounds on what its evaluation is unsure of, from both MDPs' round-off (:mod:`bisimkit.roundoff`)."""
    g = "reward" if ground is None else ground
    if metric in ("mico", "psm-sampled"):
        ra, rb = a.roundoff, b.roundoff
        if metric == "mico":
            A, parts = stein_constant(ra.reward_pi, ra.reward_pi_rest, ra.reward_pi_bound, rb.reward_pi,
                                      rb.reward_pi_rest, rb.reward_pi_bound)
        else:
            A, parts = stein_constant(ra.mean_action, ra.mean_action_rest, ra.mean_action_bound, rb.mean_action,
                                      rb.mean_action_rest, rb.mean_action_bound)
        return SteinForm(A, np.array(a.transition_pi), a.discount, Q=np.array(b.transition_pi), A_error=parts,
                         P_relative=ra.pi_relative, Q_relative=rb.pi_relative)
    pairs = cross_pairs(a.n_states, b.n_states)
    return _eps_bar_form(a, b, g, pairs) if metric == "eps-bar" else _transport_terms(a, b, metric, g, pairs)


def _l1_cross(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``||X[s] - Y[t]||_1`` for every s, t, one coordinate at a time."""
    out = np.zeros((X.shape[0], Y.shape[0]))
    for k in range(X.shape[1]):
        out += np.abs(X[:, None, k] - Y[None, :, k])
    return out


def _ground_values(a: FiniteMDP, b: FiniteMDP, ground: Ground, s, i, t, j) -> np.ndarray:
    """``G(s, i, t, j)`` between a state-action pair of A and one of B."""
    if isinstance(ground, str):
        if ground == "reward":
            return np.abs(a.rewards[s, i] - b.rewards[t, j])
        return np.abs(a.mean_action[s] - b.mean_action[t]).sum(axis=-1)
    m = a.n_actions
    return ground[s * m + i, t * m + j]


def _joint_rows(X: sp.csr_matrix, Y: sp.csr_matrix) -> sp.csr_matrix:
    """A's rows over A's states, then B's rows over B's states shifted past A's: the union's numbering
    (numpy :class:`~bisimkit.kernels.DenseRows` on the small-problem path)."""
    if isinstance(X, DenseRows):
        joint = np.zeros((X.shape[0] + Y.shape[0], X.shape[1] + Y.shape[1]))
        joint[:X.shape[0], :X.shape[1]] = X.toarray()
        joint[X.shape[0]:, X.shape[1]:] = Y.toarray()
        return DenseRows(joint)
    import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

    return sp.block_diag((X, Y), format="csr")


def _cross_ground_terms(a: FiniteMDP, b: FiniteMDP, ground: Ground, ro, S: np.ndarray, T: np.ndarray, ge):
    """``(G, G_error, reach)`` on the action cells ``ge`` of the cross pairs (A's states ``S``, B's ``T``):
    the ground values, their errors, and per pair the largest ground term over the action pairs
    (:func:`bisimkit.operators.ground_reach`), with ``ro`` the union's round-off."""
    na = a.n_states
    s, t = S[ge.problem], T[ge.problem]
    G, G_error = ground_terms(lambda c: _ground_values(a, b, ground, s, c.i, t, c.j), ground, ro, S, na + T, ge)
    matrix_max = 0.0 if isinstance(ground, str) else float(np.max(ground, initial=0.0))
    return G, G_error, ground_reach(ground, ro, S, na + T, ge, G, G_error, len(S), matrix_max)


def _transport_terms(a: FiniteMDP, b: FiniteMDP, metric: str, ground: Ground, pairs: PairSpace) -> CrossTerms:
    na, c = a.n_states, a.discount
    S, T = pairs.s, pairs.t - na  # each MDP's own state index
    k = len(pairs)
    ro = UnionRoundOff(a.roundoff, b.roundoff)
    if metric in ("pi", "dbc", "psm"):
        if metric == "psm":
            const, const_error = mean_action_terms(ro, pairs.s, pairs.t)
            key = np.concatenate([a.mean_action[:, 0], b.mean_action[:, 0]]) if a.action_values.shape[1] == 1 else None
        else:
            const, const_error = mean_reward_terms(ro, pairs.s, pairs.t)
            key = np.concatenate([a.reward_pi, b.reward_pi])
        rows = _joint_rows(a.transition_pi_rows, b.transition_pi_rows)
        return CrossTerms(pairs, np.arange(k), np.ones(k), const, S, na + T, rows, "sum",
                          2 if metric == "dbc" else 1, c, False, row_const_error=const_error,
                          law_error=ro.pi_law_error, line_key=key)
    ma, mb = a.n_actions, b.n_actions
    rows = _joint_rows(a.transition_rows, b.transition_rows)
    if metric == "bisim":
        row_pair = np.repeat(np.arange(k), ma)
        act = np.tile(np.arange(ma), k)
        s, t = S[row_pair], T[row_pair]
        const = np.abs(a.rewards[s, act] - b.rewards[t, act])
        return CrossTerms(pairs, row_pair, np.ones(len(row_pair)), const, s * ma + act, na * ma + t * mb + act,
                          rows, "max", 1, c, False, row_const_error=U * const, law_error=ro.transition_law_error)
    if metric in ("eps", "eps-avg"):
        ge = entangled_cells(histogram_rows(a.policy), S, histogram_rows(b.policy), T)
        s, t = S[ge.problem], T[ge.problem]
        G, G_error, reach = _cross_ground_terms(a, b, ground, ro, S, T, ge)
        coupling = coupling_errors(ro, pairs.s, pairs.t)
        if metric == "eps":
            width = max(ma, mb)
            by_state = np.vstack([state_rows(na, ma, 0, width), state_rows(b.n_states, mb, na * ma, width)])
            return CrossTerms(pairs, ge.problem, ge.mass, G, s * ma + ge.i, na * ma + t * mb + ge.j, rows, "sum",
                              1, c, False, row_const_error=G_error, law_error=ro.transition_law_error,
                              pair_coupling=coupling, pair_ground_max=reach, state_rows=by_state)
        const = np.bincount(ge.problem, weights=ge.mass * G, minlength=k)
        const_error = (np.bincount(ge.problem, weights=ge.mass * G_error, minlength=k)
                       + gamma_array(np.bincount(ge.problem, minlength=k) + 1) * const)
        rows = _joint_rows(a.transition_pi_rows, b.transition_pi_rows)
        return CrossTerms(pairs, np.arange(k), np.ones(k), const, S, na + T, rows, "sum", 1, c, False,
                          row_const_error=const_error, law_error=ro.pi_law_error, pair_coupling=coupling,
                          pair_ground_max=reach)
    if metric == "dbc-sampled":
        p, i, j = np.nonzero(a.policy[S][:, :, None] * b.policy[T][:, None, :] > 0)
        s, t = S[p], T[p]
        weight = a.policy[s, i] * b.policy[t, j]
        const = np.abs(a.rewards[s, i] - b.rewards[t, j])
        return CrossTerms(pairs, p, weight, const, s * ma + i, na * ma + t * mb + j, rows, "sum", 2, c, False,
                          row_const_error=U * const, law_error=ro.transition_law_error,
                          pair_weight_error=U + ro.policy_defect[pairs.s] + ro.policy_defect[pairs.t])
    raise ValueError(f"'{metric}' has no transport form")  # pragma: no cover - check_between refuses it


def _eps_bar_form(a: FiniteMDP, b: FiniteMDP, ground: Ground, pairs: PairSpace) -> PairLinearForm:
    """eps-bar over the cross pairs: entangled couplings of the two policies and of the next-state
    laws, in index order within each MDP (the union's order keeps both), with the bounds on what its
    evaluation is unsure of."""
    na, m, k = a.n_states, a.n_actions, len(pairs)
    S, T = pairs.s, pairs.t - na
    ro = UnionRoundOff(a.roundoff, b.roundoff)
    pol_a, pol_b = histogram_rows(a.policy), histogram_rows(b.policy)
    const, b_error, reach = np.empty(k), np.empty(k), np.empty(k)
    for lo in range(0, k, 1_000_000):
        hi = min(lo + 1_000_000, k)
        ge = entangled_cells(pol_a, S[lo:hi], pol_b, T[lo:hi])
        G, G_error, reach[lo:hi] = _cross_ground_terms(a, b, ground, ro, S[lo:hi], T[lo:hi], ge)
        const[lo:hi] = np.bincount(ge.problem, weights=ge.mass * G, minlength=hi - lo)
        b_error[lo:hi] = (np.bincount(ge.problem, weights=ge.mass * G_error, minlength=hi - lo)
                          + gamma_array(np.bincount(ge.problem, minlength=hi - lo) + 1) * const[lo:hi])
    rows = _joint_rows(a.transition_rows, b.transition_rows)
    nxt = ro.transition_breakpoints.reshape(-1, m).max(axis=1)
    by_state = np.vstack([state_rows(na, m), state_rows(b.n_states, m, na * m)])
    charges = dict(b_error=b_error, pair_coupling=coupling_errors(ro, pairs.s, pairs.t), pair_ground_max=reach,
                   pair_next=nxt[pairs.s] + nxt[pairs.t], rows=rows, state_rows=by_state)
    if k >= COMPILED_EPS_BAR_PAIRS:
        policy = np.vstack([a.policy, b.policy])
        T_ = eps_bar_matrix(pairs.s, pairs.t, pairs.index, policy, rows, m, k)
        return PairLinearForm(pairs, const, T_, a.discount, **charges)
    ge = entangled_cells(pol_a, S, pol_b, T)
    s, t = S[ge.problem], T[ge.problem]
    nxt_cells = entangled_cells(rows, s * m + ge.i, rows, na * m + t * m + ge.j)
    return PairLinearForm(pairs, const, pair_system(pairs, ge.problem, ge.mass, nxt_cells, len(ge)), a.discount,
                          **charges)


# ------------------------------------------------------------------- union
def disjoint_union(mdp_a: FiniteMDP, mdp_b: FiniteMDP) -> FiniteMDP:
    """The MDP with A's states, then B's (B's state t is ``n_A + t``), each moving within its own part.

    Both need the same actions (count and ``action_values``), the same discount, and a policy
    on both or on neither; grids (``state_shape``) and initial states are not carried over.
    ``solve(disjoint_union(a, b), metric).distances[:n_A, n_A:]`` is what :func:`solve_between`
    computes without the two within blocks.
    """
    if mdp_a.n_actions != mdp_b.n_actions or not np.array_equal(mdp_a.action_values, mdp_b.action_values):
        raise InputError("the disjoint union needs the same actions (count and action_values) in both MDPs",
                         param="mdp_b")
    if mdp_a.discount != mdp_b.discount:
        raise InputError(f"discount {mdp_b.discount:g} differs from the first MDP's {mdp_a.discount:g}",
                         param="mdp_b")
    if (mdp_a.policy is None) != (mdp_b.policy is None):
        raise InputError("the disjoint union needs a policy on both MDPs or on neither", param="mdp_b")
    na, nb, m = mdp_a.n_states, mdp_b.n_states, mdp_a.n_actions
    P = np.zeros((na + nb, m, na + nb))
    P[:na, :, :na] = mdp_a.transitions
    P[na:, :, na:] = mdp_b.transitions
    R = np.vstack([mdp_a.rewards, mdp_b.rewards])
    pi = None if mdp_a.policy is None else np.vstack([mdp_a.policy, mdp_b.policy])
    return FiniteMDP(P, R, mdp_a.discount, pi, mdp_a.action_values, name=f"{mdp_a.label} + {mdp_b.label}")
