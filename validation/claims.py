"""One check per claim C1-C10 (``docs/claims.md``).

A check takes a :class:`~validation.families.Case` (plus a cache of fixed
points shared by all checks on that case) and returns an :class:`Outcome`:
whether the claim held on that case and its *margin*, the signed slack of the
claim's inequality (negative = violated by that much). Equalities report
``-|difference|``. Fixed points are certified to 1e-10; comparisons allow
:data:`ATOL`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from itertools import permutations
from typing import Callable

import numpy as np
import scipy.sparse as sp

from bisimkit.couplings import entangled_cells, independent_cells
from bisimkit.ground import Ground, ground_values
from bisimkit.mdp import FiniteMDP, coordinate_independent
from bisimkit.operators import entangled_parts, policy_cells
from bisimkit.order import Order, relabelled
from bisimkit.pairs import PairSpace
from bisimkit.pseudometric import check_pseudometric
from bisimkit.relations import blocks, eps_relation_labels, relation_labels, zero_set_labels
from bisimkit.separable import monge_violation, separable_parts
from bisimkit.solvers import PrecisionWarning, ZeroGroundWarning, solve
from bisimkit.transport import optimal_transport

from .families import Case

#: Slack allowed in comparisons (fixed points are certified to 1e-10).
ATOL = 1e-8
#: Certified tolerance of the fixed points the checks use.
SOLVE_TOL = 1e-10
#: Distances at or below this count as zero when comparing zero sets.
ZERO = 1e-7


@dataclass
class Outcome:
    """Result of one claim on one case."""

    held: bool
    margin: float
    detail: str = ""


class FixedPoints:
    """Lazily computed, cached fixed points and relations of one case."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self._d: dict = {}
        self._rel: dict = {}
        self.solve_seconds = 0.0

    def _key(self, ground: Ground | None):
        if ground is None or isinstance(ground, str):
            return ground
        return "user"

    def solution(
        self,
        metric: str,
        ground: Ground | None = None,
        full_diagonal: bool = False,
        order: str | tuple = "index",
        action_order: str | tuple = "index",
    ):
        """The :class:`~bisimkit.solvers.Solution` of ``metric`` (eps family: ``ground``, default
        the case's); ``full_diagonal`` solves for d(s, s) as well instead of taking it as 0;
        ``order`` / ``action_order``: a name or a permutation tuple (:mod:`bisimkit.order`)."""
        if metric.startswith("eps") and ground is None:
            ground = self.case.ground
        key = (metric, self._key(ground), full_diagonal, order, action_order)
        if key not in self._d:
            t = time.perf_counter()
            with warnings.catch_warnings():  # cases with a vanishing ground are checked on purpose, and each
                warnings.simplefilter("ignore", ZeroGroundWarning)  # check reads certified_error and notes
                warnings.simplefilter("ignore", PrecisionWarning)  # a solve that missed its tolerance
                self._d[key] = solve(
                    self.case.mdp,
                    metric,
                    ground=ground,
                    tol=SOLVE_TOL,
                    full_diagonal=full_diagonal,
                    order=list(order) if isinstance(order, tuple) else order,
                    action_order=(list(action_order) if isinstance(action_order, tuple) else action_order),
                )
            self.solve_seconds += time.perf_counter() - t
        return self._d[key]

    def d(
        self,
        metric: str,
        ground: Ground | None = None,
        order: str | tuple = "index",
        action_order: str | tuple = "index",
    ) -> np.ndarray:
        """Fixed point of ``metric`` as an n x n matrix (under the given orders)."""
        return self.solution(metric, ground, order=order, action_order=action_order).distances

    def relation(self, kind: str, ground: Ground | None = None, reading: str = "class-mass") -> np.ndarray:
        """Block labels of the largest relation of ``kind`` (eps: under ``ground`` and ``reading``)."""
        ground = (self.case.ground if ground is None else ground) if kind == "eps" else "reward"
        key = (kind, self._key(ground), reading)
        if key not in self._rel:
            if kind == "eps":
                self._rel[key] = eps_relation_labels(self.case.mdp, ground, reading=reading)
            else:
                self._rel[key] = relation_labels(self.case.mdp, kind, ground)
        return self._rel[key]


