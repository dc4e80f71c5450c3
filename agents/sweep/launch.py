"""Launch a sweep through submitit (``slurm`` or ``local``) and report its status.

``launch``: build and validate every run's configuration (:mod:`agents.sweep.spec`), check the
sweep root belongs to this grid, pick the runs that are not finished (skipping done and failed
runs and runs whose job is still alive), and submit them through one submitit executor:

* ``slurm``: one array job, one run per array element (``--array-parallelism`` at a time), with
  ``--partition``, ``--gpus-per-run``, ``--cpus-per-run``, ``--mem-gb``, ``--time-min`` and any
  ``--sbatch KEY=VALUE`` (submitit's ``slurm_additional_parameters``). submitit asks SLURM for
  USR2 ahead of the time limit and requeues a preempted or timed-out job (its ``checkpoint``
  hook; see :class:`agents.sweep.runner.SweepJob`).
* ``local``: submitit's LocalExecutor on this machine, the same job callable: the runs are dealt
  into ``--parallel`` jobs that each train their runs one after the other.

``status``: one line per run and a summary count.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import time
from pathlib import Path

from bisimkit.cluster import check_executor, check_slurm, import_submitit, slurm_queue
from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json
from bisimkit_runs.files import EVAL_FILE, TRAIN_FILE
from bisimkit_runs.sweeps import (
    RUNS_DIR,
    STATE_DIR,
    SUBMISSIONS_FILE,
    SUBMITIT_DIR,
    SWEEP_FILE,
    read_state,
    read_sweep,
    write_state,
)

from .runner import ACTIVE, MAX_FAILURES, SweepJob, count_vanished
from .spec import RunSpec, Spec

#: Time-outs after which submitit stops requeuing a job (a long run resumes across many time limits; errors are
#: counted separately, MAX_FAILURES). A job stopped here leaves its run pending: launching again resumes it.
MAX_TIMEOUTS = 20
DEFAULTS = {"time_min": 2880, "cpus_per_run": 1, "gpus_per_run": 0, "parallel": 2}


# ------------------------------------------------------------------ sweep root
def check_root(root: Path, spec: Spec) -> dict | None:
    """The root's ``sweep.json`` if it holds this grid, None for a new or empty folder; a root holding
    another grid (or other files) is an :class:`InputError`."""
    if (root / SWEEP_FILE).is_file():
        sweep = read_sweep(root)
        if sweep.get("grid", {}).get("fingerprint") != spec.fingerprint():
            old = sweep.get("grid", {})
            differ = [k for k in ("config", "grid", "conditions") if old.get(k) != spec.grid_record()[k]]
            raise InputError(
                f"root: {root} belongs to a different grid (sweep {old.get('name')!r}; "
                f"{', '.join(differ) or 'grid'} differ); choose another --root"
            )
        return sweep
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InputError(f"root: {root} is not empty and holds no {SWEEP_FILE}: not a sweep root")
    return None


def _alive(state: dict, queued: set[str] | None) -> bool:
    """Whether the job behind an active state still exists: its process on this host, else the SLURM queue."""
    if state.get("status") not in ACTIVE:
        return False
    executor = state.get("executor")
    if state.get("status") == "running" and state.get("host") == socket.gethostname() and state.get("pid"):
        return pid_alive(state["pid"])
    if executor == "local":
        pid = state.get("controller_pid") or state.get("parent_pid")  # submitit's controller runs the task
        if state.get("host") not in (None, socket.gethostname()) or not pid:
            return True  # another machine's process: assume alive
        return pid_alive(pid)
    if executor == "slurm":
        if queued is None:
            return True  # SLURM not reachable from here: assume the job is alive
        job = str(state.get("job_id") or "")
        return job in queued or job.split("_")[0] in queued
    return False


def pid_alive(pid) -> bool:
    """Whether process ``pid`` of this host exists and is not a zombie (killed, not yet reaped)."""
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, PermissionError, ValueError, OverflowError):
        return False
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def current_status(state: dict, queued: set[str] | None) -> str:
    """pending, running, done or failed: what a state means now (an active state whose job is gone is pending)."""
    status = state.get("status", "pending")
    if status in ("done", "failed"):
        return status
    if status == "running" and _alive(state, queued):
        return "running"
    if status in ("submitted", "requeued", "retrying") and _alive(state, queued):
        return "queued"
    return "pending"


# ------------------------------------------------------------------ launch
def plan(root: Path, runs: list[RunSpec], retry_failed: bool = False, queued: set[str] | None = None) -> dict:
    """Which runs to submit: ``{"submit": [...], "done": [...], "failed": [...], "active": [...]}``."""
    out = {"submit": [], "done": [], "failed": [], "active": []}
    for run in runs:
        state = read_state(root, run.name)
        status = state.get("status")
        if status == "done":
            out["done"].append(run.name)
        elif status == "failed" and not retry_failed:
            out["failed"].append(run.name)
        elif _alive(state, queued):
            out["active"].append(run.name)
        else:
            out["submit"].append(run.name)
    return out


def make_executor(kind: str, root: Path, options: dict):
    """A submitit executor of ``kind`` with ``options`` (the merged spec section and flags)."""
    import submitit  # the agents' extra (submitit): a dry run needs none

    folder = root / SUBMITIT_DIR / "%j"
    time_min = int(options.get("time_min", DEFAULTS["time_min"]))
    if kind == "slurm":
        executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=MAX_TIMEOUTS)
        params = dict(
            time=time_min,
            cpus_per_task=int(options.get("cpus_per_run", DEFAULTS["cpus_per_run"])),
            ntasks_per_node=1,
            nodes=1,
            job_name=f"sweep-{root.name}",
            signal_delay_s=90,
        )
        if options.get("partition"):
            params["partition"] = options["partition"]
        if int(options.get("gpus_per_run", 0)):
            params["gpus_per_node"] = int(options["gpus_per_run"])
        if options.get("mem_gb"):
            params["mem"] = f"{int(options['mem_gb'])}GB"
        if options.get("array_parallelism"):
            params["array_parallelism"] = int(options["array_parallelism"])
        if options.get("sbatch"):
            params["additional_parameters"] = dict(options["sbatch"])
        executor.update_parameters(**params)
    else:
        executor = submitit.LocalExecutor(folder=folder)
        params = dict(timeout_min=time_min, signal_delay_s=30)
        if int(options.get("gpus_per_run", 0)):
            params["gpus_per_node"] = int(options["gpus_per_run"])
        executor.update_parameters(**params)
    return executor


def job_batches(kind: str, names: list[str], options: dict) -> list[list[str]]:
    """The runs of each job: one per job on SLURM, dealt into ``parallel`` jobs locally."""
    if kind == "slurm":
        return [[name] for name in names]
    parallel = max(1, int(options.get("parallel", DEFAULTS["parallel"])))
    batches = [names[i::parallel] for i in range(parallel)]
    return [b for b in batches if b]


def launch(
    spec: Spec,
    root: Path,
    executor: str = "local",
    options: dict | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
    log=print,
) -> dict:
    """Validate, plan and submit (see the module doc); returns the plan and, unless ``dry_run``, the jobs."""
    options = dict(options or {})
    check_executor(executor)
    start = time.perf_counter()
    runs = spec.runs()
    sweep = check_root(root, spec)
    validated = time.perf_counter() - start
    queued = slurm_queue() if sweep is not None else None
    todo = (
        plan(root, runs, retry_failed, queued)
        if sweep is not None
        else {"submit": [r.name for r in runs], "done": [], "failed": [], "active": []}
    )
    summary = {"runs": len(runs), "validate_s": round(validated, 3), **{k: len(v) for k, v in todo.items()}}
    counts = (
        f"{len(runs)} runs: {len(todo['submit'])} to submit, {len(todo['done'])} done, "
        f"{len(todo['active'])} queued or running, {len(todo['failed'])} failed"
    )
    if dry_run:
        log(f"dry run: {counts}; every configuration validated in {validated:.2f} s; nothing submitted")
        return {**summary, "plan": todo}
    if executor == "slurm":
        check_slurm()
    import_submitit("agents")
    if sweep is None:
        root.mkdir(parents=True, exist_ok=True)
        atomic_write_json(
            root / SWEEP_FILE,
            {
                "grid": spec.grid_record(),
                "runs": [{"name": r.name, "values": r.values, "config": r.config} for r in runs],
            },
        )
    (root / RUNS_DIR).mkdir(exist_ok=True)
    (root / STATE_DIR).mkdir(exist_ok=True)
    if not todo["submit"]:
        log(f"nothing to submit: {counts}")
        return {**summary, "plan": todo, "jobs": []}
    for name in list(todo["submit"]):
        state = read_state(root, name)
        if state.get("status") == "failed":  # --retry-failed: a fresh count
            write_state(root, name, state, status="pending", failures=0)
        elif state.get("status") == "running":  # its process is gone (plan): a failure
            if count_vanished(root, name, state)["status"] == "failed":
                todo["submit"].remove(name)
                todo["failed"].append(name)
    if not todo["submit"]:
        log(f"nothing to submit: {counts}")
        return {**summary, "plan": todo, "jobs": []}
    ex = make_executor(executor, root, options)
    callable_ = SweepJob(root)
    batches = job_batches(executor, todo["submit"], options)
    for name in todo["submit"]:  # before submitting: a fast job's own "running" must come after this
        write_state(
            root,
            name,
            read_state(root, name),
            status="submitted",
            executor=executor,
            job_id=None,
            host=socket.gethostname(),
        )
    with ex.batch():
        pending = [ex.submit(callable_, batch) for batch in batches]
    jobs = []
    for job, batch in zip(pending, batches):
        jobs.append({"job_id": str(job.job_id), "runs": batch})
        extra = {}
        if executor == "local":
            extra["controller_pid"] = getattr(getattr(job, "_process", None), "pid", None)
        for name in batch:
            state = read_state(root, name)
            if state.get("status") == "submitted":  # not yet started by its job
                write_state(root, name, state, job_id=str(job.job_id), **extra)
    record_path = root / SUBMISSIONS_FILE
    records = json.loads(record_path.read_text()) if record_path.is_file() else []
    records.append(
        {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "executor": executor, "options": options, "jobs": jobs}
    )
    atomic_write_json(record_path, records)
    log(
        f"submitted {len(todo['submit'])} run(s) in {len(jobs)} {executor} job(s) "
        f"({', '.join(j['job_id'] for j in jobs[:5])}{', ...' if len(jobs) > 5 else ''}); {counts}"
    )
    return {**summary, "plan": todo, "jobs": jobs, "submitit_jobs": pending}


def wait(root: Path, names: list[str], timeout: float | None = None, poll: float = 2.0) -> dict[str, str]:
    """Wait until none of ``names`` is queued or running (or ``timeout`` seconds); their statuses."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        queued = slurm_queue()
        statuses = {n: current_status(read_state(root, n), queued) for n in names}
        if not any(s in ("running", "queued") for s in statuses.values()):
            return statuses
        if deadline is not None and time.monotonic() > deadline:
            return statuses
        time.sleep(poll)


