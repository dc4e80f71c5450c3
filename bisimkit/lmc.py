r"""Bisimilarity distances of labelled Markov chains, discounted and undiscounted, with a certified bracket.

The distance
------------
A labelled Markov chain has states ``0..n-1``, a successor distribution ``P(s)`` per state (sparse rows)
and a set of labels ``L(s)`` per state. For a discount ``c`` in ``(0, 1]`` the operator on pair
functions ``d: S x S -> [0, 1]`` is

.. math::

    F(d)(s, t) = g(s, t) \oplus c\, W_1(P(s), P(t); d), \qquad a \oplus b = a + b - a b,

with the ground ``g(s, t) = [L(s) \ne L(t)]`` (1 where the labels differ, 0 where they agree), so that
``F(d)(s, t) = 1`` where the labels differ and ``c W_1(P(s), P(t); d)`` where they agree (Desharnais et
al. 1999; van Breugel and Worrell 2001). A user ground ``g`` with values in ``[0, 1]`` may replace the
labels; ``a + b - ab`` is the probability that two coupled runs are told apart, now (probability
``g``) or later (``c W_1``), and keeps the operator linear in ``d`` for a fixed coupling
(``docs/lmc.md#the-ground``).

The distance is the **least** fixed point of ``F``. For ``c < 1`` ``F`` is a contraction and has one
fixed point; for ``c = 1`` it has many (two bisimilar self-looping states may be put at any distance)
and the least one is the limit of ``F^k(0)``.

Algorithm (``docs/lmc.md`` has the proofs)
------------------------------------------
1. **The exact chain.** The distances are those of an exact rational chain: every stored probability is
   read as the fraction with the smallest denominator (at most :data:`MAX_DENOMINATOR`) within
   :data:`RATIONAL_ULPS` units in the last place of it; a row whose fractions do not sum to exactly 1
   takes the binary values of its floats instead, and if those do not either, the row's defect is put on
   its largest entry. ``LMCResult.model_defect`` is the largest total-variation distance between a
   stored row and its exact row.
2. **Distance 0** is probabilistic bisimilarity (for every ``c > 0``): partition refinement from the
   ground's zero classes, splitting by modular fingerprints of the exact class masses, then an exact
   integer check of the final partition (and an exact refinement in Python if a fingerprint ever
   collided). The chain is replaced by its **quotient**; distances are constant on classes.
3. **Distance 1** (``c = 1``): a pair of quotient states is at distance 1 exactly when the ground
   separates it (``g = 1``) or it cannot reach the diagonal in the pair graph whose edges lead from
   ``(s, t)`` (with ``g(s, t) < 1``) to every ``(u, v)`` in ``supp P(s) x supp P(t)``: one backward
   breadth-first search from the diagonal, ``O(k^2 + m^2)`` for ``k`` classes and ``m`` transitions.
   For ``c < 1`` distance 1 means ``g = 1``.
4. **Policy iteration** on the remaining pairs ``U``: a coupling per pair, the linear system
   ``x = b + T x`` of its value, improvement by optimal transport (the compiled network simplex of
   :mod:`bisimkit.simplex`). With the diagonal at 0 and the distance-1 pairs at 1 every coupling
   strategy leaves ``U`` with probability 1, so ``I - T`` is non-singular.
5. **The bracket.** With ``z`` the solution of ``(I - T) z = 1`` (expected steps in ``U``), the upper
   bound ``u = x + e z`` is checked to be a pre-fixed point (``F(u) <= u``, with the transport of the
   current couplings, their marginal drift and every rounding charged), hence above the least fixed
   point; the lower bound ``l = x - e z`` is checked to be a post-fixed point (``l <= F(l)``, with lower
   bounds of the optimal transport values from the simplex's dual potentials), hence below the unique
   fixed point of ``F`` on ``U``. ``certified_error = max(u - l)``.

References: J. Desharnais, V. Gupta, R. Jagadeesan, P. Panangaden, "Metrics for labeled Markov
systems", CONCUR 1999. F. van Breugel, J. Worrell, "Towards quantitative verification of probabilistic
transition systems", ICALP 2001. D. Chen, F. van Breugel, J. Worrell, "On the complexity of computing
probabilistic bisimilarity distances for probabilistic automata", FoSSaCS 2012. Q. Tang, F. van Breugel,
"Computing probabilistic bisimilarity distances via policy iteration", CONCUR 2016; "Algorithms to
compute probabilistic bisimilarity distances for labelled Markov chains", CONCUR 2017; "Deciding
probabilistic bisimilarity distance one for labelled Markov chains", CAV 2018.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence, cast

import numpy as np

from .compiled import scc_gauss_seidel
from .engine import Solution
from .errors import InputError
from .ground import read_ground_file
from .kernels import kernel
from .mdp import ROW_TOLERANCE, FiniteMDP
from .pairs import check_state_pairs, successor_closure, successor_pairs
from .simplex import BASIS_DTYPE, basis_offsets, solve_padded

#: Labels left out of the ground by default: ``init`` marks where runs start, not how a state behaves.
DEFAULT_EXCLUDED_LABELS = ("init",)
#: Largest denominator tried when a stored probability is read as a fraction.
MAX_DENOMINATOR = 1_000_000
#: A fraction stands for a stored float when it is within this many units in the last place of it.
RATIONAL_ULPS = 4
#: All-pairs results are returned as dense n x n matrices up to this many states.
DENSE_STATES = 2048
#: Default memory budget of an all-pairs or query solve (bytes); larger problems are refused up front.
DEFAULT_MAX_MEMORY = 8 * 2**30
#: Estimated bytes per transport cell and per pair of the pair space (cell table, plans, bases, system).
CELL_BYTES = 64
PAIR_BYTES = 160
#: Improvement rounds of policy iteration before it stops uncertified (each round changes a coupling).
MAX_ROUNDS = 200
#: Unit roundoff of float64.
_U = 2.0**-53
#: Two primes below 2**31 for the fingerprints of exact class masses.
_PRIMES = (2_147_483_629, 2_147_483_587)


def _index_dtype(bound: int):
    """int32 for indices below ``bound`` when it fits (halves the cell tables), else int64."""
    return np.int32 if bound < 2**31 - 1 else np.int64


#: Target codes in the cell table: the diagonal (distance 0) and pairs at distance 1.
_DIAG = -1
_ONE = -2


# ------------------------------------------------------------------------------ inputs
@dataclass(frozen=True, eq=False)
class LabelledChain:
    """A labelled Markov chain in compressed sparse row form.

    Attributes
    ----------
    row_ptr : int64 (n + 1,); the successors of state s are ``columns[row_ptr[s]:row_ptr[s+1]]``.
    columns : int64 (m,); successor states.
    probabilities : float64 (m,); each row sums to 1 within :data:`~bisimkit.mdp.ROW_TOLERANCE`.
    classes : int64 (n,); the label class of each state: two states carry the same labels exactly when
        their classes are equal (e.g. :meth:`bisimkit.model_files.ModelData.label_classes`).
    source : where the chain came from, for messages.
    """

    row_ptr: np.ndarray
    columns: np.ndarray
    probabilities: np.ndarray
    classes: np.ndarray
    source: str = "chain"

    @property
    def n_states(self) -> int:
        return len(self.row_ptr) - 1

    @classmethod
    def from_model(cls, model, labels: Sequence[str] | None = None) -> "LabelledChain":
        """The chain of a :class:`~bisimkit.model_files.ModelData` (a DTMC, or an MDP with one action per
        state), its label classes over ``labels`` (default: every label but :data:`DEFAULT_EXCLUDED_LABELS`)."""
        kind = getattr(model, "model_type", None)
        if kind not in ("dtmc", "mdp"):
            raise InputError(f"model_type {kind!r}: the lmc distance needs a Markov chain (dtmc)", param="model")
        if model.n_actions != 1:
            raise InputError(
                f"model_type 'mdp': every state has {model.n_actions} actions; the lmc distance is "
                f"defined for Markov chains (one action per state)",
                param="model",
            )
        names = list(model.label_names)
        if labels is None:
            chosen = [x for x in names if x not in DEFAULT_EXCLUDED_LABELS]
        else:
            if isinstance(labels, str):
                raise InputError(f"{labels!r} is a string; give a list of label names", param="labels")
            chosen = []
            for i, name in enumerate(labels):
                if name not in names:
                    shown = ", ".join(repr(x) for x in names[:20]) or "(none)"
                    raise InputError(
                        f"entry {i}: unknown label {name!r}; the model's labels are {shown}", param="labels"
                    )
                chosen.append(name)
        classes = model.label_classes(chosen)
        return cls(
            np.asarray(model.row_ptr, dtype=np.int64),
            np.asarray(model.columns, dtype=np.int64),
            np.asarray(model.probabilities, dtype=np.float64),
            classes,
            source=str(model.source or "model"),
        )


def _mdp_chain(mdp: FiniteMDP, labels: Sequence[str] | None, need_labels: bool) -> LabelledChain:
    """The chain of a :class:`~bisimkit.mdp.FiniteMDP`: its rows (one action per state) or, with several
    actions, the chain of its policy ``Ppi``; the label classes of ``mdp.labels`` over ``labels`` (default
    every label but :data:`DEFAULT_EXCLUDED_LABELS`), or one class when ``need_labels`` is False (a ground
    replaces them)."""
    n, m = mdp.n_states, mdp.n_actions
    if m == 1:
        rows = mdp.transition_rows
    else:
        mdp.require_policy(f"the lmc distance of an MDP with {m} actions (the chain of its policy)")
        rows = mdp.transition_pi_rows
    rows = rows.tocsr() if hasattr(rows, "tocsr") else rows
    if not need_labels:
        if labels is not None:
            raise InputError("give labels= or ground=, not both", param="ground")
        classes = np.zeros(n, dtype=np.int64)
    elif mdp.labels is None:
        raise InputError(
            f"{mdp.label} carries no labels (read a model file, pass labels=[set of names per state] to "
            f"FiniteMDP, or give a ground)",
            param="labels",
        )
    else:
        present = sorted(set().union(*mdp.labels)) if n else []
        if labels is None:
            chosen = frozenset(x for x in present if x not in DEFAULT_EXCLUDED_LABELS)
        else:
            if isinstance(labels, str):
                raise InputError(f"{labels!r} is a string; give a list of label names", param="labels")
            for i, name in enumerate(labels):
                if name not in present:
                    shown = ", ".join(repr(x) for x in present[:20]) or "(none)"
                    raise InputError(
                        f"entry {i}: unknown label {name!r}; the model's labels are {shown}", param="labels"
                    )
            chosen = frozenset(labels)
        ids: dict[frozenset, int] = {}
        classes = np.array([ids.setdefault(state & chosen, len(ids)) for state in mdp.labels], dtype=np.int64)
    return LabelledChain(
        np.asarray(rows.indptr, dtype=np.int64),
        np.asarray(rows.indices, dtype=np.int64),
        np.asarray(rows.data, dtype=np.float64),
        classes,
        source=mdp.label,
    )


def _as_chain(model, labels, need_labels: bool = True) -> LabelledChain:
    if isinstance(model, FiniteMDP):
        chain = _mdp_chain(model, labels, need_labels)
    elif isinstance(model, LabelledChain):
        if labels is not None:
            raise InputError("a LabelledChain carries its label classes; labels= is for a ModelData", param="labels")
        arrays = {}
        for name, kind in (
            ("row_ptr", np.integer),
            ("columns", np.integer),
            ("probabilities", np.number),
            ("classes", np.integer),
        ):
            arr = np.asarray(getattr(model, name))
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, kind):
                what = "integers" if kind is np.integer else "numbers"
                raise InputError(
                    f"expected a one-dimensional array of {what}, got shape {arr.shape} and type {arr.dtype}",
                    param=name,
                )
            arrays[name] = arr.astype(np.float64 if name == "probabilities" else np.int64)
        chain = LabelledChain(**arrays, source=model.source)
    elif hasattr(model, "label_classes") and hasattr(model, "row_ptr"):
        chain = LabelledChain.from_model(model, labels)
    else:
        raise InputError(
            f"expected a FiniteMDP, a ModelData or a LabelledChain, got {type(model).__name__}", param="model"
        )
    _check_chain(chain)
    return chain


def _check_chain(chain: LabelledChain) -> None:
    ptr, cols, probs = chain.row_ptr, chain.columns, chain.probabilities
    if ptr.ndim != 1 or len(ptr) < 2 or ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] != len(cols):
        raise InputError(
            f"row_ptr must start at 0, not decrease and end at len(columns) = {len(cols)}", param="row_ptr"
        )
    n = len(ptr) - 1
    if len(probs) != len(cols):
        raise InputError(f"{len(probs)} probabilities for {len(cols)} columns", param="probabilities")
    empty = np.flatnonzero(np.diff(ptr) == 0)
    if len(empty):
        raise InputError(
            f"state {int(empty[0])} has no successors; every state of a Markov chain needs a successor distribution",
            param="row_ptr",
        )
    bad = np.flatnonzero((cols < 0) | (cols >= n))
    if len(bad):
        raise InputError(
            f"entry {int(bad[0])}: successor {int(cols[bad[0]])} is out of range ({n} states)", param="columns"
        )
    bad = np.flatnonzero(~np.isfinite(probs) | (probs < 0))
    if len(bad):
        s = int(np.searchsorted(ptr, bad[0], side="right") - 1)
        raise InputError(
            f"state {s}: probability {float(probs[bad[0]])!r} is not a finite non-negative number",
            param="probabilities",
        )
    sums = np.add.reduceat(probs, ptr[:-1])
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_TOLERANCE)
    if len(bad):
        raise InputError(
            f"state {int(bad[0])}: probabilities sum to {float(sums[bad[0]])!r}, not 1", param="probabilities"
        )
    cls = np.asarray(chain.classes)
    if cls.ndim != 1 or len(cls) != n:
        raise InputError(f"{cls.size} label classes for {n} states: every state needs its labels", param="classes")
    if not np.issubdtype(cls.dtype, np.integer) or (n and cls.min() < 0):
        raise InputError("label classes must be non-negative integers", param="classes")


def _check_discount(discount) -> float:
    try:
        c = float(discount)
    except (TypeError, ValueError):
        raise InputError(f"{discount!r} is not a number", param="discount") from None
    if not (0.0 < c <= 1.0):
        raise InputError(f"{discount!r} is not in (0, 1]", param="discount")
    return c


def _check_ground(ground, n: int) -> np.ndarray:
    g = np.asarray(ground, dtype=np.float64)
    if g.shape != (n, n):
        raise InputError(f"shape {g.shape}, expected ({n}, {n}) for {n} states", param="ground")
    bad = np.argwhere(~np.isfinite(g) | (g < 0) | (g > 1))
    if len(bad):
        i, j = (int(x) for x in bad[0])
        raise InputError(f"entry ({i}, {j}) is {float(g[i, j])!r}, outside [0, 1]", param="ground")
    bad = np.argwhere(g != g.T)
    if len(bad):
        i, j = (int(x) for x in bad[0])
        raise InputError(
            f"not symmetric: entry ({i}, {j}) is {g[i, j]!r}, entry ({j}, {i}) is {g[j, i]!r}", param="ground"
        )
    diag = np.flatnonzero(np.diag(g) != 0)
    if len(diag):
        i = int(diag[0])
        raise InputError(f"entry ({i}, {i}) is {g[i, i]!r}; the diagonal must be 0", param="ground")
    return g


def _ground_classes(g: np.ndarray) -> np.ndarray:
    """Classes of the relation ``g = 0``; it must be a congruence: states at ground 0 have equal rows (as for
    every pseudometric), so that the ground is constant on pairs of classes."""
    n = g.shape[0]
    zero = g == 0
    cls = np.full(n, -1, dtype=np.int64)
    k = 0
    for s in range(n):
        if cls[s] >= 0:
            continue
        members = np.flatnonzero(zero[s])
        if np.any(cls[members] >= 0):
            t = int(members[cls[members] >= 0][0])
            raise InputError(
                f"entries ({s}, {t}) = 0 but states {s} and {t} have different rows: the states at "
                f"ground 0 from each other must have equal rows (a pseudometric has)",
                param="ground",
            )
        rows = g[members]
        diff = np.flatnonzero(np.any(rows != rows[0], axis=1))
        if len(diff):
            t = int(members[diff[0]])
            raise InputError(
                f"entries ({s}, {t}) = 0 but states {s} and {t} have different rows: the states at "
                f"ground 0 from each other must have equal rows (a pseudometric has)",
                param="ground",
            )
        cls[members] = k
        k += 1
    return cls


# ------------------------------------------------------------------------------ the exact chain
@dataclass
class ExactRows:
    """The exact chain: probability ``num[e] / denominator`` on transition ``e`` (``num`` int64 when the
    common denominator is below 2**61, else Python ints), and the largest total-variation distance
    ``defect`` between a stored row and its exact row (rounded up)."""

    num: np.ndarray
    denominator: int
    defect: float
    repaired_rows: int


def _distance_up(x: float, q: Fraction) -> float:
    """``|x - q|`` rounded up (integer arithmetic on the float's exact ratio)."""
    num, den = x.as_integer_ratio()
    diff = abs(num * q.denominator - q.numerator * den)
    return 0.0 if diff == 0 else math.nextafter(diff / (den * q.denominator), math.inf)


def _fraction_for(v: float) -> Fraction:
    """The fraction read for the stored float ``v`` (module doc, step 1)."""
    q = Fraction(v).limit_denominator(MAX_DENOMINATOR)
    if _distance_up(v, q) <= RATIONAL_ULPS * (math.ulp(v) if v else 0.0):
        return q
    return Fraction(v)


#: Denominators tried first, all at once, before the continued fractions of ``limit_denominator``.
_SMALL_DENOMINATORS = np.arange(1, 1025, dtype=np.float64)


def _fractions_for(values: np.ndarray) -> tuple[list[Fraction], np.ndarray]:
    """:func:`_fraction_for` of every value, and each value's distance to its fraction (rounded up).

    The smallest denominator up to 1024 whose multiple of the value is within rounding of an integer is
    tried first (vectorised); the other values go through ``limit_denominator``. Both give the same fraction
    when both apply: two fractions with denominators up to 10**6 differ by at least 1e-12, far more than the
    8 units in the last place that separate two candidates."""
    fracs: list[Fraction] = []
    err = np.zeros(len(values))
    for start in range(0, len(values), 512):
        v = values[start : start + 512]
        prod = v[:, None] * _SMALL_DENOMINATORS[None, :]
        # within about 2 * RATIONAL_ULPS units in the last place (a filter: the choice is checked exactly below)
        near = np.abs(prod - np.round(prod)) <= (4 * RATIONAL_ULPS * 2.0**-52) * np.abs(prod)
        has = cast(np.ndarray, near.any(axis=1))  # a 2-D array reduced along axis 1
        first = np.argmax(near, axis=1)
        for i, x in enumerate(v.tolist()):
            q = None
            if has[i]:
                den = int(_SMALL_DENOMINATORS[first[i]])
                q = Fraction(int(round(x * den)), den)
                if _distance_up(x, q) > RATIONAL_ULPS * (math.ulp(x) if x else 0.0):
                    q = None
            if q is None:
                q = _fraction_for(x)
            fracs.append(q)
            err[start + i] = _distance_up(x, q)
    return fracs, err


def exact_rows(row_ptr: np.ndarray, probabilities: np.ndarray) -> ExactRows:
    """Read the stored probabilities as an exact stochastic chain (module doc, step 1)."""
    ptr = np.asarray(row_ptr, dtype=np.int64)
    values, inverse = np.unique(probabilities, return_inverse=True)
    inverse = inverse.reshape(-1)
    fracs, err = _fractions_for(values)
    entries: list[Fraction] | None = None
    den = math.lcm(*(q.denominator for q in fracs)) if fracs else 1
    repaired: dict[int, list[Fraction]] = {}
    n = len(ptr) - 1
    if den < 2**61:
        num_vals = np.array([q.numerator * (den // q.denominator) for q in fracs], dtype=np.int64)
        num = num_vals[inverse]
        sums = np.add.reduceat(num, ptr[:-1]) if n else np.zeros(0, np.int64)
        bad_rows = np.flatnonzero(sums != den)
    else:
        entries = [fracs[i] for i in inverse.tolist()]
        bad_rows = np.array([s for s in range(n) if sum(entries[ptr[s] : ptr[s + 1]]) != 1], dtype=np.int64)
    defect_rows = np.add.reduceat(err[inverse], ptr[:-1]) * (1 + 4 * _U) if n else np.zeros(0)
    for s in bad_rows.tolist():
        stored = [Fraction(float(p)) for p in probabilities[ptr[s] : ptr[s + 1]]]
        if sum(stored) != 1:
            top = max(range(len(stored)), key=lambda i: stored[i])
            stored[top] += 1 - sum(stored)
        repaired[s] = stored
        exact_stored = [Fraction(float(p)) for p in probabilities[ptr[s] : ptr[s + 1]]]
        defect_rows[s] = math.nextafter(float(sum(abs(a - b) for a, b in zip(stored, exact_stored))), math.inf)
    if repaired:
        if entries is None:
            entries = [fracs[i] for i in inverse.tolist()]
        for s, row in repaired.items():
            entries[ptr[s] : ptr[s + 1]] = row
        den = math.lcm(*{q.denominator for q in entries})
    if entries is not None:
        if den < 2**61:
            num = np.array([q.numerator * (den // q.denominator) for q in entries], dtype=np.int64)
        else:
            num = np.empty(len(entries), dtype=object)
            num[:] = [q.numerator * (den // q.denominator) for q in entries]
    return ExactRows(num, den, float(defect_rows.max(initial=0.0)), len(repaired))


# ------------------------------------------------------------------------------ distance 0: bisimilarity
def _relabel(keys: Sequence[np.ndarray]) -> np.ndarray:
    """Ids 0, 1, ... of the distinct rows of the columns ``keys``, in order of first occurrence of each id's
    smallest key (ids sorted by the keys)."""
    n = len(keys[0])
    order = np.lexsort(tuple(reversed(keys)))
    new = np.ones(n, dtype=bool)
    if n > 1:
        change = np.zeros(n - 1, dtype=bool)
        for k in keys:
            ks = k[order]
            change |= ks[1:] != ks[:-1]
        new[1:] = change
    ids = np.empty(n, dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids


def _canonical(blocks: np.ndarray) -> np.ndarray:
    """Block ids renumbered 0, 1, ... in order of each block's first state."""
    _, first, inverse = np.unique(blocks, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _fingerprint_weights(num: np.ndarray) -> tuple[np.ndarray, ...]:
    if num.dtype == object:
        return tuple(np.array([int(x) % p for x in num], dtype=np.int64) for p in _PRIMES)
    return tuple(num % p for p in _PRIMES)


def _mix(blocks: np.ndarray, salt: int, p: int) -> np.ndarray:
    """A pseudo-random value in ``[1, p)`` per block id (splitmix64 of the id and a salt)."""
    with np.errstate(over="ignore"):
        z = (blocks.astype(np.uint64) + np.uint64(salt)) * np.uint64(0x9E3779B97F4A7C15)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z % np.uint64(p - 1)).astype(np.int64) + 1


def _gather_rows(ptr: np.ndarray, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the entries of the CSR rows ``states`` (concatenated) and the start of each row in them."""
    counts = ptr[states + 1] - ptr[states]
    starts = np.zeros(len(states), dtype=np.int64)
    if len(states) > 1:
        np.cumsum(counts[:-1], out=starts[1:])
    pos = np.repeat(ptr[states] - starts, counts) + np.arange(int(counts.sum()), dtype=np.int64)
    return pos, starts


def refine(
    row_ptr: np.ndarray, columns: np.ndarray, num: np.ndarray, initial: np.ndarray, seed: int = 0
) -> tuple[np.ndarray, int]:
    """Coarsest partition finer than ``initial`` in which all states of a block put equal exact mass
    ``num`` into every block: probabilistic bisimilarity. Returns ``(blocks, rounds)``, block ids in order
    of first state.

    States are told apart by two fingerprints of their vectors of block masses, ``sum_B mass_B r_B mod p``
    with pseudo-random ``r_B`` and two primes ``p``; equal vectors have equal fingerprints, so no round
    splits a class of bisimilar states. The first round compares every state's masses into every block.
    After it every block is stable for the partition before the round, and a later round only looks at the
    predecessors of the blocks the last round created (one part of every split block keeps its id, the
    largest where possible, as in Paige and Tarjan's "process the smaller half"): their masses into those
    new blocks decide, the mass into the part that kept the id follows from the old block's. A round that
    creates no block ends it. :func:`check_bisimulation` then verifies the result with exact integers, and
    :func:`refine_exact` finishes it if a fingerprint ever collided.
    """
    ptr = np.asarray(row_ptr, dtype=np.int64)
    cols = np.asarray(columns, dtype=np.int64)
    n = len(ptr) - 1
    blocks = _canonical(np.asarray(initial, dtype=np.int64))
    if n == 0:
        return blocks, 0
    w = _fingerprint_weights(num)
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    order = np.argsort(cols, kind="stable")
    pred = src[order]
    pred_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n), out=pred_ptr[1:])
    count = int(blocks.max()) + 1
    size = np.bincount(blocks, minlength=count).astype(np.int64)
    look = np.arange(n, dtype=np.int64)
    new_from = 0  # the first round weighs every block
    rounds = 0
    while len(look):
        rounds += 1
        pos, starts = _gather_rows(ptr, look)
        tb = blocks[cols[pos]]
        counted = tb >= new_from
        old = blocks[look]
        keys = [old]
        for wk, prime, salt in zip(w, _PRIMES, (2 * rounds + seed, 2 * rounds + 1 + seed)):
            term = (wk[pos] * _mix(tb, (salt * 0x632BE59BD9B4E019) % 2**64, prime)) % prime
            keys.append(np.add.reduceat(np.where(counted, term, 0), starts) % prime)
        sub = _relabel(keys)  # groups of (old block, fingerprints), ids sorted by old block
        n_sub = int(sub.max()) + 1
        sub_size = np.bincount(sub, minlength=n_sub)
        first = np.zeros(n_sub, dtype=np.int64)
        first[sub[::-1]] = np.arange(len(sub))[::-1]
        sub_old = old[first]
        looked = np.bincount(sub_old, weights=sub_size, minlength=count).astype(np.int64)
        whole = looked[sub_old] == size[sub_old]  # every state of the old block was looked at
        # in a wholly looked-at block the largest group keeps the id; otherwise the others keep it
        bounds = np.flatnonzero(np.r_[True, sub_old[1:] != sub_old[:-1]])
        largest = np.maximum.reduceat(sub_size, bounds)
        keeper = np.zeros(n_sub, dtype=bool)
        cand = whole & (sub_size == np.repeat(largest, np.diff(np.r_[bounds, n_sub])))
        cand_idx = np.flatnonzero(cand)
        if len(cand_idx):
            _, pick = np.unique(sub_old[cand_idx], return_index=True)
            keeper[cand_idx[pick]] = True
        fresh = ~keeper
        n_new = int(fresh.sum())
        if n_new == 0:
            break
        new_id = np.where(keeper, sub_old, count + np.cumsum(fresh) - 1)
        ids = new_id[sub]
        moved = look[ids >= count]
        np.subtract.at(size, old[ids >= count], 1)
        blocks[look] = ids
        size = np.concatenate([size, sub_size[fresh]])
        new_from = count
        count += n_new
        ppos, _ = _gather_rows(pred_ptr, moved)
        look = np.unique(pred[ppos])
    return _canonical(blocks), rounds


def _block_masses(row_ptr, columns, num, blocks):
    """Per state, its (block, exact mass) pairs sorted by block: ``(ptr, block, mass)`` in CSR form."""
    ptr = np.asarray(row_ptr, dtype=np.int64)
    n = len(ptr) - 1
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    tb = blocks[columns]
    order = np.lexsort((tb, src))
    s_sorted, b_sorted = src[order], tb[order]
    start = np.ones(len(order), dtype=bool)
    start[1:] = (s_sorted[1:] != s_sorted[:-1]) | (b_sorted[1:] != b_sorted[:-1])
    first = np.flatnonzero(start)
    mass = np.add.reduceat(num[order], first) if len(first) else num[:0]
    gsrc = s_sorted[first]
    gptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(gsrc, minlength=n), out=gptr[1:])
    return gptr, b_sorted[first], mass


def check_bisimulation(row_ptr, columns, num, blocks) -> tuple[bool, tuple]:
    """Whether every state has exactly the block masses of its block's first state (exact integers), and
    the block masses ``(ptr, block, mass)`` of every state."""
    gptr, gblk, gmass = _block_masses(row_ptr, columns, num, blocks)
    n = len(gptr) - 1
    _, rep = np.unique(blocks, return_index=True)
    r = rep[blocks]
    cnt = np.diff(gptr)
    if np.any(cnt != cnt[r]):
        return False, (gptr, gblk, gmass)
    pos = np.arange(len(gblk)) - np.repeat(gptr[:-1], cnt)
    mine = np.arange(len(gblk))
    theirs = np.repeat(gptr[r], cnt) + pos
    same = (gblk[mine] == gblk[theirs]) & (gmass[mine] == gmass[theirs])
    del n
    return bool(np.all(same)), (gptr, gblk, gmass)


def refine_exact(row_ptr, columns, num, initial) -> np.ndarray:
    """Partition refinement with exact integer signatures in Python dictionaries: the reference the
    fingerprinted :func:`refine` falls back on when its result fails :func:`check_bisimulation`."""
    ptr = [int(x) for x in row_ptr]
    cols = [int(x) for x in columns]
    weights = [int(x) for x in num]
    blocks = [int(x) for x in _canonical(np.asarray(initial, dtype=np.int64))]
    n = len(ptr) - 1
    count = len(set(blocks))
    while True:
        table: dict = {}
        new = []
        for s in range(n):
            masses: dict[int, int] = {}
            for e in range(ptr[s], ptr[s + 1]):
                b = blocks[cols[e]]
                masses[b] = masses.get(b, 0) + weights[e]
            key = (blocks[s], tuple(sorted(masses.items())))
            new.append(table.setdefault(key, len(table)))
        blocks = new
        if len(table) == count:
            break
        count = len(table)
    return _canonical(np.asarray(blocks, dtype=np.int64))


@dataclass
class Quotient:
    """The bisimulation quotient: ``k`` classes, class ``classes[s]`` of each state, its rows in CSR form
    (successor classes, exact numerators over the chain's denominator, float probabilities) and the
    first state of each class."""

    classes: np.ndarray
    row_ptr: np.ndarray
    columns: np.ndarray
    num: np.ndarray
    probabilities: np.ndarray
    representatives: np.ndarray
    rounds: int
    exact_fallback: bool

    @property
    def k(self) -> int:
        return len(self.row_ptr) - 1


def bisimulation_quotient(row_ptr, columns, exact: ExactRows, initial) -> Quotient:
    """Probabilistic bisimilarity of the exact chain from the partition ``initial``, and its quotient."""
    blocks, rounds = refine(row_ptr, columns, exact.num, initial)
    ok, (gptr, gblk, gmass) = check_bisimulation(row_ptr, columns, exact.num, blocks)
    fallback = False
    if not ok:  # a fingerprint collided: finish exactly
        blocks = refine_exact(row_ptr, columns, exact.num, blocks)
        ok, (gptr, gblk, gmass) = check_bisimulation(row_ptr, columns, exact.num, blocks)
        fallback = True
        if not ok:  # pragma: no cover - refine_exact is exact
            raise RuntimeError("partition refinement did not reach a bisimulation")
    _, rep = np.unique(blocks, return_index=True)
    k = len(rep)
    cnt = np.diff(gptr)[rep]
    qptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(cnt, out=qptr[1:])
    take = np.concatenate([np.arange(gptr[r], gptr[r + 1]) for r in rep]) if k else np.zeros(0, np.int64)
    qcols = gblk[take].astype(np.int64)
    qnum = gmass[take]
    qprob = _to_float(qnum, exact.denominator)
    return Quotient(blocks, qptr, qcols, qnum, qprob, rep.astype(np.int64), rounds, fallback)


def _to_float(num: np.ndarray, den: int) -> np.ndarray:
    """``num / den`` correctly rounded."""
    if num.dtype != object and den < 2**53 and (len(num) == 0 or int(np.max(np.abs(num))) < 2**53):
        return num.astype(np.float64) / float(den)
    return np.array([float(Fraction(int(a), den)) for a in num], dtype=np.float64)


# ------------------------------------------------------------------------------ the pair space
#: Bound on the total-variation distance between a float quotient row and its exact row: every entry is
#: the correctly rounded ``num / denominator``, so the sum of the errors is at most 2**-53 (charged twice).
_ROW_ERROR = 2.0**-52


@dataclass
class PairSpace:
    """Unordered pairs ``(I[p], J[p])``, ``I < J``, of quotient states with ground below 1, and their
    transport cells: pair p's cells are ``cell_ptr[p]:cell_ptr[p+1]``, row-major over
    ``supp P(I) x supp P(J)``, each naming the successor pair's index or ``_DIAG`` / ``_ONE``."""

    I: np.ndarray
    J: np.ndarray
    g: np.ndarray
    cell_ptr: np.ndarray
    tgt: np.ndarray

    @property
    def size(self) -> int:
        return len(self.I)


class _Ground:
    """The ground on quotient states: label classes (0 or 1) or a dense matrix."""

    def __init__(self, labels: np.ndarray | None, matrix: np.ndarray | None) -> None:
        self.labels = labels
        self.matrix = matrix

    def __call__(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        if self.matrix is not None:
            return self.matrix[i, j]
        assert self.labels is not None  # a ground has labels or a matrix
        return (self.labels[i] != self.labels[j]).astype(np.float64)

    def candidates(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Every pair ``i < j`` with ground below 1, sorted by ``i * k + j``."""
        if self.matrix is not None:
            i, j = np.nonzero(np.triu(self.matrix < 1.0, 1))
            return i.astype(np.int64), j.astype(np.int64)
        assert self.labels is not None  # a ground has labels or a matrix
        order = np.argsort(self.labels, kind="stable")
        bounds = np.flatnonzero(np.diff(self.labels[order])) + 1
        Is, Js = [], []
        for members in np.split(order, bounds):
            if len(members) > 1:
                a, b = np.triu_indices(len(members), 1)
                Is.append(members[a])
                Js.append(members[b])
        if not Is:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        I, J = np.concatenate(Is), np.concatenate(Js)
        lo, hi = np.minimum(I, J), np.maximum(I, J)
        order = np.argsort(lo * k + hi, kind="stable")
        return lo[order].astype(np.int64), hi[order].astype(np.int64)

    def candidate_count(self, k: int, degrees: np.ndarray) -> tuple[int, int]:
        """``(pairs, cells)`` of the all-pairs space without building it."""
        if self.matrix is not None:
            mask = np.triu(self.matrix < 1.0, 1)
            i, j = np.nonzero(mask)
            return len(i), int(np.sum(degrees[i] * degrees[j]))
        pairs = cells = 0
        assert self.labels is not None  # a ground has labels or a matrix
        for lab in np.unique(self.labels):
            d = degrees[self.labels == lab].astype(np.float64)
            pairs += len(d) * (len(d) - 1) // 2
            cells += int((d.sum() ** 2 - (d**2).sum()) / 2)
        return pairs, cells


def _cell_targets(u, v, ground: _Ground, lookup) -> np.ndarray:
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    tgt = np.full(len(u), _DIAG, dtype=np.int64)
    off = lo != hi
    if off.any():
        gl = ground(lo[off], hi[off])
        t = np.full(int(off.sum()), _ONE, dtype=np.int64)
        live = gl < 1.0
        t[live] = lookup(lo[off][live], hi[off][live])
        tgt[off] = t
    return tgt


def _sorted_lookup(keys: np.ndarray, k: int):
    def lookup(lo, hi):
        q = lo * k + hi
        pos = np.searchsorted(keys, q)
        if len(q) and (pos.max(initial=0) >= len(keys) or np.any(keys[np.minimum(pos, len(keys) - 1)] != q)):
            raise RuntimeError("a successor pair is missing from the pair space")  # pragma: no cover
        return pos

    return lookup


def build_pairs(I, J, quotient: Quotient, ground: _Ground) -> PairSpace:
    """The cell table of the pairs ``(I, J)`` (sorted by ``I * k + J``, closed under successor pairs)."""
    k = quotient.k
    keys = I * k + J
    lookup = _sorted_lookup(keys, k)
    deg = np.diff(quotient.row_ptr)
    nc = deg[I] * deg[J]
    cell_ptr = np.zeros(len(I) + 1, dtype=np.int64)
    np.cumsum(nc, out=cell_ptr[1:])
    tgt = np.empty(int(cell_ptr[-1]), dtype=_index_dtype(len(I) + 2))
    pos = 0
    for _, u, v in successor_pairs(I, J, quotient.row_ptr, quotient.columns):
        tgt[pos : pos + len(u)] = _cell_targets(u, v, ground, lookup)
        pos += len(u)
    g = ground(I, J) if len(I) else np.zeros(0)
    return PairSpace(I, J, np.asarray(g, dtype=np.float64), cell_ptr, tgt)


def closure(seeds_i, seeds_j, quotient: Quotient, ground: _Ground, max_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``i < j`` with ground below 1 reachable from the seed pairs through successor pairs
    (stopping at the diagonal and at ground 1), sorted by ``i * k + j``."""
    I, J = successor_closure(
        quotient.row_ptr,
        quotient.columns,
        seeds_i,
        seeds_j,
        quotient.k,
        max_pairs,
        live=lambda i, j: ground(i, j) < 1.0,
    )
    if I is None:
        raise InputError(
            f"the queried pairs reach more than {max_pairs} pairs of bisimulation classes, more "
            f"than max_memory allows; query fewer pairs or raise max_memory",
            param="pairs",
        )
    assert J is not None  # found together with I
    return I, J


def reach_diagonal(space: PairSpace) -> np.ndarray:
    """bool per pair: whether it reaches the diagonal in the pair graph (edges to every successor pair
    with ground below 1). One backward breadth-first search from the diagonal."""
    # start-up cost: scipy's sparse modules load when distances are computed, not with this module
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    N = space.size
    if N == 0:
        return np.zeros(0, dtype=bool)
    src = np.repeat(np.arange(N, dtype=np.int64), np.diff(space.cell_ptr))
    edge = (space.tgt >= 0) | (space.tgt == _DIAG)
    dst = np.where(space.tgt == _DIAG, N, space.tgt)[edge]
    back = sp.csr_matrix((np.ones(len(dst), dtype=np.int8), (dst, src[edge])), shape=(N + 1, N + 1))
    order = breadth_first_order(back, N, directed=True, return_predecessors=False)
    good = np.zeros(N + 1, dtype=bool)
    good[order] = True
    return good[:N]


def restrict(space: PairSpace, keep: np.ndarray) -> PairSpace:
    """The pairs ``keep``; cells leading to dropped pairs lead to distance 1 instead."""
    new_index = np.full(space.size, _ONE, dtype=np.int64)
    new_index[keep] = np.arange(int(keep.sum()))
    counts = np.diff(space.cell_ptr)[keep]
    cell_keep = np.repeat(keep, np.diff(space.cell_ptr))
    tgt = space.tgt[cell_keep]
    live = tgt >= 0
    tgt[live] = new_index[tgt[live]]
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return PairSpace(space.I[keep], space.J[keep], space.g[keep], ptr, tgt)


def full_graph(space: PairSpace):
    """The pair graph with an edge for every cell between two pairs of the space (CSR, pattern only)."""
    # start-up cost: scipy's sparse modules load when distances are computed, not with this module
    import scipy.sparse as sp

    N = space.size
    live = space.tgt >= 0
    rows = np.repeat(np.arange(N, dtype=space.tgt.dtype), np.diff(space.cell_ptr))[live]
    indptr = np.zeros(N + 1, dtype=_index_dtype(len(rows)))
    np.cumsum(np.bincount(rows, minlength=N), out=indptr[1:])
    G = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), space.tgt[live], indptr), shape=(N, N))
    G.sum_duplicates()  # scipy's strongly connected components need canonical rows
    return G


def reorder(space: PairSpace, order: np.ndarray) -> PairSpace:
    """The space with its pairs renumbered: new pair ``i`` is old pair ``order[i]``."""
    N = space.size
    new_index = np.empty(N, dtype=np.int64)
    new_index[order] = np.arange(N)
    counts = np.diff(space.cell_ptr)[order]
    ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    cells = np.repeat(space.cell_ptr[order] - ptr[:-1], counts) + np.arange(int(ptr[-1]))
    tgt = space.tgt[cells]
    live = tgt >= 0
    tgt[live] = new_index[tgt[live]]
    return PairSpace(space.I[order], space.J[order], space.g[order], ptr, tgt)


# ------------------------------------------------------------------------------ couplings
@dataclass
class _Group:
    """The pairs of one support shape ``ka x kb``: their masses, the positions ``cells`` (G, ka * kb) of their
    transport cells in the flat cell arrays, and the simplex bases of their last solve."""

    pairs: np.ndarray
    ka: int
    kb: int
    a: np.ndarray
    b: np.ndarray
    cells: np.ndarray
    basis: np.ndarray | None = None
    warm: np.ndarray | None = None

    @property
    def fixed(self) -> bool:
        """One atom on a side: the product is the only coupling."""
        return self.ka == 1 or self.kb == 1


class _Couplings:
    """A coupling for every pair of the space, stored cell by cell (``plan``, aligned with the cell table),
    with the cells' targets in the extended value vector (``N`` the diagonal, ``N + 1`` distance 1) and
    the pairs grouped by support shape for the transport solves."""

    def __init__(self, space: PairSpace, quotient: Quotient) -> None:
        N = space.size
        self.N = N
        index = _index_dtype(N + 2)
        self.target = np.where(space.tgt >= 0, space.tgt, np.where(space.tgt == _DIAG, N, N + 1)).astype(index)
        counts = np.diff(space.cell_ptr)
        self.cell_pair = np.repeat(np.arange(N, dtype=index), counts)
        cell_index = _index_dtype(len(self.target))
        self.plan = np.zeros(len(self.target))
        deg = np.diff(quotient.row_ptr)
        di, dj = deg[space.I], deg[space.J]
        shape = di * (int(deg.max(initial=1)) + 1) + dj
        order = np.argsort(shape, kind="stable")
        bounds = np.flatnonzero(np.diff(shape[order])) + 1
        self.groups: list[_Group] = []
        for pairs in np.split(order, bounds) if N else []:
            ka, kb = int(di[pairs[0]]), int(dj[pairs[0]])
            a = quotient.probabilities[quotient.row_ptr[space.I[pairs]][:, None] + np.arange(ka)]
            b = quotient.probabilities[quotient.row_ptr[space.J[pairs]][:, None] + np.arange(kb)]
            cells = (space.cell_ptr[pairs][:, None] + np.arange(ka * kb)).astype(cell_index)
            grp = _Group(pairs, ka, kb, a, b, cells)
            if grp.fixed:
                self.plan[cells] = (a[:, :, None] * b[:, None, :]).reshape(len(pairs), ka * kb)
            self.groups.append(grp)

    def costs(self, grp: _Group, ext: np.ndarray) -> np.ndarray:
        """(G, ka, kb) transport costs of the group under the values ``ext``."""
        return ext[self.target[grp.cells]].reshape(len(grp.pairs), grp.ka, grp.kb)

    def plan_of(self, grp: _Group) -> np.ndarray:
        return self.plan[grp.cells].reshape(len(grp.pairs), grp.ka, grp.kb)


def _transport(grp: _Group, C: np.ndarray, couplings: _Couplings):
    """Optimal couplings of the group under the costs ``C`` (G, ka, kb): ``(cost, plan, low, solved)``, with
    ``low`` a rigorous lower bound of the optimal transport value between the *exact* laws of each pair
    (rounding and the float laws' deviation from the exact ones included); ``solved`` is False for a group
    whose only coupling is the product."""
    if grp.fixed:  # the product is the only coupling: its cost, from float laws within 2**-53 of the exact
        plan = couplings.plan_of(grp)
        cost = np.einsum("gab,gab->g", plan, C)
        return cost, plan, cost - (grp.ka * grp.kb + 2) * 2 * _U * cost - 2 * _ROW_ERROR, False
    if grp.ka == 2 and grp.kb == 2:
        return _transport_2x2(grp.a, grp.b, C) + (True,)
    G, ka, kb = len(grp.pairs), grp.ka, grp.kb
    k = np.full(G, ka, dtype=np.int64)
    l = np.full(G, kb, dtype=np.int64)
    if grp.basis is None:
        grp.basis = np.zeros((int(basis_offsets(k, l)[-1]), 2), dtype=BASIS_DTYPE)
        grp.warm = np.zeros(G, dtype=np.bool_)
    costs, flows, ok, _, grp.basis, _ = solve_padded(grp.a, grp.b, C, k, l, grp.basis, grp.warm)
    grp.warm = ok.copy()
    low = np.empty(G)
    _tree_dual_bounds(grp.basis.reshape(G, ka + kb - 1, 2), C, grp.a, grp.b, _ROW_ERROR, low)
    for p in np.flatnonzero(~ok):  # pragma: no cover - the simplex's pivot cap: POT's solver instead
        from .couplings import load_pot  # the POT extra: only past the simplex's pivot cap

        Gp, log = load_pot().emd(grp.a[p], grp.b[p], C[p], numItermax=10_000_000, log=True)
        flows[p] = Gp
        costs[p] = float(np.sum(Gp * C[p]))
        low[p] = _dual_bound(grp.a[p : p + 1], grp.b[p : p + 1], C[p : p + 1], log["u"][None], log["v"][None])[0]
    return costs, flows, low, True


@kernel
def _tree_dual_bounds(basis, C, a, b, law_error, low):
    """Per problem, the lower bound of :func:`_dual_bound` from the potentials of its spanning-tree basis.

    Parameters
    ----------
    basis : (G, ka + kb - 1, 2) integer (row, column) cells of each problem's basis.
    C : (G, ka, kb) costs; a : (G, ka), b : (G, kb) the float laws.
    law_error : the total-variation distance of each float law from its exact law (at most).
    low : (G,) output; 0 where a basis is not a spanning tree.
    """
    eps = 1.1102230246251565e-16
    G, ka, kb = C.shape
    edges = basis.shape[1]
    u = np.empty(ka)
    v = np.empty(kb)
    for p in range(G):
        u[:] = np.nan
        v[:] = np.nan
        u[0] = 0.0
        for _ in range(edges):
            changed = False
            for e in range(edges):
                r = basis[p, e, 0]
                c = basis[p, e, 1]
                if not np.isnan(u[r]) and np.isnan(v[c]):
                    v[c] = C[p, r, c] - u[r]
                    changed = True
                elif np.isnan(u[r]) and not np.isnan(v[c]):
                    u[r] = C[p, r, c] - v[c]
                    changed = True
            if not changed:
                break
        if np.any(np.isnan(u)) or np.any(np.isnan(v)):
            low[p] = 0.0
            continue
        violation = 0.0
        top = 0.0
        for i in range(ka):
            for j in range(kb):
                x = u[i] + v[j] - C[p, i, j]
                if x > violation:
                    violation = x
                if abs(C[p, i, j]) > top:
                    top = abs(C[p, i, j])
        size = np.max(np.abs(u)) + np.max(np.abs(v))
        shift = violation + 4 * eps * (size + top)
        dual = 0.0
        terms = 0.0
        big_u = 0.0
        for i in range(ka):
            w = u[i] - shift
            dual += a[p, i] * w
            terms += abs(a[p, i] * w)
            if abs(w) > big_u:
                big_u = abs(w)
        big_v = 0.0
        for j in range(kb):
            dual += b[p, j] * v[j]
            terms += abs(b[p, j] * v[j])
            if abs(v[j]) > big_v:
                big_v = abs(v[j])
        bound = dual - (ka + kb + 2) * 2 * eps * terms - law_error * (big_u + big_v)
        low[p] = bound if bound > 0.0 else 0.0


def _dual_bound(a: np.ndarray, b: np.ndarray, C: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A rigorous lower bound, per problem, of the transport value between the exact laws ``a*``, ``b*``
    (each within total variation 2**-53 of ``a``, ``b``) under the costs ``C``, from any potentials.

    Weak duality: shifted down by their largest violation of ``u_i + v_j <= C_ij`` (plus a rounding margin),
    the potentials are feasible, and ``OT(a*, b*) >= sum a* u + sum b* v``. That sum differs from
    ``sum a u + sum b v`` by at most ``2**-53 (max|u| + max|v|)``, and its evaluation errs by at most
    ``(k + l + 2) u`` times the sum of the absolute terms. Where a potential is missing the bound is 0 (the
    costs are non-negative)."""
    ka, kb = u.shape[1], v.shape[1]
    valid = np.all(np.isfinite(u), axis=1) & np.all(np.isfinite(v), axis=1)
    u = np.where(valid[:, None], u, 0.0)
    v = np.where(valid[:, None], v, 0.0)
    size = np.max(np.abs(u), axis=1) + np.max(np.abs(v), axis=1)
    violation = np.max((u[:, :, None] + v[:, None, :] - C).reshape(len(C), -1), axis=1)
    shift = np.maximum(violation, 0.0) + 4 * _U * (size + np.max(np.abs(C).reshape(len(C), -1), axis=1))
    u = u - shift[:, None]
    dual = np.sum(a * u, axis=1) + np.sum(b * v, axis=1)
    terms = np.sum(np.abs(a * u), axis=1) + np.sum(np.abs(b * v), axis=1)
    size = np.max(np.abs(u), axis=1) + np.max(np.abs(v), axis=1)
    low = dual - (ka + kb + 2) * 2 * _U * terms - _ROW_ERROR * size
    return np.where(valid, np.maximum(low, 0.0), 0.0)


def _transport_2x2(a: np.ndarray, b: np.ndarray, C: np.ndarray):
    """Optimal transport between two-atom laws, in closed form: the couplings are
    ``[[t, a0 - t], [b0 - t, a1 - b0 + t]]`` for ``t`` in ``[max(0, b0 - a1), min(a0, b0)]`` and the cost is
    affine in ``t``, so the optimum is the cheaper end. The lower bound returned charges the rounding of both
    ends' costs and the difference between the ends computed from the float laws and from the exact ones
    (each plan entry moves by at most twice the laws' total deviation, 2 * 2**-53, and costs are at most 1)."""
    a0, a1, b0 = a[:, 0], a[:, 1], b[:, 0]
    lo = np.maximum(0.0, b0 - a1)
    hi = np.minimum(a0, b0)
    c00, c01, c10, c11 = C[:, 0, 0], C[:, 0, 1], C[:, 1, 0], C[:, 1, 1]

    def cost(t):
        return c00 * t + c01 * (a0 - t) + c10 * (b0 - t) + c11 * np.maximum(a1 - b0 + t, 0.0)

    f_lo, f_hi = cost(lo), cost(hi)
    t = np.where(f_lo <= f_hi, lo, hi)
    plan = np.empty_like(C)
    plan[:, 0, 0] = t
    plan[:, 0, 1] = np.maximum(a0 - t, 0.0)
    plan[:, 1, 0] = np.maximum(b0 - t, 0.0)
    plan[:, 1, 1] = np.maximum(a1 - b0 + t, 0.0)
    value = np.minimum(f_lo, f_hi)
    return value, plan, value - 24 * _U * (1.0 + value) - 10 * _ROW_ERROR


def _oplus(g: np.ndarray, w: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Rigorous lower and upper bounds of ``g + (1 - g) c w`` (non-negative ``g``, ``w``) from its float value:
    four roundings of at most ``u`` relative each on non-negative terms."""
    v = g + (1.0 - g) * (c * w)
    slack = 5 * _U * (g + w) + 1e-300
    return v - slack, v + slack


# ------------------------------------------------------------------------------ policy iteration
@dataclass
class _Solution:
    lower: np.ndarray
    upper: np.ndarray
    rounds: int
    evaluations: int
    certified: bool
    note: str = ""


def _assemble(couplings: _Couplings, space: PairSpace, c: float):
    """``T`` (CSR) and ``b`` of the current couplings:
    ``x = b + T x`` on the pairs."""
    # start-up cost: scipy's sparse modules load when distances are computed, not with this module
    import scipy.sparse as sp

    N = space.size
    scale = c * (1.0 - space.g)
    target, plan, cell_pair = couplings.target, couplings.plan, couplings.cell_pair
    live = (target < N) & (plan > 0)
    rows = cell_pair[live]
    indptr = np.zeros(N + 1, dtype=_index_dtype(len(rows)))
    np.cumsum(np.bincount(rows, minlength=N), out=indptr[1:])
    T = sp.csr_matrix((scale[rows] * plan[live], target[live], indptr), shape=(N, N))
    T.sum_duplicates()  # scipy's strongly connected components need canonical rows
    one = np.bincount(cell_pair, weights=np.where(target == N + 1, plan, 0.0), minlength=N)
    return space.g + scale * one, T


#: Strongly connected components up to this size are eliminated densely inside :func:`_scc_sweep`;
#: larger ones by a sparse LU of their block.
DENSE_SCC_MAX = 256
#: Gauss-Seidel sweeps tried on a larger component before its sparse LU, and the change per sweep (relative to
#: the largest value) at which they stop.
GAUSS_SEIDEL_SWEEPS = 400
GAUSS_SEIDEL_TARGET = 2.0**-50
#: When every component of the full pair graph has at most this many pairs, those components serve every
#: policy evaluation; otherwise each coupling's own graph is decomposed.
FIXED_COMPONENTS_MAX = 64


@kernel
def _scc_sweep(scc_ptr, members, first, last, indptr, indices, data, rhs, x, local):
    """Block back-substitution of ``x = rhs + T x`` over the components ``first .. last - 1``.

    Parameters
    ----------
    scc_ptr, members : the components in solving order: component ``c`` is
        ``members[scc_ptr[c]:scc_ptr[c + 1]]``; every successor of a component lies in it or in an earlier one.
    first, last : the range of components to solve (each at most :data:`DENSE_SCC_MAX` states).
    indptr, indices, data : ``T`` in CSR form (non-negative, rows summing to at most 1).
    rhs : (N, r) right-hand sides; ``x`` : (N, r) output, read for the earlier components.
    local : int64 (N,) scratch, all -1 on entry and on exit.
    """
    r = rhs.shape[1]
    for comp in range(first, last):
        lo = scc_ptr[comp]
        hi = scc_ptr[comp + 1]
        size = hi - lo
        if size == 1:
            p = members[lo]
            diag = 0.0
            for j in range(r):
                x[p, j] = rhs[p, j]
            for e in range(indptr[p], indptr[p + 1]):
                q = indices[e]
                if q == p:
                    diag += data[e]
                else:
                    for j in range(r):
                        x[p, j] += data[e] * x[q, j]
            for j in range(r):
                x[p, j] /= 1.0 - diag
            continue
        for i in range(size):
            local[members[lo + i]] = i
        M = np.zeros((size, size))
        R = np.zeros((size, r))
        for i in range(size):
            p = members[lo + i]
            M[i, i] = 1.0
            for j in range(r):
                R[i, j] = rhs[p, j]
            for e in range(indptr[p], indptr[p + 1]):
                q = indices[e]
                if local[q] >= 0:
                    M[i, local[q]] -= data[e]
                else:
                    for j in range(r):
                        R[i, j] += data[e] * x[q, j]
        # Gaussian elimination with partial pivoting
        for col in range(size):
            piv = col
            best = abs(M[col, col])
            for i in range(col + 1, size):
                if abs(M[i, col]) > best:
                    best = abs(M[i, col])
                    piv = i
            if piv != col:
                for j in range(size):
                    tmp = M[col, j]
                    M[col, j] = M[piv, j]
                    M[piv, j] = tmp
                for j in range(r):
                    tmp = R[col, j]
                    R[col, j] = R[piv, j]
                    R[piv, j] = tmp
            inv = 1.0 / M[col, col]
            for i in range(col + 1, size):
                f = M[i, col] * inv
                if f != 0.0:
                    for j in range(col, size):
                        M[i, j] -= f * M[col, j]
                    for j in range(r):
                        R[i, j] -= f * R[col, j]
        for i in range(size - 1, -1, -1):
            for j in range(r):
                acc = R[i, j]
                for m in range(i + 1, size):
                    acc -= M[i, m] * R[m, j]
                R[i, j] = acc / M[i, i]
        for i in range(size):
            p = members[lo + i]
            for j in range(r):
                x[p, j] = R[i, j]
            local[p] = -1


def _components(T) -> tuple[np.ndarray, np.ndarray]:
    """The strongly connected components of the graph of ``T`` in solving order (successors first):
    ``(scc_ptr, members)``."""
    # start-up cost: scipy's sparse modules load when distances are computed, not with this module
    from scipy.sparse.csgraph import connected_components

    N = T.shape[0]
    count, label = connected_components(T, directed=True, connection="strong")
    rows = np.repeat(np.arange(N, dtype=T.indices.dtype), np.diff(T.indptr))
    cols = T.indices
    cross = label[rows] != label[cols]
    if np.any(label[rows[cross]] < label[cols[cross]]):
        label = _topological_labels(count, label[rows[cross]], label[cols[cross]])
    members = np.argsort(label, kind="stable").astype(np.int64)
    scc_ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(label, minlength=count), out=scc_ptr[1:])
    return scc_ptr, members


def _topological_labels(count: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Relabel components so that every edge of the condensation goes to a smaller label (Kahn's algorithm
    from the sinks), for a component labelling that is not in that order already."""
    edges = np.unique(src * count + dst)
    s, d = edges // count, edges % count
    out_deg = np.bincount(s, minlength=count)
    order = np.argsort(d, kind="stable")
    pred_ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(d, minlength=count), out=pred_ptr[1:])
    preds = s[order]
    new = np.empty(count, dtype=np.int64)
    ready: list[int | np.integer] = list(np.flatnonzero(out_deg == 0))
    nxt = 0
    while ready:
        c = ready.pop()
        new[c] = nxt
        nxt += 1
        for q in preds[pred_ptr[c] : pred_ptr[c + 1]]:
            out_deg[q] -= 1
            if out_deg[q] == 0:
                ready.append(int(q))
    return new


def _block_solve(T, rhs: np.ndarray, comps, start: np.ndarray | None = None) -> np.ndarray:
    """``x = rhs + T x`` by block back-substitution over the components of ``T`` (``start``: the first guess
    of the Gauss-Seidel sweeps on large components)."""
    # start-up cost: scipy's sparse modules load when distances are computed, not with this module
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    scc_ptr, members = comps
    N = T.shape[0]
    x = np.zeros_like(rhs) if start is None else start.copy()
    local = np.full(N, -1, dtype=np.int64)
    sizes = np.diff(scc_ptr)
    big = np.flatnonzero(sizes > DENSE_SCC_MAX)
    indptr, indices, data = T.indptr, T.indices, np.asarray(T.data, np.float64)
    begin = 0
    for comp in list(big) + [len(sizes)]:
        if comp > begin:
            _scc_sweep(scc_ptr, members, int(begin), int(comp), indptr, indices, data, rhs, x, local)
        if comp < len(sizes):
            S = members[scc_ptr[comp] : scc_ptr[comp + 1]]
            # Gauss-Seidel first (cheap where coupled runs separate quickly), a sparse LU if it stalls
            sweeps, resid = scc_gauss_seidel(
                S,
                indptr,
                indices,
                data,
                rhs,
                x,
                local,
                GAUSS_SEIDEL_SWEEPS,
                GAUSS_SEIDEL_TARGET * max(1.0, float(np.max(np.abs(x[S])))),
            )
            if not resid <= GAUSS_SEIDEL_TARGET * max(1.0, float(np.max(np.abs(x[S])))):
                block = T[S][:, S]
                x[S] = 0.0
                right = rhs[S] + T[S] @ x
                x[S] = splu((sp.identity(len(S), format="csc") - block).tocsc()).solve(right)
        begin = comp + 1
    return x


def coupling_value(b, T, comps=None, start=None):
    """The value ``x`` of the couplings and ``z`` with ``(I - T) z = 1``, by block back-substitution over the
    strongly connected components of the couplings' pair graph (or the coarser ``comps``), with one step of
    refinement; ``start`` (N, 2): the last couplings' ``x, z``, a first guess for the large components."""
    N = T.shape[0]
    if comps is None:
        comps = _components(T)
    rhs = np.stack([b, np.ones(N)], axis=1)
    sol = _block_solve(T, rhs, comps, start)
    res = rhs - (sol - T @ sol)
    sol += _block_solve(T, res, comps)
    x, z = sol[:, 0], sol[:, 1]
    rx = b + T @ x - x
    rz = 1.0 + T @ z - z
    return x, z, rx, rz


def _policy_value_bounds(couplings: _Couplings, ext, space, c):
    """Rigorous upper bound, per pair, of ``g + (1-g) c (cost of the current coupling under ext + drift)``:
    the couplings' marginals differ from the exact laws by their drift and the rows' rounding, and moving
    that much mass costs at most 1 per unit."""
    up = np.zeros(space.size)
    for grp in couplings.groups:
        C = couplings.costs(grp, ext)
        plan = couplings.plan_of(grp)
        cost = np.einsum("gab,gab->g", plan, C)
        drift = np.abs(plan.sum(axis=2) - grp.a).sum(axis=1) + np.abs(plan.sum(axis=1) - grp.b).sum(axis=1)
        cells = grp.ka * grp.kb
        w = (
            cost * (1 + (cells + 2) * 2 * _U)
            + drift * (1 + 4 * _U)
            + (cells + grp.ka + grp.kb + 4) * 2 * _U * (1.0 + plan.sum(axis=(1, 2)))
            + 2 * _ROW_ERROR
        )
        up[grp.pairs] = _oplus(space.g[grp.pairs], np.minimum(w, 1.0), c)[1]
    return up


def policy_iteration(space: PairSpace, quotient: Quotient, c: float, comps=None) -> _Solution:
    """Couplings improved until the bracket ``x -/+ e z`` is certified (module doc, steps 4 and 5).

    ``comps``: strongly connected components of the full pair graph in solving order, used for every
    evaluation when given (each coupling's graph is a subgraph, so its components refine them)."""
    N = space.size
    if N == 0:
        return _Solution(np.zeros(0), np.zeros(0), 0, 0, True)
    couplings = _Couplings(space, quotient)
    # start: couplings that keep the most mass on the diagonal (every other pair costs 1)
    ext = np.concatenate([np.ones(N), [0.0, 1.0]])
    for grp in couplings.groups:
        if not grp.fixed:
            _, plan, _, _ = _transport(grp, couplings.costs(grp, ext), couplings)
            couplings.plan[grp.cells] = plan.reshape(len(grp.pairs), -1)
    eps = 0.0
    rounds = 0
    evaluations = 0
    certified = False
    note = ""
    lower = np.zeros(N)
    x = z = np.zeros(N)  # read from the second evaluation on, as its warm start
    while True:
        b, T = _assemble(couplings, space, c)
        x, z, rx, rz = coupling_value(b, T, comps, None if not evaluations else np.stack([x, z], axis=1))
        evaluations += 1
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(z))):  # pragma: no cover - I - T is non-singular
            note = "a coupling system could not be solved"
            break
        z = np.maximum(z, 1.0)
        floor = (np.max(np.abs(rx)) + 64 * _U) / max(1.0 - float(np.max(np.abs(rz))), 0.5)
        eps = max(eps, 4 * floor)
        switched_any = False
        while True:
            rounds += 1
            lower = np.clip(x - eps * z, 0.0, 1.0)
            ext = np.concatenate([lower, [0.0, 1.0]])
            fail = False
            switches = []
            for grp in couplings.groups:
                C = couplings.costs(grp, ext)
                cost, plan, w_low, solved = _transport(grp, C, couplings)
                w_low = np.maximum(w_low, 0.0)
                low = _oplus(space.g[grp.pairs], w_low, c)[0]
                mine = lower[grp.pairs]
                fail = fail or bool(np.any((mine > low) & (mine > 0.0)))
                if solved:
                    current = np.einsum("gab,gab->g", couplings.plan_of(grp), C)
                    margin = 16 * grp.ka * grp.kb * _U * current + 1e-300
                    better = np.flatnonzero(cost < current - margin)
                    if len(better):
                        switches.append((grp.cells[better], plan[better].reshape(len(better), -1)))
            if not fail:  # l is a post-fixed point: certified; the couplings stay those of x
                certified = True
                break
            if switches:
                for cells, plan in switches:
                    couplings.plan[cells] = plan
                switched_any = True
                break
            if float(eps * z.max()) >= 1.0:
                note = f"no post-fixed point below the couplings' value (e = {eps:.3g}, max z = {z.max():.3g})"
                break
            eps *= 4
        if certified or not switched_any or rounds >= MAX_ROUNDS:
            if not certified and not note:
                note = f"no certificate after {rounds} rounds"
            break
    if not certified:
        lower = np.zeros(N)
    # the upper bound: the current couplings' value, raised along z until it is a verified pre-fixed point
    eps_up = max(eps, 4 * (np.max(np.abs(rx)) + 64 * _U))
    upper = np.ones(N)
    for _ in range(40):
        cand = np.minimum(x + eps_up * z, 1.0)
        bound = _policy_value_bounds(couplings, np.concatenate([cand, [0.0, 1.0]]), space, c)
        if np.all((bound <= cand) | (cand >= 1.0)):
            upper = cand
            break
        eps_up *= 4
    return _Solution(lower, upper, rounds, evaluations, certified, note)


# ------------------------------------------------------------------------------ the result
@dataclass
class LMCResult:
    """Bisimilarity distances with a certified bracket.

    Attributes
    ----------
    distances : the midpoints of the bracket: ``(n, n)`` for all pairs (up to :data:`DENSE_STATES` states;
        None above, read them with :meth:`bounds`), or ``(q,)`` for the queried ``pairs``.
        ``|distances - d| <= certified_error / 2``.
    lower, upper : rigorous bounds of the exact chain's distances, same shape (``lower <= d <= upper``).
    pairs : the queried ``(q, 2)`` state pairs, or None for all pairs.
    certified_error : ``max(upper - lower)`` over every pair solved (0 when every pair is decided exactly).
    discount : c.
    classes : int64 (n,), the bisimulation class of each state (distance 0 exactly within a class).
    n_classes : the number of classes k.
    zero_pairs : unordered state pairs ``s < t`` at distance exactly 0 (bisimilar).
    one_pairs : unordered state pairs at distance exactly 1: separated by the ground, or (c = 1) unable to
        reach a bisimilar pair. All pairs: the exact count; queries: those among the explored pairs plus the
        ground-separated ones.
    solved_pairs : pairs of classes solved by policy iteration (the rest are exactly 0 or 1).
    iterations : policy evaluations (linear solves); ``rounds``: improvement rounds.
    seconds : wall time; ``timings``: per stage.
    method : what was done, in words.
    model_defect : the largest total-variation distance between a stored row and the exact row the
        distances are certified for (``docs/lmc.md#the-exact-chain``).
    certified : whether the bracket was verified (else ``lower`` is 0 on the solved pairs).
    """

    distances: np.ndarray | None
    lower: np.ndarray | None
    upper: np.ndarray | None
    pairs: np.ndarray | None
    certified_error: float
    discount: float
    classes: np.ndarray
    n_classes: int
    zero_pairs: int
    one_pairs: int
    solved_pairs: int
    iterations: int
    rounds: int
    seconds: float
    method: str
    model_defect: float
    certified: bool
    timings: dict = field(default_factory=dict)
    _table: "_ClassTable | None" = field(default=None, repr=False)

    def bounds(self, s, t) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of the distance of the state pairs ``(s[i], t[i])`` (scalars or arrays): any pair
        of an all-pairs result; for a query, the pairs it explored, NaN for other pairs of classes (bisimilar
        pairs and pairs the ground separates are 0 and 1 either way)."""
        s = np.atleast_1d(np.asarray(s, dtype=np.int64))
        t = np.atleast_1d(np.asarray(t, dtype=np.int64))
        n = len(self.classes)
        for name, arr in (("s", s), ("t", t)):
            bad = np.flatnonzero((arr < 0) | (arr >= n))
            if len(bad):
                raise InputError(f"state {int(arr[bad[0]])} is out of range ({n} states)", param=name)
        assert self._table is not None  # lmc_distances sets the class table
        return self._table.bounds(self.classes[s], self.classes[t])


class _ClassTable:
    """Distances of pairs of classes: 0 on the diagonal, 1 where the ground is 1, the solved pairs' bracket,
    1 for the other explored pairs (distance 1 by the graph test)."""

    def __init__(self, k, ground: _Ground, keys, lower, upper, explored_keys) -> None:
        order = np.argsort(keys, kind="stable")
        self.k, self.ground, self.keys, self.lo, self.up = k, ground, keys[order], lower[order], upper[order]
        self.explored = explored_keys

    def bounds(self, ci, cj):
        lo_c, hi_c = np.minimum(ci, cj), np.maximum(ci, cj)
        lower = np.ones(len(ci))
        upper = np.ones(len(ci))
        diag = lo_c == hi_c
        lower[diag] = upper[diag] = 0.0
        off = ~diag
        if off.any():
            g = self.ground(lo_c[off], hi_c[off])
            q = lo_c[off] * self.k + hi_c[off]
            idx = np.flatnonzero(off)
            live = g < 1.0
            if live.any():
                qq = q[live]
                pos = np.minimum(np.searchsorted(self.keys, qq), max(len(self.keys) - 1, 0))
                hit = (self.keys[pos] == qq) if len(self.keys) else np.zeros(len(qq), bool)
                where = idx[live]
                lower[where[hit]] = self.lo[pos[hit]]
                upper[where[hit]] = self.up[pos[hit]]
                if self.explored is not None:
                    pos2 = np.minimum(np.searchsorted(self.explored, qq), max(len(self.explored) - 1, 0))
                    known = (self.explored[pos2] == qq) if len(self.explored) else np.zeros(len(qq), bool)
                    unknown = ~hit & ~known
                    if unknown.any():
                        lower[where[unknown]] = np.nan
                        upper[where[unknown]] = np.nan
        return lower, upper


# ------------------------------------------------------------------------------ the entry point
def lmc_distances(
    model,
    discount: float = 1.0,
    *,
    labels: Sequence[str] | None = None,
    ground=None,
    pairs=None,
    tol: float = 1e-9,
    max_memory: int | None = None,
    dense_states: int = DENSE_STATES,
) -> LMCResult:
    r"""Bisimilarity distances of a labelled Markov chain, certified by a bracket.

    ``d`` is the least fixed point of ``F(d)(s, t) = g(s, t) + (1 - g(s, t)) c W_1(P(s), P(t); d)``, with
    ``g(s, t) = [L(s) != L(t)]`` (module doc): 1 where the labels differ, else ``c W_1``.

    Parameters
    ----------
    model : a :class:`~bisimkit.mdp.FiniteMDP` with ``labels`` (one action per state, or the chain of its
        policy), a :class:`~bisimkit.model_files.ModelData` (a DTMC, or an MDP with one action per state) or
        a :class:`LabelledChain` (CSR rows and label classes).
    discount : c in (0, 1]; 1 (undiscounted) is the usual distance of probabilistic model checking.
    labels : the label names that count (ModelData only); default every label but ``init``
        (:data:`DEFAULT_EXCLUDED_LABELS`): the initial state is where runs start, not a behaviour.
        ``deadlock`` counts: it marks states that had no successors before the model builder added a
        self-loop.
    ground : optional (n, n) array in [0, 1], symmetric, zero diagonal, states at ground 0 from each other
        having equal rows (every pseudometric qualifies); replaces the labels.
    pairs : optional ``[(s, t), ...]``; only the pairs they reach through the supports are solved.
    tol : the certified error asked for. Policy iteration runs until its couplings are optimal, and the
        bracket is then as tight as the solves' residuals allow (its width is about the residual times the
        expected number of steps in the pair space; 1e-14 to 1e-10 on PRISM's chains); ``method`` says when
        it is wider than ``tol``.
    max_memory : bytes the pair space may take (default :data:`DEFAULT_MAX_MEMORY`); a larger problem is
        refused in one line before the pair work starts.
    dense_states : all-pairs results carry ``(n, n)`` matrices up to this many states.

    Returns
    -------
    :class:`LMCResult`
    """
    start = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = timings.get(name, 0.0) + now - since
        return now

    c = _check_discount(discount)
    try:
        tol = float(tol)
    except (TypeError, ValueError):
        raise InputError(f"{tol!r} is not a number", param="tol") from None
    if not (tol > 0 and math.isfinite(tol)):
        raise InputError(f"{tol!r} is not a positive number", param="tol")
    budget = DEFAULT_MAX_MEMORY if max_memory is None else int(max_memory)
    if ground is not None and labels is not None:
        raise InputError("give labels= or ground=, not both", param="ground")
    chain = _as_chain(model, labels, need_labels=ground is None)
    n = chain.n_states
    if ground is not None:
        g_full = _check_ground(ground, n)
        initial = _ground_classes(g_full)
    else:
        g_full = None
        initial = np.asarray(chain.classes, dtype=np.int64)
    queries = None if pairs is None else check_state_pairs(pairs, n)
    t = lap("checks", start)

    exact = exact_rows(chain.row_ptr, chain.probabilities)
    t = lap("exact chain", t)
    quotient = bisimulation_quotient(chain.row_ptr, chain.columns, exact, initial)
    k = quotient.k
    reps = quotient.representatives
    ground_q = _Ground(None, g_full[np.ix_(reps, reps)]) if g_full is not None else _Ground(initial[reps], None)
    t = lap("bisimulation", t)

    deg = np.diff(quotient.row_ptr)
    if queries is None:
        count, cells = ground_q.candidate_count(k, deg)
        need = count * PAIR_BYTES + cells * CELL_BYTES
        if need > budget:
            raise InputError(
                f"all pairs need about {need / 2**30:.1f} GiB ({count} pairs of bisimulation classes, {cells} "
                f"transport cells; {n} states in {k} classes), more than max_memory = {budget / 2**30:.1f} GiB; "
                f"query pairs= or raise max_memory",
                param="pairs",
            )
        I, J = ground_q.candidates(k)
    else:
        cq = quotient.classes[queries]
        mean_cells = float(np.mean(deg.astype(np.float64) ** 2)) if k else 1.0
        I, J = closure(
            cq[:, 0], cq[:, 1], quotient, ground_q, max_pairs=int(budget / (PAIR_BYTES + CELL_BYTES * mean_cells))
        )
    space = build_pairs(I, J, quotient, ground_q)
    t = lap("pair space", t)

    explored_keys = space.I * k + space.J
    if c == 1.0:
        good = reach_diagonal(space)
        d1_pairs = (space.I[~good], space.J[~good])
        space = restrict(space, good)
    else:
        d1_pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    t = lap("distance one", t)

    comps = None
    if space.size:
        # pairs renumbered successors first (memory locality of the back-substitution); the full graph's
        # components serve every evaluation when they are small
        scc_ptr, members = _components(full_graph(space))
        space = reorder(space, members)
        if np.max(np.diff(scc_ptr)) <= FIXED_COMPONENTS_MAX:
            comps = (scc_ptr, np.arange(space.size, dtype=np.int64))
    t = lap("ordering", t)
    sol = policy_iteration(space, quotient, c, comps)
    t = lap("policy iteration", t)

    keys = space.I * k + space.J
    table = _ClassTable(k, ground_q, keys, sol.lower, sol.upper, None if queries is None else explored_keys)
    sizes = np.bincount(quotient.classes, minlength=k).astype(np.int64)
    zero_pairs = int(np.sum(sizes * (sizes - 1) // 2))
    one_pairs = _ground_one_pairs(ground_q, sizes, n) + int(np.sum(sizes[d1_pairs[0]] * sizes[d1_pairs[1]]))
    if queries is None:
        if n <= dense_states:
            ci = np.repeat(np.arange(k), k)
            cj = np.tile(np.arange(k), k)
            lo_k, up_k = table.bounds(ci, cj)
            cls = quotient.classes
            lower = lo_k.reshape(k, k)[np.ix_(cls, cls)]
            upper = up_k.reshape(k, k)[np.ix_(cls, cls)]
            distances = (lower + upper) / 2
        else:
            lower = upper = distances = None
    else:
        lower, upper = table.bounds(quotient.classes[queries[:, 0]], quotient.classes[queries[:, 1]])
        distances = (lower + upper) / 2
    err = float(np.max(sol.upper - sol.lower, initial=0.0))
    kind = "undiscounted" if c == 1.0 else f"discounted (c = {c:g})"
    method = (
        f"lmc {kind}: exact chain, bisimulation quotient ({k} classes of {n} states, "
        f"{quotient.rounds} refinement rounds), "
    )
    if c == 1.0:
        method += f"distance one by the pair graph ({len(d1_pairs[0])} class pairs), "
    method += (
        f"policy iteration on {space.size} class pairs ({sol.evaluations} evaluations, {sol.rounds} rounds), "
        f"bracket {'certified' if sol.certified else 'NOT certified: ' + sol.note}"
    )
    if queries is not None:
        method += f"; {len(queries)} queried pairs reach {len(explored_keys)} class pairs"
    if err > tol:
        method += f"; certified error {err:.3g} above tol = {tol:g}"
    lap("result", t)
    return LMCResult(
        distances,
        lower,
        upper,
        None if queries is None else queries,
        err,
        c,
        quotient.classes,
        k,
        zero_pairs,
        one_pairs,
        space.size,
        sol.evaluations,
        sol.rounds,
        time.perf_counter() - start,
        method,
        exact.defect,
        sol.certified,
        timings,
        table,
    )


def _ground_one_pairs(ground: _Ground, sizes: np.ndarray, n: int) -> int:
    """State pairs ``s < t`` with ground 1."""
    if ground.matrix is not None:
        i, j = np.nonzero(np.triu(ground.matrix >= 1.0, 1))
        return int(np.sum(sizes[i] * sizes[j]))
    assert ground.labels is not None  # a ground has labels or a matrix
    per_label = np.bincount(ground.labels, weights=sizes).astype(np.int64)
    return int(n * (n - 1) // 2 - np.sum(per_label * (per_label - 1) // 2))


# ------------------------------------------------------------------------------ the registry's operator
#: Bytes per state pair of the ``(n, n)`` matrices an all-pairs ``solve(mdp, "lmc")`` returns (distances, lower
#: and upper bounds, and the class table they are read from).
SOLUTION_PAIR_BYTES = 48


@dataclass
class LMCSolution(Solution):
    """What ``solve(mdp, "lmc")`` returns: a :class:`~bisimkit.engine.Solution` whose ``distances`` are the
    midpoints of the certified bracket (``(n, n)``, or ``(q,)`` for the queried ``pairs``), so that
    ``|distances - d| <= certified_error / 2``, with the bracket itself.

    lower, upper : rigorous bounds of the distances, the shape of ``distances``.
    pairs : the queried ``(q, 2)`` state pairs, or None for all pairs.
    discount : c.
    result : the :class:`LMCResult` (classes, the counts of pairs at distance 0 and 1, timings).
    """

    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    pairs: np.ndarray | None = None
    discount: float = 1.0
    result: LMCResult | None = None

    def to_json(self) -> dict:
        """The ``--out FILE.json`` object: :meth:`Solution.to_json`'s, with the bracket, the discount and the
        queried pairs."""
        out = super().to_json()
        assert self.lower is not None and self.upper is not None  # lmc_solution sets the bracket
        out.update(
            discount=self.discount,
            lower=self.lower.tolist(),
            upper=self.upper.tolist(),
            pairs=None if self.pairs is None else self.pairs.tolist(),
        )
        return out


def _solution_ground(ground, n: int):
    """``(ground array or None, its label)`` from solve's ``ground``: None or ``"labels"`` (the labels), an
    (n, n) array, or a file holding one (``.npy``, ``.npz`` key ``ground``, ``.json``)."""
    if ground is None or (isinstance(ground, str) and ground == "labels"):
        return None, "labels"
    if isinstance(ground, (str, os.PathLike)):
        try:
            return _check_ground(read_ground_file(ground), n), str(ground)
        except InputError as exc:
            raise InputError(f"{ground}: {exc.detail}", param="ground") from None
    return _check_ground(ground, n), "matrix"


def lmc_solution(
    mdp: FiniteMDP, discount=None, ground=None, pairs=None, tol: float = 1e-9, force: bool = False
) -> LMCSolution:
    """``solve(mdp, "lmc", discount=c, ground=..., pairs=...)``: :func:`lmc_distances` of the chain of ``mdp``
    (its rows, or its policy's chain) as an :class:`LMCSolution`.

    ``discount`` (c in (0, 1]) overrides the MDP's own; ``ground`` replaces the labels (module doc); an
    all-pairs solve whose ``(n, n)`` matrices would take more than :data:`DEFAULT_MAX_MEMORY` is refused in one
    line (``force`` lifts that and the pair space's own limit)."""
    if not isinstance(mdp, FiniteMDP):
        raise InputError(f"expected a FiniteMDP, got {type(mdp).__name__}", param="mdp")
    c = _check_discount(mdp.discount if discount is None else discount)
    n = mdp.n_states
    g, label = _solution_ground(ground, n)
    budget = None if not force else 2**62
    if pairs is None and not force and SOLUTION_PAIR_BYTES * n * n > DEFAULT_MAX_MEMORY:
        raise InputError(
            f"all pairs of {n} states take about {SOLUTION_PAIR_BYTES * n * n / 2**30:.1f} GiB as "
            f"matrices, more than {DEFAULT_MAX_MEMORY / 2**30:.0f} GiB; query pairs= (or force)",
            param="pairs",
        )
    r = lmc_distances(mdp, c, ground=g, pairs=pairs, tol=tol, max_memory=budget, dense_states=n)
    converged = r.certified and r.certified_error <= tol
    assert r.distances is not None  # dense_states=n: the (n, n) matrix or the queried pairs'
    return LMCSolution(
        metric="lmc",
        distances=r.distances,
        iterations=r.iterations,
        certified_error=r.certified_error,
        seconds=r.seconds,
        method=r.method,
        tolerance=tol,
        ground=label,
        converged=converged,
        floor=r.certified_error,
        lower=r.lower,
        upper=r.upper,
        pairs=r.pairs,
        discount=c,
        result=r,
    )
