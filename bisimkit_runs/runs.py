"""Find training runs on disk and read their evaluation logs (shared by the tables and the curve figures).

A run folder is any folder holding both ``eval.csv`` and ``config.json`` (what
``python -m agents.train`` writes). :func:`find_runs` accepts a root to search
recursively, a run folder, or a list of either; :class:`Run` carries the task,
method and seed from ``config.json`` and the numeric columns of ``eval.csv``
(or of ``train.csv`` for a training metric such as ``episode_return``).
Aggregates over seeds use the population standard deviation (ddof = 0).

Runs are grouped by their whole configuration (:func:`group_runs`): one group
(one line of a figure, one cell of a table) holds the seeds of one
configuration. The group key is every field of ``config.json``'s ``config``
except :data:`NOT_LEARNING` (the seed, which a group aggregates over, and the
fields that say where a run ran or how often it was measured and saved, not
what it learned), plus the kind of backgrounds it used (DAVIS, procedural,
none; read from ``config.json``'s ``backgrounds`` line, as ``$BISIMKIT_DAVIS``
can supply DAVIS without the ``davis`` field). Fields that only apply to another
task (``carla_*`` on a DCS run) are left out. A field missing from a
``config.json`` counts as its own value (``unset``), so such runs are never
merged with runs that state it, except the fields of :data:`IMPLIED_VALUES`, which
take the value a run without them trained with. Two runs of one group with the same seed are
duplicates: the one evaluated furthest is used, the others are reported and
left out (:attr:`Group.duplicates`). Groups of one method that differ in other
fields are told apart by a label naming the fields that differ
(``ε-R (env_steps=4000)``); methods with one configuration keep their plain
label. :func:`describe_groups` lists the run folders behind each group.

The paper's task and method order are those of :mod:`bisimkit_runs.names`.
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

from .files import CONFIG_FILE, EVAL_FILE, TRAIN_FILE
from .names import METHOD_ORDER, TASK_ORDER

# The paper's task abbreviations and method names (the orders: TASK_ORDER, METHOD_ORDER).
TASK_ABBREV: dict[str, str] = {
    "ball_in_cup-catch": "BiC",
    "cartpole-swingup": "CS",
    "cheetah-run": "CR",
    "finger-spin": "FS",
    "reacher-easy": "RE",
    "walker-walk": "WW",
}
METHOD_LABEL: dict[str, str] = {
    "sac": "SAC",
    "drq": "DrQ",
    "drq+dbc": "DrQ+DBC",
    "eps-r": "ε-R",
    "drq+pse": "DrQ+PSE",
    "eps-pi": "ε-π",
}
#: ``config.json`` fields left out of a group's key: ``seed`` (a group aggregates over it); where and how
#: fast a run ran (``device``; ``fast``, bf16 convolutions on CUDA, chosen by the device when unset;
#: ``compile``; ``graphs``); the name of the preset (its values are all in the other fields); ``davis``, a
#: machine's folder (the kind of backgrounds is keyed instead, as BACKGROUNDS_KEY); and how often a run is
#: evaluated and saved, which changes the measurement, not the learning (``eval_every``, ``eval_episodes``,
#: ``eval_train_videos``, ``checkpoint_every``); and which CARLA server a carla-highway run talked to
#: (``carla_host``, ``carla_port``, ``carla_timeout``).
NOT_LEARNING = frozenset(
    {
        "seed",
        "device",
        "fast",
        "compile",
        "graphs",
        "preset",
        "davis",
        "eval_every",
        "eval_episodes",
        "eval_train_videos",
        "checkpoint_every",
        "carla_host",
        "carla_port",
        "carla_timeout",
    }
)
#: Fields a ``config.json`` may lack, with the value a run without them trained with (``augment``: None,
#: each method's own choice; no CUDA graphs, no compilation). A missing field not listed here counts
#: as ``unset``.
IMPLIED_VALUES: dict[str, object] = {"augment": None, "compile": False, "graphs": False}
#: Fields that only apply to one task (left out of the key of every other task's runs).
TASK_ONLY_PREFIXES = {"carla_": "carla-highway"}
#: The pseudo-field of the group key holding the kind of backgrounds a run used.
BACKGROUNDS_KEY = "backgrounds"
#: How a field missing from a config.json is shown (and keyed).
UNSET = "unset"

PathLike = Union[str, os.PathLike]


def task_order() -> tuple[str, ...]:
    """The paper's six tasks in its table order (:data:`bisimkit_runs.names.TASK_ORDER`)."""
    return TASK_ORDER


