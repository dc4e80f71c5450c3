"""What a cross problem of the two-MDP pi solve costs, from each start the simplex could take.

``solve_between(A, B, "pi")`` spends most of its time in its first full round of transport
solves: each of the n_A x n_B cross problems moves from the monotone coupling along the
reward (the round-0 start, optimal for the one-step distance ``|r_A(s) - r_B(t)|``) to the
optimal plan under distances near the fixed point. This script measures, on a sample of cross
problems of two dense MDPs of the published recipe, the simplex pivots and seconds each start
needs to reach the optimum under the certified fixed point D*:

* ``greedy``: the least-cost start (fill the cells of smallest cost first);
* ``reward line``: the monotone coupling along the policy-averaged reward (what the solver uses);
* ``fitted line``: the monotone coupling along 1-D keys fitted to D* itself (least squares on
  ``|x_A(s) - x_B(t)| - D*(s, t)``, started from the rewards): the best a line seed could do;
* ``neighbour duals``: the least-cost start on the reduced costs ``D* - u - v`` of another cross
  problem's optimal dual potentials (all cross problems share the cost matrix D*, so those
  potentials are feasible for every one of them; a dual warm start).

    python -m benchmarks.bench_cross_starts [--n 100] [--pairs 300] [--seed 0] [--out FILE.json]

Prints one JSON object: the medians of pivots and milliseconds per start (one thread), and how
far D* is from the reward line and from the fitted line (mean absolute deviation over the mean
distance).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from benchmarks.common import published_mdp
from bisimkit import simplex
from bisimkit.between import solve_between
from bisimkit.files import atomic_write_json
from bisimkit.solvers import solve


def monotone_basis(a: np.ndarray, b: np.ndarray, ha: np.ndarray, hb: np.ndarray) -> np.ndarray:
    """The solver's line start (:func:`bisimkit.simplex.line_bases`): the monotone coupling of the
    rows keyed ``ha`` and the columns keyed ``hb``, as ``k + l - 1`` basis cells (row, column)."""
    k, l = len(a), len(b)
    basis = np.zeros((k + l - 1, 2), dtype=simplex.BASIS_DTYPE)
    simplex.line_bases(
        np.arange(k)[None],
        a[None],
        np.array([k]),
        k + np.arange(l)[None],
        b[None],
        np.array([l]),
        np.concatenate([ha, hb]),
        basis,
        np.zeros(1, dtype=np.bool_),
    )
    return basis.astype(np.int64)


def greedy_basis(a: np.ndarray, b: np.ndarray, C: np.ndarray) -> np.ndarray:
    """The least-cost start on ``C`` (the simplex's own cold start), as basis cells."""
    k, l = len(a), len(b)
    flow = np.zeros((k, l))
    er, ec = np.zeros(k + l, np.int64), np.zeros(k + l, np.int64)
    adj, deg = np.zeros((k + l, max(k, l)), np.int64), np.zeros(k + l, np.int64)
    if not simplex._greedy_basis(a, b, np.ascontiguousarray(C), k, l, flow, er, ec, adj, deg):
        raise RuntimeError("no least-cost start")
    return np.stack([er[: k + l - 1], ec[: k + l - 1]], axis=1)


def solve_from(a: np.ndarray, b: np.ndarray, C: np.ndarray, basis: np.ndarray | None):
    """(pivots, seconds, cost, final basis) of the simplex from ``basis`` (least-cost start if None)."""
    k, l = len(a), len(b)
    flow = np.zeros((k, l))
    br = np.zeros(k + l - 1, simplex.BASIS_DTYPE)
    bc = np.zeros(k + l - 1, simplex.BASIS_DTYPE)
    if basis is not None:
        br[:], bc[:] = basis[:, 0], basis[:, 1]
    ws = simplex._workspace(k + l, max(k, l))
    t = time.perf_counter()
    cost, status, pivots, _, _ = simplex._solve_one(
        a, b, np.ascontiguousarray(C), k, l, flow, br, bc, basis is not None, False, ws
    )
    seconds = time.perf_counter() - t
    if status != simplex.SOLVED:
        raise RuntimeError(f"simplex status {status}")
    return int(pivots), seconds, float(cost), np.stack([br, bc], axis=1).astype(np.int64)


def tree_duals(C: np.ndarray, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Potentials (u, v) with ``u_i + v_j = C_ij`` on the tree's cells, ``u_0 = 0``."""
    k, l = C.shape
    u, v = np.full(k, np.nan), np.full(l, np.nan)
    rows: dict[int, list[int]] = {}
    cols: dict[int, list[int]] = {}
    for i, j in basis:
        rows.setdefault(int(i), []).append(int(j))
        cols.setdefault(int(j), []).append(int(i))
    u[0], stack = 0.0, [("r", 0)]
    while stack:
        side, x = stack.pop()
        for y in (rows if side == "r" else cols).get(x, []):
            if side == "r" and np.isnan(v[y]):
                v[y] = C[x, y] - u[x]
                stack.append(("c", y))
            elif side == "c" and np.isnan(u[y]):
                u[y] = C[y, x] - v[x]
                stack.append(("r", y))
    return u, v


def fit_line(D: np.ndarray, xa: np.ndarray, xb: np.ndarray, steps: int = 3000, lr: float = 0.1):
    """1-D keys with ``|x_A(s) - x_B(t)|`` close to ``D(s, t)`` in least squares (gradient steps)."""
    xa, xb = xa.astype(float).copy(), xb.astype(float).copy()
    for _ in range(steps):
        diff = xa[:, None] - xb[None, :]
        g = (np.abs(diff) - D) * np.sign(diff)
        xa -= lr * g.mean(axis=1)
        xb += lr * g.mean(axis=0)
    return xa, xb


def within_problem(P: np.ndarray, D: np.ndarray, h: np.ndarray, s: int, t: int):
    """``(a, b, C, keys_a, keys_b)`` of the transport problem between the laws of ``s`` and ``t`` of one MDP
    with their shared mass dropped: the mass of ``P[s] - P[t]`` where it is positive against that of
    ``P[t] - P[s]``, under ``D`` (its W1 is that of the full laws when ``D`` is a pseudometric)."""
    diff = P[s] - P[t]
    sa, sb = np.nonzero(diff > 0)[0], np.nonzero(diff < 0)[0]
    return diff[sa], -diff[sb], D[np.ix_(sa, sb)], h[sa], h[sb]


def within_against_cross(A, B, D: np.ndarray, pairs: int, seed: int) -> dict:
    """What a within problem of the union solve costs beside a cross problem, both from the reward line.

    The union of A and B solves, besides the n_A n_B cross problems, the pairs within A and within B.
    A within problem compares two laws on one state set and drops the mass they share (the reduction of
    ``bisimkit.operators``, exact under a metric): rows where ``p_s > p_t``, columns where ``p_t > p_s``.
    Sampled problems of both kinds are solved under their fixed points (within A: ``solve(A, "pi")``,
    which is the union's within block since A's transitions stay in A; cross: ``D``) from the monotone
    coupling along the reward, and the union's extra work is predicted from the mean times: ratio
    ``1 + (within pairs x mean within ms) / (cross pairs x mean cross ms)``, within B taken as within A."""
    DA = np.asarray(solve(A, "pi", tol=1e-9).distances)
    PA, PB = np.asarray(A.transition_pi), np.asarray(B.transition_pi)
    hA, hB = np.asarray(A.reward_pi, dtype=float), np.asarray(B.reward_pi, dtype=float)
    rng = np.random.default_rng(seed + 1)
    sizes: dict[str, list[tuple[int, int]]] = {"within": [], "cross": []}
    ms: dict[str, list[float]] = {"within": [], "cross": []}
    pivots: dict[str, list[int]] = {"within": [], "cross": []}
    n_a, n_b = A.n_states, B.n_states
    for _ in range(pairs):
        s, t = (int(x) for x in rng.choice(n_a, 2, replace=False))
        problems = {"within": within_problem(PA, DA, hA, s, t)}
        u = int(rng.integers(n_b))
        ca, cb = np.nonzero(PA[s] > 0)[0], np.nonzero(PB[u] > 0)[0]
        problems["cross"] = (PA[s, ca], PB[u, cb], D[np.ix_(ca, cb)], hA[ca], hB[cb])
        for kind, (a, b, C, ka, kb) in problems.items():
            piv, sec, _, _ = solve_from(a, b, C, monotone_basis(a, b, ka, kb))
            sizes[kind].append((len(a), len(b)))
            ms[kind].append(1e3 * sec)
            pivots[kind].append(piv)
    within_pairs = n_a * (n_a - 1) // 2 + n_b * (n_b - 1) // 2
    mean_ms = {k: float(np.mean(v)) for k, v in ms.items()}
    return {
        "pairs": pairs,
        "median_rows_columns": {
            k: [statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)] for k, v in sizes.items()
        },
        "median_pivots": {k: statistics.median(v) for k, v in pivots.items()},
        "mean_ms": mean_ms,
        "within_pairs": within_pairs,
        "cross_pairs": n_a * n_b,
        "predicted_union_over_between": 1.0 + within_pairs * mean_ms["within"] / (n_a * n_b * mean_ms["cross"]),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100, help="states of each of the two MDPs (default 100)")
    p.add_argument(
        "--pairs", type=int, default=300, help="cross problems sampled, each solved from every start (default 300)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the sample of cross problems (the MDPs keep seeds 0 and 1; default 0)",
    )
    p.add_argument("--out", help="also write the record as JSON to this file (default: printed only)")
    args = p.parse_args(argv)
    A, B = published_mdp(args.n, seed=0), published_mdp(args.n, seed=1)
    t = time.perf_counter()
    sol = solve_between(A, B, "pi")
    solve_seconds = time.perf_counter() - t
    D = np.asarray(sol.distances)
    PA, PB = np.asarray(A.transition_pi), np.asarray(B.transition_pi)
    hA, hB = np.asarray(A.reward_pi, dtype=float), np.asarray(B.reward_pi, dtype=float)
    xa, xb = fit_line(D, hA, hB)
    rng = np.random.default_rng(args.seed)
    starts = ("greedy", "reward line", "fitted line", "neighbour duals")
    pivots: dict[str, list[int]] = {s: [] for s in starts}
    ms: dict[str, list[float]] = {s: [] for s in starts}
    previous = None  # (support of A, support of B, optimal basis) of the last problem solved
    for _ in range(args.pairs):
        s, t_ = int(rng.integers(args.n)), int(rng.integers(args.n))
        sa, sb = np.nonzero(PA[s] > 0)[0], np.nonzero(PB[t_] > 0)[0]
        a, b, C = PA[s, sa], PB[t_, sb], D[np.ix_(sa, sb)]
        seeds = {
            "greedy": None,
            "reward line": monotone_basis(a, b, hA[sa], hB[sb]),
            "fitted line": monotone_basis(a, b, xa[sa], xb[sb]),
        }
        if previous is not None:
            psa, psb, pbasis = previous
            u, v = tree_duals(D[np.ix_(psa, psb)], pbasis)
            full_u, full_v = np.zeros(args.n), np.zeros(args.n)
            full_u[psa], full_v[psb] = u, v
            R = C - full_u[sa][:, None] - full_v[sb][None, :]
            t0 = time.perf_counter()
            seeds["neighbour duals"] = greedy_basis(a, b, R)
            seed_ms = 1e3 * (time.perf_counter() - t0)
        costs = []
        for name, basis in seeds.items():
            piv, sec, cost, final = solve_from(a, b, C, basis)
            pivots[name].append(piv)
            ms[name].append(1e3 * sec + (seed_ms if name == "neighbour duals" else 0.0))
            costs.append(cost)
            if name == "greedy":
                previous = (sa, sb, final)
        if max(costs) - min(costs) > 1e-9 * (1.0 + max(costs)):
            raise RuntimeError("the starts reached different optima")
    within = within_against_cross(A, B, D, args.pairs, args.seed)
    L = np.abs(hA[:, None] - hB[None, :])
    F = np.abs(xa[:, None] - xb[None, :])
    record = {
        "workload": "cross-starts",
        "metric": "pi",
        "n_a": args.n,
        "n_b": args.n,
        "pairs": args.pairs,
        "solve_seconds": solve_seconds,
        "certified_error": float(sol.certified_error),
        "deviation_from_reward_line": float(np.abs(D - L).mean() / D.mean()),
        "deviation_from_fitted_line": float(np.abs(D - F).mean() / D.mean()),
        "median_pivots": {s: statistics.median(v) for s, v in pivots.items() if v},
        "median_ms": {s: statistics.median(v) for s, v in ms.items() if v},
        "within_against_cross": within,
    }
    print(json.dumps(record))
    if args.out:
        atomic_write_json(args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
