"""Exact fixed points on linear-Gaussian MDPs, as series summed to a certified tail.

Setting (unsquashed policy): ``a = K z + s_pi xi``, ``z+ = A z + B a + s_P eta``,
``M = A + B K``, ``Sigma1 = B diag(s_pi^2) B' + diag(s_P^2)`` the covariance of
``z+`` given z under the policy.

**Entangled pairs are deterministic in their difference.** Sharing ``xi`` and
``eta`` gives ``a - a' = K Delta`` and ``Delta_{t+1} = M Delta_t``, so
``Delta_t = M^t (z - z')`` whatever the noise. Unrolling the eps-bar operator
(linear in d) gives ``d_eps-bar(z, z') = sum_t c^t E G_t`` along entangled rollouts:

* ground ``policy`` (abar(z) = K z): ``G_t = |K M^t Delta|_1``, deterministic;
* ground ``reward`` with a linear reward ``r_z.z + r_a.a``: ``G_t = |w . M^t Delta|``
  with ``w = r_z + K' r_a``, deterministic;
* ground ``reward`` with a quadratic reward: ``x_t = [z_t; a_t]`` is Gaussian with
  a mean and covariance propagated exactly, and the reward difference is linear in
  ``x_t`` given the deterministic offset ``e_t = [Delta_t; K Delta_t]``, so
  ``E G_t`` is a folded-normal mean.

**The same series is d_pi, d_psm and d_eps when G_t is deterministic.** Let
``f(u) = sum_t c^t g(M^t u)``, a seminorm (convex, translation invariant). Under
``P_pi(z) = N(M z, Sigma1)`` (and ``P(z, a) = N(A z + B a, diag(s_P^2))``) the two
next-state laws differ by a translation, so the shift coupling costs ``f(M Delta)``
and no coupling costs less (Jensen: ``E f(X - Y) >= f(E[X - Y])``). Hence ``f``
satisfies the pi / psm / eps fixed-point equations: with a linear reward
``d_pi = d_eps(reward) = d_eps-bar(reward)``, and ``d_psm = d_eps(policy) =
d_eps-bar(policy)``. It is also the limit of value iteration from d = 0 (the
least fixed point, the one the bisimulation theory takes): by induction every
iterate is the seminorm ``sum_{t<k} c^t g(M^t u)``, to which the same Jensen step
applies. With a quadratic reward d is not translation invariant, and only
eps-bar has an exact series here. The grid bridge (:mod:`.discretize`) checks
d_pi by an independent route: the finite W1 solvers converge to this series.

**Certified tails.** With ``B_M = S_L / (1 - c^L |M^L|)`` where
``S_L = sum_{r<L} c^r |M^r|`` and L is the first power with ``c^L |M^L| <= 1/2``
(spectral norms; exists iff ``c rho(M) < 1``), submultiplicativity gives
``sum_{j>=0} c^j |M^j u| <= B_M |u|``, so after N terms the rest of a linear or
policy series is at most ``c^N |g| |M^N Delta| B_M`` (|g| the operator norm of
the ground). The quadratic series requires ``rho(M) < 1`` and bounds the rest by
``c^N (a1 / (1 - c theta) + a2 / (1 - c theta^2))`` (see :func:`_quadratic_tail`).
Series stop when the tail is below ``rtol`` times the partial sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.linalg import solve_discrete_lyapunov

from ..errors import InputError
from .closed_forms import folded_normal_mean
from .model import GaussianMDP, LinearGaussianMDP

#: Metrics with a series form on (some) linear-Gaussian MDPs.
EXACT_METRICS = ("pi", "psm", "eps", "eps-bar")
#: Relative size of the certified tail at which a series stops.
RTOL = 1e-15
MAX_TERMS = 1_000_000


@dataclass
class Series:
    """Exact values per pair with a certified bound on the neglected tail."""

    values: np.ndarray
    error: np.ndarray
    terms: int
    form: str  # "policy", "linear" or "quadratic"


def exact_form(model: GaussianMDP, metric: str, ground: str = "reward") -> str:
    """Which series gives ``metric`` (with ``ground``) on ``model``: ``"policy"``,
    ``"linear"`` or ``"quadratic"``; raises :class:`InputError` saying why when
    there is no exact form."""
    if metric not in EXACT_METRICS:
        raise InputError(
            f"'{metric}' has no exact form on Gaussian MDPs (exact: {', '.join(EXACT_METRICS)}; Monte Carlo: eps-bar)",
            param="metric",
        )
    if not isinstance(model, LinearGaussianMDP):
        raise InputError(
            f"{metric}: exact fixed points are known only for linear-Gaussian MDPs; "
            "use the Monte Carlo estimator (eps-bar)",
            param="metric",
        )
    if model.squash:
        raise InputError(
            f"{metric}: no exact form with a tanh-squashed policy (entangled pairs no "
            "longer move by a deterministic difference); use the Monte Carlo estimator (eps-bar)",
            param="metric",
        )
    if metric == "psm" or (metric in ("eps", "eps-bar") and ground == "policy"):
        return "policy"
    if ground not in ("reward", "policy"):
        raise InputError(f"unknown ground metric '{ground}' for a Gaussian MDP (use reward or policy)", param="ground")
    if model.reward_terms.is_linear:
        return "linear"
    if metric == "eps-bar":
        return "quadratic"
    raise InputError(
        f"{metric}: no exact form with a quadratic reward (the fixed point is not "
        "translation invariant, so the shift coupling need not be optimal); eps-bar has one",
        param="metric",
    )


def _check_stable(model: LinearGaussianMDP, strict: bool) -> None:
    c, rho = model.discount, model.spectral_radius
    if strict and rho >= 1:
        raise InputError(
            f"A, B, K: the closed loop A + BK has spectral radius {rho:.6g} >= 1; the quadratic-reward "
            "series needs a stable closed loop"
        )
    if c * rho >= 1:
        raise InputError(
            f"A, B, K, discount: c * rho(A + BK) = {c * rho:.6g} >= 1, so the series diverges "
            "(the distances are infinite for some pairs)"
        )


def geometric_norm_bound(M: np.ndarray, c: float, max_power: int = 100_000) -> float:
    """A number ``B`` with ``sum_{j>=0} c^j |M^j u|_2 <= B |u|_2`` for every u
    (requires ``c rho(M) < 1``); see the module docstring."""
    if c == 0:
        return 1.0
    S, P, ct = 0.0, np.eye(M.shape[0]), 1.0
    for _ in range(1, max_power + 1):
        S += ct * np.linalg.norm(P, 2)
        P, ct = P @ M, ct * c
        gamma = ct * np.linalg.norm(P, 2)
        if gamma <= 0.5:
            return S / (1.0 - gamma) * (1 + 1e-12)
    raise InputError(f"c * rho(M) is too close to 1 to bound the series (no power up to {max_power} contracts)")


def _decay(M: np.ndarray, max_power: int = 100_000) -> tuple[float, float]:
    """``(kappa, theta)`` with ``|M^j|_2 <= kappa theta^j`` for all j (rho(M) < 1)."""
    P, alpha = np.eye(M.shape[0]), 1.0
    for L in range(1, max_power + 1):
        P = P @ M
        norm = float(np.linalg.norm(P, 2))
        if norm <= 0.5:
            return 2.0 * alpha * (1 + 1e-12), 2.0 ** (-1.0 / L)
        alpha = max(alpha, norm)
    raise InputError(f"the closed loop decays too slowly to bound the series (|M^j| > 1/2 up to j = {max_power})")


def _pairs(model: GaussianMDP, z, z2) -> tuple[np.ndarray, np.ndarray]:
    z, z2 = model.states(z, "z"), model.states(z2, "z'")
    if z.shape != z2.shape:
        raise InputError(f"z, z': expected the same number of states, got {z.shape[0]} and {z2.shape[0]}")
    return z, z2


def _linear_ground(model: LinearGaussianMDP, form: str) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """``g(Delta)`` (rows) and its operator norm for the deterministic forms."""
    K = model.K
    if form == "policy":
        return (lambda D: np.abs(D @ K.T).sum(axis=1)), float(np.linalg.norm(K, axis=1).sum())
    w = model.reward_terms.state + K.T @ model.reward_terms.action
    return (lambda D: np.abs(D @ w)), float(np.linalg.norm(w))


def distance(
    model: GaussianMDP, metric: str, ground: str, z, z2, rtol: float = RTOL, terms: int | None = None
) -> Series:
    """Exact ``d_metric(z_i, z2_i)`` for each row, with a certified error bound.

    With ``terms`` the series is cut after exactly that many terms (the partial
    sum of a horizon; its ``error`` is then the certified tail).
    """
    form = exact_form(model, metric, ground)
    assert isinstance(model, LinearGaussianMDP)  # exact_form refuses the other models
    z, z2 = _pairs(model, z, z2)
    limit = MAX_TERMS if terms is None else int(terms)
    if terms is not None:
        rtol = -1.0  # never stop early
    if form == "quadratic":
        return _quadratic_series(model, z, z2, rtol, limit)
    _check_stable(model, strict=False)
    g, gnorm = _linear_ground(model, form)
    M, c = model.closed_loop, model.discount
    bound = gnorm * geometric_norm_bound(M, c)
    D = z - z2
    total = np.zeros(len(D))
    ct, terms = 1.0, 0
    count = 0
    while True:
        tail = ct * bound * np.linalg.norm(D, axis=1)
        if np.all(tail <= rtol * total) or count >= limit:
            break
        total += ct * g(D)
        D = D @ M.T
        ct *= c
        count += 1
    return Series(total, tail + 4 * count * np.finfo(float).eps * total, count, form)


@dataclass
class _QuadraticParts:
    M: np.ndarray
    E: np.ndarray  # [I; K]
    H: np.ndarray
    h: np.ndarray
    kappa: float
    theta: float
    root_cov: float  # sqrt(lambda_max) of the stationary covariance of x = [z; a]


def _quadratic_parts(model: LinearGaussianMDP) -> _QuadraticParts:
    _check_stable(model, strict=True)
    M = model.closed_loop
    kappa, theta = _decay(M)
    S_inf = solve_discrete_lyapunov(M, model.step_covariance)
    E = np.vstack([np.eye(model.state_dim), model.K])
    C_inf = E @ S_inf @ E.T
    C_inf[model.state_dim :, model.state_dim :] += np.diag(model.policy_std_vector**2)
    lam = float(np.max(np.linalg.eigvalsh((C_inf + C_inf.T) / 2)))
    return _QuadraticParts(
        M, E, model.reward_terms.H, model.reward_terms.h, kappa, theta, math.sqrt(max(lam, 0.0)) * (1 + 1e-9) + 1e-300
    )


def _quadratic_tail(parts: _QuadraticParts, c: float, mu: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Bound on ``sum_{j>=0} c^j E|R(x'_j) - R(x_j)|`` from a state whose first chain has mean ``mu``
    and whose entangled difference is ``D`` (rows).

    With ``|M^j| <= kappa theta^j``, ``|e_j| <= |E| kappa theta^j |D|``, ``|E x_j| <= |E| kappa theta^j |mu|``
    and ``cov(x_j) <= C_inf``: ``E|R'-R| <= |mean| + sd <= a1 theta^j + a2 theta^2j`` with
    ``a1 = |E| kappa |D| (|h| + 2 |H| sqrt(lambda_max C_inf))``,
    ``a2 = |H| (|E| kappa)^2 |D| (|D| + 2 |mu|)``.
    """
    nE = np.linalg.norm(parts.E, 2) * parts.kappa
    nH, nh = np.linalg.norm(parts.H, 2), np.linalg.norm(parts.h)
    d, m = np.linalg.norm(D, axis=1), np.linalg.norm(mu, axis=1)
    a1 = nE * d * (nh + 2 * nH * parts.root_cov)
    a2 = nH * nE**2 * d * (d + 2 * m)
    return a1 / (1 - c * parts.theta) + a2 / (1 - c * parts.theta**2)


