"""``benchmarks/bench_mico_gpu.py`` (the ``mico`` stage of ``benchmarks/gpu_check.sh``) at tiny n on the CPU."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch", reason="the benchmark's torch path needs the 'torch' extra")

from benchmarks import bench_mico_gpu  # noqa: E402
from benchmarks.common import published_mdp  # noqa: E402


def test_the_stage_entry_writes_the_comparison_the_fit_and_the_target(tmp_path):
    out = tmp_path / "mico.json"
    assert (
        bench_mico_gpu.main(
            [
                "--device",
                "cpu",
                "--sizes",
                "30,60",
                "--target",
                "90",
                "--run-target",
                "--rounds",
                "1",
                "--metrics",
                "mico,psm-sampled",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    for n in ("30", "60"):
        for metric in ("mico", "psm-sampled"):
            entry = result["sizes"][n][metric]
            assert entry["within_certificates"] is True
            assert entry["torch"]["converged"] and entry["torch"]["certified_error"] <= 1e-9
            assert entry["numpy"]["converged"] and "torch" in entry["torch"]["method"]
    target = result["target"]["mico"]
    assert result["target"]["n"] == 90 and target["converged"] and target["certified_error"] <= 1e-9
    assert target["peak_mib"] > 0 and target["peak_kind"] == "process peak RSS"
    assert set(result["fits"]) == {"mico", "psm-sampled"}


def test_the_fit_recovers_a_power_law_and_ignores_timings_under_its_floor():
    sizes = [1000, 2000, 4000, 20]
    seconds = [2.0 * (n / 1000) ** 2.5 for n in sizes[:3]] + [0.001]
    k, a = bench_mico_gpu.fit_exponent(sizes, seconds)
    assert k == pytest.approx(2.5) and a * 20000**k == pytest.approx(2.0 * 20**2.5)
    assert bench_mico_gpu.fit_exponent([1000, 20], [1.0, 0.001]) is None


def test_its_workload_is_the_dense_benchmarks():
    assert np.array_equal(bench_mico_gpu.published_mdp(30).transitions, published_mdp(30).transitions)
    assert bench_mico_gpu.TOL == 1e-9
