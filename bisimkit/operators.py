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
from .compiled import eps_bar_counts, eps_bar_matrix, eps_bar_product, pair_system_from_slots
from .kernels import on_small_path
from .transport import WarmStarts, optimal_transport, seed_line_starts

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
    ``gap`` bounds ``max |value - F(at)|`` from the inexact parts (optimal transport values,
    :func:`bisimkit.transport.optimal_transport`'s gaps), round-off aside; ``terms`` is the
    length of the longest floating-point sum behind one value, ``scale`` the largest one-step
    term and ``const_error`` a bound on the round-off of the one-step terms themselves
    (:func:`constant_error`), all for the round-off floor.
    """

    value: np.ndarray
    at: np.ndarray
    gap: float
    terms: int
    scale: float
    const_error: float
    plans: Cells | None = None


# --------------------------------------------------------------- transport
@dataclass
class TransportTerms:
    """``F(d)[pair] = reduce_r (const[r] + c W_p(dists[src[r]], dists[dst[r]]; d))``.

    Rows are grouped by pair (contiguous, every pair has at least one row).
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
    warm: WarmStarts = field(default_factory=WarmStarts, repr=False)  # simplex bases from the last call
    _reduced: tuple | None = field(default=None, repr=False)  # (p - q)+ and (q - p)+ per row
    _reduced_warm: WarmStarts = field(default_factory=WarmStarts, repr=False)
    _dense: bool | None = field(default=None, repr=False)
    _plan_buffers: dict = field(default_factory=dict, repr=False)  # reused plan arrays (coupling iteration)
    _term_count: int | None = field(default=None, repr=False)
    const_error: float = 0.0  # round-off bound of row_const (:func:`constant_error`)

    def row_starts(self) -> np.ndarray:
        """Index of the first row of each pair."""
        return np.searchsorted(self.row_pair, np.arange(len(self.pairs)))

    def costs(self, D: np.ndarray, plans: bool = False, reuse: bool = False):
        """Transport values per row under the dense distance ``D`` (and plans); see :meth:`transport`."""
        values, cells, _, _ = self.transport(D, plans, reuse)
        return values, cells

    def transport(self, D: np.ndarray, plans: bool = False, reuse: bool = False):
        """``(values, plans, gaps, at)``: transport values per row, their plans (or None), a bound
        on each value's distance to the exact one, and the distance matrix they are exact for.

        For W1 with large supports, when ``D`` is within 1e-12 (relative) of its metric closure
        (the largest pseudometric below it, :func:`bisimkit.pseudometric.metric_closure`), the
        problems are solved under that closure ``at``: the mass two histograms share stays in
        place at no cost and only ``(p - q)+`` is moved onto ``(q - p)+``
        (Kantorovich-Rubinstein, exact for a pseudometric); the plans then leave out those
        zero-cost diagonal cells. Otherwise ``at`` is ``D`` itself.
        """
        X, src, Y, dst, zero, warm, at = self._problems(D)
        buffers = None
        if reuse:
            buffers = self._plan_buffers.setdefault(id(warm), [])
        gaps = np.zeros(len(src))
        values, cells = optimal_transport(X, src, Y, dst, at, p=self.p, plans=plans, zero_diagonal=zero, warm=warm,
                                          buffers=buffers, gaps=gaps)
        return values, cells, gaps, at

    def evaluate(self, x: np.ndarray, plans: bool = False, reuse: bool = False) -> Evaluation:
        """``F`` at the pair vector ``x`` (or at its metric closure, see :meth:`transport`)."""
        D = self.pairs.to_matrix(x)
        values, cells, gaps, at = self.transport(D, plans, reuse)
        point = x if at is D else self.pairs.from_matrix(at)
        gap = self.discount * float(np.max(self.combine(gaps), initial=0.0))
        return Evaluation(self.combine(self.row_const + self.discount * values), point, gap, self._terms(),
                          self.constant_scale(), self.const_error, cells)

    def _terms(self) -> int:
        """The longest sum behind one value: the rows of a pair plus the cells of a plan (a plan's
        cost sums at most ``k + l - 1`` cells, and the rows' weighted sum adds one term per row);
        under a closure the shared-mass reduction adds up to n - 2 triangle steps, each exact only
        to round-off."""
        if self._term_count is None:
            rows = int(np.max(np.bincount(self.row_pair), initial=1)) if len(self.row_pair) else 1
            support = int(np.max(np.diff(self.dists.indptr), initial=1))
            reduction = self.pairs.n if self._shared_mass_pays() else 0
            self._term_count = rows + 2 * support + reduction
        return self._term_count

    def _problems(self, D: np.ndarray):
        """``(X, src, Y, dst, zero_diagonal, warm, at)`` of the transport problems under ``D``:
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
            return self._reduced[0], rows, self._reduced[1], rows, False, self._reduced_warm, closed
        return self.dists, self.row_src, self.dists, self.row_dst, self.zero_diagonal, self.warm, D

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
        X, src, Y, dst, _, warm, _ = self._problems(D)
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

    def constant_scale(self) -> float:
        """``max |const|``: the size of the one-step terms, for the round-off floor."""
        return float(np.max(np.abs(self.row_const), initial=0.0))


def default_pairs(mdp: FiniteMDP, name: str) -> PairSpace:
    """The unknowns of operator ``name``: pairs s < t for the pseudometrics, s <= t otherwise."""
    return PairSpace(mdp.n_states, diagonal=not OPERATORS[name].pseudometric)


def _policy_averaged_terms(mdp: FiniteMDP, pairs: PairSpace, const: np.ndarray, p: int,
                           zero_diagonal: bool) -> TransportTerms:
    """Terms with one transport problem Ppi(s) vs Ppi(t) per pair."""
    k = len(pairs)
    return TransportTerms(pairs, np.arange(k), np.ones(k), const, pairs.s, pairs.t,
                          mdp.transition_pi_rows, "sum", p, mdp.discount, zero_diagonal)


def policy_cells(mdp: FiniteMDP, pairs: PairSpace) -> Cells:
    """Entangled couplings ge of pi(s) and pi(t) for every pair (cells over actions)."""
    return action_cells(mdp, pairs.s, pairs.t)


def action_cells(mdp: FiniteMDP, s: np.ndarray, t: np.ndarray) -> Cells:
    """Entangled couplings of pi(s[k]) and pi(t[k]) (problem k; cells over actions)."""
    pi = histogram_rows(mdp.require_policy("the entangled policy coupling"))
    return entangled_cells(pi, s, pi, t)


def transport_terms(mdp: FiniteMDP, name: str, ground: Ground = "reward", pairs: PairSpace | None = None,
                    zero_diagonal: bool | None = None) -> TransportTerms:
    """The transport form of operator ``name`` on ``mdp``, evaluated on ``pairs``.

    ``zero_diagonal`` says whether the distances it will act on have a zero
    diagonal (default: yes for the pseudometric operators).
    """
    m, c = mdp.n_actions, mdp.discount
    pairs = default_pairs(mdp, name) if pairs is None else pairs
    zero = OPERATORS[name].pseudometric if zero_diagonal is None else zero_diagonal
    S, T = pairs.s, pairs.t
    if name in ("pi", "dbc"):
        const = np.abs(mdp.reward_pi[S] - mdp.reward_pi[T])
        return _policy_averaged_terms(mdp, pairs, const, 1 if name == "pi" else 2, zero)
    if name == "psm":
        return _policy_averaged_terms(mdp, pairs, _l1_pairs(mdp.mean_action, pairs), 1, zero)
    if name == "bisim":
        row_pair = np.repeat(np.arange(len(pairs)), m)
        a = np.tile(np.arange(m), len(pairs))
        s, t = S[row_pair], T[row_pair]
        const = np.abs(mdp.rewards[s, a] - mdp.rewards[t, a])
        return TransportTerms(pairs, row_pair, np.ones(len(row_pair)), const, s * m + a, t * m + a,
                              mdp.transition_rows, "max", 1, c, zero)
    if name in ("eps", "eps-avg"):
        ge = policy_cells(mdp, pairs)
        s, t = S[ge.problem], T[ge.problem]
        G = ground_values(mdp, ground, s, ge.i, t, ge.j)
        if name == "eps":
            return TransportTerms(pairs, ge.problem, ge.mass, G, s * m + ge.i, t * m + ge.j,
                                  mdp.transition_rows, "sum", 1, c, zero)
        const = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(pairs))
        return _policy_averaged_terms(mdp, pairs, const, 1, zero)
    if name == "dbc-sampled":
        pi = mdp.require_policy("dbc-sampled")
        k, a, b = np.nonzero(pi[S][:, :, None] * pi[T][:, None, :] > 0)
        s, t = S[k], T[k]
        weight = pi[s, a] * pi[t, b]
        const = np.abs(mdp.rewards[s, a] - mdp.rewards[t, b])
        return TransportTerms(pairs, k, weight, const, s * m + a, t * m + b,
                              mdp.transition_rows, "sum", 2, c, zero)
    raise ValueError(f"'{name}' has no transport form")


def _l1_pairs(X: np.ndarray, pairs: PairSpace, chunk: int = 1_000_000) -> np.ndarray:
    """``||X[s] - X[t]||_1`` for every pair, in chunks to bound memory."""
    out = np.empty(len(pairs))
    for start in range(0, len(pairs), chunk):
        s, t = pairs.s[start:start + chunk], pairs.t[start:start + chunk]
        out[start:start + chunk] = np.abs(X[s] - X[t]).sum(axis=1)
    return out


# ------------------------------------------------------------------- stein
@dataclass
class SteinForm:
    """``F(d) = A + c P d Q^T`` on full matrices (diagonal included): ``Q`` None means ``Q = P``, the
    symmetric n x n equation of one MDP; between two MDPs (:mod:`bisimkit.between`) P is A's
    ``P_pi`` and Q is B's, on n_A x n_B matrices."""

    A: np.ndarray
    P: np.ndarray
    discount: float
    const_error: float = 0.0  # round-off bound of A (:func:`constant_error`)
    Q: np.ndarray | None = None

    @property
    def right(self) -> np.ndarray:
        """The right-hand factor ``Q`` (``P`` when Q is None)."""
        return self.P if self.Q is None else self.Q

    def apply(self, D: np.ndarray) -> np.ndarray:
        """One application of the operator."""
        return self.A + self.discount * (self.P @ D @ self.right.T)

    def evaluate(self, D: np.ndarray) -> Evaluation:
        """``F(D)`` exactly up to round-off: a product of n_P-term sums, then one of n_Q-term sums."""
        return Evaluation(self.apply(D), D, 0.0, self.P.shape[0] + self.right.shape[0], self.constant_scale(),
                          self.const_error)

    def constant_scale(self) -> float:
        """``max |A|``."""
        return float(np.max(np.abs(self.A), initial=0.0))


def stein_form(mdp: FiniteMDP, name: str) -> SteinForm:
    """The Stein form of ``mico`` or ``psm-sampled``, and of ``dbc-sampled`` when the policy's
    next-state laws are point masses (:func:`point_mass_transitions`)."""
    const_error = 0.0
    if name == "mico":
        A = np.abs(mdp.reward_pi[:, None] - mdp.reward_pi[None, :])
    elif name == "psm-sampled":
        abar = mdp.mean_action
        A = np.zeros((mdp.n_states, mdp.n_states))
        for k in range(abar.shape[1]):
            A += np.abs(abar[:, None, k] - abar[None, :, k])
    elif name == "dbc-sampled" and point_mass_transitions(mdp):
        # W2 between point masses at s' and t' is d(s', t') (d >= 0), so the transport rows become
        # sum pi(a|s) pi(a'|t) d(s'_a, t'_a') = (Ppi d Ppi^T)(s, t): a Stein equation.
        pi, R = mdp.policy, mdp.rewards
        A = np.zeros((mdp.n_states, mdp.n_states))
        for a in range(mdp.n_actions):
            for b in range(mdp.n_actions):
                A += np.outer(pi[:, a], pi[:, b]) * np.abs(R[:, a, None] - R[None, :, b])
        # each of the m^2 terms is three rounded operations on values up to 2 max|R|, then summed
        m = mdp.n_actions
        const_error = 2.0 * (m * m + 4) * float(np.finfo(np.float64).eps) * float(np.max(np.abs(R), initial=0.0))
    else:
        raise ValueError(f"'{name}' has no Stein form")
    return SteinForm(A, np.array(mdp.transition_pi), mdp.discount, const_error)


def point_mass_transitions(mdp: FiniteMDP) -> bool:
    """Whether every next-state law the policy uses, P(s, a) with pi(a|s) > 0, is a point mass."""
    pi = mdp.require_policy("the policy's next-state laws")
    support = np.count_nonzero(mdp.transitions, axis=2)
    return bool(np.all(support[pi > 0] == 1))


# ------------------------------------------------------------- pair linear
@dataclass
class PairLinearForm:
    """``F(x) = b + c T x`` over a pair space (without the diagonal, d(s, s) = 0 is used)."""

    pairs: PairSpace
    b: np.ndarray
    T: sp.csr_matrix  # float64, or float32 when ``product`` gives the exact float64 product
    discount: float
    product: Callable[[np.ndarray], np.ndarray] | None = None
    const_error: float = 0.0  # round-off bound of b (:func:`constant_error`)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """One application of the operator to the pair vector ``x`` (always in float64)."""
        if self.product is not None:
            return self.b + self.discount * self.product(x)
        return self.b + self.discount * (self.T @ x)

    def evaluate(self, x: np.ndarray) -> Evaluation:
        """``F(x)`` exactly up to round-off: one sparse row sum per pair (a dense T of the small-problem
        path: a sum over every pair, its entries each a sum of up to as many cells)."""
        terms = 2 * self.T.shape[1] if isinstance(self.T, np.ndarray) else int(np.max(np.diff(self.T.indptr), initial=0))
        return Evaluation(self.apply(x), x, 0.0, terms + 1, self.constant_scale(), self.const_error)

    def constant_scale(self) -> float:
        """``max |b|``."""
        return float(np.max(np.abs(self.b), initial=0.0))


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


def entangled_ground_mean(mdp: FiniteMDP, ground: Ground, s: np.ndarray, t: np.ndarray,
                          chunk: int = 1_000_000) -> np.ndarray:
    """``sum_{a, a'} ge(a, a') G(s, a, t, a')`` for the pairs ``(s[k], t[k])``, in chunks."""
    out = np.empty(len(s))
    for start in range(0, len(s), chunk):
        S, T = s[start:start + chunk], t[start:start + chunk]
        ge = action_cells(mdp, S, T)
        G = ground_values(mdp, ground, S[ge.problem], ge.i, T[ge.problem], ge.j)
        out[start:start + chunk] = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(S))
    return out


