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

from fractions import Fraction

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
def finite_mdps(
    draw,
    min_states: int = 2,
    max_states: int = 6,
    min_actions: int = 1,
    max_actions: int = 3,
    max_support: int | None = None,
    policy: str = "any",
    deterministic: bool = False,
    discounts=DISCOUNTS,
) -> FiniteMDP:
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
def planted_mdps(
    draw, max_base_states: int = 3, max_copies: int = 3, max_actions: int = 2
) -> tuple[FiniteMDP, np.ndarray]:
    """An MDP built by copying each state of a smaller one (known bisimilar blocks).

    Returns ``(mdp, origin)``, ``origin[s]`` being the base state copied by s.
    """
    base = draw(finite_mdps(min_states=1, max_states=max_base_states, max_actions=max_actions))
    counts = draw(st.lists(st.integers(1, max_copies), min_size=base.n_states, max_size=base.n_states))
    origin = np.repeat(np.arange(base.n_states), counts)
    split = lambda k: draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))  # noqa: E731
    return lift(base, origin, split, name="hypothesis-planted"), origin


@st.composite
def product_grid_mdps(
    draw, max_side: int = 3, max_actions: int = 2, coordinate_independent: bool = True, policy: str = "any"
) -> FiniteMDP:
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


#: Masses of :func:`adversarial_mdp` start as multiples of 2^-DYADIC_BITS; perturbations move exact
#: multiples of :data:`UNIT` between two atoms. Every mass is a multiple of 2^-53 in [0, 1], so every
#: partial sum of a row is a float too: a row whose masses sum to 1 in rational arithmetic sums to
#: exactly 1.0 in floating point in any order, :class:`FiniteMDP` keeps it as it is, and an exact
#: rational reference solves the very MDP the solvers see (:func:`assert_exactly_stochastic`).
DYADIC_BITS = 12
#: 2^-53, the spacing of the floats in [1/2, 1): the unit the round-off families move masses by.
UNIT = 2.0**-53
#: Random MDPs, near-duplicate states, (almost) equal rewards, absorbing states.
ADVERSARIAL_FAMILIES = ("random", "near-duplicate", "equal-reward", "absorbing")
#: Families built around float64 round-off; :func:`adversarial_mdp` describes each.
ROUND_OFF_FAMILIES = ("ulp-policy", "ulp-transition", "cancelling-average", "collapsed", "loose-floor", "many-actions")
ALL_FAMILIES = ADVERSARIAL_FAMILIES + ROUND_OFF_FAMILIES
ADVERSARIAL_DISCOUNTS = (0.0, 0.5, 0.9, 0.99, 0.999)
#: The tolerances the certificate property and audit ask for.
CERTIFICATE_TOLERANCES = (1e-6, 1e-9, 1e-12)


class Choices:
    """The structural choices behind an adversarial MDP (family, sizes, kinds of perturbation) and a
    numpy generator for its bulk numbers. Two sources: :class:`DrawChoices` (hypothesis draws, so a
    failing case shrinks) and :class:`SeededChoices` (a seeded numpy generator: the same seed gives
    the same MDPs, without hypothesis)."""

    def integer(self, lo: int, hi: int) -> int:
        """An integer in ``[lo, hi]``, both included."""
        raise NotImplementedError

    def choice(self, options: tuple):
        """One element of ``options``."""
        raise NotImplementedError

    def boolean(self) -> bool:
        raise NotImplementedError

    def generator(self) -> np.random.Generator:
        """A fresh numpy generator for the bulk random numbers of one MDP."""
        raise NotImplementedError


class DrawChoices(Choices):
    """Choices drawn by hypothesis (the ``draw`` of an ``@st.composite``)."""

    def __init__(self, draw) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def choice(self, options: tuple):
        return self.draw(st.sampled_from(options))

    def boolean(self) -> bool:
        return self.draw(st.booleans())

    def generator(self) -> np.random.Generator:
        return np.random.default_rng(self.draw(st.integers(0, 2**32 - 1)))


