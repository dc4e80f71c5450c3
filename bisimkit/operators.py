"""The bisimulation operators of ``docs/operators.md``, in three computable forms.

* :class:`TransportTerms` for the operators built on optimal transport
  (bisim, pi, psm, dbc, dbc-sampled, eps, eps-avg)::

      F(d)(s,t) = reduce over rows r of (s,t) of  const[r] + c * W_p(X[src[r]], X[dst[r]]; d)

  with ``reduce`` a weighted sum or a max (bisim's max over actions).
* :class:`SteinForm` for the independent-coupling operators (mico,
  psm-sampled): ``F(d) = A + c P d P^T``.
* :class:`PairLinearForm` for eps-bar, linear in d through the entangled
  couplings: ``F(d)[pair] = b[pair] + c (T d)[pair]``.

:func:`apply_operator` evaluates any of them on a dense matrix; the solvers in
:mod:`bisimkit.solvers` use the forms directly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from .couplings import Cells, entangled_cells, histogram_rows
from .errors import InputError
from .ground import Ground, ground_values
from .mdp import FiniteMDP
from .pairs import PairSpace
from .pseudometric import metric_closure
from .roundoff import U, MDPRoundOff, UnionRoundOff, gamma, gamma_array, grid_breakpoint_error, pair_differences
from .compiled import eps_bar_counts, eps_bar_matrix, eps_bar_product, pair_system_from_slots
from .kernels import on_small_path
from .transport import WarmStarts, optimal_transport, seed_line_starts, support_maxima

if TYPE_CHECKING:
    import scipy.sparse as sp


#: From these sizes on (pairs for eps-bar, plan cells for the coupling systems), eps-bar and the
#: coupling systems are assembled by compiled code (which pays for its one-time compilation); below
#: them numpy does it.
COMPILED_EPS_BAR_PAIRS = 20_000
COMPILED_PAIR_SYSTEM_CELLS = 500_000
#: From this many pairs eps-bar may store its matrix in float32 only and compute exact products on
#: the fly: it does when the float64 matrix with its float32 copy would take more than
#: EPS_BAR_MEMORY_SHARE of the machine's memory.
EPS_BAR_SINGLE_PAIRS = 1_000_000
EPS_BAR_MEMORY_SHARE = 0.5


def physical_memory() -> float:
    """Bytes of physical memory of this machine."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 16e9


#: Mean support size above which W1 problems drop the shared mass (when d is a metric).
SHARED_MASS_MIN_SUPPORT = 24


@dataclass(frozen=True)
class OperatorInfo:
    """What an operator is and what it needs."""

    name: str
    form: str  # "transport", "stein", "pair-linear" or "derived"
    summary: str
    uses_policy: bool
    uses_ground: bool
    pseudometric: bool  # its fixed point has a zero diagonal and is a pseudometric
    source: str


OPERATORS: dict[str, OperatorInfo] = {info.name: info for info in [
    OperatorInfo("bisim", "transport", "max_a |R(s,a)-R(t,a)| + c W1(P(s,a), P(t,a); d)",
                 False, False, True, "Ferns et al. 2004"),
    OperatorInfo("pi", "transport", "|Rpi(s)-Rpi(t)| + c W1(Ppi(s), Ppi(t); d)",
                 True, False, True, "Castro 2020"),
    OperatorInfo("psm", "transport", "||abar(s)-abar(t)||_1 + c W1(Ppi(s), Ppi(t); d)",
                 True, False, True, "Agarwal et al. 2021; paper Eq. 7"),
    OperatorInfo("psm-sampled", "stein", "||abar(s)-abar(t)||_1 + c sum Ppi(s,s')Ppi(t,t') d(s',t')",
                 True, False, False, "paper's F-hat_PSM in expectation"),
    OperatorInfo("mico", "stein", "|Rpi(s)-Rpi(t)| + c sum Ppi(s,s')Ppi(t,t') d(s',t')",
                 True, False, False, "Castro et al. 2021"),
    OperatorInfo("mico-reduced", "derived", "U(s,t) - U(s,s)/2 - U(t,t)/2, U the mico fixed point",
                 True, False, False, "Castro et al. 2021"),
    OperatorInfo("dbc", "transport", "|Rpi(s)-Rpi(t)| + c W2(Ppi(s), Ppi(t); d)",
                 True, False, True, "Zhang et al. 2020; paper Eq. 5"),
    OperatorInfo("dbc-sampled", "transport",
                 "sum pi(a|s)pi(a'|t) [|R(s,a)-R(t,a')| + c W2(P(s,a), P(t,a'); d)]",
                 True, False, False, "paper's F-hat_DBC in expectation"),
    OperatorInfo("eps", "transport", "sum ge(a,a') [G(s,a,t,a') + c W1(P(s,a), P(t,a'); d)]",
                 True, True, True, "paper Thm. 4.3 (main text)"),
    OperatorInfo("eps-avg", "transport", "sum ge(a,a') G(s,a,t,a') + c W1(Ppi(s), Ppi(t); d)",
                 True, True, True, "paper Thm. 4.3 (appendix proof)"),
    OperatorInfo("eps-bar", "pair-linear",
                 "sum ge(a,a') [G(s,a,t,a') + c sum ge_P(s',t') d(s',t')]",
                 True, True, True, "paper Thm. 4.5"),
]}

METRIC_NAMES = tuple(OPERATORS)
#: The metrics with a ground term between state-action pairs (the ``ground`` argument).
GROUND_METRICS = tuple(name for name, info in OPERATORS.items() if info.uses_ground)


def operator_info(name: str) -> OperatorInfo:
    """The registry entry for ``name``, or an InputError listing the valid names."""
    try:
        return OPERATORS[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown metric '{name}' (choose from {', '.join(METRIC_NAMES)})",
                         param="metric") from None