def _quadratic_series(
    model: LinearGaussianMDP, z: np.ndarray, z2: np.ndarray, rtol: float, limit: int = MAX_TERMS
) -> Series:
    """``sum_t c^t E|R(z'_t, a'_t) - R(z_t, a_t)|`` along entangled rollouts (quadratic reward)."""
    parts = _quadratic_parts(model)
    c, n = model.discount, model.state_dim
    M, E, H, h = parts.M, parts.E, parts.H, parts.h
    Spi = np.diag(model.policy_std_vector**2)
    mu, D = z.copy(), z2 - z  # mean of the first chain's state; deterministic difference
    Sigma = np.zeros((n, n))
    total = np.zeros(len(z))
    ct, terms = 1.0, 0
    while True:
        tail = ct * _quadratic_tail(parts, c, mu, D)
        if np.all(tail <= rtol * total) or terms >= limit:
            break
        C = E @ Sigma @ E.T
        C[n:, n:] += Spi
        e, mx = D @ E.T, mu @ E.T
        He = e @ H
        mean = np.einsum("bi,bi->b", He, e) + 2 * np.einsum("bi,bi->b", He, mx) + e @ h
        var = 4 * np.einsum("bi,ij,bj->b", He, C, He)
        total += ct * folded_normal_mean(mean, np.sqrt(np.clip(var, 0, None)))
        mu, D = mu @ M.T, D @ M.T
        Sigma = M @ Sigma @ M.T + model.step_covariance
        ct *= c
        terms += 1
    return Series(total, tail + 8 * terms * np.finfo(float).eps * total, terms, "quadratic")