class SeededChoices(Choices):
    """Choices from the numpy generator ``rng``: reproducible case sets without hypothesis."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def choice(self, options: tuple):
        return options[int(self.rng.integers(len(options)))]

    def boolean(self) -> bool:
        return bool(self.rng.integers(2))

    def generator(self) -> np.random.Generator:
        return np.random.default_rng(int(self.rng.integers(2**32)))


def _dyadic(w: np.ndarray, bits: int = DYADIC_BITS) -> np.ndarray:
    """A histogram proportional to the non-negative weights ``w`` with masses k / 2^bits, summing to 1
    exactly (the rounding remainder goes to the largest atom)."""
    x = np.floor(w / w.sum() * 2**bits) / 2**bits
    x[np.argmax(w)] += 1.0 - x.sum()
    return x


def move_mass(row: np.ndarray, src: int, dst: int, amount: float) -> np.ndarray:
    """A copy of ``row`` with ``amount`` moved from atom ``src`` to atom ``dst``.

    Both new masses must be exactly the rational results (and ``src``'s non-negative), so the exact
    sum of the row is unchanged; ``AssertionError`` otherwise."""
    new = np.array(row, dtype=np.float64)
    new[src] = row[src] - amount
    new[dst] = row[dst] + amount
    assert new[src] >= 0.0, f"moving {amount!r} from atom {src} leaves it negative"
    assert Fraction(new[src]) == Fraction(row[src]) - Fraction(amount), f"atom {src} - {amount!r} is not a float"
    assert Fraction(new[dst]) == Fraction(row[dst]) + Fraction(amount), f"atom {dst} + {amount!r} is not a float"
    return new


def assert_exactly_stochastic(field: str, X: np.ndarray) -> None:
    """Every row of ``X`` (last axis) holds multiples of 2^-53 in [0, 1] summing to exactly 1 in
    rational arithmetic, hence to exactly 1.0 in floating point in any order of summation."""
    X = np.asarray(X, dtype=np.float64)
    for idx in np.ndindex(X.shape[:-1]):
        row = [Fraction(x) for x in X[idx].tolist()]
        assert all(0 <= x <= 1 and (x * 2**53).denominator == 1 for x in row), (
            f"{field}{list(idx)}: a mass is not a multiple of 2^-53 in [0, 1]"
        )
        assert sum(row) == 1, f"{field}{list(idx)} sums to 1 + {float(sum(row) - 1):.3g}, not exactly 1"


def float_average(weights: np.ndarray, values: np.ndarray) -> float:
    """``sum_a weights[a] values[a]`` as a plain float64 sum of rounded products (numpy's einsum): the average
    that cancels to 0 here, where :attr:`FiniteMDP.reward_pi`, computed in twice the working precision, does not."""
    return float(np.einsum("sa,sa->s", np.asarray(weights, float)[None], np.asarray(values, float)[None])[0])


def cancelling_average(rng: np.random.Generator, scale: float, tries: int = 10_000) -> tuple[float, float, float]:
    """``(p, r0, r1)``: a policy ``(p, 1 - p)`` and rewards ``(r0, r1)``, ``r0`` about ``scale`` and
    ``r1`` about ``-r0 p / (1 - p)``, whose float64 average (:func:`float_average`) is exactly 0
    while the rational average ``p r0 + (1 - p) r1`` is not (it is the round-off of the products).
    ``p`` is a multiple of 2^-53 in (0.3, 0.7), so ``1 - p`` is exact."""
    for _ in range(tries):
        p = float(rng.integers(round(0.35 * 2**DYADIC_BITS), round(0.65 * 2**DYADIC_BITS))) / 2**DYADIC_BITS
        p += float(rng.integers(-(2**20), 2**20)) * UNIT
        q = 1.0 - p
        r0 = float(np.round(rng.uniform(0.5, 1.0) * scale))
        guess = -(p * r0) / q
        candidates, up, down = [guess], guess, guess
        for _ in range(32):  # the floats within 32 ulps of the guess
            up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
            candidates += [up, down]
        for r1 in rng.permutation(np.array(candidates)).tolist():
            if float_average([p, q], [r0, r1]) == 0.0 and Fraction(p) * Fraction(r0) + Fraction(q) * Fraction(r1) != 0:
                return p, r0, r1
    raise AssertionError(f"no cancelling average found at scale {scale:g}")


def _random_rows(rng: np.random.Generator, rows: tuple[int, ...], n: int, density: float = 0.6) -> np.ndarray:
    """Dyadic histograms over n atoms with random supports, of shape ``rows + (n,)``."""
    W = rng.integers(0, 4, size=rows + (n,)) * (rng.random(rows + (n,)) < density)
    W[..., 0] += W.sum(axis=-1) == 0
    out = np.empty(rows + (n,))
    for idx in np.ndindex(rows):
        out[idx] = _dyadic(W[idx].astype(float))
    return out


def _random_policy(rng: np.random.Generator, n: int, m: int, zeros: bool = False) -> np.ndarray:
    """Dyadic policies, every action positive unless ``zeros``."""
    W = rng.integers(0 if zeros else 1, 4, size=(n, m))
    W[W.sum(axis=1) == 0, 0] = 1
    return np.array([_dyadic(w.astype(float)) for w in W])


def _transitions(choose: Choices, rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """Every state absorbing, every state with the same row per action, or random rows."""
    kind = choose.choice(("absorbing", "shared", "random"))
    if kind == "absorbing":
        P = np.zeros((n, m, n))
        P[np.arange(n), :, np.arange(n)] = 1.0
        return P
    if kind == "shared":
        return np.broadcast_to(_random_rows(rng, (m,), n, density=0.8), (n, m, n)).copy()
    return _random_rows(rng, (n, m), n)


def _classic(choose: Choices, family: str, max_states: int, max_actions: int):
    n = choose.integer(2, max_states)
    m = choose.integer(1, max_actions)
    rng = choose.generator()
    W = rng.integers(0, 4, size=(n, m, n)) * (rng.random((n, m, n)) < 0.6)
    W[..., 0] += W.sum(axis=-1) == 0
    P = np.array([[_dyadic(W[s, a].astype(float)) for a in range(m)] for s in range(n)])
    pi = np.array([_dyadic(rng.integers(1, 4, size=m).astype(float)) for _ in range(n)])
    scale = 10.0 ** choose.integer(-9, 6)
    R = rng.uniform(-1.0, 1.0, size=(n, m)) * scale
    if family == "near-duplicate":
        t = n - 1
        P[t], R[t], pi[t] = P[0], R[0], pi[0]
        if choose.boolean():
            a = choose.integer(0, m - 1)
            R[t, a] += 10.0 ** choose.integer(-15, -4) * scale
        else:
            a = choose.integer(0, m - 1)
            mass = 2.0 ** -choose.integer(14, 50)
            src = int(np.argmax(P[t, a]))
            P[t, a] = move_mass(P[t, a], src, (src + 1) % n, mass)
    elif family == "equal-reward":
        R[:] = R[0, 0]
        if choose.boolean():
            s, a = choose.integer(0, n - 1), choose.integer(0, m - 1)
            R[s, a] += 10.0 ** choose.integer(-15, -10) * scale
    elif family == "absorbing":
        for s in range(choose.integer(1, n)):
            P[s] = 0.0
            P[s, :, s] = 1.0
    return P, R, pi


def _ulp_policy(choose: Choices, rng: np.random.Generator):
    n = choose.integer(2, 5)
    m = choose.choice((2, 3, 4, 6, 10))
    P = _transitions(choose, rng, n, m)
    scale = choose.choice((1.0, 1e3, 1e8))
    if choose.boolean():  # -scale, +scale, -scale, ...: every neighbouring pair of actions far apart
        R = np.tile(np.where(np.arange(m) % 2 == 0, -scale, scale), (n, 1))
    else:
        R = np.tile(rng.uniform(-1.0, 1.0, m) * scale, (n, 1))
    base = np.full(2, 0.5) if m == 2 and choose.boolean() else _random_policy(rng, 1, m)[0]
    pi = np.tile(base, (n, 1))
    for s in range(1, n):
        k = choose.integer(0, 16)
        if k == 0:
            continue
        if choose.boolean():  # the first action gains, the last loses: every breakpoint moves
            src, dst = m - 1, 0
        else:
            a = choose.integer(0, m - 2)
            src, dst = (a, a + 1) if choose.boolean() else (a + 1, a)
        pi[s] = move_mass(pi[s], src, dst, k * UNIT)
    return P, R, pi


def _ulp_transition(choose: Choices, rng: np.random.Generator):
    n = choose.integer(2, 6)
    m = choose.integer(1, 3)
    P = _random_rows(rng, (n, m), n)
    pi = _random_policy(rng, n, m)
    R = rng.uniform(-1.0, 1.0, size=(n, m)) * choose.choice((1.0, 1e3, 1e8))
    for t in range(n - choose.integer(1, n - 1), n):
        P[t], R[t], pi[t] = P[0], R[0], pi[0]
        a = choose.integer(0, m - 1)
        src = int(np.argmax(P[t, a]))
        dst = (src + choose.integer(1, n - 1)) % n
        amount = choose.integer(1, 16) * 2.0 ** (choose.integer(0, 21) - 53)
        P[t, a] = move_mass(P[t, a], src, dst, amount)
    return P, R, pi


def _cancelling(choose: Choices, rng: np.random.Generator):
    n = choose.integer(2, 5)
    m = choose.integer(2, 3)  # a third action, if any, has policy mass 0
    P = _transitions(choose, rng, n, m)
    scale = 10.0 ** rng.uniform(1.0, 8.3)
    R = np.zeros((n, m))
    pi = np.zeros((n, m))
    pi[0, :2] = 0.5
    if choose.boolean():
        R[0, 0], R[0, 1] = scale, -scale
    if m == 3:
        R[:, 2] = rng.uniform(-1.0, 1.0, n) * scale
    for s in range(1, n):
        if s == 1 or choose.boolean():
            p, R[s, 0], R[s, 1] = cancelling_average(rng, scale)
            pi[s, :2] = p, 1.0 - p
        else:
            R[s], pi[s] = R[0], pi[0]
    return P, R, pi


def _collapsed(choose: Choices, rng: np.random.Generator):
    n = choose.integer(3, 12)
    m = choose.integer(1, 3)
    scale = choose.choice((1.0, 1e2, 1e4))
    spread = choose.choice((1.0, 1e-2, 1e-4))  # how far apart the actions' rewards are, relative to the scale
    base = rng.uniform(-1.0, 1.0, m) if spread == 1.0 else 1.0 + spread * rng.uniform(-1.0, 1.0, m)
    R = np.tile(base * scale, (n, 1))
    pi = np.tile(_random_policy(rng, 1, m)[0], (n, 1))
    rows = choose.choice(("absorbing", "copies", "random"))
    if rows == "absorbing":
        P = np.zeros((n, m, n))
        P[np.arange(n), :, np.arange(n)] = 1.0
    elif rows == "copies" or n > 6:  # one sparse row per action, shared
        P = np.broadcast_to(_random_rows(rng, (m,), n, density=3.0 / n), (n, m, n)).copy()
    else:
        P = _random_rows(rng, (n, m), n)
    kinds = ("reward", "policy", "transition", "none")
    every = choose.choice(kinds + ("mixed",))  # one kind of perturbation for every state, or mixed
    for s in range(1, n):
        kind = choose.choice(kinds) if every == "mixed" else every
        if kind == "reward":
            a = choose.integer(0, m - 1)
            toward = np.inf if choose.boolean() else -np.inf
            for _ in range(choose.integer(1, 8)):
                R[s, a] = np.nextafter(R[s, a], toward)
        elif kind == "policy" and m > 1:
            src = choose.integer(0, m - 1)
            dst = (src + choose.integer(1, m - 1)) % m
            pi[s] = move_mass(pi[s], src, dst, choose.integer(1, 16) * UNIT)
        elif kind == "transition":
            a = choose.integer(0, m - 1)
            src = int(np.argmax(P[s, a]))
            dst = (src + choose.integer(1, n - 1)) % n
            P[s, a] = move_mass(P[s, a], src, dst, choose.integer(1, 8) * 2.0 ** -choose.integer(30, 53))
    return P, R, pi


def _loose_floor(choose: Choices, rng: np.random.Generator):
    n = choose.integer(2, 6)
    m = choose.integer(1, 3)
    j = choose.choice((0, 0, 1, 2, -1))
    base, spread = 19.0 * 10.0**j, 1e-13 * 10.0**j * choose.choice((0.3, 1.0, 3.0))
    R = base + rng.uniform(-1.0, 1.0, size=(n, m)) * spread
    return _random_rows(rng, (n, m), n), R, _random_policy(rng, n, m)


def _many_actions(choose: Choices, rng: np.random.Generator):
    n = choose.integer(2, 4)
    m = choose.integer(4, 10)
    P = _random_rows(rng, (n, m), n, density=0.5)
    pi = _random_policy(rng, n, m, zeros=choose.boolean())
    R = rng.uniform(-1.0, 1.0, size=(n, m)) * 10.0 ** choose.integer(-3, 8)
    return P, R, pi


_ROUND_OFF_BUILDERS = {
    "ulp-policy": _ulp_policy,
    "ulp-transition": _ulp_transition,
    "cancelling-average": _cancelling,
    "collapsed": _collapsed,
    "loose-floor": _loose_floor,
    "many-actions": _many_actions,
}


def adversarial_mdp(
    choose: Choices, families: tuple[str, ...] = ALL_FAMILIES, max_states: int = 5, max_actions: int = 2
) -> FiniteMDP:
    """One small MDP built to stress a certificate, its family recorded in its ``name``
    (``adversarial-<family>``); ``choose`` (:class:`Choices`) makes every choice.

    The families of :data:`ADVERSARIAL_FAMILIES` (n <= ``max_states``, m <= ``max_actions``):

    * ``random``: dyadic transition and policy rows, rewards uniform at a scale 1e-9 to 1e6;
    * ``near-duplicate``: the last state copies the first, then one reward moves by 1e-15 to 1e-4 of
      the scale or transition mass 2^-50 to 2^-14 moves between two atoms;
    * ``equal-reward``: every reward equal, or all but one, off by 1e-15 to 1e-10 of the scale;
    * ``absorbing``: the first few states absorbing.

    The families of :data:`ROUND_OFF_FAMILIES` (each its own sizes):

    * ``ulp-policy``: n 2-5, m in {2, 3, 4, 6, 10}; every state has the same rewards (+-scale by
      action, or random; scale 1, 1e3 or 1e8) and state 0's policy with 0-16 units of 2^-53 moved
      between two actions (first and last, shifting every quantile breakpoint, or neighbours);
      absorbing, shared or random transitions. The entangled coupling's cells are then a few ulps;
    * ``ulp-transition``: n 2-6, m 1-3, rewards at scale 1, 1e3 or 1e8; the last states copy state 0
      with 1-16 units of 2^-53 to 2^-32 moved between two atoms of one transition row;
    * ``cancelling-average``: n 2-5, m 2-3; state 0 has the policy (1/2, 1/2) and rewards (0, 0) or
      (x, -x); state 1 (and others at random) rewards and a policy whose float64 average is exactly 0
      while the rational one is not (:func:`cancelling_average`, rewards 10 to 2e8);
    * ``collapsed``: n 3-12, m 1-3: copies of one state (rewards at scale 1, 1e2 or 1e4, the actions'
      rewards apart by the scale or by 1e-2 or 1e-4 of it; every state absorbing, or all with the
      same sparse rows, or random rows for n <= 6), each perturbed by 1-8 ulps of one reward, 1-16
      units of 2^-53 of policy mass, or 1-8 units of 2^-53 to 2^-30 of transition mass (one kind for
      all, or mixed): the relations collapse to one block;
    * ``loose-floor``: n 2-6, m 1-3, rewards 19 * 10^j (j in -1..2) with differences near 1e-13 * 10^j;
    * ``many-actions``: n 2-4, m 4-10, random dyadic rows (policies with zeros, at random), rewards at a
      scale 1e-3 to 1e8.

    Discounts from :data:`ADVERSARIAL_DISCOUNTS`. Every transition and policy row sums to exactly 1
    (asserted, :func:`assert_exactly_stochastic`) and :class:`FiniteMDP` stores the rows unchanged.
    """
    family = choose.choice(tuple(families))
    if family in ADVERSARIAL_FAMILIES:
        P, R, pi = _classic(choose, family, max_states, max_actions)
    else:
        P, R, pi = _ROUND_OFF_BUILDERS[family](choose, choose.generator())
    c = choose.choice(ADVERSARIAL_DISCOUNTS)
    assert_exactly_stochastic("transitions", P)
    assert_exactly_stochastic("policy", pi)
    mdp = FiniteMDP(P, R, c, pi, name=f"adversarial-{family}")
    assert np.array_equal(mdp.transitions, P) and np.array_equal(mdp.policy, pi), "FiniteMDP changed a row"
    return mdp


@st.composite
def adversarial_mdps(
    draw, max_states: int = 5, max_actions: int = 2, families: tuple[str, ...] = ADVERSARIAL_FAMILIES
) -> FiniteMDP:
    """Hypothesis strategy for :func:`adversarial_mdp` (by default the original four families)."""
    return adversarial_mdp(DrawChoices(draw), families, max_states, max_actions)


def certificate_case(
    choose: Choices,
    metrics: tuple[str, ...],
    grounds: dict[str, tuple[str, ...]],
    families: tuple[str, ...] = ALL_FAMILIES,
):
    """``(mdp, metric, ground, tol, quotient)``: an adversarial MDP, a metric of ``metrics``, a ground
    of ``grounds[metric]`` (None for a metric without one), a tolerance of
    :data:`CERTIFICATE_TOLERANCES`, and whether to solve quotient first."""
    mdp = adversarial_mdp(choose, families)
    metric = choose.choice(tuple(metrics))
    ground = choose.choice(grounds[metric]) if metric in grounds else None
    tol = choose.choice(CERTIFICATE_TOLERANCES)
    return mdp, metric, ground, tol, choose.boolean()


@st.composite
def certificate_cases(
    draw, metrics: tuple[str, ...], grounds: dict[str, tuple[str, ...]], families: tuple[str, ...] = ALL_FAMILIES
):
    """Hypothesis strategy for :func:`certificate_case`."""
    return certificate_case(DrawChoices(draw), metrics, grounds, families)
