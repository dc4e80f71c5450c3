"""The verdict of ``benchmarks.bench_updates --check-graphs`` (the GPU run itself needs CUDA)."""

import numpy as np

from benchmarks.bench_updates import compare_losses, variants


def test_graph_check_passes_same_draws_and_noise_and_fails_a_stale_replay():
    rng = np.random.default_rng(0)
    eager = (30 * (1 + np.arange(50) % 4) * np.exp(-np.arange(50) / 40)).tolist()  # rewards scaled 1-4 in turn
    same = compare_losses(eager, eager)
    assert same["passed"] and same["same_draws"] and same["max_rel"] == 0
    noisy = compare_losses(eager, (np.array(eager) * (1 + 0.01 * rng.standard_normal(50))).tolist())
    assert noisy["passed"] and not noisy["same_draws"]
    stale = compare_losses(eager, [eager[7]] * 50)  # every replay reads the batch it was captured with
    assert not stale["passed"]
    drift = compare_losses(eager, (np.array(eager) * np.linspace(1, 1.15, 50)).tolist())
    assert not drift["passed"] and drift["first10_max_rel"] < 0.03  # a slow drift shows in the median


def test_paths_and_variants():
    cpu = variants(["eps-r"], ("plain", "fast", "graphs", "compiled"), cuda=False)
    cuda = variants(["eps-r"], ("plain", "fast", "graphs", "compiled"), cuda=True)
    assert cpu["eps-r/compiled"][1] == {"method": "eps-r", "fast": True, "graphs": False, "compile": True}
    assert cuda["eps-r/graphs"][1] == {"method": "eps-r", "fast": True, "graphs": True, "compile": False}
    assert cuda["eps-r@legacy/graphs"][1]["aug_k"] == 1 and "drq@drq/graphs" not in cuda


def test_the_record_is_written_after_every_round_and_bad_counts_are_one_error(tmp_path, capsys):
    """A benchmark stopped before its last round keeps the rounds it finished."""
    import json

    from benchmarks.bench_updates import main

    out = tmp_path / "u.json"
    assert (
        main(
            [
                "--device",
                "cpu",
                "--batch",
                "2",
                "--rounds",
                "2",
                "--methods",
                "sac",
                "--paths",
                "plain",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert record["rounds_done"] == 2 and list(record["seconds_per_update"]) == ["sac/plain"]
    assert record["seconds_per_update"]["sac/plain"] > 0
    capsys.readouterr()
    for flag in ("--rounds", "--batch", "--updates"):
        assert main(["--device", "cpu", flag, "0", "--out", str(tmp_path / "x.json")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {flag[2:]}: 0 ")
    assert not (tmp_path / "x.json").exists()
