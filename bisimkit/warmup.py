"""Compile the numba kernels once (or load them from numba's disk cache).

``python -m bisimkit.warmup`` solves a small MDP with every kind of operator, which
compiles the transportation simplex, the coupling kernel and the assembly kernels.
``bisimkit verify`` runs it in a side process while the loss checks train.
"""

from __future__ import annotations

import os

from .generators import random_mdp
from .solvers import solve

#: One metric per compiled code path.
METRICS = ("pi", "eps", "bisim", "eps-bar", "dbc", "psm")
#: The kernels every solve path goes through (module, name): if numba has them on disk, nothing compiles.
KEY_KERNELS = (("bisimkit.couplings", "_csr_breakpoints"), ("bisimkit.couplings", "_merge_rows"),
               ("bisimkit.simplex", "_solve_supports_serial"), ("bisimkit.compiled", "_csr_matvec_serial"))
#: What a cold first solve prints, and about how long compiling takes on 2 cores.
COMPILING_NOTE = ("compiling the solver kernels (once, about 20 s on 2 cores; numba caches them on disk, "
                  "later runs start at once)")


def kernels_cached() -> bool | None:
    """Whether numba's disk cache holds the key kernels (None when that cannot be told)."""
    import importlib

    try:
        for module, name in KEY_KERNELS:
            kernel = getattr(importlib.import_module(module), name)
            if kernel.signatures:  # already compiled in this process
                continue
            if not os.path.exists(kernel._cache._cache_file._index_path):
                return False
        return True
    except Exception:  # numba internals moved: say nothing rather than something wrong
        return None


def warm_up() -> None:
    """Solve a random 8-state MDP with each of :data:`METRICS`."""
    mdp = random_mdp(8, 2, seed=0, max_support=4)
    for metric in METRICS:
        solve(mdp, metric)


if __name__ == "__main__":
    warm_up()
