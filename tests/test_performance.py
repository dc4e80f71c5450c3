"""figures/performance.py: the two performance figures drawn from benchmark records."""

import json

from figures.performance import main, memory_rows, two_mdps_rows


def between_record(metric: str, union: float, between: float) -> dict:
    return {"metric": metric, "median_cpu_seconds": {"union": union, "between": between}}


def test_records_are_read_and_both_figures_written(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "between_dense.json").write_text(json.dumps(between_record("pi", 420.0, 345.0)))
    (results / "between_dense_mico.json").write_text(json.dumps(between_record("mico", 0.1, 0.0125)))
    (results / "memory.json").write_text(
        json.dumps(
            {
                "records": [
                    {"workload": "pi-dense", "estimate_bytes": 2**24, "measured_bytes": 2**23},
                    {"workload": "mico-dense", "estimate_bytes": 3 * 2**20, "measured_bytes": 2**21},
                ]
            }
        )
    )
    assert two_mdps_rows(results) == [("pi", 420.0, 345.0), ("mico", 0.1, 0.0125)]  # slowest first
    assert memory_rows(results) == [("pi-dense", 16.0, 8.0), ("mico-dense", 3.0, 2.0)]
    out = tmp_path / "docs"
    assert main(["--results", str(results), "--out", str(out)]) == 0
    for name in ("two_mdps.png", "memory_estimate.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
