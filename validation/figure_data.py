"""The numbers behind the figures: computed here, drawn by :mod:`figures` (which takes arrays).

* :func:`metric_heatmaps`: every operator's distances from one state of the mirrored rooms;
* :func:`scatter_values`: d_pi, d_eps, d_eps-bar over all pairs of many cases (:func:`scatter_columns`
  and :func:`subsample_scatter`: the same from columns in parts, a sharded verify run's);
* :func:`diagonal_curves`: self-distances of the sampled operators against policy entropy;
* :func:`loss_curves`: the learned-loss training curves of a verify run;
* :func:`order_values`: C4's zero part in index and class-contiguous order, and the C11 spreads;
* :func:`gaussian_slice_data`, :func:`grid_studies`: the Gaussian-MDP figures;
* :func:`verify_figure_data`: everything ``bisimkit verify`` draws, in one object.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bisimkit.examples import MIRRORED_ROOMS_POLICY, mirrored_rooms
from bisimkit.gaussian.discretize import refinement_study
from bisimkit.gaussian.estimators import estimate_distance
from bisimkit.gaussian.exact import distance
from bisimkit.gaussian.examples import gaussian_example
from bisimkit.generators import random_mdp
from bisimkit.solvers import solve

from .claims import FixedPoints, order_spreads, zero_part
from .families import FAMILIES, GENERAL_FAMILIES

#: (metric, ground) of each heatmap panel.
HEATMAP_PANELS = [
    ("bisim", None),
    ("pi", None),
    ("psm", None),
    ("dbc", None),
    ("mico", None),
    ("mico-reduced", None),
    ("psm-sampled", None),
    ("dbc-sampled", None),
    ("eps", "reward"),
    ("eps", "policy"),
    ("eps-avg", "reward"),
    ("eps-bar", "reward"),
]
#: The metrics of the self-distance figure.
DIAGONAL_METRICS = ("dbc-sampled", "psm-sampled", "mico", "eps-bar", "pi")


@dataclass
class Heatmaps:
    """``rows[k]``: the distances from ``state`` to every state under panel k's metric."""

    layout: list[str]
    state: int
    panels: list[tuple[str, str | None]]
    rows: list[np.ndarray]
    self_distances: list[float]
    discount: float
    noise: float


def metric_heatmaps(state: int = 0, discount: float = 0.9, noise: float = 0.3, tol: float = 1e-8) -> Heatmaps:
    """Every panel's ``d(state, .)`` on the mirrored rooms, under Castro's fixed policy blended
    with the uniform one (weight ``noise``), so that the sampled and entangled operators differ."""
    mdp = mirrored_rooms(policy=True, discount=discount)
    mdp = mdp.with_policy((1 - noise) * mdp.policy + noise / mdp.n_actions)
    rows, selfd = [], []
    for metric, ground in HEATMAP_PANELS:
        d = solve(mdp, metric, ground=ground, tol=tol).distances
        rows.append(d[state].copy())
        selfd.append(float(d[state, state]))
    return Heatmaps(list(MIRRORED_ROOMS_POLICY), state, list(HEATMAP_PANELS), rows, selfd, discount, noise)


def scatter_columns(fixed_points) -> dict[str, np.ndarray]:
    """Every upper-triangle value of d_pi, d_eps, d_eps-bar (and the family) from
    ``(family, FixedPoints)`` pairs, in their order."""
    cols = {"pi": [], "eps": [], "eps-bar": [], "family": []}
    for family, fp in fixed_points:
        n = fp.case.mdp.n_states
        iu = np.triu_indices(n, 1)
        for metric in ("pi", "eps", "eps-bar"):
            cols[metric].append(fp.d(metric)[iu])
        cols["family"].append(np.full(len(iu[0]), family, dtype=object))
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}


