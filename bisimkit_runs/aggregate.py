"""Aggregate estimators over runs and tasks, with stratified-bootstrap confidence intervals.

The estimators of Agarwal et al., "Deep Reinforcement Learning at the Edge of the
Statistical Precipice" (NeurIPS 2021), as its library rliable computes them,
written with numpy alone (rliable 1.2.0 imports only with pandas < 3, through its
dependency arch). A score matrix ``x`` is ``(runs, tasks)``: ``x[n, m]`` is the
normalised score of run ``n`` on task ``m`` (:func:`normalise`), every task with
the same number of runs. Every estimator also takes a stack ``(..., runs, tasks)``
and returns one value per leading index, which is how the bootstrap evaluates all
its replications at once.

* mean: ``(1 / (N M)) sum_{n, m} x[n, m]``, the mean over tasks of the per-task means.
* median: the median over tasks of the per-task means ``(1 / N) sum_n x[n, m]``.
* interquartile mean (IQM): the mean of the middle half of all ``N M`` scores:
  sort them, drop ``floor(N M / 4)`` from each end, average the rest (scipy's
  ``trim_mean(x, 0.25)``, as rliable).
* optimality gap at ``gamma`` (default 1, a normalised score at the task's upper
  bound): ``gamma - (1 / (N M)) sum_{n, m} min(x[n, m], gamma)``, how far below
  ``gamma`` the runs fall on average; lower is better.
* probability of improvement of X over Y: ``(1 / M) sum_m P(X_m > Y_m)`` with
  ``P(X_m > Y_m) = (1 / (N_x N_y)) sum_{i, j} ([x_im > y_jm] + [x_im = y_jm] / 2)``,
  the Mann-Whitney U statistic of task ``m`` over the number of pairs; X and Y may
  have different numbers of runs.
* score distribution (the performance profile): ``F(tau) = (1 / (N M)) sum_{n, m}
  [x[n, m] > tau]``, the fraction of runs scoring above ``tau``.

**Stratified bootstrap** (rliable's ``StratifiedBootstrap``): a replication draws,
for every task independently, ``N`` of that task's runs with replacement
(``indices[n, m]`` uniform in ``0..N-1``, the resampled matrix ``x[indices[n, m],
m]``) and evaluates the estimator on it; two score matrices (probability of
improvement) are resampled independently, X's indices first. The 95% interval is
the percentile interval: the 2.5th and 97.5th percentiles of the replications'
values (numpy's linear interpolation, as arch's ``conf_int(method='percentile')``).

``rng`` is a :class:`numpy.random.Generator` (the default, seeded with 0, so a
table is reproducible) or a legacy :class:`numpy.random.RandomState`, which draws
one ``randint(0, N, (N, M))`` per replication: rliable's draw, so with the global
seed rliable used the intervals equal rliable's exactly (``tests/test_aggregate.py``
checks this against numbers rliable 1.2.0 printed, ``tests/make_rliable_reference.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bisimkit.errors import InputError

#: The aggregate estimators of :func:`interval_estimates`, in the order of rliable's examples.
ESTIMATORS = ("median", "iqm", "mean", "optimality_gap")
#: How the estimators are named in tables.
ESTIMATOR_LABEL = {"median": "Median", "iqm": "IQM", "mean": "Mean", "optimality_gap": "Optimality gap"}
#: Replications per interval by default.
DEFAULT_REPS = 10_000
#: The confidence level of every interval (the tables and figures label them with it).
DEFAULT_CONFIDENCE = 0.95

Rng = np.random.Generator | np.random.RandomState


def normalise(raw, low: float, high: float) -> np.ndarray:
    """Scores rescaled so that ``low`` maps to 0 and ``high`` to 1: ``(raw - low) / (high - low)``."""
    if not high > low:
        raise InputError(f"bounds: the upper bound {high} is not above the lower bound {low}")
    return (np.asarray(raw, dtype=float) - low) / (high - low)


# ------------------------------------------------------------------ point estimates
def aggregate_mean(x: np.ndarray) -> np.ndarray:
    """Mean of the per-task means (over the last two axes, runs and tasks)."""
    return np.asarray(x, dtype=float).mean(axis=-2).mean(axis=-1)


def aggregate_median(x: np.ndarray) -> np.ndarray:
    """Median over tasks of the per-task means."""
    return np.median(np.asarray(x, dtype=float).mean(axis=-2), axis=-1)


def aggregate_iqm(x: np.ndarray) -> np.ndarray:
    """Interquartile mean of all runs and tasks: the 25% trimmed mean (``scipy.stats.trim_mean(x, 0.25)``)."""
    x = np.asarray(x, dtype=float)
    flat = np.sort(x.reshape(*x.shape[:-2], -1), axis=-1)
    n = flat.shape[-1]
    cut = int(0.25 * n)
    return flat[..., cut : n - cut].mean(axis=-1)


def optimality_gap(x: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """``gamma`` minus the mean of the scores clipped at ``gamma``."""
    x = np.asarray(x, dtype=float)
    return gamma - np.minimum(x, gamma).reshape(*x.shape[:-2], -1).mean(axis=-1)


POINT_ESTIMATORS = {
    "median": aggregate_median,
    "iqm": aggregate_iqm,
    "mean": aggregate_mean,
    "optimality_gap": optimality_gap,
}


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``P(X > Y)`` averaged over tasks (Mann-Whitney U over the number of pairs, ties counting 1/2);
    ``x`` is ``(..., N_x, M)``, ``y`` ``(..., N_y, M)``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    a, b = x[..., :, None, :], y[..., None, :, :]
    wins = (a > b).mean(axis=(-3, -2)) + 0.5 * (a == b).mean(axis=(-3, -2))
    return wins.mean(axis=-1)


def score_distribution(x: np.ndarray, taus) -> np.ndarray:
    """The performance profile: for each ``tau``, the fraction of all runs and tasks scoring above it;
    shape ``(..., len(taus))``."""
    x = np.asarray(x, dtype=float)
    flat = x.reshape(*x.shape[:-2], -1)
    return (flat[..., None, :] > np.asarray(taus, dtype=float)[:, None]).mean(axis=-1)


# ------------------------------------------------------------------ bootstrap
def check_scores(x, name: str = "scores") -> np.ndarray:
    """A (runs, tasks) float matrix with at least one run and one task, every entry finite."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or 0 in x.shape:
        raise InputError(f"{name}: expected a (runs, tasks) matrix with at least one of each, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise InputError(f"{name}: holds a value that is not finite")
    return x


def _rng(rng: Rng | int | None) -> Rng:
    if rng is None or isinstance(rng, (int, np.integer)):
        return np.random.default_rng(0 if rng is None else int(rng))
    return rng


def bootstrap_indices(runs: int, tasks: int, reps: int, rng: Rng) -> np.ndarray:
    """``(reps, runs, tasks)`` run indices of the stratified bootstrap (each task's runs resampled with
    replacement); a ``RandomState`` draws one ``randint(0, runs, (runs, tasks))`` per replication, as rliable."""
    if isinstance(rng, np.random.RandomState):
        return (
            np.stack([rng.randint(0, runs, (runs, tasks)) for _ in range(reps)])
            if reps
            else np.zeros((0, runs, tasks), int)
        )
    return rng.integers(0, runs, (reps, runs, tasks))


def resample(x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The resampled score matrices ``x[indices[r, n, m], m]``, shape ``(reps, runs, tasks)``."""
    return x[indices, np.arange(x.shape[1])]


def percentile_interval(values: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of bootstrap ``values`` (replications on axis 0)."""
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail], axis=0)
    return low, high


