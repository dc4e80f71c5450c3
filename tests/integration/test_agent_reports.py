"""Reports on trained agents: evaluation CLI, learning curves, results table, nearest-neighbour figure.

One tiny real run (walker-walk, eps-r, 24 env steps at 32x32 pixels, a few
updates) is trained once per module; curves and table are checked on a
synthetic runs tree whose numbers are known.
"""

from __future__ import annotations

import csv
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("dm_control")

from run_folders import synthetic_runs, train_tiny_run, write_run  # noqa: E402

from agents.videos import EVAL_VIDEOS, TRAIN_VIDEOS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, after checking the magic."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A real eps-r run on walker-walk: 24 env steps, 32x32 pixels, batch 4, a few updates (~5 s)."""
    return train_tiny_run(tmp_path_factory.mktemp("runs") / "walker-walk" / "eps-r" / "seed0")


# ------------------------------------------------------------------ synthetic runs tree
@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """Runs with known numbers (:func:`run_folders.synthetic_runs`)."""
    return synthetic_runs(tmp_path_factory.mktemp("synthetic"))


# ----------------------------------------------------------------------- evaluation
def test_evaluate_checkpoint_reproduces_the_runs_last_evaluation(tiny_run):
    from agents.evaluate import evaluate_checkpoint

    result = evaluate_checkpoint(tiny_run, episodes=1, split="eval", seed=0, device="cpu")
    with open(tiny_run / "eval.csv", newline="") as f:
        last = list(csv.DictReader(f))[-1]
    assert int(last["env_step"]) == 24 == result["env_steps"]
    # same seeds, same deterministic policy, same held-out videos: the same return as training's evaluation
    assert result["mean_return"] == pytest.approx(float(last["mean_return"]), rel=1e-5, abs=1e-5)
    assert (result["task"], result["method"], result["run_seed"], result["split"]) == (
        "walker-walk",
        "eps-r",
        0,
        "eval",
    )
    assert result["checkpoint"] == str(tiny_run / "checkpoint.pt")


def test_evaluate_checkpoint_summary_and_splits(tiny_run):
    from agents.evaluate import evaluate_checkpoint

    held_out = evaluate_checkpoint(tiny_run / "checkpoint.pt", episodes=3, split="eval", seed=5, device="cpu")
    assert held_out["episodes"] == 3 and len(held_out["returns"]) == 3
    assert held_out["mean_return"] == pytest.approx(np.mean(held_out["returns"]))
    assert held_out["std_return"] == pytest.approx(np.std(held_out["returns"]))
    assert all(np.isfinite(held_out["returns"]))
    assert len(held_out["videos"]) == 3 and set(held_out["videos"]) <= set(EVAL_VIDEOS)
    assert "procedural" in held_out["backgrounds"] or "DAVIS" in held_out["backgrounds"]
    training = evaluate_checkpoint(tiny_run, episodes=2, split="train", seed=5, device="cpu")
    assert training["split"] == "train" and set(training["videos"]) <= set(TRAIN_VIDEOS)
    json.dumps(held_out)  # JSON-ready


def test_evaluate_cli_success(tiny_run, tmp_path):
    out = tmp_path / "ev.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.evaluate",
            str(tiny_run),
            "--episodes",
            "2",
            "--device",
            "cpu",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(out.read_text())
    assert saved["episodes"] == 2 and len(saved["returns"]) == 2
    first, second = proc.stdout.splitlines()
    assert f"{saved['mean_return']:.2f} ± {saved['std_return']:.2f} over 2 episodes" in first
    assert second.startswith("backgrounds: ") and "videos: " in second
    assert all(v in second for v in saved["videos"])


