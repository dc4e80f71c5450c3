"""The bisimulation operators of ``docs/operators.md``: one object per operator, in one registry.

An :class:`Operator` says what an operator is (its formula and source), what it needs (a policy, a
ground metric) and what it supports (the quotient-first path, the torch backend, two MDPs, the
orders it depends on, the size of its transport rows for the memory estimates); and it builds its
computable form (:mod:`bisimkit.forms`) for a pair of MDPs (A, B) on a set of state pairs, with
what evaluating it is unsure of (``docs/operators.md#the-certificate``). One MDP is the pair
(A, A): its pairs are ``s < t`` of one state set; between two MDPs they are the cross pairs
(:meth:`bisimkit.pairs.PairSpace.cross`) and the laws of the pair's first state are A's, those of
its second B's, with no copy of either MDP.

:data:`OPERATORS` is the registry; :func:`operator` looks a name up (once per solve: everything
after it asks the object). The solvers (:mod:`bisimkit.engine`, :mod:`bisimkit.solvers`,
:mod:`bisimkit.between`) use the forms; :func:`apply_operator` evaluates any operator on a dense
matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from .compiled import eps_bar_counts, eps_bar_matrix, eps_bar_product
from .couplings import Cells, entangled_cells, histogram_rows
from .errors import InputError
from .forms import (
    COMPILED_EPS_BAR_PAIRS,
    EPS_BAR_MEMORY_SHARE,
    EPS_BAR_SINGLE_PAIRS,
    PairLinearForm,
    SteinForm,
    TransportTerms,
    pair_system,
    physical_memory,
)
from .ground import Ground
from .kernels import DenseRows
from .mdp import FiniteMDP
from .pairs import PairSpace
from .roundoff import MDPRoundOff, U, gamma, gamma_array, grid_breakpoint_error, pair_differences

#: What the one-step term of an operator is built from (:attr:`Operator.term`).
TERMS = ("reward-mean", "action-mean", "reward", "ground", "labels")


@dataclass(frozen=True)
class Operator:
    """One bisimulation operator.

    ``name``, ``formula`` and ``source`` are the table of ``docs/operators.md``; ``kind`` its computable
    form (``"transport"``, ``"stein"``, ``"pair-linear"`` or ``"derived"``); ``pseudometric`` whether
    its fixed point has a zero diagonal and is a pseudometric (``"labelled-chain"``: the bisimilarity
    distance of a labelled Markov chain, solved by :mod:`bisimkit.lmc`). What it reads: ``uses_policy``,
    ``uses_ground`` (a ground metric between state-action pairs) and ``term``, what its one-step term
    is built from (:data:`TERMS`: the policy's mean rewards, its mean actions, the rewards of the
    actions it pairs, the ground, or the states' labels). What it supports: ``p`` (W1 or W2 transport; W2 has no exact
    method), ``relation`` (the kind of the largest relation whose blocks the quotient-first path
    solves on, or None), ``torch`` (Smith's doubling on a torch device), ``between`` (distances
    between two MDPs), ``pairs_actions`` (how it pairs the actions of two MDPs, which must then be the
    same; None when it only reads policy averages), ``state_order`` / ``action_order`` (whether its
    fixed point depends on the order of states or of actions), ``rows`` (per pair, which transport
    rows it builds: ``"one"`` law per state, one ``"per-action"``, the ``"entangled"`` action cells,
    or ``"action-pairs"``, every pair of actions the policies use), and ``base`` for a derived
    operator (whose fixed point is computed from the base operator's).
    """

    name: str
    formula: str
    source: str
    kind: str
    uses_policy: bool
    uses_ground: bool
    pseudometric: bool
    term: str
    p: int = 1
    relation: str | None = None
    torch: bool = False
    between: bool = True
    pairs_actions: str | None = None
    state_order: bool = False
    action_order: bool = False
    rows: str | None = None
    base: str | None = None

    @property
    def summary(self) -> str:
        return self.formula

    @property
    def queries(self) -> bool:
        """Whether queried pairs can be solved on the fly (:mod:`bisimkit.query`): W1 transport rows per pair
        (one law per state, one per action, or the entangled action cells) with a zero diagonal (bisim, pi,
        psm, eps, eps-avg)."""
        return (
            self.kind == "transport"
            and self.rows in ("one", "per-action", "entangled")
            and self.p == 1
            and self.pseudometric
        )

    @property
    def value_bracketed(self) -> bool:
        """Whether the policy's discounted values bracket the fixed point (pi): with the mean rewards shifted
        to be non-negative and ``V = r_pi + c Ppi V``, ``|V(s) - V(t)| <= d(s, t) <= V(s) + V(t)``, since
        the one-step term is ``|r_pi(s) - r_pi(t)|`` and each pair has one W1 law per state. Queried pairs
        of large models are then solved on the pairs they reach most, the others bracketed
        (:mod:`bisimkit.query`)."""
        return self.queries and self.rows == "one" and self.term == "reward-mean"

    @property
    def exact(self) -> bool:
        """Whether an exact method exists (coupling iteration, a linear solve, Smith's doubling): not for
        W2, which is not linear in the coupling."""
        return self.p == 1

    def compares_mean_actions(self, ground: Ground | None) -> bool:
        """Whether the one-step term compares mean actions (psm's, or the eps family's policy ground), so
        that two MDPs need the same action coordinates."""
        return self.term == "action-mean" or (self.term == "ground" and _is_policy(ground))

    def default_pairs(self, mdp: FiniteMDP) -> PairSpace:
        """The unknowns on one MDP: pairs s < t for the pseudometrics, s <= t otherwise."""
        return PairSpace(mdp.n_states, diagonal=not self.pseudometric)

    def build(self, a: FiniteMDP, b: FiniteMDP, pairs: PairSpace | None, ground: Ground | None, zero_diagonal: bool):
        """The computable form on ``pairs`` of (a, b) (``b is a`` on one MDP), with its charges."""
        raise InputError(f"'{self.name}' is derived from another fixed point and is not an operator", param="metric")


# ------------------------------------------------------------ the charges
def _is_policy(ground) -> bool:
    return isinstance(ground, str) and ground == "policy"


def _is_reward(ground) -> bool:
    return ground is None or (isinstance(ground, str) and ground == "reward")


def mean_reward_terms(ra: MDPRoundOff, s: np.ndarray, rb: MDPRoundOff, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|Rpi_A(s) - Rpi_B(t)|, error)``, the difference taken in twice the working precision
    (:func:`bisimkit.roundoff.pair_differences`); ``rb is ra`` on one MDP."""
    return pair_differences(ra.reward_pi_terms, s, rb.reward_pi_terms, t)


def mean_action_terms(
    ra: MDPRoundOff, s: np.ndarray, rb: MDPRoundOff, t: np.ndarray, chunk: int = 1_000_000
) -> tuple[np.ndarray, np.ndarray]:
    """``(||abar_A(s) - abar_B(t)||_1, error)`` for the pairs ``(s[k], t[k])``, each coordinate's difference in
    twice the working precision (:func:`bisimkit.roundoff.pair_differences`), in chunks to bound memory."""
    const, error = np.empty(len(s)), np.empty(len(s))
    for lo in range(0, len(s), chunk):
        const[lo : lo + chunk], error[lo : lo + chunk] = pair_differences(
            ra.mean_action_terms, s[lo : lo + chunk], rb.mean_action_terms, t[lo : lo + chunk]
        )
    return const, error


def ground_values(a: FiniteMDP, b: FiniteMDP, ground: Ground, s, i, t, j) -> np.ndarray:
    """``G(s, i, t, j)`` between the state-action pair (s, i) of ``a`` and (t, j) of ``b``: the reward ground
    ``|R_A(s, i) - R_B(t, j)|``, the policy ground ``||abar_A(s) - abar_B(t)||_1``, or a matrix indexed by
    ``s m + i`` and ``t m + j``."""
    if isinstance(ground, str):
        if ground == "reward":
            return np.abs(a.rewards[s, i] - b.rewards[t, j])
        return np.abs(a.mean_action[s] - b.mean_action[t]).sum(axis=-1)
    return ground[np.asarray(s) * a.n_actions + i, np.asarray(t) * b.n_actions + j]


def ground_terms(
    a: FiniteMDP, b: FiniteMDP, ground: Ground, S: np.ndarray, T: np.ndarray, cells: Cells
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(G, error, reach)`` on the action cells ``cells`` of the pairs ``(S[k], T[k])``: the ground values,
    their errors, and per pair the largest ground term over every action pair the two policies use
    (where a cell of the exact coupling may lie that the computed one misses).

    The reward ground is one rounded subtraction of inputs, its reach ``max(|Rhi_A(s) - Rlo_B(t)|,
    |Rhi_B(t) - Rlo_A(s)|)``; the policy ground is the pair's mean-action distance in twice the working
    precision, the same on every cell; a matrix's entries are the input (exact), its reach its largest
    entry."""
    ra, rb = a.roundoff, b.roundoff
    s, t = S[cells.problem], T[cells.problem]
    if _is_policy(ground):
        const, error = mean_action_terms(ra, S, rb, T)
        return const[cells.problem], error[cells.problem], const + error
    G = ground_values(a, b, ground, s, cells.i, t, cells.j)
    if isinstance(ground, str):
        reach = np.maximum(np.abs(ra.reward_high[S] - rb.reward_low[T]), np.abs(rb.reward_high[T] - ra.reward_low[S]))
        return G, U * G, reach
    return G, np.zeros(len(G)), np.full(len(S), float(np.max(ground, initial=0.0)))


def coupling_errors(ra: MDPRoundOff, s: np.ndarray, rb: MDPRoundOff, t: np.ndarray) -> np.ndarray:
    """Per pair: the measure of the uniforms the computed entangled coupling of pi_A(s) and pi_B(t) sends to
    another cell than the exact one (both sides' breakpoint errors). The rounding of its masses, each
    the difference of two computed breakpoints, is relative (u per cell) and charged with the sums."""
    return ra.policy_breakpoints[s] + rb.policy_breakpoints[t]


def state_rows(n: int, m: int) -> np.ndarray:
    """The rows ``s m + a`` of every state's actions, as an (n, m) array."""
    return np.arange(n, dtype=np.int64)[:, None] * m + np.arange(m)[None, :]


def action_cells(a: FiniteMDP, s: np.ndarray, b: FiniteMDP | None = None, t: np.ndarray | None = None) -> Cells:
    """Entangled couplings of pi_A(s[k]) and pi_B(t[k]) (problem k; cells over actions); with one MDP,
    ``action_cells(mdp, s, t)`` couples pi(s[k]) with pi(t[k])."""
    if t is None:  # action_cells(mdp, s, t)
        b, t = a, cast(np.ndarray, b)
    assert b is not None and t is not None  # b and t, or t in b's place
    pa = histogram_rows(a.require_policy("the entangled policy coupling"))
    pb = pa if b is a else histogram_rows(b.require_policy("the entangled policy coupling"))
    return entangled_cells(pa, s, pb, t)


def policy_cells(mdp: FiniteMDP, pairs: PairSpace) -> Cells:
    """Entangled couplings ge of pi(s) and pi(t) for every pair (cells over actions)."""
    return action_cells(mdp, pairs.s, mdp, pairs.t)


# ------------------------------------------------------------- the forms
@dataclass(frozen=True)
class PolicyAveraged(Operator):
    """One transport problem ``Ppi_A(s)`` vs ``Ppi_B(t)`` per pair: pi, psm, dbc, eps-avg."""

    def build(self, a, b, pairs, ground, zero_diagonal):
        S, T = pairs.s, pairs.t
        ra, rb = a.roundoff, b.roundoff
        coupling = reach = None
        keys = None
        if self.term == "reward-mean":
            const, const_error = mean_reward_terms(ra, S, rb, T)
            keys = (a.reward_pi, b.reward_pi)
        elif self.term == "action-mean":
            const, const_error = mean_action_terms(ra, S, rb, T)
            if a.action_values.shape[1] == 1:
                keys = (a.mean_action[:, 0], b.mean_action[:, 0])
        else:  # eps-avg: the entangled average of the ground
            ge = action_cells(a, S, b, T)
            G, G_error, reach = ground_terms(a, b, ground, S, T, ge)
            const = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(pairs))
            cells = np.bincount(ge.problem, minlength=len(pairs))
            const_error = (
                np.bincount(ge.problem, weights=ge.mass * G_error, minlength=len(pairs))
                + gamma_array(cells + 1) * const
            )
            coupling = coupling_errors(ra, S, rb, T)
        k = len(pairs)
        return TransportTerms(
            pairs,
            np.arange(k),
            np.ones(k),
            const,
            S,
            T,
            a.transition_pi_rows,
            b.transition_pi_rows,
            "sum",
            self.p,
            a.discount,
            zero_diagonal,
            row_const_error=const_error,
            left_law_error=ra.pi_law_error,
            right_law_error=rb.pi_law_error,
            pair_coupling=coupling,
            pair_ground_max=reach,
            line_keys=None if b is a else keys,
        )


@dataclass(frozen=True)
class PerAction(Operator):
    """bisim: one transport problem per action, ``P_A(s, a)`` vs ``P_B(t, a)``, reduced by the maximum."""

    def build(self, a, b, pairs, ground, zero_diagonal):
        ma, mb = a.n_actions, b.n_actions
        row_pair = np.repeat(np.arange(len(pairs)), ma)
        act = np.tile(np.arange(ma), len(pairs))
        s, t = pairs.s[row_pair], pairs.t[row_pair]
        const = np.abs(a.rewards[s, act] - b.rewards[t, act])
        return TransportTerms(
            pairs,
            row_pair,
            np.ones(len(row_pair)),
            const,
            s * ma + act,
            t * mb + act,
            a.transition_rows,
            b.transition_rows,
            "max",
            1,
            a.discount,
            zero_diagonal,
            row_const_error=U * const,
            left_law_error=a.roundoff.transition_law_error,
            right_law_error=b.roundoff.transition_law_error,
        )


@dataclass(frozen=True)
class Entangled(Operator):
    """eps: one transport problem ``P_A(s, a)`` vs ``P_B(t, a')`` per cell of the entangled coupling of the
    two policies, weighted by the cell's mass."""

    def build(self, a, b, pairs, ground, zero_diagonal):
        S, T = pairs.s, pairs.t
        ra, rb = a.roundoff, b.roundoff
        ge = action_cells(a, S, b, T)
        s, t = S[ge.problem], T[ge.problem]
        G, G_error, reach = ground_terms(a, b, ground, S, T, ge)
        return TransportTerms(
            pairs,
            ge.problem,
            ge.mass,
            G,
            s * a.n_actions + ge.i,
            t * b.n_actions + ge.j,
            a.transition_rows,
            b.transition_rows,
            "sum",
            1,
            a.discount,
            zero_diagonal,
            row_const_error=G_error,
            left_law_error=ra.transition_law_error,
            right_law_error=rb.transition_law_error,
            pair_coupling=coupling_errors(ra, S, rb, T),
            pair_ground_max=reach,
            left_state_rows=state_rows(a.n_states, a.n_actions),
            right_state_rows=state_rows(b.n_states, b.n_actions),
        )


@dataclass(frozen=True)
class Sampled(Operator):
    """dbc-sampled: every pair of actions drawn independently, ``pi_A(a|s) pi_B(a'|t)`` times
    ``|R_A(s, a) - R_B(t, a')| + c W2(P_A(s, a), P_B(t, a'))``."""

    def build(self, a, b, pairs, ground, zero_diagonal):
        S, T = pairs.s, pairs.t
        pa, pb = a.require_policy("dbc-sampled"), b.require_policy("dbc-sampled")
        k, i, j = np.nonzero(pa[S][:, :, None] * pb[T][:, None, :] > 0)
        s, t = S[k], T[k]
        weight = pa[s, i] * pb[t, j]
        const = np.abs(a.rewards[s, i] - b.rewards[t, j])
        ra, rb = a.roundoff, b.roundoff
        return TransportTerms(
            pairs,
            k,
            weight,
            const,
            s * a.n_actions + i,
            t * b.n_actions + j,
            a.transition_rows,
            b.transition_rows,
            "sum",
            2,
            a.discount,
            zero_diagonal,
            row_const_error=U * const,
            left_law_error=ra.transition_law_error,
            right_law_error=rb.transition_law_error,
            pair_weight_error=U + ra.policy_defect[S] + rb.policy_defect[T],
        )


def stein_constant(left: tuple, right: tuple, chunk_cells: int = 131_072) -> tuple[np.ndarray, tuple]:
    """``(A, A_error parts)``: ``A[s, t] = |x(s) - y(t)|`` (the l1 norm over columns for per-state vectors) for
    x and y held as ``(value, rest, bound)`` (:func:`bisimkit.roundoff.pair_differences`), each difference in
    twice the working precision, a block of rows at a time; the parts are that function's separable bound
    (:class:`~bisimkit.forms.SteinForm`)."""
    na, nb = left[0].shape[0], right[0].shape[0]
    if not (np.any(left[1]) or np.any(right[1])):
        # exact values: one rounded subtraction per coordinate, summed (the error parts below cover it)
        A = np.zeros((na, nb))
        for x, y in zip(left[0].reshape(na, -1).T, right[0].reshape(nb, -1).T):
            A += np.abs(np.subtract.outer(x, y))
    else:
        A = np.empty((na, nb))
        step = max(1, chunk_cells // max(nb, 1))
        cols = np.arange(nb)[None, :]
        for lo in range(0, na, step):
            rows = np.arange(lo, min(lo + step, na))[:, None]
            A[lo : lo + step] = pair_differences(left, rows, right, cols)[0]
    k = left[0].shape[1] if left[0].ndim == 2 else 1

    def side(terms):
        _, rest, bound = terms
        rest = np.abs(rest)
        return (bound.sum(axis=1) + 3 * U * rest.sum(axis=1)) if rest.ndim == 2 else bound + 3 * U * rest

    relative = gamma(k) + 2 * U * (1 + gamma(k))
    return A, (side(left), side(right), relative, np.zeros(na), np.zeros(nb))


@dataclass(frozen=True)
class Stein(Operator):
    """mico, psm-sampled (and dbc-sampled when the policy's next-state laws are point masses): the Stein
    equation ``D = A + c Ppi_A D Ppi_B^T`` on full matrices."""

    def build(self, a, b, pairs, ground, zero_diagonal):
        ra, rb = a.roundoff, b.roundoff
        if self.term == "reward-mean":
            A, parts = stein_constant(ra.reward_pi_terms, rb.reward_pi_terms)
        elif self.term == "action-mean":
            A, parts = stein_constant(ra.mean_action_terms, rb.mean_action_terms)
        else:  # dbc-sampled on point-mass laws: W2 between point masses at s', t' is d(s', t')
            if not (point_mass_transitions(a) and point_mass_transitions(b)):
                raise ValueError(f"'{self.name}' has no Stein form")
            pa, pb = a.policy, b.policy
            A = np.zeros((a.n_states, b.n_states))
            for i in range(a.n_actions):
                for j in range(b.n_actions):
                    A += np.outer(pa[:, i], pb[:, j]) * np.abs(a.rewards[:, i, None] - b.rewards[None, :, j])
            # m^2 non-negative terms, each three rounded operations, summed; the policy rows' normalisation
            parts = (
                np.zeros(a.n_states),
                np.zeros(b.n_states),
                gamma(a.n_actions * b.n_actions + 3),
                ra.policy_defect,
                rb.policy_defect,
            )
        if b is a:
            return SteinForm(A, np.array(a.transition_pi), a.discount, A_error=parts, P_relative=ra.pi_relative)
        return SteinForm(
            A,
            np.array(a.transition_pi),
            a.discount,
            Q=np.array(b.transition_pi),
            A_error=parts,
            P_relative=ra.pi_relative,
            Q_relative=rb.pi_relative,
        )


def point_mass_transitions(mdp: FiniteMDP) -> bool:
    """Whether every next-state law the policy uses, P(s, a) with pi(a|s) > 0, is a point mass."""
    pi = mdp.require_policy("the policy's next-state laws")
    return bool(np.all(mdp.supports[pi > 0] == 1))


@dataclass(frozen=True)
class EntangledLinear(Operator):
    """eps-bar: linear in d through the entangled couplings of the actions and of the next states."""

    def build(self, a, b, pairs, ground, zero_diagonal):
        return eps_bar_form(a, ground, pairs, b)


@dataclass(frozen=True)
class Derived(Operator):
    """mico-reduced: computed from the fixed point of ``base`` (:mod:`bisimkit.solvers`)."""


@dataclass(frozen=True)
class LabelledChainDistance(Operator):
    """lmc: the bisimilarity distance of a labelled Markov chain, ``1`` where two states' labels differ and
    ``c W1(P(s), P(t); d)`` where they agree, the least fixed point, for c in (0, 1]. It is not solved through
    a form: :mod:`bisimkit.lmc` decides the pairs at distance 0 (bisimilarity) and at distance 1 (c = 1: the
    pair graph), and runs policy iteration on the rest, certified by a bracket (``docs/lmc.md``)."""

    def build(self, a, b, pairs, ground, zero_diagonal):
        raise InputError(
            f"'{self.name}' is solved by bisimkit.lmc (solve(mdp, '{self.name}', discount=c)); it has no operator form",
            param="metric",
        )


# --------------------------------------------------------------- registry
OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in [
        PerAction(
            "bisim",
            "max_a |R(s,a)-R(t,a)| + c W1(P(s,a), P(t,a); d)",
            "Ferns et al. 2004",
            "transport",
            False,
            False,
            True,
            "reward",
            relation="bisim",
            pairs_actions="action a with action a",
            rows="per-action",
        ),
        PolicyAveraged(
            "pi",
            "|Rpi(s)-Rpi(t)| + c W1(Ppi(s), Ppi(t); d)",
            "Castro 2020",
            "transport",
            True,
            False,
            True,
            "reward-mean",
            relation="pi",
            rows="one",
        ),
        PolicyAveraged(
            "psm",
            "||abar(s)-abar(t)||_1 + c W1(Ppi(s), Ppi(t); d)",
            "Agarwal et al. 2021; paper Eq. 7",
            "transport",
            True,
            False,
            True,
            "action-mean",
            relation="psm",
            rows="one",
        ),
        Stein(
            "psm-sampled",
            "||abar(s)-abar(t)||_1 + c sum Ppi(s,s')Ppi(t,t') d(s',t')",
            "paper's F-hat_PSM in expectation",
            "stein",
            True,
            False,
            False,
            "action-mean",
            torch=True,
        ),
        Stein(
            "mico",
            "|Rpi(s)-Rpi(t)| + c sum Ppi(s,s')Ppi(t,t') d(s',t')",
            "Castro et al. 2021",
            "stein",
            True,
            False,
            False,
            "reward-mean",
            torch=True,
        ),
        Derived(
            "mico-reduced",
            "U(s,t) - U(s,s)/2 - U(t,t)/2, U the mico fixed point",
            "Castro et al. 2021",
            "derived",
            True,
            False,
            False,
            "reward-mean",
            torch=True,
            between=False,
            base="mico",
        ),
        PolicyAveraged(
            "dbc",
            "|Rpi(s)-Rpi(t)| + c W2(Ppi(s), Ppi(t); d)",
            "Zhang et al. 2020; paper Eq. 5",
            "transport",
            True,
            False,
            True,
            "reward-mean",
            p=2,
            rows="one",
        ),
        Sampled(
            "dbc-sampled",
            "sum pi(a|s)pi(a'|t) [|R(s,a)-R(t,a')| + c W2(P(s,a), P(t,a'); d)]",
            "paper's F-hat_DBC in expectation",
            "transport",
            True,
            False,
            False,
            "reward",
            p=2,
            torch=True,
            rows="action-pairs",
        ),
        Entangled(
            "eps",
            "sum ge(a,a') [G(s,a,t,a') + c W1(P(s,a), P(t,a'); d)]",
            "paper Thm. 4.3 (main text)",
            "transport",
            True,
            True,
            True,
            "ground",
            relation="eps",
            pairs_actions="actions by the entangled coupling of the two policies",
            action_order=True,
            rows="entangled",
        ),
        PolicyAveraged(
            "eps-avg",
            "sum ge(a,a') G(s,a,t,a') + c W1(Ppi(s), Ppi(t); d)",
            "paper Thm. 4.3 (appendix proof)",
            "transport",
            True,
            True,
            True,
            "ground",
            pairs_actions="actions by the entangled coupling of the two policies",
            action_order=True,
            rows="one",
        ),
        EntangledLinear(
            "eps-bar",
            "sum ge(a,a') [G(s,a,t,a') + c sum ge_P(s',t') d(s',t')]",
            "paper Thm. 4.5",
            "pair-linear",
            True,
            True,
            True,
            "ground",
            pairs_actions="actions by the entangled coupling of the two policies",
            state_order=True,
            action_order=True,
        ),
        LabelledChainDistance(
            "lmc",
            "1 if L(s) != L(t), else c W1(P(s), P(t); d); least fixed point, c in (0, 1]",
            "Desharnais et al. 1999; van Breugel and Worrell 2001; Tang and van Breugel 2016-2018",
            "labelled-chain",
            False,
            False,
            True,
            "labels",
            between=False,
        ),
    ]
}

METRIC_NAMES = tuple(OPERATORS)
#: The metrics with a ground term between state-action pairs (the ``ground`` argument).
GROUND_METRICS = tuple(name for name, op in OPERATORS.items() if op.uses_ground)
#: The metrics whose zero set is the largest relation of a kind, solved on its blocks first.
QUOTIENT_METRICS = tuple(name for name, op in OPERATORS.items() if op.relation is not None)
#: The metrics whose fixed point depends on the state order (eps-bar) or the action order (the eps family).
STATE_ORDER_METRICS = tuple(name for name, op in OPERATORS.items() if op.state_order)
ACTION_ORDER_METRICS = tuple(name for name, op in OPERATORS.items() if op.action_order)
#: The metrics the torch backend solves (Stein forms; dbc-sampled when its laws are point masses).
TORCH_METRICS = tuple(name for name, op in OPERATORS.items() if op.torch)
#: The bisimilarity distances of labelled Markov chains (:mod:`bisimkit.lmc`; ``discount=`` and ``pairs=``).
LABELLED_CHAIN_METRICS = tuple(name for name, op in OPERATORS.items() if op.kind == "labelled-chain")
#: The operators whose queried pairs are solved on the fly (:mod:`bisimkit.query`).
QUERY_METRICS = tuple(name for name, op in OPERATORS.items() if op.queries)
#: The metrics with distances between two MDPs.
BETWEEN_METRICS = tuple(name for name, op in OPERATORS.items() if op.between)
#: The relations that read a ground metric (``bisimkit relation --ground``).
GROUND_RELATIONS = tuple(op.relation for op in OPERATORS.values() if op.relation is not None and op.uses_ground)


def operator(name: str) -> Operator:
    """The registry entry for ``name``, or an InputError listing the valid names."""
    try:
        return OPERATORS[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown metric '{name}' (choose from {', '.join(METRIC_NAMES)})", param="metric") from None


def stein_operator(op: Operator) -> Operator:
    """dbc-sampled's Stein form (when its laws are point masses): the same operator, built as a Stein
    equation."""
    return Stein(
        op.name,
        op.formula,
        op.source,
        "stein",
        op.uses_policy,
        op.uses_ground,
        op.pseudometric,
        op.term,
        p=op.p,
        torch=op.torch,
    )


# ------------------------------------------------------------------ eps-bar
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
        return self.constant + discount * np.bincount(ge.problem[nxt.problem], weights=w, minlength=len(self.constant))


def entangled_parts(mdp: FiniteMDP, ground: Ground, pairs: PairSpace, other: FiniteMDP | None = None) -> EntangledParts:
    """The entangled action and next-state couplings of eps-bar on ``pairs`` (of ``mdp``, or between
    ``mdp`` and ``other``), with the ground terms."""
    b = mdp if other is None else other
    ge = action_cells(mdp, pairs.s, b, pairs.t)
    s, t = pairs.s[ge.problem], pairs.t[ge.problem]
    G = ground_values(mdp, b, ground, s, ge.i, t, ge.j)
    const = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(pairs))
    shape = mdp.state_shape if b is mdp else None
    cells = entangled_cells(
        mdp.transition_rows, s * mdp.n_actions + ge.i, b.transition_rows, t * b.n_actions + ge.j, shape=shape
    )
    return EntangledParts(ge, G, const, cells)


def entangled_ground_terms(
    a: FiniteMDP, ground: Ground, s: np.ndarray, t: np.ndarray, b: FiniteMDP | None = None, chunk: int = 1_000_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(b, b_error, reach)`` for the pairs ``(s[k], t[k])``, in chunks: ``b = sum_{a, a'} ge(a, a')
    G(s, a, t, a')``, a bound on its error as computed (the ground values' errors and the rounding of
    the sum; the coupling's own error is charged apart), and :func:`ground_terms`' reach."""
    other = a if b is None else b
    const, const_error, reach = np.empty(len(s)), np.empty(len(s)), np.empty(len(s))
    for start in range(0, len(s), chunk):
        S, T = s[start : start + chunk], t[start : start + chunk]
        ge = action_cells(a, S, other, T)
        G, G_error, reach[start : start + chunk] = ground_terms(a, other, ground, S, T, ge)
        part = np.bincount(ge.problem, weights=ge.mass * G, minlength=len(S))
        cells = np.bincount(ge.problem, minlength=len(S))
        const[start : start + chunk] = part
        const_error[start : start + chunk] = (
            np.bincount(ge.problem, weights=ge.mass * G_error, minlength=len(S)) + gamma_array(cells + 1) * part
        )
    return const, const_error, reach


def next_state_coupling_errors(mdp: FiniteMDP) -> np.ndarray:
    """Per state: the largest measure of uniforms that a computed entangled coupling of one of its next-state
    laws with another law sends to another cell than the exact one (its share; the other law adds its own):
    :func:`bisimkit.roundoff.breakpoint_errors` of its rows ``P(s, a)``, or on a grid the a priori bound of
    the coordinate-wise (Rosenblatt) coupling (:func:`bisimkit.roundoff.grid_breakpoint_error`)."""
    n, m = mdp.n_states, mdp.n_actions
    if mdp.state_shape is not None and len(mdp.state_shape) > 1:
        return np.full(n, grid_breakpoint_error(mdp.state_shape))
    return mdp.roundoff.transition_breakpoints.reshape(n, m).max(axis=1)


def eps_bar_form(
    mdp: FiniteMDP, ground: Ground = "reward", pairs: PairSpace | None = None, other: FiniteMDP | None = None
) -> PairLinearForm:
    """The linear form of eps-bar on ``mdp`` (or between ``mdp`` and ``other``): entangled couplings of actions
    and of next states, with the bounds on what its evaluation is unsure of
    (:class:`~bisimkit.forms.PairLinearForm`).

    On the default pairs (s < t) the diagonal is taken as 0; on a pair space with
    the diagonal, T keeps the cells that land on it. From
    :data:`~bisimkit.forms.COMPILED_EPS_BAR_PAIRS` pairs on (1-D state spaces), T is assembled pair
    by pair in compiled code without intermediate cells; the matrix is the same. Between two MDPs the
    compiled assembly reads both MDPs' rows in one numbering (A's states, then B's), so it works on the
    two stacked; everything else reads each MDP as it is.
    """
    b = mdp if other is None else other
    pairs = OPERATORS["eps-bar"].default_pairs(mdp) if pairs is None else pairs
    one_dimensional = b is not mdp or mdp.state_shape is None or len(mdp.state_shape) == 1
    const, const_error, reach = entangled_ground_terms(mdp, ground, pairs.s, pairs.t, b)
    na, nb = next_state_coupling_errors(mdp), next_state_coupling_errors(b)
    charges = dict(
        b_error=const_error,
        pair_coupling=coupling_errors(mdp.roundoff, pairs.s, b.roundoff, pairs.t),
        pair_ground_max=reach,
        pair_next=na[pairs.s] + nb[pairs.t],
        left_rows=mdp.transition_rows,
        right_rows=b.transition_rows,
        left_state_rows=state_rows(mdp.n_states, mdp.n_actions),
        right_state_rows=state_rows(b.n_states, b.n_actions),
    )
    if one_dimensional and len(pairs) >= COMPILED_EPS_BAR_PAIRS:
        policy, rows, S, T, index = mdp.require_policy("eps-bar"), mdp.transition_rows, pairs.s, pairs.t, pairs.index
        if b is not mdp:  # the compiled assembly numbers both MDPs' states in one range
            policy, rows, S, T, index = _stacked(mdp, b, pairs)
        args = (S, T, index, policy, rows, mdp.n_actions)
        counts = eps_bar_counts(*args)
        # float64 T and its float32 copy for the Krylov solves take 16 bytes an entry
        if len(pairs) < EPS_BAR_SINGLE_PAIRS or 16 * float(counts.sum()) <= EPS_BAR_MEMORY_SHARE * physical_memory():
            return PairLinearForm(
                pairs, const, eps_bar_matrix(*args, len(pairs), counts=counts), mdp.discount, **charges
            )
        # Too large: keep T in float32 only (4 bytes an entry, plus its int32 column) for the inner
        # Krylov solves; the float64 residuals that drive the solution and its certificate recompute
        # the couplings on the fly (slower per product, half the memory).
        T32 = eps_bar_matrix(*args, len(pairs), dtype=np.float32, counts=counts)
        return PairLinearForm(pairs, const, T32, mdp.discount, product=eps_bar_product(*args), **charges)
    parts = entangled_parts(mdp, ground, pairs, b)
    T = pair_system(pairs, parts.actions.problem, parts.actions.mass, parts.next_states, len(parts.actions))
    return PairLinearForm(pairs, const, T, mdp.discount, **charges)


def _stacked(a: FiniteMDP, b: FiniteMDP, pairs: PairSpace):
    """``(policy, rows, S, T, index)`` of the cross pairs with both MDPs' states in one numbering (A's, then
    B's): what the compiled eps-bar assembly reads."""
    import scipy.sparse as sp  # start-up cost: only the large two-MDP eps-bar solves come here

    na = a.n_states
    n = na + b.n_states
    index = np.full((n, n), -1, dtype=np.int64)
    index[pairs.s, na + pairs.t] = np.arange(len(pairs))
    index[na + pairs.t, pairs.s] = np.arange(len(pairs))
    rows = sp.block_diag(
        [
            sp.csr_matrix(
                m.transition_rows.toarray() if isinstance(m.transition_rows, DenseRows) else m.transition_rows
            )
            for m in (a, b)
        ],
        format="csr",
    )
    return np.vstack([a.require_policy("eps-bar"), b.require_policy("eps-bar")]), rows, pairs.s, na + pairs.t, index


# ---------------------------------------------------------------- dispatch
def operator_form(
    mdp: FiniteMDP,
    name: str,
    ground: Ground = "reward",
    pairs: PairSpace | None = None,
    zero_diagonal: bool | None = None,
    other: FiniteMDP | None = None,
):
    """The computable form of operator ``name`` on ``mdp`` (or between ``mdp`` and ``other`` on cross pairs):
    :class:`~bisimkit.forms.TransportTerms`, :class:`~bisimkit.forms.SteinForm` or
    :class:`~bisimkit.forms.PairLinearForm`."""
    op = operator(name)
    b = mdp if other is None else other
    if op.uses_policy:
        mdp.require_policy(f"metric '{name}'")
        b.require_policy(f"metric '{name}'")
    if pairs is None:
        pairs = op.default_pairs(mdp) if other is None else PairSpace.cross(mdp.n_states, b.n_states)
    zero = (op.pseudometric and other is None) if zero_diagonal is None else zero_diagonal
    return op.build(mdp, b, pairs, "reward" if ground is None else ground, zero)


def stein_form(mdp: FiniteMDP, name: str, other: FiniteMDP | None = None) -> SteinForm:
    """The Stein form of ``mico`` or ``psm-sampled``, and of ``dbc-sampled`` when the policy's next-state laws
    are point masses (:func:`point_mass_transitions`), with the bounds on what its evaluation is unsure of."""
    op = operator(name)
    if op.kind == "transport" and op.torch:
        op = stein_operator(op)
    if op.kind != "stein":
        raise ValueError(f"'{name}' has no Stein form")
    return op.build(mdp, mdp if other is None else other, None, None, False)


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
    op = operator(name)
    if op.kind == "pair-linear":
        return entangled_parts(mdp, ground, pairs).apply(mdp.discount, D)
    form = operator_form(mdp, name, ground, pairs, zero_diagonal=True)
    if isinstance(form, SteinForm):
        return np.diag(form.apply(D))
    return form.combine(form.row_const + form.discount * form.costs(D)[0])
