"""Workload: eps-bar, n = 2000, m = 4, at most 8 successors: under 30 s, peak memory under 4 GiB.

    python -m benchmarks.bench_eps_bar --n N [--budget SECONDS]
"""

from benchmarks.common import main, published_mdp, sparse_mdp  # noqa: F401

if __name__ == "__main__":
    main("eps-bar-sparse", lambda n, seed: sparse_mdp(n, seed=seed), ["eps-bar"])
