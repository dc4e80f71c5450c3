"""Self-distance d(s, s) of the sampled DBC / PSM fixed points against policy stochasticity.

Transitions are deterministic and the policy is blended from a deterministic
one (lambda = 0, every self-distance is 0) to a random stochastic one
(lambda = 1), so any d(s, s) > 0 comes from the policy's randomness. The
entangled and Wasserstein metrics keep d(s, s) = 0 throughout.

    python -m figures.diagonal --out diagonal.png [--mdps 8 --seed 0]

:func:`plot_sampled_diagonals` draws the curves it is given
(:func:`validation.figure_data.diagonal_curves` computes them).
"""

from __future__ import annotations

from validation.figure_data import diagonal_curves

from .style import defaults_of, figure_parser, plt, save

COLORS = {
    "dbc-sampled": "tab:red",
    "psm-sampled": "tab:orange",
    "mico": "tab:purple",
    "eps-bar": "tab:green",
    "pi": "tab:blue",
}


def plot_sampled_diagonals(path, data):
    """Mean d(s, s) against the mean policy entropy.

    ``data`` has ``entropy`` (one value per blend point), ``curves`` (metric -> mean
    self-distance per point) and ``mdps`` (as :class:`validation.figure_data.DiagonalCurves`).
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    for metric, values in data.curves.items():
        ax.plot(data.entropy, values, marker="o", color=COLORS.get(metric), label=metric)
    ax.set_xlabel("mean policy entropy (nats): deterministic -> random stochastic policy")
    ax.set_ylabel("mean self-distance d(s, s)")
    ax.set_title(
        f"Sampled operators lose d(s,s) = 0 as the policy gets random\n"
        f"({data.mdps} random MDPs, n=6, m=3, deterministic transitions)"
    )
    ax.legend()
    return save(fig, path, tight=True)


def main(argv=None) -> None:
    parser = figure_parser(__doc__, "diagonal.png")
    parser.add_argument(
        "--mdps",
        type=int,
        default=defaults_of(diagonal_curves)["mdps"],
        help="random MDPs averaged per curve (default %(default)s)",
    )
    args = parser.parse_args(argv)
    print(plot_sampled_diagonals(args.out, diagonal_curves(args.mdps, args.seed)))


if __name__ == "__main__":
    main()
