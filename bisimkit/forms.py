"""The computable forms of the operators, and what evaluating them is unsure of.

Every operator of :mod:`bisimkit.operators` builds one of three forms, for one MDP or for the cross
pairs of two:

* :class:`TransportTerms`, the operators built on optimal transport (bisim, pi, psm, dbc,
  dbc-sampled, eps, eps-avg)::

      F(d)[pair] = reduce over rows r of the pair of  const[r] + c W_p(left[src[r]], right[dst[r]]; d)

  with ``reduce`` a weighted sum or a max (bisim's max over actions); ``left`` holds the laws of
  the pair's first state, ``right`` those of its second (the same rows on one MDP);
* :class:`SteinForm`, the independent-coupling operators (mico, psm-sampled):
  ``F(D) = A + c P D Q^T``;
* :class:`PairLinearForm`, eps-bar, linear in d through the entangled couplings:
  ``F(x) = b + c T x`` over the pair vector x.

Each form's ``evaluate`` returns an :class:`Evaluation`: the computed value and a bound on its
distance to the exact operator of the exact MDP (``docs/operators.md#the-certificate``), from
which :mod:`bisimkit.engine` builds the certificate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from .compiled import pair_system_from_slots
from .couplings import Cells
from .kernels import on_small_path
from .pairs import PairSpace
from .pseudometric import metric_closure
from .roundoff import U, gamma, gamma_array
from .transport import WarmStarts, optimal_transport, seed_line_starts, support_maxima

if TYPE_CHECKING:
    import scipy.sparse as sp

#: From these sizes on (pairs for eps-bar, plan cells for the coupling systems), eps-bar and the
#: coupling systems are assembled by compiled code; below them numpy does it. The coupling systems take the
#: compiled assembly at every size (the same matrix, bit for bit: one pass instead of numpy's sort of the
#: cells; FrozenLake8x8's pi solve is a tenth faster).
COMPILED_EPS_BAR_PAIRS = 20_000
COMPILED_PAIR_SYSTEM_CELLS = 0
#: From this many pairs eps-bar may store its matrix in float32 only and compute exact products on
#: the fly: it does when the float64 matrix with its float32 copy would take more than
#: EPS_BAR_MEMORY_SHARE of the machine's memory.
EPS_BAR_SINGLE_PAIRS = 1_000_000
EPS_BAR_MEMORY_SHARE = 0.5
#: Mean support size above which W1 problems drop the shared mass (when d is a metric).
SHARED_MASS_MIN_SUPPORT = 24
#: The first round's transport problems are seeded along a line (:meth:`TransportTerms.seed_line`) only where
#: some law has at least this many atoms: with at most two a side, a problem has one plan or a 2 x 2 one, and
#: the simplex's greedy start is optimal or a pivot away (on brp with 8,712 blocks the seed took 11 s of a
#: 114 s solve, for the same certificate).
LINE_SEED_MIN_ATOMS = 3


def physical_memory() -> float:
    """Bytes of physical memory of this machine."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 16e9


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
    """Per state: the largest :func:`~bisimkit.transport.support_maxima` over its rows ``X[state_rows[s]]``."""
    return support_maxima(X, row_max)[state_rows].max(axis=1)


