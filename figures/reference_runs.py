"""Published learning curves of reference agents, to draw and test our runs against.

DrQ's own evaluation curves on the PlaNet benchmark (Kostrikov et al. 2020;
denisyarats/drq ``data/dmc_planet_bench.csv``): 10 seeds on each of
ball_in_cup-catch, cartpole-swingup, cheetah-run, finger-spin, reacher-easy and
walker-walk, without distractions, up to 500k environment steps, kept unchanged
in ``figures/data/drq_planet_bench.csv`` (its README has the source, the licence
and the source's four duplicated runs). At 96k steps the ten cartpole-swingup
runs give 759 ± 92, DrQ's Table 1 entry.

A run is compared with them at one step by interpolating each reference run
linearly between its evaluations (every 4k-16k steps by task): :func:`drq_at`.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError

DRQ_CURVES = Path(__file__).resolve().parent / "data" / "drq_planet_bench.csv"
DRQ_SOURCE = "denisyarats/drq data/dmc_planet_bench.csv"

Runs = dict[int, tuple[np.ndarray, np.ndarray]]


def drq_env(task: str) -> str:
    """DrQ's name of one of our tasks: ``cartpole-swingup`` -> ``cartpole_swingup``."""
    return task.replace("-", "_")


@lru_cache(maxsize=None)
def _read(path: Path) -> dict[str, Runs]:
    table: dict[str, dict[int, list[tuple[int, float]]]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["agent"] == "DrQ":
                table.setdefault(row["env"], {}).setdefault(int(row["seed"]), []).append(
                    (int(row["step"]), float(row["episode_reward"]))
                )
    return {
        env: {
            seed: (np.array([s for s, _ in sorted(rows)]), np.array([r for _, r in sorted(rows)]))
            for seed, rows in sorted(runs.items())
        }
        for env, runs in table.items()
    }


def drq_runs(task: str = "cartpole-swingup", path: Path = DRQ_CURVES) -> Runs:
    """DrQ's own evaluation curves of ``task`` (ours, ``cartpole-swingup``, or DrQ's, ``cartpole_swingup``):
    seed -> (environment steps, returns), steps ascending."""
    runs = _read(path).get(drq_env(task))
    if not runs:
        raise InputError(f"task: {task!r} has no DrQ curves in {path}")
    return runs


def has_drq_runs(task: str, path: Path = DRQ_CURVES) -> bool:
    """Whether DrQ's curves cover ``task``."""
    return drq_env(task) in _read(path)


def drq_at(runs: Runs, step: float) -> np.ndarray:
    """Each of DrQ's runs linearly interpolated at ``step`` (runs that do not reach it left out)."""
    return np.array([np.interp(step, steps, returns) for steps, returns in runs.values() if steps[-1] >= step])


def drq_grid(runs: Runs, up_to: float, points: int = 101) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values): an even grid from 0 to ``up_to`` (cut where the shortest run ends) and every run
    interpolated on it, one row per run."""
    end = min(float(up_to), min(float(steps[-1]) for steps, _ in runs.values()))
    grid = np.linspace(0.0, end, points)
    return grid, np.stack([np.interp(grid, steps, returns) for steps, returns in runs.values()])


def drq_band(runs: Runs, up_to: float, points: int = 101) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps, mean, std) of DrQ's runs on :func:`drq_grid`; std over the runs as our learning curves
    take it (population, ``ddof=0``)."""
    grid, values = drq_grid(runs, up_to, points)
    return grid, values.mean(axis=0), values.std(axis=0)
