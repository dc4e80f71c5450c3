"""Workload: mico and psm-sampled, n = 2000, dense: under 10 s.

    python -m benchmarks.bench_linear --n N [--budget SECONDS]
"""

from benchmarks.common import main, published_mdp, sparse_mdp  # noqa: F401

if __name__ == "__main__":
    main("mico-dense", lambda n, seed: published_mdp(n, seed=seed), ["mico", "psm-sampled"])
