"""``bisimkit verify --executor local|slurm --jobs K`` (validation/verify_shards.py).

A sharded run must write the report a single process writes with the same settings, apart
from the timings (``seconds``, ``phase_seconds``, each row's and loss run's ``seconds``) and
the ``shards`` entry that says how it ran. The runs here are small (2 cases per family, claim
C2, whose literal reading fails and so writes counterexamples; no shrinking: the shrinker stops
at a wall-clock deadline, so its result is only reproducible when it has no deadline to meet);
the slow variant adds C4, C11 (the order figure), a loss check and the default shrinking. The
figures' scatter and order values are compared as the figure writer gets them (the heatmaps and
self-distance curves, which do not depend on the cases, are replaced by a stand-in to save their
~9 s per run). A shard that fails is injected through ``BISIMKIT_VERIFY_FAIL_SHARD``, which the
job processes inherit.
"""

import json
import sys

import numpy as np
import pytest

import validation.figure_data as figure_data
import validation.verify as V
from bisimkit.cluster import EXECUTORS
from bisimkit_cli.main import main
from validation.families import FAMILIES
from validation.verify_report import console_summary, markdown
from validation.verify_shards import (
    DEFAULT_JOBS,
    FAULT_ENV,
    LOSSES,
    MAX_ATTEMPTS,
    ShardJob,
    ShardRun,
    merge_rows,
    verify_sharded,
)

SETTINGS = dict(cases=2, seed=3, claims=["C2"], quick=True, shrink_examples=0, progress=False)


class Recorder:
    """A figure writer that keeps what it is given (no drawing)."""

    def __init__(self):
        self.data = {}

    def __call__(self, out, data):
        self.data[str(out)] = data
        return []


@pytest.fixture(autouse=True)
def no_case_free_figures(monkeypatch):
    monkeypatch.setattr(figure_data, "metric_heatmaps", lambda **kw: "heatmaps")
    monkeypatch.setattr(figure_data, "diagonal_curves", lambda **kw: "diagonal")


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The single-process run the sharded ones must equal: (report, its figure data)."""
    out = tmp_path_factory.mktemp("single")
    recorder = Recorder()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figure_data, "metric_heatmaps", lambda **kw: "heatmaps")
        mp.setattr(figure_data, "diagonal_curves", lambda **kw: "diagonal")
        report = V.verify(out=out, figures=recorder, **SETTINGS)
    return out, report, recorder.data[str(out)]


def with_timing_of(report: dict, other: dict) -> dict:
    """``report`` with the timings of ``other`` (and without ``shards``): the run's and phases'
    seconds, each row's, the loss checks' and each loss run's."""
    out = {k: v for k, v in report.items() if k != "shards"}
    out.update(seconds=other["seconds"], phase_seconds=other["phase_seconds"])
    out["rows"] = [{**row, "seconds": o["seconds"]} for row, o in zip(report["rows"], other["rows"])]
    if "seconds" in report["losses"]:
        out["losses"] = {
            **report["losses"],
            "seconds": other["losses"]["seconds"],
            "runs": [
                {**run, "seconds": o["seconds"]} for run, o in zip(report["losses"]["runs"], other["losses"]["runs"])
            ],
        }
    return out


def without_timing(report: dict) -> dict:
    zero = {
        "seconds": 0.0,
        "phase_seconds": {},
        "rows": [{"seconds": 0.0}] * len(report["rows"]),
        "losses": {"seconds": 0.0, "runs": [{"seconds": 0.0}] * len(report["losses"].get("runs", []))},
    }
    return with_timing_of(report, zero)


def assert_same_report(got_dir, want_dir) -> None:
    """report.json equal apart from the timings, report.md what markdown() makes of it, and the
    same counterexample files."""
    got, want = (json.loads((d / "report.json").read_text()) for d in (got_dir, want_dir))
    assert without_timing(got) == without_timing(want)
    for d, report in ((got_dir, got), (want_dir, want)):
        assert (d / "report.md").read_text() == markdown(report)
    assert markdown(got) == markdown(with_timing_of(want, got))  # the Markdown differs in the timings only
    files = sorted(p.name for p in (want_dir / "counterexamples").iterdir())
    assert files and files == sorted(p.name for p in (got_dir / "counterexamples").iterdir())
    for name in files:
        assert (got_dir / "counterexamples" / name).read_bytes() == (want_dir / "counterexamples" / name).read_bytes()


def assert_same_figures(got, want) -> None:
    assert (got.order is None) == (want.order is None)
    for part in ("scatter", "order") if want.order is not None else ("scatter",):
        a, b = getattr(got, part), getattr(want, part)
        assert a is not None and b is not None and sorted(a) == sorted(b)
        for key in a:
            assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), (part, key)


