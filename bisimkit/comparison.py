"""Several metrics' fixed points on one MDP, side by side: ``bisimkit.compare(mdp, metrics)``.

:func:`compare` solves each metric once and returns a :class:`Comparison`: the
distance matrices, the solutions (certified error, seconds) and a summary per
metric (:meth:`Comparison.summary`, written as ``summary.csv`` by ``bisimkit
compare``). The drawing is in :mod:`figures.compare` (this core module draws
nothing); the command line in :mod:`bisimkit_cli.compare`.

Summary columns, per metric: ``max`` and ``mean`` of d(s, t) over the ordered pairs s != t;
``zero_set_blocks``, the number of connected components of {(s, t): d(s, t) <= zero_tol}
with ``zero_tol`` twice the certified error (at least 1e-12 of the largest distance);
``diagonal_max`` = max_s |d(s, s)| (nonzero for the sampled operators); ``certified_error``,
``iterations``, ``seconds`` and ``method`` of the solve; and ``spearman_<m>``, the Spearman
rank correlation over the pairs s < t with metric ``m`` (empty when either is constant), where
values of one metric within its ``zero_tol`` of each other count as ties (single linkage): their
order is below the certified precision, so round-off does not rank them.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .errors import InputError
from .ground import Ground, ground_label, resolve_ground
from .mdp import FiniteMDP
from .operators import GROUND_METRICS, operator
from .order import resolve_order
from .progress import solve_progress
from .relations import cluster_values, zero_set_labels
from .solvers import DEFAULT_TOL, Solution, solve

SUMMARY_FIELDS = (
    "metric",
    "ground",
    "max",
    "mean",
    "zero_set_blocks",
    "zero_tol",
    "diagonal_max",
    "certified_error",
    "iterations",
    "seconds",
    "method",
)


def parse_metrics(metrics: str | Sequence[str]) -> list[str]:
    """The metric names of a list or a comma-separated string, checked, each once (first-seen order)."""
    names = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else [str(m) for m in metrics]
    names = [m for m in names if m]
    if not names:
        raise InputError("no metric named (e.g. pi,eps-bar,mico)", param="metrics")
    for name in names:
        try:
            operator(name)
        except InputError as exc:
            raise InputError(exc.detail, param="metrics") from None
    return list(dict.fromkeys(names))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation of two samples (ties get average ranks); nan if either is constant."""
    from scipy.stats import rankdata  # deferred: scipy.stats adds ~0.3 s to `import bisimkit`

    if len(x) < 2:
        return float("nan")
    rx, ry = rankdata(x), rankdata(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass
class Comparison:
    """The fixed points of several metrics on one MDP (see the module doc)."""

    mdp: FiniteMDP
    metrics: list[str]
    solutions: dict[str, Solution]
    ground: Ground = "reward"
    order: object = "index"
    _summary: list[dict] | None = field(default=None, repr=False)

    @property
    def distances(self) -> dict[str, np.ndarray]:
        """metric -> its n x n fixed point."""
        return {m: self.solutions[m].distances for m in self.metrics}

    def pair_values(self, metric: str) -> np.ndarray:
        """d(s, t) over the pairs s < t (row-major), the scatter matrix's and the correlations' values."""
        n = self.mdp.n_states
        return self.solutions[metric].distances[np.triu_indices(n, 1)]

    def zero_tol(self, metric: str) -> float:
        """Twice the certified error of ``metric`` (at least 1e-12 of its largest distance):
        distances closer than this cannot be told apart."""
        sol = self.solutions[metric]
        D = sol.distances
        scale = float(np.max(np.abs(D))) if D.size else 0.0
        return max(2 * sol.certified_error, 1e-12 * scale)

    def rank_correlation(self) -> np.ndarray:
        """k x k Spearman rank correlations between the metrics over the pairs s < t
        (values within a metric's :meth:`zero_tol` of each other tie)."""
        k = len(self.metrics)
        values = [cluster_values(self.pair_values(m), self.zero_tol(m)) for m in self.metrics]
        out = np.eye(k)
        for i in range(k):
            for j in range(i + 1, k):
                out[i, j] = out[j, i] = spearman(values[i], values[j])
        return out

    def summary(self) -> list[dict]:
        """One dict per metric with :data:`SUMMARY_FIELDS` and ``spearman_<m>`` (see the module doc)."""
        if self._summary is None:
            rho = self.rank_correlation()
            n = self.mdp.n_states
            off = ~np.eye(n, dtype=bool)
            rows = []
            for i, m in enumerate(self.metrics):
                sol = self.solutions[m]
                D = sol.distances
                zero_tol = self.zero_tol(m)
                row = {
                    "metric": m,
                    "ground": sol.ground or "",
                    "max": float(D[off].max()) if n > 1 else float("nan"),
                    "mean": float(D[off].mean()) if n > 1 else float("nan"),
                    "zero_set_blocks": int(zero_set_labels(D, zero_tol).max() + 1),
                    "zero_tol": zero_tol,
                    "diagonal_max": float(np.max(np.abs(np.diag(D)))),
                    "certified_error": float(sol.certified_error),
                    "iterations": int(sol.iterations),
                    "seconds": float(sol.seconds),
                    "method": sol.method,
                }
                row.update({f"spearman_{other}": float(rho[i, j]) for j, other in enumerate(self.metrics)})
                rows.append(row)
            self._summary = rows
        return self._summary

    def to_csv(self) -> str:
        """:meth:`summary` as CSV text (floats with 17 significant digits, nan as an empty cell)."""
        rows = self.summary()
        fields = list(SUMMARY_FIELDS) + [f"spearman_{m}" for m in self.metrics]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    k: ("" if isinstance(v, float) and np.isnan(v) else f"{v:.17g}" if isinstance(v, float) else v)
                    for k, v in row.items()
                }
            )
        return buf.getvalue()