@dataclass
class Evaluation:
    """One evaluation of an operator, with what it is sure of (``docs/operators.md#the-certificate``).

    ``value`` is the computed ``F(at)`` over the pairs; ``at`` is the point it was evaluated at
    (the argument itself, or its metric closure when the transport problems drop shared mass);
    ``error`` bounds ``max |value - F(at)|``, F the exact operator of the exact MDP: every
    approximation behind the value is charged (transport gaps, laws and one-step terms as
    computed from the MDP, entangled couplings, the round-off of the sums), each from the
    quantities it is computed from. ``plans`` are the transport plans when asked for.
    """

    value: np.ndarray
    at: np.ndarray
    error: float
    plans: Cells | None = None


def state_maxima(X, row_max: np.ndarray, state_rows: np.ndarray) -> np.ndarray:
    """Per state: the largest :func:`support_maxima` over its rows ``X[state_rows[s]]``."""
    return support_maxima(X, row_max)[state_rows].max(axis=1)


def pair_row_max(pairs: PairSpace, x: np.ndarray) -> np.ndarray:
    """The row maxima of the symmetric matrix ``pairs.to_matrix(x)`` (0 on the missing diagonal), from the
    pair vector, without forming the matrix."""
    out = np.zeros(pairs.n)
    if len(x):
        np.maximum.at(out, pairs.s, x)
        np.maximum.at(out, pairs.t, x)
    return out


