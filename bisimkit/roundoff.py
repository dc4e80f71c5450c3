"""What floating point is unsure of: the round-off bounds behind every certificate.

A certificate (``docs/operators.md#the-certificate``) bounds the distance from a computed value to
the exact fixed point of the exact MDP. The MDP is its stored float64 arrays, read as exact
rationals; a transition or policy row whose entries do not sum to exactly 1 stands for that row
divided by its exact sum. Every quantity the solvers derive from those arrays is computed in
floating point, and this module says by how much each can be off.

Notation: ``u = 2^-53`` is the unit round-off of float64 (round to nearest), and
``gamma(k) = k u / (1 - k u)`` bounds the relative error of a sum of k non-negative terms, or of a
dot product of k terms relative to the sum of the absolute products, in any order of summation
(Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Sec. 3.1).

* :func:`two_sum`, :func:`two_product`: error-free transformations, ``a + b = s + e`` and
  ``a b = p + e`` exactly (Knuth; Dekker 1971).
* :func:`dot_rows`: the dot product of every row of two arrays in twice the working precision,
  rounded once (Ogita, Rump, Oishi 2005, Algorithm Dot2), with the bound
  ``|result - exact| <= u |exact| + gamma(k)^2 sum |w x|`` (their Proposition 5.5).
* :func:`row_defects`: ``|exact row sum - 1|`` for rows of masses, 0 where the float sum is exact
  and equals 1.
* :func:`breakpoint_errors`: for each histogram, ``sum_i |computed breakpoint i - exact
  breakpoint i|``, the measure of the uniforms that the computed entangled coupling
  (:func:`bisimkit.couplings.merge_breakpoints`) sends to another cell than the exact one.
* :class:`MDPRoundOff`: these bounds for one MDP (per state and per state-action pair), which
  the operators turn into the per-pair charges of their evaluations.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .kernels import DenseRows, kernel

#: Unit round-off of float64: every correctly rounded operation has relative error at most U.
U = 2.0**-53
#: The smallest positive subnormal float64: a product that underflows is off by at most half of it.
TINY = 2.0**-1074
#: Dekker's splitting constant ``2^27 + 1``: ``a = hi + lo`` with both halves of 26 bits.
_SPLIT = 134217729.0
#: Above this magnitude the splitting could overflow; :func:`dot_rows` then uses the a priori bound.
_SPLIT_MAX = 2.0**995


def gamma(k: float) -> float:
    """``k u / (1 - k u)``: the relative error bound of a k-term sum of non-negative terms."""
    k = float(k)
    return k * U / (1.0 - k * U) if k * U < 0.5 else float("inf")


def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (Knuth's TwoSum; arrays or floats)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_product(a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``a b = p + e`` exactly (Dekker's TwoProduct), barring
    underflow (then ``|e|`` is off by at most :data:`TINY`) and overflow (``|a|, |b| < 2^995``)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


def dot_rows(W: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(value, rest, bound)`` for ``exact[r] = sum_j W[r, j] X[r, j]``: ``value + rest`` is the dot product in
    twice the working precision (``value`` its rounding to float64, ``rest`` that rounding's error, both
    exact floats) and ``bound`` bounds ``|value + rest - exact|``.

    Parameters
    ----------
    W, X : arrays of the same shape (R, k), or X broadcastable to it (e.g. (1, k)).

    Ogita, Rump and Oishi's Dot2 (2005): products split exactly by :func:`two_product`, summed by
    :func:`two_sum` with the errors gathered apart. Before its final rounding the result is within
    ``gamma(k)^2 sum_j |W X|`` of the exact value (the proof of their Prop. 5.5); that final rounding is
    kept exactly as ``rest``. ``bound = gamma(k)^2 sum |W X| (1 + gamma(k)) (1 + 4u) + 2 k TINY`` (the
    last term covers products that underflow). Inputs beyond ``2^995`` in magnitude, where the splitting
    could overflow, fall back to the plain sum with ``rest = 0`` and the a priori ``gamma(k) sum |W X|``.
    With one column (k = 1) the product and its error are the result: ``bound = 2 TINY``.
    """
    W = np.asarray(W, dtype=np.float64)
    X = np.broadcast_to(np.asarray(X, dtype=np.float64), W.shape)
    if W.ndim != 2:
        W, X = W.reshape(-1, 1), X.reshape(-1, 1)
    k = W.shape[1]
    zeros = np.zeros(W.shape[0])
    if k == 0:
        return zeros, zeros.copy(), zeros.copy()
    large = max(float(np.max(np.abs(W), initial=0.0)), float(np.max(np.abs(X), initial=0.0))) >= _SPLIT_MAX
    if k == 1 and not large:  # one product, split exactly (an underflow is off by at most TINY)
        value, rest = two_product(W[:, 0], X[:, 0])
        return value, rest, np.full(W.shape[0], 2 * TINY)
    absolute = np.abs(W * X).sum(axis=1)
    if large:
        return (W * X).sum(axis=1), zeros, gamma(k) * absolute * (1 + 4 * U)
    p, s = two_product(W[:, 0], X[:, 0])
    for j in range(1, k):
        h, r = two_product(W[:, j], X[:, j])
        p, q = two_sum(p, h)
        s = s + (q + r)
    value, rest = two_sum(p, s)  # the final rounding, exactly: value + rest = p + s
    bound = gamma(k) ** 2 * absolute * (1 + gamma(k)) * (1 + 4 * U) + 2 * k * TINY
    return value, rest, bound