def method_order() -> tuple[str, ...]:
    """The methods in the paper's table order (:data:`bisimkit_runs.names.METHOD_ORDER`)."""
    return METHOD_ORDER


@dataclass
class Run:
    """One run folder: its identity and the numeric columns of ``eval.csv`` by name."""

    folder: Path
    task: str
    method: str
    seed: int
    eval: dict[str, np.ndarray] = field(default_factory=dict)
    splits: tuple[str, ...] = ()  # the distinct values of eval.csv's split column
    settings: dict[str, str] = field(default_factory=dict)  # group-key fields but task/method: JSON text

    @property
    def last_step(self) -> float:
        """The last environment step evaluated (-inf without an evaluation)."""
        steps = self.eval.get("env_step", np.zeros(0))
        steps = steps[np.isfinite(steps)]
        return float(steps.max()) if len(steps) else -math.inf

    def series(self, metric: str = "mean_return") -> tuple[np.ndarray, np.ndarray]:
        """(environment steps, values) of ``metric``: an ``eval.csv`` column, else a ``train.csv`` one;
        sorted by step, rows without a value dropped."""
        table = self.eval if metric in self.eval else read_csv_columns(self.folder / TRAIN_FILE)
        if metric not in table:
            raise InputError(
                f"metric: {metric!r} is not a column of {self.folder / EVAL_FILE} or {self.folder / TRAIN_FILE}"
            )
        steps, values = table["env_step"], table[metric]
        keep = np.isfinite(steps) & np.isfinite(values)
        order = np.argsort(steps[keep], kind="stable")
        return steps[keep][order], values[keep][order]


