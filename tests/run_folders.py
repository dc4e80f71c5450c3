"""Run folders written by hand for the tests of the run-reading and table modules: ``TASK/METHOD/seedN`` with
a ``config.json`` and an ``eval.csv`` of known returns."""

from __future__ import annotations

import csv
import json
from pathlib import Path


def write_run(root: Path, task: str, method: str, seed: int, rows: list[tuple[int, float]], **config) -> Path:
    """One run folder with the evaluation ``rows`` (step, mean return)."""
    folder = root / task / method / f"seed{seed}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"config": {"task": task, "method": method, "seed": seed,
                                                               **config}, "device": "cpu"}))
    with open(folder / "eval.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_step", "mean_return", "std_return", "episodes", "split", "elapsed_s"])
        writer.writerows([step, value, 0, 10, "eval", 1.0] for step, value in rows)
    return folder


RETURNS = {("cartpole-swingup", "drq"): [300, 500, 400], ("walker-walk", "drq"): [600, 700, 800],
           ("cartpole-swingup", "eps-r"): [350, 450, 900], ("walker-walk", "eps-r"): [650, 100, 850]}


def make_runs(tmp_path) -> Path:
    """Three seeds of DrQ and eps-R on two tasks, each evaluated at steps 0 and 200 (:data:`RETURNS`)."""
    for (task, method), values in RETURNS.items():
        for seed, value in enumerate(values):
            write_run(tmp_path, task, method, seed, [(0, 0), (200, value)])
    return tmp_path
