"""Workload: pi, n = 50, 100, 200, dense random MDP (published recipe): at n = 200 at least 50x faster than the
per-pair ot.emd2 loop, and the first coupling round no slower than one sweep of it.

    python -m benchmarks.bench_pi_dense --n N [--budget SECONDS] [--metrics M,...]
        [--contraction R --contraction-from "n=..."] [--finish]
"""

from benchmarks.common import main, published_mdp

if __name__ == "__main__":
    main("pi-dense", lambda n, seed: published_mdp(n, seed=seed), ["pi"])