# --------------------------------------------------------------- transport
@dataclass
class TransportTerms:
    """``F(d)[pair] = reduce_r (const[r] + c W_p(dists[src[r]], dists[dst[r]]; d))``.

    Rows are grouped by pair (contiguous, every pair has at least one row). What the evaluation is
    unsure of (``docs/operators.md#the-certificate``): ``row_const_error`` bounds the error of each
    row's one-step term; ``law_error`` bounds, per row of ``dists``, the total variation between
    the stored law and the exact one; for the entangled operators ``pair_coupling`` bounds, per
    pair, the measure of the uniforms the computed action coupling assigns to another cell than
    the exact one (plus the rounding of its masses), ``pair_ground_max`` the largest ground term
    over the pair's action pairs, and ``state_rows`` lists each state's rows of ``dists`` (when the
    transport part depends on the cell, as in eps); ``pair_weight_error`` is the relative error of
    the rows' weights where they are computed products (dbc-sampled).
    """

    pairs: PairSpace
    row_pair: np.ndarray
    row_weight: np.ndarray
    row_const: np.ndarray
    row_src: np.ndarray
    row_dst: np.ndarray
    dists: sp.csr_matrix
    reduce: str  # "sum" or "max"
    p: int
    discount: float
    zero_diagonal: bool = True  # the distances it acts on have d(s, s) = 0 (identical laws cost 0)
    row_const_error: np.ndarray | None = None
    law_error: np.ndarray | None = None
    pair_coupling: np.ndarray | None = None
    pair_ground_max: np.ndarray | None = None
    state_rows: np.ndarray | None = None
    pair_weight_error: np.ndarray | None = None
    warm: WarmStarts = field(default_factory=WarmStarts, repr=False)  # simplex bases from the last call
    _reduced: tuple | None = field(default=None, repr=False)  # (p - q)+ and (q - p)+ per row
    _reduced_warm: WarmStarts = field(default_factory=WarmStarts, repr=False)
    _dense: bool | None = field(default=None, repr=False)
    _plan_buffers: dict = field(default_factory=dict, repr=False)  # reused plan arrays (coupling iteration)
    _rows_per_pair: np.ndarray | None = field(default=None, repr=False)

    def row_starts(self) -> np.ndarray:
        """Index of the first row of each pair."""
        return np.searchsorted(self.row_pair, np.arange(len(self.pairs)))

    def costs(self, D: np.ndarray, plans: bool = False, reuse: bool = False):
        """Transport values per row under the dense distance ``D`` (and plans); see :meth:`transport`."""
        values, cells, _, _ = self.transport(D, plans, reuse)
        return values, cells

    def transport(self, D: np.ndarray, plans: bool = False, reuse: bool = False):
        """``(values, plans, gaps, at)``: transport values per row, their plans (or None), a bound
        on each value's distance to the exact transport cost between the exact laws under ``at``,
        and the distance matrix ``at`` they are computed for.

        For W1 with large supports, when ``D`` is within 1e-12 (relative) of its metric closure
        (the largest pseudometric below it, :func:`bisimkit.pseudometric.metric_closure`), the
        problems are solved under that closure ``at``: the mass two histograms share stays in
        place at no cost and only ``(p - q)+`` is moved onto ``(q - p)+``
        (Kantorovich-Rubinstein, exact for a pseudometric); the plans then leave out those
        zero-cost diagonal cells. Otherwise ``at`` is ``D`` itself.
        """
        X, src, Y, dst, zero, warm, at, reduced = self._problems(D)
        buffers = None
        if reuse:
            buffers = self._plan_buffers.setdefault(id(warm), [])
        gaps = np.zeros(len(src))
        values, cells = optimal_transport(X, src, Y, dst, at, p=self.p, plans=plans, zero_diagonal=zero, warm=warm,
                                          buffers=buffers, gaps=gaps, marginal=self._marginal_error(reduced))
        if reduced:
            # the closure computed in floating point is a pseudometric up to a factor (1 + u) per triangle
            # step, and rerouting the shared mass of an optimal full plan takes at most n steps
            gaps += gamma(self.pairs.n + 1) * values
        return values, cells, gaps, at

    def _marginal_error(self, reduced: bool) -> np.ndarray | None:
        """Per transport problem: how far its two marginals may be from the exact ones, in total variation
        (for the shared-mass problems, both sides of ``(p - q)+`` and ``(q - p)+`` carry both laws' errors
        and the rounding of the subtraction)."""
        if self.law_error is None:
            return None
        tv = self.law_error[self.row_src] + self.law_error[self.row_dst]
        return 4.0 * tv + 4.0 * U if reduced else tv

    def evaluate(self, x: np.ndarray, plans: bool = False, reuse: bool = False) -> Evaluation:
        """``F`` at the pair vector ``x`` (or at its metric closure, see :meth:`transport`), with the
        bound on its error (class docstring)."""
        D = self.pairs.to_matrix(x)
        values, cells, gaps, at = self.transport(D, plans, reuse)
        point = x if at is D else self.pairs.from_matrix(at)
        c = self.discount
        value = self.combine(self.row_const + c * values)
        row_error = c * gaps
        if self.row_const_error is not None:
            row_error = row_error + self.row_const_error
        size = np.abs(value)
        if self.reduce == "sum":
            # each row value is two rounded operations, weighted (one more; an entangled cell's weight is
            # itself off by u relative) and summed over the pair's rows
            pair_error = np.bincount(self.row_pair, weights=self.row_weight * row_error, minlength=len(self.pairs))
            pair_error = pair_error * (1 + 2 * gamma(self._max_rows())) + gamma_array(self._pair_rows() + 4) * size
            if self.pair_weight_error is not None:
                pair_error = pair_error + self.pair_weight_error * size
        else:
            pair_error = np.maximum.reduceat(row_error, self.row_starts()) + gamma(2) * size
        if self.pair_coupling is not None:
            reach = self.pair_ground_max
            if self.state_rows is not None:
                sm = state_maxima(self.dists, at.max(axis=1, initial=0.0) ** self.p, self.state_rows)
                reach = reach + c * np.minimum(sm[self.pairs.s], sm[self.pairs.t]) ** (1.0 / self.p)
            pair_error = pair_error + self.pair_coupling * reach
        error = float(np.max(pair_error, initial=0.0)) * (1 + 4 * U)
        return Evaluation(value, point, error, cells)

    def _pair_rows(self) -> np.ndarray:
        if self._rows_per_pair is None:
            self._rows_per_pair = np.bincount(self.row_pair, minlength=len(self.pairs))
        return self._rows_per_pair

    def _max_rows(self) -> int:
        return int(np.max(self._pair_rows(), initial=1))

    def _problems(self, D: np.ndarray):
        """``(X, src, Y, dst, zero_diagonal, warm, at, reduced)`` of the transport problems under ``D``:
        the reduced ones (shared mass removed) under D's metric closure when that is within
        round-off of D, else the full histograms under D."""
        closed = metric_closure(D) if self._shared_mass_pays() else None
        if closed is not None and float(np.max(D - closed, initial=0.0)) <= 1e-12 * (1.0 + float(D.max(initial=0.0))):
            if self._reduced is None:
                diff = self.dists[self.row_src] - self.dists[self.row_dst]
                self._reduced = (diff.maximum(0).tocsr(), (-diff).maximum(0).tocsr())
                self._reduced[0].eliminate_zeros()
                self._reduced[1].eliminate_zeros()
            rows = np.arange(len(self.row_src))
            return self._reduced[0], rows, self._reduced[1], rows, False, self._reduced_warm, closed, True
        return self.dists, self.row_src, self.dists, self.row_dst, self.zero_diagonal, self.warm, D, False

    def seed_line(self, D: np.ndarray) -> None:
        """Warm-start the problems under ``D`` from monotone couplings along one coordinate of ``D``:
        the distance to a farthest state (an end point when ``D`` is a line metric such as the
        one-step reward distance, whose optimal plans these then are)."""
        if self.p != 1 or D.shape[0] == 0:
            return
        anchor = int(np.argmax(D[int(np.argmax(D[0]))]))  # two sweeps of "farthest from"
        h = D[:, anchor]
        line = np.allclose(D, np.abs(h[:, None] - h[None, :]), rtol=0.0, atol=1e-12 * (1.0 + float(h.max())))
        if not (line or self._shared_mass_pays()):
            return  # small supports: the greedy start is as good and costs nothing to set up
        X, src, Y, dst, _, warm, _, _ = self._problems(D)
        seed_line_starts(X, src, Y, dst, h, warm)

    def _shared_mass_pays(self) -> bool:
        """The reduction applies (W1, zero diagonal) and supports are large enough to gain."""
        if self.p != 1 or not self.zero_diagonal:
            return False
        if self._dense is None:
            sizes = np.diff(self.dists.indptr)
            self._dense = bool(sizes.mean() > SHARED_MASS_MIN_SUPPORT)
        return self._dense

    def combine(self, row_values: np.ndarray) -> np.ndarray:
        """Reduce per-row values ``const + c * cost`` to one value per pair."""
        if self.reduce == "sum":
            return np.bincount(self.row_pair, weights=self.row_weight * row_values, minlength=len(self.pairs))
        return np.maximum.reduceat(row_values, self.row_starts())

    def apply(self, x: np.ndarray) -> np.ndarray:
        """One application of the operator to the pair vector ``x``."""
        costs, _ = self.costs(self.pairs.to_matrix(x))
        return self.combine(self.row_const + self.discount * costs)


def default_pairs(mdp: FiniteMDP, name: str) -> PairSpace:
    """The unknowns of operator ``name``: pairs s < t for the pseudometrics, s <= t otherwise."""
    return PairSpace(mdp.n_states, diagonal=not OPERATORS[name].pseudometric)


def _policy_averaged_terms(mdp: FiniteMDP, pairs: PairSpace, const: np.ndarray, p: int, zero_diagonal: bool,
                           const_error: np.ndarray) -> TransportTerms:
    """Terms with one transport problem Ppi(s) vs Ppi(t) per pair."""
    k = len(pairs)
    return TransportTerms(pairs, np.arange(k), np.ones(k), const, pairs.s, pairs.t, mdp.transition_pi_rows, "sum", p,
                          mdp.discount, zero_diagonal, row_const_error=const_error,
                          law_error=mdp.roundoff.pi_law_error)


def policy_cells(mdp: FiniteMDP, pairs: PairSpace) -> Cells:
    """Entangled couplings ge of pi(s) and pi(t) for every pair (cells over actions)."""
    return action_cells(mdp, pairs.s, pairs.t)


