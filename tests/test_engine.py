"""The engine: the run options, the certificate of one evaluation, value iteration and Smith's doubling on
problems whose fixed points are known by hand, the method chosen per form."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit import example
from bisimkit.engine import (
    Solution,
    bound_from_norms,
    check_run_options,
    fixed_point,
    precision_note,
    stein_doubling,
    value_iteration,
)
from bisimkit.errors import InputError
from bisimkit.forms import Evaluation, SteinForm


@pytest.mark.parametrize(
    "args, message",
    [
        (("fast", 1e-9, None), r"^method: unknown method 'fast' \(choose from "),
        (("auto", 0.0, None), r"^tol: must be a positive number, got 0\.0$"),
        (("auto", True, None), r"^tol: must be a positive number, got True$"),
        (("auto", float("inf"), None), r"^tol: must be a positive number"),
        (("vi", 1e-9, 0), r"^max_iterations: 0 is not a positive integer$"),
    ],
)
def test_bad_run_options_are_refused_in_one_line(args, message):
    with pytest.raises(InputError, match=message):
        check_run_options(*args)


def test_a_progress_that_is_not_a_function_is_refused():
    check_run_options("exact", 1e-6, 5, progress=lambda i, e, s: None)
    with pytest.raises(InputError, match="^progress: expected a function progress.*got int$"):
        check_run_options("exact", 1e-6, None, progress=3)


def test_the_certificate_of_one_step_by_hand():
    # c = 1/2, ||F(x) - x|| = 1, exact evaluation: ||F(x) - d*|| <= c/(1-c) * 1 = 1 and ||x - d*|| <= 1/(1-c) = 2
    assert bound_from_norms(0.5, 1.0, 0.0).error == pytest.approx(1.0, rel=1e-14)
    assert bound_from_norms(0.5, 1.0, 0.0, returned="at").error == pytest.approx(2.0, rel=1e-14)
    b = bound_from_norms(0.5, 0.0, 0.25)  # an evaluation unsure by 1/4: a floor of 1/2 that no step removes
    assert b.floor == pytest.approx(0.5, rel=1e-14) and b.reachable(0.6) and not b.reachable(0.4)
    assert bound_from_norms(0.5, 1.0, 0.0).error >= 1.0  # rounding is charged upwards


def test_value_iteration_reaches_a_scalar_fixed_point():
    # F(x) = 1 + x / 2, fixed point 2
    found = value_iteration(lambda x: Evaluation(1.0 + 0.5 * x, x, 0.0), np.zeros(1), 0.5, 1e-8)
    x, iterations, error, converged, floor = found
    assert converged and floor == 0 and error <= 1e-8 and abs(x[0] - 2.0) <= error
    assert 25 <= iterations <= 30  # the error halves each sweep from 1: 2^-27 < 1e-8


def test_value_iteration_stops_at_the_floor():
    x, _, error, converged, floor = value_iteration(
        lambda x: Evaluation(1.0 + 0.5 * x, x, 1e-3), np.zeros(1), 0.5, 1e-9
    )
    assert not converged and floor == pytest.approx(2e-3) and error <= 2 * floor


def test_smiths_doubling_of_a_scalar_stein_equation():
    # D = 1 + c D with c = 0.9: D = 10
    D, iterations, error, floor = stein_doubling(SteinForm(np.ones((1, 1)), np.ones((1, 1)), 0.9), 1e-10)
    assert abs(D[0, 0] - 10.0) <= error <= 1e-10 and iterations < 12


def test_value_iteration_and_the_exact_method_agree_within_their_certificates():
    mdp = example("chain")
    for metric in ("mico", "pi", "eps-bar"):
        exact = fixed_point(mdp, metric, "reward" if metric == "eps-bar" else None, 1e-8, "exact")
        vi = fixed_point(mdp, metric, "reward" if metric == "eps-bar" else None, 1e-6, "vi")
        assert exact.method != "value iteration" and vi.method == "value iteration"
        assert np.max(np.abs(exact.distances - vi.distances)) <= exact.certified_error + vi.certified_error


def test_w2_has_no_exact_method():
    with pytest.raises(InputError, match=r"^method: 'dbc' has no exact method \(W2 is not linear"):
        fixed_point(example("chain"), "dbc", None, 1e-6, "exact")


def test_a_solution_writes_its_json_and_says_whether_order_matters():
    solution = fixed_point(example("chain"), "eps-bar", "reward", 1e-8)
    record = solution.to_json()
    assert record["metric"] == "eps-bar" and record["ground"] == "reward" and record["converged"] is True
    assert np.array_equal(np.array(record["distances"]), solution.distances)
    assert solution.order_matters and not Solution("mico", np.zeros((1, 1)), 1, 0.0, 0.0, "x", 1e-9).order_matters
    assert precision_note("pi", 1e-15, 2e-13).startswith("pi: tol 1e-15 is below what float64 can certify")


def test_mid_size_sparse_pair_systems_are_solved_by_gauss_seidel_sweeps_as_accurately_as_by_gmres(monkeypatch):
    import scipy.sparse as sp

    from bisimkit import engine

    rng = np.random.default_rng(0)
    N = engine.DIRECT_LIMIT + 400
    rows = np.repeat(np.arange(N), 3)
    cols = rng.integers(0, N, size=3 * N)
    T = sp.csr_matrix((rng.dirichlet(np.ones(3), size=N).ravel() * 0.999, (rows, cols)), shape=(N, N))
    b = rng.random(N)
    used = []
    step = engine._gauss_seidel_step
    monkeypatch.setattr(engine, "_gauss_seidel_step", lambda *a: used.append(1) or step(*a))
    x_gs, bound_gs = engine.solve_fixed_point(T, b, 0.9, tol=1e-12)
    assert used and bound_gs <= 1e-12
    monkeypatch.setattr(engine, "GAUSS_SEIDEL_WORK", 0.0)
    x_gm, bound_gm = engine.solve_fixed_point(T, b, 0.9, tol=1e-12)
    assert len(used) == 1 and bound_gm <= 1e-12
    assert np.max(np.abs(x_gs - x_gm)) <= bound_gs + bound_gm
    assert np.max(np.abs(b + 0.9 * (T @ x_gs) - x_gs)) <= 1e-12 * 0.1


@pytest.mark.parametrize("shape", ["forward chain", "random"])
def test_larger_pair_systems_take_gauss_seidel_where_its_sweeps_prove_fast(monkeypatch, shape):
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from bisimkit import engine

    rng = np.random.default_rng(1)
    N = engine.DIRECT_LIMIT + 400
    if shape == "forward chain":  # every row reads later unknowns (and itself): one last-to-first sweep solves it
        rows = np.repeat(np.arange(N), 2)
        cols = np.minimum(rows + np.tile([0, 1], N) * rng.integers(1, 20, size=2 * N), N - 1)
    else:
        rows, cols = np.repeat(np.arange(N), 3), rng.integers(0, N, size=3 * N)
    weights = rng.dirichlet(np.ones(len(rows) // N), size=N).ravel()
    T = sp.csr_matrix((weights, (rows, cols)), shape=(N, N))
    b = rng.random(N)
    fallbacks = []
    monkeypatch.setattr(engine, "GAUSS_SEIDEL_WORK", 0.0)  # as if the system were large
    original = spla.gmres
    monkeypatch.setattr(spla, "gmres", lambda *a, **k: fallbacks.append(1) or original(*a, **k))
    x, bound = engine.solve_fixed_point(T, b, 0.9, tol=1e-12)
    assert bound <= 1e-12 and np.max(np.abs(b + 0.9 * (T @ x) - x)) <= 1e-12 * 0.1
    assert (engine._stale_share(T) == 0.0) == (shape == "forward chain")
    assert bool(fallbacks) == (shape == "random")
