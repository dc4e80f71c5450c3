"""The user's own MDPs: ``bisimkit verify --mdp`` and ``bisimkit compare``."""

import csv
import json

import numpy as np
import pytest

from bisimkit import example, save_mdp, solve
from bisimkit_cli.main import main


# --------------------------------------------------------------- verify --mdp
@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """A quick run of C10 on the generated families: it saves counterexamples to C10 (reverse)."""
    out = tmp_path_factory.mktemp("quick") / "run"
    assert main(["verify", "--quick", "--claims", "C10", "--out", str(out), "--quiet", "--no-figures"]) == 0
    return out


def test_verify_mdp_reproduces_a_saved_counterexample(quick_run, tmp_path, capsys):
    saved = sorted((quick_run / "counterexamples").glob("C10-reverse-*.json"))
    assert saved
    path = saved[0]
    detail = json.loads(path.read_text())["name"].split(": ", 1)[1]  # "counterexample to ...: DETAIL"
    # the quick run's report states the saved case's own outcome beside its file (not the row's worst case)
    listed = {r["counterexample"]: r for r in json.loads((quick_run / "report.json").read_text())["rows"]}
    rel = str(path.relative_to(quick_run))
    assert listed[rel]["counterexample_detail"] == detail
    assert (
        f"]({rel}){' (shrunk by hypothesis)' if listed[rel]['shrunk'] else ''}: {detail}"
        in (quick_run / "report.md").read_text()
    )
    out = tmp_path / "mine"
    status = main(["verify", "--mdp", str(path), "--claims", "C10", "--out", str(out), "--quiet"])
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    rows = {r["label"]: r for r in report["rows"]}
    assert set(r["family"] for r in report["rows"]) == {"user"}
    row = rows["C10 (reverse)"]
    assert row["cases"] == 1 and row["held"] == 0 and row["status"] == "fails (known)"
    assert row["worst_detail"] == f"{path}: {detail}"  # the same violation, by the same amount
    assert rows["C10"]["held"] == 1
    # an established finding on the user's MDP is a finding, not a surprise
    assert status == 0 and report["exit_status"] == 0 and report["surprises"] == []
    assert (out / row["counterexample"]).is_file()
    assert report["config"]["mdps"] == [str(path)] and report["losses"]["runs"] == []


def test_verify_mdp_surprise_exits_1(tmp_path, capsys, monkeypatch):
    """A claim that is no established finding failing on a user MDP is a surprise (exit 1)."""
    from dataclasses import replace

    import validation.verify as V
    from validation import verify_plan
    from validation.claims import Outcome

    broken = [replace(c, check=lambda fp: Outcome(False, -1.0, "injected")) if c.id == "C9" else c for c in V.CLAIMS]
    monkeypatch.setattr(verify_plan, "CLAIMS", broken)  # where the plan picks them
    monkeypatch.setattr(verify_plan, "ALL_CLAIMS", broken + V.GAUSSIAN_CLAIMS)
    report = V.verify(out=tmp_path / "r", claims=["C9"], mdps=[example("four-state")], progress=False)
    assert report["exit_status"] == 1 and report["surprises"][0].startswith("C9 on user")


def test_verify_mdp_several_files_and_gym_like_inputs(tmp_path, capsys):
    a = save_mdp(example("four-state"), tmp_path / "a.json")
    b = save_mdp(example("coupling-order"), tmp_path / "b.npz")
    out = tmp_path / "r"
    status = main(["verify", "--mdp", str(a), str(b), "--claims", "C1,C4,C7", "--out", str(out), "--quiet"])
    report = json.loads((out / "report.json").read_text())
    rows = {r["label"]: r for r in report["rows"]}
    assert rows["C1"]["cases"] == 2 and rows["C7"]["cases"] == 2
    # C4 in index order fails on coupling-order: the established finding, named by file
    assert rows["C4"]["status"] == "fails (known)" and rows["C4"]["worst_detail"].startswith(str(b))
    assert status == 0
    assert "user" in capsys.readouterr().out


@pytest.mark.parametrize(
    "content, expected",
    [
        (
            '{"transitions": [[[0.5, 0.4]], [[0.0, 1.0]]], "rewards": [[1.0], [0.0]], "policy": [[1], [1]], '
            '"discount": 0.9}',
            "sums to 0.9",
        ),
        ('{"transitions": [[[1.0]]], "rewards": [[0.0]], "discount": 0.9}', "has no policy"),
        ("{not json", "invalid JSON"),
    ],
)
def test_verify_mdp_bad_file(tmp_path, capsys, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    out = tmp_path / "never"
    assert main(["verify", "--mdp", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "bad.json" in err[0], err
    assert not out.exists()


def test_verify_mdp_refuses_loss_checks_and_cases(tmp_path, capsys):
    for extra in (["--claims", "L1"], ["--cases", "5"]):
        assert main(["verify", "--mdp", "four-state", *extra, "--out", str(tmp_path / "x"), "--quiet"]) == 2
    assert not (tmp_path / "x").exists()


# -------------------------------------------------------------------- compare
METRICS = ["bisim", "pi", "eps-bar", "mico"]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "rooms"
    assert main(["compare", "mirrored-rooms-policy", "--metrics", ",".join(METRICS), "--out", str(out), "--quiet"]) == 0
    return out


def test_compare_writes_every_file(compared):
    import matplotlib.image as mpimg

    stems = [f"heatmap-{m}" for m in METRICS] + ["scatter-matrix", "difference-bisim-minus-pi"]
    expected = {"summary.csv"} | {f"{s}.{fmt}" for s in stems for fmt in ("png", "pdf")}
    assert {p.name for p in compared.iterdir()} == expected
    for stem in stems:
        img = mpimg.imread(compared / f"{stem}.png")
        assert img.shape[0] >= 500 and img.shape[1] >= 500, (stem, img.shape)  # 200 dpi, >= 3 inches
        assert img[..., :3].std() > 0.05  # not blank
        assert (compared / f"{stem}.pdf").read_bytes().startswith(b"%PDF")
    assert not list(compared.parent.glob(".rooms.*"))  # no temporary folder left


def test_compare_summary_matches_solve(compared):
    mdp = example("mirrored-rooms-policy")
    rows = {r["metric"]: r for r in csv.DictReader((compared / "summary.csv").open())}
    assert list(rows) == METRICS
    off = ~np.eye(mdp.n_states, dtype=bool)
    for metric in METRICS:
        sol = solve(mdp, metric)
        row = rows[metric]
        assert float(row["max"]) == pytest.approx(sol.distances[off].max(), rel=1e-12, abs=1e-12)
        assert float(row["mean"]) == pytest.approx(sol.distances[off].mean(), rel=1e-12, abs=1e-12)
        assert float(row["certified_error"]) == pytest.approx(sol.certified_error, rel=1e-6, abs=1e-15)
        assert float(row["diagonal_max"]) == pytest.approx(np.abs(np.diag(sol.distances)).max(), abs=1e-12)
        assert int(row["iterations"]) == sol.iterations and float(row["seconds"]) > 0
        assert float(row[f"spearman_{metric}"]) == 1.0
    # pi, eps-bar and mico agree on the deterministic policy's mirror classes
    assert rows["pi"]["zero_set_blocks"] == rows["eps-bar"]["zero_set_blocks"] == "8"
    assert float(rows["pi"]["spearman_eps-bar"]) == pytest.approx(1.0)
