"""Exact d_pi and d_eps-bar over a 2-D slice of state pairs of a linear-Gaussian MDP, with
the Monte Carlo estimator and its intervals on top.

The slice is the pairs ``z = (x, 0)``, ``z' = (y, 0)`` with x, y in [-2, 2]. Two MDPs
share the dynamics of ``linear-2d``: with its linear reward, d_pi = d_eps = d_eps-bar
(an exact series depending only on z - z'); with the quadratic reward of
``quadratic-2d``, d_eps-bar is an exact folded-normal series that depends on where
the pair is, and the Monte Carlo terms are random.

    python -m figures.gaussian_slice --out gaussian_slice.png [--samples 1000 --seed 0]

The numbers come from :func:`validation.figure_data.gaussian_slice_data`.
"""

from __future__ import annotations

import numpy as np

from validation.figure_data import gaussian_slice_data

from .style import defaults_of, figure_parser, plt, save


def plot_gaussian_slice(path, data: dict):
    """The four-panel figure of ``data`` (:func:`validation.figure_data.gaussian_slice_data`:
    the fine and coarse grids ``t``, ``tc``, exact values ``pi``, ``bar`` and ``*_c``, Monte
    Carlo estimates ``*_mc`` with ``mean``, ``lower``, ``upper``, ``samples``, and ``seed``);
    returns the written path."""
    t, tc = data["t"], data["tc"]
    seed = data["seed"]
    mc_points = len(tc)
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 9.5))
    extent = (t[0], t[-1], t[0], t[-1])
    cut = mc_points // 2  # the row y = 0 of the coarse slice
    titles = {
        "pi": "d_pi = d_eps = d_eps-bar, linear reward (exact series)",
        "bar": "d_eps-bar, quadratic reward (exact folded-normal series)",
    }
    for ax, key in zip(axes[0], ("pi", "bar")):
        im = ax.imshow(data[key], origin="lower", extent=extent, cmap="viridis", interpolation="bilinear")
        cs = ax.contour(t, t, data[key], levels=8, colors="white", linewidths=0.6, alpha=0.7)
        ax.clabel(cs, fontsize=7, fmt="%.1f")
        ax.axhline(tc[cut], color="tab:red", ls="--", lw=1.2, label="cut y = 0 (panel below)")
        ax.set_xlabel("x  (z = (x, 0))")
        ax.set_ylabel("y  (z' = (y, 0))")
        ax.set_title(titles[key])
        fig.colorbar(im, ax=ax, shrink=0.85, label="distance")
        ax.legend(loc="upper left", fontsize=8, framealpha=0.8)
    # (c) the cut y = 0: exact curves with the Monte Carlo estimates and their 95% intervals.
    ax = axes[1, 0]
    fine_row = np.argmin(np.abs(t - tc[cut]))
    for key, color, label in (
        ("pi", "tab:blue", "d_pi (linear reward)"),
        ("bar", "tab:orange", "d_eps-bar (quadratic reward)"),
    ):
        ax.plot(t, data[key][fine_row], color=color, lw=1.5, label=f"{label}, exact")
        mc = data[key + "_mc"]
        mean = mc.mean.reshape(len(tc), len(tc))[cut]
        lo = mc.lower.reshape(len(tc), len(tc))[cut]
        hi = mc.upper.reshape(len(tc), len(tc))[cut]
        ax.errorbar(
            tc,
            mean,
            yerr=[mean - lo, hi - mean],
            fmt="o",
            ms=3.5,
            color=color,
            ecolor="black",
            elinewidth=1,
            capsize=2.5,
            label=f"{label}, Monte Carlo (95% CI + truncation)",
        )
    ax.set_xlabel("x  (pairs z = (x, 0), z' = (0, 0): the dashed lines above)")
    ax.set_ylabel("distance")
    ax.set_title(
        f"Cut y = 0: {mc.samples} entangled rollout pairs per point, seed {seed}\n"
        "(the intervals are narrower than the markers; their sizes are in the next panel)"
    )
    ax.legend(fontsize=8)
    # (d) calibration: Monte Carlo against exact over the whole coarse slice.
    ax = axes[1, 1]
    for key, color, label in (
        ("pi", "tab:blue", "linear reward (zero variance)"),
        ("bar", "tab:orange", "quadratic reward"),
    ):
        mc = data[key + "_mc"]
        exact = data[key + "_c"].ravel()
        cover = int(np.sum((mc.lower <= exact) & (exact <= mc.upper)))
        ax.errorbar(
            exact,
            mc.mean - exact,
            yerr=[mc.mean - mc.lower, mc.upper - mc.mean],
            fmt="o",
            ms=2.5,
            color=color,
            ecolor=color,
            elinewidth=0.6,
            alpha=0.7,
            label=f"{label}: {cover}/{exact.size} intervals contain the exact value",
        )
    ax.axhline(0, color="black", lw=1)
    ax.set_xlabel("exact distance")
    ax.set_ylabel("Monte Carlo estimate - exact (with 95% interval)")
    ax.set_title(f"All {len(tc) ** 2} pairs of the coarse slice")
    ax.legend(fontsize=8, loc="lower left")
    fig.suptitle(
        "Linear-Gaussian MDP (linear-2d dynamics, discount 0.9): exact bisimulation distances "
        "and the entangled Monte Carlo estimator",
        fontsize=11,
    )
    return save(fig, path, tight=True)


def main(argv=None) -> None:
    parser = figure_parser(__doc__, "gaussian_slice.png")
    parser.add_argument(
        "--samples",
        type=int,
        default=defaults_of(gaussian_slice_data)["samples"],
        help="Monte Carlo samples per pair of the coarse slice (default %(default)s)",
    )
    args = parser.parse_args(argv)
    print(plot_gaussian_slice(args.out, gaussian_slice_data(samples=args.samples, seed=args.seed)))


if __name__ == "__main__":
    main()
