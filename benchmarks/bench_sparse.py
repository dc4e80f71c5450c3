"""Workload: pi and eps (reward ground), n = 1000, m = 4, at most 8 successors: under 60 s.

    python -m benchmarks.bench_sparse --n N [--budget SECONDS]
"""

from benchmarks.common import main, published_mdp, sparse_mdp  # noqa: F401

if __name__ == "__main__":
    main("pi-eps-sparse", lambda n, seed: sparse_mdp(n, seed=seed), ["pi", "eps"])