def _mismatches(a: np.ndarray, b: np.ndarray) -> int:
    """Number of state pairs related by exactly one of two labellings."""
    A = a[:, None] == a[None, :]
    B = b[:, None] == b[None, :]
    return int(np.triu(A != B, 1).sum())


def _refines(inner: np.ndarray, outer: np.ndarray) -> bool:
    """Every block of ``inner`` lies inside one block of ``outer``."""
    return all(len(set(outer[b].tolist())) == 1 for b in blocks(inner))


# ------------------------------------------------------------------ checks
#: The operators C1 checks: those the paper calls pseudometrics (a test holds the solvers' `pseudometric` flags to it).
PSEUDOMETRIC_METRICS = ("bisim", "pi", "psm", "dbc", "eps", "eps-avg", "eps-bar")


def check_c1(fp: FixedPoints) -> Outcome:
    """C1: the fixed points of the metric operators are pseudometrics.

    The fixed points are solved with the diagonal as unknowns (``full_diagonal``),
    so a zero diagonal is a result, not an assumption. A violation counts only beyond what the
    certified error allows (three entries of a triangle may each be off by it); a solve that
    missed its tolerance is noted.
    """
    worst, where, notes = 0.0, "", []
    for metric in PSEUDOMETRIC_METRICS:
        sol = fp.solution(metric, full_diagonal=True)
        slack = 3 * sol.certified_error
        rep = check_pseudometric(sol.distances, atol=ATOL + slack)
        excess = max(rep.worst_margin - slack, 0.0)
        if excess > worst:
            worst, where = excess, f"{metric}: {rep.describe()}"
        if not sol.converged:
            notes.append(f"{metric} reached certified error {sol.certified_error:.2g} only")
    return Outcome(worst <= ATOL, -worst, "; ".join([where] * bool(where) + notes))


def check_c2_literal(fp: FixedPoints) -> Outcome:
    """C2, literal reading: the zero set of d_eps equals E_eps with identical transition laws."""
    k = _mismatches(zero_set_labels(fp.d("eps"), ZERO), fp.relation("eps", reading="literal"))
    return Outcome(k == 0, -float(k), f"{k} pairs differ" if k else "")


