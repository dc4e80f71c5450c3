"""Claims C5, C6 and C8 checked in continuous space, on Gaussian MDPs and Gaussian laws.

Each family draws :class:`GaussianCase` objects from a seeded generator; each
check returns a :class:`~validation.claims.Outcome` (held, margin, detail) like
the finite checks, so the verify job reports them as extra rows:

* **C6** (``gaussian-linear``, ``gaussian-pendulum``): every sample of the
  entangled estimate ``G(z,a,z,a') + c d(z+, z'+)`` at identical states is 0,
  along whole rollouts (d = the l1 distance on states); independent noise is
  shown positive for contrast.
* **C8** (same families): the sampled DBC estimate
  ``|R(z,a) - R(z,a')| + c W2(P(z,a), P(z,a'))`` (independent actions,
  Euclidean W2 of the diagonal Gaussians, as DBC computes it) and the sampled
  PSM estimate ``|abar(z) - abar(z)|_1 + c |z+ - z'+|_1`` (independent next
  states) have positive means at identical states (every sample is >= 0, so a
  positive sample mean shows a positive expectation; 99.9% lower confidence
  bounds are reported too). On unsquashed linear models the exact fixed point
  of the sampled PSM operator on the diagonal must be positive as well.
* **C5, tight** (``gaussian-diagonal``): transition laws of the heteroscedastic
  pendulum (diagonal Gaussians with different standard deviations) and a random
  separable convex cost ``sum_ij w_ij |x_i - y_i|^p_j``. POT's exact LP on
  product quantile quantisations of the two laws must cost exactly what the
  entangled coupling of the quantised laws costs, and the closed form (the sum
  of 1-D optima) must equal a Monte Carlo average over shared noise.
* **C5, hypotheses fail** (``gaussian-correlated``: full covariances, squared
  Euclidean cost, so coordinate independence fails; ``gaussian-euclidean``:
  diagonal laws, Euclidean cost, so d is not separable): the gap between the
  entangled expectation and W is measured: in closed form (Bures against the
  Cholesky coupling) for the first; for the second on the quantised laws (exact
  LP) and in the continuum, where a genuine coupling of the Gaussians glued
  from the LP plan gives an upper bound on W and the gap is reported with a
  99.9% lower confidence bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtri

from bisimkit.couplings import load_pot
from bisimkit.gaussian.closed_forms import bures_squared, entangled_squared_cost, separable_cost
from bisimkit.gaussian.couplings import coupled_step
from bisimkit.gaussian.exact import independent_policy_series
from bisimkit.gaussian.model import GaussianMDP, LinearGaussianMDP, PendulumMDP

from .claims import Claim, Outcome

#: Normal quantile of the one-sided 99.95% level: two-sided 99.9% intervals.
Z_999 = 3.29
#: Atoms per coordinate of the quantile quantisations.
ATOMS = 24


@dataclass
class GaussianCase:
    """One continuous-space case: a model, or a pair of Gaussian laws with a cost."""

    family: str
    model: GaussianMDP | None = None
    data: dict = field(default_factory=dict)
    seed: int = 0
    quick: bool = False
    note: str = ""

    @property
    def label(self) -> str:
        return (self.model.label if self.model is not None else self.family) + (f" ({self.note})" if self.note else "")

    def rng(self, stream: int = 0) -> np.random.Generator:
        """A generator for the check's own sampling (fixed per case)."""
        return np.random.default_rng([self.seed, stream])


