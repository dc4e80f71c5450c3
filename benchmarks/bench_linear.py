"""Workload: mico and psm-sampled, n = 1000, 2500, 5000, dense (published recipe): at n = 5000 under 60 s.

python -m benchmarks.bench_linear --n N [--budget SECONDS] [--metrics M,...]
    [--contraction R --contraction-from "n=..."] [--finish]
"""

from benchmarks.common import main, published_mdp

if __name__ == "__main__":
    main("mico-dense", lambda n, seed: published_mdp(n, seed=seed), ["mico", "psm-sampled"])
