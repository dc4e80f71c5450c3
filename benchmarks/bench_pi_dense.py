"""Workload: pi, n = 200, dense random MDP (published recipe): at least 50x faster than the per-pair ot.emd2 loop.

    python -m benchmarks.bench_pi_dense --n N [--budget SECONDS]
"""

from benchmarks.common import main, published_mdp, sparse_mdp  # noqa: F401

if __name__ == "__main__":
    main("pi-dense", lambda n, seed: published_mdp(n, seed=seed), ["pi"])
