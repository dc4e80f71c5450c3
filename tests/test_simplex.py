"""The compiled transportation simplex agrees with POT, degenerate cases included."""

import numpy as np
import ot
import pytest
from hypothesis import given, strategies as st

from bisimkit.simplex import bases_from_flows, solve_padded


def solve_one(a, b, C):
    costs, flows, ok, _, _, _ = solve_padded(a[None], b[None], C[None], np.array([len(a)]), np.array([len(b)]))
    return costs[0], flows[0], ok[0]


@pytest.mark.parametrize("k, l", [(1, 1), (1, 5), (5, 1), (2, 3), (3, 3), (8, 8), (12, 7), (40, 33)])
def test_random_problems_match_pot(k, l):
    rng = np.random.default_rng(k * 100 + l)
    for _ in range(20):
        a, b = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(l))
        C = rng.random((k, l))
        cost, G, ok = solve_one(a, b, C)
        assert ok
        assert cost == pytest.approx(ot.emd2(a, b, C), abs=1e-12)
        np.testing.assert_allclose(G.sum(1), a, atol=1e-12)
        np.testing.assert_allclose(G.sum(0), b, atol=1e-12)
        assert (G > 0).sum() <= k + l - 1  # a basic solution


@pytest.mark.parametrize("transpose", [False, True])
def test_a_forced_plan_charges_the_sides_differing_totals_to_its_gap(transpose):
    a, b = np.array([1.0]), np.array([0.5, 0.5 - 1e-9])  # totals 1e-9 apart
    C = np.array([[0.25, 2.0]])
    if transpose:
        a, b, C = b, a, C.T
    costs, _, ok, _, _, gaps = solve_padded(a[None], b[None], C[None], np.array([len(a)]), np.array([len(b)]))
    assert ok[0] and costs[0] == pytest.approx(0.125 + 2.0 * (0.5 - 1e-9), abs=1e-15)
    assert gaps[0] >= 2.0 * 1e-9 * 0.999  # the largest cost times the mass that has nowhere to go


weights = st.lists(st.integers(0, 3), min_size=1, max_size=7).filter(lambda w: sum(w) > 0)


@given(weights, weights, st.data())
def test_degenerate_integer_problems(wa, wb, data):
    a = np.array(wa, float) / sum(wa)
    b = np.array(wb, float) / sum(wb)
    C = np.array(
        data.draw(
            st.lists(st.lists(st.integers(0, 2), min_size=len(b), max_size=len(b)), min_size=len(a), max_size=len(a))
        ),
        float,
    )
    cost, G, ok = solve_one(a, b, C)
    assert ok
    assert cost == pytest.approx(ot.emd2(a, b, C), abs=1e-12)
    np.testing.assert_allclose(G.sum(1), a, atol=1e-12)
    np.testing.assert_allclose(G.sum(0), b, atol=1e-12)


def test_batch_with_mixed_sizes():
    rng = np.random.default_rng(5)
    P, K, L = 50, 9, 6
    k, l = rng.integers(1, K + 1, P), rng.integers(1, L + 1, P)
    a, b, C = np.zeros((P, K)), np.zeros((P, L)), rng.random((P, K, L))
    for p in range(P):
        a[p, : k[p]] = rng.dirichlet(np.ones(k[p]))
        b[p, : l[p]] = rng.dirichlet(np.ones(l[p]))
    costs, flows, ok, _, _, _ = solve_padded(a, b, C, k, l)
    assert ok.all()
    for p in range(P):
        assert costs[p] == pytest.approx(ot.emd2(a[p, : k[p]], b[p, : l[p]], C[p, : k[p], : l[p]]), abs=1e-12)


def test_warm_starts_from_own_and_pot_bases():
    rng = np.random.default_rng(7)
    P, K = 40, 30
    a, b = rng.dirichlet(np.ones(K), P), rng.dirichlet(np.ones(K), P)
    C = rng.random((P, K, K))
    k = np.full(P, K)
    _, _, ok, cold_pivots, basis, _ = solve_padded(a, b, C, k, k)
    C2 = C * (1 + 0.05 * rng.random(C.shape))  # new costs, same marginals
    expected = np.array([ot.emd2(a[p], b[p], C2[p]) for p in range(P)])
    costs, _, ok2, warm_pivots, _, _ = solve_padded(a, b, C2, k, k, basis=basis.copy())
    assert ok.all() and ok2.all()
    np.testing.assert_allclose(costs, expected, atol=1e-12)
    assert warm_pivots.mean() < cold_pivots.mean() / 2
    G = np.array([ot.emd(a[p], b[p], C[p]) for p in range(P)])
    pot_basis, good = bases_from_flows(G, C, k, k)
    assert good.all()
    costs, _, ok3, _, _, _ = solve_padded(a, b, C2, k, k, basis=pot_basis)
    assert ok3.all()
    np.testing.assert_allclose(costs, expected, atol=1e-12)


