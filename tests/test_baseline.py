"""The benchmarks' timed baseline (benchmarks/baseline.py): measured when the per-pair loop
finishes, extrapolated from a contraction when it is stopped."""

import numpy as np
import pytest

from benchmarks.baseline import BASIS_APRIORI, observed_contraction, sweeps_needed, timed_baseline
from bisimkit.generators import random_mdp
from validation.reference import reference_operator


def test_timed_baseline_finishes_or_extrapolates():
    mdp = random_mdp(5, 2, seed=0, discount=0.5)
    done = timed_baseline(mdp, "pi", tol=1e-9, budget=30)
    assert done["finished"] and done["sweeps"] == done["sweeps_needed"]
    cut = timed_baseline(random_mdp(40, 2, seed=0, discount=0.9), "pi", tol=1e-9, budget=0.05)
    assert not cut["finished"] and cut["sweeps_needed"] > 30 and cut["seconds_extrapolated"] > cut["seconds"]


def test_timed_baseline_measures_the_sweeps_when_the_loop_finishes():
    mdp = random_mdp(6, 2, seed=1, discount=0.8)
    d, sweeps = np.zeros((6, 6)), 0
    while True:  # the plain loop on every ordered pair, counted independently
        new = reference_operator(mdp, "pi", d)
        step, d, sweeps = np.max(np.abs(new - d)), new, sweeps + 1
        if 0.8 / 0.2 * step <= 1e-9:
            break
    # with r = 0.99 the early stop foresees about 2000 sweeps; the loop converges in a fraction of a second, and
    # a budget no load on the machine can exhaust keeps the early stop from firing on a busy runner
    base = timed_baseline(mdp, "pi", tol=1e-9, budget=3600, contraction=0.99, contraction_source="n=3")
    assert base["finished"] and base["basis"] == "measured" and base["stopped"] == "converged"
    assert base["sweeps"] == base["sweeps_needed"] == sweeps == len(base["steps"])
    assert base["seconds_total"] == base["seconds"] and base["contraction"] is None  # the 0.99 was not used
    assert 0 < base["observed_contraction"] < 0.8


def test_timed_baseline_extrapolates_with_the_supplied_contraction():
    mdp = random_mdp(8, 2, seed=0, discount=0.9)
    full = timed_baseline(mdp, "pi", tol=1e-9, budget=60)
    r = full["observed_contraction"]
    assert r == observed_contraction(full["steps"])
    assert sweeps_needed(full["steps"][0], 1, r, 1e-9, 0.9) == full["sweeps"]  # r reproduces the count from sweep 1

    # finish=True: the extrapolation after sweep 1 uses the supplied contraction, next to the measurement.
    checked = timed_baseline(mdp, "pi", tol=1e-9, budget=60, contraction=r, contraction_source="n=8", finish=True)
    check = checked["extrapolation_check"]
    assert checked["finished"] and checked["sweeps"] == full["sweeps"]
    assert check["basis"] == f"extrapolated from n=8 (r = {r:.3f})" and check["sweeps_done"] == 1
    assert check["extrapolated_sweeps"] == check["measured_sweeps"] == full["sweeps"]
    slower = timed_baseline(mdp, "pi", tol=1e-9, budget=60, contraction=r**0.5, contraction_source="n=8", finish=True)[
        "extrapolation_check"
    ]
    assert slower["extrapolated_sweeps"] == sweeps_needed(full["steps"][0], 1, r**0.5, 1e-9, 0.9) > full["sweeps"]

    # Stopped in the first sweep (budget 0): the sweeps come from the supplied contraction, the time from the pairs
    # done.
    cut = timed_baseline(mdp, "pi", tol=1e-9, budget=0, contraction=r, contraction_source="n=8")
    assert not cut["finished"] and cut["sweeps"] == 0 and cut["pairs_done"] >= 1 and cut["stopped"] == "budget"
    assert cut["basis"].startswith("extrapolated from n=8") and cut["contraction"] == r
    assert cut["seconds_total"] == pytest.approx(cut["seconds_per_sweep"] * cut["sweeps_needed"])
    blind = timed_baseline(mdp, "pi", tol=1e-9, budget=0)  # no contraction known: the a-priori rate c
    assert blind["basis"] == BASIS_APRIORI and blind["contraction"] == 0.9
    assert blind["sweeps_needed"] > cut["sweeps_needed"]