def tail_bound(model: LinearGaussianMDP, ground: str, z, z2, horizon: int) -> np.ndarray:
    """Certified bound on ``sum_{t>=horizon} c^t E G_t`` along entangled rollouts
    from each pair (unsquashed linear-Gaussian models): the truncation error of a
    Monte Carlo estimate that stops after ``horizon`` steps."""
    form = exact_form(model, "eps-bar", ground)
    z, z2 = _pairs(model, z, z2)
    c, M = model.discount, model.closed_loop
    Mh = np.linalg.matrix_power(M, int(horizon))
    D = (z2 - z) @ Mh.T
    if form == "quadratic":
        parts = _quadratic_parts(model)
        return c**horizon * _quadratic_tail(parts, c, z @ Mh.T, D)
    _check_stable(model, strict=False)
    _, gnorm = _linear_ground(model, form)
    return c**horizon * gnorm * geometric_norm_bound(M, c) * np.linalg.norm(D, axis=1)


def independent_policy_series(model: LinearGaussianMDP, z, z2, rtol: float = 1e-12) -> Series:
    """Fixed point of the sampled PSM operator (independent next states, paper's
    F-hat_PSM in expectation): ``sum_t c^t E|K (z_t - z'_t)|_1`` over independent
    rollouts, where ``z_t - z'_t ~ N(M^t Delta, 2 Sigma_t)`` and
    ``Sigma_{t+1} = M Sigma_t M' + Sigma1``. Positive on the diagonal as soon as
    ``K Sigma1 K' != 0`` (claim C8). Needs ``rho(M) < 1`` for its tail bound
    ``c^N (|g| B_M |M^N Delta| + sum_i sqrt(2 (K Sigma_inf K')_ii) / (1 - c))``."""
    exact_form(model, "psm", "policy")
    _check_stable(model, strict=True)
    z, z2 = _pairs(model, z, z2)
    M, c, K = model.closed_loop, model.discount, model.K
    S_inf = solve_discrete_lyapunov(M, model.step_covariance)
    noise_tail = float(np.sqrt(2 * np.clip(np.diag(K @ S_inf @ K.T), 0, None)).sum()) / (1 - c)
    bound = float(np.linalg.norm(K, axis=1).sum()) * geometric_norm_bound(M, c)
    D = z - z2
    Sigma = np.zeros((model.state_dim,) * 2)
    total = np.zeros(len(D))
    ct, terms = 1.0, 0
    while True:
        tail = ct * (bound * np.linalg.norm(D, axis=1) + noise_tail)
        if np.all(tail <= rtol * total) or terms >= MAX_TERMS:
            break
        sd = np.sqrt(2 * np.clip(np.diag(K @ Sigma @ K.T), 0, None))
        total += ct * folded_normal_mean(D @ K.T, sd).sum(axis=1)
        D, Sigma = D @ M.T, M @ Sigma @ M.T + model.step_covariance
        ct *= c
        terms += 1
    return Series(total, tail + 8 * terms * np.finfo(float).eps * total, terms, "independent")
