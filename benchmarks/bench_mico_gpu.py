"""MICo-type fixed points with the torch backend against the numpy path, and one large solve on a device.

    python -m benchmarks.bench_mico_gpu --device cuda --sizes 1000,2000,4000 --target 20000 --run-target \
        --out benchmarks/results/gpu/mico.json [--metrics mico,psm-sampled] [--rounds 3] [--limit 540]

On the dense published-recipe MDPs of ``benchmarks.bench_linear`` (m = 4, c = 0.9, certified
error 1e-9), for each size in ``--sizes`` and each metric: the numpy path (``backend="numpy"``)
and the torch path on ``--device`` (``backend="torch"``), median of ``--rounds`` solves each, both
certificates, and whether the two solutions agree within the sum of their certificates. Then
the numpy times are fitted by ``seconds = a n^k`` (least squares in log-log over the sizes whose
median is at least 0.05 s) and extrapolated to ``--target`` (the recorded 2-core run of
``benchmarks/results/results.json`` is fitted and extrapolated beside it). With ``--run-target``
the torch path also solves the ``--target`` MDP, once, and records its time, certificate and
peak device memory (``torch.cuda.max_memory_allocated``; on a CPU the process's peak resident
memory). The JSON is rewritten after every step, so a run stopped at ``--limit`` or killed
still leaves what it measured. MDP construction is timed apart from the solves.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bisimkit.files import atomic_write_json
from bisimkit.generators import random_mdp
from bisimkit.operators import physical_memory
from bisimkit.solvers import solve

# The workload of benchmarks.bench_linear (benchmarks.common.published_mdp, TOL, peak_rss_mib), restated
# here because benchmarks.common loads the per-pair baseline and with it POT, which a GPU machine's
# image does not have.
DISCOUNT = 0.9
TOL = 1e-9


def published_mdp(n: int, m: int = 4, seed: int = 0):
    """The published random-MDP recipe of ``benchmarks.common.published_mdp``."""
    return random_mdp(n, m, seed=seed, discount=DISCOUNT)


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


RECORDED = Path(__file__).resolve().parent / "results" / "results.json"
FIT_MIN_SECONDS = 0.05


def fit_exponent(sizes: list[int], seconds: list[float]) -> tuple[float, float] | None:
    """``(k, a)`` of the least-squares fit ``seconds = a n^k`` in log-log (None under two points)."""
    points = [(n, s) for n, s in zip(sizes, seconds) if s >= FIT_MIN_SECONDS]
    if len(points) < 2:
        return None
    x = np.log([n for n, _ in points])
    y = np.log([s for _, s in points])
    k, log_a = np.polyfit(x, y, 1)
    return float(k), float(math.exp(log_a))


def recorded_fit(metric: str) -> dict | None:
    """The fit of the recorded 2-core dense run (``benchmarks.run``'s results.json), if there is one."""
    try:
        records = json.loads(RECORDED.read_text())["records"]
    except (OSError, ValueError, KeyError):
        return None
    rows = sorted(
        (r["n"], r["seconds"]) for r in records if r.get("workload") == "mico-dense" and r["metric"] == metric
    )
    fit = fit_exponent([n for n, _ in rows], [s for _, s in rows])
    if fit is None:
        return None
    return {
        "sizes": [n for n, s in rows if s >= FIT_MIN_SECONDS],
        "exponent": fit[0],
        "coefficient": fit[1],
        "source": str(RECORDED.name),
    }


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch  # optional extra, only with a torch device

        torch.cuda.synchronize()


def _peak_device_mib(device: str) -> float:
    if device.startswith("cuda"):
        import torch  # optional extra, only with a torch device

        return torch.cuda.max_memory_allocated() / 2**20
    return peak_rss_mib()


def _reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        import torch  # optional extra, only with a torch device

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def timed_solve(mdp, metric: str, backend: str, device: str | None, rounds: int) -> tuple[dict, np.ndarray]:
    """Median time of ``rounds`` solves, with the last solve's certificate and distances."""
    times, cpu = [], []
    sol = None
    for _ in range(rounds):
        if backend == "torch":
            _reset_peak(device)
            _sync(device)
        start, start_cpu = time.perf_counter(), time.process_time()
        sol = solve(mdp, metric, tol=TOL, backend=backend, device=device if backend == "torch" else None)
        if backend == "torch":
            _sync(device)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    record = {
        "seconds": statistics.median(times),
        "seconds_all": times,
        "cpu_seconds": statistics.median(cpu),
        "certified_error": sol.certified_error,
        "converged": sol.converged,
        "steps": sol.iterations,
        "method": sol.method,
    }
    if backend == "torch":
        record["peak_mib"] = _peak_device_mib(device)
        record["peak_kind"] = "torch.cuda.max_memory_allocated" if device.startswith("cuda") else "process peak RSS"
    return record, sol.distances


def _predicted_build(out: dict, n: int) -> float:
    """Seconds to build the n-state MDP, from the largest size built so far (the recipe is O(n^2 m))."""
    built = [(int(k), row["build_seconds"]) for k, row in out["sizes"].items()]
    if not built:
        return 0.0
    size, seconds = max(built)
    return seconds * (n / size) ** 2


def environment(device: str) -> dict:
    import torch  # optional extra, only with a torch device

    env = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "machine": platform.platform(),
        "device": device,
        "thread_variables": {
            k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ
        },
    }
    if device.startswith("cuda"):
        env["device_name"] = torch.cuda.get_device_name(torch.device(device))
        env["device_memory_gib"] = torch.cuda.get_device_properties(torch.device(device)).total_memory / 2**30
    try:
        from threadpoolctl import threadpool_info  # optional: which BLAS numpy uses, with how many threads

        env["blas"] = [{k: i.get(k) for k in ("internal_api", "num_threads", "version")} for i in threadpool_info()]
    except ImportError:
        pass
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="torch device of the torch path (default cuda)")
    parser.add_argument(
        "--sizes", default="1000,2000,4000", help="n of the numpy/torch comparison (default 1000,2000,4000)"
    )
    parser.add_argument("--metrics", default="mico", help="comma-separated: mico, psm-sampled (default mico)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="solves per size and path; the median is kept (default 3)"
    )
    parser.add_argument("--target", type=int, default=20000, help="n the numpy time is extrapolated to (default 20000)")
    parser.add_argument("--run-target", action="store_true", help="also solve the --target MDP with the torch path")
    parser.add_argument(
        "--limit",
        type=float,
        default=540.0,
        help="seconds for the whole run: a numpy solve predicted to overrun it is skipped (default 540)",
    )
    parser.add_argument("--out", required=True, help="the JSON file (rewritten after every step)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    sizes = sorted(int(n) for n in args.sizes.split(","))
    metrics = args.metrics.split(",")
    out: dict = {
        "workload": "mico-dense (published recipe, m = 4, c = 0.9)",
        "tol": TOL,
        "device": args.device,
        "environment": environment(args.device),
        "sizes": {},
        "fits": {},
        "target": None,
    }
    save = lambda: atomic_write_json(args.out, out)  # noqa: E731

    # CUDA context and kernels start once, outside the timings
    warm = time.perf_counter()
    solve(published_mdp(50, seed=1), "mico", backend="torch", device=args.device)
    out["torch_start_seconds"] = time.perf_counter() - warm
    save()

    numpy_times: dict[str, list[tuple[int, float]]] = {m: [] for m in metrics}
    for n in sizes:
        t0 = time.perf_counter()
        mdp = published_mdp(n)
        row: dict = {"build_seconds": time.perf_counter() - t0}
        for metric in metrics:
            entry: dict = {}
            torch_rec, D_torch = timed_solve(mdp, metric, "torch", args.device, args.rounds)
            entry["torch"] = torch_rec
            fit = fit_exponent(*zip(*numpy_times[metric])) if len(numpy_times[metric]) >= 2 else None
            left = args.limit - (time.perf_counter() - start)
            predicted = fit[1] * n ** fit[0] * args.rounds if fit else None
            if predicted is not None and predicted > left / 2:
                entry["numpy"] = {"skipped": f"predicted {predicted:.0f} s for {args.rounds} rounds, {left:.0f} s left"}
            else:
                numpy_rec, D_numpy = timed_solve(mdp, metric, "numpy", None, args.rounds)
                entry["numpy"] = numpy_rec
                numpy_times[metric].append((n, numpy_rec["seconds"]))
                gap = float(np.max(np.abs(D_torch - D_numpy)))
                entry["max_difference"] = gap
                entry["within_certificates"] = gap <= torch_rec["certified_error"] + numpy_rec["certified_error"]
                entry["speedup"] = numpy_rec["seconds"] / torch_rec["seconds"]
            row[metric] = entry
            print(
                json.dumps(
                    {
                        "n": n,
                        "metric": metric,
                        "torch_s": torch_rec["seconds"],
                        "numpy_s": entry["numpy"].get("seconds"),
                        "agree": entry.get("within_certificates"),
                    }
                ),
                flush=True,
            )
        row["process_peak_rss_mib"] = peak_rss_mib()
        out["sizes"][str(n)] = row
        del mdp
        for metric in metrics:
            fit = fit_exponent(*zip(*numpy_times[metric])) if len(numpy_times[metric]) >= 2 else None
            out["fits"][metric] = {
                "numpy_sizes": [n for n, _ in numpy_times[metric]],
                "exponent": None if fit is None else fit[0],
                "coefficient": None if fit is None else fit[1],
                "numpy_seconds_at_target": None if fit is None else fit[1] * args.target ** fit[0],
                "recorded_2core": recorded_fit(metric),
            }
            rec = out["fits"][metric]["recorded_2core"]
            if rec is not None:
                rec["seconds_at_target"] = rec["coefficient"] * args.target ** rec["exponent"]
        save()

    # the target MDP's dense transitions (n x m x n float64) take up to four copies while they are built and
    # validated, and the solve four n x n float64 arrays on the host
    need = 4 * 8 * args.target**2 * 4 + 4 * 8 * args.target**2
    if args.run_target and need > 0.8 * physical_memory():
        out["target"] = {
            "n": args.target,
            "skipped": f"needs about {need / 2**30:.0f} GiB of host memory, "
            f"this machine has {physical_memory() / 2**30:.0f} GiB",
        }
    elif args.run_target and _predicted_build(out, args.target) > args.limit - (time.perf_counter() - start):
        out["target"] = {
            "n": args.target,
            "skipped": f"building it would take about {_predicted_build(out, args.target):.0f} s, more than is left",
        }
    elif args.run_target:
        left = args.limit - (time.perf_counter() - start)
        t0 = time.perf_counter()
        mdp = published_mdp(args.target)
        target: dict = {"n": args.target, "build_seconds": time.perf_counter() - t0}
        for metric in metrics[:1]:
            rec, D = timed_solve(mdp, metric, "torch", args.device, 1)
            fit = out["fits"].get(metric, {})
            rec["numpy_seconds_extrapolated"] = fit.get("numpy_seconds_at_target")
            rec["numpy_exponent"] = fit.get("exponent")
            rec["max_distance"] = float(D.max())
            target[metric] = rec
            print(
                json.dumps(
                    {
                        "n": args.target,
                        "metric": metric,
                        "torch_s": rec["seconds"],
                        "certified_error": rec["certified_error"],
                        "peak_mib": rec["peak_mib"],
                    }
                ),
                flush=True,
            )
        target["seconds_left_before"] = left
        out["target"] = target
        save()
    out["seconds"] = time.perf_counter() - start
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
