"""Helpers for the benchmark scripts: workload MDPs, timing, peak memory, JSON output."""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

from bisimkit.generators import random_mdp

RESULTS = Path(__file__).parent / "results"


def published_mdp(n: int, m: int = 4, seed: int = 0, discount: float = 0.9):
    """The published random-MDP recipe: dense random supports, Dirichlet policy."""
    return random_mdp(n, m, seed=seed, discount=discount)


def sparse_mdp(n: int, m: int = 4, seed: int = 0, discount: float = 0.9, successors: int = 8):
    """Random MDP with at most ``successors`` next states per (s, a), Dirichlet policy."""
    return random_mdp(n, m, seed=seed, discount=discount, max_support=successors)


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn, *args, **kwargs):
    """``(result, seconds)``."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def emit(record: dict) -> None:
    """Print one JSON line (the runner reads the last line of each script's stdout)."""
    print(json.dumps(record, default=float))
    sys.stdout.flush()


def warm_up() -> None:
    """Compile the numba kernels outside the timed region."""
    from bisimkit.solvers import solve

    solve(random_mdp(6, 2, seed=0, max_support=4), "eps")
    solve(random_mdp(6, 2, seed=0, max_support=4), "pi")
