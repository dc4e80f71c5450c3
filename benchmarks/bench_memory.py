"""The memory estimate of ``bisimkit.memory`` against measured peaks, three sizes per solver path.

    python -m benchmarks.bench_memory [--out benchmarks/results/memory.json] [--workloads pi-dense,...]

Each (workload, size) runs in a fresh process: the same workload on at most 64 states runs first (the kernels
it loads or compiles stay out of the measurement), the
MDP is built, the peak-resident mark is reset (``/proc/self/clear_refs``), and the solve's peak is
the new high-water mark (``VmHWM``) less the resident size just before it (glibc told to map
large blocks and return them when freed, :data:`MALLOC_ENV`). That is compared with
:func:`bisimkit.memory.estimate_solve`; the estimate is held within a factor 1.5 of it
(:data:`FACTOR`). ``--one WORKLOAD N`` measures one case and prints its JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import published_mdp, sparse_mdp
from bisimkit.files import atomic_write_json

#: How far the estimate may be from the measured peak, either way.
FACTOR = 1.5

#: workload -> (metric, MDP family, sizes).
WORKLOADS = {
    "pi-dense": ("pi", "dense", (60, 100, 140)),
    "pi-sparse": ("pi", "sparse", (150, 300, 450)),
    "bisim-sparse": ("bisim", "sparse", (100, 200, 300)),
    "eps-sparse": ("eps", "sparse", (60, 120, 180)),
    "eps-bar-sparse": ("eps-bar", "sparse", (300, 600, 900)),
    "mico-dense": ("mico", "dense", (1000, 1800, 2600)),
    "dbc-sparse": ("dbc", "sparse", (80, 120, 160)),
}


#: glibc maps every block from 128 kB on and unmaps it when freed (no dynamic threshold), so the
#: resident size follows the live arrays instead of reusing freed heap pages.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}
#: Size of the solve of the same workload that runs before the measured one.
WARM_STATES = 64


def build(family: str, n: int):
    """The benchmark MDPs: the published dense recipe, or at most 8 successors per (s, a)."""
    return published_mdp(n) if family == "dense" else sparse_mdp(n)


def _status_bytes(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def measure_one(workload: str, n: int) -> dict:
    """Solve one case in this process and return its measured peak beside its estimate."""
    from bisimkit.memory import estimate_solve
    from bisimkit.solvers import solve

    metric, family, _ = WORKLOADS[workload]
    # the same path on at most WARM_STATES states first: the kernels it loads or compiles (a fresh
    # checkout compiles them here) stay out of the measurement
    solve(build(family, min(n, WARM_STATES)), metric, quotient=False)
    mdp = build(family, n)
    estimate = estimate_solve(mdp, metric)
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current resident size
    before = _status_bytes("VmRSS")
    start = time.perf_counter()
    sol = solve(mdp, metric, quotient=False)
    seconds = time.perf_counter() - start
    peak = _status_bytes("VmHWM") - before
    return {
        "workload": workload,
        "metric": metric,
        "n": n,
        "m": mdp.n_actions,
        "method": sol.method,
        "estimate_bytes": estimate.bytes,
        "estimate_path": estimate.path,
        "estimate_sizes": estimate.sizes,
        "measured_bytes": peak,
        "ratio": estimate.bytes / peak,
        "seconds": seconds,
    }


def measure_in_child(workload: str, n: int, python: str = sys.executable, timeout: float = 900) -> dict:
    """:func:`measure_one` in a fresh interpreter (a clean high-water mark)."""
    out = subprocess.run(
        [python, "-m", "benchmarks.bench_memory", "--one", workload, str(n)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
        env={**os.environ, **MALLOC_ENV},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(records: list[dict]) -> str:
    """The markdown table of docs/performance.md#memory."""
    lines = [
        "| workload | n | path | estimate | measured peak | estimate / measured |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for r in records:
        lines.append(
            f"| {r['workload']} | {r['n']} | {r['estimate_path']} | {r['estimate_bytes'] / 1e6:.0f} MB "
            f"| {r['measured_bytes'] / 1e6:.0f} MB | {r['ratio']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_memory", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out",
        default="benchmarks/results/memory.json",
        help="the JSON file of the records (default benchmarks/results/memory.json)",
    )
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)} (default: all)"
    )
    parser.add_argument("--one", nargs=2, metavar=("WORKLOAD", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure_one(args.one[0], int(args.one[1]))))
        return 0
    records = []
    for workload in args.workloads.split(","):
        for n in WORKLOADS[workload][2]:
            record = measure_in_child(workload, n)
            records.append(record)
            print(json.dumps(record), flush=True)
    atomic_write_json(
        args.out,
        {"factor": FACTOR, "machine": platform.machine(), "python": platform.python_version(), "records": records},
    )
    print(table(records))
    bad = [r for r in records if not 1 / FACTOR <= r["ratio"] <= FACTOR]
    print(f"{len(records) - len(bad)} of {len(records)} within a factor {FACTOR:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
