"""The figures of a ``bisimkit verify`` run, drawn from the data the job computed.

``bisimkit verify`` passes :func:`draw_verify_figures` to
:func:`validation.verify.verify` as its figure writer; the job computes the data
(:func:`validation.figure_data.verify_figure_data`) and this module only draws.
"""

from __future__ import annotations

from pathlib import Path

from .diagonal import plot_sampled_diagonals
from .heatmaps import plot_metric_heatmaps
from .loss_convergence import plot_loss_curves
from .order_dependence import plot_order_dependence
from .scatter import plot_bound_scatter


def draw_verify_figures(out: Path, data) -> list[Path]:
    """Write ``heatmaps.png``, ``scatter.png`` (when there are general families),
    ``order_dependence.png`` (when C11 ran on them), ``diagonal.png`` and
    ``loss_convergence.png`` (when losses ran) into ``out``.

    ``data`` is a :class:`validation.figure_data.VerifyFigureData` (or anything with its
    attributes ``heatmaps``, ``scatter``, ``diagonal``, ``losses``, ``loss_tolerance``).
    """
    out = Path(out)
    paths = [plot_metric_heatmaps(out / "heatmaps.png", data.heatmaps)]
    if data.scatter is not None:
        paths.append(plot_bound_scatter(out / "scatter.png", data.scatter))
    if getattr(data, "order", None) is not None:
        paths.append(plot_order_dependence(out / "order_dependence.png", data.order))
    paths.append(plot_sampled_diagonals(out / "diagonal.png", data.diagonal))
    if data.losses:
        paths.append(plot_loss_curves(out / "loss_convergence.png", data.losses, data.loss_tolerance))
    return paths