def eps_bar_form(mdp: FiniteMDP, ground: Ground = "reward", pairs: PairSpace | None = None) -> PairLinearForm:
    """The linear form of eps-bar: entangled couplings of actions and of next states.

    On the default pairs (s < t) the diagonal is taken as 0; on a pair space with
    the diagonal, T keeps the cells that land on it. From
    :data:`COMPILED_EPS_BAR_PAIRS` pairs on (1-D state spaces), T is assembled pair
    by pair in compiled code without intermediate cells; the matrix is the same.
    """
    pairs = default_pairs(mdp, "eps-bar") if pairs is None else pairs
    one_dimensional = mdp.state_shape is None or len(mdp.state_shape) == 1
    if one_dimensional and len(pairs) >= COMPILED_EPS_BAR_PAIRS:
        b = entangled_ground_mean(mdp, ground, pairs.s, pairs.t)
        policy = mdp.require_policy("eps-bar")
        args = (pairs.s, pairs.t, pairs.index, policy, mdp.transition_rows, mdp.n_actions)
        counts = eps_bar_counts(*args)
        # float64 T and its float32 copy for the Krylov solves take 16 bytes an entry
        if len(pairs) < EPS_BAR_SINGLE_PAIRS or 16 * float(counts.sum()) <= EPS_BAR_MEMORY_SHARE * physical_memory():
            return PairLinearForm(pairs, b, eps_bar_matrix(*args, len(pairs), counts=counts), mdp.discount)
        # Too large: keep T in float32 only (4 bytes an entry, plus its int32 column) for the inner
        # Krylov solves; the float64 residuals that drive the solution and its certificate recompute
        # the couplings on the fly (slower per product, half the memory).
        T32 = eps_bar_matrix(*args, len(pairs), dtype=np.float32, counts=counts)
        product = eps_bar_product(*args)
        return PairLinearForm(pairs, b, T32, mdp.discount, product=product)
    parts = entangled_parts(mdp, ground, pairs)
    T = pair_system(pairs, parts.actions.problem, parts.actions.mass, parts.next_states, len(parts.actions))
    return PairLinearForm(pairs, parts.constant, T, mdp.discount)


