"""Self-distance d(s, s) of the sampled DBC / PSM fixed points against policy stochasticity.

Transitions are deterministic and the policy is blended from a deterministic
one (lambda = 0, every self-distance is 0) to a random stochastic one
(lambda = 1), so any d(s, s) > 0 comes from the policy's randomness. The
entangled and Wasserstein metrics keep d(s, s) = 0 throughout.

    python -m figures.diagonal --out diagonal.png [--mdps 8 --seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from bisimkit.generators import random_mdp
from bisimkit.solvers import solve

from .style import plt, save

METRICS = [("dbc-sampled", "tab:red"), ("psm-sampled", "tab:orange"), ("mico", "tab:purple"),
           ("eps-bar", "tab:green"), ("pi", "tab:blue")]


def diagonal_curves(mdps: int = 8, seed: int = 0, points: int = 9):
    """Mean policy entropy and mean d(s, s) per metric along the blend, over ``mdps`` MDPs."""
    rng = np.random.default_rng(seed)
    lambdas = np.linspace(0, 1, points)
    entropy = np.zeros(points)
    curves = {m: np.zeros(points) for m, _ in METRICS}
    for _ in range(mdps):
        base = random_mdp(6, 3, rng, discount=0.9, deterministic=True, policy="deterministic")
        target = rng.dirichlet(np.ones(base.n_actions), size=base.n_states)
        for k, lam in enumerate(lambdas):
            pi = (1 - lam) * base.policy + lam * target
            mdp = base.with_policy(pi)
            with np.errstate(divide="ignore", invalid="ignore"):
                h = -np.nansum(np.where(pi > 0, pi * np.log(pi), 0.0), axis=1)
            entropy[k] += h.mean() / mdps
            for metric, _ in METRICS:
                curves[metric][k] += np.diag(solve(mdp, metric, tol=1e-8).distances).mean() / mdps
    return lambdas, entropy, curves


def plot_sampled_diagonals(path, mdps: int = 8, seed: int = 0, points: int = 9):
    """Mean d(s, s) against the mean policy entropy."""
    lambdas, entropy, curves = diagonal_curves(mdps, seed, points)
    fig, ax = plt.subplots(figsize=(6, 4))
    for metric, color in METRICS:
        ax.plot(entropy, curves[metric], marker="o", color=color, label=metric)
    ax.set_xlabel("mean policy entropy (nats): deterministic -> random stochastic policy")
    ax.set_ylabel("mean self-distance d(s, s)")
    ax.set_title(f"Sampled operators lose d(s,s) = 0 as the policy gets random\n"
                 f"({mdps} random MDPs, n=6, m=3, deterministic transitions)")
    ax.legend()
    fig.tight_layout()
    return save(fig, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="diagonal.png")
    parser.add_argument("--mdps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(plot_sampled_diagonals(args.out, args.mdps, args.seed))


if __name__ == "__main__":
    main()