def action_cells(mdp: FiniteMDP, s: np.ndarray, t: np.ndarray) -> Cells:
    """Entangled couplings of pi(s[k]) and pi(t[k]) (problem k; cells over actions)."""
    pi = histogram_rows(mdp.require_policy("the entangled policy coupling"))
    return entangled_cells(pi, s, pi, t)


# ------------------------------------------------------------ the charges
def mean_reward_terms(ro: MDPRoundOff | UnionRoundOff, s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|Rpi(s) - Rpi(t)|, error)``, the difference taken in twice the working precision
    (:func:`bisimkit.roundoff.pair_differences`)."""
    return pair_differences(ro.reward_pi, ro.reward_pi_rest, ro.reward_pi_bound, s, t)


def mean_action_terms(ro: MDPRoundOff | UnionRoundOff, s: np.ndarray, t: np.ndarray,
                      chunk: int = 1_000_000) -> tuple[np.ndarray, np.ndarray]:
    """``(||abar(s) - abar(t)||_1, error)`` for the pairs ``(s[k], t[k])``, each coordinate's difference in
    twice the working precision (:func:`bisimkit.roundoff.pair_differences`), in chunks to bound memory."""
    const, error = np.empty(len(s)), np.empty(len(s))
    for lo in range(0, len(s), chunk):
        const[lo:lo + chunk], error[lo:lo + chunk] = pair_differences(
            ro.mean_action, ro.mean_action_rest, ro.mean_action_bound, s[lo:lo + chunk], t[lo:lo + chunk])
    return const, error


def ground_terms(mdp_ground, ground: Ground, ro: MDPRoundOff | UnionRoundOff, pair_s: np.ndarray,
                 pair_t: np.ndarray, cells: Cells) -> tuple[np.ndarray, np.ndarray]:
    """``(G, error)`` on the action cells of the pairs ``(pair_s, pair_t)`` (union numbering in ``ro``):
    the reward ground is one rounded subtraction of inputs (``mdp_ground(cells)`` computes it), the policy
    ground the pair's mean-action distance in twice the working precision, a matrix ground its entries
    (the input, exact)."""
    if isinstance(ground, str) and ground == "policy":
        const, error = mean_action_terms(ro, pair_s, pair_t)
        return const[cells.problem], error[cells.problem]
    G = mdp_ground(cells)
    if isinstance(ground, str):
        return G, U * G
    return G, np.zeros(len(G))


def ground_reach(ground: Ground, ro: MDPRoundOff | UnionRoundOff, s: np.ndarray, t: np.ndarray, cells: Cells, G: np.ndarray,
                 G_error: np.ndarray, n_pairs: int, matrix_max: float = 0.0) -> np.ndarray:
    """Per pair: a bound on the ground term over every action pair the two policies use (where a cell of
    the exact coupling may lie that the computed one misses): ``max(|Rhi(s) - Rlo(t)|, |Rhi(t) - Rlo(s)|)``
    for the reward ground, the pair's one value for the policy ground, the matrix's largest entry."""
    if isinstance(ground, str) and ground == "reward":
        return np.maximum(np.abs(ro.reward_high[s] - ro.reward_low[t]), np.abs(ro.reward_high[t] - ro.reward_low[s]))
    if isinstance(ground, str):
        out = np.zeros(n_pairs)
        np.maximum.at(out, cells.problem, G + G_error)
        return out
    return np.full(n_pairs, matrix_max)


def coupling_errors(ro: MDPRoundOff | UnionRoundOff, s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per pair: the measure of the uniforms the computed entangled coupling of pi(s) and pi(t) sends to
    another cell than the exact one (both sides' breakpoint errors). The rounding of its masses, each
    the difference of two computed breakpoints, is relative (u per cell) and charged with the sums."""
    return ro.policy_breakpoints[s] + ro.policy_breakpoints[t]


def state_rows(n: int, m: int, first_row: int = 0, width: int | None = None) -> np.ndarray:
    """The rows ``first_row + s m + a`` of every state's actions, as an (n, width) array (padded by repeating
    the last action when width exceeds m)."""
    width = m if width is None else width
    a = np.minimum(np.arange(width), m - 1)
    return first_row + np.arange(n, dtype=np.int64)[:, None] * m + a[None, :]


