"""Filing a GPU machine's results.tgz (benchmarks/gpu_results.py): unpacked safely, summarised for the docs."""

import io
import json
import tarfile

from benchmarks.gpu_results import DISTRACTED_RANDOM, bench_table, main, random_key

RECORD = {
    "device_name": "NVIDIA H200",
    "batch": 512,
    "torch": "2.11",
    "rounds": 5,
    "rounds_done": 5,
    "seconds_per_update": {
        "eps-r/plain": 0.040,
        "eps-r/fast": 0.020,
        "eps-r/graphs": 0.0125,
        "eps-r@legacy/plain": 0.030,
        "eps-r@legacy/compiled": 0.0139,
        "eps-r@legacy/graphs": 0.0146,
    },
    "ratios": {"eps-r fast / plain": 0.5},
}


def archive(path, files: dict[str, str], extra=None):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            tar.addfile(extra)
    return path


def eval_run(seed: int, finals: list[tuple[int, float]]) -> dict[str, str]:
    rows = "env_step,mean_return,std_return,episodes,split,elapsed_s\n" + "".join(
        f"{step},{mean},10,10,train-settings,1.0\n" for step, mean in finals
    )
    return {
        f"./fidelity/drq-seed{seed}/eval.csv": rows,
        f"./fidelity/drq-seed{seed}/config.json": json.dumps({"config": {"seed": seed, "preset": "drq"}}),
    }