def _check(reps: int, confidence: float) -> None:
    if int(reps) != reps or reps < 1:
        raise InputError(f"reps: {reps!r} is not a positive integer")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence: {confidence!r} is not strictly between 0 and 1")


@dataclass(frozen=True)
class Interval:
    """A point estimate and its bootstrap confidence interval."""

    point: float
    low: float
    high: float

    def text(self, decimals: int = 3) -> str:
        """``point [low, high]``."""
        return f"{self.point:.{decimals}f} [{self.low:.{decimals}f}, {self.high:.{decimals}f}]"


def interval_estimates(
    x, reps: int = DEFAULT_REPS, confidence: float = DEFAULT_CONFIDENCE, rng: Rng | int | None = None
) -> dict[str, Interval]:
    """Median, IQM, mean and optimality gap of score matrix ``x`` (runs, tasks), each with its stratified
    bootstrap percentile interval; the four share the replications (as rliable's examples compute them)."""
    x = check_scores(x)
    _check(reps, confidence)
    samples = resample(x, bootstrap_indices(x.shape[0], x.shape[1], int(reps), _rng(rng)))
    out = {}
    for name in ESTIMATORS:
        low, high = percentile_interval(POINT_ESTIMATORS[name](samples), confidence)
        out[name] = Interval(float(POINT_ESTIMATORS[name](x)), float(low), float(high))
    return out


def improvement_interval(
    x, y, reps: int = DEFAULT_REPS, confidence: float = DEFAULT_CONFIDENCE, rng: Rng | int | None = None
) -> Interval:
    """Probability of improvement of X over Y with its interval (X and Y resampled independently,
    X first in each replication, as rliable's ``StratifiedIndependentBootstrap``)."""
    x, y = check_scores(x, "x"), check_scores(y, "y")
    if x.shape[1] != y.shape[1]:
        raise InputError(f"y: {y.shape[1]} tasks, x has {x.shape[1]}: the same tasks are needed")
    _check(reps, confidence)
    rng = _rng(rng)
    if isinstance(rng, np.random.RandomState):
        pairs = [(rng.randint(0, x.shape[0], x.shape), rng.randint(0, y.shape[0], y.shape)) for _ in range(int(reps))]
        ix, iy = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    else:
        ix, iy = bootstrap_indices(*x.shape, int(reps), rng), bootstrap_indices(*y.shape, int(reps), rng)
    values = probability_of_improvement(resample(x, ix), resample(y, iy))
    low, high = percentile_interval(values, confidence)
    return Interval(float(probability_of_improvement(x, y)), float(low), float(high))


def profile_interval(
    x, taus, reps: int = DEFAULT_REPS, confidence: float = DEFAULT_CONFIDENCE, rng: Rng | int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The score distribution of ``x`` at each ``tau`` and its pointwise interval: (point, low, high)."""
    x = check_scores(x)
    _check(reps, confidence)
    samples = resample(x, bootstrap_indices(x.shape[0], x.shape[1], int(reps), _rng(rng)))
    low, high = percentile_interval(score_distribution(samples, taus), confidence)
    return score_distribution(x, taus), low, high
