"""Quotient-first solving (bisimkit/quotient.py): the lift agrees with the plain solve and with
the per-pair reference, its certificate covers the tolerance the blocks were found with, and it
steps aside where it does not apply."""

import numpy as np
import pytest

from bisimkit import example, solve
from bisimkit.generators import planted_bisimulation, random_mdp
from bisimkit.mdp import FiniteMDP
from bisimkit.quotient import QUOTIENT_METRICS, quotient
from bisimkit.solvers import solve_on_quotient
from validation.reference import reference_fixed_point

METRICS = ("pi", "psm", "bisim", "eps")


def planted(seed, n=6, m=3, copies=3, discount=0.9):
    base = random_mdp(n, m, seed=seed, discount=discount, max_support=3, action_dim=2)
    mdp, origin = planted_bisimulation(base, copies, seed=seed + 100)
    return base, mdp, origin


def lifted_ground(base, origin, seed):
    """A pseudometric on the base's state-action pairs (distances of random points), copied to the copies."""
    pts = np.random.default_rng(seed).normal(size=(base.n_states * base.n_actions, 2))
    G_base = np.linalg.norm(pts[:, None] - pts[None, :], axis=-1)
    m = base.n_actions
    idx = (np.asarray(origin)[:, None] * m + np.arange(m)).ravel()
    return G_base[np.ix_(idx, idx)]


def assert_agree(a, b):
    """Both solutions are within their certificates of the same fixed point."""
    assert a.converged and b.converged
    assert np.max(np.abs(a.distances - b.distances)) <= a.certified_error + b.certified_error + 1e-12


def test_four_state_by_hand():
    mdp = example("four-state")  # 1 and 2 are pi-bisimilar: reward 0, move to 2
    q = quotient(mdp, "pi")
    assert q.labels.tolist() == [0, 1, 1, 2] and q.representatives.tolist() == [0, 1, 3]
    np.testing.assert_allclose(q.mdp.transitions[:, 0], [[0, 0.5, 0.5], [0, 1, 0], [0, 0, 1]])
    np.testing.assert_allclose(q.mdp.rewards[:, 0], [0, 0, 1])
    # copies deviate by what the arithmetic behind the deviation may be off, nothing more
    assert 0.0 < q.deviation(10.0).max() <= 64 * np.finfo(float).eps
    sol = solve(mdp, "pi")
    assert "on the quotient (3 of 4 states)" in sol.method
    c = 0.9
    far = 1 / (1 - c)  # d(2, 3) = 1 + c d(2, 3)
    d01, d03 = c / 2 * far, 1 + c / 2 * far  # half of 0's mass must cross from 2 (or 3) to the other
    expected = np.array([[0, d01, d01, d03], [d01, 0, 0, far], [d01, 0, 0, far], [d03, far, far, 0]])
    np.testing.assert_allclose(sol.distances, expected, atol=1e-9)
    assert sol.certified_error <= 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("metric", METRICS)
def test_planted_copies_match_the_plain_solve(metric, seed):
    _, mdp, origin = planted(seed)
    a = solve(mdp, metric)
    b = solve(mdp, metric, quotient=False)
    assert "on the quotient" in a.method and "quotient" not in b.method
    assert a.certified_error <= 1e-9
    assert_agree(a, b)
    same = origin[:, None] == origin[None, :]
    assert np.all(a.distances[same] == 0)  # copies are at distance exactly 0


@pytest.mark.parametrize("seed", [0, 1])
def test_eps_with_a_ground_matrix(seed):
    base, mdp, origin = planted(seed)
    G = lifted_ground(base, origin, seed)
    a = solve(mdp, "eps", ground=G)
    b = solve(mdp, "eps", ground=G, quotient=False)
    assert "on the quotient" in a.method
    assert_agree(a, b)
    q = quotient(mdp, "eps", G)
    reps = (q.representatives[:, None] * mdp.n_actions + np.arange(mdp.n_actions)).ravel()
    np.testing.assert_array_equal(q.ground, G[np.ix_(reps, reps)])


@pytest.mark.parametrize("ground", ["reward", "policy"])
def test_eps_builtin_grounds(ground):
    _, mdp, _ = planted(3)
    assert_agree(solve(mdp, "eps", ground=ground), solve(mdp, "eps", ground=ground, quotient=False))


@pytest.mark.parametrize("metric", ["pi", "psm", "eps"])
def test_mirrored_rooms(metric):
    mdp = example("mirrored-rooms-policy")
    a = solve(mdp, metric)
    b = solve(mdp, metric, quotient=False)
    assert "on the quotient" in a.method
    assert_agree(a, b)


