"""Batched optimal transport against POT, for every shape class of problem."""

import numpy as np
import ot
import scipy.sparse as sp

from bisimkit.transport import optimal_transport, plan_costs


def random_rows(rng, rows, n, max_support):
    X = np.zeros((rows, n))
    for r in range(rows):
        k = rng.integers(1, max_support + 1)
        X[r, rng.choice(n, k, replace=False)] = rng.random(k) + 0.05
    return X / X.sum(1, keepdims=True)


def random_metric(rng, n):
    pts = rng.normal(size=(n, 2))
    return np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))


def test_values_and_plans_match_pot():
    rng = np.random.default_rng(0)
    n = 9
    X = random_rows(rng, 60, n, 5)
    X[10] = X[11]  # an identical pair
    X[20] = 0
    X[20, 3] = 1  # a point mass
    d = random_metric(rng, n)
    src, dst = rng.integers(0, 60, 400), rng.integers(0, 60, 400)
    src[:3], dst[:3] = [10, 20, 1], [11, 4, 20]
    Xs = sp.csr_matrix(X)
    for p in (1, 2):
        values, plans = optimal_transport(Xs, src, Xs, dst, d, p=p, plans=True)
        expected = np.array([ot.emd2(X[a], X[b], d**p) for a, b in zip(src, dst)]) ** (1 / p)
        np.testing.assert_allclose(values, expected, atol=1e-12)
        # Each plan is a coupling of its pair and attains the value.
        for k in range(len(src)):
            sel = plans.problem == k
            g = np.zeros((n, n))
            np.add.at(g, (plans.i[sel], plans.j[sel]), plans.mass[sel])
            np.testing.assert_allclose(g.sum(1), X[src[k]], atol=1e-12)
            np.testing.assert_allclose(g.sum(0), X[dst[k]], atol=1e-12)
        np.testing.assert_allclose(plan_costs(plans, d**p, len(src)) ** (1 / p), values, atol=1e-12)


def test_nonzero_diagonal_ground_is_not_shortcut():
    X = sp.csr_matrix(np.array([[0.5, 0.5]]))
    d = np.array([[1.0, 2.0], [2.0, 1.0]])
    values, _ = optimal_transport(X, [0], X, [0], d, zero_diagonal=False)
    assert values[0] == 1.0
    values, _ = optimal_transport(X, [0], X, [0], d, zero_diagonal=True)
    assert values[0] == 0.0


def test_compiled_simplex_values_and_plans_agree_with_pot():
    rng = np.random.default_rng(3)
    n = 8
    X = random_rows(rng, 40, n, 4)
    d = random_metric(rng, n)
    src, dst = rng.integers(0, 40, 200), rng.integers(0, 40, 200)
    Xs = sp.csr_matrix(X)
    values, plans = optimal_transport(Xs, src, Xs, dst, d, plans=True)
    expected = [ot.emd2(X[a], X[b], d) for a, b in zip(src, dst)]
    np.testing.assert_allclose(values, expected, atol=1e-12)
    np.testing.assert_allclose(plan_costs(plans, d, len(src)), expected, atol=1e-12)


def test_empty_histograms_cost_nothing():
    X = sp.csr_matrix(np.array([[0.0, 0.0], [0.5, 0.5]]))
    values, plans = optimal_transport(
        X, [0, 1], X, [0, 1], np.ones((2, 2)) - np.eye(2), plans=True, zero_diagonal=False
    )
    assert values[0] == 0.0 and values[1] == 0.0 and len(plans.problem) == len(plans.mass)


def test_warm_started_calls_match_cold_calls():
    from bisimkit.transport import WarmStarts

    rng = np.random.default_rng(4)
    n = 30
    X = sp.csr_matrix(random_rows(rng, 50, n, 25))
    src, dst = rng.integers(0, 50, 300), rng.integers(0, 50, 300)
    warm = WarmStarts()
    for scale in (1.0, 1.3, 0.7):
        d = random_metric(rng, n) * scale
        cold, _ = optimal_transport(X, src, X, dst, d)
        hot, _ = optimal_transport(X, src, X, dst, d, warm=warm)
        np.testing.assert_allclose(hot, cold, atol=1e-12)


def test_kept_bases_serve_the_same_problems_only():
    from bisimkit.transport import WarmStarts

    rng = np.random.default_rng(5)
    n = 12
    X = sp.csr_matrix(random_rows(rng, 40, n, 4))
    Y = X.copy()
    src, dst = rng.integers(0, 40, 60), rng.integers(0, 40, 60)
    dst[:5] = src[:5]  # identical histograms: cost 0, the identity plan
    warm = WarmStarts()

    def check(X, src, Y, dst, d):
        cold, cold_plans = optimal_transport(X, src, Y, dst, d, plans=True)
        hot, hot_plans = optimal_transport(X, src, Y, dst, d, plans=True, warm=warm)
        np.testing.assert_allclose(hot, cold, atol=1e-12)
        np.testing.assert_allclose(plan_costs(hot_plans, d, len(src)), cold, atol=1e-12)
        assert np.all(hot[:5] == 0.0)

    for scale in (1.0, 1.5):
        check(X, src, X, dst, random_metric(rng, n) * scale)
    kept = warm._bases
    assert kept is not None and np.array_equal(kept[1], src != dst)  # identical histograms need no basis
    check(X, src, X, dst, random_metric(rng, n))
    assert warm._bases is kept  # the same problems: their bases read and updated in place
    check(X, src.copy(), X, dst.copy(), random_metric(rng, n))
    assert warm._bases is kept  # equal rows in other arrays: the same problems
    other = rng.permutation(src)
    other[:5] = dst[:5]
    check(X, other, X, dst, random_metric(rng, n))  # other rows: other slots, new bases
    assert warm._bases is not kept
    kept = warm._bases
    check(X, other, Y, dst, random_metric(rng, n))  # an equal matrix, but another object: new bases
    assert warm._bases is not kept