# ------------------------------------------------------------------ status
def _last_row(path: Path) -> dict | None:
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[-1] if rows else None


def status_lines(root: Path) -> tuple[list[str], dict[str, int]]:
    """One line per run (status, environment steps done of the total, last evaluation, job, error) and the
    count of each status."""
    sweep = read_sweep(root)
    queued = slurm_queue()
    lines, counts = [], {}
    width = max((len(r["name"]) for r in sweep["runs"]), default=10)
    for run in sweep["runs"]:
        name, total = run["name"], run["config"].get("env_steps")
        state = read_state(root, name)
        status = current_status(state, queued)
        folder = root / RUNS_DIR / name
        last = _last_row(folder / TRAIN_FILE)
        steps = int(float(last["env_step"])) if last and last.get("env_step") else 0
        if state.get("status") == "done" and state.get("env_steps") is not None:
            steps = int(state["env_steps"])
        evaluation = _last_row(folder / EVAL_FILE)
        eval_text = (
            f"eval {float(evaluation['mean_return']):.1f} @ {int(float(evaluation['env_step'])):,}"
            if evaluation and evaluation.get("mean_return")
            else "eval -"
        )
        notes = []
        if state.get("job_id"):
            notes.append(f"job {state['job_id']}")
        if state.get("preemptions"):
            notes.append(f"requeued {state['preemptions']}x")
        if state.get("failures"):
            notes.append(f"failures {state['failures']}/{MAX_FAILURES}")
        if state.get("last_error") and status != "done":
            notes.append(f"last error: {state['last_error']}")
        if status == "queued":  # shown as pending, with its job
            status, notes = "pending", ["queued"] + notes
        counts[status] = counts.get(status, 0) + 1
        lines.append(
            f"{name:<{width}}  {status:<8} {steps:>10,}/{total:,} env steps  {eval_text}"
            + (f"  ({'; '.join(notes)})" if notes else "")
        )
    order = ("done", "running", "pending", "failed")
    summary = ", ".join(f"{counts[k]} {k}" for k in order if counts.get(k))
    lines.append(f"{len(sweep['runs'])} runs: {summary}")
    return lines, counts
