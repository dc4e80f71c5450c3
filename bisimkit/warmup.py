"""Compile the numba kernels once (or load them from numba's disk cache).

``python -m bisimkit.warmup`` solves a small MDP with every kind of operator, which
compiles the transportation simplex, the coupling kernel and the assembly kernels.
``bisimkit verify`` runs it in a side process while the loss checks train.
"""

from __future__ import annotations

from .generators import random_mdp
from .solvers import solve

#: One metric per compiled code path.
METRICS = ("pi", "eps", "bisim", "eps-bar", "dbc", "psm")


def warm_up() -> None:
    """Solve a random 8-state MDP with each of :data:`METRICS`."""
    mdp = random_mdp(8, 2, seed=0, max_support=4)
    for metric in METRICS:
        solve(mdp, metric)


if __name__ == "__main__":
    warm_up()
