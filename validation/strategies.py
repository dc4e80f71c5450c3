"""Hypothesis strategies for finite MDPs, reusable in any test suite.

Every number is drawn as a small integer (transition and policy weights,
rewards in half units), so hypothesis shrinks a failing MDP to few states, few
actions, point masses and zero rewards: the smallest counterexample is readable.

>>> from hypothesis import given
>>> from validation.strategies import finite_mdps
>>> @given(finite_mdps(max_states=4))
... def test_something(mdp): ...
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from bisimkit.generators import lift
from bisimkit.mdp import FiniteMDP

DISCOUNTS = st.sampled_from([0.5, 0.8, 0.9])


def _weights(draw, n: int, max_support: int | None, max_weight: int = 4) -> np.ndarray:
    """A histogram over n atoms from small integer weights (at least one positive)."""
    if max_support is not None and max_support < n:
        support = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=max_support, unique=True))
        w = np.zeros(n)
        w[support] = draw(st.lists(st.integers(1, max_weight), min_size=len(support), max_size=len(support)))
    else:
        w = np.array(draw(st.lists(st.integers(0, max_weight), min_size=n, max_size=n)), float)
        if w.sum() == 0:
            w[draw(st.integers(0, n - 1))] = 1.0
    return w / w.sum()


def _policy(draw, n: int, m: int, kind: str) -> np.ndarray:
    if kind == "deterministic":
        pi = np.zeros((n, m))
        pi[np.arange(n), draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))] = 1.0
        return pi
    rows = []
    for _ in range(n):
        w = np.array(draw(st.lists(st.integers(0 if kind == "any" else 1, 3), min_size=m, max_size=m)), float)
        if w.sum() == 0:
            w[0] = 1.0
        rows.append(w / w.sum())
    return np.array(rows)


@st.composite
def finite_mdps(draw, min_states: int = 2, max_states: int = 6, min_actions: int = 1, max_actions: int = 3,
                max_support: int | None = None, policy: str = "any", deterministic: bool = False,
                discounts=DISCOUNTS) -> FiniteMDP:
    """Random finite MDPs.

    ``policy``: ``any`` (integer weights, zeros allowed), ``stochastic``
    (every action has positive probability) or ``deterministic``.
    ``max_support`` caps successors per (s, a); ``deterministic`` gives point masses.
    """
    n = draw(st.integers(min_states, max_states))
    m = draw(st.integers(min_actions, max_actions))
    support = 1 if deterministic else max_support
    P = np.array([[_weights(draw, n, support) for _ in range(m)] for _ in range(n)])
    R = np.array(draw(st.lists(st.integers(-2, 2), min_size=n * m, max_size=n * m)), float).reshape(n, m) / 2
    return FiniteMDP(P, R, draw(discounts), _policy(draw, n, m, policy), name="hypothesis")


@st.composite
def planted_mdps(draw, max_base_states: int = 3, max_copies: int = 3, max_actions: int = 2) -> tuple[FiniteMDP, np.ndarray]:
    """An MDP built by copying each state of a smaller one (known bisimilar blocks).

    Returns ``(mdp, origin)``, ``origin[s]`` being the base state copied by s.
    """
    base = draw(finite_mdps(min_states=1, max_states=max_base_states, max_actions=max_actions))
    counts = draw(st.lists(st.integers(1, max_copies), min_size=base.n_states, max_size=base.n_states))
    origin = np.repeat(np.arange(base.n_states), counts)
    split = lambda k: draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))  # noqa: E731
    return lift(base, origin, split, name="hypothesis-planted"), origin


@st.composite
def product_grid_mdps(draw, max_side: int = 3, max_actions: int = 2, coordinate_independent: bool = True,
                      policy: str = "any") -> FiniteMDP:
    """MDPs on a 2-D grid (``state_shape``); with ``coordinate_independent`` each
    P(s, a) is the product of one law per coordinate."""
    shape = (draw(st.integers(2, max_side)), draw(st.integers(2, max_side)))
    n, m = shape[0] * shape[1], draw(st.integers(1, max_actions))
    P = np.zeros((n, m, n))
    for s in range(n):
        for a in range(m):
            if coordinate_independent:
                P[s, a] = np.outer(_weights(draw, shape[0], 2), _weights(draw, shape[1], 2)).ravel()
            else:
                P[s, a] = _weights(draw, n, 3)
    R = np.array(draw(st.lists(st.integers(-2, 2), min_size=n * m, max_size=n * m)), float).reshape(n, m) / 2
    return FiniteMDP(P, R, draw(DISCOUNTS), _policy(draw, n, m, policy), state_shape=shape, name="hypothesis-grid")


@st.composite
def non_interchangeable_mdps(draw, max_states: int = 5, max_actions: int = 3) -> FiniteMDP:
    """MDPs whose action labels are permuted state by state, so pairing actions
    by index (Ferns' max over a, the entangled coupling in index order) differs
    from pairing them by meaning."""
    mdp = draw(finite_mdps(max_states=max_states, min_actions=2, max_actions=max_actions, max_support=2))
    P, R, pi = mdp.transitions.copy(), mdp.rewards.copy(), mdp.policy.copy()
    for s in range(mdp.n_states):
        perm = np.array(draw(st.permutations(range(mdp.n_actions))))
        P[s], R[s], pi[s] = P[s, perm], R[s, perm], pi[s, perm]
    return FiniteMDP(P, R, mdp.discount, pi, name="hypothesis-non-interchangeable")


@st.composite
def histogram_pairs(draw, max_atoms: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Two histograms on the same m atoms (zeros allowed)."""
    m = draw(st.integers(1, max_atoms))
    return _weights(draw, m, None), _weights(draw, m, None)


#: Masses of :func:`adversarial_mdps` are multiples of 2^-DYADIC_BITS: every row sums to exactly 1 in
#: floating point, so an exact rational reference solves the very MDP the solvers see.
DYADIC_BITS = 12
ADVERSARIAL_FAMILIES = ("random", "near-duplicate", "equal-reward", "absorbing")


def _dyadic(w: np.ndarray, bits: int = DYADIC_BITS) -> np.ndarray:
    """A histogram proportional to the non-negative weights ``w`` with masses k / 2^bits, summing to 1
    exactly (the rounding remainder goes to the largest atom)."""
    x = np.floor(w / w.sum() * 2 ** bits) / 2 ** bits
    x[np.argmax(w)] += 1.0 - x.sum()
    return x


@st.composite
def adversarial_mdps(draw, max_states: int = 5, max_actions: int = 2) -> FiniteMDP:
    """Small MDPs built to stress a certificate: near-duplicate states (rewards perturbed by 1e-15 to
    1e-4 of their scale, or transition mass moved by 2^-50 to 2^-14), all rewards equal (or equal up
    to one perturbed entry), absorbing states, reward scales from 1e-9 to 1e6 and discounts up to
    0.999. Transition and policy masses are dyadic (:data:`DYADIC_BITS`), rewards any floats.
    The MDP's ``name`` records the family."""
    family = draw(st.sampled_from(ADVERSARIAL_FAMILIES))
    n = draw(st.integers(2, max_states))
    m = draw(st.integers(1, max_actions))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    W = rng.integers(0, 4, size=(n, m, n)) * (rng.random((n, m, n)) < 0.6)
    W[..., 0] += W.sum(axis=-1) == 0
    P = np.array([[_dyadic(W[s, a].astype(float)) for a in range(m)] for s in range(n)])
    pi = np.array([_dyadic(rng.integers(1, 4, size=m).astype(float)) for _ in range(n)])
    scale = 10.0 ** draw(st.integers(-9, 6))
    R = rng.uniform(-1.0, 1.0, size=(n, m)) * scale
    if family == "near-duplicate":
        t = n - 1
        P[t], R[t], pi[t] = P[0], R[0], pi[0]
        if draw(st.booleans()):
            R[t, draw(st.integers(0, m - 1))] += 10.0 ** draw(st.integers(-15, -4)) * scale
        else:
            a = draw(st.integers(0, m - 1))
            mass = 2.0 ** -draw(st.integers(14, 50))
            src = int(np.argmax(P[t, a]))
            P[t, a, src] -= mass
            P[t, a, (src + 1) % n] += mass
    elif family == "equal-reward":
        R[:] = R[0, 0]
        if draw(st.booleans()):
            R[draw(st.integers(0, n - 1)), draw(st.integers(0, m - 1))] += 10.0 ** draw(st.integers(-15, -10)) * scale
    elif family == "absorbing":
        for s in range(draw(st.integers(1, n))):
            P[s] = 0.0
            P[s, :, s] = 1.0
    c = draw(st.sampled_from([0.0, 0.5, 0.9, 0.99, 0.999]))
    return FiniteMDP(P, R, c, pi, name=f"adversarial-{family}")