def pair_differences(
    left: tuple[np.ndarray, np.ndarray, np.ndarray],
    s: np.ndarray,
    right: tuple[np.ndarray, np.ndarray, np.ndarray],
    t: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(const, error)``: ``const = |x(s) - y(t)|`` for quantities held as ``(value, rest, bound)`` triples,
    ``x = value + rest`` within ``bound`` of exact (:func:`dot_rows`, :func:`policy_average`), ``left``
    for x and ``right`` for y (the same triple for one MDP), and a bound on its distance to the exact one.
    Per-state scalars (values of shape (n,)) give one difference per index pair (``s``, ``t`` any
    broadcastable index arrays); per-state vectors (values of shape (n, k)) are summed over their k
    columns, ``||x(s) - y(t)||_1``.

    The difference is taken in twice the working precision: ``value_x(s) - value_y(t)`` by :func:`two_sum`
    (its rounding error kept), the rests' difference added, one rounding at the end. So ``const`` is the
    exact difference up to a few units of its own last place (three roundings of terms no larger than
    the rests and the result) plus the two inputs' bounds: the rounding of large, nearly equal means
    cancels instead of being charged at their size. The error is at most
    ``bound_x(s) + bound_y(t) + 3u (|rest_x(s)| + |rest_y(t)|) + 2u const`` (the separable form the Stein
    equations use). Values held exactly (no rest) take one rounded subtraction each."""
    (xv, xr, xb), (yv, yr, yb) = left, right
    if not (xr[s].any() or yr[t].any()):
        diff = xv[s] - yv[t]
        error = xb[s] + yb[t] + U * np.abs(diff)
    else:
        d, e = two_sum(xv[s], -yv[t])
        rest_diff = xr[s] - yr[t]
        tail = e + rest_diff
        diff = d + tail
        error = xb[s] + yb[t] + U * (np.abs(rest_diff) + np.abs(tail) + np.abs(diff)) * (1 + 4 * U)
    if xv.ndim == 1:
        return np.abs(diff), error
    k = diff.shape[-1]
    const = np.abs(diff).sum(axis=-1)
    return const, error.sum(axis=-1) + gamma(k) * const


def row_defects(X: np.ndarray, chunk_cells: int = 262_144) -> np.ndarray:
    """A bound on ``|sum of row - 1|`` (the exact sum of the stored floats) for every row of the last
    axis of the non-negative array ``X``.

    Rows whose entries all lie on the ``2^-52`` grid are summed exactly by floating point (every partial
    sum is such a multiple below 2), and the bound is ``|float sum - 1|`` itself. Other rows are summed
    in twice the working precision (pairwise, every addition by :func:`two_sum` with its error gathered
    apart: :func:`_cascade`), which leaves the exact sum within ``2 gamma(k) u log2(k)`` of the row's total
    of ``|x|``: the bound is ``|(s - 1) + e|`` plus that, so a row that sums to exactly 1 gets a defect of
    order 1e-30 instead of a unit of round-off. Works through the rows in blocks of about
    ``chunk_cells`` entries, to bound the memory.
    """
    X = np.asarray(X, dtype=np.float64)
    k = X.shape[-1] if X.ndim else 1
    rows = X.reshape(-1, k)
    out = np.empty(rows.shape[0])
    step = max(1, chunk_cells // max(k, 1))
    for lo in range(0, rows.shape[0], step):
        block = rows[lo : lo + step]
        total = block.sum(axis=1)
        scaled = block * 2.0**52
        if np.all(scaled == np.floor(scaled)) and np.all(total <= 1.5):
            out[lo : lo + step] = np.abs(total - 1.0)  # entries on the 2^-52 grid: every partial sum is exact
            continue
        total, lost, levels = _cascade(block)
        size = np.abs(block).sum(axis=1)
        out[lo : lo + step] = (
            np.abs((total - 1.0) + lost) * (1 + 4 * U)
            + 2 * gamma(k) * U * levels * size * (1 + gamma(k))
            + 2 * k * TINY
        )
    return out.reshape(X.shape[:-1])


def _plain_defects(X: np.ndarray) -> np.ndarray:
    """:func:`row_defects` from the float sums and their a priori error, ``|s - 1| + gamma(k) s`` (where the
    rest of a bound is a ``gamma(m)`` anyway, exact sums would buy nothing)."""
    total = np.asarray(X, dtype=np.float64).sum(axis=-1)
    return np.abs(total - 1.0) + gamma(X.shape[-1]) * total


def _cascade(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``(total, lost, levels)``: the rows of ``block`` summed pairwise, each level's additions by
    :func:`two_sum` with their rounding errors gathered in ``lost``, so ``total + lost`` is the exact sum up
    to the rounding of gathering the errors: each level's errors are at most ``u`` times that level's
    sums of ``|x|``, and summing them rounds by ``gamma(k)`` of that, so the remainder is below
    ``2 gamma(k) u levels sum |x|``."""
    values = block
    lost = np.zeros(block.shape[0])
    levels = 0
    while values.shape[1] > 1:
        if values.shape[1] % 2:
            values = np.concatenate([values, np.zeros((values.shape[0], 1))], axis=1)
        values, e = two_sum(values[:, 0::2], values[:, 1::2])
        lost = lost + e.sum(axis=1)
        levels += 1
    total = values[:, 0] if values.shape[1] else np.zeros(block.shape[0])
    return total, lost, levels


@kernel
def _breakpoint_errors(indptr, data, out):
    """Per CSR row: a bound on sum_i |computed breakpoint i - exact breakpoint i| (see breakpoint_errors)."""
    u = 1.1102230246251565e-16
    for r in range(len(indptr) - 1):
        lo = indptr[r]
        hi = indptr[r + 1]
        k = hi - lo
        if k <= 1:
            out[r] = 0.0  # one atom: its breakpoint is 1, exactly
            continue
        total = 0.0
        lost = 0.0  # sum of |rounding errors| of the running sum: |float total - exact total| <= lost
        for x in range(lo, hi):
            s = total + data[x]
            bb = s - total
            lost += abs((total - (s - bb)) + (data[x] - bb))
            total = s
        lost_total = lost * (1.0 + 2.0 * k * u)
        if total <= lost_total or total <= 0.0:
            out[r] = float(k)  # nothing is known about this row's breakpoints
            continue
        low = (total - lost_total) * (1.0 - 2.0 * u)  # a lower bound on the exact total
        exact_division = total == 1.0
        run = 0.0
        lost = 0.0
        acc = 0.0
        for x in range(lo, hi - 1):  # the last breakpoint is set to 1, which is exact
            s = run + data[x]
            bb = s - run
            lost += abs((run - (s - bb)) + (data[x] - bb))
            run = s
            b = run / total
            if b > 1.0:
                b = 1.0
            acc += (lost * (1.0 + 2.0 * k * u) + b * lost_total) / low
            if not exact_division:
                acc += u * b
        out[r] = acc * (1.0 + 4.0 * k * u)


def breakpoint_errors(X) -> np.ndarray:
    """For every row of ``X`` (CSR rows with sorted indices, a :class:`~bisimkit.kernels.DenseRows`, or a
    dense array of histograms along the last axis), a bound on ``sum_i |B~_i - B_i|``: ``B~`` the
    breakpoints :func:`bisimkit.couplings.breakpoints` computes (running sums, divided by the float
    total, the last one set to 1), ``B`` the exact ones of the row divided by its exact sum.

    Uses the exact rounding error of every addition of the running sums (:func:`two_sum`), so a row
    whose sums are exact and total 1 (dyadic masses) gets 0. Why it bounds the coupling's error:
    the entangled coupling maps a uniform U to the pair of atoms whose breakpoint intervals hold it;
    the computed and the exact coupling differ only on the U between a computed breakpoint and the
    exact one, a set of measure at most this sum (per side).
    """
    if isinstance(X, np.ndarray):
        X = DenseRows(X)
    elif not getattr(X, "has_sorted_indices", True):
        X = X.sorted_indices()
    out = np.zeros(X.shape[0])
    _breakpoint_errors(np.asarray(X.indptr, dtype=np.int64), np.ascontiguousarray(X.data, dtype=np.float64), out)
    return out


class MDPRoundOff:
    """Round-off bounds of the quantities the operators read from one MDP (module docstring), each computed
    when first asked for.

    Per state s (n,): the mean reward ``reward_pi`` with ``reward_pi_rest`` and ``reward_pi_bound`` (the
    exact mean reward under the normalised policy is within ``reward_pi_bound`` of ``reward_pi +
    reward_pi_rest``, :func:`policy_average`), the mean action ``mean_action`` (n, k) likewise with
    ``mean_action_rest`` and ``mean_action_bound``, ``pi_relative`` bounds the relative error of every entry
    of the stored ``Ppi`` row against the exact one and ``pi_law_error`` the row's total variation from it
    (:func:`mixture_errors`),
    ``policy_defect`` bounds ``|sum pi(s) - 1|`` (:func:`row_defects`), ``policy_breakpoints`` is
    :func:`breakpoint_errors` of the policy row, ``reward_high`` / ``reward_low`` are the largest and
    smallest ``R(s, a)`` over the actions the policy uses (all actions without a policy). Per
    state-action row ``s m + a`` (n m,): ``transition_defect`` bounds ``|sum P(s, a) - 1|``,
    ``transition_law_error`` the total variation between the stored ``P(s, a)`` and the exact law, and
    ``transition_breakpoints`` is :func:`breakpoint_errors` of ``P(s, a)``.
    """

    FIELDS = (
        "reward_pi",
        "reward_pi_rest",
        "reward_pi_bound",
        "mean_action",
        "mean_action_rest",
        "mean_action_bound",
        "pi_relative",
        "pi_law_error",
        "policy_defect",
        "policy_breakpoints",
        "reward_high",
        "reward_low",
        "transition_defect",
        "transition_law_error",
        "transition_breakpoints",
    )

    def __init__(self, mdp) -> None:
        self._mdp = mdp

    @property
    def reward_pi(self) -> np.ndarray:
        return self._mdp.reward_pi

    @property
    def reward_pi_rest(self) -> np.ndarray:
        return self._mdp._reward_pi[1]

    @property
    def reward_pi_bound(self) -> np.ndarray:
        return self._mdp._reward_pi[2]

    @property
    def mean_action(self) -> np.ndarray:
        return self._mdp.mean_action

    @property
    def reward_pi_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(value, rest, bound)`` of the mean rewards, for :func:`pair_differences`."""
        return self._mdp._reward_pi

    @property
    def mean_action_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(value, rest, bound)`` of the mean actions, for :func:`pair_differences`."""
        return self._mdp._mean_action

    @property
    def mean_action_rest(self) -> np.ndarray:
        return self._mdp._mean_action[1]

    @property
    def mean_action_bound(self) -> np.ndarray:
        return self._mdp._mean_action[2]

    @cached_property
    def _mixture(self) -> tuple[np.ndarray, np.ndarray]:
        if self._mdp.policy is None:
            return self._zeros(), self._zeros()
        if self._mdp.sparse and self._mdp.n_actions == 1:
            # a sparse chain's Ppi rows are its transition rows (FiniteMDP.transition_pi_rows): each entry is
            # off from the normalised row's by the factor 1 / sum, relatively by at most d / (1 - d)
            d = self.transition_defect
            relative = d / np.maximum(1.0 - d, 0.5) * (1 + 8 * U)
            return relative, 0.5 * relative
        return mixture_errors(self._mdp.policy, self._transitions(), self._mdp.n_actions)

    @property
    def pi_relative(self) -> np.ndarray:
        return self._mixture[0]

    @property
    def pi_law_error(self) -> np.ndarray:
        return self._mixture[1]

    @cached_property
    def policy_defect(self) -> np.ndarray:
        return self._zeros() if self._mdp.policy is None else row_defects(self._mdp.policy)

    @cached_property
    def policy_breakpoints(self) -> np.ndarray:
        return self._zeros() if self._mdp.policy is None else breakpoint_errors(self._mdp.policy)

    @cached_property
    def _reward_range(self) -> tuple[np.ndarray, np.ndarray]:
        R, pi = self._mdp.rewards, self._mdp.policy
        used = np.ones(R.shape, dtype=bool) if pi is None else pi > 0
        return np.where(used, R, -np.inf).max(axis=1), np.where(used, R, np.inf).min(axis=1)

    @property
    def reward_high(self) -> np.ndarray:
        return self._reward_range[0]

    @property
    def reward_low(self) -> np.ndarray:
        return self._reward_range[1]

    @cached_property
    def transition_defect(self) -> np.ndarray:
        rows = self._transitions()
        return row_defects_csr(rows) if hasattr(rows, "indptr") else row_defects(rows)

    def _transitions(self):
        """The transition rows as the MDP holds them: an (n m, n) dense view of a dense MDP (no sparse copy of
        it is made), else the CSR rows."""
        if self._mdp.sparse:
            return self._mdp.transition_rows
        return self._mdp.transitions.reshape(-1, self._mdp.n_states)

    @cached_property
    def transition_law_error(self) -> np.ndarray:
        d = self.transition_defect
        return 0.5 * d / np.maximum(1.0 - d, 0.5)

    @cached_property
    def transition_breakpoints(self) -> np.ndarray:
        return breakpoint_errors(self._mdp.transition_rows)

    def _zeros(self) -> np.ndarray:
        return np.zeros(self._mdp.n_states)


def policy_average(
    policy: np.ndarray, values: np.ndarray, defect: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(value, rest, bound)``: ``sum_a pi[s, a] values[s, a]`` (values (n, m), or (1, m) for values shared
    by every state) as :func:`dot_rows` gives it, with ``bound`` widened to cover the exact average under
    the normalised policy row ``pi[s] / sum(pi[s])`` (``defect``, :func:`row_defects` of the policy, bounds
    the normalisation; computed when not given)."""
    value, rest, bound = dot_rows(policy, values)
    defect = row_defects(policy) if defect is None else defect
    size = np.abs(value) + np.abs(rest) + bound
    return value, rest, bound + size * defect / np.maximum(1.0 - defect, 0.5) * (1 + 4 * U)


def grid_bits(X: np.ndarray, chunk_cells: int = 1_048_576) -> int:
    """The smallest k (0 to 52, or 53 for "none") such that every entry of ``X`` (in [0, 2)) is a multiple of
    ``2^-k``: the binary digits after the point that the entries need. Sums of such numbers below 2 are
    exact in float64; products of an entry on a ``2^-a`` grid with one on a ``2^-b`` grid, a + b <= 53,
    are exact too.

    Read from each entry's binary form: with ``|x| = f 2^e``, ``f`` in [0.5, 1) (``np.frexp``), the integer
    ``f 2^53`` has its lowest set bit at ``2^(t - 1)``, so x is a multiple of ``2^(e - 54 + t)`` and of no
    finer power of two: it needs ``54 - e - t`` digits after the point (none if that is not positive). Taken
    ``chunk_cells`` entries at a time, the first 64 on their own (a few entries usually settle it). Entries
    that are not finite take :func:`_grid_bits_by_bisection`."""
    flat = np.asarray(X, dtype=np.float64).reshape(-1)
    need = 0
    for lo, hi in [(0, min(64, len(flat)))] + [(lo, lo + chunk_cells) for lo in range(64, len(flat), chunk_cells)]:
        part = np.abs(flat[lo:hi])
        part = part[part != 0.0]
        if not part.size:
            continue
        if not np.isfinite(part).all():
            return _grid_bits_by_bisection(flat, chunk_cells)
        fraction, exponent = np.frexp(part)
        digits = (fraction * 2.0**53).astype(np.int64)  # exact: an integer below 2^53
        _, lowest = np.frexp((digits & -digits).astype(np.float64))  # the lowest set bit is 2^(lowest - 1)
        need = max(need, int(np.max(54 - exponent - lowest)))
        if need > 52:
            return 53
    return need


def _grid_bits_by_bisection(flat: np.ndarray, chunk_cells: int) -> int:
    """:func:`grid_bits` by testing grids (``x 2^k`` whole for every entry), for entries that are not all finite:
    an infinite entry is on every grid, NaN on none."""

    def on_grid(k: int) -> bool:
        for lo in range(0, len(flat), chunk_cells):
            scaled = flat[lo : lo + chunk_cells] * 2.0**k
            if not np.all(scaled == np.floor(scaled)):
                return False
        return True

    if not on_grid(52):
        return 53
    if on_grid(0):
        return 0
    low, high = 1, 52  # on_grid(high) holds, on_grid(0) does not
    while low < high:
        mid = (low + high) // 2
        if on_grid(mid):
            high = mid
        else:
            low = mid + 1
    return high


def mixture_errors(policy: np.ndarray, rows, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(relative, tv)`` per state for the stored ``Ppi`` of :attr:`bisimkit.mdp.FiniteMDP.transition_pi` (the
    mixture ``sum_a pi(s, a) P(s, a)``, renormalised): a bound on the relative error of every entry of the row
    against the exact law ``sum_a pi^(s, a) P^(s, a)`` of the normalised rows, and on the row's total
    variation from it. ``rows`` are the transition rows ``P(s, a)`` (row ``s m + a``: CSR, or a dense (n m, n)
    array).

    Exact when the inputs allow it: when the policy's entries lie on a ``2^-a`` grid and the transition
    masses on a ``2^-b`` grid with ``a + b <= 53`` (:func:`grid_bits`), every product and every partial
    sum is a multiple of ``2^-(a+b)`` below 2, so the mixture is computed exactly; rows that also sum to
    exactly 1 make its renormalisation exact as well, and the bound is 0. Otherwise the a priori bound:
    the m-term sums are off by ``gamma(m)`` relative to the exact mixture of the stored rows, the inputs'
    normalisation by their defects (:func:`row_defects`), and the renormalisation (a sum of n terms and a
    division) by ``gamma(n) + u``; dividing by a sum that is itself off by the first part doubles it."""
    n = policy.shape[0]
    sparse = hasattr(rows, "indptr")
    widest = int(np.max(np.diff(rows.indptr), initial=1)) if sparse else rows.shape[1]
    support = min(widest * m, n)  # the longest mixture row's terms
    # a policy of 0s and 1s (one action, or deterministic) qualifies with any rows: its products are the
    # masses themselves or 0, and each mixture sum adds zeros to one row, exactly
    policy_bits = grid_bits(policy)
    if policy_bits == 0 or policy_bits + grid_bits(rows.data if sparse else rows) <= 53:
        pi_defect = row_defects(policy)  # on a grid: exact sums, cheaply
        P_defect = (row_defects_csr(rows) if sparse else row_defects(rows)).reshape(n, m).max(axis=1)
        mixture = np.zeros(n)  # the products and sums are exact
        renormalise = np.where((pi_defect == 0) & (P_defect == 0), 0.0, gamma(support) + 2 * U)
    else:
        pi_defect = _plain_defects(policy)
        defects = row_defects_csr(rows, compensated=False) if sparse else _plain_defects(rows)
        P_defect = defects.reshape(n, m).max(axis=1)
        mixture = np.full(n, gamma(m))
        renormalise = np.full(n, gamma(support) + 2 * U)
    d_in = pi_defect + P_defect + pi_defect * P_defect
    relative = (2.0 * (mixture + d_in / np.maximum(1.0 - d_in, 0.5)) + renormalise) * (1 + 8 * U)
    return relative, 0.5 * relative


def row_defects_csr(rows, compensated: bool = True) -> np.ndarray:
    """:func:`row_defects` for the rows of a CSR matrix (or :class:`~bisimkit.kernels.DenseRows`), from their stored
    entries only: exact when a row's entries lie on the ``2^-52`` grid; otherwise summed in twice the working
    precision (``compensated``) or bounded a priori (``|s - 1| + gamma(k) s``, k the row's entries). An empty
    row's defect is 1. :func:`_csr_row_defects`."""
    ptr = rows.indptr if rows.indptr.dtype in (np.int32, np.int64) else rows.indptr.astype(np.int64)
    out = np.empty(len(ptr) - 1)
    _csr_row_defects(ptr, np.asarray(rows.data, dtype=np.float64), bool(compensated), out)
    return out


@kernel
def _csr_row_defects(indptr, data, compensated, out):
    """``out[r]`` bounds ``|sum of row r - 1|``, the exact sum of the stored floats of the CSR row r.

    A row whose k entries all lie on the ``2^-52`` grid and whose float sum ``s`` is at most 1.5 is summed
    exactly (every partial sum is such a multiple below 2): ``|s - 1|``. Otherwise, ``compensated``: the
    running sum keeps every addition's rounding error (Knuth's TwoSum) and adds them apart into ``lost``,
    Ogita, Rump and Oishi's Sum2 (2005): the errors total at most ``gamma(k - 1) sum |x|`` and adding them
    rounds by ``gamma(k - 1)`` of that, so the exact sum is within ``gamma(k)^2 sum |x|`` of ``s + lost``;
    the bound is ``|(s - 1) + lost|`` (two roundings, covered by ``1 + 4u``) plus that, and ``2 k TINY`` for
    errors below the smallest subnormal. Not ``compensated``: the a priori ``|s - 1| + gamma(k) s``.

    Arguments
    ---------
    indptr, data : int32 or int64, float64
        The rows: row r's entries are ``data[indptr[r]:indptr[r + 1]]`` (non-negative).
    compensated : bool
        Sum the rows that are off the grid in twice the working precision.
    out : float64 (R,)
        Output: the bound per row (1.0 for an empty row, whose sum is 0).
    """
    u = 1.1102230246251565e-16
    tiny = 5e-324
    for r in range(len(indptr) - 1):
        lo = indptr[r]
        hi = indptr[r + 1]
        k = hi - lo
        if k == 0:
            out[r] = 1.0
            continue
        total = 0.0
        lost = 0.0
        size = 0.0
        on_grid = True
        for x in range(lo, hi):
            v = data[x]
            scaled = v * 4503599627370496.0
            if scaled != np.floor(scaled):
                on_grid = False
            s = total + v
            bb = s - total
            lost += (total - (s - bb)) + (v - bb)
            total = s
            size += abs(v)
        if on_grid and total <= 1.5:
            out[r] = abs(total - 1.0)
            continue
        g = k * u / (1.0 - k * u)
        if compensated:
            out[r] = abs((total - 1.0) + lost) * (1.0 + 4.0 * u) + g * g * size * (1.0 + 4.0 * u) + 2.0 * k * tiny
        else:
            out[r] = abs(total - 1.0) + g * total


def gamma_array(k: np.ndarray) -> np.ndarray:
    """:func:`gamma` elementwise, for arrays of term counts."""
    k = np.asarray(k, dtype=np.float64)
    return k * U / (1.0 - k * U)


def grid_breakpoint_error(shape: tuple[int, ...]) -> float:
    """An a priori bound on the measure of uniforms that the computed coordinate-wise (Rosenblatt) coupling
    of one law on a grid of ``shape`` sends to another cell than the exact one (its share; the law it is
    coupled with adds its own).

    Coordinate k draws from the law of its K values given the earlier coordinates: masses that are sums
    of the ``rest`` cells behind each value (relative error ``gamma(rest)`` each, the normalisation cancels
    in the ratios), whose breakpoints are running sums divided by their total: each of the K - 1
    breakpoints is off by at most ``2 gamma(rest) + 2 gamma(K) + u``. Branches of the chain are weighted
    by their masses (summing to 1), and each coordinate's product of masses adds one rounding."""
    total = 0.0
    for axis, size in enumerate(shape):
        rest = float(np.prod(shape[axis + 1 :], dtype=np.float64)) if axis + 1 < len(shape) else 1.0
        total += (size - 1) * (2 * gamma(rest) + 2 * gamma(size) + U) + U
    return total * (1 + 8 * U)
