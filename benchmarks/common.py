"""Shared harness of the benchmark scripts.

Every script measures one workload at one size in its own process (clean peak
memory), prints one JSON line per metric and is driven by ``benchmarks.run`` (one metric per
process there).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

from benchmarks.baseline import timed_baseline
from bisimkit.generators import random_mdp
from bisimkit.solvers import solve

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
    """Run every kind of operator once outside the timed region: the compiled kernels and the libraries a
    solve imports are loaded by then."""
    small = random_mdp(8, 2, seed=0, max_support=4)
    for metric in ("pi", "eps", "bisim", "eps-bar"):
        solve(small, metric)


def measure(
    workload: str,
    mdp,
    metric: str,
    budget: float,
    ground: str = "reward",
    contraction: float | None = None,
    contraction_source: str | None = None,
    finish: bool = False,
) -> dict:
    """bisimkit's time and peak memory on ``metric``, then the per-pair baseline's on the same MDP.

    ``peak_mib`` is taken before the baseline runs. ``first_round_seconds`` is the
    elapsed time when the solver's first round (coupling round, sweep, ...) ended.
    The baseline runs to completion when it can within ``budget`` seconds, else it
    is extrapolated (``contraction``: the one observed at smaller n of this family);
    see :func:`benchmarks.baseline.timed_baseline`.
    """
    start = time.perf_counter()
    sol = solve(mdp, metric, ground=ground, tol=TOL)
    seconds = time.perf_counter() - start
    record = {
        "workload": workload,
        "metric": metric,
        "n": mdp.n_states,
        "m": mdp.n_actions,
        "seconds": seconds,
        "peak_mib": peak_rss_mib(),
        "certified_error": sol.certified_error,
        "iterations": sol.iterations,
        "method": sol.method,
        "converged": sol.converged,
        "first_round_seconds": sol.history_seconds[0] if sol.history_seconds else None,
        "history_seconds": list(sol.history_seconds),
    }
    if budget > 0:
        base = timed_baseline(
            mdp,
            metric,
            tol=TOL,
            budget=budget,
            ground=ground,
            contraction=contraction,
            contraction_source=contraction_source,
            finish=finish,
        )
        record["baseline"] = base
        record["ratio"] = base["seconds_total"] / seconds
    return record


def main(workload: str, build, metrics: list[str]) -> None:
    """Command line of a benchmark script; prints one JSON record per metric."""
    parser = argparse.ArgumentParser(description=f"benchmark: {workload}")
    parser.add_argument("--n", type=int, required=True, help="states of the MDP")
    parser.add_argument(
        "--budget",
        type=float,
        default=1800.0,
        help="the baseline runs to completion only if it can within this many seconds "
        "(else it stops early and is extrapolated); 0: skip it (default 1800)",
    )
    parser.add_argument("--metrics", default=None, help=f"comma-separated subset of {','.join(metrics)} (default: all)")
    parser.add_argument(
        "--contraction",
        type=float,
        default=None,
        help="per-sweep contraction of the baseline's step observed at smaller n of this family",
    )
    parser.add_argument("--contraction-from", default=None, help='where --contraction was observed, e.g. "n=50,100"')
    parser.add_argument(
        "--finish",
        action="store_true",
        help="run the baseline to completion whatever the budget, and report the extrapolation "
        "the budget would have given next to the measurement",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random MDP (default 0)")
    args = parser.parse_args()
    chosen = metrics if args.metrics is None else args.metrics.split(",")
    unknown = set(chosen) - set(metrics)
    if unknown:
        parser.error(f"unknown metric(s) {sorted(unknown)} for {workload}: {metrics}")
    warm_up()
    mdp = build(args.n, args.seed)
    for metric in chosen:
        print(
            json.dumps(
                measure(
                    workload,
                    mdp,
                    metric,
                    args.budget,
                    contraction=args.contraction,
                    contraction_source=args.contraction_from,
                    finish=args.finish,
                ),
                default=float,
            )
        )
        sys.stdout.flush()
