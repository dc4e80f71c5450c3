"""Reference numbers from rliable itself for ``tests/test_aggregate.py`` (not a test; run by hand).

rliable 1.2.0 does not import in the project's environment (its dependency arch 7.2 fails to import
with pandas 3), so this script runs in a separate virtual environment::

    python3 -m venv /tmp/rlvenv
    /tmp/rlvenv/bin/pip install rliable==1.2.0 "pandas<3" numpy==2.4.6 scipy==1.17.1
    /tmp/rlvenv/bin/python tests/make_rliable_reference.py > reference.json

(measured with arch 7.2.0, pandas 2.3.3, seaborn 0.13.2). The score matrices come from
:func:`score_matrices` (numpy's legacy ``RandomState``, whose stream is fixed across numpy versions);
the test builds the same matrices and pins the numbers printed here. rliable draws its bootstrap
indices from numpy's global ``RandomState``, seeded here before each call, one ``choice(runs,
(runs, tasks))`` per replication (x before y for two score matrices); ``bisimkit_runs.aggregate`` given a
``RandomState`` with the same seed draws the same indices, so its intervals must equal rliable's.
"""

import json

import numpy as np


def score_matrices() -> dict[str, np.ndarray]:
    """Three methods' normalised scores, (runs, tasks): A and B 5 runs x 4 tasks, C 3 x 4; some
    scores above 1 (the optimality gap clips them) and tied columns."""
    rs = np.random.RandomState(2021)
    a = rs.uniform(0.0, 1.2, (5, 4))
    b = np.clip(a + rs.normal(0.1, 0.2, (5, 4)), 0.0, None)
    b[:, 3] = a[:, 3]  # one task where A and B tie run for run (probability of improvement 1/2)
    c = rs.beta(2.0, 5.0, (3, 4))
    return {"A": a, "B": b, "C": c}


def main() -> None:
    from rliable import library as rly, metrics

    scores = score_matrices()

    def four(x):
        return np.array(
            [
                metrics.aggregate_median(x),
                metrics.aggregate_iqm(x),
                metrics.aggregate_mean(x),
                metrics.aggregate_optimality_gap(x),
            ]
        )

    out = {"versions": {}}
    import arch
    import rliable

    out["versions"] = {
        "rliable": getattr(rliable, "__version__", "1.2.0"),
        "arch": arch.__version__,
        "numpy": np.__version__,
    }
    out["intervals"] = {}
    for name, matrix in scores.items():
        np.random.seed(11)
        point, ci = rly.get_interval_estimates({name: matrix}, four, reps=2000)
        out["intervals"][name] = {
            "point": point[name].tolist(),
            "low": ci[name][0].tolist(),
            "high": ci[name][1].tolist(),
        }
    out["improvement"] = {}
    for x, y in (("A", "B"), ("B", "C"), ("C", "A")):
        np.random.seed(12)
        point, ci = rly.get_interval_estimates(
            {f"{x},{y}": [scores[x], scores[y]]}, metrics.probability_of_improvement, reps=1000
        )
        key = f"{x},{y}"
        out["improvement"][key] = {
            "point": float(point[key]),
            "low": float(ci[key][0][0]),
            "high": float(ci[key][1][0]),
        }
    taus = np.linspace(0.0, 1.2, 13)
    np.random.seed(13)
    profiles, cis = rly.create_performance_profile(scores, taus, reps=500)
    out["profiles"] = {
        "taus": taus.tolist(),
        **{
            name: {"point": profiles[name].tolist(), "low": cis[name][0].tolist(), "high": cis[name][1].tolist()}
            for name in scores
        },
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
