"""Distances at given state pairs of a Gaussian MDP: the ``bisimkit solve --pairs`` path.

:func:`solve_pairs` uses the exact series where one exists (error bar: its
certified tail) and the Monte Carlo estimator otherwise (error bar: the
confidence interval, truncation bound included). :func:`load_pairs` reads the
pairs from JSON (a list of ``[z, z']``) or ``.npy`` (shape (P, 2, n)).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..fields import to_float_array
from ..operators import GROUND_METRICS
from . import exact
from .estimators import DEFAULT_CONFIDENCE, DEFAULT_SAMPLES, DEFAULT_TAIL, Estimate, estimate_distance
from .model import GROUNDS, GaussianMDP, LinearGaussianMDP

GAUSSIAN_METHODS = ("auto", "exact", "mc")


@dataclass
class PairDistances:
    """Distances per pair with two-sided error bars: the truth lies in [lower, upper]
    (certainly for the exact series; at ``confidence`` for Monte Carlo)."""

    metric: str
    ground: str | None
    method: str  # "exact series" or "monte carlo"
    z: np.ndarray
    z2: np.ndarray
    distances: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    seconds: float
    series: exact.Series | None = None
    estimate: Estimate | None = None

    @property
    def errors(self) -> np.ndarray:
        """Half-width of the error bar around ``distances`` (the larger side)."""
        return np.maximum(self.distances - self.lower, self.upper - self.distances)

    def to_json(self) -> dict:
        """The ``--out FILE.json`` object."""

        def clean(x):
            return [None if not math.isfinite(v) else float(v) for v in np.asarray(x, dtype=float)]

        out = {
            "metric": self.metric,
            "ground": self.ground,
            "method": self.method,
            "pairs": [[a.tolist(), b.tolist()] for a, b in zip(self.z, self.z2)],
            "distances": clean(self.distances),
            "errors": clean(self.errors),
            "lower": clean(self.lower),
            "upper": clean(self.upper),
            "seconds": self.seconds,
        }
        if self.series is not None:
            out["terms"] = self.series.terms
            out["series"] = self.series.form
        if self.estimate is not None:
            out["monte_carlo"] = self.estimate.to_json()
        return out


def load_pairs(path: str | os.PathLike, state_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Read state pairs: JSON ``[[z, z'], ...]`` (a number stands for a 1-D state)
    or ``.npy`` of shape (P, 2, n). Returns ``(z, z')``, each (P, n)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file", param="pairs")
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        elif suffix == ".npy":
            try:
                data = np.load(path, allow_pickle=False)
            except ValueError as exc:
                raise InputError(f"{path}: cannot read as .npy ({exc})") from None
        else:
            raise InputError(f"unsupported file type '{path.suffix}' (use .json or .npy)", param="pairs")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    return pairs_from_data(data, state_dim)


def pairs_from_data(data, state_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate pairs given as nested lists or an array (see :func:`load_pairs`)."""
    if not isinstance(data, list | np.ndarray):
        raise InputError(f"pairs: expected a list of [z, z'] pairs, got {type(data).__name__}")
    if isinstance(data, list):
        if not data:
            raise InputError("pairs: the file holds no pairs")
        for i, pair in enumerate(data):
            if not isinstance(pair, list) or len(pair) != 2:
                raise InputError(f"pairs[{i}]: expected a pair [z, z'], got {json.dumps(pair)[:60]}")
            for j, state in enumerate(pair):
                if state_dim == 1 and isinstance(state, int | float) and not isinstance(state, bool):
                    continue
                if not isinstance(state, list) or len(state) != state_dim:
                    got = (
                        f"{len(state)} number{'s' if len(state) != 1 else ''}"
                        if isinstance(state, list)
                        else json.dumps(state)[:40]
                    )
                    raise InputError(f"pairs[{i}][{j}]: expected {state_dim} numbers (the state dimension), got {got}")
        data = [[s if isinstance(s, list) else [s] for s in pair] for pair in data]
    X = to_float_array("pairs", data)
    if X.ndim == 2 and state_dim == 1 and X.shape[1] == 2:
        X = X[:, :, None]
    if X.ndim != 3 or X.shape[1:] != (2, state_dim) or X.shape[0] == 0:
        raise InputError(
            f"pairs: expected shape (P, 2, {state_dim}) (pairs of states of dimension {state_dim}), got {X.shape}"
        )
    bad = np.argwhere(~np.isfinite(X))
    if len(bad):
        i, j, k = bad[0]
        raise InputError(f"pairs[{i}][{j}][{k}] is not finite")
    return X[:, 0, :], X[:, 1, :]


