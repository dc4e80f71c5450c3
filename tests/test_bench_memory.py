"""The memory benchmark's own parts: its two MDP families and the table of docs/performance.md#memory."""

from benchmarks.bench_memory import build, table


def test_the_families():
    assert build("dense", 10).n_states == 10
    assert (build("sparse", 40).transitions > 0).sum(axis=2).max() <= 8


def test_the_table_has_a_row_per_record():
    record = {
        "workload": "pi-dense",
        "n": 500,
        "estimate_path": "coupling",
        "estimate_bytes": 2.5e8,
        "measured_bytes": 2e8,
        "ratio": 1.25,
    }
    lines = table([record, {**record, "n": 1000}]).splitlines()
    assert len(lines) == 4 and lines[2] == "| pi-dense | 500 | coupling | 250 MB | 200 MB | 1.25 |"
