"""Jobs through submitit on SLURM or on this machine: the executor names, whether SLURM answers,
its queue, and the message that names the extra to install when submitit is missing.

Used by ``bisimkit verify --executor`` (:mod:`validation.verify_shards`) and by the sweeps
(:mod:`agents.sweep.launch`). submitit is an optional extra: it is imported inside
:func:`import_submitit` only, so ``import bisimkit`` never needs it.
"""

from __future__ import annotations

import shutil
import subprocess

from .errors import InputError

#: The executors a command may name (``--executor``): SLURM, or submitit's LocalExecutor on this machine.
EXECUTORS = ("local", "slurm")


def check_executor(kind: str) -> str:
    """``kind`` if it is one of :data:`EXECUTORS`, else an :class:`InputError` naming them."""
    if kind not in EXECUTORS:
        raise InputError(f"unknown executor {kind!r} (choose from {', '.join(EXECUTORS)})", param="executor")
    return kind


def import_submitit(extra: str):
    """The submitit module, or an :class:`InputError` saying which extra of this package brings it."""
    try:
        import submitit  # the optional extra ``extra``: only the commands that submit jobs need it
    except ModuleNotFoundError:
        raise InputError(
            f"submitit is not installed; it comes with the '{extra}' extra: pip install -e '.[{extra}]'",
            param="executor",
        ) from None
    return submitit


def check_slurm() -> None:
    """:class:`InputError` unless ``sinfo`` answers."""
    if shutil.which("sinfo") is None:
        raise InputError(
            "executor: SLURM is not reachable: sinfo is not on PATH (install SLURM's client, or "
            "start the local cluster: bash agents/sweep/local_slurm.sh start)"
        )
    try:
        out = subprocess.run(["sinfo", "-h"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise InputError("executor: SLURM is not reachable: sinfo did not answer within 30 s") from None
    if out.returncode != 0:
        reason = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        raise InputError(f"executor: SLURM is not reachable: sinfo failed ({reason})")


def slurm_queue() -> set[str] | None:
    """The job ids in SLURM's queue (array elements as ``JOB_TASK``), None if squeue does not answer."""
    if shutil.which("squeue") is None:
        return None
    try:
        out = subprocess.run(["squeue", "-h", "-r", "-o", "%i"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return {line.strip() for line in out.stdout.splitlines() if line.strip()}
