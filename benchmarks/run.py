"""Run every benchmark workload at several sizes; print the table, write JSON and the scaling plot.

Each (workload, size) runs in its own process (clean peak memory). For every
size it reports bisimkit's time and peak memory, the per-pair ``ot.emd2``
baseline's time (run under ``--budget`` seconds and extrapolated from its
per-sweep cost when it would not finish) and their ratio; then checks the
targets of the performance issue and fits the growth exponent of time in n.

    python -m benchmarks.run [--quick] [--only pi-dense,bisim-sparse] [--budget 30]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"

# (workload, script module, sizes, quick sizes, target check on the largest size)
WORKLOADS = [
    ("pi-dense", "benchmarks.bench_pi_dense", [50, 100, 200], [50], "ratio >= 50"),
    ("pi-eps-sparse", "benchmarks.bench_sparse", [250, 500, 1000], [100], "seconds < 60"),
    ("bisim-sparse", "benchmarks.bench_bisim", [125, 250, 500], [60], "seconds < 60"),
    ("eps-bar-sparse", "benchmarks.bench_eps_bar", [500, 1000, 2000], [200], "seconds < 30 and peak_mib < 4096"),
    ("mico-dense", "benchmarks.bench_linear", [500, 1000, 2000], [200], "seconds < 10"),
]


def run_script(module: str, n: int, budget: float) -> list[dict]:
    """Run one benchmark script; returns its JSON records."""
    proc = subprocess.run([sys.executable, "-m", module, "--n", str(n), "--budget", str(budget)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{module} --n {n} failed:\n{proc.stderr[-2000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def fit_exponent(ns, seconds) -> float:
    """Slope of log(seconds) against log(n)."""
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(seconds), 1)[0])


def table(records: list[dict]) -> str:
    """workload, metric, n, seconds, peak MiB, baseline seconds, ratio."""
    head = ("workload", "metric", "n", "bisimkit s", "peak MiB", "certified", "baseline s", "ratio")
    rows = []
    for r in records:
        base = r.get("baseline")
        btxt = "-" if base is None else f"{base['seconds_total']:.0f}" + ("" if base["finished"] else " (extrap.)")
        rows.append((r["workload"], r["metric"], str(r["n"]), f"{r['seconds']:.2f}", f"{r['peak_mib']:.0f}",
                     f"{r['certified_error']:.0e}", btxt, "-" if "ratio" not in r else f"{r['ratio']:.0f}x"))
    widths = [max(len(h), *(len(x[i]) for x in rows)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths))] + [fmt.format(*x) for x in rows])


def targets(records: list[dict]) -> list[tuple[str, str, bool, str]]:
    """Each workload's target evaluated on its largest size (every metric must meet it)."""
    out = []
    for name, _, _, _, check in WORKLOADS:
        rs = [r for r in records if r["workload"] == name]
        if not rs:
            continue
        top = max(r["n"] for r in rs)
        for r in (r for r in rs if r["n"] == top):
            env = {"seconds": r["seconds"], "peak_mib": r["peak_mib"], "ratio": r.get("ratio", float("nan"))}
            ok = bool(eval(check, {}, env))  # the checks are the fixed strings above
            out.append((f"{name} {r['metric']} n={top}", check, ok,
                        f"{r['seconds']:.1f} s, {r['peak_mib']:.0f} MiB" + (f", {r['ratio']:.0f}x" if "ratio" in r else "")))
    return out


def plot(records: list[dict], path: Path) -> None:
    """Log-log time against n per metric, with the baseline's (dashed) and fitted exponents."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    keys = sorted({(r["workload"], r["metric"]) for r in records})
    colors = plt.get_cmap("tab10")
    for k, (work, metric) in enumerate(keys):
        rs = sorted((r for r in records if (r["workload"], r["metric"]) == (work, metric)), key=lambda r: r["n"])
        ns = [r["n"] for r in rs]
        secs = [r["seconds"] for r in rs]
        ax.loglog(ns, secs, "o-", color=colors(k), label=f"{metric} ({work}): n^{fit_exponent(ns, secs):.2f}")
        base = [r["baseline"]["seconds_total"] for r in rs if "baseline" in r]
        if len(base) == len(rs):
            ax.loglog(ns, base, "x--", color=colors(k), alpha=0.6)
    ax.set_xlabel("states n")
    ax.set_ylabel("seconds to certified error 1e-9")
    ax.set_title("bisimkit (solid) vs per-pair ot.emd2 value iteration (dashed, extrapolated)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one small size per workload (a smoke run)")
    parser.add_argument("--only", default=None, help="comma-separated workload names")
    parser.add_argument("--budget", type=float, default=30.0, help="baseline seconds per metric and size (0: skip)")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--no-sinkhorn", action="store_true")
    args = parser.parse_args()
    only = None if args.only is None else set(args.only.split(","))
    out = Path(args.out)
    records: list[dict] = []
    start = time.perf_counter()
    for name, module, sizes, quick_sizes, _ in WORKLOADS:
        if only and name not in only:
            continue
        for n in (quick_sizes if args.quick else sizes):
            print(f"running {name} n={n} ...", file=sys.stderr, flush=True)
            records += run_script(module, n, args.budget)
    sinkhorn = []
    if not args.no_sinkhorn and (not only or "sinkhorn" in only):
        n = 50 if args.quick else 200
        print(f"running sinkhorn n={n} ...", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_sinkhorn", "--n", str(n)],
                              capture_output=True, text=True, check=True)
        sinkhorn = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    out.mkdir(parents=True, exist_ok=True)
    checks = targets(records)
    (out / "results.json").write_text(json.dumps({"records": records, "sinkhorn": sinkhorn,
                                                  "targets": checks, "seconds": time.perf_counter() - start},
                                                 indent=2, default=float))
    if records:
        plot(records, out / "scaling.png")
    print(table(records))
    print()
    for label, check, ok, got in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}: {check}  ({got})")
    for s in sinkhorn:
        print(f"sinkhorn reg={s['reg']}: {s['sweeps']} sweeps in {s['seconds']:.1f} s (bisimkit's exact time), "
              f"max error {s['max_error']:.3g} (mean {s['mean_error']:.3g}; distances up to {s['scale']:.3g})")
    print(f"\nwrote {out / 'results.json'} and {out / 'scaling.png'}")


if __name__ == "__main__":
    main()
