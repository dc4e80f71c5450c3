"""Seeded generators of random finite MDPs (plain numpy).

``random_mdp`` follows the published random-MDP recipe (Castro et al.): each
P(s, a) is uniform noise with a random number of zeroed entries, renormalised;
rewards are uniform on [0, 1]; the policy is Dirichlet. Options give sparse
supports, deterministic policies and other discounts. The other generators
build MDPs with known structure: planted bisimulations (copies of a smaller
MDP), product grids with coordinate-independent transitions, and MDPs whose
actions are not interchangeable.
"""

from __future__ import annotations

import numpy as np

from .mdp import FiniteMDP


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def random_distributions(
    rng: np.random.Generator, rows: int, n: int, max_support: int | None = None, deterministic: bool = False
) -> np.ndarray:
    """``rows`` random histograms over ``n`` states.

    Default (the published recipe): uniform noise with between 1 and n-1 entries
    zeroed. ``max_support`` caps the support size (chosen uniformly in
    1..max_support). ``deterministic`` gives point masses.
    """
    X = np.zeros((rows, n))
    if deterministic:
        X[np.arange(rows), rng.integers(0, n, size=rows)] = 1.0
        return X
    for r in range(rows):
        if max_support is None:
            zeroed = rng.integers(1, n) if n > 1 else 0
            size = n - zeroed
        else:
            size = int(rng.integers(1, min(max_support, n) + 1))
        support = rng.choice(n, size=size, replace=False)
        X[r, support] = rng.random(size) + 1e-3
    return X / X.sum(axis=1, keepdims=True)


def random_policy(rng: np.random.Generator, n: int, m: int, kind: str = "dirichlet", alpha: float = 1.0) -> np.ndarray:
    """A random policy: ``dirichlet`` (default), ``deterministic``, ``uniform`` or ``sparse``
    (Dirichlet on a random subset of actions)."""
    if kind == "deterministic":
        pi = np.zeros((n, m))
        pi[np.arange(n), rng.integers(0, m, size=n)] = 1.0
        return pi
    if kind == "uniform":
        return np.full((n, m), 1.0 / m)
    pi = rng.dirichlet(np.full(m, alpha), size=n)
    if kind == "sparse":
        mask = rng.random((n, m)) < 0.5
        mask[np.arange(n), rng.integers(0, m, size=n)] = True
        pi = np.where(mask, pi + 1e-3, 0.0)
        pi /= pi.sum(axis=1, keepdims=True)
    elif kind != "dirichlet":
        raise ValueError(f"unknown policy kind '{kind}'")
    return pi


def random_mdp(
    n: int,
    m: int,
    seed=None,
    discount: float = 0.9,
    max_support: int | None = None,
    deterministic: bool = False,
    policy: str = "dirichlet",
    reward_levels: int | None = None,
    action_dim: int | None = None,
) -> FiniteMDP:
    """A random MDP (published recipe by default; see :func:`random_distributions`).

    ``reward_levels`` rounds rewards to that many levels (creates ties, hence
    non-trivial relations); ``action_dim`` gives random action coordinates.
    """
    rng = _rng(seed)
    P = random_distributions(rng, n * m, n, max_support, deterministic).reshape(n, m, n)
    R = rng.random((n, m))
    if reward_levels is not None:
        R = np.floor(R * reward_levels) / max(reward_levels - 1, 1)
    pi = random_policy(rng, n, m, policy)
    av = None if action_dim is None else rng.normal(size=(m, action_dim))
    return FiniteMDP(P, R, discount, pi, action_values=av, name=f"random[n={n},m={m}]")


def lift(base: FiniteMDP, origin: np.ndarray, split, name: str | None = None) -> FiniteMDP:
    """The MDP whose state s copies base state ``origin[s]``.

    Rewards and policy are copied; the mass P(origin[s], a) puts on a base state
    is divided among that state's copies in proportions ``split(k)`` (k copies).
    Copies of one base state are bisimilar under every relation.
    """
    origin = np.asarray(origin)
    n, m = len(origin), base.n_actions
    P = np.zeros((n, m, n))
    for s in range(n):
        for a in range(m):
            for target in np.nonzero(base.transitions[origin[s], a])[0]:
                slots = np.nonzero(origin == target)[0]
                w = np.asarray(split(len(slots)), dtype=float)
                P[s, a, slots] = base.transitions[origin[s], a, target] * w / w.sum()
    pi = None if base.policy is None else base.policy[origin]
    return FiniteMDP(P, base.rewards[origin], base.discount, pi, action_values=base.action_values, name=name)


def planted_bisimulation(base: FiniteMDP, copies: int | np.ndarray, seed=None) -> tuple[FiniteMDP, np.ndarray]:
    """Copy every state of ``base`` several times and split transition mass among copies.

    Returns ``(mdp, origin)`` where ``origin[s]`` is the base state that ``s``
    copies. Copies of one state are bisimilar under every relation (bisim, pi,
    eps); the largest relations are the pull-backs of the base MDP's.
    """
    rng = _rng(seed)
    counts = np.full(base.n_states, copies) if np.isscalar(copies) else np.asarray(copies)
    origin = rng.permutation(np.repeat(np.arange(base.n_states), counts))  # scatter the copies
    mdp = lift(base, origin, lambda k: rng.dirichlet(np.ones(k)), name=f"planted[{base.label} x{counts.max()}]")
    return mdp, origin


def product_grid_mdp(
    shape: tuple[int, ...],
    m: int,
    seed=None,
    discount: float = 0.9,
    max_support: int | None = 3,
    policy: str = "dirichlet",
) -> FiniteMDP:
    """A random MDP on a grid whose transitions are coordinate independent:
    ``P(z+ | z, a) = prod_i P_i(z+_i | z, a)``."""
    rng = _rng(seed)
    n = int(np.prod(shape))
    P = np.zeros((n, m, n))
    for s in range(n):
        for a in range(m):
            law = np.ones(())
            for size in shape:
                marginal = random_distributions(rng, 1, size, max_support)[0]
                law = np.multiply.outer(law, marginal)
            P[s, a] = law.ravel()
    R = rng.random((n, m))
    pi = random_policy(rng, n, m, policy)
    return FiniteMDP(P, R, discount, pi, state_shape=tuple(shape), name=f"product-grid{list(shape)}")


def non_interchangeable_mdp(n: int, m: int, seed=None, discount: float = 0.9) -> FiniteMDP:
    """An MDP where the same action index means different things in different
    states (action labels are permuted per state), so couplings that pair
    actions by index (entangled, Ferns' max over a) see different MDPs than the
    policy-averaged ones."""
    rng = _rng(seed)
    base = random_mdp(n, m, rng, discount, max_support=3, reward_levels=3)
    assert base.policy is not None  # random_mdp draws a policy
    P, R, pi = base.transitions.copy(), base.rewards.copy(), base.policy.copy()
    for s in range(n):
        perm = rng.permutation(m)
        P[s], R[s], pi[s] = P[s, perm], R[s, perm], pi[s, perm]
    return FiniteMDP(P, R, discount, pi, name=f"non-interchangeable[n={n},m={m}]")
