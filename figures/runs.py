"""Find training runs on disk and read their evaluation logs (shared by the curve and table figures).

A run folder is any folder holding both ``eval.csv`` and ``config.json`` (what
``python -m agents.train`` writes). :func:`find_runs` accepts a root to search
recursively, a run folder, or a list of either; :class:`Run` carries the task,
method and seed from ``config.json`` and the numeric columns of ``eval.csv``
(or of ``train.csv`` for a training metric such as ``episode_return``).
Aggregates over seeds use the population standard deviation (ddof = 0).

The paper's task and method order come from ``agents`` (``agents.dcs.PAPER_TASKS``,
``agents.config.METHODS``), imported on first use: ``TASK_ORDER`` and
``METHOD_ORDER`` are resolved lazily (module ``__getattr__``), so importing this
module does not import ``agents``.
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Union

import numpy as np

from bisimkit.errors import InputError

# The paper's task abbreviations and method names (the orders: task_order(), method_order()).
TASK_ABBREV: dict[str, str] = {"ball_in_cup-catch": "BiC", "cartpole-swingup": "CS", "cheetah-run": "CR",
                               "finger-spin": "FS", "reacher-easy": "RE", "walker-walk": "WW"}
METHOD_LABEL: dict[str, str] = {"sac": "SAC", "drq": "DrQ", "drq+dbc": "DrQ+DBC", "eps-r": "ε-R",
                                "drq+pse": "DrQ+PSE", "eps-pi": "ε-π"}
EVAL_FILE, CONFIG_FILE, TRAIN_FILE = "eval.csv", "config.json", "train.csv"

PathLike = Union[str, os.PathLike]


def task_order() -> tuple[str, ...]:
    """The paper's six tasks in its table order (``agents.dcs.PAPER_TASKS``)."""
    from agents.dcs import PAPER_TASKS

    return tuple(PAPER_TASKS)


def method_order() -> tuple[str, ...]:
    """The methods in the paper's table order (``agents.config.METHODS``)."""
    from agents.config import METHODS

    return tuple(METHODS)


def __getattr__(name: str):
    """``TASK_ORDER`` and ``METHOD_ORDER``, computed on first access (they import ``agents``)."""
    if name == "TASK_ORDER":
        return task_order()
    if name == "METHOD_ORDER":
        return method_order()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Run:
    """One run folder: its identity and the numeric columns of ``eval.csv`` by name."""

    folder: Path
    task: str
    method: str
    seed: int
    eval: dict[str, np.ndarray] = field(default_factory=dict)
    splits: tuple[str, ...] = ()   # the distinct values of eval.csv's split column

    def series(self, metric: str = "mean_return") -> tuple[np.ndarray, np.ndarray]:
        """(environment steps, values) of ``metric``: an ``eval.csv`` column, else a ``train.csv`` one;
        sorted by step, rows without a value dropped."""
        table = self.eval if metric in self.eval else read_csv_columns(self.folder / TRAIN_FILE)
        if metric not in table:
            raise InputError(f"metric: {metric!r} is not a column of {self.folder / EVAL_FILE} "
                             f"or {self.folder / TRAIN_FILE}")
        steps, values = table["env_step"], table[metric]
        keep = np.isfinite(steps) & np.isfinite(values)
        order = np.argsort(steps[keep], kind="stable")
        return steps[keep][order], values[keep][order]


def read_csv_columns(path: Path) -> dict[str, np.ndarray]:
    """Numeric columns of a CSV file as float arrays (empty cells and text become NaN; missing file: {})."""
    if not path.is_file():
        return {}
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path.name}: cannot read {path}: {exc}") from None
    if not rows:
        return {}
    columns: dict[str, np.ndarray] = {}
    for name in rows[0]:
        if name is None:
            continue
        values = [_number(row.get(name)) for row in rows]
        columns[name] = np.asarray(values, dtype=float)
    return columns


def _number(text) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def read_run(folder: Path) -> Run:
    """The :class:`Run` of one folder holding ``config.json`` and ``eval.csv``."""
    try:
        info = json.loads((folder / CONFIG_FILE).read_text())
        config = info["config"]
        task, method, seed = str(config["task"]), str(config["method"]), int(config.get("seed", 0))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"config.json: {folder / CONFIG_FILE} is not a run configuration ({exc})") from None
    if (folder / EVAL_FILE).stat().st_size == 0:  # a run writes the header and a row at its start
        raise InputError(f"eval.csv: {folder / EVAL_FILE} is empty (a truncated or unfinished copy of a run?)")
    table = read_csv_columns(folder / EVAL_FILE)
    if table and "env_step" not in table:
        raise InputError(f"eval.csv: {folder / EVAL_FILE} has no env_step column")
    return Run(folder, task, method, seed, table, _splits(folder / EVAL_FILE) if table else ())


def _splits(path: Path) -> tuple[str, ...]:
    with open(path, newline="") as f:
        return tuple(sorted({row["split"] for row in csv.DictReader(f) if row.get("split")}))


def _run_folders(root: Path) -> list[Path]:
    if (root / EVAL_FILE).is_file() and (root / CONFIG_FILE).is_file():
        return [root]
    found = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("buffer", "tb"))
        if EVAL_FILE in files and CONFIG_FILE in files:
            found.append(Path(current))
    return found


def find_runs(roots: PathLike | Iterable[PathLike]) -> list[Run]:
    """Every run under ``roots`` (a folder to search, a run folder, or a list of them) with at least
    one evaluation row, in a stable order (task, method, seed, folder); none found is an error."""
    paths = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    if not paths:
        raise InputError("runs: no folder given")
    folders: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise InputError(f"runs: {path} is not a folder")
        for folder in _run_folders(path):
            if folder.resolve() not in {f.resolve() for f in folders}:
                folders.append(folder)
    runs = [run for run in map(read_run, folders) if run.eval]
    if not runs:
        raise InputError(f"runs: no run folder (eval.csv + config.json with rows) under "
                         f"{', '.join(str(p) for p in paths)}")
    tasks, methods = task_order(), method_order()
    return sorted(runs, key=lambda r: (_rank(r.task, tasks), _rank(r.method, methods), r.seed, str(r.folder)))


def _rank(name: str, order: tuple[str, ...]) -> tuple[int, str]:
    return (order.index(name), "") if name in order else (len(order), name)


def ordered(names: Iterable[str], order: tuple[str, ...]) -> list[str]:
    """The distinct ``names`` in the paper's ``order``, unknown ones after it alphabetically."""
    return sorted(set(names), key=lambda n: _rank(n, order))
