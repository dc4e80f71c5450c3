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

from agents.config import TrainConfig  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402
from agents.videos import EVAL_VIDEOS, TRAIN_VIDEOS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
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
    from agents.train import train

    out = tmp_path_factory.mktemp("runs") / "walker-walk" / "eps-r" / "seed0"
    cfg = TrainConfig(task="walker-walk", method="eps-r", env_steps=24, episode_steps=12, batch_size=4, seed_steps=8,
                      eval_every=12, eval_episodes=1, checkpoint_every=12, capacity="low", image_size=32,
                      device="cpu")
    train(cfg, out, progress=False, tensorboard=False)
    return out


# ------------------------------------------------------------------ synthetic runs tree
def write_run(root: Path, task: str, method: str, seed: int, rows: list[tuple[int, float]]) -> Path:
    """A hand-written run folder: config.json and eval.csv with (env_step, mean_return) rows."""
    folder = root / task / method / f"seed{seed}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"config": {"task": task, "method": method, "seed": seed},
                                                    "device": "cpu"}))
    with open(folder / "eval.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_step", "mean_return", "std_return", "episodes", "split", "elapsed_s"])
        for step, value in rows:
            writer.writerow([step, value, 0, 10, "eval", 1.0])
    return folder


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """Runs with known numbers: 2 seeds of SAC and DrQ on CS, one seed elsewhere, and a decoy folder."""
    root = tmp_path_factory.mktemp("synthetic")
    write_run(root, "cartpole-swingup", "sac", 0, [(0, 0), (100, 50), (200, 100)])
    write_run(root, "cartpole-swingup", "sac", 1, [(0, 0), (100, 150), (200, 200)])
    write_run(root, "cartpole-swingup", "drq", 0, [(0, 0), (100, 200), (200, 300)])
    write_run(root, "cartpole-swingup", "drq", 1, [(0, 0), (100, 300), (200, 500)])
    write_run(root, "walker-walk", "eps-r", 0, [(0, 10), (100, 400), (200, 700)])
    write_run(root, "walker-walk", "eps-pi", 0, [(0, 10), (100, 400), (200, 650)])
    write_run(root, "ball_in_cup-catch", "drq+pse", 3, [(0, 5), (50, 20), (200, 800.25)])
    (root / "not-a-run").mkdir()
    (root / "not-a-run" / "eval.csv").write_text("env_step,mean_return\n0,1\n")  # no config.json: ignored
    return root


