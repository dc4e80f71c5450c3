"""Solve times of this tree against another checkout, on the benchmark workloads, in one run.

Each round runs every workload once in each tree, alternating which goes first, each in
a fresh process with its kernels compiled outside the timed region (the workload
scripts' own ``--budget 0`` mode: bisimkit's solve only, no baseline). It prints the
median seconds of each side, their ratio (this tree / other), and each side's last
certificate and ``converged``, so a change to the solvers states what it costs.

    python -m benchmarks.bench_revisions --against /path/to/other/checkout [--rounds 3]
                                         [--only pi-dense,bisim-sparse] [--out FILE.json]

The default workloads are the smallest size of every family in ``benchmarks/run.py``
(as ``--smallest`` runs them) and the dense π row at n = 200.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

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


def run_case(tree: Path, module: str, n: int, metric: str) -> dict:
    """One timed solve in a fresh process of ``tree``'s code."""
    cmd = [sys.executable, "-m", module, "--n", str(n), "--budget", "0", "--metrics", metric]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=_env(tree))
    if proc.returncode != 0:
        raise RuntimeError(f"{tree}: {' '.join(cmd[1:])} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env(tree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="root of the other checkout (a git worktree, say)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated workload names")
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
    print("| workload | n | metric | this tree (s) | other (s) | ratio | this certificate | other certificate |")
    print("|---|---|---|---|---|---|---|---|")
    for workload, module, n, metric in cases:
        runs: dict[str, list[dict]] = {"this": [], "other": []}
        for r in range(args.rounds):
            order = [("this", HERE), ("other", other)]
            for side, tree in (order if r % 2 == 0 else order[::-1]):
                runs[side].append(run_case(tree, module, n, metric))
        med = {side: statistics.median(x["seconds"] for x in recs) for side, recs in runs.items()}
        last = {side: recs[-1] for side, recs in runs.items()}
        row = {"workload": workload, "n": n, "metric": metric, "seconds": med, "ratio": med["this"] / med["other"],
               "certified_error": {s: last[s]["certified_error"] for s in last},
               "converged": {s: last[s]["converged"] for s in last}}
        rows.append(row)
        print(f"| {workload} | {n} | {metric} | {med['this']:.3f} | {med['other']:.3f} | {row['ratio']:.2f} | "
              f"{last['this']['certified_error']:.2g}{'' if last['this']['converged'] else ' (not converged)'} | "
              f"{last['other']['certified_error']:.2g} |", flush=True)
    if args.out:
        atomic_write_json(args.out, {"against": str(other), "rounds": args.rounds, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
