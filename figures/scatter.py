"""d_eps-bar against d_eps and d_eps against d_pi over all state pairs of many MDPs.

    python -m figures.scatter --out scatter.png [--mdps 60 --seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from .style import plt, save


def pair_values(fixed_points, max_points: int = 30_000) -> dict[str, np.ndarray]:
    """Upper-triangle values of d_pi, d_eps, d_eps-bar (and the family) from cached fixed points."""
    cols = {"pi": [], "eps": [], "eps-bar": [], "family": []}
    for family, fp in fixed_points:
        n = fp.case.mdp.n_states
        iu = np.triu_indices(n, 1)
        for metric in ("pi", "eps", "eps-bar"):
            cols[metric].append(fp.d(metric)[iu])
        cols["family"].append(np.full(len(iu[0]), family, dtype=object))
    out = {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
    if len(out["pi"]) > max_points:
        keep = np.random.default_rng(0).choice(len(out["pi"]), max_points, replace=False)
        out = {k: v[keep] for k, v in out.items()}
    return out


def plot_bound_scatter(path, fixed_points):
    """Two panels: d_eps-bar vs d_eps (Thm 4.5 upper bound) and d_eps vs d_pi (Lemma 4.4)."""
    data = pair_values(fixed_points)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    families = sorted(set(data["family"].tolist()))
    colors = plt.get_cmap("tab10")
    for ax, (x, y, xl, yl) in zip(axes, [("eps", "eps-bar", "d_eps", "d_eps-bar"), ("pi", "eps", "d_pi", "d_eps")]):
        for k, fam in enumerate(families):
            sel = data["family"] == fam
            ax.scatter(data[x][sel], data[y][sel], s=4, alpha=0.5, color=colors(k % 10), label=fam)
        hi = max(float(np.max(data[x], initial=1)), float(np.max(data[y], initial=1)))
        ax.plot([0, hi], [0, hi], "k--", lw=1, label="y = x")
        below = int(np.sum(data[y] < data[x] - 1e-8))
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.set_title(f"{yl} vs {xl}: {len(data[x])} pairs, {below} below the diagonal")
    axes[0].legend(fontsize=7, markerscale=3, loc="upper left")
    fig.tight_layout()
    return save(fig, path)


def main(argv=None) -> None:
    from validation.claims import FixedPoints
    from validation.families import FAMILIES, GENERAL_FAMILIES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="scatter.png")
    parser.add_argument("--mdps", type=int, default=10, help="MDPs per family")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    fps = [(name, FixedPoints(FAMILIES[name].make(rng))) for name in GENERAL_FAMILIES for _ in range(args.mdps)]
    print(plot_bound_scatter(args.out, fps))


if __name__ == "__main__":
    main()
