"""Closed forms for optimal transport between Gaussians (``docs/gaussian.md``).

* 1-D: the quantile coupling ``x = m1 + s1 Z``, ``y = m2 + s2 Z`` is optimal for
  every convex cost of ``x - y``, so ``W_p(N(m1,s1^2), N(m2,s2^2))^p =
  E|dm + ds Z|^p`` with ``dm = m1 - m2``, ``ds = s1 - s2``
  (:func:`abs_moment`; for p = 1 the folded-normal mean).
* Diagonal Gaussians and a separable cost ``sum_i w_ij |x_i - y_i|^p_j``: the
  optimum is the sum of the 1-D optima, attained by the coordinatewise quantile
  coupling, which is the entangled (shared-noise) coupling
  (:func:`separable_cost`).
* Full covariances, squared Euclidean cost (Bures):
  ``W2^2 = |dm|^2 + tr(S1 + S2 - 2 (S1^1/2 S2 S1^1/2)^1/2)``
  (:func:`bures_wasserstein`), attained by the linear map of
  :func:`gaussian_monge_map`. The entangled coupling of two Gaussians (the
  Rosenblatt chain rule, which for a Gaussian is its lower Cholesky factor)
  costs ``|dm|^2 + |L1 - L2|_F^2`` (:func:`entangled_squared_cost`), strictly
  more when the factors do not match up to the optimal rotation.
* :func:`wasserstein_to_discrete` gives ``W_p^p`` between a 1-D Gaussian and a
  discrete law exactly (integer p): the sampling error of an empirical measure
  and the quantisation error of a grid.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gamma, hyp1f1, ndtr, ndtri

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _normal_pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def folded_normal_mean(mean, std) -> np.ndarray:
    """``E|mean + std Z|`` for Z ~ N(0, 1), elementwise (std >= 0)."""
    mean = np.asarray(mean, dtype=np.float64)
    std = np.abs(np.asarray(std, dtype=np.float64))
    safe = np.where(std > 0, std, 1.0)
    r = mean / safe
    value = std * SQRT_2_OVER_PI * np.exp(-0.5 * r * r) + mean * (1.0 - 2.0 * ndtr(-r))
    return np.where(std > 0, value, np.abs(mean))


def abs_moment(mean, std, p: float = 1.0) -> np.ndarray:
    """``E|mean + std Z|^p`` for Z ~ N(0, 1) and p > 0, elementwise.

    p = 1: folded-normal mean; p = 2: ``mean^2 + std^2``; otherwise
    ``std^p 2^(p/2) Gamma((p+1)/2) / sqrt(pi) 1F1(-p/2; 1/2; -mean^2 / (2 std^2))``.
    """
    if not p > 0:
        raise ValueError(f"p: expected a positive number, got {p}")
    mean = np.asarray(mean, dtype=np.float64)
    std = np.abs(np.asarray(std, dtype=np.float64))
    if p == 1:
        return folded_normal_mean(mean, std)
    if p == 2:
        return mean * mean + std * std
    safe = np.where(std > 0, std, 1.0)
    value = (
        safe**p
        * 2 ** (p / 2)
        * gamma((p + 1) / 2)
        / math.sqrt(math.pi)
        * hyp1f1(-p / 2, 0.5, -mean * mean / (2 * safe * safe))
    )
    return np.where(std > 0, value, np.abs(mean) ** p)


def wasserstein_gaussian_1d(m1, s1, m2, s2, p: float = 1.0) -> np.ndarray:
    """``W_p(N(m1, s1^2), N(m2, s2^2))`` (not its p-th power), elementwise, p >= 1."""
    if p < 1:
        raise ValueError(f"p: W_p needs p >= 1, got {p}")
    dm = np.asarray(m1, dtype=np.float64) - np.asarray(m2, dtype=np.float64)
    ds = np.abs(np.asarray(s1, dtype=np.float64)) - np.abs(np.asarray(s2, dtype=np.float64))
    return abs_moment(dm, ds, p) ** (1.0 / p)


def separable_cost(m1, s1, m2, s2, weights, powers=1.0) -> np.ndarray:
    """Optimal (= entangled) expected cost between diagonal Gaussians for
    ``d(x, y) = sum_i sum_j weights[i, j] |x_i - y_i|^powers[j]``.

    ``m1, s1, m2, s2`` are (..., n) means and standard deviations; ``weights`` is
    (n,) with a scalar ``powers``, or (n, J) with ``powers`` of length J. Valid as
    the optimum for convex terms (all powers >= 1, weights >= 0); for any powers
    it is the expectation under the shared-noise coupling.
    """
    m1, s1, m2, s2 = (np.asarray(x, dtype=np.float64) for x in (m1, s1, m2, s2))
    w = np.asarray(weights, dtype=np.float64)
    ps = np.atleast_1d(np.asarray(powers, dtype=np.float64))
    if w.ndim == 1:
        w = w[:, None]
    if w.shape != (m1.shape[-1], ps.size):
        raise ValueError(f"weights: expected shape (n, J) = {(m1.shape[-1], ps.size)}, got {w.shape}")
    if np.any(w < 0):
        raise ValueError("weights: must be non-negative")
    dm, ds = m1 - m2, np.abs(s1) - np.abs(s2)
    total = np.zeros(np.broadcast(dm, ds).shape[:-1])
    for j, p in enumerate(ps):
        total = total + (abs_moment(dm, ds, float(p)) * w[:, j]).sum(axis=-1)
    return total


def _psd_sqrt(S: np.ndarray) -> np.ndarray:
    """Symmetric square root of a symmetric positive semi-definite matrix."""
    vals, vecs = np.linalg.eigh((S + S.T) / 2)
    return (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T


def bures_squared(m1, S1, m2, S2) -> float:
    """``W2^2`` between N(m1, S1) and N(m2, S2) for the squared Euclidean cost."""
    m1, m2 = np.asarray(m1, dtype=np.float64), np.asarray(m2, dtype=np.float64)
    S1, S2 = np.asarray(S1, dtype=np.float64), np.asarray(S2, dtype=np.float64)
    r1 = _psd_sqrt(S1)
    cross = _psd_sqrt(r1 @ S2 @ r1)
    value = float(np.sum((m1 - m2) ** 2) + np.trace(S1) + np.trace(S2) - 2.0 * np.trace(cross))
    return max(value, 0.0)


def bures_wasserstein(m1, S1, m2, S2) -> float:
    """``W2`` between N(m1, S1) and N(m2, S2) (Euclidean ground, Bures formula)."""
    return math.sqrt(bures_squared(m1, S1, m2, S2))


def gaussian_monge_map(m1, S1, m2, S2) -> tuple[np.ndarray, np.ndarray]:
    """The W2-optimal map ``T(x) = m2 + A (x - m1)`` from N(m1, S1) to N(m2, S2),
    ``A = S1^-1/2 (S1^1/2 S2 S1^1/2)^1/2 S1^-1/2`` (S1 positive definite).
    Returns ``(A, b)`` with ``T(x) = A x + b``."""
    S1, S2 = np.asarray(S1, dtype=np.float64), np.asarray(S2, dtype=np.float64)
    r1 = _psd_sqrt(S1)
    inv = np.linalg.inv(r1)
    A = inv @ _psd_sqrt(r1 @ S2 @ r1) @ inv
    A = (A + A.T) / 2
    return A, np.asarray(m2, dtype=np.float64) - A @ np.asarray(m1, dtype=np.float64)


def entangled_squared_cost(m1, S1, m2, S2) -> float:
    """``E|x - y|^2`` under the entangled coupling ``x = m1 + L1 U``, ``y = m2 + L2 U``
    (L the lower Cholesky factors: the Gaussian Rosenblatt map): ``|dm|^2 + |L1 - L2|_F^2``.
    Equals :func:`bures_squared` when S1, S2 are diagonal; larger in general."""
    L1 = np.linalg.cholesky(np.asarray(S1, dtype=np.float64))
    L2 = np.linalg.cholesky(np.asarray(S2, dtype=np.float64))
    dm = np.asarray(m1, dtype=np.float64) - np.asarray(m2, dtype=np.float64)
    return float(np.sum(dm**2) + np.sum((L1 - L2) ** 2))


# ------------------------------------------------- Gaussian vs discrete law
def _partial_moments(a: np.ndarray, b: np.ndarray, order: int) -> list[np.ndarray]:
    """``M_j = int_a^b t^j phi(t) dt`` for j = 0..order (a, b may be infinite)."""

    def tail(x, j):  # x^j phi(x), 0 at +-inf
        finite = np.isfinite(x)
        xs = np.where(finite, x, 0.0)
        return np.where(finite, xs**j * _normal_pdf(xs), 0.0)

    M = [ndtr(b) - ndtr(a), tail(a, 0) - tail(b, 0)]
    for j in range(2, order + 1):
        M.append((j - 1) * M[j - 2] + tail(a, j - 1) - tail(b, j - 1))
    return M[: order + 1]


def _power_integral(lo: np.ndarray, hi: np.ndarray, tau: np.ndarray, p: int) -> np.ndarray:
    """``int_lo^hi (t - tau)^p phi(t) dt`` for lo <= hi, by the binomial expansion."""
    M = _partial_moments(lo, hi, p)
    total = np.zeros(np.broadcast(lo, tau).shape)
    for j in range(p + 1):
        total = total + math.comb(p, j) * M[j] * (-tau) ** (p - j)
    return total


def wasserstein_to_discrete(mean: float, std: float, atoms, weights=None, p: int = 1) -> float:
    """Exact ``W_p(N(mean, std^2), sum_i weights_i delta_atoms_i)^p`` for integer p >= 1.

    The optimal coupling in 1-D is the quantile coupling, so the cost is
    ``sum_i int over the i-th quantile cell |atom_i - y|^p dN(y)``, integrated
    in closed form with partial moments of the normal law. With ``weights``
    omitted the law is the empirical measure of ``atoms``.
    """
    if int(p) != p or p < 1:
        raise ValueError(f"p: expected an integer >= 1, got {p}")
    p = int(p)
    x = np.asarray(atoms, dtype=np.float64).ravel()
    w = np.full(x.size, 1.0 / x.size) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    if std <= 0:
        return float(np.sum(w * np.abs(x - mean) ** p))
    c = np.concatenate([[0.0], np.cumsum(w)])
    c = np.clip(c / c[-1], 0.0, 1.0)
    q = ndtri(c)  # -inf at 0, +inf at 1
    lo, hi = q[:-1], q[1:]
    tau = (x - mean) / std
    # |t - tau|^p = (t - tau)^p above tau, (tau - t)^p below it.
    above_lo = np.maximum(lo, tau)
    below_hi = np.minimum(hi, tau)
    up = np.where(hi > above_lo, _power_integral(above_lo, np.maximum(hi, above_lo), tau, p), 0.0)
    down = np.where(below_hi > lo, _power_integral(lo, np.maximum(below_hi, lo), tau, p), 0.0)
    down = down * (-1.0) ** p
    return float(std**p * np.sum(np.clip(up, 0, None) + np.clip(down, 0, None)))
