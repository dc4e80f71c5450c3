"""Named families of test MDPs: a seeded numpy generator and a hypothesis strategy each.

A family yields :class:`Case` objects (an MDP, the ground metric the eps
operators use on it, and what is known about it). The verify job draws cases
from the numpy generators; when a claim fails, it asks the family's strategy
for a counterexample that hypothesis can shrink.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from bisimkit.examples import EXAMPLES, example
from bisimkit.generators import non_interchangeable_mdp, planted_bisimulation, product_grid_mdp, random_mdp
from bisimkit.ground import Ground
from bisimkit.mdp import FiniteMDP

from . import strategies as S


@dataclass
class Case:
    """One MDP to check claims on."""

    mdp: FiniteMDP
    ground: Ground = "reward"
    origin: np.ndarray | None = None  # planted: base state of each state
    note: str = ""

    @property
    def label(self) -> str:
        return self.mdp.label + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Family:
    """A named family of cases."""

    name: str
    description: str
    make: Callable[[np.random.Generator], Case]
    strategy: Callable[[], st.SearchStrategy]
    tags: frozenset = field(default_factory=frozenset)


# -------------------------------------------------- separable product grids
def separable_ground(shape: tuple[int, ...], m: int, levels: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """``G(z,a,z',a') = sum_i w_i |f_i(z_i) - f_i(z'_i)|`` as an (n*m) x (n*m) matrix."""
    coords = np.array(np.unravel_index(np.arange(int(np.prod(shape))), shape)).T
    n = len(coords)
    G = np.zeros((n, n))
    for i, (f, w) in enumerate(zip(levels, weights)):
        v = f[coords[:, i]]
        G += w * np.abs(v[:, None] - v[None, :])
    return np.kron(G, np.ones((m, m)))


def _shift_law(size: int, x: int, q: np.ndarray) -> np.ndarray:
    """Law of clip(x + delta) with delta in {-1, 0, 1} drawn from q: monotone in x."""
    law = np.zeros(size)
    for delta, w in zip((-1, 0, 1), q):
        law[min(max(x + delta, 0), size - 1)] += w
    return law


def factored_grid_case(
    shape: tuple[int, int],
    m: int,
    discount: float,
    policy_row: np.ndarray,
    kernels: list[np.ndarray],
    levels: list[np.ndarray],
    weights: np.ndarray,
    mix: np.ndarray | None = None,
    note: str = "",
) -> Case:
    """A grid MDP whose coordinate i moves by ``kernels[i][a, z_i]`` (a law over
    that coordinate) independently of the others; ``mix`` (per (s, a) weight of a
    correlated 'both coordinates move together' law) breaks coordinate independence."""
    n = shape[0] * shape[1]
    P = np.zeros((n, m, n))
    coords = np.array(np.unravel_index(np.arange(n), shape)).T
    for s, (x, y) in enumerate(coords):
        for a in range(m):
            law = np.outer(kernels[0][a, x], kernels[1][a, y])
            if mix is not None and mix[s, a] > 0:
                corr = np.zeros(shape)  # both coordinates take the same quantile of their laws
                for u, w in _common_quantiles(kernels[0][a, x], kernels[1][a, y]):
                    corr[u] += w
                law = (1 - mix[s, a]) * law + mix[s, a] * corr
            P[s, a] = law.ravel()
    R = np.zeros((n, m))
    for i, (f, w) in enumerate(zip(levels, weights)):
        R += w * f[coords[:, i]][:, None]
    pi = np.tile(policy_row, (n, 1))
    G = separable_ground(shape, m, levels, weights)
    mdp = FiniteMDP(P, R, discount, pi, state_shape=shape, name=f"factored-grid{list(shape)}")
    return Case(mdp, G, note=note)


def _common_quantiles(p: np.ndarray, q: np.ndarray):
    """Cells of the comonotone joint law of (X ~ p, Y ~ q) (one shared uniform)."""
    cp, cq = np.cumsum(p), np.cumsum(q)
    cp[-1] = cq[-1] = 1.0
    points = np.unique(np.concatenate([[0.0], cp, cq]))
    for lo, hi in zip(points[:-1], points[1:]):
        u = (lo + hi) / 2
        yield (int(np.searchsorted(cp, u)), int(np.searchsorted(cq, u))), hi - lo


def monotone_product_case(rng: np.random.Generator, correlated: bool = False, monotone: bool = True) -> Case:
    """Factored grid, separable convex ground, state-independent policy.

    With ``monotone`` kernels (shift-and-clip) and no correlation, the
    hypotheses of the paper's tightness theorem hold (C5): d_eps-bar is
    separable and each coordinate term is a Monge matrix, the discrete form of
    'convex in |z_i - z'_i|'.
    """
    shape = (int(rng.integers(2, 4)), int(rng.integers(2, 4)))
    m = int(rng.integers(1, 3))
    kernels = []
    for size in shape:
        K = np.zeros((m, size, size))
        for a in range(m):
            q = rng.dirichlet(np.ones(3))
            for x in range(size):
                K[a, x] = _shift_law(size, x, q) if monotone else rng.dirichlet(np.ones(size))
        kernels.append(K)
    levels = [np.sort(rng.random(size)) * 2 for size in shape]
    weights = rng.random(2) + 0.2
    mix = rng.random((shape[0] * shape[1], m)) * 0.8 if correlated else None
    note = "correlated" if correlated else ("monotone" if monotone else "non-monotone")
    return factored_grid_case(
        shape, m, float(rng.choice([0.5, 0.8, 0.9])), rng.dirichlet(np.ones(m)), kernels, levels, weights, mix, note
    )


@st.composite
def monotone_product_cases(draw, correlated: bool = False, monotone: bool = True) -> Case:
    """Hypothesis version of :func:`monotone_product_case` (integer weights)."""
    shape = (draw(st.integers(2, 3)), draw(st.integers(2, 3)))
    m = draw(st.integers(1, 2))

    def hist(k, low=0):
        w = np.array(draw(st.lists(st.integers(low, 3), min_size=k, max_size=k)), float)
        if w.sum() == 0:
            w[0] = 1
        return w / w.sum()

    kernels = []
    for size in shape:
        K = np.zeros((m, size, size))
        for a in range(m):
            q = hist(3)
            for x in range(size):
                K[a, x] = _shift_law(size, x, q) if monotone else hist(size)
        kernels.append(K)
    levels = [
        np.cumsum(draw(st.lists(st.integers(0, 2), min_size=size, max_size=size))).astype(float) for size in shape
    ]
    weights = np.array(draw(st.lists(st.integers(1, 2), min_size=2, max_size=2)), float)
    mix = None
    if correlated:
        mix = np.array(
            draw(
                st.lists(
                    st.sampled_from([0.0, 0.5, 1.0]), min_size=shape[0] * shape[1] * m, max_size=shape[0] * shape[1] * m
                )
            )
        ).reshape(-1, m)
    note = "correlated" if correlated else ("monotone" if monotone else "non-monotone")
    return factored_grid_case(shape, m, draw(S.DISCOUNTS), hist(m, 1), kernels, levels, weights, mix, note)


# ------------------------------------------------------------ the families
def _sizes(rng):
    return int(rng.integers(3, 8)), int(rng.integers(2, 4))


def _planted(rng) -> Case:
    base = random_mdp(
        int(rng.integers(2, 5)), int(rng.integers(1, 3)), rng, discount=0.9, max_support=2, reward_levels=2
    )
    mdp, origin = planted_bisimulation(base, int(rng.integers(2, 4)), rng)
    return Case(mdp, origin=origin)


def _planted_strategy():
    return S.planted_mdps().map(lambda pair: Case(pair[0], origin=pair[1]))


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            "random-dense",
            "published recipe: dense random transitions, Dirichlet policy",
            lambda rng: Case(random_mdp(*_sizes(rng), rng, discount=0.9)),
            lambda: S.finite_mdps(policy="stochastic").map(Case),
            frozenset({"stochastic"}),
        ),
        Family(
            "random-sparse",
            "at most 2 successors, 3 reward levels, Dirichlet policy",
            lambda rng: Case(random_mdp(*_sizes(rng), rng, discount=0.9, max_support=2, reward_levels=3)),
            lambda: S.finite_mdps(max_support=2, policy="stochastic").map(Case),
            frozenset({"stochastic"}),
        ),
        Family(
            "deterministic",
            "deterministic transitions and policy",
            lambda rng: Case(
                random_mdp(*_sizes(rng), rng, discount=0.9, deterministic=True, policy="deterministic", reward_levels=2)
            ),
            lambda: S.finite_mdps(deterministic=True, policy="deterministic").map(Case),
            frozenset(),
        ),
        Family(
            "planted",
            "copies of a smaller MDP: known bisimilar blocks",
            _planted,
            _planted_strategy,
            frozenset({"planted"}),
        ),
        Family(
            "product-grid",
            "coordinate-independent random grid MDPs, reward ground",
            lambda rng: Case(
                product_grid_mdp(
                    (int(rng.integers(2, 4)), int(rng.integers(2, 4))),
                    int(rng.integers(1, 3)),
                    rng,
                    discount=0.9,
                    max_support=2,
                )
            ),
            lambda: S.product_grid_mdps().map(Case),
            frozenset({"grid", "stochastic"}),
        ),
        Family(
            "non-interchangeable",
            "action labels permuted per state",
            lambda rng: Case(non_interchangeable_mdp(*_sizes(rng), rng)),
            lambda: S.non_interchangeable_mdps().map(Case),
            frozenset({"stochastic"}),
        ),
        Family(
            "monotone-product",
            "factored monotone grid, separable ground: tightness hypotheses hold",
            lambda rng: monotone_product_case(rng),
            lambda: monotone_product_cases(),
            frozenset({"grid", "tight"}),
        ),
        Family(
            "correlated-grid",
            "as monotone-product, but the coordinates move together: not coordinate independent",
            lambda rng: monotone_product_case(rng, correlated=True),
            lambda: monotone_product_cases(correlated=True),
            frozenset({"grid", "untight"}),
        ),
        Family(
            "non-monotone-product",
            "factored grid with separable ground but non-monotone kernels (d not Monge)",
            lambda rng: monotone_product_case(rng, monotone=False),
            lambda: monotone_product_cases(monotone=False),
            frozenset({"grid", "untight"}),
        ),
    ]
}

#: Families the general claims run on (the tightness families are for C5).
GENERAL_FAMILIES = ("random-dense", "random-sparse", "deterministic", "planted", "product-grid", "non-interchangeable")


def example_cases() -> list[Case]:
    """The bundled examples that have a policy."""
    cases = []
    for name in EXAMPLES:
        mdp = example(name)
        if mdp.policy is not None:
            cases.append(Case(mdp))
    return cases
