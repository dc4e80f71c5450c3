"""What runs inside a submitted job: the runs of a sweep, their state files, preemption and failures.

A sweep root holds::

    sweep.json          the grid (spec.Spec.grid_record) and every run's name, grid values and configuration
    submissions.json    one record per launch: when, executor, its parameters, job ids and their runs
    runs/NAME/          the run folders (what python -m agents.train writes)
    state/NAME.json     each run's state, written atomically (bisimkit_runs.sweeps.write_state)
    submitit/           submitit's job files and logs

A run's state: ``submitted`` (a job was queued for it), ``running``, ``requeued``
(preempted or timed out; submitit requeued its job), ``stopped`` (cancelled), ``retrying``
(an attempt raised; the job tries again), ``done`` or ``failed``. A job is a
:class:`SweepJob` (a callable with submitit's ``checkpoint`` method, the
``helpers.Checkpointable`` protocol) given the names of its runs; it runs them one
after the other, each from its last checkpoint (``train(..., resume=True)``), and
skips the finished ones, so a requeued job continues where it stopped. An attempt that
raises, or that ended without a record (killed with SIGKILL, node failure), counts as
a failure; the third makes the run ``failed`` with its last error.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from bisimkit_runs.sweeps import RUNS_DIR, read_state, read_sweep, write_state

from ..config import TrainConfig

#: A run whose attempts failed this many times is marked failed and not retried.
MAX_FAILURES = 3
#: States in which a run may be active in some job.
ACTIVE = ("submitted", "running", "requeued", "retrying")


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _job_id() -> str | None:
    for name in ("SLURM_ARRAY_JOB_ID", "SLURM_JOB_ID", "SUBMITIT_LOCAL_JOB_ID"):
        if os.environ.get(name):
            if name == "SLURM_ARRAY_JOB_ID":
                return f"{os.environ[name]}_{os.environ.get('SLURM_ARRAY_TASK_ID', '')}"
            return os.environ[name]
    return None


class SweepJob:
    """The callable a job runs: ``SweepJob(root)(names)`` trains those runs of the sweep, one after the other.

    ``checkpoint`` is submitit's hook (``helpers.Checkpointable``): on preemption or time-out submitit calls
    it, pickles the submission it returns and requeues the job, which then resumes the current run from its
    last checkpoint and goes on with the rest."""

    def __init__(self, root: str | os.PathLike):
        self.root = str(Path(root).resolve())
        self.current: str | None = None

    def __call__(self, names: list[str]) -> dict:
        sweep = {run["name"]: run for run in read_sweep(Path(self.root))["runs"]}
        _threads()
        outcome = {}
        for name in names:
            self.current = name
            outcome[name] = run_one(Path(self.root), name, sweep[name]["config"])
        self.current = None
        failed = [n for n, s in outcome.items() if s == "failed"]
        if failed:
            raise RuntimeError(
                f"{len(failed)} run(s) failed {MAX_FAILURES} times: {', '.join(failed)} "
                f"(see python -m agents.sweep status {self.root})"
            )
        return outcome

    def checkpoint(self, names: list[str]):
        """Preempted or timed out: the current run is ``requeued`` and the same job is resubmitted (it resumes
        from the run's last checkpoint; finished runs are skipped)."""
        import submitit  # the agents' extra (submitit), in the job only

        if self.current is not None:
            state = read_state(Path(self.root), self.current)
            if state.get("status") == "running":
                write_state(
                    Path(self.root), self.current, state, status="requeued", preemptions=state.get("preemptions", 0) + 1
                )
        return submitit.helpers.DelayedSubmission(SweepJob(self.root), names)


def _threads() -> None:
    """One torch thread per CPU the scheduler gave the job, unless OMP_NUM_THREADS says otherwise."""
    cpus = os.environ.get("SLURM_CPUS_PER_TASK")
    if cpus and not os.environ.get("OMP_NUM_THREADS"):
        import torch  # torch, in the job only

        torch.set_num_threads(max(1, int(cpus)))


def count_vanished(root: Path, name: str, state: dict) -> dict:
    """Count a ``running`` attempt whose process is gone (SIGKILL, out of memory, node failure) as a failure;
    the state is then ``failed`` (the third failure) or ``submitted`` (to be run again)."""
    failures = state.get("failures", 0) + 1
    return write_state(
        root,
        name,
        state,
        failures=failures,
        status="failed" if failures >= MAX_FAILURES else "submitted",
        last_error=f"attempt {state.get('attempts', 0)} ended without a record (killed: out of "
        f"memory, node failure or a cancel without requeue)",
    )


def run_one(root: Path, name: str, config: dict, trainer=None) -> str:
    """Train (or resume) run ``name`` to the end; returns its final status (``done`` or ``failed``).
    ``trainer``: the training function (default :func:`agents.train.train`; tests replace it)."""
    if trainer is None:
        from ..train import train as trainer  # torch and the simulator stack, in the job only
    state = read_state(root, name)
    if state.get("status") in ("done", "failed"):
        return state["status"]
    if state.get("status") == "running":  # the previous attempt ended without a record
        state = count_vanished(root, name, state)
        if state["status"] == "failed":
            return "failed"
    failures = state.get("failures", 0)
    cfg = TrainConfig.from_dict(config)
    out = root / RUNS_DIR / name
    while True:
        state = write_state(
            root,
            name,
            state,
            status="running",
            attempts=state.get("attempts", 0) + 1,
            job_id=_job_id(),
            host=socket.gethostname(),
            pid=os.getpid(),
            parent_pid=os.getppid(),
            started=time.time(),
        )
        try:
            summary = trainer(cfg, out, resume=True, progress=False, tensorboard=False)
        except KeyboardInterrupt:  # a cancelled local job: not a failure
            write_state(root, name, state, status="stopped")
            raise
        except Exception as exc:  # noqa: BLE001  (any error of an attempt counts)
            if type(exc).__name__ == "UncompletedJobError":  # submitit: timed out too often, not requeued
                write_state(root, name, state, status="stopped", last_error=one_line(exc))
                raise
            failures += 1
            state = write_state(
                root,
                name,
                state,
                failures=failures,
                last_error=one_line(exc),
                status="failed" if failures >= MAX_FAILURES else "retrying",
            )
            if failures >= MAX_FAILURES:
                return "failed"
            continue
        write_state(
            root,
            name,
            state,
            status="done",
            env_steps=summary.get("env_steps"),
            final_eval=summary.get("final_eval"),
            seconds=summary.get("seconds"),
        )
        return "done"
