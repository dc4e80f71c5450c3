"""The starts of ``benchmarks.bench_cross_starts`` (its pivot counts and times are the benchmark's, not a test's)."""

import json

import numpy as np

from benchmarks.bench_cross_starts import main, monotone_basis, solve_from, tree_duals, within_problem
from benchmarks.common import published_mdp
from bisimkit.solvers import solve


def _random_problem(rng, k, l):
    a, b = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(l))
    return a, b, rng.uniform(0.0, 1.0, (k, l))


def _northwest_corner(a, b, ha, hb):
    """The monotone coupling by the north-west corner rule on the key-sorted rows and columns: {cell: mass}."""
    ra, rb = list(np.argsort(ha, kind="stable")), list(np.argsort(hb, kind="stable"))
    left_a, left_b, flow, i, j = a.copy(), b.copy(), {}, 0, 0
    while i < len(ra) and j < len(rb):
        m = min(left_a[ra[i]], left_b[rb[j]])
        if m > 0:
            flow[ra[i], rb[j]] = m
        left_a[ra[i]] -= m
        left_b[rb[j]] -= m
        if left_a[ra[i]] <= 1e-15:
            i += 1
        else:
            j += 1
    return flow


def test_monotone_basis_is_a_spanning_tree_carrying_the_marginals():
    rng = np.random.default_rng(0)
    a, b, _ = _random_problem(rng, 5, 7)
    ha, hb = rng.normal(size=5), rng.normal(size=7)
    basis = monotone_basis(a, b, ha, hb)
    assert basis.shape == (5 + 7 - 1, 2)
    assert len({tuple(c) for c in basis}) == len(basis)  # distinct cells
    C = np.abs(ha[:, None] - hb[None, :])
    u, v = tree_duals(C, basis)
    assert np.isfinite(u).all() and np.isfinite(v).all()  # k + l - 1 cells reaching every node: a spanning tree
    flow = _northwest_corner(a, b, ha, hb)
    assert set(flow) <= {tuple(c) for c in basis}  # the monotone coupling's mass lies on the tree
    plan = np.zeros((5, 7))
    for (i, j), m in flow.items():
        plan[i, j] = m
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-12)
    np.testing.assert_allclose(plan.sum(0), b, atol=1e-12)
    # on the line cost the monotone coupling is optimal: the simplex from it makes no pivot, keeps its cost
    pivots, _, cost, _ = solve_from(a, b, C, basis)
    assert pivots == 0
    assert abs(cost - float((plan * C).sum())) < 1e-12
    _, _, greedy_cost, _ = solve_from(a, b, C, None)
    assert abs(cost - greedy_cost) < 1e-12


def test_tree_duals_are_tight_on_the_tree_and_feasible_at_the_optimum():
    rng = np.random.default_rng(1)
    a, b, C = _random_problem(rng, 6, 4)
    _, _, _, basis = solve_from(a, b, C, None)
    u, v = tree_duals(C, basis)
    assert np.allclose(u[basis[:, 0]] + v[basis[:, 1]], C[basis[:, 0], basis[:, 1]])
    assert np.all(C - u[:, None] - v[None, :] >= -1e-12)  # optimal basis: no negative reduced cost


def test_every_start_reaches_the_same_optimum(tmp_path, capsys):
    out = tmp_path / "starts.json"
    assert main(["--n", "12", "--pairs", "20", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record == json.loads(capsys.readouterr().out)
    assert set(record["median_pivots"]) == {"greedy", "reward line", "fitted line", "neighbour duals"}
    assert record["certified_error"] <= 1e-9
    within = record["within_against_cross"]
    assert within["within_pairs"] == 2 * (12 * 11 // 2) and within["cross_pairs"] == 144
    rows, columns = within["median_rows_columns"]["within"]
    assert rows + columns <= 12  # a within problem's rows and columns are disjoint states
    assert within["predicted_union_over_between"] > 1


def test_a_within_problem_without_its_shared_mass_has_the_full_laws_cost():
    """Dropping the shared mass is exact under a pseudometric: the reduced problem's optimum is W1 of the
    two full laws under the MDP's own fixed point."""
    mdp = published_mdp(15, seed=3)
    D = np.asarray(solve(mdp, "pi").distances)
    P, h = np.asarray(mdp.transition_pi), np.asarray(mdp.reward_pi, dtype=float)
    for s, t in [(0, 1), (2, 9), (14, 5)]:
        a, b, C, ka, kb = within_problem(P, D, h, s, t)
        assert len(a) + len(b) <= 15 and abs(a.sum() - b.sum()) < 1e-12
        _, _, reduced, _ = solve_from(a, b, C, monotone_basis(a, b, ka, kb))
        _, _, full, _ = solve_from(P[s], P[t], D, None)
        assert abs(reduced - full) < 1e-10, (s, t, reduced, full)
