"""Entropic value iteration for d_pi: nothing before its first sweep, a symmetric distance above the one-step
term after, and close to the exact d_pi at a small regularisation."""

import numpy as np

from benchmarks.bench_sinkhorn import sinkhorn_value_iteration
from benchmarks.common import published_mdp
from bisimkit import solve


def test_entropic_value_iteration_approaches_d_pi():
    mdp = published_mdp(6, seed=2)
    d, sweeps = sinkhorn_value_iteration(mdp, 0.01, seconds=0.0)
    assert sweeps == 0 and not d.any()
    d, sweeps = sinkhorn_value_iteration(mdp, 0.002, seconds=0.5)
    const = np.abs(mdp.reward_pi[:, None] - mdp.reward_pi[None, :])
    assert sweeps >= 1 and np.array_equal(d, d.T) and not np.diag(d).any() and (d >= const - 1e-12).all()
    exact = solve(mdp, "pi").distances
    # value iteration from 0 is within c^k max d* after k sweeps; the entropic plans add their own bias
    assert np.max(np.abs(d - exact)) <= (0.01 + mdp.discount**sweeps) * exact.max()
