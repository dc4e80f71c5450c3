"""The bridge to the finite solvers: a Gaussian MDP discretised onto a grid.

:func:`discretize` builds a :class:`~bisimkit.mdp.FiniteMDP` whose states are
the cells of a box (1-D or 2-D, any number of cells per axis) represented by
their centres, so that every finite operator and solver runs on it:

* **actions**: the m-point Gauss-Hermite nodes ``xi_j`` of the policy noise
  (a product rule for k > 1), action j at state s being
  ``act(z_s, xi_j)``, with the quadrature weights as the policy (the same at
  every state, so the finite entangled coupling of two policies pairs node j
  with node j: shared noise);
* **transitions**: per coordinate, the Gaussian mass of each cell from CDF
  differences, the mass beyond the box lumped into the border cells (its
  largest value over (s, a) is reported as ``outside_mass``), the product over
  coordinates on the ``state_shape`` grid (coordinate independent, so the
  finite entangled coupling is the product of 1-D quantile couplings);
* **rewards**: ``R(z_s, a_j(z_s))``.

**Discretisation error.** For any candidate D on the grid (e.g. the exact
continuous distances at the cell centres), the finite operator F is a
c-contraction, so the finite fixed point satisfies
``|d_grid - D|_inf <= |F(D) - D|_inf / (1 - c)`` (:func:`residual_bound`):
an a-posteriori bound on how far the grid solution is from the continuous one
at the grid points, which covers snapping to centres, the quadrature of the
policy and the clipping to the box together.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from ..errors import InputError
from ..mdp import FiniteMDP
from ..operators import apply_operator
from ..solvers import solve
from .exact import distance
from .model import GaussianMDP, gauss_hermite


@dataclass
class GridMDP:
    """A discretised Gaussian MDP and what is needed to compare it with the continuum."""

    mdp: FiniteMDP
    model: GaussianMDP
    shape: tuple[int, ...]
    edges: list[np.ndarray]  # per coordinate, the cell edges of the box
    centers: np.ndarray  # (N, n) cell centres in C order
    nodes: np.ndarray  # (m, k) standard-normal quadrature nodes of the policy noise
    weights: np.ndarray  # (m,) their weights (the policy)
    actions: np.ndarray  # (N, m, k) action of node j at state s
    outside_mass: float  # largest transition mass beyond the box (lumped into border cells)

    def policy_ground(self) -> np.ndarray:
        """The ``policy`` ground ``|abar(z_s) - abar(z_t)|_1`` as an (N m) x (N m) matrix
        (the finite ``policy`` ground uses state-independent action values, which
        state-dependent Gaussian actions do not have)."""
        abar = self.model.mean_action(self.centers)
        G = np.abs(abar[:, None, :] - abar[None, :, :]).sum(axis=-1)
        m = len(self.weights)
        return np.kron(G, np.ones((m, m)))


def _edges(box, cells) -> list[np.ndarray]:
    try:
        box = np.asarray(box, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("box: expected a list of [low, high] pairs, one per state coordinate") from None
    if box.ndim == 1 and box.size == 2:
        box = box[None, :]
    if box.ndim != 2 or box.shape[1] != 2:
        raise InputError(f"box: expected a list of [low, high] pairs, got shape {box.shape}")
    cells = np.broadcast_to(np.asarray(cells), (box.shape[0],))
    out = []
    for i, ((lo, hi), k) in enumerate(zip(box, cells)):
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise InputError(f"box[{i}] = [{lo}, {hi}] is not an interval with low < high")
        if int(k) != k or k < 1:
            raise InputError(f"cells[{i}] = {k} is not a positive integer")
        out.append(np.linspace(lo, hi, int(k) + 1))
    return out


def _cell_masses(edges: np.ndarray, mean: np.ndarray, std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell masses (B, K) of N(mean, std^2) with the tails lumped into the end
    cells, and the mass beyond the box (B,)."""
    e = edges[None, :]
    mu, sd = mean[:, None], std[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        cdf = np.where(sd > 0, ndtr((e - mu) / np.where(sd > 0, sd, 1.0)), (e >= mu).astype(float))
    outside = cdf[:, 0] + (1.0 - cdf[:, -1])
    inner = cdf[:, 1:-1]
    full = np.concatenate([np.zeros((len(mean), 1)), inner, np.ones((len(mean), 1))], axis=1)
    return np.diff(full, axis=1), outside


def discretize(model: GaussianMDP, box, cells, nodes: int = 5, name: str | None = None) -> GridMDP:
    """Discretise ``model`` onto a grid over ``box`` (one ``[low, high]`` per state
    coordinate) with ``cells`` cells per axis and ``nodes`` Gauss-Hermite nodes per
    action coordinate (see the module docstring)."""
    edges = _edges(box, cells)
    n, k = model.state_dim, model.action_dim
    if len(edges) != n:
        raise InputError(f"box: expected {n} intervals (the state dimension), got {len(edges)}")
    if not (isinstance(nodes, int | np.integer) and nodes >= 1):
        raise InputError(f"nodes: expected a positive integer, got {nodes}")
    shape = tuple(len(e) - 1 for e in edges)
    mids = [(e[:-1] + e[1:]) / 2 for e in edges]
    centers = np.stack([g.ravel() for g in np.meshgrid(*mids, indexing="ij")], axis=1)
    x, w = gauss_hermite(int(nodes))
    grids = np.meshgrid(*([x] * k), indexing="ij")
    wgrids = np.meshgrid(*([w] * k), indexing="ij")
    xi = np.stack([g.ravel() for g in grids], axis=1)  # (m, k)
    weights = np.prod(np.stack([g.ravel() for g in wgrids], axis=1), axis=1)
    weights = weights / weights.sum()
    N, m = len(centers), len(xi)
    zs = np.repeat(centers, m, axis=0)  # row s*m + j
    a = model.act(zs, np.tile(xi, (N, 1)))
    mean, std = model.transition_mean(zs, a), model.transition_std(zs, a)
    law = np.ones((N * m, 1))
    inside = np.ones(N * m)
    for i in range(n):
        masses, out = _cell_masses(edges[i], mean[:, i], std[:, i])
        law = (law[:, :, None] * masses[:, None, :]).reshape(N * m, -1)
        inside *= 1.0 - out
    P = law.reshape(N, m, N)
    R = model.reward(zs, a).reshape(N, m)
    pi = np.tile(weights, (N, 1))
    mdp = FiniteMDP(
        P,
        R,
        model.discount,
        pi,
        state_shape=shape if n > 1 else None,
        name=name or f"{model.label} on a {'x'.join(map(str, shape))} grid, {m} actions",
    )
    return GridMDP(mdp, model, shape, edges, centers, xi, weights, a.reshape(N, m, k), float(np.max(1 - inside)))


def residual_bound(grid: GridMDP, metric: str, D: np.ndarray, ground="reward") -> float:
    """``|F(D) - D|_inf / (1 - c)`` for the finite operator ``metric`` of the grid
    MDP: a bound on ``|d_grid - D|_inf`` (D symmetric, N x N)."""
    c = grid.mdp.discount
    FD = apply_operator(grid.mdp, metric, D, ground)
    return float(np.max(np.abs(FD - D))) / (1.0 - c)


def exact_on_grid(grid: GridMDP, metric: str, ground: str = "reward") -> np.ndarray:
    """The exact continuous distances (:func:`~bisimkit.gaussian.exact.distance`) between
    all pairs of cell centres, as an N x N matrix (linear-Gaussian models)."""
    N = len(grid.centers)
    i, j = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    D = distance(grid.model, metric, ground, grid.centers[i.ravel()], grid.centers[j.ravel()]).values
    D = D.reshape(N, N)
    return (D + D.T) / 2  # symmetric to rounding already; exactly so for the finite operators


def refinement_study(model: GaussianMDP, metric: str, grids, ground: str = "reward", tol: float = 1e-10) -> list[dict]:
    """Solve the finite ``metric`` on a sequence of 1-D/2-D grids and compare with the
    exact continuous values at the cell centres.

    ``grids`` is a list of ``(box, cells, nodes)``. Each row reports the cell
    width, the largest transition mass outside the box, the actual largest error
    ``max |d_grid - d_exact|`` over the grid pairs, the a-posteriori bound of
    :func:`residual_bound` and the solve time.
    """
    rows = []
    for box, cells, nodes in grids:
        grid = discretize(model, box, cells, nodes)
        exact = exact_on_grid(grid, metric, ground)
        start = time.perf_counter()
        d = solve(grid.mdp, metric, ground=ground, tol=tol).distances
        seconds = time.perf_counter() - start
        rows.append(
            {
                "box": np.asarray(box, dtype=float).tolist(),
                "cells": list(grid.shape),
                "nodes": int(nodes),
                "width": float(min(e[1] - e[0] for e in grid.edges)),
                "outside_mass": grid.outside_mass,
                "max_error": float(np.max(np.abs(d - exact))),
                "bound": residual_bound(grid, metric, exact, ground) + tol,
                "seconds": seconds,
            }
        )
    return rows