def check_c2(fp: FixedPoints) -> Outcome:
    """C2: zero sets of d_pi, d_bisim, d_eps equal E_pi, E_bisim, E_eps."""
    bad, detail = 0, []
    for metric, kind in (("pi", "pi"), ("bisim", "bisim"), ("eps", "eps")):
        k = _mismatches(zero_set_labels(fp.d(metric), ZERO), fp.relation(kind))
        if k:
            detail.append(f"{metric}: {k} pairs differ")
        bad += k
    if fp.case.origin is not None:  # planted copies must be related
        o = fp.case.origin
        same = (o[:, None] == o[None, :]) & ~np.eye(len(o), dtype=bool)
        lab = fp.relation("pi")
        broken = int(np.sum(same & (lab[:, None] != lab[None, :])) // 2)
        if broken:
            detail.append(f"{broken} planted pairs not pi-related")
        bad += broken
    return Outcome(bad == 0, -float(bad), "; ".join(detail))


def check_c3(fp: FixedPoints) -> Outcome:
    """C3: d_eps(reward) >= d_pi, d_eps(policy) >= d_psm; E_eps inside E_pi and E_psm."""
    m1 = float(np.min(fp.d("eps", "reward") - fp.d("pi")))
    m2 = float(np.min(fp.d("eps", "policy") - fp.d("psm")))
    inc = _refines(fp.relation("eps", "reward"), fp.relation("pi")) and _refines(
        fp.relation("eps", "policy"), fp.relation("psm")
    )
    margin = min(m1, m2)
    held = margin >= -ATOL and inc
    return Outcome(
        held,
        margin if inc else min(margin, -1.0),
        f"min(d_eps_r - d_pi) = {m1:.3g}, min(d_eps_p - d_psm) = {m2:.3g}"
        + ("" if inc else "; relation inclusion fails"),
    )


def check_c4(fp: FixedPoints, reading: str = "class-mass") -> Outcome:
    """C4: d_eps-bar >= d_eps, d_eps-bar = 0 on E_eps, zero diagonal."""
    bar, eps = fp.d("eps-bar"), fp.d("eps")
    lab = fp.relation("eps", reading=reading)
    related = lab[:, None] == lab[None, :]
    m_upper = float(np.min(bar - eps))
    m_zero = -float(np.max(np.abs(bar[related])))
    margin = min(m_upper, m_zero)
    return Outcome(margin >= -ATOL, margin, f"min(d_bar - d_eps) = {m_upper:.3g}, max d_bar on E_eps = {-m_zero:.3g}")


def check_c4_literal(fp: FixedPoints) -> Outcome:
    """C4, literal reading (E_eps with identical transition laws)."""
    return check_c4(fp, reading="literal")


def c5_hypotheses(fp: FixedPoints) -> tuple[bool, str]:
    """Whether the tightness hypotheses hold on this case, and why not."""
    mdp = fp.case.mdp
    if mdp.state_shape is None:
        return False, "no product state space"
    if not coordinate_independent(mdp):
        return False, "transitions not coordinate independent"
    parts, residual = separable_parts(fp.d("eps-bar"), mdp.state_shape)
    if residual > ATOL:
        return False, f"d_eps-bar not separable (residual {residual:.2g})"
    worst = max(monge_violation(f) for f in parts)
    if worst > ATOL:
        return False, f"a coordinate term is not Monge (by {worst:.2g})"
    return True, "coordinate independent; d_eps-bar separable with Monge terms"


def check_c5(fp: FixedPoints) -> Outcome:
    """C5: d_eps-bar = d_eps when the tightness hypotheses hold (gap reported either way)."""
    gap = float(np.max(fp.d("eps-bar") - fp.d("eps")))
    ok, why = c5_hypotheses(fp)
    if ok:
        return Outcome(gap <= ATOL, -gap, f"hypotheses hold; gap {gap:.3g}")
    return Outcome(gap <= ATOL, -gap, f"hypotheses fail ({why}); gap measured: {gap:.3g}")


def check_c6(fp: FixedPoints) -> Outcome:
    """C6: every entangled sample at (z, z) is 0, and E_ge G(z,a,z,a') = 0.

    The samples are those of the library's eps-bar (:func:`bisimkit.operators.entangled_parts`
    on the pairs (s, s)): an entangled action pair with one of its entangled next-state pairs.
    """
    mdp = fp.case.mdp
    states = PairSpace.diagonal_only(mdp.n_states)
    parts = entangled_parts(mdp, fp.case.ground, states)
    samples = parts.samples(mdp.discount, fp.d("pi"))
    worst = max(float(np.max(np.abs(samples))), float(np.max(parts.constant)))
    # Contrast: the independent coupling's expected G at identical states.
    pi = sp.csr_matrix(mdp.policy)
    ind = independent_cells(pi, states.s, pi, states.t)
    Gi = ground_values(mdp, fp.case.ground, ind.problem, ind.i, ind.problem, ind.j)
    indep = float(np.max(np.bincount(ind.problem, weights=ind.mass * Gi, minlength=mdp.n_states)))
    return Outcome(
        worst <= ATOL,
        -worst,
        f"max |sample| = {worst:.3g} over {len(samples)} samples; independent E[G] at (z,z) up to {indep:.3g}",
    )


def check_c7_pair(p: np.ndarray, q: np.ndarray) -> Outcome:
    """C7: the entangled coupling of two m-atom histograms has at most 2m - 1 cells."""
    X = sp.csr_matrix(np.vstack([p, q]))
    cells = entangled_cells(X, np.array([0]), X, np.array([1]))
    m = len(p)
    bound = min(2 * m - 1, int((p > 0).sum() + (q > 0).sum() - 1))
    return Outcome(len(cells) <= bound, float(bound - len(cells)), f"{len(cells)} cells, bound {bound} (m = {m})")


def check_c7(fp: FixedPoints) -> Outcome:
    """C7 on every policy pair and every transition pair of the case."""
    mdp = fp.case.mdp
    worst = np.inf
    detail = ""
    P = mdp.transitions.reshape(-1, mdp.n_states)
    for X in (mdp.policy, P):
        Xs = sp.csr_matrix(X)
        k = X.shape[0]
        src, dst = np.triu_indices(k, 1)
        if not len(src):
            continue
        cells = entangled_cells(Xs, src, Xs, dst)
        count = np.bincount(cells.problem, minlength=len(src))
        support = (X > 0).sum(axis=1)
        bound = np.minimum(2 * X.shape[1] - 1, support[src] + support[dst] - 1)
        slack = bound - count
        i = int(np.argmin(slack))
        if slack[i] < worst:
            worst = float(slack[i])
            detail = f"{count[i]} cells against bound {bound[i]} (m = {X.shape[1]})"
    return Outcome(worst >= 0, worst, detail)


def check_c8(fp: FixedPoints) -> Outcome:
    """C8: the sampled DBC and PSM fixed points have d(s, s) > 0 at stochastic-policy
    states, except where the paper says they need not (Sec. 4): DBC unless the
    rewards of the actions in the policy's support are all equal; PSM unless all
    independently reachable next states are at distance 0 from each other."""
    mdp = fp.case.mdp
    pi, R = mdp.policy, mdp.rewards
    stochastic = (pi > 0).sum(axis=1) >= 2
    if not stochastic.any():
        return Outcome(True, np.inf, "no state with a stochastic policy")
    dbc, psm = fp.d("dbc-sampled"), fp.d("psm-sampled")
    supported = np.where(pi > 0, R, np.nan)
    dbc_due = stochastic & (np.nanmax(supported, axis=1) - np.nanmin(supported, axis=1) > ZERO)
    reach = mdp.transition_pi > 0
    psm_due = stochastic & np.array([bool(np.any(psm[np.ix_(r, r)] > ZERO)) for r in reach])
    values = np.concatenate([np.diag(dbc)[dbc_due], np.diag(psm)[psm_due]])
    margin = float(values.min()) if values.size else np.inf
    return Outcome(
        margin > ZERO,
        margin,
        f"{int(stochastic.sum())} stochastic states; d(s,s) > 0 due at {int(dbc_due.sum())} (dbc-sampled), "
        f"{int(psm_due.sum())} (psm-sampled); smallest {margin:.3g}",
    )


def check_c9(fp: FixedPoints) -> Outcome:
    """C9: Jensen: sum ge G_reward >= |Rpi(s) - Rpi(t)|, and the entangled
    average of W1 >= W1 of the policy averages (for d = d_pi and d = d_eps)."""
    mdp = fp.case.mdp
    n, m = mdp.n_states, mdp.n_actions
    pairs = PairSpace(n, diagonal=False)
    if len(pairs) == 0:
        return Outcome(True, np.inf, "one state")
    ge = policy_cells(mdp, pairs)
    s, t = pairs.s[ge.problem], pairs.t[ge.problem]
    G = ground_values(mdp, "reward", s, ge.i, t, ge.j)
    lhs = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(pairs))
    rhs = np.abs(mdp.reward_pi[pairs.s] - mdp.reward_pi[pairs.t])
    margin = float(np.min(lhs - rhs))
    for metric in ("pi", "eps"):
        d = fp.d(metric)
        w_sa, _ = optimal_transport(mdp.transition_rows, s * m + ge.i, mdp.transition_rows, t * m + ge.j, d)
        avg = np.bincount(ge.problem, weights=ge.mass * w_sa, minlength=len(pairs))
        w_pi, _ = optimal_transport(mdp.transition_pi_rows, pairs.s, mdp.transition_pi_rows, pairs.t, d)
        margin = min(margin, float(np.min(avg - w_pi)))
    return Outcome(margin >= -ATOL, margin, f"min slack {margin:.3g}")


