"""Closed forms between Gaussians against POT on samples, within the error each check predicts.

* 1-D W_p: |W_p(P_n, Q_n) - W_p(P, Q)| <= W_p(P_n, P) + W_p(Q_n, Q) (triangle
  inequality), with both right-hand terms computed exactly for the drawn samples.
* separable costs between diagonal Gaussians: ``ot.emd2`` on entangled samples lies
  between the sum of the empirical 1-D optima (a lower bound for any coupling of
  the joint samples) and the shared-noise average (a feasible coupling), which
  brackets the closed form up to the 1-D triangle errors and 4 standard errors.
* Bures: POT finds no coupling cheaper than the closed-form Monge map on samples
  pushed through it, and never beats the closed-form Kantorovich potentials.
"""

import math

import numpy as np
import ot
import pytest
from scipy import integrate
from scipy.stats import norm

from bisimkit.gaussian.closed_forms import (
    abs_moment,
    bures_squared,
    entangled_squared_cost,
    folded_normal_mean,
    gaussian_monge_map,
    separable_cost,
    wasserstein_gaussian_1d,
    wasserstein_to_discrete,
)


@pytest.mark.parametrize(
    "mean, std, p",
    [
        (0.0, 1.0, 1),
        (1.3, 0.4, 1),
        (-2.0, 0.1, 2),
        (0.5, 2.0, 3),
        (3.0, 0.05, 1.5),
        (0.0, 0.0, 1),
        (-1.2, 0.0, 2.5),
        (0.2, 1.0, 0.5),
    ],
)
def test_abs_moment_matches_quadrature(mean, std, p):
    if std == 0:
        expected = abs(mean) ** p
    else:
        expected = integrate.quad(
            lambda x: abs(mean + std * x) ** p * norm.pdf(x), -np.inf, np.inf, epsrel=1e-12, limit=400
        )[0]
    assert abs_moment(mean, std, p) == pytest.approx(expected, rel=1e-9, abs=1e-14)


def test_folded_normal_vectorised_and_symmetric():
    m = np.linspace(-3, 3, 13)
    s = np.linspace(0, 2, 13)
    assert np.allclose(folded_normal_mean(m, s), folded_normal_mean(-m, -s))
    assert np.all(folded_normal_mean(m, s) >= np.abs(m) - 1e-15)  # Jensen


def _quantile_integral(mean, std, atoms, p, grid=2_000_000):
    """Brute force W_p^p to the empirical law of ``atoms`` (midpoint rule on the quantiles)."""
    u = (np.arange(grid) + 0.5) / grid
    x = np.sort(atoms)[np.minimum((u * len(atoms)).astype(int), len(atoms) - 1)]
    return float(np.mean(np.abs(x - (mean + std * norm.ppf(u))) ** p))


@pytest.mark.parametrize("p", [1, 2, 3])
def test_wasserstein_to_discrete_matches_brute_force(p):
    rng = np.random.default_rng(p)
    atoms = rng.normal(0.3, 1.5, size=50)
    exact = wasserstein_to_discrete(0.0, 1.0, atoms, p=p)
    assert exact == pytest.approx(_quantile_integral(0.0, 1.0, atoms, p), rel=2e-3)
    # weighted atoms: the same law written with repeated atoms
    w = rng.integers(1, 4, size=10)
    a = rng.normal(size=10)
    assert wasserstein_to_discrete(0.5, 0.7, a, w / w.sum(), p) == pytest.approx(
        wasserstein_to_discrete(0.5, 0.7, np.repeat(a, w), p=p), rel=1e-10
    )


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize(
    "m1, s1, m2, s2", [(0.0, 1.0, 0.5, 2.0), (1.0, 0.3, -1.0, 0.3), (0.0, 1.0, 0.0, 1.5), (2.0, 0.5, 1.8, 0.1)]
)
def test_wp_1d_against_pot_on_samples(p, m1, s1, m2, s2):
    rng = np.random.default_rng([p, int(10 * s2)])
    x = m1 + s1 * rng.standard_normal(3000)
    y = m2 + s2 * rng.standard_normal(3000)
    empirical = float(ot.wasserstein_1d(x, y, p=p)) ** (1 / p)  # POT returns W_p^p
    predicted = wasserstein_to_discrete(m1, s1, x, p=p) ** (1 / p) + wasserstein_to_discrete(m2, s2, y, p=p) ** (1 / p)
    truth = float(wasserstein_gaussian_1d(m1, s1, m2, s2, p))
    assert abs(empirical - truth) <= predicted
    assert predicted < 0.25 * truth + 0.05  # the bound is informative
    if abs(s1 - s2) > 0.3:  # where the stds matter, a wrong formula (stds added, not subtracted) is caught
        wrong = float(abs_moment(m1 - m2, s1 + s2, p)) ** (1 / p)
        assert abs(empirical - wrong) > predicted


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_separable_cost_against_pot_on_samples(seed):
    rng = np.random.default_rng(seed)
    m1, m2 = rng.normal(size=2), rng.normal(size=2)
    s1, s2 = rng.uniform(0.3, 1.5, 2), rng.uniform(0.3, 1.5, 2)
    powers = np.array([1.0, 2.0])
    w = rng.uniform(0.2, 1.0, (2, 2))
    N = 500
    xi = rng.standard_normal((N, 2))
    x, y = m1 + s1 * xi, m2 + s2 * xi  # entangled samples: a feasible coupling of the two empirical laws

    def cost(X, Y):
        diff = np.abs(X[:, None, :] - Y[None, :, :])
        return sum((w[:, j] * diff**p).sum(axis=-1) for j, p in enumerate(powers))

    C = cost(x, y)
    emd = ot.emd2(np.full(N, 1 / N), np.full(N, 1 / N), C, numItermax=10_000_000)
    pairs = np.diag(C)
    upper, se = pairs.mean(), pairs.std(ddof=1) / math.sqrt(N)
    lower = sum(
        w[i, j] * float(ot.wasserstein_1d(x[:, i], y[:, i], p=p)) for i in range(2) for j, p in enumerate(powers)
    )
    assert lower - 1e-9 <= emd <= upper + 1e-9  # LP facts: marginal bound and a feasible coupling
    closed = float(separable_cost(m1, s1, m2, s2, w, powers))
    # lower prediction from the truth: W_emp >= W - e with e the exact 1-D sampling errors
    floor = 0.0
    for i in range(2):
        for j, p in enumerate(powers):
            e = wasserstein_to_discrete(m1[i], s1[i], x[:, i], p=int(p)) ** (1 / p) + wasserstein_to_discrete(
                m2[i], s2[i], y[:, i], p=int(p)
            ) ** (1 / p)
            W = float(wasserstein_gaussian_1d(m1[i], s1[i], m2[i], s2[i], p))
            floor += w[i, j] * max(W - e, 0.0) ** p
    assert floor <= emd <= closed + 4 * se
    assert abs(upper - closed) <= 4 * se  # the closed form is the entangled expectation


