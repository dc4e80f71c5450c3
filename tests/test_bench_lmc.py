"""The workload of ``benchmarks.bench_lmc``: its chains, records and table (its times are the benchmark's, not a
test's)."""

import json

import numpy as np
import pytest

import benchmarks.bench_lmc as bench
from bisimkit.lmc import lmc_distances


def test_random_chains_have_one_to_four_distinct_successors_and_two_labels():
    chain = bench.random_chain(150, seed=3)
    counts = np.diff(chain.row_ptr)
    assert chain.n_states == 150 and counts.min() >= 1 and counts.max() <= 4
    for s in range(150):
        succ = chain.columns[chain.row_ptr[s] : chain.row_ptr[s + 1]]
        assert len(set(succ.tolist())) == len(succ)
        assert abs(chain.probabilities[chain.row_ptr[s] : chain.row_ptr[s + 1]].sum() - 1.0) < 1e-12
    assert set(np.unique(chain.classes).tolist()) == {0, 1}
    assert np.array_equal(bench.random_chain(150, seed=3).columns, chain.columns)  # seeded


def test_records_are_written_whole_and_tabled(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    r = lmc_distances(bench.random_chain(20, seed=0), 1.0)
    solved = {
        "model": "die",
        "discount": 1.0,
        "states": 13,
        "transitions": 20,
        "classes": r.n_classes,
        "zero_pairs": r.zero_pairs,
        "one_pairs": r.one_pairs,
        "seconds": 0.0123,
        "peak_rss_mib": 512.0,
        "certified_error": r.certified_error,
    }
    refused = {
        "model": "brp-512-10",
        "discount": 1.0,
        "states": 74765,
        "transitions": 101379,
        "refused": "pairs: all pairs need about 204.1 GiB (757597275 pairs of bisimulation classes, ...)",
    }
    random = {
        "model": bench.RANDOM,
        "discount": 0.9,
        "states": 150,
        "transitions": 368,
        "seconds": 0.15,
        "seconds_max": 0.2,
        "certified_error": 3e-13,
    }
    paths = [bench.write(record) for record in (solved, refused, random)]
    assert [p.name for p in paths] == ["die.json", "brp-512-10.json", "random-150-c0.9.json"]
    assert json.loads(paths[0].read_text()) == solved and not list(tmp_path.glob("*.tmp"))
    lines = bench.table().splitlines()
    assert lines[0].startswith("| model | states |") and len(lines) == 5
    assert lines[2].startswith("| die | 13 | 20 | ") and "12 ms" in lines[2]
    assert "random-150 (c = 0.9) (10 chains) | 150 |" in lines[3] and "150 ms median, 200 ms max" in lines[3]
    assert "refused: 757597275 class pairs need 204.1 GiB" in lines[4]


def test_a_listed_model_is_built_with_its_labels():
    pytest.importorskip("stormpy")
    mdp = bench.stormpy_model("die")
    assert mdp.n_states == 13 and {"one", "six", "done"} <= set().union(*mdp.labels)


def test_a_constant_the_file_does_not_set_is_refused(monkeypatch):
    pytest.importorskip("stormpy")
    monkeypatch.setitem(bench.MODELS, "die-x", ("dtmc/die.pm", None, {"NoSuchConstant": 3}))
    with pytest.raises(SystemExit, match="constant NoSuchConstant not found once"):
        bench.stormpy_model("die-x")