def subsample_scatter(parts: list, max_points: int = 30_000) -> dict[str, np.ndarray]:
    """The scatter's points from columns given in consecutive parts (mappings like
    :func:`scatter_columns`' result, or lazily loaded ones): all of them, or ``max_points`` chosen
    at random (a fixed seed) among them all, the same whether the columns come whole or in parts.
    One part's columns are in memory at a time."""
    keys = ("pi", "eps", "eps-bar", "family")
    sizes = [len(part["pi"]) for part in parts]
    total = sum(sizes)
    if total <= max_points:
        out = {k: [np.asarray(part[k]) for part in parts] for k in keys}
        out = {k: np.concatenate(v) if v else np.zeros(0) for k, v in out.items()}
        if total:
            out["family"] = out["family"].astype(object)
        return out
    keep = np.random.default_rng(0).choice(total, max_points, replace=False)
    out = {k: np.empty(max_points, dtype=object if k == "family" else float) for k in keys}
    start = 0
    for part, size in zip(parts, sizes):
        inside = (keep >= start) & (keep < start + size)
        where = np.nonzero(inside)[0]
        for k in keys:
            out[k][where] = np.asarray(part[k])[keep[inside] - start]
        start += size
    return out


def scatter_values(fixed_points, max_points: int = 30_000) -> dict[str, np.ndarray]:
    """Upper-triangle values of d_pi, d_eps, d_eps-bar (and the family) from
    ``(family, FixedPoints)`` pairs; at most ``max_points`` pairs (a fixed random subset)."""
    return subsample_scatter([scatter_columns(fixed_points)], max_points)


def general_fixed_points(mdps: int = 10, seed: int = 0) -> list:
    """``(family, FixedPoints)`` for ``mdps`` cases of every general family (the scatter's input)."""
    rng = np.random.default_rng(seed)
    return [(name, FixedPoints(FAMILIES[name].make(rng))) for name in GENERAL_FAMILIES for _ in range(mdps)]


@dataclass
class DiagonalCurves:
    """Mean policy entropy and mean ``d(s, s)`` per metric along the blend from a
    deterministic policy (lambda = 0) to a random stochastic one (lambda = 1)."""

    lambdas: np.ndarray
    entropy: np.ndarray
    curves: dict[str, np.ndarray]
    mdps: int


def diagonal_curves(mdps: int = 8, seed: int = 0, points: int = 9) -> DiagonalCurves:
    """Self-distances over ``mdps`` random MDPs (n = 6, m = 3, deterministic transitions):
    any ``d(s, s) > 0`` comes from the policy's randomness."""
    rng = np.random.default_rng(seed)
    lambdas = np.linspace(0, 1, points)
    entropy = np.zeros(points)
    curves = {m: np.zeros(points) for m in DIAGONAL_METRICS}
    for _ in range(mdps):
        base = random_mdp(6, 3, rng, discount=0.9, deterministic=True, policy="deterministic")
        target = rng.dirichlet(np.ones(base.n_actions), size=base.n_states)
        for k, lam in enumerate(lambdas):
            pi = (1 - lam) * base.policy + lam * target
            mdp = base.with_policy(pi)
            with np.errstate(divide="ignore", invalid="ignore"):
                h = -np.nansum(np.where(pi > 0, pi * np.log(pi), 0.0), axis=1)
            entropy[k] += h.mean() / mdps
            for metric in DIAGONAL_METRICS:
                curves[metric][k] += np.diag(solve(mdp, metric, tol=1e-8).distances).mean() / mdps
    return DiagonalCurves(lambdas, entropy, curves, mdps)


def loss_curves(runs: list[dict]) -> list[tuple[str, str, dict]]:
    """``(loss, family, curve)`` triples from the ``runs`` of a verify report."""
    return [(r["loss"], r["family"], r) for r in runs]


def slice_pairs(points: int, lo: float = -2.0, hi: float = 2.0):
    """Grid values and the pairs ((x, 0), (y, 0)) of the slice, x along columns, y along rows."""
    t = np.linspace(lo, hi, points)
    X, Y = np.meshgrid(t, t)
    z = np.column_stack([X.ravel(), np.zeros(X.size)])
    z2 = np.column_stack([Y.ravel(), np.zeros(Y.size)])
    return t, z, z2