# --------------------------------------------------------------- transport
@dataclass
class TransportTerms:
    """``F(d)[pair] = reduce_r (const[r] + c W_p(left[src[r]], right[dst[r]]; d))``.

    Rows are grouped by pair (contiguous, every pair has at least one row). What the evaluation is
    unsure of (``docs/operators.md#the-certificate``): ``row_const_error`` bounds the error of each
    row's one-step term; ``left_law_error`` / ``right_law_error`` bound, per law, the total variation
    between the stored law and the exact one; for the entangled operators ``pair_coupling`` bounds,
    per pair, the measure of the uniforms the computed action coupling assigns to another cell than
    the exact one, ``pair_ground_max`` the largest ground term over the pair's action pairs, and
    ``left_state_rows`` / ``right_state_rows`` list each state's laws (when the transport part depends
    on the cell, as in eps); ``pair_weight_error`` is the relative error of the rows' weights where
    they are computed products (dbc-sampled). ``line_keys``, when given, are scalar keys of the two
    sides' states along which monotone couplings seed the first round's transport problems.
    """

    pairs: PairSpace
    row_pair: np.ndarray
    row_weight: np.ndarray
    row_const: np.ndarray
    row_src: np.ndarray
    row_dst: np.ndarray
    left: sp.csr_matrix
    right: sp.csr_matrix
    reduce: str  # "sum" or "max"
    p: int
    discount: float
    zero_diagonal: bool = True  # the distances it acts on have d(s, s) = 0 (identical laws cost 0)
    row_const_error: np.ndarray | None = None
    left_law_error: np.ndarray | None = None
    right_law_error: np.ndarray | None = None
    pair_coupling: np.ndarray | None = None
    pair_ground_max: np.ndarray | None = None
    left_state_rows: np.ndarray | None = None
    right_state_rows: np.ndarray | None = None
    pair_weight_error: np.ndarray | None = None
    line_keys: tuple[np.ndarray, np.ndarray] | None = None
    warm: WarmStarts = field(default_factory=WarmStarts, repr=False)  # simplex bases from the last call
    _reduced: tuple | None = field(default=None, repr=False)  # (p - q)+ and (q - p)+ per row, and the rows
    _reduced_warm: WarmStarts = field(default_factory=WarmStarts, repr=False)
    _dense: bool | None = field(default=None, repr=False)
    _plan_buffers: dict = field(default_factory=dict, repr=False)  # reused plan arrays (coupling iteration)
    _rows_per_pair: np.ndarray | None = field(default=None, repr=False)
    _single: bool | None = field(default=None, repr=False)
    _marginal: dict = field(default_factory=dict, repr=False)  # _marginal_error per ``reduced`` (fixed fields)

    def row_starts(self) -> np.ndarray:
        """Index of the first row of each pair."""
        return np.searchsorted(self.row_pair, np.arange(len(self.pairs)))

    def costs(self, D: np.ndarray, plans: bool = False, reuse: bool = False):
        """Transport values per row under the distance matrix ``D`` (and plans); see :meth:`transport`."""
        values, cells, _, _ = self.transport(D, plans, reuse)
        return values, cells

    def transport(self, D: np.ndarray, plans: bool = False, reuse: bool = False):
        """``(values, plans, gaps, at)``: transport values per row, their plans (or None), a bound
        on each value's distance to the exact transport cost between the exact laws under ``at``,
        and the distance matrix ``at`` they are computed for.

        For W1 with large supports on one MDP, when ``D`` is within 1e-12 (relative) of its metric
        closure (the largest pseudometric below it, :func:`bisimkit.pseudometric.metric_closure`), the
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
        values, cells = optimal_transport(
            X,
            src,
            Y,
            dst,
            at,
            p=self.p,
            plans=plans,
            zero_diagonal=zero,
            warm=warm,
            buffers=buffers,
            gaps=gaps,
            marginal=self._marginal_error(reduced),
        )
        if reduced:
            # the closure computed in floating point is a pseudometric up to a factor (1 + u) per triangle
            # step, and rerouting the shared mass of an optimal full plan takes at most n steps
            gaps += gamma(self.pairs.n + 1) * values
        return values, cells, gaps, at

    def _marginal_error(self, reduced: bool) -> np.ndarray | None:
        """Per transport problem: how far its two marginals may be from the exact ones, in total variation
        (for the shared-mass problems, both sides of ``(p - q)+`` and ``(q - p)+`` carry both laws' errors
        and the rounding of the subtraction)."""
        if self.left_law_error is None:
            return None
        if reduced not in self._marginal:
            right = self.left_law_error if self.right_law_error is None else self.right_law_error
            tv = self.left_law_error[self.row_src] + right[self.row_dst]
            self._marginal[reduced] = 4.0 * tv + 4.0 * U if reduced else tv
        return self._marginal[reduced]

    def evaluate(self, x: np.ndarray, plans: bool = False, reuse: bool = False) -> Evaluation:
        """``F`` at the pair vector ``x`` (or at its metric closure, see :meth:`transport`), with the
        bound on its error (class docstring)."""
        D = self.pairs.to_matrix(x)
        values, cells, gaps, at = self.transport(D, plans, reuse)
        point = x if at is D else self.pairs.from_matrix(at)
        c = self.discount
        value = self.combine(self.row_const + c * values)
        pair_error = self.pair_error(c * gaps, value)
        if self.pair_coupling is not None:
            reach = self.pair_ground_max
            if self.left_state_rows is not None:
                costs = at**self.p
                assert self.right_state_rows is not None  # given with left_state_rows
                left = state_maxima(self.left, costs.max(axis=1, initial=0.0), self.left_state_rows)
                right = state_maxima(self.right, costs.max(axis=0, initial=0.0), self.right_state_rows)
                reach = reach + c * np.minimum(left[self.pairs.s], right[self.pairs.t]) ** (1.0 / self.p)
            pair_error = pair_error + self.pair_coupling * reach
        error = float(np.max(pair_error, initial=0.0)) * (1 + 4 * U)
        return Evaluation(value, point, error, cells)

    def pair_error(self, row_gap: np.ndarray, value: np.ndarray) -> np.ndarray:
        """Per pair, a bound on the error of ``value`` (the pairs' reduced row values) from the rows' errors
        ``row_gap`` (c times each transport value's gap) and their one-step terms' ``row_const_error``, with
        the rounding of the reduction; the entangled coupling's charge (``pair_coupling``) is not included."""
        row_error = row_gap if self.row_const_error is None else row_gap + self.row_const_error
        size = np.abs(value)
        if self.reduce == "sum":
            # each row value is two rounded operations, weighted (one more; an entangled cell's weight is
            # itself off by u relative) and summed over the pair's rows
            if self._one_row_each():  # the same bound, without the scatter: one row of weight 1 per pair
                pair_error = row_error * (1 + 2 * gamma(1)) + gamma(5) * size
            else:
                pair_error = np.bincount(self.row_pair, weights=self.row_weight * row_error, minlength=len(self.pairs))
                pair_error = pair_error * (1 + 2 * gamma(self._max_rows())) + gamma_array(self._pair_rows() + 4) * size
            if self.pair_weight_error is not None:
                pair_error = pair_error + self.pair_weight_error * size
            return pair_error
        if not len(self.pairs):
            return np.zeros(0)
        return np.maximum.reduceat(row_error, self.row_starts()) + gamma(2) * size

    def _one_row_each(self) -> bool:
        """Whether the rows are a sum of one row of weight 1 per pair, in pair order (pi, psm, dbc, eps-avg):
        then the sums over each pair's rows are the rows themselves, exactly."""
        if self._single is None:
            k = len(self.pairs)
            self._single = bool(
                self.reduce == "sum"
                and len(self.row_pair) == k
                and np.array_equal(self.row_pair, np.arange(k))
                and np.all(self.row_weight == 1.0)
            )
        return self._single

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
                diff = self.left[self.row_src] - self.right[self.row_dst]
                self._reduced = (diff.maximum(0).tocsr(), (-diff).maximum(0).tocsr(), np.arange(len(self.row_src)))
                self._reduced[0].eliminate_zeros()
                self._reduced[1].eliminate_zeros()
            X, Y, rows = self._reduced
            return X, rows, Y, rows, False, self._reduced_warm, closed, True
        return self.left, self.row_src, self.right, self.row_dst, self.zero_diagonal, self.warm, D, False

    def seed_line(self, D: np.ndarray) -> None:
        """Warm-start the problems under ``D`` from monotone couplings along one coordinate: the given
        ``line_keys``, or on one MDP the distance to a farthest state (an end point when ``D`` is a line
        metric such as the one-step reward distance, whose optimal plans these then are)."""
        if self.p != 1 or D.size == 0 or self._widest() < LINE_SEED_MIN_ATOMS:
            return  # the greedy start of problems this small is at most a pivot from optimal, and costs nothing
        if self.line_keys is not None:
            h, g = self.line_keys
            if np.allclose(
                D,
                np.abs(h[:, None] - g[None, :]),
                rtol=0.0,
                atol=1e-12 * (1.0 + float(max(np.max(np.abs(h)), np.max(np.abs(g))))),
            ):
                seed_line_starts(self.left, self.row_src, self.right, self.row_dst, h, self.warm, g)
            return
        if not self.pairs.symmetric:
            return
        anchor = int(np.argmax(D[int(np.argmax(D[0]))]))  # two sweeps of "farthest from"
        h = D[:, anchor]
        line = np.allclose(D, np.abs(h[:, None] - h[None, :]), rtol=0.0, atol=1e-12 * (1.0 + float(h.max())))
        if not (line or self._shared_mass_pays()):
            return  # small supports: the greedy start is as good and costs nothing to set up
        X, src, Y, dst, _, warm, _, _ = self._problems(D)
        seed_line_starts(X, src, Y, dst, h, warm)

    def _widest(self) -> int:
        """The most atoms a law of either side has."""
        return int(max(np.max(np.diff(self.left.indptr), initial=0), np.max(np.diff(self.right.indptr), initial=0)))

    def _shared_mass_pays(self) -> bool:
        """The reduction applies (W1, zero diagonal, one MDP) and supports are large enough to gain."""
        if self.p != 1 or not self.zero_diagonal or not self.pairs.symmetric:
            return False
        if self._dense is None:
            sizes = np.diff(self.left.indptr)
            self._dense = bool(sizes.mean() > SHARED_MASS_MIN_SUPPORT)
        return self._dense

    def combine(self, row_values: np.ndarray) -> np.ndarray:
        """Reduce per-row values ``const + c * cost`` to one value per pair."""
        if self._one_row_each():
            return np.array(row_values, dtype=np.float64)  # what the sum of one row of weight 1 gives
        if self.reduce == "sum":
            return np.bincount(self.row_pair, weights=self.row_weight * row_values, minlength=len(self.pairs))
        return np.maximum.reduceat(row_values, self.row_starts())

    def apply(self, x: np.ndarray) -> np.ndarray:
        """One application of the operator to the pair vector ``x``."""
        costs, _ = self.costs(self.pairs.to_matrix(x))
        return self.combine(self.row_const + self.discount * costs)


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


def stein_error(form: SteinForm, value, size, chunk_cells: int = 131_072) -> float:
    """The bound of :meth:`SteinForm.evaluate` from the computed ``value`` and ``size = P |D| Q^T``
    (numpy arrays or torch tensors on one device), a block of rows at a time to bound the memory."""
    P, Q = form.P, form.right
    n = value.shape[0]
    if n == 0 or value.shape[1] == 0:
        return 0.0
    gp, gq = gamma(P.shape[1]), gamma(Q.shape[1])
    rp = form.P_relative if form.P_relative is not None else 0.0 * P[:, 0]
    rq = form.Q_relative if form.Q_relative is not None else (rp if form.Q is None else 0.0 * Q[:, 0])
    zeros_p, zeros_q = 0.0 * P[:, 0], 0.0 * Q[:, 0]
    row, col, relative, row_rel, col_rel = form.A_error or (zeros_p, zeros_q, 0.0, zeros_p, zeros_q)
    worst = 0.0
    chunk = max(1, chunk_cells // value.shape[1])  # rows per block: each temporary is (rows, n_Q)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        rel = (gp + gq + gp * gq + 2 * U) + rp[lo:hi, None] + rq[None, :]
        a_error = stein_a_error(form.A[lo:hi], (row[lo:hi], col, relative, row_rel[lo:hi], col_rel))
        error = a_error + form.discount * rel * (1 + 4 * U) * size[lo:hi] + gamma(2) * abs(value[lo:hi])
        worst = max(worst, float(error.max()))
    return worst * (1 + 4 * U)


# ------------------------------------------------------------- pair linear
@dataclass
class PairLinearForm:
    """``F(x) = b + c T x`` over a pair space (without the diagonal, d(s, s) = 0 is used): eps-bar, whose
    T holds the products of the entangled action and next-state couplings.

    What an evaluation is unsure of (``docs/operators.md#the-certificate``): ``b_error`` bounds the
    error of each ``b[pair]``; ``pair_coupling`` the measure of uniforms the computed action coupling
    sends to another cell than the exact one, ``pair_ground_max`` the largest ground term over the
    pair's action pairs, and ``pair_next`` the same measure for the next-state couplings (the largest
    over the pair's action rows); ``left_rows`` / ``right_rows`` are the two sides' next-state laws
    (CSR) and ``left_state_rows`` / ``right_state_rows`` each state's rows of them, which locate the
    distances a next-state coupling can reach."""

    pairs: PairSpace
    b: np.ndarray
    T: sp.csr_matrix  # float64, or float32 when ``product`` gives the exact float64 product
    discount: float
    product: Callable[[np.ndarray], np.ndarray] | None = None
    b_error: np.ndarray | None = None
    pair_coupling: np.ndarray | None = None
    pair_ground_max: np.ndarray | None = None
    pair_next: np.ndarray | None = None
    left_rows: object | None = None
    right_rows: object | None = None
    left_state_rows: np.ndarray | None = None
    right_state_rows: np.ndarray | None = None

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
            rows, cols = self.pairs.side_maxima(x)
            # the coupling charges come together: state rows and the next-state measure
            assert self.left_state_rows is not None and self.right_state_rows is not None
            assert self.pair_next is not None
            left = state_maxima(self.left_rows, rows, self.left_state_rows)
            right = state_maxima(self.right_rows, cols, self.right_state_rows)
            reach = np.minimum(left[self.pairs.s], right[self.pairs.t])
            error = error + self.pair_coupling * (self.pair_ground_max + c * reach) + c * self.pair_next * reach
        return Evaluation(value, x, float(np.max(error, initial=0.0)) * (1 + 4 * U))


def pair_system(
    pairs: PairSpace, row_pair: np.ndarray, row_weight: np.ndarray, cells: Cells, n_rows: int
) -> sp.csr_matrix:
    """The pairs x pairs matrix ``T[pair(r), pair(i, j)] += weight[r] * mass`` of fixed couplings.

    ``cells.problem`` indexes rows; cells on the diagonal (i == j) are dropped
    when the pair space has no diagonal (d(s, s) = 0 there), and so are empty cells.
    Duplicates are left in: the product T @ x adds them up, and summing them costs a sort.
    On the small-problem path (:mod:`bisimkit.kernels`) T is a dense numpy array.
    """
    small = on_small_path()
    if not small and cells.offsets is not None and len(cells) >= COMPILED_PAIR_SYSTEM_CELLS:
        return pair_system_from_slots(
            cells.offsets, cells.i, cells.j, cells.mass, row_pair, row_weight, pairs.index, len(pairs)
        )
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
