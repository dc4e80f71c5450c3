"""Two figures of docs/performance.md drawn from the committed benchmark records.

    python -m figures.performance [--results benchmarks/results] [--out docs]

* ``two_mdps.png``: CPU seconds of the union solve and of ``solve_between`` on the same two
  200-state MDPs, per metric, with their ratio (``benchmarks.bench_between``'s records
  ``between_dense.json`` (pi) and ``between_dense_<metric>.json``);
* ``memory_estimate.png``: the memory estimate of every solve against its measured peak, with the
  factor-1.5 band the estimate is held to (``benchmarks.bench_memory``'s ``memory.json``).

:func:`plot_two_mdps` and :func:`plot_memory_estimate` draw the values they are given.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from .style import plt, save

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def two_mdps_rows(results: Path) -> list[tuple[str, float, float]]:
    """(metric, union CPU s, between CPU s) of every ``between_dense*.json`` under ``results``."""
    rows = []
    for path in sorted(Path(results).glob("between_dense*.json")):
        record = json.loads(path.read_text())
        cpu = record["median_cpu_seconds"]
        rows.append((str(record["metric"]), float(cpu["union"]), float(cpu["between"])))
    return sorted(rows, key=lambda r: -r[1])


def plot_two_mdps(path, rows: list[tuple[str, float, float]]) -> Path:
    """Paired bars on a log axis, one pair per metric, the ratio union / between above each."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    x = np.arange(len(rows))
    union = np.array([r[1] for r in rows])
    between = np.array([r[2] for r in rows])
    ax.bar(x - 0.2, union, 0.4, label="union solve (all pairs of the 400-state union)", color="tab:grey")
    ax.bar(x + 0.2, between, 0.4, label="solve_between (the 200 x 200 cross pairs)", color="tab:blue")
    for k, (u, b) in enumerate(zip(union, between)):
        ax.annotate(f"{u / b:.2f}x", (k, max(u, b)), textcoords="offset points", xytext=(0, 4), ha="center")
    ax.set_yscale("log")
    ax.set_xticks(x, [r[0] for r in rows])
    ax.set_ylabel("CPU seconds (median, one thread)")
    ax.set_ylim(top=max(union.max(), between.max()) * 8)
    ax.set_title("Two 200-state MDPs (published recipe, m = 4, c = 0.9, tol 1e-9)")
    ax.legend(loc="upper right", fontsize=8)
    return save(fig, path, tight=True)


def memory_rows(results: Path) -> list[tuple[str, float, float]]:
    """(workload, estimate MiB, measured MiB) of ``memory.json`` under ``results``."""
    record = json.loads((Path(results) / "memory.json").read_text())
    return [(str(r["workload"]), r["estimate_bytes"] / 2**20, r["measured_bytes"] / 2**20) for r in record["records"]]


def plot_memory_estimate(path, rows: list[tuple[str, float, float]], factor: float = 1.5) -> Path:
    """Estimate against measured peak on log axes, one colour per workload, the line of equality
    and the band within ``factor`` of it."""
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    values = np.array([[r[1], r[2]] for r in rows])
    lo, hi = values.min() / 2, values.max() * 2
    grid = np.geomspace(lo, hi, 50)
    ax.fill_between(
        grid, grid / factor, grid * factor, color="tab:green", alpha=0.15, label=f"within a factor of {factor:g}"
    )
    ax.plot(grid, grid, color="tab:green", lw=1)
    for k, workload in enumerate(dict.fromkeys(r[0] for r in rows)):
        pts = np.array([[r[2], r[1]] for r in rows if r[0] == workload])
        ax.scatter(pts[:, 0], pts[:, 1], s=24, color=plt.cm.tab10(k % 10), label=workload, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured peak (MiB)")
    ax.set_ylabel("estimate before the solve (MiB)")
    ax.set_title("Memory estimate against the measured peak")
    ax.legend(fontsize=7, loc="upper left")
    return save(fig, path, tight=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(RESULTS), help="folder of the benchmark records")
    parser.add_argument("--out", default="docs", help="folder the two PNGs are written to")
    args = parser.parse_args(argv)
    out = Path(args.out)
    print(plot_two_mdps(out / "two_mdps.png", two_mdps_rows(Path(args.results))))
    print(plot_memory_estimate(out / "memory_estimate.png", memory_rows(Path(args.results))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
