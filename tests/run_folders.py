"""Run folders for the tests of the run-reading and table modules: written by hand (``TASK/METHOD/seedN`` with
a ``config.json`` and an ``eval.csv`` of known returns), or one tiny real training run."""

from __future__ import annotations

import csv
import json
from pathlib import Path


def write_run(
    root: Path, task: str, method: str, seed: int, rows: list[tuple[int, float]], folder: str = "", **config
) -> Path:
    """A hand-written run folder (``root/task/method/seedN``, or ``root/folder``): config.json with
    task, method, seed and ``config``, and eval.csv with (env_step, mean_return) rows."""
    folder = root / folder if folder else root / task / method / f"seed{seed}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"config": {"task": task, "method": method, "seed": seed, **config}, "device": "cpu"})
    )
    with open(folder / "eval.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_step", "mean_return", "std_return", "episodes", "split", "elapsed_s"])
        for step, value in rows:
            writer.writerow([step, value, 0, 10, "eval", 1.0])
    return folder


RETURNS = {
    ("cartpole-swingup", "drq"): [300, 500, 400],
    ("walker-walk", "drq"): [600, 700, 800],
    ("cartpole-swingup", "eps-r"): [350, 450, 900],
    ("walker-walk", "eps-r"): [650, 100, 850],
}


def make_runs(tmp_path) -> Path:
    """Three seeds of DrQ and eps-R on two tasks, each evaluated at steps 0 and 200 (:data:`RETURNS`)."""
    for (task, method), values in RETURNS.items():
        for seed, value in enumerate(values):
            write_run(tmp_path, task, method, seed, [(0, 0), (200, value)])
    return tmp_path


def synthetic_runs(root: Path) -> Path:
    """Runs with known numbers: 2 seeds of SAC and DrQ on CS, one seed elsewhere, and a decoy folder."""
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


def train_tiny_run(out: Path) -> Path:
    """A real eps-r run on walker-walk into ``out``: 24 env steps, 32x32 pixels, batch 4, a few updates
    (a few seconds; needs the agents extra)."""
    from agents.config import TrainConfig
    from agents.train import train

    cfg = TrainConfig(
        task="walker-walk",
        method="eps-r",
        env_steps=24,
        episode_steps=12,
        batch_size=4,
        seed_steps=8,
        eval_every=12,
        eval_episodes=1,
        checkpoint_every=12,
        capacity="low",
        image_size=32,
        device="cpu",
    )
    train(cfg, out, progress=False, tensorboard=False)
    return out
