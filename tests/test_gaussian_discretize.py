"""The grid bridge: finite solvers on discretised Gaussian MDPs approach the exact continuous values."""

import numpy as np
import pytest

from bisimkit import solve
from bisimkit.errors import InputError
from bisimkit.gaussian.discretize import discretize, exact_on_grid, refinement_study, residual_bound
from bisimkit.gaussian.exact import distance
from bisimkit.gaussian.examples import gaussian_example
from bisimkit.mdp import coordinate_independent

#: (box, cells, Gauss-Hermite nodes): box and resolution refined together.
GRIDS = [([[-1.5, 1.5]], 6, 3), ([[-2.0, 2.0]], 12, 3), ([[-2.5, 2.5]], 20, 5), ([[-3.0, 3.0]], 36, 5)]


def _exact_on_grid(model, grid, metric="eps-bar", ground="reward"):
    D = exact_on_grid(grid, metric, ground)
    i, j = np.meshgrid(np.arange(len(D)), np.arange(len(D)), indexing="ij")
    direct = distance(model, metric, ground, grid.centers[i.ravel()], grid.centers[j.ravel()]).values
    assert np.allclose(D.ravel(), direct, rtol=1e-14, atol=0)
    return D


@pytest.mark.parametrize("name, metrics", [("linear-1d", ("pi", "eps-bar")), ("quadratic-1d", ("eps-bar",))])
def test_grid_solutions_converge_to_the_exact_values(name, metrics):
    """The finite d_pi (W1 couplings, coupling iteration) and d_eps-bar (entangled cells,
    linear solve) at the grid points approach the exact series as the grid refines, and
    the a-posteriori bound covers the actual error every time."""
    model = gaussian_example(name)
    for metric in metrics:
        rows = refinement_study(model, metric, GRIDS)
        errors, bounds = [r["max_error"] for r in rows], [r["bound"] for r in rows]
        assert all(e <= b for e, b in zip(errors, bounds)), (metric, errors, bounds)
        assert errors[-1] < errors[0] / 5 and bounds[-1] < bounds[0] / 5, (metric, errors, bounds)


def test_grid_mdp_structure():
    model = gaussian_example("linear-2d")
    grid = discretize(model, [[-2, 2], [-3, 3]], (4, 5), nodes=3)
    mdp = grid.mdp
    assert mdp.n_states == 20 and mdp.n_actions == 3 and mdp.state_shape == (4, 5)
    assert coordinate_independent(mdp)
    assert np.allclose(mdp.transitions.sum(axis=2), 1.0)
    assert np.allclose(mdp.policy, grid.weights[None, :])
    assert np.allclose(grid.actions[:, :, 0] @ grid.weights, grid.centers @ model.K[0])  # quadrature mean
    assert 0 < grid.outside_mass < 1
    assert grid.policy_ground().shape == (60, 60)


def test_two_dimensional_bound_covers_the_error():
    model = gaussian_example("linear-2d")
    grid = discretize(model, [[-2.5, 2.5], [-2.5, 2.5]], 5, nodes=3)
    exact = _exact_on_grid(model, grid)
    d = solve(grid.mdp, "eps-bar", tol=1e-10).distances
    assert np.max(np.abs(d - exact)) <= residual_bound(grid, "eps-bar", exact) + 1e-9
    Gp = grid.policy_ground()
    exact_p = _exact_on_grid(model, grid, ground="policy")
    dp = solve(grid.mdp, "eps-bar", ground=Gp, tol=1e-10).distances
    assert np.max(np.abs(dp - exact_p)) <= residual_bound(grid, "eps-bar", exact_p, ground=Gp) + 1e-9


def test_nonlinear_model_discretises():
    grid = discretize(gaussian_example("pendulum"), [[-2, 2], [-3, 3]], 4, nodes=3)
    sol = solve(grid.mdp, "eps-bar", tol=1e-8)
    assert sol.converged and np.all(np.diag(sol.distances) == 0)


@pytest.mark.parametrize(
    "box, cells, message",
    [
        ([[-1, 1]], 4, "expected 2 intervals"),
        ([[1, -1], [0, 1]], 4, "low < high"),
        ([[-1, 1], [0, 1]], 0, "cells[0] = 0"),
    ],
)
def test_bad_grids(box, cells, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        discretize(gaussian_example("linear-2d"), box, cells)