def test_local_shards_three_strikes_then_a_rerun_merges_into_the_single_process_report(single, tmp_path, monkeypatch):
    """Shard 1 fails on every attempt, shard 2 on its first: shard 1 is named after its third
    failure (exit status 1); the rerun runs shard 1 only, and the report, counterexamples and
    figure values are the single process's."""
    want_dir, want, want_figures = single
    monkeypatch.setenv(FAULT_ENV, "1,2:1")
    report = verify_sharded(out=tmp_path, figures=Recorder(), executor="local", jobs=2, **SETTINGS)
    assert report["exit_status"] == 1
    assert [(s["shard"], s["status"], s["attempts"]) for s in report["shards"]["shards"]] == [
        ("1 of 2", "failed", MAX_ATTEMPTS),
        ("2 of 2", "done", 2),
    ]
    assert report["shards"]["failed"][0]["error"] == f"RuntimeError: injected fault ({FAULT_ENV}=1,2:1, attempt 3)"
    line = f"shard 1 of 2 (cases 0-0 of each generated family) failed {MAX_ATTEMPTS} times, its results are missing"
    assert [s for s in report["surprises"] if s.startswith(line)]
    assert f"SURPRISE: {line}" in console_summary(report, tmp_path)
    assert line in (tmp_path / "report.md").read_text()
    assert 0 < sum(r["cases"] for r in report["rows"]) < sum(r["cases"] for r in want["rows"])

    monkeypatch.delenv(FAULT_ENV)
    recorder = Recorder()
    report = verify_sharded(out=tmp_path, figures=recorder, executor="local", jobs=2, **SETTINGS)
    assert [s["status"] for s in report["shards"]["shards"]] == ["done", "reused"]
    assert report["exit_status"] == want["exit_status"] == 0
    assert any(r["counterexample"] for r in report["rows"])  # C2's literal reading: files to compare
    assert_same_report(tmp_path, want_dir)
    assert_same_figures(recorder.data[str(tmp_path)], want_figures)


@pytest.mark.slow
def test_full_settings_with_losses_and_shrinking_merge_into_the_single_process_report(tmp_path):
    """The default shrinking, the order figure (C11) and the loss checks' job (L1): the same report
    and figure values (the shrinker's deadline, 2 s with --quick, is far from reached here)."""
    settings = dict(cases=3, seed=0, claims=["C1", "C4", "C11", "L1"], quick=True, progress=False)
    single, sharded = Recorder(), Recorder()
    V.verify(out=tmp_path / "single", figures=single, **settings)
    report = verify_sharded(out=tmp_path / "sharded", figures=sharded, executor="local", jobs=3, **settings)
    assert [s["shard"] for s in report["shards"]["shards"]] == ["1 of 3", "2 of 3", "3 of 3", LOSSES]
    assert report["losses"]["runs"]
    assert_same_report(tmp_path / "sharded", tmp_path / "single")
    assert_same_figures(sharded.data[str(tmp_path / "sharded")], single.data[str(tmp_path / "single")])
    assert sharded.data[str(tmp_path / "sharded")].losses


def test_slurm_shards_merge_into_the_single_process_report(slurm, single, tmp_path):
    want_dir, _, want_figures = single
    recorder = Recorder()
    report = verify_sharded(out=tmp_path, figures=recorder, executor="slurm", jobs=2, **SETTINGS)
    assert [s["status"] for s in report["shards"]["shards"]] == ["done", "done"]
    assert_same_report(tmp_path, want_dir)
    assert_same_figures(recorder.data[str(tmp_path)], want_figures)


# ------------------------------------------------------------------ pieces
def test_shards_draw_the_cases_a_single_run_draws(monkeypatch):
    """Consecutive slices are the whole family, also across the seeded blocks (a block of 3 here),
    and the first block is the stream [seed, family] a run has always drawn from."""
    monkeypatch.setattr(V, "CASE_BLOCK", 3)
    whole = V.family_cases("random-sparse", 8, 5)
    parts = [
        c
        for start, stop in ((0, 2), (2, 7), (7, 8))
        for c in V.family_cases("random-sparse", 8, 5, start=start, stop=stop)
    ]
    assert [c.mdp.to_dict() for c in parts] == [c.mdp.to_dict() for c in whole]
    rng = np.random.default_rng([5, list(FAMILIES).index("random-sparse")])
    assert [FAMILIES["random-sparse"].make(rng).mdp.to_dict() for _ in range(3)] == [c.mdp.to_dict() for c in whole[:3]]
    assert whole[3].mdp.to_dict() != FAMILIES["random-sparse"].make(rng).mdp.to_dict()  # block 1: its own stream


def test_checkpoint_requeues_the_same_shard(tmp_path):
    run = ShardRun(str(tmp_path), 2, 0, ["C1"], True, 2, False)
    again = ShardJob(run).checkpoint(2, 1)
    assert isinstance(again.function, ShardJob) and again.function.run == run and again.args == (2, 1)


def test_merge_of_no_shards_has_no_rows(tmp_path):
    run = ShardRun(str(tmp_path), 2, 0, ["C1"], True, 2, False)
    assert merge_rows(run, run.plan(), []) == []


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "args, message",
    [
        (["--executor", "pbs"], "argument --executor: invalid choice: 'pbs'"),
        (["--jobs", "2"], "--jobs: applies with an executor only"),
        (["--executor", "local", "--jobs", "0"], "--jobs: 0 is not a positive integer"),
        (["--executor", "local", "--mdp", "chain"], "--executor: applies to the generated families only"),
    ],
)
def test_bad_cluster_options_are_one_line_exit_2(args, message, tmp_path, capsys):
    assert main(["verify", "--out", str(tmp_path / "out"), "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists()


def test_missing_submitit_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit raises ModuleNotFoundError
    assert main(["verify", "--out", str(tmp_path / "out"), "--executor", "local", "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "bisimkit: error: --executor: submitit is not installed; it comes with the 'cluster' extra: "
        "pip install -e '.[cluster]'\n"
    )
    assert not (tmp_path / "out").exists()


def test_help_names_the_executors_the_code_checks(capsys):
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--executor {" + ",".join(EXECUTORS) + "}" in text
    assert f"--jobs K shards (default {DEFAULT_JOBS})" in text and f"up to {MAX_ATTEMPTS} times" in text
