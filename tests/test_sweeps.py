"""The files of a sweep root: run states written atomically and read back, the sweep file's checks."""

import json

import pytest

from bisimkit.errors import InputError
from bisimkit_runs.sweeps import SWEEP_FILE, read_state, read_sweep, state_path, write_state


def test_a_state_round_trips_and_starts_pending(tmp_path):
    assert read_state(tmp_path, "run-a") == {"status": "pending"}
    written = write_state(tmp_path, "run-a", {"status": "pending", "jobs": [1]}, status="running")
    assert written["status"] == "running" and written["jobs"] == [1] and written["updated"] > 0
    assert read_state(tmp_path, "run-a") == written
    assert state_path(tmp_path, "run-a") == tmp_path / "state" / "run-a.json"
    assert [p.name for p in (tmp_path / "state").iterdir()] == ["run-a.json"]  # no temporary file left


def test_a_broken_state_file_is_one_line(tmp_path):
    state_path(tmp_path, "x").parent.mkdir()
    state_path(tmp_path, "x").write_text("{")
    with pytest.raises(InputError, match=r"^state: .*x\.json is not a state file"):
        read_state(tmp_path, "x")


def test_the_sweep_file_is_checked(tmp_path):
    with pytest.raises(InputError, match=r"is not a sweep root \(no sweep\.json\)$"):
        read_sweep(tmp_path)
    (tmp_path / SWEEP_FILE).write_text(json.dumps({"grid": {}}))
    with pytest.raises(InputError, match=r"is not a sweep file \(no runs\)$"):
        read_sweep(tmp_path)
    (tmp_path / SWEEP_FILE).write_text(json.dumps({"grid": {}, "runs": [{"name": "a"}]}))
    assert read_sweep(tmp_path)["runs"] == [{"name": "a"}]