# ------------------------------------------------------------------ models
def random_linear_model(rng: np.random.Generator) -> LinearGaussianMDP:
    """A random stable linear-Gaussian MDP: n in 1..3, k in 1..2, linear or quadratic
    reward, tanh squashing in a third of the cases."""
    n, k = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    while True:
        A = rng.normal(size=(n, n)) * 0.5
        B = rng.normal(size=(n, k)) * 0.7
        K = rng.normal(size=(k, n)) * 0.5
        rho = max(np.abs(np.linalg.eigvals(A + B @ K)))
        if 0.05 < rho < 0.95:
            break
    reward = {"state": rng.normal(size=n).tolist(), "action": rng.normal(size=k).tolist()}
    if rng.random() < 0.5:
        Q = rng.normal(size=(n, n))
        reward["state_quadratic"] = (-(Q @ Q.T) / n).tolist()
        reward["action_quadratic"] = (-np.eye(k) * rng.uniform(0.1, 1.0)).tolist()
    squash = bool(rng.random() < 1 / 3)
    return LinearGaussianMDP(
        A,
        B,
        K,
        rng.uniform(0.1, 0.6, k),
        rng.uniform(0.05, 0.4, n),
        reward,
        float(rng.choice([0.5, 0.8, 0.9])),
        squash=squash,
        action_scale=float(rng.uniform(0.5, 2.0)) if squash else 1.0,
        name=f"linear-gaussian[n={n}, k={k}"
        f"{', quadratic' if 'cross' in reward or 'state_quadratic' in reward else ''}"
        f"{', squashed' if squash else ''}]",
    )


def random_pendulum(rng: np.random.Generator) -> PendulumMDP:
    """A pendulum with random damping, gains and (heteroscedastic) noise levels."""
    return PendulumMDP(
        discount=float(rng.choice([0.8, 0.9])),
        damping=float(rng.uniform(0.1, 1.0)),
        gain_angle=float(rng.uniform(0.5, 3.0)),
        gain_velocity=float(rng.uniform(0.1, 1.0)),
        policy_noise=float(rng.uniform(0.2, 1.0)),
        angle_noise=float(rng.uniform(0.01, 0.1)),
        velocity_noise=float(rng.uniform(0.02, 0.2)),
        name="pendulum",
    )


def _model_case(family: str, make_model):
    def make(rng: np.random.Generator, quick: bool) -> GaussianCase:
        return GaussianCase(family, make_model(rng), seed=int(rng.integers(2**31)), quick=quick)

    return make


def _diagonal_case(rng: np.random.Generator, quick: bool) -> GaussianCase:
    """Two transition laws of a random pendulum at random (z, a), (z', a'), and a separable convex cost."""
    model = random_pendulum(rng)
    z = rng.uniform([-2.5, -3.0], [2.5, 3.0], size=(2, 2))
    a = model.act(z, rng.standard_normal((2, 1)))
    mean, std = model.transition_mean(z, a), model.transition_std(z, a)
    powers = np.array(sorted(rng.choice([1.0, 2.0, 3.0], size=2, replace=False)))
    weights = rng.uniform(0.1, 1.0, (2, 2))
    return GaussianCase(
        "gaussian-diagonal",
        model,
        {"m1": mean[0], "s1": std[0], "m2": mean[1], "s2": std[1], "weights": weights, "powers": powers},
        seed=int(rng.integers(2**31)),
        quick=quick,
        note=f"pendulum transitions, powers {powers.astype(int).tolist()}",
    )


def _random_spd(rng: np.random.Generator, n: int) -> np.ndarray:
    X = rng.normal(size=(n, n))
    return X @ X.T + 0.2 * np.eye(n)


def _correlated_case(rng: np.random.Generator, quick: bool) -> GaussianCase:
    n = int(rng.integers(2, 4))
    return GaussianCase(
        "gaussian-correlated",
        None,
        {"m1": rng.normal(size=n), "S1": _random_spd(rng, n), "m2": rng.normal(size=n), "S2": _random_spd(rng, n)},
        seed=int(rng.integers(2**31)),
        quick=quick,
        note=f"n={n}, full covariances",
    )


def _euclidean_case(rng: np.random.Generator, quick: bool) -> GaussianCase:
    s1, s2 = rng.uniform(0.2, 1.5, 2), rng.uniform(0.2, 1.5, 2)
    return GaussianCase(
        "gaussian-euclidean",
        None,
        {"m1": rng.normal(size=2) * 0.5, "s1": s1, "m2": rng.normal(size=2) * 0.5, "s2": s2},
        seed=int(rng.integers(2**31)),
        quick=quick,
        note="diagonal, Euclidean cost",
    )


@dataclass(frozen=True)
class GaussianFamily:
    """A named family of continuous-space cases; at most ``max_cases`` per run."""

    name: str
    description: str
    make: object  # (rng, quick) -> GaussianCase
    max_cases: int
    max_cases_quick: int


