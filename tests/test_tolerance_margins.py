"""The margins command: it runs the agent tests' comparisons, reports the worst check of each kind and
fails when any check misses its tolerance."""

import json
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import torch  # noqa: E402

from benchmarks import tolerance_margins as tm  # noqa: E402
from benchmarks.tolerance import Check  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_worst_takes_the_largest_ratio_of_its_kind_only():
    checks = [
        Check("update 0 critic_loss", 1.0, 100.0),
        Check("update 1 actor_loss", 2.0, 10.0),
        Check("critic.w (largest entry)", 9.0, 10.0),
        Check("critic.w (mean)", 1.0, 1000.0),
    ]
    assert tm.worst(checks, "loss").what == "update 1 actor_loss"
    assert tm.worst(checks, "weight, worst entry").what == "critic.w (largest entry)"
    assert tm.worst(checks, "weight, worst tensor mean").what == "critic.w (mean)"


def test_the_command_writes_a_row_and_a_record(tmp_path, capsys):
    out = tmp_path / "margins.json"
    assert tm.main(["--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["setting"].endswith("1 thread")
    assert len(record["columns"]) == 2 * len(tm.KINDS) + 1
    assert all(0 <= c["measured"] <= c["tolerance"] for c in record["columns"].values())
    printed = capsys.readouterr().out
    assert tm.row(record) in printed and "largest measured / tolerance" in printed


def test_a_missed_tolerance_fails_the_command(monkeypatch, capsys):
    within = [
        Check("update 0 critic_loss", 1.0, 10.0),
        Check("w (largest entry)", 1.0, 10.0),
        Check("w (mean)", 1.0, 10.0),
    ]
    monkeypatch.setattr(tm, "drq_checks", lambda: within)
    monkeypatch.setattr(tm, "dbc_checks", lambda: within)
    monkeypatch.setattr(tm, "encoder_check", lambda: Check("encoder", 2.0, 1.0))
    assert tm.main([]) == 1
    assert "largest measured / tolerance: 2" in capsys.readouterr().out
