"""Aggregate estimators (``bisimkit_runs.aggregate``) against rliable's own numbers, and the aggregate report
of run folders and sweeps (``figures.aggregate_table``, ``results_table --aggregates``, ``gather``).

The reference numbers were printed by rliable 1.2.0 itself (``tests/make_rliable_reference.py``, run in
a separate virtual environment with arch 7.2.0, pandas 2.3.3, numpy 2.4.6: rliable does not import
with the project's pandas 3) on the score matrices that script builds from a fixed legacy
``RandomState`` stream. Given a ``RandomState`` seeded as rliable's global one was, our bootstrap draws
the same indices, so point estimates and interval ends must agree to rounding.
"""

from __future__ import annotations

import csv
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from bisimkit.errors import InputError
from figures import aggregate as ag

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_rliable_reference import score_matrices  # noqa: E402

# rliable 1.2.0: get_interval_estimates(..., reps=2000) after np.random.seed(11), per method;
# order median, IQM, mean, optimality gap
RLIABLE_INTERVALS = {
    "A": {"point": [0.63394144126807, 0.627959280208863, 0.6121750218895733, 0.4132339157760073],
          "low": [0.4510113858638119, 0.4473745641515423, 0.49565969429863094, 0.30799684918463577],
          "high": [0.7996080170885639, 0.7838654816861697, 0.7318373292529522, 0.5216076358967823]},
    "B": {"point": [0.7156557839566418, 0.7533779318985011, 0.7208198310094105, 0.30720790980797186],
          "low": [0.6039878307763404, 0.6316046855434964, 0.6159744096871441, 0.21293788722426196],
          "high": [0.8463295845986706, 0.8737574818753956, 0.8216552212126534, 0.404637167966725]},
    "C": {"point": [0.22511099610798257, 0.23054207249409173, 0.23650322566482904, 0.7634967743351709],
          "low": [0.16836884717966902, 0.16440773962077035, 0.18061518463281181, 0.7007116502189921],
          "high": [0.2968485204453484, 0.300372929636433, 0.2992883497810079, 0.8193848153671882]},
}
# probability_of_improvement through get_interval_estimates(..., reps=1000) after np.random.seed(12)
RLIABLE_IMPROVEMENT = {("A", "B"): (0.395, 0.2197500000000002, 0.580125),
                       ("B", "C"): (0.8833333333333333, 0.75, 1.0),
                       ("C", "A"): (0.2, 0.05, 0.3833333333333333)}


def rliable_profiles() -> dict:
    """create_performance_profile(A, B, C; taus 0, 0.1, ..., 1.2; reps=500) after np.random.seed(13)."""
    return json.loads((Path(__file__).parent / "rliable_profiles.json").read_text())