# ---------------------------------------------------------------- dispatch
def operator_form(mdp: FiniteMDP, name: str, ground: Ground = "reward", pairs: PairSpace | None = None,
                  zero_diagonal: bool | None = None):
    """The computable form of operator ``name`` (TransportTerms, SteinForm or PairLinearForm)."""
    info = operator_info(name)
    if info.uses_policy:
        mdp.require_policy(f"metric '{name}'")
    if info.form == "transport":
        form = transport_terms(mdp, name, ground, pairs, zero_diagonal)
    elif info.form == "stein":
        form = stein_form(mdp, name)
    elif info.form == "pair-linear":
        form = eps_bar_form(mdp, ground, pairs)
    else:
        raise InputError(f"'{name}' is derived from another fixed point and is not an operator", param="metric")
    form.const_error = constant_error(mdp, name, ground)
    return form


def constant_error(mdp: FiniteMDP, name: str, ground: Ground = "reward") -> float:
    """A bound on the round-off in the one-step terms of operator ``name`` as computed from the MDP.

    The terms are differences of policy averages (``Rpi(s) = sum_a pi(s, a) R(s, a)``, ``abar(s)``)
    or entangled averages of the ground, each a sum of at most ``2 m + k`` products (k the
    dimension of the action values), so each is off by at most ``2 (2 m + k + 4) eps`` times the
    largest input it is computed from: ``max |R|``, ``max |action_values|`` or ``max |G|``. With
    large equal rewards the terms are tiny while this is not, which is why it is charged apart
    from the terms' own size."""
    m, k = mdp.n_actions, mdp.action_values.shape[1]
    policy_based = name in ("psm", "psm-sampled") or (name.startswith("eps") and isinstance(ground, str)
                                                      and ground == "policy")
    if policy_based:
        largest = float(np.max(np.abs(mdp.action_values), initial=0.0))
    elif name.startswith("eps") and not isinstance(ground, str):
        largest = float(np.max(np.abs(ground), initial=0.0))
    else:
        largest = float(np.max(np.abs(mdp.rewards), initial=0.0))
    return 2.0 * (2 * m + k + 4) * float(np.finfo(np.float64).eps) * largest


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