GAUSSIAN_FAMILIES: dict[str, GaussianFamily] = {
    f.name: f
    for f in [
        GaussianFamily(
            "gaussian-linear",
            "random stable linear-Gaussian MDPs (n <= 3, k <= 2), some squashed",
            _model_case("gaussian-linear", random_linear_model),
            40,
            4,
        ),
        GaussianFamily(
            "gaussian-pendulum",
            "pendulum, tanh-squashed torque, heteroscedastic noise",
            _model_case("gaussian-pendulum", random_pendulum),
            40,
            4,
        ),
        GaussianFamily(
            "gaussian-diagonal", "pendulum transition laws (diagonal), separable convex cost", _diagonal_case, 12, 3
        ),
        GaussianFamily(
            "gaussian-correlated", "full-covariance Gaussians, squared Euclidean cost", _correlated_case, 40, 4
        ),
        GaussianFamily(
            "gaussian-euclidean", "diagonal Gaussians, Euclidean (non-separable) cost", _euclidean_case, 8, 2
        ),
    ]
}


def gaussian_cases(name: str, cases: int, seed: int, quick: bool) -> list[GaussianCase]:
    """The seeded cases of one family (capped at the family's maximum)."""
    fam = GAUSSIAN_FAMILIES[name]
    count = min(cases, fam.max_cases_quick if quick else fam.max_cases)
    rng = np.random.default_rng([seed, 1000 + list(GAUSSIAN_FAMILIES).index(name)])
    return [fam.make(rng, quick) for _ in range(count)]


# ------------------------------------------------------------------ checks
def _states(case: GaussianCase, count: int) -> np.ndarray:
    model = case.model
    if isinstance(model, PendulumMDP):
        return case.rng(1).uniform([-3.0, -4.0], [3.0, 4.0], size=(count, 2))
    return case.rng(1).normal(size=(count, model.state_dim)) * 1.5


def check_c6_gaussian(case: GaussianCase) -> Outcome:
    """C6: entangled samples at (z, z) vanish at every step of every rollout."""
    model, c = case.model, case.model.discount
    states = _states(case, 16 if case.quick else 32)
    N, H = 32, 15
    rng = case.rng(2)
    worst, count, contrast = 0.0, 0, 0.0
    for ground in ("reward", "policy"):
        x = np.repeat(states, N, axis=0)
        y = x.copy()
        for _ in range(H):
            a, b, xp, yp = coupled_step(model, x, y, rng, "entangled")
            sample = model.ground(ground, x, a, y, b) + c * np.abs(xp - yp).sum(axis=1)
            worst = max(worst, float(np.max(np.abs(sample))))
            count += sample.size
            x, y = xp, yp
        a, b, xp, yp = coupled_step(model, np.repeat(states, N, 0), np.repeat(states, N, 0), rng, "independent")
        indep = model.ground(ground, np.repeat(states, N, 0), a, np.repeat(states, N, 0), b) + c * np.abs(xp - yp).sum(
            axis=1
        )
        contrast = max(contrast, float(indep.mean()))
    return Outcome(
        worst <= 1e-12,
        -worst,
        f"max |sample| = {worst:.3g} over {count} entangled samples; "
        f"independent noise: mean sample at (z, z) up to {contrast:.3g}",
    )


