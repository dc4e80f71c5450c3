"""Optional extras: which ``pip install`` brings back a missing module, said in one sentence.

The core needs numpy, scipy, POT and matplotlib (and its compiled kernels, built when it is
installed). The rest is optional:
``torch`` for :mod:`bisimkit.losses` (extra ``torch``); ``gymnasium`` for
:func:`bisimkit.from_gymnasium` and ``gym:ID`` arguments (extra ``gym``); the simulator
stack for the agents (extra ``agents``: dm_control, MuJoCo, distracting-control, OpenCV,
torch); ``wandb`` for ``python -m agents.train --wandb`` (extra ``wandb``). An entry point
that meets a missing optional module reports it with :func:`missing_extra` (one line, exit
status 2) instead of a traceback.
"""

from __future__ import annotations

import sys

#: Top-level module -> the extra of pyproject.toml that installs it.
EXTRAS = {
    "torch": "torch",
    "dm_control": "agents",
    "mujoco": "agents",
    "distracting_control": "agents",
    "cv2": "agents",
    "stormpy": "storm",
    "gymnasium": "gym",
    "wandb": "wandb",
}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line message for a missing optional module (None if ``exc`` is about another module)."""
    top = (exc.name or "").split(".")[0]
    if top not in EXTRAS:
        return None
    extra = EXTRAS[top]
    return f"{top} is not installed; it comes with the '{extra}' extra: pip install -e '.[{extra}]'"


def report_missing(exc: ModuleNotFoundError) -> int:
    """Print :func:`missing_extra`'s line as ``error: ...`` on stderr and return 2; re-raise other modules."""
    message = missing_extra(exc)
    if message is None:
        raise exc
    print(f"error: {message}", file=sys.stderr)
    return 2
