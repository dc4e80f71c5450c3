"""The side process of ``bisimkit verify`` (:mod:`validation.verify`): the loss checks trained in a
child process while the claims are checked."""

from __future__ import annotations

import multiprocessing
import queue as queues

from bisimkit.progress import Progress

from . import learning
from .claims import Claim
from .verify_plan import Plan
from .verify_rows import Row

#: Source column of the loss rows.
LOSS_SOURCE = "paper Alg. 1; docs/losses.md"
#: The loss checks as claims (checked by training, not by a check function).
LOSS_CLAIMS: dict[str, Claim] = {c.id: Claim(c.id, c.statement, LOSS_SOURCE, None, ()) for c in learning.LOSS_CHECKS}
#: The loss section's note when torch is absent.
TORCH_MISSING = "skipped: torch is not installed (the learned-loss checks need it: pip install -e '.[torch]')"


def run_losses(ids: list[str], quick: bool, seed: int, bar: Progress | None = None) -> dict:
    """Train a table with each selected loss on the loss cases (the ``losses`` part of the report),
    in this process."""
    if not ids:
        return {"runs": []}
    if not learning.torch_available():
        return {"runs": [], "skipped": TORCH_MISSING}

    def progress(check, case):
        if bar:
            bar.advance(1, {"": f"loss {check.id} {case.family}"})

    return learning.loss_report(quick, seed, ids, progress)


class LossWorker:
    """The loss checks in a child process (:func:`validation.learning.loss_worker`), trained
    while this process checks the claims: torch trains on one core while the solvers use the
    other. :meth:`poll` forwards its progress to the bar; :meth:`wait` returns its report.
    :meth:`finished` stands for checks whose report is known without training (no process)."""

    def __init__(self, ids: list[str], quick: bool, seed: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited threads or locks
        self.queue = ctx.Queue()
        self.process = ctx.Process(target=learning.loss_worker, args=(ids, quick, seed, self.queue), daemon=True)
        self.process.start()
        self.report: dict | None = None

    @classmethod
    def finished(cls, report: dict) -> "LossWorker":
        """A worker with its report already in hand: nothing to train, or a resumed run's."""
        worker = cls.__new__(cls)
        worker.queue = worker.process = None
        worker.report = report
        return worker

    def poll(self, bar: Progress | None, timeout: float | None = 0.0) -> None:
        """Handle the worker's messages (waiting up to ``timeout`` seconds for the first one)."""
        while self.report is None:
            try:
                kind, payload = self.queue.get(timeout=timeout) if timeout != 0.0 else self.queue.get_nowait()
            except queues.Empty:
                if not self.process.is_alive() and self.queue.empty():
                    raise RuntimeError(f"the loss-check worker died (exit code {self.process.exitcode})") from None
                return
            timeout = 0.0
            if kind == "progress" and bar:
                bar.advance(1, {"": payload})
            elif kind == "done":
                self.report = payload
            elif kind == "error":
                raise RuntimeError(f"the loss checks failed in their worker process:\n{payload}")

    def wait(self, bar: Progress | None) -> dict:
        """Block until the worker's report arrives; returns it."""
        while self.report is None:
            self.poll(bar, timeout=1.0)
        if self.process is not None:
            self.process.join(timeout=10)
        return self.report


def start_losses(plan: Plan, state: dict) -> LossWorker:
    """Start the loss checks in a :class:`LossWorker`; a :meth:`LossWorker.finished` one when a
    resumed state has their report already or there is nothing to train (none selected, torch
    missing)."""
    if "losses" in state:
        return LossWorker.finished(state["losses"])
    if not plan.loss_ids or not learning.torch_available():
        return LossWorker.finished(run_losses(plan.loss_ids, plan.quick, plan.seed))
    return LossWorker(plan.loss_ids, plan.quick, plan.seed)


def pending_loss_runs(plan: Plan, state: dict) -> int:
    """How many loss trainings this run still has to do."""
    if "losses" in state or not plan.loss_ids or not learning.torch_available():
        return 0
    return len(learning.loss_plan(plan.quick, plan.seed, plan.loss_ids))


def loss_rows(runs: list[dict]) -> list[Row]:
    """One row per (loss check, family) from the training curves."""
    rows: dict[tuple[str, str], Row] = {}
    for run in runs:
        row = rows.setdefault((run["id"], run["family"]), Row(LOSS_CLAIMS[run["id"]], run["family"]))
        detail = (
            f"max error {run['final_error']:.2e} <= {run['tolerance']:.2e} "
            f"(1% of max d* {run['scale']:.3g}) after {run['steps'][-1]} steps; "
            f"max d(s,s): exact {run['exact_diagonal']:.3g}, learned {run['learned_diagonal']:.3g}"
        )
        row.record(run["held"], run["tolerance"] - run["final_error"], detail, run["seconds"])
    return list(rows.values())
