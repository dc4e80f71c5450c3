"""Max error of the learned tables against the exact fixed points, over training steps.

One panel per loss of :mod:`bisimkit.losses` (entangled with reward and policy
grounds, sampled PSM, MICo, sampled DBC), one line per MDP; the error is the
max over all state pairs, diagonal included, relative to the largest exact
distance, on a log scale. The dashed line is the pass mark of the checks (1%).

    python -m figures.loss_convergence --out loss_convergence.png [--quick --seed 0]
"""

from __future__ import annotations

import numpy as np

from validation.learning import RELATIVE_TOLERANCE, run_loss_checks

from .style import figure_parser, plt, save

COLORS = {"random-sparse": "tab:blue", "embedded": "tab:orange", "chain": "tab:green", "product-grid": "tab:purple"}
TITLES = {
    "entangled-reward": "entangled, G = reward\n-> eps-bar",
    "entangled-policy": "entangled, G = policy\n-> eps-bar",
    "psm": "sampled PSM\n-> psm-sampled",
    "mico": "MICo\n-> mico",
    "dbc": "sampled DBC (exact W2)\n-> dbc-sampled",
}


def plot_loss_curves(path, runs: list[tuple[str, str, dict]], tolerance: float = 0.01):
    """Plot ``runs``: (loss, family, curve as a dict with steps, error, scale) triples."""
    losses = [loss for loss in TITLES if any(r[0] == loss for r in runs)]
    fig, axes = plt.subplots(
        1, max(len(losses), 1), figsize=(3.0 * max(len(losses), 1), 3.4), sharey=True, squeeze=False
    )
    families = []
    for ax, loss in zip(axes[0], losses):
        for name, family, curve in runs:
            if name != loss:
                continue
            rel = np.asarray(curve["error"]) / max(curve["scale"], 1e-12)
            ax.plot(curve["steps"], np.maximum(rel, 1e-6), color=COLORS.get(family, "tab:gray"), lw=1.4, label=family)
            if family not in families:
                families.append(family)
        ax.axhline(tolerance, color="black", ls="--", lw=0.9)
        ax.set_yscale("log")
        ax.set_title(TITLES[loss])
        ax.set_xlabel("training step")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("max |d - d*| / max d*  (all pairs)")
    handles = [plt.Line2D([], [], color=COLORS.get(f, "tab:gray"), lw=1.4) for f in families]
    handles.append(plt.Line2D([], [], color="black", ls="--", lw=0.9))
    fig.legend(
        handles,
        families + [f"pass mark ({tolerance:.0%})"],
        loc="lower center",
        ncol=len(handles),
        frameon=False,
        bbox_to_anchor=(0.5, -0.06),
    )
    fig.suptitle(
        "Tabular distances trained with each bisimkit loss converge to the exact fixed point of their operator", y=1.02
    )
    return save(fig, path, tight=True)


def main(argv=None) -> None:
    parser = figure_parser(__doc__, "loss_convergence.png")
    parser.add_argument("--quick", action="store_true", help="one small MDP, short runs")
    args = parser.parse_args(argv)
    runs = [
        (check.loss, case.family, curve.to_json())
        for check, case, curve in run_loss_checks(quick=args.quick, seed=args.seed)
    ]
    print(plot_loss_curves(args.out, runs, RELATIVE_TOLERANCE))


if __name__ == "__main__":
    main()