def check_c8_gaussian(case: GaussianCase) -> Outcome:
    """C8: the sampled DBC and PSM estimates are positive at identical states."""
    model, c = case.model, case.model.discount
    states = _states(case, 8 if case.quick else 16)
    N = 400
    rng = case.rng(3)
    x = np.repeat(states, N, axis=0)
    a, b, xp, yp = coupled_step(model, x, x, rng, "independent")
    # DBC: independent actions, then the closed-form W2 of the two diagonal Gaussian transition laws.
    m1, s1 = model.transition_mean(x, a), model.transition_std(x, a)
    m2, s2 = model.transition_mean(x, b), model.transition_std(x, b)
    w2 = np.sqrt(((m1 - m2) ** 2).sum(1) + ((s1 - s2) ** 2).sum(1))
    dbc = (np.abs(model.reward(x, a) - model.reward(x, b)) + c * w2).reshape(len(states), N)
    # PSM: the mean action term vanishes at (z, z); independent next states, d = l1.
    psm = (np.abs(model.mean_action(x) - model.mean_action(x)).sum(1) + c * np.abs(xp - yp).sum(1)).reshape(
        len(states), N
    )
    # Every sample is >= 0, so the expectation is positive as soon as the samples are (C8 asks E > 0);
    # the 99.9% lower confidence bounds show by how much.
    means = np.minimum(dbc.mean(1), psm.mean(1))
    lows = [v.mean(1) - Z_999 * v.std(1, ddof=1) / math.sqrt(N) for v in (dbc, psm)]
    margin = float(means.min())
    detail = (
        f"{len(states)} states: sampled DBC / PSM estimates at (z, z) >= {float(dbc.mean(1).min()):.3g} / "
        f"{float(psm.mean(1).min()):.3g} (99.9% lower bounds {float(lows[0].min()):.3g} / "
        f"{float(lows[1].min()):.3g})"
    )
    if isinstance(model, LinearGaussianMDP) and not model.squash:
        series = independent_policy_series(model, states[:1], states[:1])
        detail += f"; exact sampled-PSM fixed point d(z, z) = {series.values[0]:.4g}"
        margin = min(margin, float(series.values[0] - series.error[0]))
    return Outcome(margin > 1e-12, margin, detail)


def _quantile_atoms(mean: np.ndarray, std: np.ndarray, K: int) -> np.ndarray:
    """Product quantisation: K equal-mass atoms per coordinate (cell medians), all K^n
    combinations in C order, each of mass K^-n."""
    u = (np.arange(K) + 0.5) / K
    axes = [m + s * ndtri(u) for m, s in zip(mean, std)]
    grids = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def check_c5_tight_gaussian(case: GaussianCase) -> Outcome:
    """C5 in continuous space: separable convex cost, coordinate-independent laws: W = entangled."""
    ot = load_pot()  # POT takes about a second to import: only for the LP families

    d = case.data
    w, powers = d["weights"], d["powers"]
    K = ATOMS
    X, Y = _quantile_atoms(d["m1"], d["s1"], K), _quantile_atoms(d["m2"], d["s2"], K)

    def cost(P, Q):
        diff = np.abs(P[..., :] - Q[..., :])
        return sum((w[:, j] * diff**p).sum(axis=-1) for j, p in enumerate(powers))

    C = cost(X[:, None, :], Y[None, :, :])
    mass = np.full(len(X), 1.0 / len(X))
    lp = float(ot.emd2(mass, mass, C, numItermax=10_000_000))
    entangled_q = float(np.mean(cost(X, Y)))  # equal masses: the entangled coupling pairs equal quantile indices
    closed = float(separable_cost(d["m1"], d["s1"], d["m2"], d["s2"], w, powers))
    xi = case.rng(4).standard_normal((50_000, 2))
    mc = cost(d["m1"] + d["s1"] * xi, d["m2"] + d["s2"] * xi)
    se = float(mc.std(ddof=1) / math.sqrt(len(mc)))
    lp_gap = entangled_q - lp
    mc_off = abs(float(mc.mean()) - closed)
    held = abs(lp_gap) <= 1e-9 * (1 + entangled_q) and mc_off <= Z_999 * se
    margin = -max(abs(lp_gap), max(mc_off - Z_999 * se, 0.0))
    return Outcome(
        held,
        margin,
        f"quantised ({K}^2 atoms): LP {lp:.6g} vs entangled {entangled_q:.6g}; closed form {closed:.6g} "
        f"vs shared-noise Monte Carlo {float(mc.mean()):.6g} +- {se:.2g}",
    )


def check_c5_gap_correlated(case: GaussianCase) -> Outcome:
    """Correlated laws, squared Euclidean cost (separable convex): exact gap Cholesky - Bures."""
    d = case.data
    ent = entangled_squared_cost(d["m1"], d["S1"], d["m2"], d["S2"])
    w2 = bures_squared(d["m1"], d["S1"], d["m2"], d["S2"])
    gap = ent - w2
    return Outcome(
        gap <= 1e-9 * (1 + ent),
        -gap,
        f"entangled (Cholesky shared noise) {ent:.6g} vs W2^2 (Bures) {w2:.6g}: gap {gap:.3g}",
    )