def evaluation_at(run: Run, step: int | None = None) -> tuple[int, float] | None:
    """(step, mean return) of the run's last evaluation, or of the one at exactly ``step`` (None if absent)."""
    steps, values = run.series("mean_return")
    if not len(steps):
        return None
    if step is None:
        return int(steps[-1]), float(values[-1])
    hits = np.flatnonzero(steps == step)
    return (int(step), float(values[hits[-1]])) if len(hits) else None


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
        settings = run_settings(config, info.get("backgrounds"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"config.json: {folder / CONFIG_FILE} is not a run configuration ({exc})") from None
    if (folder / EVAL_FILE).stat().st_size == 0:  # a run writes the header and a row at its start
        raise InputError(f"eval.csv: {folder / EVAL_FILE} is empty (a truncated or unfinished copy of a run?)")
    table = read_csv_columns(folder / EVAL_FILE)
    if table and "env_step" not in table:
        raise InputError(f"eval.csv: {folder / EVAL_FILE} has no env_step column")
    return Run(folder, task, method, seed, table, _splits(folder / EVAL_FILE) if table else (), settings)


def run_settings(config: dict, backgrounds: object = None) -> dict[str, str]:
    """The group-key fields of a ``config.json`` other than task and method, each value as JSON text,
    with the kind of backgrounds (from the ``backgrounds`` line) under :data:`BACKGROUNDS_KEY`."""
    task = config.get("task")
    config = {**IMPLIED_VALUES, **config}
    settings = {
        name: json.dumps(value, sort_keys=True)
        for name, value in config.items()
        if name not in NOT_LEARNING
        and name not in ("task", "method")
        and all(task == only or not name.startswith(prefix) for prefix, only in TASK_ONLY_PREFIXES.items())
    }
    if isinstance(backgrounds, str):
        kind = (
            "DAVIS"
            if backgrounds.startswith("DAVIS")
            else "procedural"
            if backgrounds.startswith("procedural")
            else "none"
            if backgrounds.startswith("no ")
            else backgrounds
        )
        settings[BACKGROUNDS_KEY] = json.dumps(kind)
    return settings


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
        raise InputError(
            f"runs: no run folder (eval.csv + config.json with rows) under {', '.join(str(p) for p in paths)}"
        )
    tasks, methods = task_order(), method_order()
    return sorted(runs, key=lambda r: (_rank(r.task, tasks), _rank(r.method, methods), r.seed, str(r.folder)))


def _rank(name: str, order: tuple[str, ...]) -> tuple[int, str]:
    return (order.index(name), "") if name in order else (len(order), name)


def ordered(names: Iterable[str], order: tuple[str, ...]) -> list[str]:
    """The distinct ``names`` in the paper's ``order``, unknown ones after it alphabetically."""
    return sorted(set(names), key=lambda n: _rank(n, order))


# ---------------------------------------------------------------- groups of seeds
@dataclass
class Group:
    """The seeds of one configuration: one line of a figure, one cell of a table."""

    task: str
    method: str
    settings: dict[str, str]  # the key's fields but task and method (JSON text)
    runs: list[Run] = field(default_factory=list)  # one per seed, by seed
    duplicates: list[tuple[Run, Run]] = field(default_factory=list)  # (left out, the run of that seed used)
    label: str = ""  # the method's label, plus the fields that tell it apart

    @property
    def seeds(self) -> tuple[int, ...]:
        """The distinct seeds, ascending."""
        return tuple(run.seed for run in self.runs)


def _show_value(text: str | None) -> str:
    if text is None:
        return UNSET
    value = json.loads(text)
    return "auto" if value is None else str(value)


def _value_order(text: str | None) -> tuple:
    value = None if text is None else json.loads(text)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def varying_fields(groups: Iterable[Group]) -> dict[str, list[str]]:
    """Per method, the fields whose values differ between its groups of one task (over every task)."""
    by_cell: dict[tuple[str, str], list[Group]] = {}
    for group in groups:
        by_cell.setdefault((group.method, group.task), []).append(group)
    fields: dict[str, set[str]] = {}
    for (method, _task), cell in by_cell.items():
        names = set().union(*(g.settings for g in cell))
        fields.setdefault(method, set()).update(n for n in names if len({g.settings.get(n) for g in cell}) > 1)
    return {method: sorted(names) for method, names in fields.items()}


def group_runs(runs: Iterable[Run]) -> list[Group]:
    """The runs grouped by configuration (see the module doc), in task, method, then variant order;
    a seed met twice in a group keeps the run evaluated furthest (ties: the first folder)."""
    groups: dict[tuple, Group] = {}
    for run in runs:
        key = (run.task, run.method, tuple(sorted(run.settings.items())))
        group = groups.setdefault(key, Group(run.task, run.method, dict(run.settings)))
        same = next((r for r in group.runs if r.seed == run.seed), None)
        if same is None:
            group.runs.append(run)
        elif run.last_step > same.last_step:
            group.runs[group.runs.index(same)] = run
            group.duplicates = [(d, run) if kept is same else (d, kept) for d, kept in group.duplicates]
            group.duplicates.append((same, run))
        else:
            group.duplicates.append((run, same))
    out = list(groups.values())
    varying = varying_fields(out)
    for group in out:
        group.runs.sort(key=lambda r: r.seed)
        names = varying.get(group.method, [])
        group.label = METHOD_LABEL.get(group.method, group.method)
        if names:
            group.label += " (" + ", ".join(f"{n}={_show_value(group.settings.get(n))}" for n in names) + ")"
    tasks, methods = task_order(), method_order()
    return sorted(
        out,
        key=lambda g: (
            _rank(g.task, tasks),
            _rank(g.method, methods),
            [_value_order(g.settings.get(n)) for n in varying.get(g.method, [])],
        ),
    )


def describe_groups(groups: list[Group]) -> str:
    """Which run folders went into each group: per task, the fields that differ between its groups, then
    per group its label, seeds and folders, and any duplicate left out."""
    lines = []
    for task in ordered((g.task for g in groups), task_order()):
        in_task = [g for g in groups if g.task == task]
        names = sorted(
            n for n in set().union(*(g.settings for g in in_task)) if len({g.settings.get(n) for g in in_task}) > 1
        )
        lines.append(f"{task}" + (f" (fields that differ between its lines: {', '.join(names)})" if names else ""))
        for group in in_task:
            n = len(group.runs)
            lines.append(
                f"  {group.label}: {n} seed{'s' if n != 1 else ''} ({', '.join(map(str, group.seeds))})"
                + (f"; {'; '.join(f'{k}={_show_value(group.settings.get(k))}' for k in names)}" if names else "")
            )
            lines += [f"    seed {run.seed}: {run.folder}" for run in group.runs]
            lines += [
                f"    duplicate of seed {d.seed}, left out: {d.folder} (used: {kept.folder})"
                for d, kept in group.duplicates
            ]
    return "\n".join(lines) + "\n"


def duplicate_note(groups: list[Group]) -> str:
    """One line naming every duplicate seed left out ('' when there is none)."""
    dups = [(g, d) for g in groups for d, _ in g.duplicates]
    if not dups:
        return ""
    return "duplicate seeds left out (same configuration and seed as a run used): " + ", ".join(
        f"{g.label}/{TASK_ABBREV.get(g.task, g.task)} seed {d.seed} ({d.folder})" for g, d in dups
    )