@pytest.mark.parametrize(
    "args, field",
    [
        (["{missing}"], "checkpoint"),
        (["{run}/eval.csv"], "checkpoint"),
        (["{junk}"], "checkpoint"),
        (["{parent}"], "checkpoint"),
        (["{tensor}"], "checkpoint"),
        (["{run}", "--episodes", "0"], "episodes"),
        (["{run}", "--episodes", "many"], "--episodes"),
        (["{run}", "--split", "test"], "split"),
        (["{run}", "--device", "tpu"], "device"),
    ],
)
def test_evaluate_cli_bad_input(tiny_run, tmp_path, capsys, args, field):
    import torch

    from agents.evaluate import main

    junk = tmp_path / "junk.pt"
    junk.write_bytes(os.urandom(64))
    tensor = tmp_path / "tensor.pt"
    torch.save({"weights": torch.zeros(3)}, tensor)  # a readable torch file, but not a training checkpoint
    names = {
        "missing": tmp_path / "nope.pt",
        "run": tiny_run,
        "junk": junk,
        "parent": tiny_run.parent,
        "tensor": tensor,
    }
    status = main([a.format(**names) for a in args])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert field in err


def test_evaluate_cli_bad_input_in_a_real_process(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "agents.evaluate", str(tmp_path / "none")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: checkpoint: no such file") and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ learning curves
def test_runs_of_one_seed_with_different_budgets_are_two_lines_and_two_rows(tmp_path, capsys):
    """Two seed-0 runs of eps-r on cartpole-swingup, 2000 and 4000 environment steps: two configurations,
    each its own line (nothing cut to the shorter) and row, labelled by what differs."""
    from bisimkit_runs.runs import find_runs, group_runs
    from figures.learning_curves import curves, main as curves_main
    from figures.results_table import main as table_main, results_table

    short = write_run(
        tmp_path,
        "cartpole-swingup",
        "eps-r",
        0,
        [(0, 0), (1000, 10), (2000, 20)],
        "short",
        env_steps=2000,
        batch_size=512,
    )
    long = write_run(
        tmp_path,
        "cartpole-swingup",
        "eps-r",
        0,
        [(0, 0), (2000, 40), (4000, 80)],
        "long",
        env_steps=4000,
        batch_size=512,
    )
    groups = group_runs(find_runs(tmp_path))
    assert [(g.label, g.seeds, [r.folder for r in g.runs]) for g in groups] == [
        ("ε-R (env_steps=2000)", (0,), [short]),
        ("ε-R (env_steps=4000)", (0,), [long]),
    ]
    assert not any(g.duplicates for g in groups)
    two = curves(find_runs(tmp_path))
    assert [(c.label, c.seeds, c.steps[-1], c.mean[-1]) for c in two] == [
        ("ε-R (env_steps=2000)", 1, 2000, 20),
        ("ε-R (env_steps=4000)", 1, 4000, 80),
    ]
    rows = results_table(tmp_path).splitlines()
    assert rows[5] == "| ε-R (env_steps=2000) | n/a | 20.0 ± 0.0 | n/a | n/a | n/a | n/a |"
    assert rows[6] == "| ε-R (env_steps=4000) | n/a | **80.0 ± 0.0** | n/a | n/a | n/a | n/a |"
    assert rows[2] == "| SAC | n/a | n/a | n/a | n/a | n/a | n/a |"  # the other methods keep their labels
    assert (
        "seeds per cell: 1;" in rows[-1]
        and "environment steps: 2,000 (except ε-R (env_steps=4000)/CS: 4,000)" in rows[-1]
    )
    capsys.readouterr()
    assert curves_main([str(tmp_path), "--out", str(tmp_path / "c.png")]) == 0
    listing = (tmp_path / "c.runs.txt").read_text()
    assert listing == (
        f"cartpole-swingup (fields that differ between its lines: env_steps)\n"
        f"  ε-R (env_steps=2000): 1 seed (0); env_steps=2000\n    seed 0: {short}\n"
        f"  ε-R (env_steps=4000): 1 seed (0); env_steps=4000\n    seed 0: {long}\n"
    )
    assert listing in capsys.readouterr().err
    assert table_main([str(tmp_path), "--out", str(tmp_path / "t.md")]) == 0
    assert (tmp_path / "t.runs.txt").read_text() == listing
    assert listing in capsys.readouterr().err


def test_seeds_of_one_configuration_are_one_group_and_a_repeated_seed_is_reported(tmp_path, capsys):
    """Seeds 0 and 1 of one configuration (run on different devices, evaluated at different intervals:
    not learning fields) are one group of 2 seeds; a second seed-0 run of it is a duplicate: reported,
    counted once (the run evaluated furthest is used)."""
    from bisimkit_runs.runs import describe_groups, find_runs, group_runs
    from figures.learning_curves import curves
    from figures.results_table import results_table

    same = dict(env_steps=200, batch_size=512)
    a = write_run(
        tmp_path, "walker-walk", "drq", 0, [(0, 0), (100, 10), (200, 20)], "a", device="cpu", eval_every=100, **same
    )
    b = write_run(tmp_path, "walker-walk", "drq", 1, [(0, 0), (200, 40)], "b", device="cuda", eval_every=200, **same)
    c = write_run(tmp_path, "walker-walk", "drq", 0, [(0, 0), (100, 30)], "c", device="cpu", eval_every=100, **same)
    (group,) = group_runs(find_runs(tmp_path))
    assert group.label == "DrQ" and group.seeds == (0, 1) and [r.folder for r in group.runs] == [a, b]
    assert [(d.folder, kept.folder) for d, kept in group.duplicates] == [(c, a)]
    (curve,) = curves(find_runs(tmp_path))
    assert curve.seeds == 2 and curve.mean.tolist() == [0, 15, 30] and curve.counts.tolist() == [2, 2, 2]
    table = results_table(tmp_path)
    assert "| DrQ | n/a | n/a | n/a | n/a | n/a | **30.0 ± 10.0** |" in table
    assert "seeds per cell: 2;" in table
    assert f"duplicate seeds left out (same configuration and seed as a run used): DrQ/WW seed 0 ({c})" in table
    assert describe_groups([group]).endswith(f"    duplicate of seed 0, left out: {c} (used: {a})\n")


def test_learning_curves_png(synthetic, tiny_run, tmp_path):
    from bisimkit_runs.runs import find_runs
    from figures.learning_curves import curves, plot_learning_curves

    runs = find_runs(synthetic)
    assert len(runs) == 7  # not-a-run (no config.json) is skipped
    assert [r.task for r in runs][:1] == ["ball_in_cup-catch"]  # the paper's task order
    png = plot_learning_curves(synthetic, tmp_path / "curves.png")
    width, height = png_size(png)
    assert 800 <= width <= 2500 and 300 <= height <= 1500  # three panels side by side
    # a list of run folders (here the real run and one synthetic seed)
    listed = [tiny_run, synthetic / "walker-walk" / "eps-pi" / "seed0"]
    assert [(c.task, c.method) for c in curves(find_runs(listed))] == [
        ("walker-walk", "eps-r"),
        ("walker-walk", "eps-pi"),
    ]
    png2 = plot_learning_curves(listed, tmp_path / "two.png")
    assert png_size(png2)[0] >= 400 and png2.stat().st_size > 10_000


def test_learning_curves_draw_drqs_own_runs_where_a_task_has_them(synthetic, tmp_path, capsys):
    """--reference drq: DrQ's published runs (figures/data) under ours on cartpole-swingup, walker-walk and
    ball_in_cup-catch, cut at each panel's last step; listed; refused with a training metric."""
    import numpy as np

    from figures.learning_curves import main, runs_listing_path
    from figures.reference_runs import drq_band, drq_runs

    out = tmp_path / "ref.png"
    assert main([str(synthetic), "--out", str(out), "--reference", "drq"]) == 0
    listing = runs_listing_path(out).read_text()
    assert "reference: DrQ's own runs (10 seeds, no distractions)" in listing
    assert "drawn on ball_in_cup-catch, cartpole-swingup, walker-walk" in listing
    # the band: DrQ's cartpole runs at 16k are 97-248 with mean 182, and the grid stops where asked
    grid, mean, std = drq_band(drq_runs("cartpole-swingup"), 16_000, points=2)
    at16 = np.array([returns[1] for _, returns in drq_runs("cartpole_swingup").values()])
    assert grid.tolist() == [0.0, 16_000.0]
    assert mean[1] == pytest.approx(at16.mean(), rel=1e-12) and std[1] == pytest.approx(at16.std(), rel=1e-12)
    assert round(at16.min()) == 97 and round(at16.max()) == 248
    assert drq_band(drq_runs("cartpole-swingup"), 10**7)[0][-1] == 496_000  # the shortest run's end
    capsys.readouterr()
    assert (
        main([str(synthetic), "--out", str(tmp_path / "x.png"), "--reference", "drq", "--metric", "episode_return"])
        == 2
    )
    assert capsys.readouterr().err.startswith("error: reference: DrQ's curves are evaluation returns")
    assert main([str(synthetic), "--out", str(tmp_path / "x.png"), "--reference", "curl"]) == 2
    assert capsys.readouterr().err.strip() == "error: reference: 'curl' is not one of drq"
    assert not (tmp_path / "x.png").exists()


# -------------------------------------------------------------- nearest neighbours
def test_nearest_neighbours_figure(tiny_run, tmp_path):
    from agents.neighbours import collect_observations, distance_to_all
    from agents.restore import restore_agent
    from figures.nearest_neighbours.__main__ import nearest_neighbours

    out = tmp_path / "nn.png"
    result = nearest_neighbours(
        tiny_run, out, episodes=3, queries=2, neighbours=3, episode_steps=10, keep=4, seed=1, device="cpu"
    )
    assert result["path"] == str(out)
    width, height = png_size(out)
    assert 500 <= width <= 1500 and 400 <= height <= 1200  # 2 rows x 4 images
    assert out.stat().st_size > 20_000
    assert result["distance"] == "head"  # eps-r has a learned distance head
    assert len(result["videos"]) == 3 and set(result["videos"]) <= set(EVAL_VIDEOS)
    assert len(set(result["videos"])) >= 2  # reseeded episodes play different held-out videos
    episode, step = np.array(result["episode"]), np.array(result["step"])
    # 10 control steps / action repeat 2 = 5 agent steps: 6 observations, every 2nd kept
    assert np.bincount(episode).tolist() == [3, 3, 3]
    assert step[episode == 0].tolist() == [0, 2, 4]

    # recompute: the neighbours are the closest observations of other episodes under the head
    restored = restore_agent(tiny_run, "cpu", episode_steps=10)
    try:
        data = collect_observations(restored.agent, restored.env, 3, 4, seed=1)
    finally:
        restored.env.close()
    assert data.episode.tolist() == result["episode"] and data.videos == result["videos"]
    latents = restored.agent.embed(data.obs)
    assert len(result["matches"]) == 2
    for match in result["matches"]:
        q, nbrs, dists = match["query"], match["neighbours"], match["distances"]
        d = distance_to_all(restored.agent, latents, q).numpy()
        others = [j for j in range(len(d)) if episode[j] != episode[q]]
        expected = sorted(others, key=lambda j: d[j])[:3]
        assert nbrs == expected and all(episode[j] != episode[q] for j in nbrs)
        assert dists == pytest.approx([d[j] for j in expected], rel=1e-5)
        assert dists == sorted(dists) and dists[0] > 0


def test_nearest_neighbours_bad_input(tiny_run, tmp_path, capsys):
    from figures.nearest_neighbours.__main__ import main

    assert main([str(tiny_run), "--out", str(tmp_path / "nn.png"), "--episodes", "1"]) == 2
    assert capsys.readouterr().err.startswith("error: episodes:")
    assert (
        main([str(tiny_run), "--out", str(tmp_path / "nn.png"), "--neighbours", "9", "--episodes", "2", "--keep", "4"])
        == 2
    )
    assert capsys.readouterr().err.startswith("error: neighbours:")
    assert main([str(tmp_path / "missing.pt"), "--out", str(tmp_path / "nn.png")]) == 2
    assert capsys.readouterr().err.startswith("error: checkpoint:")
    assert not (tmp_path / "nn.png").exists()