def test_an_archive_is_filed_and_summarised(tmp_path, capsys):
    files = {
        **eval_run(0, [(0, 10), (100_000, 700)]),
        **eval_run(1, [(0, 12), (100_000, 800)]),
        "./updates-cuda.json": json.dumps(RECORD),
        "./graphs-check.json": json.dumps({"checks": {"drq": {"passed": True, "max_rel": 1e-6, "same_draws": True}}}),
    }
    tgz = archive(tmp_path / "results.tgz", files)
    root = tmp_path / "gpu"
    assert main([str(tgz), "--name", "h200-all", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    dest = root / "h200-all"
    assert (dest / "fidelity" / "drq-seed1" / "eval.csv").is_file() and (dest / "fidelity.png").stat().st_size > 0
    assert json.loads((dest / "fidelity.json").read_text())["passed"] is True
    assert "seed 0: 700.0" in out and "PASS" in out and "| env steps | 0 | 100k |" in out
    assert "| eps-r/graphs | 12.50 | 80.0 |" in out
    assert "eps-r@legacy, the lighter update, 28.6 ms plain" in out
    assert "fastest path eps-r@legacy/compiled, 13.9 ms per update (target <= 14 ms on an H200: met)" in out
    assert "fastest path eps-r/graphs, 12.5 ms per update (target <= 14 ms on an H200: met)" in out
    assert "graphs check, drq: pass" in out
    # a second filing under the same name is refused, nothing changed
    assert main([str(tgz), "--name", "h200-all", "--root", str(root)]) == 2
    assert capsys.readouterr().err.strip().startswith("error: name: ")


def test_unsafe_or_unreadable_archives_write_nothing(tmp_path, capsys):
    root = tmp_path / "gpu"
    escape = archive(tmp_path / "escape.tgz", {"./ok.txt": "x", "../outside.txt": "y"})
    link = tarfile.TarInfo("./link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    linked = archive(tmp_path / "link.tgz", {"./ok.txt": "x"}, extra=link)
    (tmp_path / "bad.tgz").write_bytes(b"not a tarball")
    for name, path in (("a", escape), ("b", linked), ("c", tmp_path / "bad.tgz")):
        assert main([str(path), "--name", name, "--root", str(root)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: archive: ")
        assert not (root / name).exists()
    assert not (tmp_path / "outside.txt").exists()
    assert main([str(escape), "--name", "../x", "--root", str(root)]) == 2
    assert capsys.readouterr().err.startswith("error: name: ")


def test_bench_table_says_when_the_target_is_missed():
    slow = {**RECORD, "seconds_per_update": {"eps-r/plain": 0.04, "eps-r/fast": 0.02, "eps-r@legacy/plain": 0.01}}
    text = bench_table(slow)
    assert "| eps-r/fast | 20.00 | 50.0 |" in text and "NVIDIA H200, batch 512" in text
    assert "fastest path eps-r/fast, 20.0 ms per update (target <= 14 ms on an H200: not met)" in text
    # a plain path is never the one the target is read off (it is the baseline)
    assert "eps-r@legacy/plain" in text and "fastest path eps-r@legacy" not in text


def distracted_run(method: str, seed: int, finals: list[tuple[int, float]]) -> dict[str, str]:
    name = f"./distracted/{method.replace('+', '-')}-seed{seed}"
    rows = "env_step,mean_return,std_return,episodes,split,elapsed_s\n" + "".join(
        f"{step},{mean},5,10,eval,1.0\n" for step, mean in finals
    )
    return {f"{name}/eval.csv": rows, f"{name}/config.json": json.dumps({"config": {"method": method, "seed": seed}})}


def cache_random(root, returns, cfg=None):
    """The random policy's returns as gpu_results caches them (so no environment is rendered here)."""
    root.mkdir(parents=True, exist_ok=True)
    key = random_key(cfg or {"method": "drq", "seed": 0})
    (root / DISTRACTED_RANDOM).write_text(json.dumps({"key": key, "returns": returns}))


def test_the_distracted_table_fills_as_the_runs_land(tmp_path, capsys):
    root = tmp_path / "gpu"
    cache_random(root, [0.0] * 10)
    first = {
        **distracted_run("eps-r", 0, [(0, 10), (20_000, 200), (40_000, 300)]),
        **distracted_run(
            "drq", 0, [(0, 12), (20_000, 150), (40_000, 250), (60_000, 300), (80_000, 350), (100_000, 400)]
        ),
    }
    assert main([str(archive(tmp_path / "a.tgz", first)), "--name", "call-1", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "| eps-r | 0 | 10 ± 5 | 200 ± 5 | 300 ± 5 |  |  |  |" in out  # killed at 40k: blanks after it
    assert "| drq | 0 | 12 ± 5 | 150 ± 5 | 250 ± 5 | 300 ± 5 | 350 ± 5 | 400 ± 5 |" in out
    assert "- eps-r: 0 of 1 filed seeds at 100k" in out and "- drq: 1 of 1 filed seeds at 100k, mean 400" in out
    # the next call resumes eps-r seed 0 and adds drq+dbc: the table holds both filings, eps-r's longer record
    second = {
        **distracted_run(
            "eps-r", 0, [(0, 10), (20_000, 200), (40_000, 300), (60_000, 350), (80_000, 380), (100_000, 420)]
        ),
        **distracted_run("drq+dbc", 1, [(0, 9), (20_000, 100)]),
    }
    assert main([str(archive(tmp_path / "b.tgz", second)), "--name", "call-2", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("| method | seed |") :]
    assert table.index("| eps-r | 0 |") < table.index("| drq+dbc | 1 |") < table.index("| drq | 0 |")
    assert table.count("| eps-r | 0 |") == 1 and "| eps-r | 0 | 10 ± 5 | 200 ± 5 | 300 ± 5 | 350 ± 5 |" in table
    assert "- eps-r: 1 of 1 filed seeds at 100k, mean 420" in out and "- from call-1, call-2" in out


def test_distracted_runs_are_judged_by_the_learning_checks_rule(tmp_path, capsys):
    root = tmp_path / "gpu"
    cache_random(root, [100.0, 140.0] * 5)  # mean 120, std 20: the mark is 120 + 100
    runs = {
        **distracted_run("eps-r", 0, [(0, 10), (20_000, 150), (40_000, 230), (60_000, 240), (80_000, 215)]),
        **distracted_run("drq", 0, [(0, 10), (20_000, 400), (40_000, 150), (60_000, 200), (80_000, 210)]),
    }
    figure = tmp_path / "distracted.png"
    assert (
        main(
            [
                str(archive(tmp_path / "a.tgz", runs)),
                "--name",
                "call-1",
                "--root",
                str(root),
                "--distracted-figure",
                str(figure),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "random policy 120.0 ± 20.0 (10 episodes); pass mark 220.0" in out
    assert "eps-r-seed0: PASS, last three evaluations 228.3 at 80k" in out  # (230 + 240 + 215) / 3
    assert "drq-seed0: FAIL, last three evaluations 186.7 at 80k" in out  # one early 400 does not count
    record = json.loads((root / "distracted.json").read_text())
    assert record["runs"]["eps-r-seed0"]["passed"] and not record["runs"]["drq-seed0"]["passed"]
    assert figure.stat().st_size > 0
    # the same summary again without an archive, from what is filed
    assert main(["--distracted", "--root", str(root), "--distracted-figure", str(figure)]) == 0
    assert "eps-r-seed0: PASS" in capsys.readouterr().out


def test_the_distracted_summary_needs_runs_and_an_archive_needs_a_name(tmp_path, capsys):
    assert main(["--distracted", "--root", str(tmp_path)]) == 2
    assert "no distracted runs filed" in capsys.readouterr().err
    assert main(["--root", str(tmp_path)]) == 2
    assert "archive:" in capsys.readouterr().err
    assert main([str(tmp_path / "a.tgz"), "--root", str(tmp_path)]) == 2
    assert "name:" in capsys.readouterr().err