#: Random state (on grids: coordinate) orders and random action orders tried per case by C11.
C11_STATE_ORDERS = 3
C11_ACTION_ORDERS = 2


def _random_orders(n: int, count: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Up to ``count`` distinct non-identity permutations of ``0..n-1`` (all of them when fewer exist)."""
    identity = tuple(range(n))
    if n <= 1:
        return []
    if n <= 4:  # few permutations: take them in a seeded shuffle
        pool = [p for p in permutations(range(n)) if p != identity]
        rng.shuffle(pool)
        return pool[:count]
    out: list[tuple[int, ...]] = []
    while len(out) < count:
        p = tuple(int(x) for x in rng.permutation(n))
        if p != identity and p not in out:
            out.append(p)
    return out


def c11_orders(fp: FixedPoints) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The relabellings C11 tries on a case (seeded by the case's own numbers, so a case always
    gets the same ones): state orders (on a grid, coordinate orders) and action orders."""
    mdp = fp.case.mdp
    if "c11" not in fp._rel:
        digest = np.frombuffer(mdp.transitions.tobytes()[:4096] + mdp.rewards.tobytes()[:4096], dtype=np.uint8)
        rng = np.random.default_rng([int(digest.sum()), mdp.n_states, mdp.n_actions])
        k = len(mdp.state_shape) if mdp.state_shape is not None else mdp.n_states
        fp._rel["c11"] = (
            _random_orders(k, C11_STATE_ORDERS, rng),
            _random_orders(mdp.n_actions, C11_ACTION_ORDERS, rng),
        )
    return fp._rel["c11"]


def _flat(fp: FixedPoints) -> FixedPoints:
    """The case without its grid (class-contiguous renumbering needs a flat state space)."""
    mdp = fp.case.mdp
    if mdp.state_shape is None:
        return fp
    if "flat" not in fp._rel:
        flat = FiniteMDP(mdp.transitions, mdp.rewards, mdp.discount, mdp.policy, mdp.action_values, None, mdp.name)
        fp._rel["flat"] = FixedPoints(Case(flat, fp.case.ground))
    return fp._rel["flat"]


def _spread(mats: list[np.ndarray]) -> float:
    """Largest per-pair (max - min) over the matrices."""
    stack = np.stack(mats)
    return float(np.max(stack.max(axis=0) - stack.min(axis=0)))


def zero_part(fp: FixedPoints, order: str | tuple = "index", action_order: tuple | None = None) -> float:
    """max |d_eps-bar| over the pairs of E_eps (class-mass reading), under the given state order
    (``"class-contiguous"`` flattens a grid first) and action order (E_eps recomputed under it)."""
    if order == "class-contiguous":
        fp = _flat(fp)
    mdp = fp.case.mdp
    a = tuple(range(mdp.n_actions)) if action_order is None else action_order
    related = eps_relation_labels(relabelled(mdp, actions=a), _relabel_ground(fp.case.ground, a, mdp))
    bar = fp.d("eps-bar", order=order, action_order=a if action_order is not None else "index")
    return float(np.max(np.abs(bar[related[:, None] == related[None, :]])))


def order_spreads(fp: FixedPoints) -> tuple[float, float]:
    """The C11 spreads of one case: d_eps-bar over the state orders, and d_eps / d_eps-bar over the
    action orders (0 where there is nothing to relabel)."""
    states, actions = c11_orders(fp)
    state = _spread([fp.d("eps-bar")] + [fp.d("eps-bar", order=o) for o in states]) if states else 0.0
    action = (
        max((_spread([fp.d(m)] + [fp.d(m, action_order=a) for a in actions]) for m in ("eps", "eps-bar")), default=0.0)
        if actions
        else 0.0
    )
    return state, action


def check_c11_class_contiguous(fp: FixedPoints) -> Outcome:
    """C11: with each E_eps class numbered consecutively, d_eps-bar = 0 on E_eps, under the index
    action order and random ones (E_eps recomputed under each); and d_eps does not depend on the
    state order (it couples next states optimally), checked on one random relabelling."""
    states, actions = c11_orders(fp)
    worst, where = 0.0, "index actions"
    for a in [None] + actions:
        value = zero_part(fp, "class-contiguous", a)
        if value > worst:
            worst, where = value, "index actions" if a is None else f"actions {list(a)}"
    eps_spread = _spread([fp.d("eps"), fp.d("eps", order=states[0])]) if states else 0.0
    margin = -max(worst, eps_spread)
    grid = " (grid flattened)" if fp.case.mdp.state_shape is not None else ""
    return Outcome(
        margin >= -ATOL,
        margin,
        f"class-contiguous{grid}: max d_bar on E_eps = {worst:.3g} ({where}, "
        f"{1 + len(actions)} action orders); d_eps spread over a relabelling = {eps_spread:.3g}",
    )


def _relabel_ground(ground: Ground, actions: tuple[int, ...], mdp) -> Ground:
    if isinstance(ground, str):
        return ground
    order = Order(np.arange(mdp.n_states), np.asarray(actions), None, "", "")
    return order.relabel_ground(ground, mdp.n_actions)


def check_c11_state_order(fp: FixedPoints) -> Outcome:
    """C11: spread of d_eps-bar (per pair, max - min) over the index order and random state
    orders (on a grid: coordinate orders). A measurement: held = no spread."""
    states, _ = c11_orders(fp)
    if not states:
        return Outcome(True, 0.0, "one state (or one coordinate): nothing to relabel")
    spread, _ = order_spreads(fp)
    what = "coordinate" if fp.case.mdp.state_shape is not None else "state"
    return Outcome(spread <= ATOL, -spread, f"d_eps-bar spread {spread:.3g} over {1 + len(states)} {what} orders")


def check_c11_action_order(fp: FixedPoints) -> Outcome:
    """C11: spread of d_eps and d_eps-bar over the index order and random action orders. A measurement."""
    _, actions = c11_orders(fp)
    if not actions:
        return Outcome(True, 0.0, "one action: nothing to relabel")
    spreads = {m: _spread([fp.d(m)] + [fp.d(m, action_order=a) for a in actions]) for m in ("eps", "eps-bar")}
    spread = max(spreads.values())
    return Outcome(
        spread <= ATOL,
        -spread,
        f"spread over {1 + len(actions)} action orders: d_eps {spreads['eps']:.3g}, d_eps-bar {spreads['eps-bar']:.3g}",
    )


def check_c10_eps_ge_avg(fp: FixedPoints) -> Outcome:
    """C10a: d_eps >= d_eps-avg."""
    margin = float(np.min(fp.d("eps") - fp.d("eps-avg")))
    return Outcome(margin >= -ATOL, margin, f"min(d_eps - d_eps_avg) = {margin:.3g}")


def check_c10_avg_ge_eps(fp: FixedPoints) -> Outcome:
    """C10b: d_eps-avg >= d_eps."""
    margin = float(np.min(fp.d("eps-avg") - fp.d("eps")))
    return Outcome(margin >= -ATOL, margin, f"min(d_eps_avg - d_eps) = {margin:.3g}")


# ---------------------------------------------------------------- registry
@dataclass(frozen=True)
class Claim:
    """A claim and where it is checked.

    ``check`` is None for claims checked by other means (the learned-loss rows train
    tables instead, :mod:`validation.learning`). ``note`` is the claim's own
    conclusion: it is added to the verdict of its id when this reading held in every
    case and another reading of the same id did not.
    """

    id: str
    statement: str
    source: str
    check: Callable[[FixedPoints], Outcome] | None
    families: tuple[str, ...]
    asserted: bool = True  # the paper asserts it (a violation fails the verify job)
    expect: str = "holds"  # "holds"; or a measurement: "gap" (hypotheses fail) or "varies" (order dependence)
    reading: str = ""  # "" (the project's reading, docs/claims.md) or the alternative reading checked
    unit: str = "distance"  # what the margin counts: "distance", "pairs" (differing) or "cells" (spare)
    note: str = ""

    @property
    def label(self) -> str:
        """Id plus the reading, e.g. 'C4 (literal)'."""
        return f"{self.id} ({self.reading})" if self.reading else self.id


GENERAL = ("random-dense", "random-sparse", "deterministic", "planted", "product-grid", "non-interchangeable")

CLAIMS: list[Claim] = [
    Claim(
        "C1",
        "fixed points of bisim, pi, psm, dbc, eps, eps-avg, eps-bar are pseudometrics",
        "Thm 4.1, 4.3, 4.5",
        check_c1,
        GENERAL + ("examples",),
    ),
    Claim(
        "C2",
        "zero sets of d_pi, d_bisim, d_eps equal E_pi, E_bisim, E_eps (E_eps: equal class masses)",
        "Thm 4.1, 4.3",
        check_c2,
        GENERAL + ("examples",),
        unit="pairs",
    ),
    Claim(
        "C2",
        "zero set of d_eps equals E_eps read literally (identical transition laws, Def. 4.3)",
        "Thm 4.3",
        check_c2_literal,
        GENERAL + ("examples",),
        asserted=False,
        reading="literal",
        unit="pairs",
    ),
    Claim(
        "C3",
        "d_eps(reward) >= d_pi, d_eps(policy) >= d_psm; E_eps within E_pi and E_psm",
        "Lemma 4.4",
        check_c3,
        GENERAL + ("examples",),
    ),
    Claim(
        "C4",
        "d_eps-bar >= d_eps, d_eps-bar = 0 on E_eps (equal class masses) and on the diagonal",
        "Thm 4.5",
        check_c4,
        GENERAL + ("examples",),
    ),
    Claim(
        "C4",
        "as C4 with E_eps read literally (identical transition laws, Def. 4.3)",
        "Thm 4.5",
        check_c4_literal,
        GENERAL + ("examples",),
        asserted=False,
        reading="literal",
    ),
    Claim(
        "C5",
        "d_eps-bar = d_eps under coordinate independence and separable convex (Monge) d",
        "Thm 4.5",
        check_c5,
        ("monotone-product",),
    ),
    Claim(
        "C5",
        "gap d_eps-bar - d_eps when the tightness hypotheses fail",
        "Thm 4.5 (converse, not asserted)",
        check_c5,
        ("correlated-grid", "non-monotone-product", "product-grid"),
        asserted=False,
        expect="gap",
        reading="hypotheses fail",
    ),
    Claim(
        "C6", "every entangled sample at (z, z) is 0; E_ge G(z,a,z,a') = 0", "Eq. 12", check_c6, GENERAL + ("examples",)
    ),
    Claim(
        "C7",
        "entangled coupling of two m-atom histograms has at most 2m - 1 cells",
        "footnote",
        check_c7,
        GENERAL,
        unit="cells",
    ),
    Claim(
        "C8",
        "sampled DBC and PSM fixed points have d(s,s) > 0 under stochastic policies",
        "Sec. 4",
        check_c8,
        ("random-dense", "random-sparse", "product-grid", "non-interchangeable"),
    ),
    Claim(
        "C9",
        "Jensen: sum ge G_reward >= |dRpi|; entangled W1 average >= policy-averaged W1",
        "Lemma 4.4 proof",
        check_c9,
        GENERAL + ("examples",),
    ),
    Claim(
        "C10",
        "d_eps >= d_eps-avg (main-text operator above the appendix one)",
        "Thm 4.3 text vs appendix",
        check_c10_eps_ge_avg,
        GENERAL + ("examples",),
        asserted=False,
        note="Ordering that always holds: d_eps >= d_eps-avg (Jensen on the W1 term, C9); "
        "the reverse fails (counterexample saved); they coincide for deterministic policies",
    ),
    Claim(
        "C10",
        "d_eps-avg >= d_eps (appendix operator above the main-text one)",
        "Thm 4.3 text vs appendix",
        check_c10_avg_ge_eps,
        GENERAL + ("examples",),
        asserted=False,
        reading="reverse",
    ),
    Claim(
        "C11",
        "with the states of each E_eps class numbered consecutively, d_eps-bar = 0 on E_eps under every "
        "action order tried; d_eps does not depend on the state order",
        "project finding (the paper is silent on order)",
        check_c11_class_contiguous,
        GENERAL + ("examples",),
        asserted=False,
        reading="class-contiguous",
    ),
    Claim(
        "C11",
        "spread of d_eps-bar over random state orders (grids: coordinate orders)",
        "project finding (the paper is silent on order)",
        check_c11_state_order,
        GENERAL + ("examples",),
        asserted=False,
        expect="varies",
        reading="state order",
    ),
    Claim(
        "C11",
        "spread of d_eps and d_eps-bar over random action orders",
        "project finding (the paper is silent on order)",
        check_c11_action_order,
        GENERAL + ("examples",),
        asserted=False,
        expect="varies",
        reading="action order",
    ),
]


def find_claim(label: str, family: str, claims: list[Claim] | None = None) -> Claim | None:
    """The claim with this label that runs on ``family`` (None if there is none)."""
    return next((c for c in (CLAIMS if claims is None else claims) if c.label == label and family in c.families), None)


def claim_ids() -> list[str]:
    """The distinct claim ids, in order."""
    seen: list[str] = []
    for c in CLAIMS:
        if c.id not in seen:
            seen.append(c.id)
    return seen