def test_problems_beyond_the_compiled_sizes_go_to_pot_and_then_start_warm(monkeypatch):
    import bisimkit.transport as transport
    from bisimkit.transport import WarmStarts

    rng = np.random.default_rng(6)
    n = 10
    dense = random_rows(rng, 30, n, 6)
    X = sp.csr_matrix(dense)
    src, dst = rng.integers(0, 30, 80), rng.integers(0, 30, 80)
    monkeypatch.setattr(transport, "KERNEL_MAX", 3)  # rows of up to 6 atoms: most problems are POT's
    big = ((np.diff(X.indptr)[src] > 3) | (np.diff(X.indptr)[dst] > 3)) & (src != dst)  # identical: exact
    assert big.sum() > 40
    warm = WarmStarts()
    for scale in (1.0, 1.4, 0.8):
        d = random_metric(rng, n) * scale
        gaps = np.zeros(len(src))
        values, plans = optimal_transport(X, src, X, dst, d, plans=True, warm=warm, gaps=gaps)
        expected = [ot.emd2(dense[a], dense[b], d) for a, b in zip(src, dst)]
        np.testing.assert_allclose(values, expected, atol=1e-12)
        np.testing.assert_allclose(plan_costs(plans, d, len(src)), expected, atol=1e-12)
        assert np.all(gaps < 1e-12)
        _, valid = warm._bases
        assert valid[big].all()  # POT's plans became bases: the next call starts them warm in the compiled simplex


def test_the_shared_mass_problems_keep_their_line_seeds_and_bases_between_rounds(monkeypatch):
    import bisimkit.transport as transport
    from bisimkit.generators import random_mdp
    from bisimkit.operators import operator_form

    terms = operator_form(random_mdp(40, 3, seed=2), "pi")
    assert terms._shared_mass_pays()
    D0 = terms.pairs.to_matrix(terms.combine(terms.row_const))
    terms.seed_line(D0)
    seeded = terms._reduced_warm._bases
    assert seeded is not None and seeded[1].all()
    pot = []
    monkeypatch.setattr(transport, "_pot_left", lambda *args: pot.append(len(args[5])))
    terms.costs(D0, plans=True, reuse=True)
    terms.costs(D0 * 1.1, plans=True, reuse=True)
    assert terms._reduced_warm._bases is seeded and not pot  # every problem started warm in the compiled simplex


def test_shared_mass_reduction_is_exact_for_metrics(monkeypatch):
    import bisimkit.forms as ops
    from bisimkit.generators import random_mdp
    from bisimkit.operators import operator_form
    from bisimkit.solvers import solve

    def transport_terms(mdp, name):
        return operator_form(mdp, name)

    mdp = random_mdp(40, 3, seed=1)  # dense supports: the reduction applies
    terms = transport_terms(mdp, "pi")
    assert terms._shared_mass_pays()
    d = solve(mdp, "pi").distances  # a pseudometric
    reduced, _ = terms.costs(d)
    monkeypatch.setattr(ops, "SHARED_MASS_MIN_SUPPORT", 10**9)
    full, _ = transport_terms(mdp, "pi").costs(d)
    np.testing.assert_allclose(reduced, full, atol=1e-12)
    # Not a metric: the reduction is skipped, so values still match full problems solved by POT.
    bad = d.copy()
    bad[0, 1] = bad[1, 0] = d.max() * 10
    monkeypatch.setattr(ops, "SHARED_MASS_MIN_SUPPORT", 24)
    got, _ = transport_terms(mdp, "pi").costs(bad)
    P = mdp.transition_pi
    t = transport_terms(mdp, "pi")
    expected = [ot.emd2(P[a], P[b], bad) for a, b in zip(t.row_src, t.row_dst)]
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_values_without_plans_are_those_with_them_chunk_by_chunk(monkeypatch):
    import bisimkit.transport as transport
    from bisimkit.transport import WarmStarts

    rng = np.random.default_rng(8)
    n = 10
    X = sp.csr_matrix(random_rows(rng, 30, n, 6))
    src, dst = rng.integers(0, 30, 90), rng.integers(0, 30, 90)
    monkeypatch.setattr(transport, "CHUNK", 7)  # 13 chunks, with problems left to POT in them
    monkeypatch.setattr(transport, "KERNEL_MAX", 3)
    with_plans, without = WarmStarts(), WarmStarts()
    for scale in (1.0, 1.2):
        d = random_metric(rng, n) * scale
        gaps, gaps_alone = np.zeros(len(src)), np.zeros(len(src))
        values, _ = optimal_transport(X, src, X, dst, d, plans=True, warm=with_plans, gaps=gaps)
        alone, plans = optimal_transport(X, src, X, dst, d, warm=without, gaps=gaps_alone)
        assert plans is None and np.array_equal(alone, values) and np.array_equal(gaps_alone, gaps)
        assert np.array_equal(without._bases[1], with_plans._bases[1])
