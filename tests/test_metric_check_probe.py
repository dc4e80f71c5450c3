"""The encoder probe's targets by hand (a ring cell's angle, a grid cell's row and column, a Gaussian scene's
state) and one short probe run end to end."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from agents.scenes import build_scene  # noqa: E402
from benchmarks.metric_check_probe import coordinates, main  # noqa: E402


def test_the_coordinates_of_each_kind_of_scene():
    ring = build_scene("ring", 16)
    quarter = ring.mdp.n_states // 4
    assert np.allclose(coordinates(ring, np.array([0, quarter])), [[1.0, 0.0], [0.0, 1.0]])
    grid = build_scene("grid", 16)
    assert coordinates(grid, np.array([0, 5])).tolist() == [[0.0, 0.0], [1.0, 1.0]]  # 4 x 4: cell 5 is (1, 1)
    sprite = build_scene("sprite", 16)
    states = np.array([[0.5, -0.25]])
    assert np.array_equal(coordinates(sprite, states), states)


def test_a_short_probe_reports_its_held_out_r2(tmp_path, capsys):
    out = tmp_path / "probe.json"
    assert (
        main(
            [
                "--scene",
                "ring",
                "--distractors",
                "none",
                "--steps",
                "2",
                "--batch",
                "4",
                "--image-size",
                "16",
                "--eval-every",
                "1",
                "--threads",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert [point["step"] for point in record["curve"]] == [1, 2] and record["held_out_r2"] <= 1.0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "curve" not in printed and printed["held_out_r2"] == record["held_out_r2"]
