"""The research-code baseline: value iteration with one ``ot.emd2`` call per state pair.

This is how bisimulation metrics are usually computed (e.g. the google-research
grid-world and random-MDP code): a Python double loop over state pairs calling
POT on the full n-state histograms at every sweep, until the change is small.
It is run under a wall-clock budget and extrapolated from its per-sweep cost
and its observed contraction when it would not finish.
"""

from __future__ import annotations

import math
import time

import numpy as np
import ot


def per_pair_sweep(Ppi: np.ndarray, const: np.ndarray, d: np.ndarray, c: float) -> np.ndarray:
    """One sweep of ``d(s,t) <- const(s,t) + c W1(Ppi[s], Ppi[t]; d)`` over pairs s < t."""
    n = len(Ppi)
    new = np.zeros_like(d)
    for s in range(n):
        for t in range(s + 1, n):
            new[s, t] = new[t, s] = const[s, t] + c * ot.emd2(Ppi[s], Ppi[t], d)
    return new


def baseline_pi(mdp, tol: float = 1e-9, budget: float = 60.0) -> dict:
    """Per-pair value iteration for d_pi until the certificate c/(1-c)||step|| <= tol,
    or until ``budget`` seconds; returns measured and extrapolated figures."""
    c = mdp.discount
    Ppi = mdp.transition_pi
    const = np.abs(mdp.reward_pi[:, None] - mdp.reward_pi[None, :])
    d = np.zeros_like(const)
    steps, sweep_times = [], []
    start = time.perf_counter()
    finished = False
    while time.perf_counter() - start < budget:
        t = time.perf_counter()
        new = per_pair_sweep(Ppi, const, d, c)
        sweep_times.append(time.perf_counter() - t)
        steps.append(float(np.max(np.abs(new - d))))
        d = new
        if c / (1 - c) * steps[-1] <= tol:
            finished = True
            break
    elapsed = time.perf_counter() - start
    sweep = float(np.median(sweep_times))
    if finished:
        sweeps_needed = len(steps)
    else:
        # Observed contraction of the steps (at most c), extrapolated to the target step.
        ratio = min(c, steps[-1] / steps[-2]) if len(steps) >= 2 and steps[-2] > 0 else c
        target = tol * (1 - c) / c
        extra = math.log(target / steps[-1]) / math.log(ratio) if steps[-1] > target else 0.0
        sweeps_needed = len(steps) + max(0.0, extra)
    return {"finished": finished, "sweeps_run": len(steps), "seconds_run": elapsed,
            "seconds_per_sweep": sweep, "sweeps_needed": sweeps_needed,
            "seconds_total": elapsed if finished else elapsed + (sweeps_needed - len(steps)) * sweep,
            "distances": d}