# ------------------------------------------------------------------ against rliable
@pytest.mark.parametrize("name", ["A", "B", "C"])
def test_intervals_equal_rliables(name):
    got = ag.interval_estimates(score_matrices()[name], reps=2000, rng=np.random.RandomState(11))
    ref = RLIABLE_INTERVALS[name]
    for i, estimator in enumerate(ag.ESTIMATORS):
        iv = got[estimator]
        assert iv.point == pytest.approx(ref["point"][i], rel=1e-12, abs=1e-14)
        assert iv.low == pytest.approx(ref["low"][i], rel=1e-12, abs=1e-14)
        assert iv.high == pytest.approx(ref["high"][i], rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("pair", list(RLIABLE_IMPROVEMENT))
def test_probability_of_improvement_equals_rliables(pair):
    scores = score_matrices()
    iv = ag.improvement_interval(scores[pair[0]], scores[pair[1]], reps=1000, rng=np.random.RandomState(12))
    assert (iv.point, iv.low, iv.high) == pytest.approx(RLIABLE_IMPROVEMENT[pair], rel=1e-12, abs=1e-14)


def test_performance_profiles_equal_rliables():
    ref = rliable_profiles()
    rng = np.random.RandomState(13)  # one stream over A, B, C in order, as rliable's one call
    for name, matrix in score_matrices().items():
        point, low, high = ag.profile_interval(matrix, ref["taus"], reps=500, rng=rng)
        np.testing.assert_allclose(point, ref[name]["point"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(low, ref[name]["low"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(high, ref[name]["high"], rtol=0, atol=1e-12)


# ------------------------------------------------------------------ by hand
def test_estimators_on_a_hand_computed_matrix():
    x = np.array([[0.0, 0.4], [0.2, 1.4], [0.1, 0.9], [0.3, 0.5]])   # 4 runs x 2 tasks
    assert ag.aggregate_mean(x) == pytest.approx(3.8 / 8)
    assert ag.aggregate_median(x) == pytest.approx((0.15 + 0.8) / 2)
    # sorted: 0, .1, .2, .3, .4, .5, .9, 1.4: drop 2 from each end, the mean of .2, .3, .4, .5
    assert ag.aggregate_iqm(x) == pytest.approx(0.35)
    assert ag.optimality_gap(x) == pytest.approx(1 - (3.8 - 0.4) / 8)   # 1.4 clipped to 1
    y = np.array([[0.1, 0.9], [0.1, 0.2]])
    # task 0: x beats 0.1 in 2 of 4 (0.2, 0.3), ties with 1 (0.1): (2*2 + 0.5*2) / 8 = 5/8
    # task 1: x vs 0.9: 1.4 wins, 0.9 ties -> 1.5; x vs 0.2: all 4 win -> (1.5 + 4) / 8 = 11/16
    assert ag.probability_of_improvement(x, y) == pytest.approx((5 / 8 + 11 / 16) / 2)
    assert ag.probability_of_improvement(x, y) + ag.probability_of_improvement(y, x) == pytest.approx(1.0)
    assert ag.score_distribution(x, [0.0, 0.35, 1.0]).tolist() == pytest.approx([7 / 8, 4 / 8, 1 / 8])


def test_a_constant_matrix_has_a_zero_width_interval_and_the_bootstrap_is_seeded():
    x = np.full((3, 2), 0.25)
    got = ag.interval_estimates(x, reps=200)
    assert all(iv.low == iv.point == iv.high for iv in got.values())
    assert [got[e].point for e in ag.ESTIMATORS] == pytest.approx([0.25, 0.25, 0.25, 0.75])
    rand = np.random.default_rng(5).uniform(size=(5, 3))
    assert ag.interval_estimates(rand, reps=300, rng=1) == ag.interval_estimates(rand, reps=300, rng=1)
    assert ag.interval_estimates(rand, reps=300, rng=1) != ag.interval_estimates(rand, reps=300, rng=2)


def test_interval_coverage_on_a_known_mean():
    """Runs drawn from a known distribution: the 95% interval of the mean covers the true mean in about 95%
    of 300 experiments (binomial: 270-297 is inside 4.5 standard deviations)."""
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(300):
        x = rng.beta(2.0, 3.0, (10, 3))        # true mean 0.4 on every task
        iv = ag.interval_estimates(x, reps=400, rng=rng)["mean"]
        hits += iv.low <= 0.4 <= iv.high
    assert 270 <= hits <= 297


@pytest.mark.parametrize("call, field", [
    (lambda: ag.interval_estimates(np.zeros(3)), "scores"),
    (lambda: ag.interval_estimates(np.array([[np.nan, 1.0]])), "scores"),
    (lambda: ag.interval_estimates(np.zeros((2, 2)), reps=0), "reps"),
    (lambda: ag.interval_estimates(np.zeros((2, 2)), confidence=1.0), "confidence"),
    (lambda: ag.improvement_interval(np.zeros((2, 2)), np.zeros((2, 3))), "y"),
    (lambda: ag.normalise([1.0], 5.0, 5.0), "bounds"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(InputError, match=f"^{field}: "):
        call()


# ------------------------------------------------------------------ run folders
def write_run(root: Path, task: str, method: str, seed: int, rows: list[tuple[int, float]], **config) -> Path:
    folder = root / task / method / f"seed{seed}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"config": {"task": task, "method": method, "seed": seed,
                                                               **config}, "device": "cpu"}))
    with open(folder / "eval.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_step", "mean_return", "std_return", "episodes", "split", "elapsed_s"])
        writer.writerows([step, value, 0, 10, "eval", 1.0] for step, value in rows)
    return folder


RETURNS = {("cartpole-swingup", "drq"): [300, 500, 400], ("walker-walk", "drq"): [600, 700, 800],
           ("cartpole-swingup", "eps-r"): [350, 450, 900], ("walker-walk", "eps-r"): [650, 100, 850]}


@pytest.fixture
def runs(tmp_path) -> Path:
    for (task, method), values in RETURNS.items():
        for seed, value in enumerate(values):
            write_run(tmp_path, task, method, seed, [(0, 0), (200, value)])
    return tmp_path


def test_score_matrices_normalise_dcs_returns_by_1000(runs):
    from bisimkit_runs.aggregate_table import score_matrices
    from bisimkit_runs.runs import find_runs, group_runs

    scores = score_matrices(group_runs(find_runs(runs)))
    assert scores.labels == ["DrQ", "ε-R"] and scores.tasks == ["cartpole-swingup", "walker-walk"]
    np.testing.assert_allclose(scores.normalised["DrQ"], [[0.3, 0.6], [0.5, 0.7], [0.4, 0.8]])
    assert scores.seeds["ε-R"] == (0, 1, 2) and scores.steps["DrQ"] == (200, 200)
    assert scores.bounds == {"cartpole-swingup": (0.0, 1000.0), "walker-walk": (0.0, 1000.0)}


def test_aggregate_cli_writes_tables_csv_and_profiles(runs, tmp_path, capsys):
    from figures.aggregate_table import main

    out = tmp_path / "agg"
    assert main([str(runs), "--out", str(out), "--reps", "500"]) == 0
    printed = capsys.readouterr().out
    assert printed == (out / "aggregates.md").read_text()
    x = np.array([[0.3, 0.6], [0.5, 0.7], [0.4, 0.8]])
    line = next(row for row in printed.splitlines() if row.startswith("| DrQ | 3 |"))
    assert f"{ag.aggregate_iqm(x):.3f} [" in line and f"{ag.aggregate_mean(x):.3f} [" in line
    assert "| CS | DrQ |" in printed and "400.0 ± 81.6 |" in printed  # per task, next to mean ± std
    rows = list(csv.DictReader(open(out / "aggregates.csv")))
    mean = next(r for r in rows if r["scope"] == "all" and r["row"] == "DrQ" and r["estimator"] == "mean")
    assert float(mean["point"]) == pytest.approx(0.55) and float(mean["low"]) <= 0.55 <= float(mean["high"])
    poi = {(r["row"], r["other"]): float(r["point"]) for r in rows if r["scope"] == "improvement"}
    assert poi[("DrQ", "ε-R")] + poi[("ε-R", "DrQ")] == pytest.approx(1.0)
    # CS: drq (3, 5, 4) vs eps-r (3.5, 4.5, 9): 0 + 2 + 1 = 3 wins of 9; WW: (6, 7, 8) vs (6.5, 1, 8.5): 1 + 2 + 2 = 5
    assert poi[("DrQ", "ε-R")] == pytest.approx((3 / 9 + 5 / 9) / 2)
    png = (out / "profiles.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] >= 400


def test_results_table_with_aggregates(runs, tmp_path, capsys):
    from figures.results_table import main

    out = tmp_path / "t.md"
    assert main([str(runs), "--out", str(out), "--aggregates"]) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert text.index("| Method | BiC |") < text.index("### Aggregates over tasks") < text.index(
        "### Probability of improvement")
    assert (tmp_path / "t.profiles.png").is_file() and (tmp_path / "t.aggregates.csv").is_file()


@pytest.mark.parametrize("damage, message", [
    (lambda root: __import__("shutil").rmtree(root / "walker-walk" / "eps-r"),
     "runs: mixed tasks: ε-R has no run on walker-walk (the run set covers cartpole-swingup, walker-walk)"),
    (lambda root: __import__("shutil").rmtree(root / "walker-walk" / "drq" / "seed1"),
     "runs: missing seeds: DrQ on walker-walk lacks seed(s) 1 (its other tasks have 0, 1, 2)"),
    (lambda root: (root / "cartpole-swingup" / "drq" / "seed2" / "eval.csv").write_text(
        "env_step,mean_return\n0,0\n100,5\n"),
     "runs: mixed steps: DrQ on cartpole-swingup: seed 0 at 200, seed 1 at 200, seed 2 at 100 (pass --step N)"),
    (lambda root: write_run(root, "carla-highway", "drq", 0, [(0, 1)]),
     "runs: missing seeds: DrQ on carla-highway lacks seed(s) 1, 2 (its other tasks have 0, 1, 2); "
     "mixed tasks: ε-R has no run on carla-highway"),
])
def test_mixed_or_missing_runs_are_one_line_and_exit_2(runs, tmp_path, capsys, damage, message):
    from figures.aggregate_table import main

    damage(runs)
    out = tmp_path / "agg"
    assert main([str(runs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message) and err.count("\n") == 1
    assert not out.exists()


def test_unknown_bounds_and_bad_flags(tmp_path, capsys):
    from figures.aggregate_table import main

    write_run(tmp_path, "carla-highway", "drq", 0, [(0, 1), (10, 150)])
    assert main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: bounds: no score bounds for task 'carla-highway'")
    assert main([str(tmp_path), "--bounds", "carla-highway=0:300", "--reps", "200"]) == 0
    assert "| DrQ | 1 | 0.500 [0.500, 0.500]" in capsys.readouterr().out
    for flags, field in ((["--bounds", "carla-highway=3:1"], "bounds"), (["--reps", "0"], "reps"),
                         (["--step", "-1"], "step")):
        assert main([str(tmp_path), *flags]) == 2
        assert capsys.readouterr().err.startswith(f"error: {field}: ")


def test_gather_of_the_paper_sweep_adds_aggregates_and_names_missing_seeds(tmp_path):
    """The paper preset's sweep file, every run of one condition evaluated (known returns) and one seed of
    another missing: gather writes the first's aggregates and one line naming the missing seed."""
    from agents.sweep.spec import load_spec
    from bisimkit.files import atomic_write_json
    from bisimkit_runs.sweeps import RUNS_DIR, SWEEP_FILE
    from figures.sweep_report import gather

    spec = load_spec(Path(__file__).resolve().parents[1] / "agents" / "sweep" / "paper" / "paper.toml")
    runs = spec.runs()
    root = tmp_path / "paper"
    atomic_write_json(root / SWEEP_FILE, {"grid": spec.grid_record(), "runs": [
        {"name": r.name, "values": r.values, "config": r.config} for r in runs]})
    chosen = [r for r in runs if r.values["condition"] in ("distractions", "no-camera")
              and r.values["task"] in ("cartpole-swingup", "walker-walk") and r.values["method"] in ("drq", "eps-r")]
    for k, run in enumerate(chosen):
        if run.values["condition"] == "no-camera" and run.values["seed"] == 4 and run.values["method"] == "drq" \
                and run.values["task"] == "walker-walk":
            continue
        folder = root / RUNS_DIR / run.name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"config": run.config, "device": "cpu"}))
        (folder / "eval.csv").write_text("env_step,mean_return,std_return,episodes,split,elapsed_s\n"
                                         f"2000000,{100 + 37 * k % 800},0,10,eval,1.0\n")
    result = gather(root, tmp_path / "out", reps=300)
    files = result["conditions"]["distractions"]
    assert Path(files["aggregates_markdown"]).name == "aggregates-distractions.md"
    assert Path(files["aggregates_profiles"]).is_file() and Path(files["aggregates_csv"]).is_file()
    table = (tmp_path / "out" / "table-distractions.md").read_text()
    assert "### Aggregates over tasks" in table and "| DrQ | 5 |" in table
    other = (tmp_path / "out" / "table-no-camera.md").read_text()
    assert "*Aggregates not computed: runs: missing seeds: DrQ on walker-walk lacks seed(s) 4" in other
    assert "aggregates_markdown" not in result["conditions"]["no-camera"]