def test_a_nearly_optimal_warm_basis_is_not_kept_and_the_gap_bounds_the_error():
    """Identity plan, warm: the anti-diagonal is cheaper by 2e-13, a reduced cost of -4e-13, which a
    pricing tolerance of 1e-12 (relative) would accept. The optimum is found, and every cost is
    within its gap of the exact optimum (the gap is what the certificates charge)."""
    a = b = np.array([[0.5, 0.5]])
    C = np.array([[[1.0, 1.0], [1.0, 1.0 + 4e-13]]])
    identity = np.array([[0, 0], [0, 1], [1, 1]], dtype=np.int16)
    costs, flows, ok, pivots, _, gaps = solve_padded(a, b, C, np.array([2]), np.array([2]), basis=identity)
    assert ok[0] and pivots[0] == 1 and costs[0] == 1.0
    assert flows[0, 1, 0] == flows[0, 0, 1] == 0.5
    assert 0.0 <= gaps[0] <= 1e-14


def test_gaps_bound_the_distance_to_the_optimum():
    rng = np.random.default_rng(11)
    P, K = 60, 12
    a, b = rng.dirichlet(np.ones(K), P), rng.dirichlet(np.ones(K), P)
    C = rng.random((P, K, K)) * 10.0 ** rng.integers(-6, 7, size=(P, 1, 1))
    costs, _, ok, _, _, gaps = solve_padded(a, b, C, np.full(P, K), np.full(P, K))
    exact = np.array([ot.emd2(a[p], b[p], C[p], numItermax=10_000_000) for p in range(P)])
    assert ok.all() and np.all(gaps >= 0)
    # POT's own value is exact only to its round-off: allow an ulp-level slack on its side
    assert np.all(np.abs(costs - exact) <= gaps + 4 * np.spacing(exact))
    assert np.all(gaps <= 1e-12 * (1.0 + C.max(axis=(1, 2))))


def test_bad_warm_basis_falls_back_to_a_cold_start():
    rng = np.random.default_rng(8)
    a, b, C = rng.dirichlet(np.ones(5), 1), rng.dirichlet(np.ones(4), 1), rng.random((1, 5, 4))
    junk = np.zeros((8, 2), dtype=np.int16)  # all cells (0, 0): not a spanning tree
    costs, _, ok, _, _, _ = solve_padded(a, b, C, np.array([5]), np.array([4]), basis=junk)
    assert ok[0] and costs[0] == pytest.approx(ot.emd2(a[0], b[0], C[0]), abs=1e-12)


def test_line_bases_are_optimal_for_a_line_metric():
    """The monotone staircase along h is a spanning tree and optimal for |h_i - h_j|: no pivot needed."""
    from bisimkit.simplex import basis_offsets, line_bases

    rng = np.random.default_rng(3)
    n = 60
    h = rng.random(n)
    P, K, L = 40, [], []
    xs = np.zeros((P, 30), dtype=np.int64)
    ys = np.zeros((P, 30), dtype=np.int64)
    a = np.zeros((P, 30))
    b = np.zeros((P, 30))
    for p in range(P):
        k, l = rng.integers(1, 31, size=2)
        xs[p, :k] = np.sort(rng.choice(n, k, replace=False))
        ys[p, :l] = np.sort(rng.choice(n, l, replace=False))
        a[p, :k], b[p, :l] = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(l))
        K.append(k)
        L.append(l)
    K, L = np.array(K), np.array(L)
    basis = np.zeros((int(basis_offsets(K, L)[-1]), 2), dtype=np.int16)
    valid = np.zeros(P, dtype=bool)
    line_bases(xs, a, K, ys, b, L, h, basis, valid)
    assert valid.all()
    C = np.abs(h[xs][:, :, None] - h[ys][:, None, :])
    costs, flows, ok, pivots, _, _ = solve_padded(a, b, C, K, L, basis=basis.copy(), warm=valid.copy())
    assert ok.all() and (pivots == 0).all()
    for p in range(P):
        k, l = K[p], L[p]
        assert costs[p] == pytest.approx(ot.emd2(a[p, :k], b[p, :l], C[p, :k, :l]), abs=1e-12)
    # Under another cost the same start is only a start: still optimal in the end.
    C2 = rng.random(C.shape)
    costs2, _, ok2, _, _, _ = solve_padded(a, b, C2, K, L, basis=basis.copy(), warm=valid.copy())
    assert ok2.all()
    for p in range(P):
        k, l = K[p], L[p]
        assert costs2[p] == pytest.approx(ot.emd2(a[p, :k], b[p, :l], C2[p, :k, :l]), abs=1e-12)
