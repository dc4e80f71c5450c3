"""The files of a sweep root: what ``python -m agents.sweep launch`` writes and its jobs and ``gather`` read.

A sweep root holds::

    sweep.json          the grid and every run's name, grid values and configuration
    submissions.json    one record per launch: when, executor, its parameters, job ids and their runs
    runs/NAME/          the run folders (what python -m agents.train writes: :mod:`bisimkit_runs.files`)
    state/NAME.json     each run's state, written atomically
    submitit/           submitit's job files and logs

A run's state is a JSON object whose ``status`` is ``pending`` before anything was submitted, then
``submitted``, ``running``, ``requeued``, ``stopped``, ``retrying``, ``done`` or ``failed``
(``agents.sweep.runner`` says when each is written).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json

SWEEP_FILE, SUBMISSIONS_FILE = "sweep.json", "submissions.json"
RUNS_DIR, STATE_DIR, SUBMITIT_DIR = "runs", "state", "submitit"


def state_path(root: Path, name: str) -> Path:
    """Where run ``name``'s state file is."""
    return Path(root) / STATE_DIR / f"{name}.json"


def read_state(root: Path, name: str) -> dict:
    """A run's state (``{"status": "pending"}`` before anything was submitted)."""
    path = state_path(root, name)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {"status": "pending"}
    except (OSError, ValueError) as exc:
        raise InputError(f"state: {path} is not a state file ({exc})") from None


def write_state(root: Path, name: str, state: dict, **changes) -> dict:
    """``state`` updated with ``changes`` and a timestamp, written atomically; returns it."""
    state = {**state, **changes, "updated": time.time()}
    atomic_write_json(state_path(root, name), state)
    return state


def read_sweep(root: Path) -> dict:
    """``ROOT/sweep.json`` (:class:`InputError` if ``root`` is not a sweep root)."""
    path = Path(root) / SWEEP_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"root: {root} is not a sweep root (no {SWEEP_FILE})") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"root: {path} is not a sweep file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise InputError(f"root: {path} is not a sweep file (no runs)")
    return data
