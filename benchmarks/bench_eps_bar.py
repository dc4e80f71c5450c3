"""Workload: eps-bar, n = 1000, 2500, 5000, m = 4, at most 8 successors: at n = 5000 under 300 s.

python -m benchmarks.bench_eps_bar --n N [--budget SECONDS] [--metrics M,...]
    [--contraction R --contraction-from "n=..."] [--finish]
"""

from benchmarks.common import main, sparse_mdp

if __name__ == "__main__":
    main("eps-bar-sparse", lambda n, seed: sparse_mdp(n, seed=seed), ["eps-bar"])
