"""Workload: pi and eps (reward ground), n = 300, 1000, 3000, m = 4, at most 8 successors: at n = 3000
under 600 s and 16 GiB peak memory.

    python -m benchmarks.bench_sparse --n N [--budget SECONDS] [--metrics M,...]
        [--contraction R --contraction-from "n=..."] [--finish]
"""

from benchmarks.common import main, sparse_mdp

if __name__ == "__main__":
    main("pi-eps-sparse", lambda n, seed: sparse_mdp(n, seed=seed), ["pi", "eps"])