def solve_pairs(
    model: GaussianMDP,
    metric: str,
    z: np.ndarray,
    z2: np.ndarray,
    ground: str | None = None,
    method: str = "auto",
    samples: int = DEFAULT_SAMPLES,
    horizon: int | None = None,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    tail: float = DEFAULT_TAIL,
) -> PairDistances:
    """``d_metric`` at each pair ``(z[i], z2[i])`` with an error bar.

    ``method``: ``exact`` (series; an error if there is none), ``mc`` (Monte Carlo,
    eps-bar only) or ``auto`` (exact where it exists, else Monte Carlo).
    """
    start = time.perf_counter()
    if method not in GAUSSIAN_METHODS:
        raise InputError(
            f"'{method}' does not apply to Gaussian MDPs (use {', '.join(GAUSSIAN_METHODS)})", param="method"
        )
    ground = ground or "reward"
    if ground not in GROUNDS:
        raise InputError(
            f"unknown ground metric '{ground}' for a Gaussian MDP (use {' or '.join(GROUNDS)})", param="ground"
        )
    uses_ground = metric in GROUND_METRICS
    if method in ("auto", "exact"):
        try:
            exact.exact_form(model, metric, ground)
            have_exact = True
        except InputError:
            if method == "exact" or metric != "eps-bar":
                raise
            have_exact = False
        if have_exact:
            s = exact.distance(model, metric, ground, z, z2)
            return PairDistances(
                metric,
                ground if uses_ground else None,
                "exact series",
                z,
                z2,
                s.values,
                np.maximum(s.values - s.error, 0.0),
                s.values + s.error,
                time.perf_counter() - start,
                series=s,
            )
    if metric != "eps-bar":
        raise InputError(
            f"'mc': only eps-bar has a Monte Carlo estimator (the others need W1 between "
            f"continuous laws); '{metric}' does not",
            param="method",
        )
    est = estimate_distance(
        model, z, z2, ground, samples=samples, horizon=horizon, seed=seed, confidence=confidence, tail=tail
    )
    return PairDistances(
        metric,
        ground,
        "monte carlo",
        z,
        z2,
        est.mean,
        np.maximum(est.lower, 0.0),
        est.upper,
        time.perf_counter() - start,
        estimate=est,
    )


def _fmt_state(z: np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in z) + "]"


def format_pairs(model: GaussianMDP, result: PairDistances, limit: int = 50) -> str:
    """Readable table of a :class:`PairDistances`."""
    ground = f", ground {result.ground}" if result.ground else ""
    kind = "linear-Gaussian" if isinstance(model, LinearGaussianMDP) else "Gaussian"
    lines = [
        f"{model.label}: metric {result.metric}{ground}; {kind} MDP n={model.state_dim}, "
        f"k={model.action_dim}, discount={model.discount:g}"
    ]
    if result.series is not None:
        lines.append(
            f"method: exact series ({result.series.form} form, {result.series.terms} terms); "
            f"error = certified tail bound; {result.seconds:.3f} s"
        )
    else:
        e = result.estimate
        assert e is not None  # a result holds the exact series or the Monte Carlo estimate
        lines.append(
            f"method: Monte Carlo, {e.samples} entangled rollout pairs x {e.horizon} steps (seed fixed); "
            f"interval = {100 * e.confidence:g}% CI + truncation bound (max {np.max(e.truncation):.2g}); "
            f"{result.seconds:.3f} s"
        )
    head = ("pair", "z", "z'", "distance", "+-", "interval")
    rows = []
    for i in range(min(len(result.distances), limit)):
        rows.append(
            (
                str(i),
                _fmt_state(result.z[i]),
                _fmt_state(result.z2[i]),
                f"{result.distances[i]:.10g}",
                f"{result.errors[i]:.2g}",
                f"[{result.lower[i]:.10g}, {result.upper[i]:.10g}]",
            )
        )
    widths = [max(len(h), *(len(r[c]) for r in rows)) for c, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines.append(fmt.format(*head))
    lines += [fmt.format(*r) for r in rows]
    if len(result.distances) > limit:
        lines.append(f"... {len(result.distances) - limit} more pairs (use --out FILE.json)")
    return "\n".join(lines)


def describe_gaussian(model: LinearGaussianMDP) -> str:
    """The ``bisimkit info`` report of a linear-Gaussian MDP."""
    terms = model.reward_terms
    lines = [
        f"name: {model.name or '(none)'}",
        f"linear-Gaussian MDP: state dimension {model.state_dim}, action dimension {model.action_dim}, "
        f"discount {model.discount:g}",
        f"policy: a = K z + policy_std * xi{' (tanh-squashed, scale %g)' % model.action_scale if model.squash else ''}",
        f"closed loop M = A + BK: spectral radius {model.spectral_radius:.6g}; "
        f"c * rho(M) = {model.discount * model.spectral_radius:.6g}",
        f"reward: {'linear' if terms.is_linear else 'quadratic'}",
    ]
    available = []
    for metric in exact.EXACT_METRICS:
        for ground in ("reward", "policy") if metric in ("eps", "eps-bar") else ("reward",):
            try:
                exact.exact_form(model, metric, ground)
                available.append(metric if metric not in ("eps", "eps-bar") else f"{metric} ({ground})")
            except InputError:
                pass
    lines.append(f"exact series: {', '.join(available) if available else 'none'}; Monte Carlo: eps-bar")
    return "\n".join(lines)
