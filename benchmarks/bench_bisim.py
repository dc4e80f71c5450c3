"""Workload: bisim, n = 125, 250, 500, m = 4, at most 8 successors: at n = 500 under 60 s.

python -m benchmarks.bench_bisim --n N [--budget SECONDS] [--metrics M,...]
    [--contraction R --contraction-from "n=..."] [--finish]
"""

from benchmarks.common import main, sparse_mdp

if __name__ == "__main__":
    main("bisim-sparse", lambda n, seed: sparse_mdp(n, seed=seed), ["bisim"])