@pytest.mark.parametrize("metric", METRICS)
def test_tiny_planted_matches_the_reference(metric):
    base = random_mdp(3, 2, seed=5, discount=0.6, max_support=2, action_dim=1)
    mdp, _ = planted_bisimulation(base, 2, seed=6)
    sol = solve(mdp, metric)
    assert "on the quotient" in sol.method
    ref = reference_fixed_point(mdp, metric)
    assert np.max(np.abs(sol.distances - ref)) <= sol.certified_error + 1e-10


def test_random_mdp_has_no_quotient():
    mdp = random_mdp(30, 3, seed=0, max_support=5)
    for metric in METRICS:
        assert quotient(mdp, metric) is None
    assert "quotient" not in solve(mdp, "pi").method


def perturbed(mdp, state, size):
    R = mdp.rewards.copy()
    R[state] += size
    return FiniteMDP(mdp.transitions, R, mdp.discount, mdp.policy, mdp.action_values)


def test_small_deviation_is_charged_to_the_certificate():
    _, mdp, origin = planted(0)
    s = int(np.nonzero(origin == origin[0])[0][-1])  # a copy that is not its block's representative
    bumped = perturbed(mdp, s, 1e-11)
    c = mdp.discount
    for metric in ("pi", "bisim", "eps"):
        q = quotient(bumped, metric)
        assert q.deviation(0.0)[s] == pytest.approx(1e-11, rel=1e-3)
        a = solve(bumped, metric)
        b = solve(bumped, metric, quotient=False, tol=1e-12)
        assert "on the quotient" in a.method
        assert 2e-11 / (1 - c) * 0.99 <= a.certified_error <= 1e-9
        assert_agree(a, b)
        assert abs(b.distances[s, origin == origin[s]]).max() > 0  # the lift's 0 really is off, by < the certificate


def test_large_deviation_falls_back_to_the_plain_solve():
    _, mdp, origin = planted(1)
    s = int(np.nonzero(origin == origin[0])[0][-1])
    # Within the relation's tolerance (1e-9), so merged, but 2 * 5e-10 / (1 - c) = 1e-8 > tol: not certifiable.
    bumped = perturbed(mdp, s, 5e-10)
    assert quotient(bumped, "pi").labels[s] == quotient(bumped, "pi").labels[np.nonzero(origin == origin[s])[0][0]]
    assert solve_on_quotient(bumped, "pi", None, 1e-9) is None
    sol = solve(bumped, "pi")
    assert "quotient" not in sol.method and sol.certified_error <= 1e-9
    # 1e-6: merged only with a coarse tolerance, and that lift is refused as well.
    far = perturbed(mdp, s, 1e-6)
    q = quotient(far, "pi", atol=1e-5)
    assert q is not None and q.lift_error(1.0) > 1e-9
    assert solve_on_quotient(far, "pi", None, 1e-9, atol=1e-5) is None
    assert_agree(solve(far, "pi"), solve(far, "pi", quotient=False))


def test_orders_still_apply():
    _, mdp, _ = planted(2)
    a = solve(mdp, "eps", action_order=[2, 0, 1])
    b = solve(mdp, "eps", action_order=[2, 0, 1], quotient=False)
    assert "on the quotient" in a.method and a.action_order == b.action_order
    assert_agree(a, b)
    a = solve(mdp, "pi", order="class-contiguous")
    assert "on the quotient" in a.method
    assert_agree(a, solve(mdp, "pi", quotient=False))


def test_where_it_does_not_apply():
    _, mdp, _ = planted(0)
    assert "quotient" not in solve(mdp, "pi", full_diagonal=True).method
    for metric in ("eps-bar", "eps-avg", "mico", "dbc"):
        assert metric not in QUOTIENT_METRICS
        assert "quotient" not in solve(mdp, metric).method
        with pytest.raises(ValueError):
            quotient(mdp, metric)
    no_policy = FiniteMDP(mdp.transitions, mdp.rewards, mdp.discount)
    assert quotient(no_policy, "pi") is None
    assert "on the quotient" in solve(no_policy, "bisim").method


def test_all_states_merged():
    base = random_mdp(1, 2, seed=0)
    mdp, _ = planted_bisimulation(base, 5, seed=1)
    sol = solve(mdp, "eps")
    assert "(1 of 5 states)" in sol.method
    # one block: nothing is left to solve, and the lift's certificate is the copies' round-off (their
    # transition masses were split in floating point), small but not 0
    assert np.all(sol.distances == 0) and 0.0 < sol.certified_error <= 1e-12


