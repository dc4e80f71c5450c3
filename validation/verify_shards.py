"""``bisimkit verify --executor local|slurm --jobs K``: the verify job's cases in K shards, run as
submitit jobs, merged into the report a single process writes (:func:`validation.verify.verify`).

Shard ``k`` of ``K`` checks cases ``k*T//K`` to ``(k+1)*T//K - 1`` of every family of ``T``
cases (a generated family's cases are drawn in seeded blocks, :data:`validation.verify.CASE_BLOCK`,
so a shard draws only its own); the loss checks, when selected, are one more job. Each job writes
its result atomically under ``OUT/shards/K-jobs/`` (``shard-k-of-K.json``, with the figures' values
beside it in ``shard-k-of-K.npz``; ``losses.json``), and a rerun of the same command reuses every
result written for the same settings (the run's key) and submits the rest.

A job that ends without its result (an error, a kill, a node failure, or more preemptions than
submitit requeues) is one strike of its shard; the shard is submitted again until it has failed
:data:`MAX_ATTEMPTS` times, and is then named in the report's surprises (exit status 1). A
preempted or timed-out job is requeued by submitit (the job's ``checkpoint`` hook) and runs
its shard again from the start.

The merge adds up each (claim, family) row over the shards in case order (:meth:`Row.merge`), so
the rows, verdicts, counterexamples, findings, loss checks, figures and exit status are those of a
single-process run with the same settings; the timings differ (``seconds``, ``phase_seconds``, the
rows' and loss runs' ``seconds``), and ``report.json`` has a ``shards`` entry saying how the shards ran.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bisimkit.cluster import check_executor, check_slurm, import_submitit, slurm_queue
from bisimkit.errors import InputError, check_count
from bisimkit.files import atomic_write, atomic_write_json, atomic_write_text
from bisimkit.progress import Progress

from . import learning
from .families import GENERAL_FAMILIES
from .figure_data import order_values, scatter_columns, subsample_scatter
from .verify import (
    FigureWriter,
    PhaseTimer,
    check_findings,
    checks_order,
    family_cases,
    family_size,
    loss_rows,
    make_figures,
    run_family,
    run_losses,
    save_counterexamples,
    write_report,
)
from .verify_plan import Plan, plan_run
from .verify_rows import Row

#: A shard whose job ended without its result this many times is reported as failed.
MAX_ATTEMPTS = 3
#: The name of the loss checks' job among the shards.
LOSSES = "losses"
#: Fault injection for tests: ``"K"`` makes shard K fail on every attempt, ``"K:N"`` on its first N attempts
#: (several: ``"1,2:1"``; ``losses`` names the loss checks' job).
FAULT_ENV = "BISIMKIT_VERIFY_FAIL_SHARD"
#: The extra that brings submitit.
EXTRA = "cluster"
#: Shards when ``--jobs`` is not given.
DEFAULT_JOBS = 4
#: Default wall-clock limit of one shard's job, in minutes.
TIME_MIN = 240
#: Seconds between two looks at the jobs, per executor (squeue is asked once per look).
POLL_SECONDS = {"local": 0.5, "slurm": 2.0}


@dataclass(frozen=True)
class ShardRun:
    """The settings of a sharded run, as each job gets them (picklable)."""

    out: str
    cases: int | None
    seed: int
    claims: list[str] | None
    quick: bool
    jobs: int
    figures: bool

    def plan(self) -> Plan:
        return plan_run(self.out, self.cases, self.seed, self.claims, self.quick)

    @property
    def folder(self) -> Path:
        """Where the shards' results go (another ``--jobs`` starts over in its own folder)."""
        return Path(self.out) / "shards" / f"{self.jobs}-jobs"

    def result_path(self, shard) -> Path:
        return self.folder / (f"{LOSSES}.json" if shard == LOSSES else f"shard-{shard}-of-{self.jobs}.json")

    def figures_path(self, shard: int) -> Path:
        return self.result_path(shard).with_suffix(".npz")

    def error_path(self, shard) -> Path:
        return self.result_path(shard).with_suffix(".error")