def transport_terms(mdp: FiniteMDP, name: str, ground: Ground = "reward", pairs: PairSpace | None = None,
                    zero_diagonal: bool | None = None) -> TransportTerms:
    """The transport form of operator ``name`` on ``mdp``, evaluated on ``pairs``, with what its
    evaluation is unsure of (:class:`TransportTerms`).

    ``zero_diagonal`` says whether the distances it will act on have a zero
    diagonal (default: yes for the pseudometric operators).
    """
    m, c = mdp.n_actions, mdp.discount
    pairs = default_pairs(mdp, name) if pairs is None else pairs
    zero = OPERATORS[name].pseudometric if zero_diagonal is None else zero_diagonal
    S, T = pairs.s, pairs.t
    ro = mdp.roundoff
    if name in ("pi", "dbc"):
        const, const_error = mean_reward_terms(ro, S, T)
        return _policy_averaged_terms(mdp, pairs, const, 1 if name == "pi" else 2, zero, const_error)
    if name == "psm":
        const, const_error = mean_action_terms(ro, S, T)
        return _policy_averaged_terms(mdp, pairs, const, 1, zero, const_error)
    if name == "bisim":
        row_pair = np.repeat(np.arange(len(pairs)), m)
        a = np.tile(np.arange(m), len(pairs))
        s, t = S[row_pair], T[row_pair]
        const = np.abs(mdp.rewards[s, a] - mdp.rewards[t, a])
        return TransportTerms(pairs, row_pair, np.ones(len(row_pair)), const, s * m + a, t * m + a,
                              mdp.transition_rows, "max", 1, c, zero, row_const_error=U * const,
                              law_error=ro.transition_law_error)
    if name in ("eps", "eps-avg"):
        ge = policy_cells(mdp, pairs)
        s, t = S[ge.problem], T[ge.problem]
        G, G_error = ground_terms(lambda c: ground_values(mdp, ground, s, c.i, t, c.j), ground, ro, S, T, ge)
        matrix_max = 0.0 if isinstance(ground, str) else float(np.max(ground, initial=0.0))
        reach = ground_reach(ground, ro, S, T, ge, G, G_error, len(pairs), matrix_max)
        coupling = coupling_errors(ro, S, T)
        if name == "eps":
            return TransportTerms(pairs, ge.problem, ge.mass, G, s * m + ge.i, t * m + ge.j,
                                  mdp.transition_rows, "sum", 1, c, zero, row_const_error=G_error,
                                  law_error=ro.transition_law_error, pair_coupling=coupling, pair_ground_max=reach,
                                  state_rows=state_rows(mdp.n_states, m))
        const = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(pairs))
        cells = np.bincount(ge.problem, minlength=len(pairs))
        const_error = (np.bincount(ge.problem, weights=ge.mass * G_error, minlength=len(pairs))
                       + gamma_array(cells + 1) * const)
        terms = _policy_averaged_terms(mdp, pairs, const, 1, zero, const_error)
        terms.pair_coupling, terms.pair_ground_max = coupling, reach
        return terms
    if name == "dbc-sampled":
        pi = mdp.require_policy("dbc-sampled")
        k, a, b = np.nonzero(pi[S][:, :, None] * pi[T][:, None, :] > 0)
        s, t = S[k], T[k]
        weight = pi[s, a] * pi[t, b]
        const = np.abs(mdp.rewards[s, a] - mdp.rewards[t, b])
        return TransportTerms(pairs, k, weight, const, s * m + a, t * m + b,
                              mdp.transition_rows, "sum", 2, c, zero, row_const_error=U * const,
                              law_error=ro.transition_law_error,
                              pair_weight_error=U + ro.policy_defect[S] + ro.policy_defect[T])
    raise ValueError(f"'{name}' has no transport form")


# ------------------------------------------------------------------- stein
@dataclass
class SteinForm:
    """``F(d) = A + c P d Q^T`` on full matrices (diagonal included): ``Q`` None means ``Q = P``, the
    symmetric n x n equation of one MDP; between two MDPs (:mod:`bisimkit.between`) P is A's
    ``P_pi`` and Q is B's, on n_A x n_B matrices.

    What an evaluation is unsure of: ``A_error = (row, col, relative, row_relative, col_relative)``
    bounds the error of ``A[s, t]`` by ``row[s] + col[t] + (relative + row_relative[s] +
    col_relative[t]) A[s, t]``; ``P_relative`` and ``Q_relative`` bound the relative error of every
    entry of each row of P and Q against the exact laws."""

    A: np.ndarray
    P: np.ndarray
    discount: float
    Q: np.ndarray | None = None
    A_error: tuple | None = None
    P_relative: np.ndarray | None = None
    Q_relative: np.ndarray | None = None

    @property
    def right(self) -> np.ndarray:
        """The right-hand factor ``Q`` (``P`` when Q is None)."""
        return self.P if self.Q is None else self.Q

    def apply(self, D: np.ndarray) -> np.ndarray:
        """One application of the operator."""
        return self.A + self.discount * (self.P @ D @ self.right.T)

    def evaluate(self, D: np.ndarray) -> Evaluation:
        """``F(D)`` with the bound on its error: A's own, and the two products, whose sums of
        non-negative terms are off by ``gamma(n)`` each relative to ``P |D| Q^T``, and the laws' entries
        by their relative errors."""
        c = self.discount
        product = self.P @ D @ self.right.T
        value = self.A + c * product
        size = product if float(np.min(D, initial=0.0)) >= 0 else self.P @ np.abs(D) @ self.right.T
        return Evaluation(value, D, stein_error(self, value, size))


def stein_a_error(A, parts) -> np.ndarray:
    """``row[s] + col[t] + (relative + row_relative[s] + col_relative[t]) A[s, t]`` for
    ``parts = (row, col, relative, row_relative, col_relative)`` (0 when parts is None); works on numpy
    arrays and on torch tensors alike."""
    if parts is None:
        return 0.0 * A
    row, col, relative, row_rel, col_rel = parts
    return row[:, None] + col[None, :] + (relative + row_rel[:, None] + col_rel[None, :]) * A