def check_c5_gap_euclidean(case: GaussianCase) -> Outcome:
    """Diagonal laws, Euclidean cost (not separable): measured gap, exact on the quantised laws
    and as a 99.9% lower confidence bound in the continuum."""
    ot = load_pot()  # POT takes about a second to import: only for the LP families

    d = case.data
    m1, s1, m2, s2 = d["m1"], d["s1"], d["m2"], d["s2"]
    K = ATOMS
    X, Y = _quantile_atoms(m1, s1, K), _quantile_atoms(m2, s2, K)
    mass = np.full(len(X), 1.0 / len(X))
    plan = ot.emd(mass, mass, ot.dist(X, Y, metric="euclidean"), numItermax=10_000_000)
    lp = float(np.sum(plan * ot.dist(X, Y, metric="euclidean")))
    gap_q = float(np.mean(np.linalg.norm(X - Y, axis=1))) - lp
    # Continuum: x ~ P; the entangled partner m2 + s2 (x - m1) / s1, and a partner from the
    # coupling glued from the plan: x's cell -> a cell of Y drawn from the plan -> the point of that
    # cell at x's relative position within its own cell.
    rng = case.rng(5)
    N = 100_000
    u = rng.random((N, 2))
    x = m1 + s1 * ndtri(u)
    y_ent = m2 + s2 * ndtri(u)
    cell = np.minimum((u * K).astype(int), K - 1)
    row = cell[:, 0] * K + cell[:, 1]
    # Every row of the plan has mass 1 / len(X): invert the flat cumulative mass at (row + r) / len(X).
    flat = np.cumsum(plan.ravel())
    idx = np.searchsorted(flat, (row + rng.random(N)) / len(X))
    idx = np.clip(idx, row * len(Y), row * len(Y) + len(Y) - 1)
    target = idx - row * len(Y)
    tcell = np.stack(np.unravel_index(target, (K, K)), axis=1)
    # Keep x's position within its cell (uniform and independent of the cells), so y ~ Q exactly.
    v = (tcell + (u * K - cell)) / K
    y_glued = m2 + s2 * ndtri(np.clip(v, 1e-300, 1 - 1e-16))
    diff = np.linalg.norm(x - y_ent, axis=1) - np.linalg.norm(x - y_glued, axis=1)
    gap = float(diff.mean())
    low = gap - Z_999 * float(diff.std(ddof=1)) / math.sqrt(N)
    return Outcome(
        low <= 0,
        -gap,
        f"quantised ({K}^2 atoms): entangled - LP = {gap_q:.3g}; continuum: entangled - (a glued "
        f"coupling's cost >= W) = {gap:.3g}, 99.9% lower bound {low:.3g}",
    )


GAUSSIAN_CLAIMS: list[Claim] = [
    Claim(
        "C5",
        "continuous: coordinate-independent Gaussian transitions and separable convex d: W = entangled expectation",
        "Thm 4.5",
        check_c5_tight_gaussian,
        ("gaussian-diagonal",),
        reading="continuous",
    ),
    Claim(
        "C5",
        "continuous: gap entangled - W when coordinate independence or separability fails",
        "Thm 4.5 (converse, not asserted)",
        check_c5_gap_correlated,
        ("gaussian-correlated",),
        asserted=False,
        expect="gap",
        reading="continuous, hypotheses fail",
    ),
    Claim(
        "C5",
        "continuous: gap entangled - W when coordinate independence or separability fails",
        "Thm 4.5 (converse, not asserted)",
        check_c5_gap_euclidean,
        ("gaussian-euclidean",),
        asserted=False,
        expect="gap",
        reading="continuous, hypotheses fail",
    ),
    Claim(
        "C6",
        "continuous: every entangled sample at (z, z) is 0 along rollouts",
        "Eq. 12",
        check_c6_gaussian,
        ("gaussian-linear", "gaussian-pendulum"),
        reading="continuous",
    ),
    Claim(
        "C8",
        "continuous: sampled DBC and PSM estimates are positive at (z, z)",
        "Sec. 4",
        check_c8_gaussian,
        ("gaussian-linear", "gaussian-pendulum"),
        reading="continuous",
    ),
]
