"""Workload: quotient-first solving (bisimkit/quotient.py) against solving the MDP itself.

Cases, each printed as one JSON line with the seconds both ways, their ratio and the blocks:

* ``mirrored-rooms``: the 31-state mirrored rooms with its policy (pi, psm, eps; the
  default method and value iteration) and without it (bisim: nothing merges);
* ``planted``: :func:`bisimkit.generators.planted_bisimulation` of a random sparse base
  MDP (``--base-n`` states, at most ``--base-support`` successors) with ``--copies``
  copies of every state (pi, eps). Each transition's mass is split over all copies of
  its target, so the copies' supports are ``copies`` times the base's and the plain
  solve grows quickly: at 100 x 10 with 2 successors its first coupling round alone
  took 280 s on 2 shared cores, hence the default 100 x 5 (n = 500);
* ``random``: random MDPs where nothing merges (sparse n = ``--random-n``, at most 8
  successors: pi, eps; the published dense recipe at n = 200: pi). ``overhead`` is
  the time of the quotient check itself (partition refinement, measured on its own)
  over the plain solve; the end-to-end ratio (alternating runs, best of two each) is
  noisier.

    python -m benchmarks.bench_quotient [--cases mirrored-rooms,planted,random] [--base-n 100]
        [--copies 5] [--base-support 2] [--random-n 1000]

Never run as a test (minutes at the default sizes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from benchmarks.common import DISCOUNT, TOL
from bisimkit.examples import example
from bisimkit.generators import planted_bisimulation, random_mdp
from bisimkit.quotient import quotient
from bisimkit.solvers import solve

CASES = ("mirrored-rooms", "planted", "random")


def warm_up() -> None:
    """Run every kind of operator once outside the timed region: the compiled kernels and the libraries a
    solve imports are loaded by then."""
    small = random_mdp(8, 2, seed=0, max_support=4)
    for metric in ("pi", "eps", "bisim", "psm"):
        solve(small, metric, quotient=False)
    planted, _ = planted_bisimulation(small, 2, seed=0)
    for metric in ("pi", "eps", "bisim", "psm"):
        solve(planted, metric)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def compare(case: str, mdp, metric: str, method: str = "auto", repeat: int = 1) -> dict:
    """Quotient-first and plain solve of ``metric`` on ``mdp`` (alternating, best of ``repeat``
    each), and the quotient check alone."""
    q, check = _timed(lambda: quotient(mdp, metric))
    runs: dict[bool, list] = {True: [], False: []}
    for _ in range(repeat):
        for use in (False, True):
            runs[use].append(_timed(lambda: solve(mdp, metric, tol=TOL, method=method, quotient=use)))
    (a, ta), (b, tb) = (min(runs[use], key=lambda r: r[1]) for use in (True, False))
    diff = float(abs(a.distances - b.distances).max())
    return {
        "case": case,
        "metric": metric,
        "method": method,
        "n": mdp.n_states,
        "m": mdp.n_actions,
        "blocks": mdp.n_states if q is None else q.n_blocks,
        "seconds_quotient": ta,
        "seconds_plain": tb,
        "speedup": tb / ta,
        "runs_quotient": [t for _, t in runs[True]],
        "runs_plain": [t for _, t in runs[False]],
        "quotient_check_seconds": check,
        "overhead": check / tb,
        "certified_error_quotient": a.certified_error,
        "certified_error_plain": b.certified_error,
        "max_difference": diff,
        "agree": diff <= a.certified_error + b.certified_error,
        "method_quotient": a.method,
        "method_plain": b.method,
    }


def emit(record: dict) -> None:
    print(json.dumps(record, default=float))
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description="benchmark: quotient-first solving")
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)} (default: all)"
    )
    parser.add_argument("--base-n", type=int, default=100, help="planted: states of the base MDP (default 100)")
    parser.add_argument("--copies", type=int, default=5, help="planted: copies of each base state (default 5)")
    parser.add_argument(
        "--base-support", type=int, default=2, help="planted: at most this many successors per base (s, a) (default 2)"
    )
    parser.add_argument("--random-n", type=int, default=1000, help="random: states of the sparse MDP (default 1000)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="planted, random: seed of the random MDPs and of the planted copies (default 0)",
    )
    args = parser.parse_args()
    cases = args.cases.split(",")
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"--cases: unknown {sorted(unknown)} (choose from {', '.join(CASES)})")
    warm_up()
    if "mirrored-rooms" in cases:
        rooms = example("mirrored-rooms-policy")
        for method in ("auto", "vi"):
            for metric in ("pi", "psm", "eps"):
                emit(compare("mirrored-rooms-policy", rooms, metric, method, repeat=5 if method == "auto" else 1))
        emit(compare("mirrored-rooms", example("mirrored-rooms"), "bisim", repeat=5))
    if "planted" in cases:
        base = random_mdp(args.base_n, 4, seed=args.seed, discount=DISCOUNT, max_support=args.base_support)
        mdp, _ = planted_bisimulation(base, args.copies, seed=args.seed)
        for metric in ("pi", "eps"):
            emit(compare(f"planted[{args.base_n} x{args.copies}]", mdp, metric))
    if "random" in cases:
        sparse = random_mdp(args.random_n, 4, seed=args.seed, discount=DISCOUNT, max_support=8)
        for metric in ("pi", "eps"):
            emit(compare("random-sparse", sparse, metric, repeat=2))
        emit(compare("random-dense", random_mdp(200, 4, seed=args.seed, discount=DISCOUNT), "pi", repeat=2))


if __name__ == "__main__":
    main()