def stein_error(form: "SteinForm", value, size, chunk_cells: int = 131_072) -> float:
    """The bound of :meth:`SteinForm.evaluate` from the computed ``value`` and ``size = P |D| Q^T``
    (numpy arrays or torch tensors on one device), a block of rows at a time to bound the memory."""
    P, Q = form.P, form.right
    n = value.shape[0]
    if n == 0 or value.shape[1] == 0:
        return 0.0
    gp, gq = gamma(P.shape[1]), gamma(Q.shape[1])
    rp = form.P_relative if form.P_relative is not None else 0.0 * P[:, 0]
    rq = form.Q_relative if form.Q_relative is not None else (rp if form.Q is None else 0.0 * Q[:, 0])
    row, col, relative, row_rel, col_rel = form.A_error if form.A_error is not None else (0.0 * P[:, 0], 0.0 * Q[:, 0], 0.0, 0.0 * P[:, 0], 0.0 * Q[:, 0])
    worst = 0.0
    chunk = max(1, chunk_cells // value.shape[1])  # rows per block: each temporary is (rows, n_Q)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        rel = (gp + gq + gp * gq + 2 * U) + rp[lo:hi, None] + rq[None, :]
        a_error = stein_a_error(form.A[lo:hi], (row[lo:hi], col, relative, row_rel[lo:hi], col_rel))
        error = a_error + form.discount * rel * (1 + 4 * U) * size[lo:hi] + gamma(2) * abs(value[lo:hi])
        worst = max(worst, float(error.max()))
    return worst * (1 + 4 * U)


def stein_constant(value: np.ndarray, rest: np.ndarray, bound: np.ndarray, value_b: np.ndarray | None = None,
                   rest_b: np.ndarray | None = None, bound_b: np.ndarray | None = None,
                   chunk_cells: int = 131_072) -> tuple[np.ndarray, tuple]:
    """``(A, A_error parts)``: ``A[s, t] = |x(s) - y(t)|`` (the l1 norm over columns for per-state vectors) with
    x and y held as value + rest within bound (y = x when its arrays are None), each difference in twice
    the working precision (:func:`bisimkit.roundoff.pair_differences`), a block of rows at a time; the
    parts are the separable bound of that function (:class:`SteinForm`)."""
    if value_b is None:
        value_b, rest_b, bound_b = value, rest, bound
    na, nb = value.shape[0], value_b.shape[0]
    if not (np.any(rest) or np.any(rest_b)):
        # exact values: one rounded subtraction per coordinate, summed (the error parts below cover it)
        columns = (value.reshape(na, -1).T, value_b.reshape(nb, -1).T)
        A = np.zeros((na, nb))
        for x, y in zip(*columns):
            A += np.abs(np.subtract.outer(x, y))
    else:
        joint = (np.concatenate([value, value_b]), np.concatenate([rest, rest_b]), np.concatenate([bound, bound_b]))
        A = np.empty((na, nb))
        step = max(1, chunk_cells // max(nb, 1))
        cols = na + np.arange(nb)[None, :]
        for lo in range(0, na, step):
            rows = np.arange(lo, min(lo + step, na))[:, None]
            A[lo:lo + step] = pair_differences(*joint, rows, cols)[0]
    k = value.shape[1] if value.ndim == 2 else 1

    def side(r, b):
        r, b = np.abs(r), b
        return (b.sum(axis=1) + 3 * U * r.sum(axis=1)) if r.ndim == 2 else b + 3 * U * r

    relative = gamma(k) + 2 * U * (1 + gamma(k))
    return A, (side(rest, bound), side(rest_b, bound_b), relative, np.zeros(na), np.zeros(nb))


def stein_form(mdp: FiniteMDP, name: str) -> SteinForm:
    """The Stein form of ``mico`` or ``psm-sampled``, and of ``dbc-sampled`` when the policy's
    next-state laws are point masses (:func:`point_mass_transitions`), with the bounds on what its
    evaluation is unsure of."""
    ro = mdp.roundoff
    n = mdp.n_states
    zeros = np.zeros(n)
    if name == "mico":
        A, parts = stein_constant(ro.reward_pi, ro.reward_pi_rest, ro.reward_pi_bound)
    elif name == "psm-sampled":
        A, parts = stein_constant(ro.mean_action, ro.mean_action_rest, ro.mean_action_bound)
    elif name == "dbc-sampled" and point_mass_transitions(mdp):
        # W2 between point masses at s' and t' is d(s', t') (d >= 0), so the transport rows become
        # sum pi(a|s) pi(a'|t) d(s'_a, t'_a') = (Ppi d Ppi^T)(s, t): a Stein equation.
        pi, R = mdp.policy, mdp.rewards
        A = np.zeros((n, n))
        for a in range(mdp.n_actions):
            for b in range(mdp.n_actions):
                A += np.outer(pi[:, a], pi[:, b]) * np.abs(R[:, a, None] - R[None, :, b])
        # m^2 non-negative terms, each three rounded operations, summed; the policy rows' normalisation
        m = mdp.n_actions
        parts = (zeros, zeros, gamma(m * m + 3), ro.policy_defect, ro.policy_defect)
    else:
        raise ValueError(f"'{name}' has no Stein form")
    return SteinForm(A, np.array(mdp.transition_pi), mdp.discount, A_error=parts, P_relative=ro.pi_relative)


def point_mass_transitions(mdp: FiniteMDP) -> bool:
    """Whether every next-state law the policy uses, P(s, a) with pi(a|s) > 0, is a point mass."""
    pi = mdp.require_policy("the policy's next-state laws")
    support = np.count_nonzero(mdp.transitions, axis=2)
    return bool(np.all(support[pi > 0] == 1))


# ------------------------------------------------------------- pair linear
@dataclass
class PairLinearForm:
    """``F(x) = b + c T x`` over a pair space (without the diagonal, d(s, s) = 0 is used): eps-bar, whose
    T holds the products of the entangled action and next-state couplings.

    What an evaluation is unsure of (``docs/operators.md#the-certificate``): ``b_error`` bounds the
    error of each ``b[pair]``; ``pair_coupling`` the measure of uniforms the computed action coupling
    sends to another cell than the exact one, ``pair_ground_max`` the
    largest ground term over the pair's action pairs, and ``pair_next`` the same measure for the
    next-state couplings (the largest over the pair's action rows); ``rows`` are the next-state laws
    (CSR) and ``state_rows`` each state's rows of them, which locate the distances a next-state
    coupling can reach."""

    pairs: PairSpace
    b: np.ndarray
    T: sp.csr_matrix  # float64, or float32 when ``product`` gives the exact float64 product
    discount: float
    product: Callable[[np.ndarray], np.ndarray] | None = None
    b_error: np.ndarray | None = None
    pair_coupling: np.ndarray | None = None
    pair_ground_max: np.ndarray | None = None
    pair_next: np.ndarray | None = None
    rows: object | None = None
    state_rows: np.ndarray | None = None

    def apply(self, x: np.ndarray) -> np.ndarray:
        """One application of the operator to the pair vector ``x`` (always in float64)."""
        if self.product is not None:
            return self.b + self.discount * self.product(x)
        return self.b + self.discount * (self.T @ x)

    def evaluate(self, x: np.ndarray) -> Evaluation:
        """``F(x)`` with the bound on its error: b's own, the couplings' (their measure times the largest
        value a misplaced cell can carry), and the rounding of one row sum of T per pair (a dense T of the
        small-problem path sums over every pair)."""
        c = self.discount
        value = self.apply(x)
        if isinstance(self.T, np.ndarray):
            terms = np.full(len(value), 2 * self.T.shape[1])
        else:
            terms = np.diff(self.T.indptr)
        error = gamma_array(terms + 5) * np.abs(value)  # entries: two cell masses (u each) and their product
        if self.b_error is not None:
            error = error + self.b_error
        if self.pair_coupling is not None:
            sm = state_maxima(self.rows, pair_row_max(self.pairs, np.abs(x)), self.state_rows)
            reach = np.minimum(sm[self.pairs.s], sm[self.pairs.t])
            error = error + self.pair_coupling * (self.pair_ground_max + c * reach) + c * self.pair_next * reach
        return Evaluation(value, x, float(np.max(error, initial=0.0)) * (1 + 4 * U))


def pair_system(pairs: PairSpace, row_pair: np.ndarray, row_weight: np.ndarray,
                cells: Cells, n_rows: int) -> sp.csr_matrix:
    """The pairs x pairs matrix ``T[pair(r), pair(i, j)] += weight[r] * mass`` of fixed couplings.

    ``cells.problem`` indexes rows; cells on the diagonal (i == j) are dropped
    when the pair space has no diagonal (d(s, s) = 0 there), and so are empty cells.
    Duplicates are left in: the product T @ x adds them up, and summing them costs a sort.
    On the small-problem path (:mod:`bisimkit.kernels`) T is a dense numpy array.
    """
    small = on_small_path()
    if not small and cells.offsets is not None and len(cells) >= COMPILED_PAIR_SYSTEM_CELLS:
        return pair_system_from_slots(cells.offsets, cells.i, cells.j, cells.mass, row_pair, row_weight,
                                      pairs.index, len(pairs))
    col = pairs.index[cells.i, cells.j]
    keep = (col >= 0) & (cells.mass > 0)
    rows = row_pair[cells.problem[keep]]
    vals = row_weight[cells.problem[keep]] * cells.mass[keep]
    if small:  # dense, solved with numpy.linalg
        T = np.zeros((len(pairs), len(pairs)))
        np.add.at(T, (rows, col[keep]), vals)
        return T
    return csr_from_triplets(rows, col[keep], vals, len(pairs))


def csr_from_triplets(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int) -> sp.csr_matrix:
    """An n x n CSR matrix from (row, col, value) triplets, duplicates kept."""
    import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return sp.csr_matrix((vals[order], cols[order], indptr), shape=(n, n))


@dataclass
class EntangledParts:
    """The pieces of eps-bar on a pair space (Bertran et al. 2022, Thm. 4.5).

    ``actions``: entangled couplings ge of pi(s), pi(t) per pair (problem = pair);
    ``ground``: G(s, a, t, a') on each action cell; ``constant``: ``b = sum ge G``
    per pair; ``next_states``: entangled couplings of P(s, a), P(t, a') per action
    cell (problem = index into ``actions``). One sample of the entangled estimator is
    an action cell with one of its next-state cells.
    """

    actions: Cells
    ground: np.ndarray
    constant: np.ndarray
    next_states: Cells

    def samples(self, discount: float, d: np.ndarray) -> np.ndarray:
        """``G + c d(s+, t+)`` for every (action cell, next-state cell) sample."""
        return self.ground[self.next_states.problem] + discount * d[self.next_states.i, self.next_states.j]

    def apply(self, discount: float, d: np.ndarray) -> np.ndarray:
        """eps-bar applied to the dense distance ``d``, per pair (the expectation of the samples)."""
        ge, nxt = self.actions, self.next_states
        w = ge.mass[nxt.problem] * nxt.mass * d[nxt.i, nxt.j]
        return self.constant + discount * np.bincount(ge.problem[nxt.problem], weights=w,
                                                      minlength=len(self.constant))


def entangled_parts(mdp: FiniteMDP, ground: Ground, pairs: PairSpace) -> EntangledParts:
    """The entangled action and next-state couplings of eps-bar on ``pairs``, with the ground terms."""
    m = mdp.n_actions
    ge = policy_cells(mdp, pairs)
    s, t = pairs.s[ge.problem], pairs.t[ge.problem]
    G = ground_values(mdp, ground, s, ge.i, t, ge.j)
    b = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(pairs))
    P = mdp.transition_rows
    cells = entangled_cells(P, s * m + ge.i, P, t * m + ge.j, shape=mdp.state_shape)
    return EntangledParts(ge, G, b, cells)


def entangled_ground_terms(mdp: FiniteMDP, ground: Ground, s: np.ndarray, t: np.ndarray,
                           chunk: int = 1_000_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(b, b_error, reach)`` for the pairs ``(s[k], t[k])``, in chunks: ``b = sum_{a, a'} ge(a, a')
    G(s, a, t, a')``, a bound on its error as computed (the ground values' errors and the rounding of
    the sum; the coupling's own error is charged apart), and :func:`ground_reach`."""
    b, b_error, reach = np.empty(len(s)), np.empty(len(s)), np.empty(len(s))
    ro = mdp.roundoff
    matrix_max = 0.0 if isinstance(ground, str) else float(np.max(ground, initial=0.0))
    for start in range(0, len(s), chunk):
        S, T = s[start:start + chunk], t[start:start + chunk]
        ge = action_cells(mdp, S, T)
        G, G_error = ground_terms(lambda c: ground_values(mdp, ground, S[c.problem], c.i, T[c.problem], c.j), ground,
                                  ro, S, T, ge)
        part = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(S))
        cells = np.bincount(ge.problem, minlength=len(S))
        b[start:start + chunk] = part
        b_error[start:start + chunk] = (np.bincount(ge.problem, weights=ge.mass * G_error, minlength=len(S))
                                        + gamma_array(cells + 1) * part)
        reach[start:start + chunk] = ground_reach(ground, ro, S, T, ge, G, G_error, len(S), matrix_max)
    return b, b_error, reach


def next_state_coupling_errors(mdp: FiniteMDP) -> np.ndarray:
    """Per state: the largest measure of uniforms that a computed entangled coupling of one of its next-state
    laws with another law sends to another cell than the exact one (its share; the other law adds its own):
    :func:`bisimkit.roundoff.breakpoint_errors` of its rows ``P(s, a)``, or on a grid the a priori bound of
    the coordinate-wise (Rosenblatt) coupling (:func:`bisimkit.roundoff.grid_breakpoint_error`)."""
    n, m = mdp.n_states, mdp.n_actions
    if mdp.state_shape is not None and len(mdp.state_shape) > 1:
        return np.full(n, grid_breakpoint_error(mdp.state_shape))
    return mdp.roundoff.transition_breakpoints.reshape(n, m).max(axis=1)


def eps_bar_form(mdp: FiniteMDP, ground: Ground = "reward", pairs: PairSpace | None = None) -> PairLinearForm:
    """The linear form of eps-bar: entangled couplings of actions and of next states, with the bounds on
    what its evaluation is unsure of (:class:`PairLinearForm`).

    On the default pairs (s < t) the diagonal is taken as 0; on a pair space with
    the diagonal, T keeps the cells that land on it. From
    :data:`COMPILED_EPS_BAR_PAIRS` pairs on (1-D state spaces), T is assembled pair
    by pair in compiled code without intermediate cells; the matrix is the same.
    """
    pairs = default_pairs(mdp, "eps-bar") if pairs is None else pairs
    one_dimensional = mdp.state_shape is None or len(mdp.state_shape) == 1
    b, b_error, reach = entangled_ground_terms(mdp, ground, pairs.s, pairs.t)
    nxt = next_state_coupling_errors(mdp)
    charges = dict(b_error=b_error, pair_coupling=coupling_errors(mdp.roundoff, pairs.s, pairs.t),
                   pair_ground_max=reach, pair_next=nxt[pairs.s] + nxt[pairs.t], rows=mdp.transition_rows,
                   state_rows=state_rows(mdp.n_states, mdp.n_actions))
    if one_dimensional and len(pairs) >= COMPILED_EPS_BAR_PAIRS:
        policy = mdp.require_policy("eps-bar")
        args = (pairs.s, pairs.t, pairs.index, policy, mdp.transition_rows, mdp.n_actions)
        counts = eps_bar_counts(*args)
        # float64 T and its float32 copy for the Krylov solves take 16 bytes an entry
        if len(pairs) < EPS_BAR_SINGLE_PAIRS or 16 * float(counts.sum()) <= EPS_BAR_MEMORY_SHARE * physical_memory():
            return PairLinearForm(pairs, b, eps_bar_matrix(*args, len(pairs), counts=counts), mdp.discount, **charges)
        # Too large: keep T in float32 only (4 bytes an entry, plus its int32 column) for the inner
        # Krylov solves; the float64 residuals that drive the solution and its certificate recompute
        # the couplings on the fly (slower per product, half the memory).
        T32 = eps_bar_matrix(*args, len(pairs), dtype=np.float32, counts=counts)
        product = eps_bar_product(*args)
        return PairLinearForm(pairs, b, T32, mdp.discount, product=product, **charges)
    parts = entangled_parts(mdp, ground, pairs)
    T = pair_system(pairs, parts.actions.problem, parts.actions.mass, parts.next_states, len(parts.actions))
    return PairLinearForm(pairs, parts.constant, T, mdp.discount, **charges)


# ---------------------------------------------------------------- dispatch
def operator_form(mdp: FiniteMDP, name: str, ground: Ground = "reward", pairs: PairSpace | None = None,
                  zero_diagonal: bool | None = None):
    """The computable form of operator ``name`` (TransportTerms, SteinForm or PairLinearForm)."""
    info = operator_info(name)
    if info.uses_policy:
        mdp.require_policy(f"metric '{name}'")
    if info.form == "transport":
        return transport_terms(mdp, name, ground, pairs, zero_diagonal)
    if info.form == "stein":
        return stein_form(mdp, name)
    if info.form == "pair-linear":
        return eps_bar_form(mdp, ground, pairs)
    raise InputError(f"'{name}' is derived from another fixed point and is not an operator", param="metric")


def apply_operator(mdp: FiniteMDP, name: str, d: np.ndarray, ground: Ground = "reward") -> np.ndarray:
    """``F(d)`` as a dense n x n matrix, diagonal included, for any operator of the table in docs/operators.md.

    ``d`` must be a symmetric n x n matrix (every operator maps symmetric to symmetric).
    """
    d = np.asarray(d, dtype=np.float64)
    n = mdp.n_states
    if d.shape != (n, n):
        raise ValueError(f"d: expected shape {(n, n)}, got {d.shape}")
    if not np.allclose(d, d.T, rtol=0, atol=1e-12):
        raise ValueError("d: must be symmetric")
    pairs = PairSpace(n, diagonal=True)
    form = operator_form(mdp, name, ground, pairs, zero_diagonal=not np.any(np.diag(d)))
    if isinstance(form, SteinForm):
        return form.apply(d)
    return pairs.to_matrix(form.apply(pairs.from_matrix(d)))


def diagonal_values(mdp: FiniteMDP, name: str, D: np.ndarray, ground: Ground = "reward") -> np.ndarray:
    """``F(D)(s, s)`` for every state, D symmetric with zero diagonal.

    For the pseudometric operators this must be 0: the solvers store only the
    pairs s < t, and this is how they check that the zero diagonal is a fact
    about the operator rather than an assumption.
    """
    pairs = PairSpace.diagonal_only(mdp.n_states)
    info = operator_info(name)
    if info.form == "pair-linear":
        return entangled_parts(mdp, ground, pairs).apply(mdp.discount, D)
    form = operator_form(mdp, name, ground, pairs, zero_diagonal=True)
    if isinstance(form, SteinForm):
        return np.diag(form.apply(D))
    return form.combine(form.row_const + form.discount * form.costs(D)[0])
