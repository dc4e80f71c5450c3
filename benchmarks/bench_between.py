"""Distances between two MDPs: ``solve_between`` against the union solve, side by side in one run.

Dense (default): two MDPs of the published recipe (``benchmarks.common.published_mdp``, seeds 0
and 1), n states each. Each round solves the cross block both ways, side by side in two fresh
processes started together (so both see the same load, kernels compiled before the timed
region): ``solve`` on the disjoint union (all (2n)^2 / 2 pairs, its cross block read off) and
``solve_between`` (the n^2 cross pairs only). It prints one JSON line per solve and a summary
line with the median seconds, their ratio (union / between), the largest difference between the
two cross blocks and the two certificates.

    python -m benchmarks.bench_between --n 200 [--metric pi] [--rounds 1] [--out FILE.json]

Both wall seconds and the process's CPU seconds are recorded (on a machine shared with other
work the CPU time measures the solve, the wall clock also the neighbours); for one thread set
``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` as ``bench_revisions --cpu`` does.

SVI (``--svi-repo``): the benchmark pairs of Calo et al.'s Sinkhorn value iteration (a
checkout of https://github.com/SergioCalo/SVI; its Markov chains with a state reward and an
initial state, discount 0.95). Each pair is solved with ``solve_between`` (pi with one action,
the same fixed point as their bisimulation metric) and, when ``--svi-code`` is importable (its
``code/`` folder, numpy only), with SVI run as their ``run_experiment.py`` runs it; the error of
SVI's ``V[x0, y0]`` is measured against the certified value.

    python -m benchmarks.bench_between --svi-repo PATH [--svi-code PATH/code] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import TOL, published_mdp, warm_up
from bisimkit.between import BETWEEN_METRICS, disjoint_union, solve_between
from bisimkit.files import atomic_write_json
from bisimkit.mdp import FiniteMDP
from bisimkit.solvers import solve

#: The discount of SVI's ``run_experiment.py``.
SVI_DISCOUNT = 0.95
#: SVI's benchmark pairs (paths under its ``benchmarks/``): its README's example pair and
#: pairs from each of its families, deterministic planning problems and stochastic grids.
SVI_PAIRS = [
    ("deterministic/miconic/p01.json", "deterministic/miconic/p02.json"),
    ("deterministic/miconic/p01.json", "deterministic/miconic/p03.json"),
    ("deterministic/blocksworld/p01.json", "deterministic/blocksworld/p02.json"),
    ("deterministic/ferry/p01.json", "deterministic/ferry/p02.json"),
    ("deterministic/gripper/p01.json", "deterministic/gripper/p02.json"),
    ("deterministic/transport/p01.json", "deterministic/transport/p02.json"),
    ("deterministic/visitall/p01.json", "deterministic/visitall/p02.json"),
    ("stochastic/3_rewards_random/pi_0.2_0.json", "stochastic/3_rewards_random/pi_0.2_13.json"),
    ("stochastic/3_rewards/pi_star_A_1.json", "stochastic/3_rewards/pi_star_B_1.json"),
    ("stochastic/4-rooms/p0.json", "stochastic/4-rooms/p1.json"),
]


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _timed_cpu(fn):
    """``(out, wall seconds, CPU seconds of this process)``."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - start, time.process_time() - cpu


def one_side(side: str, n: int, metric: str, block_path: str) -> dict:
    """One solve of ``side`` ("union" or "between") on the dense pair; its cross block saved to ``block_path``."""
    a, b = published_mdp(n, seed=0), published_mdp(n, seed=1)
    if side == "union":
        union = disjoint_union(a, b)
        sol, seconds, cpu = _timed_cpu(lambda: solve(union, metric, tol=TOL))
        block = sol.distances[:n, n:]
    else:
        sol, seconds, cpu = _timed_cpu(lambda: solve_between(a, b, metric, tol=TOL))
        block = sol.distances
    np.save(block_path, block)
    return {
        "side": side,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "certified_error": sol.certified_error,
        "converged": bool(sol.converged),
        "iterations": sol.iterations,
        "method": sol.method,
        "history_seconds": list(sol.history_seconds),
    }


def dense(n: int, metric: str, rounds: int) -> dict:
    """Union and between on two published-recipe MDPs, side by side: each round runs the two solves
    at the same time in two fresh processes (same load on both); medians, ratio and agreement."""
    runs: dict[str, list[dict]] = {"union": [], "between": []}
    blocks = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            procs = {}
            for side in ("union", "between"):
                path = str(Path(tmp) / f"{side}.npy")
                cmd = [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_between",
                    "--side",
                    side,
                    "--n",
                    str(n),
                    "--metric",
                    metric,
                    "--block",
                    path,
                ]
                procs[side] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True), path)
            for side, (proc, path) in procs.items():
                out, _ = proc.communicate()
                if proc.returncode != 0:
                    raise RuntimeError(f"the {side} solve failed (exit {proc.returncode})")
                rec = json.loads(out.strip().splitlines()[-1])
                rec["round"] = r
                runs[side].append(rec)
                blocks[side] = np.load(path)
                print(json.dumps(rec), flush=True)
    med = {side: statistics.median(x["seconds"] for x in recs) for side, recs in runs.items()}
    med_cpu = {side: statistics.median(x["cpu_seconds"] for x in recs) for side, recs in runs.items()}
    diff = float(np.max(np.abs(blocks["union"] - blocks["between"])))
    cert = {side: runs[side][-1]["certified_error"] for side in runs}
    return {
        "workload": "between-dense",
        "metric": metric,
        "n_a": n,
        "n_b": n,
        "m": 4,
        "discount": published_mdp(2).discount,
        "tol": TOL,
        "rounds": rounds,
        "runs": runs,
        "median_seconds": med,
        "ratio": med["union"] / med["between"],
        "median_cpu_seconds": med_cpu,
        "cpu_ratio": med_cpu["union"] / med_cpu["between"],
        "max_difference": diff,
        "within_certificates": diff <= cert["union"] + cert["between"],
        "certified_error": cert,
    }


