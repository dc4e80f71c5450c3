"""Monte Carlo estimates of d_eps-bar by coupled rollouts (paper Alg. 1, unrolled).

The eps-bar operator is linear in d, so its fixed point is
``d_eps-bar(z, z') = E sum_t c^t G(z_t, a_t, z'_t, a'_t)`` over two rollouts from
z and z' whose actions and transitions share their noise at every step. The
estimator runs N such pairs of rollouts for H steps and averages the discounted
sums: unbiased for the H-step truncation, whose bias is in ``[0, tail]`` with
``tail`` a certified bound on the dropped terms (:func:`truncation_bound`), so it
is unbiased in the limit H -> infinity. The reported interval is
``[mean - z_q se, mean + z_q se + tail]`` (normal quantile z_q at the chosen
confidence), so it covers the infinite-horizon value at that level.

With ``coupling="independent"`` the same rollouts use independent noise: this
estimates the fixed point of the independent-sampling operator instead (e.g.
the paper's F-hat_PSM in expectation with ground ``policy``), which is not a
pseudometric (claim C8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_discrete_lyapunov
from scipy.special import ndtri

from ..errors import InputError
from . import exact
from .couplings import COUPLINGS, coupled_step
from .model import GROUNDS, GaussianMDP, LinearGaussianMDP

#: Target truncation bound when no horizon is given: an absolute bound on every pair's neglected tail (where no
#: bound is known, the horizon with c^H at most this).
DEFAULT_TAIL = 1e-3
#: Rollout pairs per state pair, and the confidence level of the interval, when not given.
DEFAULT_SAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
#: Rows of (pairs x samples) simulated at once.
CHUNK_ROWS = 200_000


@dataclass
class Estimate:
    """Monte Carlo estimates per pair with their uncertainty."""

    mean: np.ndarray  # average of the H-step discounted sums
    stderr: np.ndarray  # standard error of that average
    truncation: np.ndarray  # certified bound on the dropped tail (inf if unknown)
    lower: np.ndarray  # mean - z_q stderr
    upper: np.ndarray  # mean + z_q stderr + truncation
    samples: int
    horizon: int
    confidence: float
    coupling: str
    ground: str

    def to_json(self) -> dict:
        """Plain lists and numbers."""

        def clean(x):
            return [None if not math.isfinite(v) else float(v) for v in np.asarray(x, dtype=float)]

        return {
            "mean": clean(self.mean),
            "stderr": clean(self.stderr),
            "truncation": clean(self.truncation),
            "lower": clean(self.lower),
            "upper": clean(self.upper),
            "samples": self.samples,
            "horizon": self.horizon,
            "confidence": self.confidence,
            "coupling": self.coupling,
            "ground": self.ground,
        }


def truncation_bound(
    model: GaussianMDP, ground: str, z: np.ndarray, z2: np.ndarray, horizon: int, coupling: str = "entangled"
) -> np.ndarray:
    """Certified bound on ``sum_{t>=horizon} c^t E G_t`` per pair (inf where none is known).

    * unsquashed linear-Gaussian, entangled: the exact tail of :mod:`.exact`;
    * tanh-squashed linear-Gaussian, entangled, linear reward or policy ground:
      see :func:`squashed_contraction`;
    * any model whose ground is bounded by ``G_max``: ``c^H G_max / (1 - c)``.
    The smallest applicable bound is returned.
    """
    c = model.discount
    best = np.full(len(z), c**horizon * model.ground_bound(ground) / (1 - c) if c < 1 else math.inf)
    if not isinstance(model, LinearGaussianMDP) or coupling != "entangled":
        return best
    if not model.squash:
        return np.minimum(best, exact.tail_bound(model, ground, z, z2, horizon))
    terms = model.reward_terms
    if ground == "reward" and not terms.is_linear:
        return best
    L, root = squashed_contraction(model)
    if c * L >= 1:
        return best
    inv = np.linalg.inv(root)
    s = model.action_scale
    if ground == "reward":
        lip = np.linalg.norm(inv @ terms.state) + s * np.linalg.norm(inv @ model.K.T @ terms.action)
    else:
        lip = s * float(np.linalg.norm(model.K @ inv, axis=1).sum())
    start = np.linalg.norm((z - z2) @ root.T, axis=1)
    return np.minimum(best, (c * L) ** horizon * lip * start / (1 - c * L))


def squashed_contraction(model: LinearGaussianMDP) -> tuple[float, np.ndarray]:
    """``(L, R)`` with ``|R Delta_{t+1}| <= L |R Delta_t|`` for entangled pairs under a
    tanh-squashed policy, almost surely.

    With shared noise, ``a - a' = s (tanh(u) - tanh(u'))`` with ``u - u' = K Delta``, and
    by the mean value theorem ``a - a' = D K Delta`` for a diagonal D with entries in
    ``[0, s]``; so ``Delta_{t+1} = (A + B D K) Delta_t``. The induced norm is convex in D,
    so its largest value over the box of D is at a vertex. ``R`` is the best of a few
    candidate norm factors (identity, and the Lyapunov norms of the vertex matrices).
    """
    k = model.action_dim
    vertices = []
    for bits in range(2**k):
        d = np.array([(bits >> i) & 1 for i in range(k)], dtype=float) * model.action_scale
        vertices.append(model.A + (model.B * d) @ model.K)
    candidates = [np.eye(model.state_dim)]
    for V in vertices:
        if np.max(np.abs(np.linalg.eigvals(V))) < 1:
            P = solve_discrete_lyapunov(V.T, np.eye(model.state_dim))
            vals, vecs = np.linalg.eigh((P + P.T) / 2)
            candidates.append((vecs * np.sqrt(vals)) @ vecs.T)
    best = (math.inf, candidates[0])
    for R in candidates:
        Rinv = np.linalg.inv(R)
        L = max(np.linalg.norm(R @ V @ Rinv, 2) for V in vertices) * (1 + 1e-12)
        if L < best[0]:
            best = (L, R)
    return best


def choose_horizon(
    model: GaussianMDP,
    ground: str,
    z: np.ndarray,
    z2: np.ndarray,
    target: float,
    coupling: str = "entangled",
    cap: int = 10_000,
) -> int:
    """Smallest H whose truncation bound is at most ``target`` for every pair
    (or, when no bound is known, the H with ``c^H <= target``)."""
    c = model.discount
    if c == 0:
        return 1
    H = 1
    while H < cap:
        tail = truncation_bound(model, ground, z, z2, H, coupling)
        if np.all(np.isfinite(tail)) and np.all(tail <= target):
            return H
        if not np.all(np.isfinite(tail)) and c**H <= target:
            return H
        H = H + max(1, H // 4)
    return cap


def rollout_sums(
    model: GaussianMDP,
    z: np.ndarray,
    z2: np.ndarray,
    ground: str,
    horizon: int,
    samples: int,
    rng: np.random.Generator,
    coupling: str = "entangled",
) -> np.ndarray:
    """``sum_{t<H} c^t G_t`` for ``samples`` coupled rollout pairs from each ``(z[i], z2[i])``: (pairs, samples)."""
    P = len(z)
    out = np.zeros((P, samples))
    rows_per_pair = samples
    pairs_per_chunk = max(1, CHUNK_ROWS // max(rows_per_pair, 1))
    c = model.discount
    for start in range(0, P, pairs_per_chunk):
        stop = min(P, start + pairs_per_chunk)
        x = np.repeat(z[start:stop], samples, axis=0)
        y = np.repeat(z2[start:stop], samples, axis=0)
        total = np.zeros(len(x))
        ct = 1.0
        for _ in range(horizon):
            a, b, xp, yp = coupled_step(model, x, y, rng, coupling)
            total += ct * model.ground(ground, x, a, y, b)
            x, y, ct = xp, yp, ct * c
        out[start:stop] = total.reshape(stop - start, samples)
    return out


def estimate_distance(
    model: GaussianMDP,
    z,
    z2,
    ground: str = "reward",
    samples: int = DEFAULT_SAMPLES,
    horizon: int | None = None,
    seed: int | np.random.Generator | None = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    coupling: str = "entangled",
    tail: float = DEFAULT_TAIL,
) -> Estimate:
    """Monte Carlo estimate of d_eps-bar(z_i, z2_i) per row (``coupling="entangled"``),
    or of the independent-sampling fixed point (``coupling="independent"``).

    ``horizon`` defaults to the smallest H whose certified truncation bound is at
    most ``tail``; ``seed`` fixes the noise (an int, a Generator, or None).
    """
    if ground not in GROUNDS:
        raise InputError(f"unknown ground metric '{ground}' for a Gaussian MDP (use reward or policy)", param="ground")
    if coupling not in COUPLINGS:
        raise InputError(f"unknown coupling '{coupling}' (choose from {', '.join(COUPLINGS)})", param="coupling")
    if not (isinstance(samples, int | np.integer) and samples >= 2):
        raise InputError(f"expected an integer >= 2, got {samples}", param="samples")
    if not 0 < confidence < 1:
        raise InputError(f"expected a number in (0, 1), got {confidence}", param="confidence")
    z, z2 = model.states(z, "z"), model.states(z2, "z'")
    if z.shape != z2.shape:
        raise InputError(f"z, z': expected the same number of states, got {z.shape[0]} and {z2.shape[0]}")
    if horizon is None:
        horizon = choose_horizon(model, ground, z, z2, tail, coupling)
    if not (isinstance(horizon, int | np.integer) and horizon >= 1):
        raise InputError(f"expected an integer >= 1, got {horizon}", param="horizon")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    sums = rollout_sums(model, z, z2, ground, int(horizon), int(samples), rng, coupling)
    mean = sums.mean(axis=1)
    se = sums.std(axis=1, ddof=1) / math.sqrt(samples)
    trunc = truncation_bound(model, ground, z, z2, int(horizon), coupling)
    q = float(ndtri(0.5 + confidence / 2))
    return Estimate(
        mean,
        se,
        trunc,
        mean - q * se,
        mean + q * se + trunc,
        int(samples),
        int(horizon),
        float(confidence),
        coupling,
        ground,
    )
