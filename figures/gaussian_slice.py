"""Exact d_pi and d_eps-bar over a 2-D slice of state pairs of a linear-Gaussian MDP, with
the Monte Carlo estimator and its intervals on top.

The slice is the pairs ``z = (x, 0)``, ``z' = (y, 0)`` with x, y in [-2, 2]. Two MDPs
share the dynamics of ``linear-2d``: with its linear reward, d_pi = d_eps = d_eps-bar
(an exact series depending only on z - z'); with the quadratic reward of
``quadratic-2d``, d_eps-bar is an exact folded-normal series that depends on where
the pair is, and the Monte Carlo terms are random.

    python -m figures.gaussian_slice --out gaussian_slice.png [--samples 1000 --seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from bisimkit.gaussian.estimators import estimate_distance
from bisimkit.gaussian.examples import gaussian_example
from bisimkit.gaussian.exact import distance

from .style import plt, save


def slice_pairs(points: int, lo: float = -2.0, hi: float = 2.0):
    """Grid values and the pairs ((x, 0), (y, 0)) of the slice, x along columns, y along rows."""
    t = np.linspace(lo, hi, points)
    X, Y = np.meshgrid(t, t)
    z = np.column_stack([X.ravel(), np.zeros(X.size)])
    z2 = np.column_stack([Y.ravel(), np.zeros(Y.size)])
    return t, z, z2


def slice_data(points: int = 81, mc_points: int = 21, samples: int = 1000, seed: int = 0) -> dict:
    """Exact values on a fine slice and Monte Carlo estimates on a coarser one, for both MDPs."""
    linear, quadratic = gaussian_example("linear-2d"), gaussian_example("quadratic-2d")
    t, z, z2 = slice_pairs(points)
    tc, zc, z2c = slice_pairs(mc_points)
    out = {"t": t, "tc": tc}
    for key, model, metric in (("pi", linear, "pi"), ("bar", quadratic, "eps-bar")):
        out[key] = distance(model, metric, "reward", z, z2).values.reshape(points, points)
        out[key + "_c"] = distance(model, metric, "reward", zc, z2c).values.reshape(mc_points, mc_points)
        est = estimate_distance(model, zc, z2c, "reward", samples=samples, seed=seed, confidence=0.95)
        out[key + "_mc"] = est
    return out


def plot_gaussian_slice(path, samples: int = 1000, seed: int = 0, points: int = 81, mc_points: int = 21):
    """The four-panel figure; returns the written path."""
    data = slice_data(points, mc_points, samples, seed)
    t, tc = data["t"], data["tc"]
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 9.5))
    extent = (t[0], t[-1], t[0], t[-1])
    cut = mc_points // 2  # the row y = 0 of the coarse slice
    titles = {"pi": "d_pi = d_eps = d_eps-bar, linear reward (exact series)",
              "bar": "d_eps-bar, quadratic reward (exact folded-normal series)"}
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
    for key, color, label in (("pi", "tab:blue", "d_pi (linear reward)"),
                              ("bar", "tab:orange", "d_eps-bar (quadratic reward)")):
        ax.plot(t, data[key][fine_row], color=color, lw=1.5, label=f"{label}, exact")
        mc = data[key + "_mc"]
        mean = mc.mean.reshape(len(tc), len(tc))[cut]
        lo = mc.lower.reshape(len(tc), len(tc))[cut]
        hi = mc.upper.reshape(len(tc), len(tc))[cut]
        ax.errorbar(tc, mean, yerr=[mean - lo, hi - mean], fmt="o", ms=3.5, color=color, ecolor="black",
                    elinewidth=1, capsize=2.5, label=f"{label}, Monte Carlo (95% CI + truncation)")
    ax.set_xlabel("x  (pairs z = (x, 0), z' = (0, 0): the dashed lines above)")
    ax.set_ylabel("distance")
    ax.set_title(f"Cut y = 0: {mc.samples} entangled rollout pairs per point, seed {seed}\n"
                 "(the intervals are narrower than the markers; their sizes are in the next panel)")
    ax.legend(fontsize=8)
    # (d) calibration: Monte Carlo against exact over the whole coarse slice.
    ax = axes[1, 1]
    for key, color, label in (("pi", "tab:blue", "linear reward (zero variance)"),
                              ("bar", "tab:orange", "quadratic reward")):
        mc = data[key + "_mc"]
        exact = data[key + "_c"].ravel()
        cover = int(np.sum((mc.lower <= exact) & (exact <= mc.upper)))
        ax.errorbar(exact, mc.mean - exact, yerr=[mc.mean - mc.lower, mc.upper - mc.mean], fmt="o", ms=2.5,
                    color=color, ecolor=color, elinewidth=0.6, alpha=0.7,
                    label=f"{label}: {cover}/{exact.size} intervals contain the exact value")
    ax.axhline(0, color="black", lw=1)
    ax.set_xlabel("exact distance")
    ax.set_ylabel("Monte Carlo estimate - exact (with 95% interval)")
    ax.set_title(f"All {len(tc) ** 2} pairs of the coarse slice")
    ax.legend(fontsize=8, loc="lower left")
    fig.suptitle("Linear-Gaussian MDP (linear-2d dynamics, discount 0.9): exact bisimulation distances "
                 "and the entangled Monte Carlo estimator", fontsize=11)
    fig.tight_layout()
    return save(fig, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="gaussian_slice.png")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(plot_gaussian_slice(args.out, args.samples, args.seed))


if __name__ == "__main__":
    main()