def gaussian_slice_data(points: int = 81, mc_points: int = 21, samples: int = 1000, seed: int = 0) -> dict:
    """Exact d_pi (``linear-2d``) and d_eps-bar (``quadratic-2d``) on a fine slice of pairs, and
    Monte Carlo estimates with intervals on a coarser one (keys ``pi``, ``bar``, ``*_c``, ``*_mc``)."""
    linear, quadratic = gaussian_example("linear-2d"), gaussian_example("quadratic-2d")
    t, z, z2 = slice_pairs(points)
    tc, zc, z2c = slice_pairs(mc_points)
    out = {"t": t, "tc": tc, "seed": seed}
    for key, model, metric in (("pi", linear, "pi"), ("bar", quadratic, "eps-bar")):
        out[key] = distance(model, metric, "reward", z, z2).values.reshape(points, points)
        out[key + "_c"] = distance(model, metric, "reward", zc, z2c).values.reshape(mc_points, mc_points)
        out[key + "_mc"] = estimate_distance(model, zc, z2c, "reward", samples=samples, seed=seed)
    return out


#: The refinement studies of the grid-bridge figure: (model, metric, grids, colour).
GRIDS_1D = [
    ([[-1.5, 1.5]], 6, 3),
    ([[-2.0, 2.0]], 12, 3),
    ([[-2.5, 2.5]], 20, 5),
    ([[-3.0, 3.0]], 36, 5),
    ([[-3.5, 3.5]], 56, 7),
]
GRIDS_2D = [([[-2.0, 2.0]] * 2, 4, 3), ([[-2.0, 2.0]] * 2, 6, 3), ([[-2.0, 2.0]] * 2, 8, 3), ([[-2.0, 2.0]] * 2, 12, 3)]
STUDIES = [
    ("linear-1d", "pi", GRIDS_1D, "tab:blue"),
    ("linear-1d", "eps-bar", GRIDS_1D, "tab:green"),
    ("quadratic-1d", "eps-bar", GRIDS_1D, "tab:orange"),
    ("contracting-2d", "pi", GRIDS_2D[:3], "tab:red"),
    ("contracting-2d", "eps-bar", GRIDS_2D, "tab:purple"),
]


def grid_studies(studies=STUDIES) -> list[tuple[str, str, str, list[dict]]]:
    """Every refinement study of the grid-bridge figure: (model, metric, colour, rows)."""
    return [
        (name, metric, color, refinement_study(gaussian_example(name), metric, grids))
        for name, metric, grids, color in studies
    ]


def order_values(fixed_points) -> dict[str, np.ndarray]:
    """Per case of ``(family, FixedPoints)`` pairs: max d_eps-bar on E_eps with states in index
    order and class-contiguous order, and the C11 spreads over state and action orders (the
    fixed points C4 and C11 solved are reused from each case's cache)."""
    cols: dict[str, list] = {"family": [], "index": [], "contiguous": [], "state_spread": [], "action_spread": []}
    for family, fp in fixed_points:
        state, action = order_spreads(fp)
        cols["family"].append(family)
        cols["index"].append(zero_part(fp))
        cols["contiguous"].append(zero_part(fp, "class-contiguous"))
        cols["state_spread"].append(state)
        cols["action_spread"].append(action)
    return {k: np.array(v, dtype=object if k == "family" else float) for k, v in cols.items()}


@dataclass
class VerifyFigureData:
    """What ``bisimkit verify`` draws: heatmaps, the bound scatter (None without general
    families), the self-distance curves and the loss curves (None without loss runs)."""

    heatmaps: Heatmaps
    scatter: dict[str, np.ndarray] | None
    diagonal: DiagonalCurves
    losses: list[tuple[str, str, dict]] | None
    loss_tolerance: float
    order: dict[str, np.ndarray] | None = None


def verify_figure_data(
    fixed_points: list,
    quick: bool,
    loss_runs: list[dict],
    loss_tolerance: float,
    order: bool = False,
    scatter: dict | None = None,
    order_data: dict | None = None,
) -> VerifyFigureData:
    """The figures' data for a verify run (smaller settings with ``quick``); ``order``: also the
    order-dependence figure's (when the run checked C11, whose solves it reuses). ``scatter`` and
    ``order_data``: those two figures' values computed elsewhere (by the shards of a sharded run)
    instead of from ``fixed_points``."""
    if scatter is None and fixed_points:
        scatter = scatter_values(fixed_points)
    if order_data is None and order and fixed_points:
        order_data = order_values(fixed_points)
    return VerifyFigureData(
        metric_heatmaps(tol=1e-6 if quick else 1e-8),
        scatter,
        diagonal_curves(mdps=2 if quick else 8, points=5 if quick else 9),
        loss_curves(loss_runs) if loss_runs else None,
        loss_tolerance,
        order_data if order else None,
    )
