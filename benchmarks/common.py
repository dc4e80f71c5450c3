"""Shared harness of the benchmark scripts.

Every script measures one workload at one size in its own process (clean peak
memory), prints one JSON line per metric and is driven by ``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import numpy as np

from bisimkit.generators import random_mdp
from bisimkit.solvers import solve
from validation.reference import timed_baseline

DISCOUNT = 0.9
TOL = 1e-9


def published_mdp(n: int, m: int = 4, seed: int = 0):
    """The published random-MDP recipe: random supports (1..n-1 entries zeroed), Dirichlet policy."""
    return random_mdp(n, m, seed=seed, discount=DISCOUNT)


def sparse_mdp(n: int, m: int = 4, seed: int = 0, successors: int = 8):
    """Random MDP with at most ``successors`` next states per (s, a), Dirichlet policy."""
    return random_mdp(n, m, seed=seed, discount=DISCOUNT, max_support=successors)


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def warm_up() -> None:
    """Compile the numba kernels outside the timed region (they are cached on disk)."""
    small = random_mdp(8, 2, seed=0, max_support=4)
    for metric in ("pi", "eps", "bisim", "eps-bar"):
        solve(small, metric)


def measure(workload: str, mdp, metric: str, budget: float, ground: str = "reward") -> dict:
    """bisimkit's time and peak memory on ``metric``, then the per-pair baseline's."""
    start = time.perf_counter()
    sol = solve(mdp, metric, ground=ground, tol=TOL)
    seconds = time.perf_counter() - start
    record = {"workload": workload, "metric": metric, "n": mdp.n_states, "m": mdp.n_actions,
              "seconds": seconds, "peak_mib": peak_rss_mib(), "certified_error": sol.certified_error,
              "iterations": sol.iterations, "method": sol.method, "converged": sol.converged}
    if budget > 0:
        base = timed_baseline(mdp, metric, tol=TOL, budget=budget, ground=ground)
        total = base["seconds"] if base["finished"] else base["seconds_extrapolated"]
        record["baseline"] = {**base, "seconds_total": total}
        record["ratio"] = total / seconds
    return record


def main(workload: str, build, metrics: list[str]) -> None:
    """Command line of a benchmark script: ``--n N [--budget S] [--seed K]``."""
    parser = argparse.ArgumentParser(description=f"benchmark: {workload}")
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--budget", type=float, default=30.0, help="baseline wall-clock budget per metric (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warm_up()
    mdp = build(args.n, args.seed)
    for metric in metrics:
        print(json.dumps(measure(workload, mdp, metric, args.budget), default=float))
        sys.stdout.flush()