def shard_ranges(plan: Plan, jobs: int, shard: int) -> dict[str, tuple[int, int]]:
    """The cases of shard ``shard`` (1 to ``jobs``): ``family -> (start, stop)``."""
    out = {}
    for fam in plan.families:
        total = family_size(fam, plan.cases, plan.quick, plan)
        out[fam] = ((shard - 1) * total // jobs, shard * total // jobs)
    return out


def describe(run: ShardRun, plan: Plan, shard) -> str:
    """What a shard checks, in a few words."""
    if shard == LOSSES:
        return f"the loss checks {', '.join(plan.loss_ids)}"
    start, stop = (shard - 1) * plan.cases // run.jobs, shard * plan.cases // run.jobs
    return f"cases {start}-{stop - 1} of each generated family" if stop > start else "no generated cases"


def shard_name(run: ShardRun, shard) -> str:
    return LOSSES if shard == LOSSES else f"{shard} of {run.jobs}"


def read_result(run: ShardRun, shard, key: str) -> dict | None:
    """A shard's result if it was written for a run with this ``key`` (and, when the run draws
    figures, with its figures' values beside it), else None."""
    try:
        data = json.loads(run.result_path(shard).read_text())
    except (OSError, ValueError):
        return None
    if run.figures and shard != LOSSES and not run.figures_path(shard).is_file():
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _inject_fault(shard, attempt: int) -> None:
    """Fail as :data:`FAULT_ENV` asks (tests)."""
    spec = os.environ.get(FAULT_ENV, "")
    for item in filter(None, spec.split(",")):
        name, _, times = item.partition(":")
        if name == str(shard) and (not times or attempt <= int(times)):
            raise RuntimeError(f"injected fault ({FAULT_ENV}={spec}, attempt {attempt})")


def run_shard(run: ShardRun, shard, attempt: int = 1) -> str:
    """Check one shard's cases (or train the loss checks) and write its result; returns its path.
    A result already written for the same settings is kept. An error is written beside the result
    (one line) for the process that waits on the jobs, and raised."""
    plan = run.plan()
    path = run.result_path(shard)
    if read_result(run, shard, plan.key) is not None:
        return str(path)
    try:
        _inject_fault(shard, attempt)
        start = time.perf_counter()
        if shard == LOSSES:
            atomic_write_json(path, {"key": plan.key, "losses": run_losses(plan.loss_ids, plan.quick, plan.seed)})
            return str(path)
        ranges = shard_ranges(plan, run.jobs, shard)
        keep: list | None = [] if run.figures else None
        families = {}
        for fam in plan.families:
            cases = family_cases(fam, plan.cases, plan.seed, plan.quick, plan, *ranges[fam])
            families[fam] = [r.to_state() for r in run_family(fam, cases, plan.claims, keep=keep)]
        if keep is not None:
            atomic_write(run.figures_path(shard), lambda fh: np.savez(fh, **_figure_arrays(plan, keep)))
        atomic_write_json(
            path,
            {
                "key": plan.key,
                "shard": shard,
                "jobs": run.jobs,
                "ranges": ranges,
                "families": families,
                "seconds": time.perf_counter() - start,
            },
        )
    except BaseException as exc:
        atomic_write_text(run.error_path(shard), _one_line(exc) + "\n")
        raise
    return str(path)


def _figure_arrays(plan: Plan, keep: list) -> dict[str, np.ndarray]:
    """A shard's scatter columns and order values, per general family (``FAMILY|scatter|pi``, ...)."""
    arrays = {}
    for fam in (f for f in plan.families if f in GENERAL_FAMILIES):
        mine = [(name, fp) for name, fp in keep if name == fam]
        parts = {"scatter": scatter_columns(mine)}
        if checks_order(plan):
            parts["order"] = order_values(mine)
        for part, cols in parts.items():
            for k, v in cols.items():
                arrays[f"{fam}|{part}|{k}"] = v.astype(str) if k == "family" else np.asarray(v, dtype=float)
    return arrays


class _Part:
    """One family's columns in one shard's figure file, loaded when asked for."""

    def __init__(self, npz, prefix: str):
        self.npz, self.prefix = npz, prefix

    def __getitem__(self, key: str) -> np.ndarray:
        value = self.npz[f"{self.prefix}|{key}"]
        return value.astype(object) if key == "family" else value


def merged_figure_values(run: ShardRun, plan: Plan, shards: list[int]) -> tuple[dict | None, dict | None]:
    """The scatter's and the order figure's values of the finished ``shards``, in the order a single
    process keeps them (family by family, case by case); None where no general-family case ran."""
    fams = [f for f in plan.families if f in GENERAL_FAMILIES]
    ranges = [shard_ranges(plan, run.jobs, k) for k in shards]
    if not any(r[f][1] > r[f][0] for r in ranges for f in fams):  # a single process: no fixed points kept
        return None, None
    files = {k: np.load(run.figures_path(k)) for k in shards}
    try:
        scatter = subsample_scatter([_Part(files[k], f"{f}|scatter") for f in fams for k in shards])
        order = None
        if checks_order(plan):
            parts = [_Part(files[k], f"{f}|order") for f in fams for k in shards]
            order = {
                key: np.concatenate([p[key] for p in parts])
                for key in ("family", "index", "contiguous", "state_spread", "action_spread")
            }
            order["family"] = order["family"].astype(object)
    finally:
        for npz in files.values():
            npz.close()
    return scatter, order


class ShardJob:
    """The callable a job runs: ``ShardJob(run)(shard, attempt)``. ``checkpoint`` is submitit's
    hook for a preempted or timed-out job: the same shard is requeued and runs again."""

    def __init__(self, run: ShardRun):
        self.run = run

    def __call__(self, shard, attempt: int = 1) -> str:
        return run_shard(self.run, shard, attempt)

    def checkpoint(self, shard, attempt: int = 1):
        import submitit  # the 'cluster' extra, in the job only

        return submitit.helpers.DelayedSubmission(ShardJob(self.run), shard, attempt)


def make_executor(kind: str, folder: Path, time_min: int, partition: str | None):
    """A submitit executor of ``kind`` for the shards (one CPU each)."""
    submitit = import_submitit(EXTRA)
    if kind == "slurm":
        executor = submitit.SlurmExecutor(folder=folder / "%j", max_num_timeout=MAX_ATTEMPTS)
        params = dict(
            time=time_min, cpus_per_task=1, ntasks_per_node=1, nodes=1, job_name="bisimkit-verify", signal_delay_s=90
        )
        if partition:
            params["partition"] = partition
        executor.update_parameters(**params)
    else:
        executor = submitit.LocalExecutor(folder=folder / "%j", max_num_timeout=MAX_ATTEMPTS)
        executor.update_parameters(timeout_min=time_min, signal_delay_s=30)
    return executor


def _alive(kind: str, job, queued: set[str] | None) -> bool:
    if kind == "slurm" and queued is not None:
        jid = str(job.job_id)
        return jid in queued or jid.split("_")[0] in queued
    return not job.done()


def run_shards(
    run: ShardRun, plan: Plan, shards: list, kind: str, time_min: int, partition: str | None, bar: Progress | None
) -> dict:
    """Submit the unfinished ``shards`` and wait for them, submitting a shard whose job ended
    without its result again until it failed :data:`MAX_ATTEMPTS` times. Returns
    ``shard -> {"status": "done" | "reused" | "failed", "attempts": n, "error": ...}``."""
    status = {s: {"status": "reused", "attempts": 0} for s in shards if read_result(run, s, plan.key)}
    todo = [s for s in shards if s not in status]
    if not todo:
        return status
    executor = make_executor(kind, run.folder / "submitit", time_min, partition)
    live: dict = {}

    def submit(batch: list) -> None:
        for s in batch:
            status[s] = {"status": "running", "attempts": status.get(s, {}).get("attempts", 0) + 1}
            run.error_path(s).unlink(missing_ok=True)
        with executor.batch():
            jobs = [executor.submit(ShardJob(run), s, status[s]["attempts"]) for s in batch]
        live.update(zip(batch, jobs))

    submit(todo)
    while live:
        time.sleep(POLL_SECONDS[kind])
        queued = slurm_queue() if kind == "slurm" else None
        again = []
        for s, job in list(live.items()):
            if read_result(run, s, plan.key) is None and _alive(kind, job, queued):
                continue
            del live[s]
            if read_result(run, s, plan.key) is not None:
                status[s]["status"] = "done"
                if bar:
                    bar.advance(1, {"": f"shard {s}"})
                continue
            error = run.error_path(s)
            status[s]["error"] = (
                error.read_text().strip()
                if error.is_file()
                else f"the job ended without a result (killed, out of memory or a node failure; see {job.paths.stderr})"
            )
            if status[s]["attempts"] < MAX_ATTEMPTS:
                again.append(s)
            else:
                status[s]["status"] = "failed"
                if bar:
                    bar.advance(1, {"": f"shard {s} failed"})
        if again:
            submit(again)
    return status


def merge_rows(run: ShardRun, plan: Plan, shards: list[int]) -> list[Row]:
    """Each (claim, family) row over the finished ``shards``, in the order of a single-process run."""
    merged: dict[str, list[Row]] = {}
    for shard in shards:
        for fam, states in read_result(run, shard, plan.key)["families"].items():
            rows = [Row.from_state(state, plan.claims) for state in states]
            if fam not in merged:
                merged[fam] = rows
            else:
                for row, later in zip(merged[fam], rows):
                    row.merge(later)
    return [row for fam in plan.families for row in merged.get(fam, [])]


def verify_sharded(
    out: str | Path = "verify-out",
    cases: int | None = None,
    seed: int = 0,
    claims: list[str] | None = None,
    quick: bool = False,
    shrink_examples: int | None = None,
    figures: FigureWriter | None = None,
    progress: bool = True,
    executor: str = "local",
    jobs: int = DEFAULT_JOBS,
    time_min: int = TIME_MIN,
    partition: str | None = None,
) -> dict:
    """The verify job in ``jobs`` shards on ``executor`` (see the module doc); returns the report,
    written to ``out`` as :func:`validation.verify.verify` writes it."""
    t0 = time.perf_counter()
    timer = PhaseTimer()
    check_executor(executor)
    jobs = check_count("jobs", jobs)
    time_min = check_count("time_min", time_min)
    import_submitit(EXTRA)
    plan = plan_run(out, cases, seed, claims, quick)
    if executor == "slurm":
        check_slurm()
    run = ShardRun(str(Path(out).resolve()), cases, seed, claims, quick, jobs, bool(figures))
    run.folder.mkdir(parents=True, exist_ok=True)
    case_shards = list(range(1, jobs + 1))
    loss_job = bool(plan.loss_ids) and learning.torch_available()
    shards = case_shards + ([LOSSES] if loss_job else [])
    with timer("cases"):
        bar = Progress(
            sum(read_result(run, s, plan.key) is None for s in shards),
            "verify",
            unit="shards",
            bar=True,
            enabled=progress,
        )
        status = run_shards(run, plan, shards, executor, time_min, partition, bar)
        bar.close()
        finished = [s for s in case_shards if status[s]["status"] != "failed"]
        rows = merge_rows(run, plan, finished)
    with timer("counterexamples"):
        save_counterexamples(rows, plan, shrink_examples)
    with timer("findings"):
        witnesses = check_findings(plan)
    if not loss_job:
        losses = run_losses(plan.loss_ids, plan.quick, plan.seed)
    elif status[LOSSES]["status"] == "failed":
        losses = {"runs": [], "skipped": f"not run: their job failed {MAX_ATTEMPTS} times ({status[LOSSES]['error']})"}
    else:
        losses = read_result(run, LOSSES, plan.key)["losses"]
    rows += loss_rows(losses["runs"])
    with timer("figures"):
        scatter, order = merged_figure_values(run, plan, finished) if figures else (None, None)
        figure_paths = make_figures(figures, plan, [], losses["runs"], scatter, order)
    phases = {k: timer.seconds.get(k, 0.0) for k in ("cases", "counterexamples", "findings", "figures")}
    phases["losses (alongside the cases)"] = float(losses.get("seconds", 0.0))
    phases["waiting for the losses"] = 0.0
    listed = [{"shard": shard_name(run, s), "what": describe(run, plan, s), **status[s]} for s in shards]
    record = {
        "executor": executor,
        "jobs": jobs,
        "folder": str(run.folder.relative_to(run.out)),
        "shards": listed,
        "failed": [entry for entry in listed if entry["status"] == "failed"],
    }
    return write_report(plan, rows, losses, figure_paths, phases, time.perf_counter() - t0, witnesses, record)


def check_sharding(mdps, jobs: int | None, executor: str | None) -> None:
    """The options that go with ``--executor`` (bad combinations: :class:`InputError`)."""
    if executor is None and jobs is not None:
        raise InputError("applies with an executor only (the number of jobs the cases are split into)", param="jobs")
    if executor is not None and mdps:
        raise InputError("applies to the generated families only (user MDPs run in this process)", param="executor")
