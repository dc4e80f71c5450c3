"""The benchmark runner's bookkeeping (benchmarks/run.py): targets, exponents, the generated docs block.

The benchmarks themselves are not tests; these use synthetic records.
"""

import math

from benchmarks import run


def record(n, seconds, base_seconds, basis, **extra):
    base = {
        "finished": basis == "measured",
        "basis": basis,
        "sweeps": 3,
        "sweeps_needed": 29,
        "seconds": base_seconds,
        "seconds_total": base_seconds,
        "seconds_per_sweep": base_seconds / 29,
    }
    return {
        "workload": "pi-dense",
        "metric": "pi",
        "n": n,
        "m": 4,
        "seconds": seconds,
        "peak_mib": 10.0 * n,
        "certified_error": 1e-12,
        "first_round_seconds": seconds / 4,
        "baseline": base,
        "ratio": base_seconds / seconds,
        **extra,
    }


def test_targets_exponents_and_docs_block(tmp_path):
    records = [
        record(50, 0.1, 10.0, "measured"),
        record(100, 0.8, 80.0, "measured"),
        record(200, 6.4, 640.0, "extrapolated from n=100 (r = 0.478)"),
    ]
    ex = run.exponents(records)
    assert len(ex) == 1 and math.isclose(ex[0]["time"], 3.0) and math.isclose(ex[0]["peak_mib"], 1.0)
    assert math.isclose(ex[0]["baseline_time"], 3.0) and ex[0]["baseline_measured_sizes"] == [50, 100]
    (t,) = run.targets(records)
    assert t["n"] == 200 and t["ok"] and t["status"] == "PASS" and "extrapolated from n=100" in t["note"]

    # An a-priori (upper bound) baseline cannot verify a ratio target.
    records[-1]["baseline"]["basis"] = run.APRIORI
    assert run.targets(records)[0]["status"] == "UNVERIFIED"
    records[-1]["first_round_seconds"] = 30.0
    assert run.targets(records)[0]["status"] == "FAIL"

    results = {"records": records, "targets": run.targets(records), "exponents": ex, "sinkhorn": [], "budget": 1800.0}
    doc = tmp_path / "performance.md"
    doc.write_text(f"intro\n\n{run.BEGIN}\nold table\n{run.END}\n\noutro\n")
    run.write_docs(results, doc)
    text = doc.read_text()
    assert "old table" not in text and text.startswith("intro") and text.endswith("outro\n")
    assert "| π, dense (published recipe) | 200 | 6.40 s |" in text and "**FAIL**" in text
    assert "a-priori c (upper bound)" in text and "| ~29 |" in text and "| 29 | measured |" in text
    assert "n^3.00" in text
    run.write_docs(results, doc)  # idempotent
    assert doc.read_text() == text
    assert "a-priori c (upper bound)" in run.table(records)


def test_records_without_a_basis_field_get_one():
    assert run.basis({"finished": True}) == "measured"
    assert run.basis({"finished": False, "sweeps": 1}) == run.APRIORI
    assert run.basis({"finished": False, "sweeps": 7}) == "extrapolated from this run"


def test_refamily_extrapolates_unfinished_baselines_from_the_completed_smaller_run():
    """A baseline stopped early is re-extrapolated with the contraction of the largest completed smaller
    run of its family, counting from its own first step (or max F(0) of its MDP when it had none)."""
    from benchmarks.baseline import first_step, sweeps_needed

    small = record(12, 0.01, 5.0, "measured")
    small["baseline"].update(observed_contraction=0.5, steps=[1.0, 0.5, 0.25])
    own = record(40, 1.0, 9e6, run.APRIORI)
    own["baseline"].update(steps=[2.0, 1.2, 0.8], seconds_per_sweep=10.0)
    none = record(30, 0.5, 8e6, run.APRIORI)
    none["baseline"].update(steps=[], seconds_per_sweep=4.0)
    records = [own, small, none]
    run.refamily(records)
    assert small["baseline"]["basis"] == "measured"
    expected = sweeps_needed(2.0, 1, 0.5, 1e-9, 0.9)
    assert own["baseline"]["sweeps_needed"] == expected and own["baseline"]["seconds_total"] == 10.0 * expected
    assert own["baseline"]["basis"] == "extrapolated from n=12 (r = 0.500)"
    assert own["baseline"]["own_extrapolation"]["basis"] == run.APRIORI
    assert math.isclose(own["ratio"], 10.0 * expected / 1.0)
    first = first_step(run.build_mdp("pi-dense", 30), "pi")
    assert none["baseline"]["first_step"] == first
    assert none["baseline"]["sweeps_needed"] == sweeps_needed(first, 1, 0.5, 1e-9, 0.9)
    before = dict(own["baseline"])
    run.refamily(records)  # idempotent
    assert own["baseline"] == before


def test_first_step_is_the_largest_one_step_difference():
    import numpy as np

    from benchmarks.baseline import first_step
    from bisimkit.generators import random_mdp
    from validation.reference import reference_operator

    for seed in range(2):
        mdp = random_mdp(8, 3, seed=seed, max_support=4)
        for metric in ("pi", "eps", "eps-bar", "bisim", "mico", "psm-sampled", "psm", "dbc-sampled"):
            F0 = reference_operator(mdp, metric, np.zeros((8, 8)))
            if metric in ("pi", "eps", "eps-bar", "bisim", "psm"):
                F0 = F0 - np.diag(np.diag(F0))
            assert abs(F0.max() - first_step(mdp, metric)) < 1e-12, metric