def svi_mdp(path: Path, discount: float = SVI_DISCOUNT) -> FiniteMDP:
    """One of SVI's Markov chains as a one-action FiniteMDP: rows normalised as SVI does, the state
    reward, the initial state (the support of its one-point ``nu_0``)."""
    data = json.loads(path.read_text())
    P = np.asarray(data["transition_function"], dtype=float)
    P = P / P.sum(axis=1, keepdims=True)
    nu = np.asarray(data["nu_0"], dtype=float)
    start = np.nonzero(nu)[0]
    return FiniteMDP(
        P[:, None, :],
        np.asarray(data["reward"], dtype=float)[:, None],
        discount,
        np.ones((len(P), 1)),
        name=path.stem,
        initial_state=int(start[0]) if len(start) == 1 else None,
    )


def run_svi(code: Path, file_a: Path, file_b: Path, seed: int = 0) -> tuple[float, float]:
    """``V[x0, y0]`` from SVI as its ``run_experiment.run`` computes it, and its seconds (quiet)."""
    if str(code) not in sys.path:
        sys.path.insert(0, str(code))
    import run_experiment  # SVI's own script (its code/ folder): the comparison's subject

    np.random.seed(seed)  # SVI starts from random values
    with contextlib.redirect_stdout(io.StringIO()):
        (_, value, _, _), seconds = _timed(lambda: run_experiment.run(str(file_a), str(file_b)))
    return float(np.asarray(value).ravel()[0]), seconds


def svi(repo: Path, code: Path | None) -> dict:
    """Every pair of :data:`SVI_PAIRS`: bisimkit's certified d(x0, y0) and time, SVI's value, time and error."""
    rows = []
    for rel_a, rel_b in SVI_PAIRS:
        fa, fb = repo / "benchmarks" / rel_a, repo / "benchmarks" / rel_b
        a, b = svi_mdp(fa), svi_mdp(fb)
        sol, seconds = _timed(lambda: solve_between(a, b, "pi", tol=TOL))
        row = {
            "pair": [rel_a, rel_b],
            "n_a": a.n_states,
            "n_b": b.n_states,
            "seconds": seconds,
            "distance": sol.initial_distance,
            "certified_error": sol.certified_error,
            "converged": bool(sol.converged),
        }
        if code is not None:
            value, svi_seconds = run_svi(code, fa, fb)
            row.update(svi_distance=value, svi_seconds=svi_seconds, svi_error=abs(value - sol.initial_distance))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return {"workload": "between-svi", "metric": "pi", "discount": SVI_DISCOUNT, "tol": TOL, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="states of each MDP (dense workload; default 200)")
    parser.add_argument(
        "--metric",
        default="pi",
        help=f"the metric both sides solve (dense workload): one of {', '.join(BETWEEN_METRICS)} (default pi)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="solves of each side (median reported; default 1)")
    parser.add_argument(
        "--svi-repo",
        default=None,
        help="a checkout of SergioCalo/SVI: run its benchmark pairs (default: the dense workload)",
    )
    parser.add_argument("--svi-code", default=None, help="SVI's code/ folder, to run SVI itself on the pairs")
    parser.add_argument("--out", default=None, help="write the record as JSON")
    parser.add_argument("--side", choices=("union", "between"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--block", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        print(f"--rounds: must be at least 1, got {args.rounds}", file=sys.stderr)
        return 2
    if args.svi_repo is not None and not (Path(args.svi_repo) / "benchmarks").is_dir():
        print(f"--svi-repo: {args.svi_repo} has no benchmarks/ folder (a checkout of SergioCalo/SVI)", file=sys.stderr)
        return 2
    if args.svi_code is not None and not (Path(args.svi_code) / "run_experiment.py").is_file():
        print(f"--svi-code: {args.svi_code} has no run_experiment.py (SVI's code/ folder)", file=sys.stderr)
        return 2
    warm_up()
    if args.side is not None:  # one side of a dense round, in its own process
        print(json.dumps(one_side(args.side, args.n, args.metric, args.block)))
        return 0
    if args.svi_repo is not None:
        record = svi(Path(args.svi_repo), None if args.svi_code is None else Path(args.svi_code))
    else:
        record = dense(args.n, args.metric, args.rounds)
        print(
            json.dumps(
                {
                    k: record[k]
                    for k in (
                        "median_seconds",
                        "ratio",
                        "median_cpu_seconds",
                        "cpu_ratio",
                        "max_difference",
                        "certified_error",
                    )
                }
            )
        )
    record.update(
        machine=f"{platform.machine()} {platform.system()}, {platform.python_version()}", date=time.strftime("%Y-%m-%d")
    )
    if args.out:
        atomic_write_json(args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
