"""figures/learning_seeds.py: the learning check under distractions, one panel per seed, from the records."""

import json

import numpy as np
import pytest

from figures.learning_seeds import OPTIONAL, RESULTS, SEEDS, SERIES, main, record_path, seed_records

PNG = b"\x89PNG\r\n\x1a\n"


def record(last: list[float], random_mean: float = 130.0, random_std: float = 10.0) -> dict:
    steps = list(range(0, 5000 * (len(last) + 2), 5000))
    means = [120.0, 125.0, *last]
    mark = random_mean + max(100.0, 3 * random_std)
    return {
        "steps": steps,
        "eval_mean": means,
        "eval_std": [5.0] * len(means),
        "random_mean": random_mean,
        "random_std": random_std,
        "pass_mark": mark,
        "last_evaluations_mean": float(np.mean(last)),
        "passed": bool(np.mean(last) >= mark),
    }


def write_records(folder, seeds=(0, 1)) -> None:
    folder.mkdir(exist_ok=True)
    for seed in seeds:
        for method in SERIES:
            path, entry = record_path(folder, method, seed)
            value = record([240.0, 250.0, 260.0] if method == "drq" else [150.0, 160.0, 170.0])
            if entry is not None:
                value = {"distractions": True, "methods": {entry: value}}
            path.write_text(json.dumps(value), encoding="utf-8")


def test_seed_zero_is_read_from_the_combined_record_and_the_figure_written(tmp_path):
    results = tmp_path / "results"
    write_records(results)
    records = seed_records(results, (0, 1))
    assert sorted(records) == [0, 1] and all(sorted(r) == sorted(SERIES) for r in records.values())
    assert records[0]["drq"]["last_evaluations_mean"] == 250.0 and records[1]["eps-r"]["passed"] is False
    out = tmp_path / "seeds.png"
    assert main(["--results", str(results), "--seeds", "0,1", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG


def test_an_optional_series_is_drawn_where_its_record_exists(tmp_path):
    results = tmp_path / "results"
    write_records(results)
    for method in OPTIONAL:
        record_path(results, method, 1)[0].unlink()
    records = seed_records(results, (0, 1))
    assert set(records[0]) == set(SERIES) and set(records[1]) == set(SERIES) - OPTIONAL
    out = tmp_path / "seeds.png"
    assert main(["--results", str(results), "--seeds", "0,1", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG


@pytest.mark.parametrize(
    "damage, message",
    [
        ("missing", "learning_check_distractions_drq_seed1.json does not exist"),
        ("not json", "learning_check_distractions_drq_seed1.json is not JSON"),
        ("incomplete", "learning_check_distractions_drq_seed1.json lacks pass_mark"),
    ],
)
def test_a_bad_record_is_one_line_naming_the_file(tmp_path, capsys, damage, message):
    results = tmp_path / "results"
    write_records(results)
    path, _ = record_path(results, "drq", 1)
    if damage == "missing":
        path.unlink()
    elif damage == "not json":
        path.write_text("{", encoding="utf-8")
    else:
        value = json.loads(path.read_text(encoding="utf-8"))
        del value["pass_mark"]
        path.write_text(json.dumps(value), encoding="utf-8")
    out = tmp_path / "seeds.png"
    assert main(["--results", str(results), "--seeds", "0,1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: results: ") and message in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize("seeds", ["a,b", "", "-1"])
def test_bad_seeds_are_refused(tmp_path, capsys, seeds):
    assert main(["--results", str(tmp_path), "--seeds", seeds, "--out", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err.startswith("error: seeds: ")


def test_the_committed_records_hold_their_own_verdicts():
    """Every committed record the figure draws states the check's rule: the pass mark is the random mean
    plus the larger of 100 and 3 standard deviations, the last-three mean is that of the last three
    evaluations, and the verdict follows."""
    records = seed_records(RESULTS, SEEDS)
    for seed, methods in records.items():
        marks = set()
        for method, r in methods.items():
            where = f"seed {seed}, {method}"
            assert r["pass_mark"] == pytest.approx(r["random_mean"] + max(100.0, 3 * r["random_std"])), where
            assert r["last_evaluations_mean"] == pytest.approx(float(np.mean(r["eval_mean"][-3:]))), where
            assert r["passed"] == (r["last_evaluations_mean"] >= r["pass_mark"]), where
            assert len(r["steps"]) == len(r["eval_mean"]) == len(r["eval_std"]), where
            marks.add(round(r["pass_mark"], 6))
        assert len(marks) == 1, f"seed {seed}: the methods were judged on different random-policy episodes"