# ----------------------------------------------------------------------- evaluation
def test_evaluate_checkpoint_reproduces_the_runs_last_evaluation(tiny_run):
    from agents.evaluate import evaluate_checkpoint

    result = evaluate_checkpoint(tiny_run, episodes=1, split="eval", seed=0, device="cpu")
    with open(tiny_run / "eval.csv", newline="") as f:
        last = list(csv.DictReader(f))[-1]
    assert int(last["env_step"]) == 24 == result["env_steps"]
    # same seeds, same deterministic policy, same held-out videos: the same return as training's evaluation
    assert result["mean_return"] == pytest.approx(float(last["mean_return"]), rel=1e-5, abs=1e-5)
    assert (result["task"], result["method"], result["run_seed"], result["split"]) == ("walker-walk", "eps-r", 0,
                                                                                        "eval")
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
    proc = subprocess.run([sys.executable, "-m", "agents.evaluate", str(tiny_run), "--episodes", "2",
                           "--device", "cpu", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(out.read_text())
    assert saved["episodes"] == 2 and len(saved["returns"]) == 2
    first, second = proc.stdout.splitlines()
    assert f"{saved['mean_return']:.2f} ± {saved['std_return']:.2f} over 2 episodes" in first
    assert second.startswith("backgrounds: ") and "videos: " in second
    assert all(v in second for v in saved["videos"])


@pytest.mark.parametrize("args, field", [
    (["{missing}"], "checkpoint"),
    (["{run}/eval.csv"], "checkpoint"),
    (["{junk}"], "checkpoint"),
    (["{parent}"], "checkpoint"),
    (["{tensor}"], "checkpoint"),
    (["{run}", "--episodes", "0"], "episodes"),
    (["{run}", "--episodes", "many"], "--episodes"),
    (["{run}", "--split", "test"], "split"),
    (["{run}", "--device", "tpu"], "device"),
])
def test_evaluate_cli_bad_input(tiny_run, tmp_path, capsys, args, field):
    import torch

    from agents.evaluate import main

    junk = tmp_path / "junk.pt"
    junk.write_bytes(os.urandom(64))
    tensor = tmp_path / "tensor.pt"
    torch.save({"weights": torch.zeros(3)}, tensor)  # a readable torch file, but not a training checkpoint
    names = {"missing": tmp_path / "nope.pt", "run": tiny_run, "junk": junk, "parent": tiny_run.parent,
             "tensor": tensor}
    status = main([a.format(**names) for a in args])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert field in err


def test_evaluate_cli_bad_input_in_a_real_process(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agents.evaluate", str(tmp_path / "none")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: checkpoint: no such file") and "Traceback" not in proc.stderr


# ------------------------------------------------------------------- results table
EXPECTED_TABLE = """\
| Method | BiC | CS | CR | FS | RE | WW |
|:--|--:|--:|--:|--:|--:|--:|
| SAC | n/a | 150.0 ± 50.0 | n/a | n/a | n/a | n/a |
| DrQ | n/a | **400.0 ± 100.0** | n/a | n/a | n/a | n/a |
| DrQ+DBC | n/a | n/a | n/a | n/a | n/a | n/a |
| ε-R | n/a | n/a | n/a | n/a | n/a | **700.0 ± 0.0** |
| DrQ+PSE | **800.2 ± 0.0** | n/a | n/a | n/a | n/a | n/a |
| ε-π | n/a | n/a | n/a | n/a | n/a | 650.0 ± 0.0 |
"""


def test_results_table_cells_and_bold(synthetic):
    from figures.results_table import results_table

    table = results_table(synthetic)
    body, foot = table.split("\n\n")
    assert body + "\n" == EXPECTED_TABLE
    assert foot.count("\n") == 1 and foot.startswith("*") and foot.rstrip().endswith(".*")
    assert "final evaluation return" in foot
    assert "seeds per cell: 1 (except SAC/CS: 2, DrQ/CS: 2)" in foot
    assert "environment steps: 200;" in foot
    assert "held-out backgrounds" in foot


def test_results_table_at_a_step_and_ties(synthetic):
    from figures.results_table import results_table

    rows = results_table(synthetic, step=100).splitlines()
    assert rows[2] == "| SAC | n/a | 100.0 ± 50.0 | n/a | n/a | n/a | n/a |"
    assert rows[3] == "| DrQ | n/a | **250.0 ± 50.0** | n/a | n/a | n/a | n/a |"
    # walker-walk ties at 400: both bold; ball_in_cup has no evaluation at step 100
    assert rows[5].endswith("| **400.0 ± 0.0** |") and rows[7].endswith("| **400.0 ± 0.0** |")
    assert rows[6] == "| DrQ+PSE | n/a | n/a | n/a | n/a | n/a | n/a |"
    assert "evaluation return at 100 environment steps" in rows[-1]


def test_results_table_cli(synthetic, tmp_path, capsys):
    from figures.results_table import main

    out = tmp_path / "t.md"
    assert main([str(synthetic), "--out", str(out)]) == 0
    assert capsys.readouterr().out == out.read_text()
    assert out.read_text().startswith(EXPECTED_TABLE)
    assert main([str(tmp_path / "empty")]) == 2
    assert capsys.readouterr().err.startswith("error: runs:")


# ------------------------------------------------------------------ learning curves
def test_curve_aggregation_across_seeds(tmp_path):
    from figures.learning_curves import curves
    from figures.runs import find_runs

    write_run(tmp_path, "cheetah-run", "drq", 0, [(0, 0), (100, 100), (200, 200), (300, 300)])
    write_run(tmp_path, "cheetah-run", "drq", 1, [(0, 0), (150, 300), (200, 400)])
    (curve,) = curves(find_runs(tmp_path))
    # union of steps, cut to the range both seeds cover; seed 1 interpolated at 100 -> 200
    assert curve.steps.tolist() == [0, 100, 150, 200]
    assert curve.mean.tolist() == [0, 150, 225, 300]
    assert curve.std.tolist() == [0, 50, 75, 100]
    assert curve.seeds == 2


def test_learning_curves_png(synthetic, tiny_run, tmp_path):
    from figures.learning_curves import curves, plot_learning_curves
    from figures.runs import find_runs

    runs = find_runs(synthetic)
    assert len(runs) == 7  # not-a-run (no config.json) is skipped
    assert [r.task for r in runs][:1] == ["ball_in_cup-catch"]  # the paper's task order
    png = plot_learning_curves(synthetic, tmp_path / "curves.png")
    width, height = png_size(png)
    assert 800 <= width <= 2500 and 300 <= height <= 1500  # three panels side by side
    # a list of run folders (here the real run and one synthetic seed)
    listed = [tiny_run, synthetic / "walker-walk" / "eps-pi" / "seed0"]
    assert [(c.task, c.method) for c in curves(find_runs(listed))] == [("walker-walk", "eps-r"),
                                                                       ("walker-walk", "eps-pi")]
    png2 = plot_learning_curves(listed, tmp_path / "two.png")
    assert png_size(png2)[0] >= 400 and png2.stat().st_size > 10_000


def test_learning_curves_cli_errors(tmp_path, capsys):
    from figures.learning_curves import main

    assert main([str(tmp_path / "missing"), "--out", str(tmp_path / "x.png")]) == 2
    assert "runs:" in capsys.readouterr().err
    write_run(tmp_path, "cheetah-run", "drq", 0, [(0, 0), (100, 1)])
    assert main([str(tmp_path), "--out", str(tmp_path / "x.png"), "--metric", "nonsense"]) == 2
    assert capsys.readouterr().err.startswith("error: metric: 'nonsense'")
    assert not (tmp_path / "x.png").exists()


# -------------------------------------------------------------- nearest neighbours
def test_nearest_neighbours_figure(tiny_run, tmp_path):
    from agents.restore import restore_agent
    from figures.nearest_neighbours import collect_observations, distance_to_all, nearest_neighbours

    out = tmp_path / "nn.png"
    result = nearest_neighbours(tiny_run, out, episodes=3, queries=2, neighbours=3, episode_steps=10, keep=4,
                                seed=1, device="cpu")
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
    from figures.nearest_neighbours import main

    assert main([str(tiny_run), "--out", str(tmp_path / "nn.png"), "--episodes", "1"]) == 2
    assert capsys.readouterr().err.startswith("error: episodes:")
    assert main([str(tiny_run), "--out", str(tmp_path / "nn.png"), "--neighbours", "9", "--episodes", "2",
                 "--keep", "4"]) == 2
    assert capsys.readouterr().err.startswith("error: neighbours:")
    assert main([str(tmp_path / "missing.pt"), "--out", str(tmp_path / "nn.png")]) == 2
    assert capsys.readouterr().err.startswith("error: checkpoint:")
    assert not (tmp_path / "nn.png").exists()


def test_neighbour_distance_without_a_head_is_l1_between_latents():
    import torch

    from figures.nearest_neighbours import distance_to_all, find_neighbours

    class NoHead:
        """What SAC and DrQ agents look like to the figure: no distance head."""

        distance = None

    latents = torch.tensor([[0.0, 0.0], [1.0, -1.0], [0.7, 0.2], [3.0, 3.0], [0.1, 0.1]])
    assert distance_to_all(NoHead(), latents, 0).tolist() == pytest.approx([0.0, 2.0, 0.9, 6.0, 0.2])
    episode = np.array([0, 0, 1, 1, 2])
    matches = find_neighbours(NoHead(), latents, episode, queries=5, neighbours=2, rng=np.random.default_rng(0))
    by_query = {m["query"]: m for m in matches}
    assert by_query[0]["neighbours"] == [4, 2] and by_query[0]["distances"] == pytest.approx([0.2, 0.9])
    assert by_query[2]["neighbours"] == [4, 0]  # observation 3 is in the same episode: excluded
    with pytest.raises(InputError, match="^neighbours: 4 exceeds"):
        find_neighbours(NoHead(), latents, episode, queries=1, neighbours=4, rng=np.random.default_rng(0))
