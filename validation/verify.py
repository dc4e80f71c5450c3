"""``bisimkit verify``: check every claim on every family and the bundled examples.

For each family the job draws ``cases`` MDPs from its seeded generator, runs
every claim that applies, and records per (claim, family): cases, how many held,
the worst margin and the seconds spent. A claim that fails gets its smallest
counterexample (hypothesis shrinking on the family's strategy) written as an
MDP JSON file. Results go to ``report.json``, ``report.md`` and (when a figure
writer is given) PNG figures in the output folder; finished families are saved as
the job goes, so ``resume=True`` continues an interrupted run. The claims and the
readings are explained in ``docs/claims.md``.

:func:`verify` runs these steps, one function each, from the module that does that job
(every name is importable from here too):

1. :func:`plan_run` (:mod:`validation.verify_plan`): the claims, loss checks and families
   selected, and the run's key;
2. :func:`load_state` (:mod:`validation.verify_plan`): what a previous run with the same
   key finished (resume);
3. :func:`start_losses` (:mod:`validation.verify_worker`): each selected loss trains a table
   (rows L1-L6) in a child process (:class:`LossWorker`) while this process goes on;
4. :func:`run_families` (here): every claim on every case, family by family, into the rows of
   :mod:`validation.verify_rows`;
5. :func:`save_counterexamples` (:mod:`validation.verify_shrink`): shrink and write one
   counterexample per failing row;
6. :func:`make_figures` (here): figure data from :mod:`validation.figure_data`, drawn by the
   writer the caller passes (the command line passes :mod:`figures.verify_figures`;
   this module never imports ``figures``);
7. :func:`write_report` (:mod:`validation.verify_report`): ``report.json`` and ``report.md``.

A sharded run (``bisimkit verify --executor local|slurm --jobs K``) is
:func:`validation.verify_shards.verify_sharded`: step 5 split into submitit jobs (and the loss
checks one more), then steps 6-8 here on the merged rows, into the same report.

With ``mdps`` (``bisimkit verify --mdp FILE ...``) the user's MDPs replace the generated
families: one family, ``user``, with the claims that apply to any MDP (:func:`user_claims`),
no loss checks and no figures.

Exit status (like strict expected failures in pytest): 0 when every verdict matches what
:mod:`validation.findings` records (every row holds except the established findings, and
each finding still reproduces on its witness MDP), 1 on any surprise (a new failure, or a
finding that does not reproduce).

The *margin* of a row is the worst signed slack of the claim over its cases
(negative: violated by that much): a distance for inequalities and equalities,
minus the number of disagreeing state pairs for the zero-set claims (C2), and
the number of spare cells under the bound for C7.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from bisimkit.progress import Progress

from . import learning
from .claims import Claim, FixedPoints, Outcome
from .families import FAMILIES, GENERAL_FAMILIES, Case, example_cases
from .figure_data import VerifyFigureData, verify_figure_data
from .gaussian_claims import GAUSSIAN_FAMILIES, gaussian_cases
from .verify_plan import (
    ALL_CLAIMS,
    CLAIMS,
    DEFAULT_CASES,
    GAUSSIAN_CLAIMS,
    QUICK_CASES,
    USER_EXTRA_CLAIMS,
    USER_FAMILY,
    Plan,
    load_state,
    plan_run,
    save_state,
    select_claims,
    select_losses,
    user_case,
    user_claims,
)
from .verify_report import (
    LOSS_READING,
    READINGS,
    check_findings,
    console_summary,
    finding_markdown,
    loss_markdown,
    markdown,
    surprises,
    table,
    verdicts,
    write_report,
)
from .verify_rows import Row, case_dict, case_from_dict
from .verify_shrink import SHRINK_SECONDS, SHRINK_SECONDS_QUICK, save_counterexample, save_counterexamples, shrink
from .verify_worker import (
    LOSS_CLAIMS,
    LOSS_SOURCE,
    TORCH_MISSING,
    LossWorker,
    loss_rows,
    pending_loss_runs,
    run_losses,
    start_losses,
)

__all__ = [  # the job's names, wherever they are defined
    "ALL_CLAIMS",
    "CASE_BLOCK",
    "CLAIMS",
    "DEFAULT_CASES",
    "GAUSSIAN_CLAIMS",
    "LOSS_CLAIMS",
    "LOSS_READING",
    "LOSS_SOURCE",
    "QUICK_CASES",
    "READINGS",
    "SHRINK_SECONDS",
    "SHRINK_SECONDS_QUICK",
    "TORCH_MISSING",
    "USER_EXTRA_CLAIMS",
    "USER_FAMILY",
    "Case",
    "Claim",
    "FigureWriter",
    "FixedPoints",
    "LossWorker",
    "Outcome",
    "PhaseTimer",
    "Plan",
    "Row",
    "case_dict",
    "case_from_dict",
    "check_findings",
    "checks_order",
    "console_summary",
    "family_cases",
    "family_size",
    "finding_markdown",
    "load_state",
    "loss_markdown",
    "loss_rows",
    "make_figures",
    "markdown",
    "pending_loss_runs",
    "plan_run",
    "run_families",
    "run_family",
    "run_losses",
    "save_counterexample",
    "save_counterexamples",
    "save_state",
    "select_claims",
    "select_losses",
    "shrink",
    "start_losses",
    "surprises",
    "table",
    "user_case",
    "user_claims",
    "verdicts",
    "verify",
    "write_report",
]

#: Draws the verify figures into a folder and returns the written paths.
FigureWriter = Callable[[Path, VerifyFigureData], list[Path]]


#: Cases of a generated family come in blocks of this many, each block from its own seeded stream
#: (the first from ``[seed, family]``, block ``b`` from ``[seed, family, b]``), so that a shard of a
#: sharded run (:mod:`validation.verify_shards`) draws its cases without drawing all those before it.
CASE_BLOCK = 1000


def family_size(name: str, cases: int, quick: bool = False, plan: Plan | None = None) -> int:
    """How many cases family ``name`` has in a run of ``cases`` cases per family."""
    if name == USER_FAMILY:
        return len(plan.user_cases)
    if name == "examples":
        return len(example_cases())
    if name in GAUSSIAN_FAMILIES:
        fam = GAUSSIAN_FAMILIES[name]
        return min(cases, fam.max_cases_quick if quick else fam.max_cases)
    return cases


def _generated_cases(name: str, seed: int, start: int, stop: int) -> list:
    """Cases ``start`` to ``stop - 1`` of a generated family (drawing at most ``CASE_BLOCK - 1`` before them)."""
    index = list(FAMILIES).index(name)
    out = []
    for block in range(start // CASE_BLOCK, -(-stop // CASE_BLOCK)):
        rng = np.random.default_rng([seed, index] if block == 0 else [seed, index, block])
        for k in range(block * CASE_BLOCK, min((block + 1) * CASE_BLOCK, stop)):
            case = FAMILIES[name].make(rng)
            if k >= start:
                out.append(case)
    return out


def family_cases(
    name: str,
    cases: int,
    seed: int,
    quick: bool = False,
    plan: Plan | None = None,
    start: int = 0,
    stop: int | None = None,
) -> list:
    """The cases of one family, or those numbered ``start`` to ``stop - 1`` (a shard's)."""
    stop = family_size(name, cases, quick, plan) if stop is None else stop
    if name == USER_FAMILY:
        return [case for _, case in plan.user_cases][start:stop]
    if name == "examples":
        return example_cases()[start:stop]
    if name in GAUSSIAN_FAMILIES:
        return gaussian_cases(name, cases, seed, quick)[start:stop]
    return _generated_cases(name, seed, start, stop)


def run_family(
    name: str,
    cases: list,
    claims: list[Claim],
    bar: Progress | None = None,
    keep: list | None = None,
    tick: Callable[[], None] | None = None,
    sources: dict[int, str] | None = None,
) -> list[Row]:
    """Run every applicable claim on every case of one family (finite :class:`Case` objects
    go through a :class:`FixedPoints` cache; continuous cases are checked directly);
    ``tick()`` is called after each case (it forwards the loss worker's progress);
    ``sources``: case index -> the file or id it came from (user MDPs), put before the details.
    Rows with no case (a claim that applied to none of the family's cases) are left out."""
    rows = [Row(c, name) for c in claims if name in c.families]
    sources = sources or {}
    for k, case in enumerate(cases):
        finite = isinstance(case, Case)
        fp = FixedPoints(case) if finite else case
        for row in rows:
            t = time.perf_counter()
            outcome = row.claim.check(fp)
            if outcome is None:  # the claim does not apply to this case (user MDPs: C5's two rows)
                continue
            if k in sources:  # say which of the user's MDPs the detail is about
                outcome = Outcome(outcome.held, outcome.margin, f"{sources[k]}: {outcome.detail}")
            row.record(outcome.held, outcome.margin, outcome.detail, time.perf_counter() - t)
            if not outcome.held and finite:
                size = case.mdp.n_states * case.mdp.n_actions
                if row.violation is None or size < row.violation["size"]:
                    row.violation = {
                        "size": size,
                        "case": case_dict(case),
                        "detail": outcome.detail,
                        "margin": float(outcome.margin),
                    }
        if keep is not None and name in GENERAL_FAMILIES:
            keep.append((name, fp))
        if bar:
            bar.advance(1, {"": name})
        if tick:
            tick()
    return [r for r in rows if r.cases or name != USER_FAMILY]


def run_families(
    plan: Plan, state: dict, todo: dict[str, list], bar: Progress | None, tick: Callable[[], None] | None = None
) -> tuple[list[Row], list]:
    """Every family's rows (reused from ``state`` when it finished them), and the fixed
    points of the general families for the figures (the continuous families first)."""
    by_family: dict[str, list[Row]] = {}
    keep: list = []
    for fam in sorted(plan.families, key=lambda f: f not in GAUSSIAN_FAMILIES):
        if fam in state["families"]:
            by_family[fam] = [Row.from_state(r, plan.claims) for r in state["families"][fam]]
            continue
        sources = {k: source for k, (source, _) in enumerate(plan.user_cases)} if fam == USER_FAMILY else None
        by_family[fam] = run_family(fam, todo[fam], plan.claims, bar, keep, tick, sources)
        state["families"][fam] = [r.to_state() for r in by_family[fam]]
        save_state(plan, state)
    return [row for fam in plan.families for row in by_family[fam]], keep


def make_figures(
    writer: FigureWriter | None,
    plan: Plan,
    fixed_points: list,
    loss_runs: list,
    scatter: dict | None = None,
    order_data: dict | None = None,
) -> list[str]:
    """Compute the figures' data and have ``writer`` draw them; paths relative to the output folder.
    ``scatter``, ``order_data``: those figures' values from a sharded run's shards."""
    if not writer:
        return []
    data = verify_figure_data(
        fixed_points,
        plan.quick,
        loss_runs,
        learning.RELATIVE_TOLERANCE,
        order=checks_order(plan),
        scatter=scatter,
        order_data=order_data,
    )
    return [str(Path(p).relative_to(plan.out)) for p in writer(plan.out, data)]


def checks_order(plan: Plan) -> bool:
    """Whether the run checks C11 (then the figures include the order dependence)."""
    return any(c.id == "C11" for c in plan.claims)


class PhaseTimer:
    """Seconds spent per named phase (``with timer("losses"): ...``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def verify(
    out: str | Path = "verify-out",
    cases: int | None = None,
    seed: int = 0,
    claims: list[str] | None = None,
    quick: bool = False,
    resume: bool = False,
    shrink_examples: int | None = None,
    figures: FigureWriter | None = None,
    progress: bool = True,
    mdps: list | None = None,
) -> dict:
    """Run the verification job; returns the report (also written to ``out``).

    ``figures``: a :data:`FigureWriter` that draws the figures (e.g.
    ``figures.verify_figures.draw_verify_figures``); None or False: no figures.
    ``mdps``: check the user's MDPs instead of the generated families (family ``user``): a list of
    FiniteMDPs, :class:`Case` objects or (source, MDP or Case) pairs (:func:`user_case`); every
    claim that applies to them runs, the loss checks and figures do not (they are about the
    generated families), and the exit status has the same meaning (docs/cli.md).
    """
    t0 = time.perf_counter()
    timer = PhaseTimer()
    if mdps:
        pairs = [
            item if isinstance(item, tuple) else (getattr(item, "label", f"mdp {k}"), item)
            for k, item in enumerate(mdps)
        ]
        mdps = [user_case(source, mdp) for source, mdp in pairs]
        figures = None
    with timer("cases"):
        plan = plan_run(out, cases, seed, claims, quick, mdps)
        state = load_state(plan, resume)
        todo = {f: family_cases(f, plan.cases, seed, quick, plan) for f in plan.families if f not in state["families"]}
        bar = Progress(
            sum(map(len, todo.values())) + pending_loss_runs(plan, state),
            "verify",
            unit="cases",
            bar=True,
            enabled=progress,
        )
        losses = start_losses(plan, state)  # trains in a child process while the claims are checked here
        rows, fixed_points = run_families(plan, state, todo, bar, lambda: losses.poll(bar))
    with timer("counterexamples"):
        save_counterexamples(rows, plan, shrink_examples)
    with timer("findings"):
        witnesses = check_findings(plan)
    with timer("waiting for the losses"):
        if "losses" not in state:
            state["losses"] = losses.wait(bar)
            save_state(plan, state)
    rows += loss_rows(state["losses"]["runs"])
    bar.close()
    with timer("figures"):
        figure_paths = make_figures(figures, plan, fixed_points, state["losses"]["runs"])
    phases = {k: timer.seconds.get(k, 0.0) for k in ("cases", "counterexamples", "findings", "figures")}
    phases["losses (alongside the cases)"] = float(state["losses"].get("seconds", 0.0))
    phases["waiting for the losses"] = timer.seconds.get("waiting for the losses", 0.0)
    return write_report(plan, rows, state["losses"], figure_paths, phases, time.perf_counter() - t0, witnesses)