def check_compare(
    mdp: FiniteMDP, metrics: str | Sequence[str], ground: Ground | None = None, order="index", action_order="index"
) -> tuple[list[str], Ground]:
    """Refuse bad input before any solve: the metric names, a policy where one is needed, the ground
    and the orders. Returns the metric names and the resolved ground."""
    names = parse_metrics(metrics)
    needs = [m for m in names if operator(m).uses_policy]
    if needs:
        mdp.require_policy(f"metric '{needs[0]}'")
    if ground is not None and not any(operator(m).uses_ground for m in names):
        raise InputError(
            f"none of {', '.join(names)} has a ground term (it applies to {', '.join(GROUND_METRICS)})", param="ground"
        )
    resolved = resolve_ground(mdp, ground)
    resolve_order(mdp, order, action_order, resolved)
    return names, resolved


def compare(
    mdp: FiniteMDP,
    metrics: str | Sequence[str],
    ground: Ground | None = None,
    tol: float = DEFAULT_TOL,
    order="index",
    action_order="index",
    progress: bool = False,
) -> Comparison:
    """Solve each metric once on ``mdp`` (``metrics``: names, or ``"pi,eps-bar,mico"``); ``ground`` is the
    eps family's ground, ``order`` / ``action_order`` the entangled coupling's orders (:func:`solve`).
    ``progress``: a progress line per long solve on stderr. Returns a :class:`Comparison`."""
    names, resolved = check_compare(mdp, metrics, ground, order, action_order)
    solutions = {}
    for m in names:
        uses_ground = operator(m).uses_ground
        report, line = None, None
        if progress:
            line, report = solve_progress(m, tol)
        try:
            solutions[m] = solve(
                mdp,
                m,
                ground=resolved if uses_ground else None,
                tol=tol,
                progress=report,
                order=order,
                action_order=action_order,
            )
        finally:
            if line is not None:
                line.close()
    return Comparison(mdp, names, solutions, ground_label(resolved), order)
