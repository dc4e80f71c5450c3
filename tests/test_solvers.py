"""Solvers: certificates are honest, methods agree, linear solves are exact."""

import numpy as np
import pytest

from bisimkit import apply_operator, example, solve
from bisimkit.errors import InputError
from bisimkit.generators import product_grid_mdp, random_mdp


@pytest.mark.parametrize("metric", ["bisim", "pi", "psm", "eps", "eps-avg", "dbc", "eps-bar", "mico", "psm-sampled"])
def test_certificate_bounds_the_true_error(metric):
    mdp = random_mdp(6, 2, seed=7, discount=0.9, max_support=4)
    loose = solve(mdp, metric, tol=1e-3, method="vi")
    tight = solve(mdp, metric, tol=1e-12)
    true_error = np.max(np.abs(loose.distances - tight.distances))
    assert loose.certified_error <= 1e-3
    assert true_error <= loose.certified_error + 1e-11
    assert loose.history and loose.history[-1] == loose.certified_error


@pytest.mark.parametrize("metric", ["bisim", "pi", "psm", "eps", "eps-avg", "eps-bar", "mico", "psm-sampled"])
def test_fixed_point_equation_holds(metric):
    mdp = random_mdp(6, 3, seed=3, discount=0.95, max_support=3)
    sol = solve(mdp, metric)
    residual = np.max(np.abs(apply_operator(mdp, metric, sol.distances) - sol.distances))
    assert residual <= 1e-9


def test_linear_operators_match_dense_kronecker_solves():
    mdp = random_mdp(5, 2, seed=4, discount=0.9)
    n, c = 5, 0.9
    Ppi = mdp.transition_pi
    A = np.abs(mdp.reward_pi[:, None] - mdp.reward_pi[None, :])
    vec = np.linalg.solve(np.eye(n * n) - c * np.kron(Ppi, Ppi), A.ravel())
    np.testing.assert_allclose(solve(mdp, "mico").distances, vec.reshape(n, n), atol=1e-10)


def _quantile_coupling(p, q):
    """The 1-D quantile (comonotone) coupling of two laws in index order, by splitting [0, 1] at both CDFs."""
    cp, cq = np.cumsum(p), np.cumsum(q)
    cp[-1] = cq[-1] = 1.0
    cuts = np.unique(np.concatenate([[0.0], cp, cq]))
    K = np.zeros((len(p), len(q)))
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        K[np.searchsorted(cp, (lo + hi) / 2), np.searchsorted(cq, (lo + hi) / 2)] += hi - lo
    return K


def test_eps_bar_on_a_grid_couples_product_laws_coordinate_by_coordinate():
    """On a 3x3 grid with product laws the Rosenblatt coupling is the product of the two coordinates'
    quantile couplings: eps-bar equals the linear system built that way by hand (and differs from the
    index-order coupling of the 9 states), and bounds eps from above (Thm 4.5)."""
    mdp = product_grid_mdp((3, 3), 2, seed=1, discount=0.8)
    P, R, pi, c = mdp.transitions, mdp.rewards, mdp.policy, mdp.discount
    n, m = R.shape
    T, b, T_index = np.zeros((n * n, n * n)), np.zeros(n * n), np.zeros((n * n, n * n))
    for s in range(n):
        for t in range(n):
            A = _quantile_coupling(pi[s], pi[t])
            for a in range(m):
                for a2 in range(m):
                    b[s * n + t] += A[a, a2] * abs(R[s, a] - R[t, a2])
                    L, M = P[s, a].reshape(3, 3), P[t, a2].reshape(3, 3)
                    K = np.kron(_quantile_coupling(L.sum(1), M.sum(1)), _quantile_coupling(L.sum(0), M.sum(0)))
                    T[s * n + t] += A[a, a2] * K.ravel()
                    T_index[s * n + t] += A[a, a2] * _quantile_coupling(P[s, a], P[t, a2]).ravel()
    by_hand = np.linalg.solve(np.eye(n * n) - c * T, b).reshape(n, n)
    index_order = np.linalg.solve(np.eye(n * n) - c * T_index, b).reshape(n, n)
    bar = solve(mdp, "eps-bar")
    np.testing.assert_allclose(bar.distances, by_hand, rtol=0, atol=bar.certified_error + 1e-12)
    assert np.abs(bar.distances - index_order).max() > 0.05
    eps = solve(mdp, "eps")
    assert np.all(bar.distances >= eps.distances - 1e-9)  # Thm 4.5 upper bound
    assert np.all(np.diag(bar.distances) == 0)


def test_zero_discount_is_one_step():
    mdp = random_mdp(4, 2, seed=0, discount=0.0)
    sol = solve(mdp, "pi")
    np.testing.assert_allclose(sol.distances, np.abs(mdp.reward_pi[:, None] - mdp.reward_pi[None, :]))
    # One step, so only the round-off of evaluating it is left: a few ulps of the largest distance, never 0.
    assert 0.0 < sol.certified_error <= 64 * np.finfo(float).eps * np.max(np.abs(mdp.reward_pi))


def test_methods_agree_on_examples():
    for name in ("chain", "product-grid", "mirrored-rooms-policy"):
        mdp = example(name)
        for metric in ("pi", "eps"):
            a = solve(mdp, metric, method="exact").distances
            b = solve(mdp, metric, method="vi").distances
            assert np.max(np.abs(a - b)) <= 2e-9