def test_value_iteration_on_the_quotient():
    _, mdp, _ = planted(1)
    a = solve(mdp, "pi", method="vi", tol=1e-6)
    assert a.method.startswith("value iteration on the quotient")
    assert a.history[-1] == a.certified_error <= 1e-6
    assert_agree(a, solve(mdp, "pi", quotient=False))


@pytest.mark.parametrize("seed", [0, 1])
def test_certificate_is_honest_for_blocks_found_with_a_coarse_tolerance(seed):
    """Perturb every copy's rewards, transitions, policy and ground by up to 3e-4, merge with atol 3e-3:
    the lifted quotient fixed point is within its certificate of the true fixed point."""
    rng = np.random.default_rng(seed)
    base, mdp, origin = planted(seed, n=5, discount=0.8)
    bump = 3e-4
    R = mdp.rewards + rng.uniform(-bump, bump, mdp.rewards.shape)
    P = mdp.transitions + rng.uniform(0, bump, mdp.transitions.shape) * (mdp.transitions > 0)
    pi = mdp.policy + rng.uniform(0, bump, mdp.policy.shape)
    noisy = FiniteMDP(P / P.sum(-1, keepdims=True), R, mdp.discount, pi / pi.sum(-1, keepdims=True), mdp.action_values)
    f = rng.normal(size=mdp.n_states * mdp.n_actions)
    G = lifted_ground(base, origin, seed) + bump * np.abs(f[:, None] - f[None, :])
    for metric, ground in [
        ("pi", "reward"),
        ("psm", "reward"),
        ("bisim", "reward"),
        ("eps", "reward"),
        ("eps", "policy"),
        ("eps", G),
    ]:
        q = quotient(noisy, metric, ground, atol=3e-3)
        assert q is not None and q.n_blocks < noisy.n_states
        sol = solve(q.mdp, metric, q.ground, tol=1e-12, quotient=False)
        certificate = q.certificate(sol.distances, sol.certified_error)
        exact = solve(noisy, metric, ground, tol=1e-12, quotient=False).distances
        error = np.max(np.abs(q.lift(sol.distances) - exact))
        assert 0 < error <= certificate


def sparse_chain(mdp: FiniteMDP) -> FiniteMDP:
    """The chain of ``mdp``'s policy (one action), held sparse."""
    import scipy.sparse as sp

    return FiniteMDP(sp.csr_matrix(mdp.transition_pi), mdp.reward_pi[:, None], mdp.discount, np.ones((mdp.n_states, 1)))


@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_chain_quotient_matches_the_dense_one(seed):
    _, mdp, origin = planted(seed)
    chain = sparse_chain(mdp)
    dense = FiniteMDP(chain.transitions, chain.rewards, chain.discount, chain.policy)
    q, qd = quotient(chain, "pi"), quotient(dense, "pi")
    assert q.mdp.sparse
    assert np.array_equal(q.labels, qd.labels) and np.array_equal(q.representatives, qd.representatives)
    np.testing.assert_allclose(q.mdp.transitions, qd.mdp.transitions, rtol=0, atol=4e-16)
    assert q.deviation(10.0).max() <= 64 * np.finfo(float).eps
    a, b = solve(chain, "pi"), solve(chain, "pi", quotient=False)
    assert "on the quotient" in a.method
    assert_agree(a, b)


@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_chain_certificate_is_honest_for_a_coarse_tolerance(seed):
    rng = np.random.default_rng(seed)
    _, mdp, _ = planted(seed, n=5, discount=0.8)
    bump = 3e-4
    P = mdp.transition_pi + rng.uniform(0, bump, (mdp.n_states, mdp.n_states)) * (mdp.transition_pi > 0)
    R = mdp.reward_pi + rng.uniform(-bump, bump, mdp.n_states)
    rows = P[:, None] / P.sum(-1)[:, None, None]
    noisy = sparse_chain(FiniteMDP(rows, R[:, None], mdp.discount, np.ones((len(R), 1))))
    q = quotient(noisy, "pi", atol=3e-3)
    assert q is not None and q.n_blocks < noisy.n_states and q.mdp.sparse
    sol = solve(q.mdp, "pi", tol=1e-12, quotient=False)
    certificate = q.certificate(sol.distances, sol.certified_error)
    exact = solve(noisy, "pi", tol=1e-12, quotient=False).distances
    assert 0 < np.max(np.abs(q.lift(sol.distances) - exact)) <= certificate
