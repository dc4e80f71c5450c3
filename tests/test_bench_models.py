"""benchmarks.bench_models: brp built by stormpy, our relation and quotient beside Storm's, block counts checked."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("stormpy")

from benchmarks import bench_models  # noqa: E402


def test_timed_returns_the_result_and_its_times():
    result, wall, cpu = bench_models.timed(lambda: sum(range(1000)))
    assert result == 499500 and wall >= 0.0 and cpu >= 0.0


def test_a_small_brp_record_has_equal_block_counts_and_a_certified_solve():
    record = bench_models.run_size(4, repeat=1, solve_it=True)
    assert record["states"] == bench_models.brp(4).nr_states
    assert record["blocks"] == record["storm_blocks"] > 1
    assert record["converged"] and 0.0 <= record["certified_error"] < 1e-9
    assert record["relation_ratio"] > 0 and "quotient" in record["method"]


def test_the_records_file_is_written(tmp_path):
    out = tmp_path / "models.json"
    assert bench_models.main(["--sizes", "4", "--repeat", "1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [r["N"] for r in data["records"]] == [4] and data["machine"]["stormpy"]


def test_a_query_record_matches_the_all_pairs_solve():
    import numpy as np

    from bisimkit.mdp import from_stormpy
    from bisimkit.solvers import solve

    record = bench_models.run_queries(4, count=5)
    assert record["queries"] == 5 and record["converged"] and record["certified_error"] < 1e-9
    assert 0 < record["explored_pairs"] <= record["states"] * (record["states"] - 1) // 2
    mdp = from_stormpy(bench_models.brp(4), reward="target", discount=bench_models.DISCOUNT)
    full = solve(mdp, "pi")
    init = next(s for s, names in enumerate(mdp.labels) if "init" in names)
    others = np.random.default_rng(0).choice(mdp.n_states, size=5, replace=False)
    queried = solve(mdp, "pi", pairs=np.stack([np.full(5, init), others], axis=1))
    assert np.allclose(queried.distances, full.distances[init, others], atol=2e-9)
