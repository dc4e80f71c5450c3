"""Solve times of this tree against another checkout, on the benchmark workloads, in one run.

Each round runs every workload once in each tree, alternating which goes first, each in
a fresh process with its kernels loaded outside the timed region (the workload
scripts' own ``--budget 0`` mode: bisimkit's solve only, no baseline). Both trees run on
this interpreter (``benchmarks.trees.tree_env``): the other tree's own dependencies (numba,
for a checkout whose kernels it compiles) must be installed in it. It prints the
median seconds of each side, their ratio (this tree / other), and each side's last
certificate and ``converged``, so a change to the solvers states what it costs.

``--cpu`` times the process CPU seconds of ``solve`` instead of wall seconds, on one
thread (``OMP_NUM_THREADS=1``, ``NUMBA_NUM_THREADS=1`` for a checkout that compiles with numba,
and one BLAS thread): on a machine shared with other work the wall clock measures the
neighbours, the CPU time much less so.

    python -m benchmarks.bench_revisions --against /path/to/other/checkout [--rounds 3] [--cpu]
                                         [--only pi-dense,bisim-sparse] [--out FILE.json]

The default workloads are the smallest size of every family in ``benchmarks/run.py``
(as ``--smallest`` runs them) and the dense π row at n = 200.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.trees import tree_env
from bisimkit.files import atomic_write_json

HERE = Path(__file__).resolve().parent.parent
#: (workload, module, n, metric)
CASES = [
    ("pi-dense", "benchmarks.bench_pi_dense", 50, "pi"),
    ("pi-dense", "benchmarks.bench_pi_dense", 200, "pi"),
    ("pi-eps-sparse", "benchmarks.bench_sparse", 60, "pi"),
    ("pi-eps-sparse", "benchmarks.bench_sparse", 60, "eps"),
    ("bisim-sparse", "benchmarks.bench_bisim", 60, "bisim"),
    ("eps-bar-sparse", "benchmarks.bench_eps_bar", 60, "eps-bar"),
    ("mico-dense", "benchmarks.bench_linear", 100, "mico"),
    ("mico-dense", "benchmarks.bench_linear", 100, "psm-sampled"),
]


#: ``--cpu``: one solve of a workload's MDP (built by the tree's own benchmarks.common), timed in CPU seconds.
CPU_PROBE = """
import json, sys, time, warnings
import benchmarks.common as common
from bisimkit.solvers import solve
common.warm_up()
build = {"pi-dense": common.published_mdp, "mico-dense": common.published_mdp}.get(sys.argv[1], common.sparse_mdp)
mdp = build(int(sys.argv[2]))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    start = time.process_time()
    sol = solve(mdp, sys.argv[3], tol=common.TOL)
    seconds = time.process_time() - start
print(json.dumps({"seconds": seconds, "certified_error": sol.certified_error, "converged": bool(sol.converged)}))
"""


def run_case(tree: Path, workload: str, module: str, n: int, metric: str, cpu: bool = False) -> dict:
    """One timed solve in a fresh process of ``tree``'s code."""
    if cpu:
        cmd = [sys.executable, "-c", CPU_PROBE, workload, str(n), metric]
    else:
        cmd = [sys.executable, "-m", module, "--n", str(n), "--budget", "0", "--metrics", metric]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=_env(tree, cpu))
    if proc.returncode != 0:
        raise RuntimeError(f"{tree}: {' '.join(cmd[1:])} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env(tree: Path, one_thread: bool) -> dict:
    threads = {key: "1" for key in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    return tree_env(tree, **(threads if one_thread else {}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="root of the other checkout (a git worktree, say)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="runs of each workload in each tree, alternating which goes first (median reported; default 3)",
    )
    parser.add_argument("--only", default=None, help="comma-separated workload names (default: all)")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds on one thread instead of wall seconds")
    parser.add_argument("--out", default=None, help="write the records as JSON")
    args = parser.parse_args(argv)
    other = Path(args.against).resolve()
    if not (other / "bisimkit" / "solvers.py").is_file():
        print(f"--against: {other} is not a bisimkit checkout (no bisimkit/solvers.py)", file=sys.stderr)
        return 2
    if args.rounds < 1:
        print(f"--rounds: must be at least 1, got {args.rounds}", file=sys.stderr)
        return 2
    cases = CASES if args.only is None else [c for c in CASES if c[0] in args.only.split(",")]
    if not cases:
        print(f"--only: no workload named {args.only} (choose from {sorted({c[0] for c in CASES})})", file=sys.stderr)
        return 2
    rows = []
    unit = "CPU s" if args.cpu else "s"
    print(
        f"| workload | n | metric | this tree ({unit}) | other ({unit}) | ratio | this certificate "
        "| other certificate |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for workload, module, n, metric in cases:
        runs: dict[str, list[dict]] = {"this": [], "other": []}
        for r in range(args.rounds):
            order = [("this", HERE), ("other", other)]
            for side, tree in order if r % 2 == 0 else order[::-1]:
                runs[side].append(run_case(tree, workload, module, n, metric, args.cpu))
        med = {side: statistics.median(x["seconds"] for x in recs) for side, recs in runs.items()}
        last = {side: recs[-1] for side, recs in runs.items()}
        row = {
            "workload": workload,
            "n": n,
            "metric": metric,
            "seconds": med,
            "ratio": med["this"] / med["other"],
            "certified_error": {s: last[s]["certified_error"] for s in last},
            "converged": {s: last[s]["converged"] for s in last},
        }
        rows.append(row)
        print(
            f"| {workload} | {n} | {metric} | {med['this']:.3f} | {med['other']:.3f} | {row['ratio']:.2f} | "
            f"{last['this']['certified_error']:.2g}{'' if last['this']['converged'] else ' (not converged)'} | "
            f"{last['other']['certified_error']:.2g} |",
            flush=True,
        )
    if args.out:
        atomic_write_json(args.out, {"against": str(other), "rounds": args.rounds, "cpu": args.cpu, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