def _random_spd(rng, n):
    X = rng.normal(size=(n, n))
    return X @ X.T + 0.3 * np.eye(n)


@pytest.mark.parametrize("seed", [0, 1])
def test_bures_against_pot_on_samples(seed):
    rng = np.random.default_rng(seed)
    n, N = 2, 400
    m1, m2 = rng.normal(size=n), rng.normal(size=n)
    S1, S2 = _random_spd(rng, n), _random_spd(rng, n)
    truth = bures_squared(m1, S1, m2, S2)
    A, b = gaussian_monge_map(m1, S1, m2, S2)
    # The map pushes N(m1, S1) to N(m2, S2).
    assert np.allclose(A @ S1 @ A.T, S2) and np.allclose(A @ m1 + b, m2)
    x = rng.multivariate_normal(m1, S1, size=N)
    y = x @ A.T + b  # an i.i.d. sample of N(m2, S2)
    C = ot.dist(x, y)  # squared Euclidean
    emd = ot.emd2(np.full(N, 1 / N), np.full(N, 1 / N), C)
    paired = np.diag(C)
    assert emd == pytest.approx(paired.mean(), rel=1e-9)  # POT finds nothing cheaper than the map
    assert abs(paired.mean() - truth) <= 4 * paired.std(ddof=1) / math.sqrt(N)
    # Independent samples: the closed-form potentials phi(x) + psi(y) <= |x - y|^2 bound every coupling.
    x2 = rng.multivariate_normal(m1, S1, size=N)
    y2 = rng.multivariate_normal(m2, S2, size=N)
    Ainv = np.linalg.inv(A)
    u = 0.5 * np.einsum("bi,ij,bj->b", x2 - m1, A, x2 - m1) + x2 @ m2
    v = 0.5 * np.einsum("bi,ij,bj->b", y2 - m2, Ainv, y2 - m2) + (y2 - m2) @ m1
    phi, psi = (x2**2).sum(1) - 2 * u, (y2**2).sum(1) - 2 * v
    assert np.all(phi[:, None] + psi[None, :] <= ot.dist(x2, y2) + 1e-9)
    emd2 = ot.emd2(np.full(N, 1 / N), np.full(N, 1 / N), ot.dist(x2, y2))
    dual = phi.mean() + psi.mean()
    assert emd2 >= dual - 1e-9
    se = math.sqrt(phi.var(ddof=1) / N + psi.var(ddof=1) / N)
    assert abs(dual - truth) <= 4 * se


def test_bures_diagonal_and_entangled_upper_bound():
    rng = np.random.default_rng(3)
    m1, m2 = rng.normal(size=3), rng.normal(size=3)
    s1, s2 = rng.uniform(0.2, 2, 3), rng.uniform(0.2, 2, 3)
    diag = bures_squared(m1, np.diag(s1**2), m2, np.diag(s2**2))
    assert diag == pytest.approx(float(separable_cost(m1, s1, m2, s2, np.ones(3), 2.0)), rel=1e-12)
    assert entangled_squared_cost(m1, np.diag(s1**2), m2, np.diag(s2**2)) == pytest.approx(diag, rel=1e-12)
    S1, S2 = _random_spd(rng, 3), _random_spd(rng, 3)
    gap = entangled_squared_cost(m1, S1, m2, S2) - bures_squared(m1, S1, m2, S2)
    assert gap > 1e-3  # non-commuting Cholesky factors: shared noise is only an upper bound
    # the shared-noise expectation is what sampling the entangled coupling gives
    L1, L2 = np.linalg.cholesky(S1), np.linalg.cholesky(S2)
    U = rng.standard_normal((200_000, 3))
    vals = (((m1 - m2) + U @ (L1 - L2).T) ** 2).sum(1)
    assert abs(vals.mean() - entangled_squared_cost(m1, S1, m2, S2)) <= 4 * vals.std() / math.sqrt(len(vals))
