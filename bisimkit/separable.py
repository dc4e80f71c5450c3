"""Is a distance on a product state space a sum of per-coordinate terms?

On a grid (``FiniteMDP.state_shape``), a distance is *separable* when
``d(s, t) = sum_i f_i(s_i, t_i)``. This is what a
:class:`~bisimkit.losses.SeparableDistance` head computes from the coordinates it is fed,
so a fixed point that is not separable cannot be learned by it, however long it trains;
and separability with convex coordinate terms (in the finite setting: Monge matrices),
together with coordinate-independent transitions, is what makes d_eps-bar = d_eps
(claim C5, ``docs/claims.md``; ``docs/losses.md`` for the heads).

:func:`separability` measures it for d_eps-bar, with two bounds on how far the best
separable approximation is: the sum of the axis slices of d (an upper bound, exact
when d is separable) and a lower bound from the mixed differences
``d((x,y),(x',y')) + d((u,v),(u',v')) - d((x,v),(x',v')) - d((u,y),(u',y'))``, which
vanish for every separable function, so any separable f has
``max |d - f| >= max |mixed difference| / 4``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .mdp import FiniteMDP, coordinate_independent
from .solvers import ZeroGroundWarning, solve

#: Absolute tolerance (relative to max(1, max d)) under which d counts as separable / Monge.
ATOL = 1e-8


def separable_parts(d: np.ndarray, shape: tuple[int, ...]) -> tuple[list[np.ndarray], float]:
    """The axis slices ``f_i(x, y) = d(x e_i, y e_i)`` of ``d`` on a grid, and
    ``max |d - sum_i f_i|`` (0 exactly when d is separable with zero self-distances)."""
    n = int(np.prod(shape))
    coords = np.array(np.unravel_index(np.arange(n), shape)).T
    parts, recon = [], np.zeros((n, n))
    for i, size in enumerate(shape):
        base = np.zeros((size, len(shape)), dtype=int)
        base[:, i] = np.arange(size)
        idx = np.ravel_multi_index(tuple(base.T), shape)
        f = d[np.ix_(idx, idx)]
        parts.append(f)
        recon += f[coords[:, i][:, None], coords[:, i][None, :]]
    return parts, float(np.max(np.abs(recon - d)))


def separable_lower_bound(d: np.ndarray, shape: tuple[int, ...]) -> float:
    """A lower bound on ``min over separable f of max |d - f|``: a quarter of the largest mixed difference."""
    D, worst = len(shape), 0.0
    grid = d.reshape(shape + shape)  # axes: s_1..s_D, t_1..t_D
    for i in range(D):
        # rows: the pair (s_i, t_i); columns: the pair of the other coordinates. Separable => rows differ by constants.
        M = np.moveaxis(grid, (i, D + i), (0, 1)).reshape(shape[i] ** 2, -1)
        for r in range(len(M) - 1):
            diff = M[r + 1 :] - M[r]
            worst = max(worst, float(np.max(diff.max(axis=1) - diff.min(axis=1))))
    return worst / 4


def axis_additivity(f: np.ndarray) -> float:
    """``max |f(x, y) - |phi(y) - phi(x)||`` with ``phi(x) = f(0, x)``: 0 exactly when the coordinate
    term is additive along the axis order, ``f(x, z) = f(x, y) + f(y, z)`` for ``x <= y <= z``."""
    phi = f[0]
    return float(np.max(np.abs(f - np.abs(phi[None, :] - phi[:, None]))))


def monge_violation(f: np.ndarray) -> float:
    """Largest ``f[i,j] + f[i+1,j+1] - f[i,j+1] - f[i+1,j]`` (<= 0 for a Monge matrix)."""
    if f.shape[0] < 2 or f.shape[1] < 2:
        return 0.0
    return float(np.max(f[:-1, :-1] + f[1:, 1:] - f[:-1, 1:] - f[1:, :-1]))


@dataclass(frozen=True)
class Separability:
    """How separable d_eps-bar is on an MDP's grid, and whether C5's hypotheses hold."""

    ground: str
    scale: float
    """max d_eps-bar."""
    upper: float
    """max |d - sum of its axis slices| (0 when separable)."""
    lower: float
    """No separable function is closer to d than this (sup norm)."""
    monge: float
    """Worst Monge violation of the coordinate terms (<= 0: every term is Monge)."""
    additive: float
    """Worst :func:`axis_additivity` of the coordinate terms (0: each is ``|phi_i(x) - phi_i(y)|``)."""
    coordinate_independent: bool

    @property
    def separable(self) -> bool:
        """Whether d_eps-bar is a sum of per-coordinate terms (to :data:`ATOL`)."""
        return self.upper <= ATOL * max(1.0, self.scale)

    @property
    def c5_hypotheses(self) -> bool:
        """Coordinate-independent transitions, d_eps-bar separable, every coordinate term Monge."""
        return self.coordinate_independent and self.separable and self.monge <= ATOL * max(1.0, self.scale)

    def describe(self) -> str:
        """One line for ``bisimkit info``."""
        head = f"d_eps-bar separable in the state_shape coordinates ({self.ground} ground): "
        tol = ATOL * max(1.0, self.scale)
        c5 = f"C5's hypotheses {'hold: d_eps-bar = d_eps' if self.c5_hypotheses else 'fail'}"
        if self.scale == 0:
            return head + "d_eps-bar is 0 for every pair (the ground is 0 everywhere): nothing to learn"
        if self.separable:
            monge = "Monge" if self.monge <= tol else "not all Monge"
            fit = (
                "additive along each axis: SeparableDistance(powers=(1,)) on the features phi_i(x) = d(0, x e_i) "
                "represents it exactly"
                if self.additive <= tol
                else "not additive along the axes: a SeparableDistance head needs features in which each term is a "
                "sum of powers of |phi(x) - phi(y)|"
            )
            return head + f"yes, coordinate terms {monge}, {fit} ({c5})"
        scale = max(self.scale, 1e-300)
        return head + (
            f"no: every sum of per-coordinate terms is off by at least {self.lower / scale:.0%} of its "
            f"max {self.scale:.4g} (the axis slices' sum by {self.upper / scale:.0%}); a SeparableDistance "
            f"head cannot learn it, use a table or a richer head ({c5})"
        )


def separability(mdp: FiniteMDP, ground: str = "reward") -> Separability:
    """Solve d_eps-bar (``ground``) on ``mdp`` and measure how separable it is on ``mdp.state_shape``."""
    if mdp.state_shape is None:
        raise InputError("the MDP has no state_shape (no coordinates to be separable in)", param="mdp")
    mdp.require_policy("d_eps-bar")
    with warnings.catch_warnings():  # a ground that is 0 everywhere is reported by describe()
        warnings.simplefilter("ignore", ZeroGroundWarning)
        d = solve(mdp, "eps-bar", ground=ground).distances
    shape = tuple(mdp.state_shape)
    parts, upper = separable_parts(d, shape)
    return Separability(
        ground=ground,
        scale=float(np.max(d)),
        upper=upper,
        lower=separable_lower_bound(d, shape),
        monge=max(monge_violation(f) for f in parts),
        additive=max(axis_additivity(f) for f in parts),
        coordinate_independent=bool(coordinate_independent(mdp)),
    )