def test_bad_solver_arguments():
    mdp = example("chain")
    with pytest.raises(InputError, match="unknown metric 'nope'"):
        solve(mdp, "nope")
    with pytest.raises(InputError, match="no exact method"):
        solve(mdp, "dbc", method="exact")
    with pytest.raises(InputError, match="^tol:"):
        solve(mdp, "pi", tol=-1)
    with pytest.raises(InputError, match="^mdp: expected a FiniteMDP, got dict"):
        solve({"transitions": []}, "pi")
    with pytest.raises(InputError, match="^progress: expected a function"):
        solve(mdp, "pi", progress=3)
    with pytest.raises(InputError, match="^tol: must be a positive number, got '1e-9'"):
        solve(mdp, "pi", tol="1e-9")
    for cap in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="^max_iterations: .* is not a positive integer"):
            solve(mdp, "pi", max_iterations=cap)
    with pytest.raises(InputError, match="needs a policy"):
        solve(example("mirrored-rooms"), "pi")


def test_progress_callback_and_iteration_cap():
    calls = []
    mdp = random_mdp(5, 2, seed=1, discount=0.99)
    sol = solve(mdp, "dbc", max_iterations=5, progress=lambda k, e, t: calls.append((k, e)))
    assert not sol.converged and sol.iterations == 5 and len(calls) == 5
    assert all(e1 >= e2 for (_, e1), (_, e2) in zip(calls, calls[1:]))


@pytest.mark.parametrize("metric", ["bisim", "pi", "psm", "dbc", "eps", "eps-avg", "eps-bar"])
def test_full_diagonal_solve_agrees_and_has_zero_diagonal(metric):
    mdp = random_mdp(5, 3, seed=9, discount=0.8, max_support=3)
    full = solve(mdp, metric, full_diagonal=True, tol=1e-10)
    short = solve(mdp, metric, tol=1e-10)
    assert np.max(np.abs(np.diag(full.distances))) <= 1e-9
    np.testing.assert_allclose(full.distances, short.distances, atol=1e-8)
    assert short.diagonal_residual <= 1e-12


@pytest.mark.parametrize(
    "metric", ["bisim", "pi", "psm", "psm-sampled", "mico", "dbc", "dbc-sampled", "eps", "eps-avg", "eps-bar"]
)
def test_apply_operator_matches_reference_on_any_symmetric_matrix(metric):
    from validation.reference import reference_operator

    mdp = random_mdp(4, 2, seed=2, discount=0.7, max_support=3, action_dim=2)
    rng = np.random.default_rng(0)
    d = rng.random((4, 4))
    d = d + d.T  # symmetric, nonzero diagonal, not a metric
    np.testing.assert_allclose(apply_operator(mdp, metric, d), reference_operator(mdp, metric, d), atol=1e-12)
    d0 = d - np.diag(np.diag(d))
    np.testing.assert_allclose(apply_operator(mdp, metric, d0), reference_operator(mdp, metric, d0), atol=1e-12)


def test_threaded_and_single_thread_kernels_agree(monkeypatch):
    """Small batches run on one thread, large ones on the thread pool: both give the same fixed points."""
    from bisimkit import compiled, simplex
    from bisimkit.generators import random_mdp

    mdp = random_mdp(12, 3, seed=4, max_support=5)
    single = {m: solve(mdp, m).distances for m in ("pi", "eps", "eps-bar", "bisim")}
    monkeypatch.setattr(simplex, "PARALLEL_MIN_PROBLEMS", 1)
    monkeypatch.setattr(compiled, "MATVEC_PARALLEL_MIN_NNZ", 1)
    for metric, d in single.items():
        assert np.max(np.abs(solve(mdp, metric).distances - d)) < 1e-12, metric


def test_stein_rank_one_tail_closure_agrees_with_the_full_series(monkeypatch):
    """Dense random chains mix fast: the tail of the Neumann series is closed as a constant once
    P^(2^k) has (nearly) equal rows; the result and its certificate match the plain doubling."""
    from bisimkit import engine

    dense = random_mdp(120, 3, seed=2)  # fast mixing: closes early
    slow = random_mdp(40, 2, seed=1, max_support=2)  # slow mixing: never closes
    for mdp in (dense, slow):
        for metric in ("mico", "psm-sampled"):
            fast = solve(mdp, metric, tol=1e-10)
            with monkeypatch.context() as m:
                m.setattr(engine, "_rank_one_tail", lambda *args: None)
                plain = solve(mdp, metric, tol=1e-10)
            assert fast.certified_error <= 1e-10
            assert np.max(np.abs(fast.distances - plain.distances)) <= fast.certified_error + plain.certified_error
    assert solve(dense, "mico").iterations < solve(slow, "mico").iterations


def test_eps_bar_single_precision_matrix_with_exact_products(monkeypatch):
    """Large eps-bar systems keep T in float32 and compute float64 products on the fly: same fixed point."""
    from bisimkit import operators

    mdp = random_mdp(220, 3, seed=5, max_support=6)  # 24090 pairs: the compiled assembly
    exact = solve(mdp, "eps-bar")
    monkeypatch.setattr(operators, "EPS_BAR_SINGLE_PAIRS", 1)
    assert operators.operator_form(mdp, "eps-bar", "reward").product is None  # fits in memory: float64
    monkeypatch.setattr(operators, "EPS_BAR_MEMORY_SHARE", 0.0)
    form = operators.operator_form(mdp, "eps-bar", "reward")
    assert form.product is not None and form.T.dtype == np.float32
    x = np.random.default_rng(0).random(len(form.pairs))
    reference = (
        operators.eps_bar_matrix(
            form.pairs.s,
            form.pairs.t,
            form.pairs.index,
            mdp.policy,
            mdp.transition_rows,
            mdp.n_actions,
            len(form.pairs),
        )
        @ x
    )
    np.testing.assert_allclose(form.product(x), reference, rtol=1e-13, atol=1e-13)
    single = solve(mdp, "eps-bar")
    assert single.certified_error <= 1e-9
    assert np.max(np.abs(single.distances - exact.distances)) <= single.certified_error + exact.certified_error
