"""``bisimkit verify``: check every claim on every family and the bundled examples.

For each family the job draws ``cases`` MDPs from its seeded generator, runs
every claim that applies, and records per (claim, family): cases, how many held,
the worst margin and the seconds spent. A claim that fails gets its smallest
counterexample (hypothesis shrinking on the family's strategy) written as an
MDP JSON file. Results go to ``report.json``, ``report.md`` and (when a figure
writer is given) PNG figures in the output folder; finished families are saved as
the job goes, so ``resume=True`` continues an interrupted run. The claims and the
readings are explained in ``docs/claims.md``.

:func:`verify` runs these steps, one function each:

1. :func:`plan_run`: the claims, loss checks and families selected, and the run's key;
2. :func:`load_state`: what a previous run with the same key finished (resume);
3. :func:`start_warm_up`: numba compiles the kernels in a side process meanwhile;
4. :func:`start_losses`: each selected loss trains a table (rows L1-L6) in a child process
   (:class:`LossWorker`) while this process goes on;
5. :func:`run_families`: every claim on every case, family by family;
6. :func:`save_counterexamples`: shrink and write one counterexample per failing row;
7. :func:`make_figures`: figure data from :mod:`validation.figure_data`, drawn by the
   writer the caller passes (the command line passes :mod:`figures.verify_figures`;
   this module never imports ``figures``);
8. :func:`write_report`: ``report.json`` and ``report.md``.

With ``mdps`` (``bisimkit verify --mdp FILE ...``) the user's MDPs replace the generated
families: one family, ``user``, with the claims that apply to any MDP (:func:`user_claims`),
no loss checks and no figures.

Exit status (like strict expected failures in pytest): 0 when every verdict matches what
:mod:`validation.findings` records (every row holds except the established findings, and
each finding still reproduces on its witness MDP), 1 on any surprise (a new failure, or a
finding that no longer reproduces).

The *margin* of a row is the worst signed slack of the claim over its cases
(negative: violated by that much): a distance for inequalities and equalities,
minus the number of disagreeing state pairs for the zero-set claims (C2), and
the number of spare cells under the bound for C7.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write, atomic_write_json, atomic_write_text
from bisimkit.mdp import mdp_from_dict
from bisimkit.progress import Progress

from . import learning
from .claims import CLAIMS, Claim, FixedPoints, Outcome, c5_hypotheses, check_c5, claim_ids, find_claim
from .families import FAMILIES, GENERAL_FAMILIES, Case, example_cases
from .figure_data import VerifyFigureData, verify_figure_data
from .findings import FINDINGS_BY_LABEL, WitnessResult, check_witnesses
from .gaussian_claims import GAUSSIAN_CLAIMS, GAUSSIAN_FAMILIES, gaussian_cases

#: Finite-MDP claims, then the same claims checked in continuous space.
ALL_CLAIMS: list[Claim] = CLAIMS + GAUSSIAN_CLAIMS
#: Source column of the loss rows.
LOSS_SOURCE = "paper Alg. 1; docs/losses.md"
#: The loss checks as claims (checked by training, not by a check function).
LOSS_CLAIMS: dict[str, Claim] = {c.id: Claim(c.id, c.statement, LOSS_SOURCE, None, ()) for c in learning.LOSS_CHECKS}

DEFAULT_CASES = 40
QUICK_CASES = 3
#: Wall-clock budget for shrinking all counterexamples (full run / --quick).
SHRINK_SECONDS = 60.0
SHRINK_SECONDS_QUICK = 2.0
TORCH_MISSING = ("skipped: torch is not installed (the learned-loss checks need it: "
                 "pip install -e '.[torch]')")

#: Draws the verify figures into a folder and returns the written paths.
FigureWriter = Callable[[Path, VerifyFigureData], list[Path]]

#: The family of the MDPs a user gives (``bisimkit verify --mdp FILE ...``).
USER_FAMILY = "user"
#: Claims checked on user MDPs besides those of the bundled examples (any MDP with a policy).
USER_EXTRA_CLAIMS = ("C7", "C8")


def _check_c5_where_hypotheses_hold(fp: FixedPoints) -> Outcome | None:
    """C5 asserted, on a user MDP where the tightness hypotheses hold (None: does not apply)."""
    return check_c5(fp) if c5_hypotheses(fp)[0] else None


def _check_c5_gap_where_hypotheses_fail(fp: FixedPoints) -> Outcome | None:
    """The C5 gap, measured on a user MDP where the tightness hypotheses fail (None: they hold)."""
    return None if c5_hypotheses(fp)[0] else check_c5(fp)


def user_claims(claims: list[Claim]) -> list[Claim]:
    """The finite-MDP claims among ``claims`` that apply to any MDP with a policy, as claims of
    :data:`USER_FAMILY`: those run on the bundled examples, C7 and C8, and C5 (asserted on an MDP
    where its hypotheses hold, its gap measured where they fail; a case is counted under one row)."""
    from dataclasses import replace

    out = []
    for c in claims:
        if c not in CLAIMS:
            continue  # continuous-space and loss rows check their own models
        if c.id == "C5":
            check = _check_c5_gap_where_hypotheses_fail if c.expect == "gap" else _check_c5_where_hypotheses_hold
            out.append(replace(c, check=check, families=(USER_FAMILY,)))
        elif "examples" in c.families or c.id in USER_EXTRA_CLAIMS:
            out.append(replace(c, families=(USER_FAMILY,)))
    return out


# --------------------------------------------------------------------- rows
@dataclass
class Row:
    """Accumulated results of one claim on one family."""

    claim: Claim
    family: str
    cases: int = 0
    held: int = 0
    worst_margin: float = math.inf
    worst_detail: str = ""
    seconds: float = 0.0
    counterexample: str | None = None
    shrunk: bool = False
    violation: dict | None = field(default=None, repr=False)  # smallest violating case seen

    @property
    def label(self) -> str:
        return self.claim.label

    @property
    def asserted(self) -> bool:
        return self.claim.asserted

    @property
    def expect(self) -> str:
        return self.claim.expect

    @property
    def known(self) -> bool:
        """Whether this row is an established finding (:mod:`validation.findings`)."""
        return self.label in FINDINGS_BY_LABEL

    @property
    def surprise(self) -> bool:
        """A row expected to hold that did not, and is no established finding."""
        return self.expect == "holds" and self.held < self.cases and not self.known

    @property
    def status(self) -> str:
        if self.cases == 0:
            return "no cases"
        if self.expect in ("gap", "varies"):
            return f"{self.expect} in {self.cases - self.held}/{self.cases}"
        if self.held == self.cases:
            return "held"
        if self.known:
            return "fails (known)"
        return "VIOLATED" if self.asserted else "fails"

    def record(self, held: bool, margin: float, detail: str, seconds: float) -> None:
        """Add one case's outcome."""
        self.seconds += seconds
        self.cases += 1
        self.held += bool(held)
        if margin < self.worst_margin:
            self.worst_margin, self.worst_detail = float(margin), detail

    def to_json(self) -> dict:
        c = self.claim
        return {"claim": c.id, "label": c.label, "statement": c.statement, "source": c.source, "family": self.family,
                "asserted": c.asserted, "expect": c.expect, "cases": self.cases, "held": self.held,
                "worst_margin": None if math.isinf(self.worst_margin) else self.worst_margin,
                "worst_detail": self.worst_detail, "seconds": self.seconds, "counterexample": self.counterexample,
                "shrunk": self.shrunk, "status": self.status}

    def to_state(self) -> dict:
        """What ``--resume`` keeps of the row (the claim by its label)."""
        data = self.to_json()
        del data["status"]
        data["violation"] = self.violation
        return data

    @classmethod
    def from_state(cls, data: dict, claims: list[Claim]) -> "Row":
        claim = find_claim(data["label"], data["family"], claims)
        if claim is None:
            raise KeyError(f"no claim {data['label']} on {data['family']}")
        margin = math.inf if data["worst_margin"] is None else data["worst_margin"]
        return cls(claim, data["family"], data["cases"], data["held"], margin, data["worst_detail"],
                   data["seconds"], data["counterexample"], data["shrunk"], data.get("violation"))


def _case_dict(case: Case) -> dict:
    data = case.mdp.to_dict()
    ground = None if isinstance(case.ground, str) else np.asarray(case.ground).tolist()
    return {"mdp": data, "ground": case.ground if isinstance(case.ground, str) else ground}


def _case_from_dict(data: dict) -> Case:
    g = data["ground"]
    return Case(mdp_from_dict(data["mdp"]), g if isinstance(g, str) else np.array(g))


# ------------------------------------------------------------ 1. the plan
@dataclass
class Plan:
    """What one run checks, where it writes, and the key its saved state is filed under."""

    out: Path
    cases: int
    seed: int
    quick: bool
    claims: list[Claim]
    loss_ids: list[str]
    families: list[str]
    user_cases: list[tuple[str, Case]] = field(default_factory=list)  # (source, case) of --mdp

    @property
    def config(self) -> dict:
        config = {"cases": self.cases, "seed": self.seed, "claims": sorted({c.label for c in self.claims}),
                  "families": self.families, "losses": self.loss_ids, "quick": self.quick}
        if self.user_cases:
            config["mdps"] = [source for source, _ in self.user_cases]
            digest = hashlib.sha256(json.dumps([_case_dict(case) for _, case in self.user_cases]).encode())
            config["mdps_sha256"] = digest.hexdigest()[:16]
        return config

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.config, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def state_path(self) -> Path:
        return self.out / ".verify-state.json"


def _select(claims: list[str] | None) -> list[Claim]:
    known = claim_ids() + learning.loss_ids()
    if claims is None:
        return list(ALL_CLAIMS)
    bad = [c for c in claims if c not in known]
    if bad:
        raise InputError(f"unknown claim '{bad[0]}' (choose from {', '.join(known)})", param="claims")
    return [c for c in ALL_CLAIMS if c.id in claims]


def _select_losses(claims: list[str] | None) -> list[str]:
    """The loss checks (L1...) to run: all of them by default, else those listed."""
    return [i for i in learning.loss_ids() if claims is None or i in claims]


def user_case(source: str, mdp, ground=None) -> tuple[str, Case]:
    """A user MDP (``source``: its file or id, named in reports) as a case of :data:`USER_FAMILY`;
    ``ground`` (eps family): ``reward`` (default), ``policy``, a file or a matrix."""
    from bisimkit.ground import resolve_ground

    if isinstance(mdp, Case):
        return source, mdp
    if mdp.policy is None:
        raise InputError(f"{source}: has no policy, and every claim needs one (add a 'policy' table to the "
                         f"file; a gym: id gets the uniform policy)", param="mdp")
    return source, Case(mdp, resolve_ground(mdp, ground))


def plan_run(out: str | Path, cases: int | None, seed: int, claims: list[str] | None, quick: bool,
             mdps: list[tuple[str, Case]] | None = None) -> Plan:
    """Check the settings and choose the claims, loss checks and families to run (with ``mdps``,
    the user's (source, case) pairs: only the claims that apply to them, as family ``user``)."""
    if mdps:
        if cases is not None:
            raise InputError("applies to the generated families only (with --mdp the cases are the MDPs given)",
                             param="cases")
        losses = [c for c in claims or [] if c in learning.loss_ids()]
        if losses:
            raise InputError(f"{losses[0]}: the loss checks train on their own MDPs, not on the ones given "
                             f"(choose from {', '.join(claim_ids())})", param="claims")
        chosen = user_claims(_select(claims))
        return Plan(Path(out), len(mdps), seed, quick, chosen, [], [USER_FAMILY], list(mdps))
    cases = cases if cases is not None else (QUICK_CASES if quick else DEFAULT_CASES)
    if cases < 1:
        raise InputError(f"must be at least 1, got {cases}", param="cases")
    chosen = _select(claims)
    families = [f for f in list(FAMILIES) + ["examples"] + list(GAUSSIAN_FAMILIES)
                if any(f in c.families for c in chosen)]
    return Plan(Path(out), cases, seed, quick, chosen, _select_losses(claims), families)


# ------------------------------------------------------------ 2. resuming
def load_state(plan: Plan, resume: bool) -> dict:
    """The saved state of a previous run with the same key (``resume``), else a fresh one."""
    state = {"key": plan.key, "families": {}}
    if resume and plan.state_path.exists():
        saved = json.loads(plan.state_path.read_text())
        if saved.get("key") == state["key"]:
            state = saved
    plan.out.mkdir(parents=True, exist_ok=True)
    return state


def save_state(plan: Plan, state: dict) -> None:
    atomic_write_json(plan.state_path, state)


# ----------------------------------------------------------- 3. warm-up
def start_warm_up() -> subprocess.Popen | None:
    """Start ``python -m bisimkit.warmup``, which compiles (or loads from numba's disk cache)
    the compiled kernels; None when the process cannot start (they then compile on first use)."""
    try:
        return subprocess.Popen([sys.executable, "-m", "bisimkit.warmup"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError:
        return None


# ------------------------------------------------------------ 4. losses
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
    other. :meth:`poll` forwards its progress to the bar; :meth:`wait` returns its report."""

    def __init__(self, ids: list[str], quick: bool, seed: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited threads or locks
        self.queue = ctx.Queue()
        self.process = ctx.Process(target=learning.loss_worker, args=(ids, quick, seed, self.queue), daemon=True)
        self.process.start()
        self.report: dict | None = None

    def poll(self, bar: Progress | None, timeout: float | None = 0.0) -> None:
        """Handle the worker's messages (waiting up to ``timeout`` seconds for the first one)."""
        import queue as queues

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
        self.process.join(timeout=10)
        return self.report


def start_losses(plan: Plan, state: dict) -> "LossWorker | dict | None":
    """Start the loss checks: a :class:`LossWorker`, or their report at once when there is nothing
    to train (none selected, torch missing), or None when a resumed state has them already."""
    if "losses" in state:
        return None
    if not plan.loss_ids or not learning.torch_available():
        return run_losses(plan.loss_ids, plan.quick, plan.seed)
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
        detail = (f"max error {run['final_error']:.2e} <= {run['tolerance']:.2e} "
                  f"(1% of max d* {run['scale']:.3g}) after {run['steps'][-1]} steps; "
                  f"max d(s,s): exact {run['exact_diagonal']:.3g}, learned {run['learned_diagonal']:.3g}")
        row.record(run["held"], run["tolerance"] - run["final_error"], detail, run["seconds"])
    return list(rows.values())


# ---------------------------------------------------------- 5. families
def _family_cases(name: str, cases: int, seed: int, quick: bool = False, plan: Plan | None = None) -> list:
    if name == USER_FAMILY:
        return [case for _, case in plan.user_cases]
    if name == "examples":
        return example_cases()
    if name in GAUSSIAN_FAMILIES:
        return gaussian_cases(name, cases, seed, quick)
    index = list(FAMILIES).index(name)
    rng = np.random.default_rng([seed, index])
    return [FAMILIES[name].make(rng) for _ in range(cases)]


def run_family(name: str, cases: list, claims: list[Claim], bar: Progress | None = None,
               keep: list | None = None, tick: Callable[[], None] | None = None,
               sources: dict[int, str] | None = None) -> list[Row]:
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
                    row.violation = {"size": size, "case": _case_dict(case), "detail": outcome.detail,
                                     "margin": float(outcome.margin)}
        if keep is not None and name in GENERAL_FAMILIES:
            keep.append((name, fp))
        if bar:
            bar.advance(1, {"": name})
        if tick:
            tick()
    return [r for r in rows if r.cases or name != USER_FAMILY]


def run_families(plan: Plan, state: dict, todo: dict[str, list], bar: Progress | None,
                 compiling: subprocess.Popen | None, tick: Callable[[], None] | None = None) -> tuple[list[Row], list]:
    """Every family's rows (reused from ``state`` when it finished them), and the fixed
    points of the general families for the figures. The continuous families go first:
    they need no compiled kernel, so the side compilation keeps going meanwhile."""
    by_family: dict[str, list[Row]] = {}
    keep: list = []
    for fam in sorted(plan.families, key=lambda f: f not in GAUSSIAN_FAMILIES):
        if fam in state["families"]:
            by_family[fam] = [Row.from_state(r, plan.claims) for r in state["families"][fam]]
            continue
        if compiling is not None and fam not in GAUSSIAN_FAMILIES:
            compiling.wait()
            compiling = None
        sources = {k: source for k, (source, _) in enumerate(plan.user_cases)} if fam == USER_FAMILY else None
        by_family[fam] = run_family(fam, todo[fam], plan.claims, bar, keep, tick, sources)
        state["families"][fam] = [r.to_state() for r in by_family[fam]]
        save_state(plan, state)
    if compiling is not None:
        compiling.wait()
    return [row for fam in plan.families for row in by_family[fam]], keep


# --------------------------------------------------- 6. counterexamples
def shrink(claim: Claim, family: str, max_examples: int, seconds: float) -> Case | None:
    """Smallest case of ``family`` on which ``claim`` fails, found and shrunk by
    hypothesis within about ``seconds`` (after that, the best so far is kept)."""
    if family not in FAMILIES:
        return None
    from hypothesis import HealthCheck, Phase, find, settings

    deadline = time.perf_counter() + seconds
    best: list[Case] = []  # the shrinker only tries candidates simpler than the last failure

    def fails(case: Case) -> bool:
        if time.perf_counter() > deadline:
            return False  # out of time: accept no new (smaller) counterexample
        failed = not claim.check(FixedPoints(case)).held
        if failed:
            best.append(case)
        return failed

    conf = settings(max_examples=max_examples, deadline=None, database=None,
                    phases=[Phase.generate, Phase.shrink], derandomize=True,
                    suppress_health_check=list(HealthCheck))
    try:
        find(FAMILIES[family].strategy(), fails, settings=conf)
    except Exception:  # NoSuchExample, or the replay after the deadline disagreeing (flaky)
        pass
    return best[-1] if best else None


def save_counterexample(row: Row, case: Case, out: Path, shrunk: bool) -> str:
    """Write the case as an MDP JSON file (plus the ground metric when it is a matrix)."""
    slug = f"{row.label.replace(' ', '-').replace('(', '').replace(')', '')}-{row.family}"
    outcome = row.claim.check(FixedPoints(case))
    data = case.mdp.to_dict()
    data["name"] = f"counterexample to {row.label} ({row.family}{', shrunk' if shrunk else ''}): {outcome.detail}"
    path = out / "counterexamples" / f"{slug}.json"
    atomic_write_json(path, data)
    if not isinstance(case.ground, str):
        atomic_write(path.with_suffix(".ground.npy"), lambda fh: np.save(fh, np.asarray(case.ground)))
    return str(path.relative_to(out))


def save_counterexamples(rows: list[Row], plan: Plan, shrink_examples: int | None) -> None:
    """Shrink one counterexample per failing claim label (asserted claims first, within a
    time budget); the other failing rows keep their smallest case. Each is written to
    ``counterexamples/`` and linked from its row."""
    start = time.perf_counter()
    budget = shrink_examples if shrink_examples is not None else (30 if plan.quick else 150)
    seconds = SHRINK_SECONDS_QUICK if plan.quick else SHRINK_SECONDS
    # Measurement rows (a gap, an order dependence) keep their smallest sampled case: shrinking
    # them would spend the budget on what is expected.
    pending = {r.label for r in rows if r.violation is not None and r.family in FAMILIES and r.expect == "holds"}
    for row in sorted(rows, key=lambda r: not r.asserted):
        if row.violation is None:
            continue
        case = None
        if budget > 0 and row.label in pending and row.family in FAMILIES:
            share = max(seconds - (time.perf_counter() - start), 0.5) / len(pending)
            case = shrink(row.claim, row.family, budget, share)
            if case is not None:
                pending.discard(row.label)
        row.shrunk = case is not None
        if case is None:
            case = _case_from_dict(row.violation["case"])
        row.counterexample = save_counterexample(row, case, plan.out, row.shrunk)


# ----------------------------------------------------------- 7. figures
def make_figures(writer: FigureWriter | None, plan: Plan, fixed_points: list, loss_runs: list) -> list[str]:
    """Compute the figures' data and have ``writer`` draw them; paths relative to the output folder."""
    if not writer:
        return []
    data = verify_figure_data(fixed_points, plan.quick, loss_runs, learning.RELATIVE_TOLERANCE,
                              order=any(c.id == "C11" for c in plan.claims))
    return [str(Path(p).relative_to(plan.out)) for p in writer(plan.out, data)]


# ------------------------------------------------------------ 8. report
def check_findings(plan: Plan) -> list[WitnessResult]:
    """Each established finding among the selected claims, rechecked on its witness MDP."""
    return check_witnesses(plan.claims, {c.label for c in plan.claims})


def surprises(rows: list[Row], witnesses: list[WitnessResult]) -> list[str]:
    """One line per verdict that differs from what is recorded: a row that failed and is no
    established finding, or a finding that did not reproduce on its witness."""
    out = [f"{r.label} on {r.family}: {r.status} ({r.cases - r.held}/{r.cases} cases; {r.worst_detail})"
           for r in rows if r.surprise]
    out += [f"{w.finding.label}: the established finding did not reproduce on its witness "
            f"'{w.finding.witness_name}' ({w.detail})" for w in witnesses if not w.reproduced]
    return out


def write_report(plan: Plan, rows: list[Row], losses: dict, figure_paths: list[str], phase_seconds: dict,
                 seconds: float, witnesses: list[WitnessResult] | None = None) -> dict:
    """Write ``report.json`` and ``report.md``; returns the report."""
    witnesses = check_findings(plan) if witnesses is None else witnesses
    found = surprises(rows, witnesses)
    violated = [r for r in rows if r.asserted and r.expect == "holds" and r.held < r.cases]
    report = {
        "config": plan.config,
        "seconds": seconds,
        "phase_seconds": phase_seconds,
        "rows": [r.to_json() for r in rows],
        "verdicts": verdicts(rows),
        "findings": [w.to_json() for w in witnesses],
        "surprises": found,
        "losses": losses,
        "figures": figure_paths,
        "exit_status": 1 if found else 0,
        "violated_asserted": sorted({r.label for r in violated}),
    }
    atomic_write_json(plan.out / "report.json", report)
    atomic_write_text(plan.out / "report.md", markdown(report))
    return report


# ------------------------------------------------------------------ job
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


def verify(out: str | Path = "verify-out", cases: int | None = None, seed: int = 0, claims: list[str] | None = None,
           quick: bool = False, resume: bool = False, shrink_examples: int | None = None,
           figures: FigureWriter | None = None, progress: bool = True, mdps: list | None = None) -> dict:
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
        pairs = [item if isinstance(item, tuple) else (getattr(item, "label", f"mdp {k}"), item)
                 for k, item in enumerate(mdps)]
        mdps = [user_case(source, mdp) for source, mdp in pairs]
        figures = None
    with timer("cases"):
        plan = plan_run(out, cases, seed, claims, quick, mdps)
        state = load_state(plan, resume)
        todo = {f: _family_cases(f, plan.cases, seed, quick, plan) for f in plan.families
                if f not in state["families"]}
        bar = Progress(sum(map(len, todo.values())) + pending_loss_runs(plan, state), "verify", unit="cases",
                       bar=True, enabled=progress)
        compiling = start_warm_up() if todo else None
        losses = start_losses(plan, state)  # trains in a child process while the claims are checked here
        tick = (lambda: losses.poll(bar)) if isinstance(losses, LossWorker) else None
        rows, fixed_points = run_families(plan, state, todo, bar, compiling, tick)
    with timer("counterexamples"):
        save_counterexamples(rows, plan, shrink_examples)
    with timer("findings"):
        witnesses = check_findings(plan)
    with timer("waiting for the losses"):
        if losses is not None:
            state["losses"] = losses.wait(bar) if isinstance(losses, LossWorker) else losses
            save_state(plan, state)
    rows += loss_rows(state["losses"]["runs"])
    bar.close()
    with timer("figures"):
        figure_paths = make_figures(figures, plan, fixed_points, state["losses"]["runs"])
    phases = {k: timer.seconds.get(k, 0.0) for k in ("cases", "counterexamples", "findings", "figures")}
    phases["losses (alongside the cases)"] = float(state["losses"].get("seconds", 0.0))
    phases["waiting for the losses"] = timer.seconds.get("waiting for the losses", 0.0)
    return write_report(plan, rows, state["losses"], figure_paths, phases, time.perf_counter() - t0, witnesses)


# --------------------------------------------------------------- reporting
def _summary(rows: list[Row]) -> str:
    """One clause for the rows of one claim label."""
    total = sum(r.cases for r in rows)
    held = sum(r.held for r in rows)
    bad = [r for r in rows if r.held < r.cases]
    where = ", ".join(f"{r.family} {r.cases - r.held}/{r.cases}" for r in bad)
    if rows[0].expect in ("gap", "varies"):
        largest = max((-r.worst_margin for r in rows if not math.isinf(r.worst_margin)), default=0.0)
        if rows[0].expect == "gap":
            return f"strict gap in {total - held}/{total} cases ({where or 'none'}); largest gap {largest:.3g}"
        return f"varies with the order in {total - held}/{total} cases ({where or 'none'}); largest spread {largest:.3g}"
    if not bad:
        return f"held in all {total} cases"
    word = "fails (established finding)" if rows[0].known else ("VIOLATED" if rows[0].asserted else "fails")
    why = FINDINGS_BY_LABEL[rows[0].label].verdict if rows[0].known else ""
    return f"{word} in {total - held}/{total} cases ({where})" + (f", {why}" if why else "")


def verdicts(rows: list[Row]) -> dict[str, str]:
    """One sentence per claim id, from the evidence, followed by the claims' own notes
    (:attr:`Claim.note`) where their condition is met."""
    labels: dict[str, dict[str, list[Row]]] = {}
    for r in rows:
        labels.setdefault(r.claim.id, {}).setdefault(r.label, []).append(r)
    out = {}
    for cid, groups in labels.items():
        ordered = sorted(groups.items(), key=lambda kv: kv[0] != cid)  # the project's reading first
        out[cid] = "; ".join((f"[{label[len(cid) + 2:-1]}] " if label != cid else "") + _summary(rs)
                             for label, rs in ordered)
        held = {label: all(r.held == r.cases for r in rs) for label, rs in groups.items()}
        for label, rs in ordered:
            note = rs[0].claim.note
            if note and held[label] and not all(held.values()):
                out[cid] += ". " + note
    return out


def table(rows: list[dict]) -> str:
    """Plain-text table: claim, family, cases, held, worst margin, seconds, status."""
    head = ("claim", "family", "cases", "held", "worst margin", "seconds", "status")
    body = [(r["label"], r["family"], str(r["cases"]), str(r["held"]),
             "-" if r["worst_margin"] is None else f"{r['worst_margin'] + 0.0:.3g}", f"{r['seconds']:.2f}", r["status"])
            for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*b) for b in body]
    return "\n".join(lines)


READINGS = """\
**Readings.** The project defines E_eps with *equal class masses* of P(s,a) and P(t,a')
(the usual bisimulation reading); the paper's Def. 4.3 literally asks for *identical*
laws P(s,a) = P(t,a'). Rows marked `(literal)` use the second reading; they are
reported, not asserted. The literal reading of C2 fails for a trivial reason: two
absorbing states with equal rewards have different laws (each a point mass on itself)
yet distance 0, and the same literal reading would break the pi-bisimulation theorem
the paper builds on. Under the class-mass reading C2 holds, and C4's "d_eps-bar = 0
on E_eps" depends on how the states are numbered: the entangled coupling follows the
state order, so with the given (index) order it can pair successors from different
classes and fail, while with each E_eps class numbered consecutively it holds on every
case (C11). C2 and C4 therefore cannot both hold *for every state order*. For C10,
d_eps >= d_eps-avg is a theorem (a policy-weighted mixture of per-action optimal
couplings is a coupling of the policy-averaged laws); the reverse fails.
C5 is checked where its hypotheses provably hold (`monotone-product`: coordinate-
independent transitions, d_eps-bar separable with Monge coordinate terms, the finite
form of "separable convex") and its gap is measured where they fail.

Rows marked `(continuous)` check C5, C6 and C8 in continuous space (docs/gaussian.md):
on random linear-Gaussian MDPs and a heteroscedastic pendulum with a tanh-squashed
policy (C6, C8), on pendulum transition laws with separable convex costs (C5, exact LP
on product quantile quantisations against the entangled coupling, and the closed form
against shared-noise sampling), and where the hypotheses fail (C5 gap: correlated
covariances, exactly by Bures; a Euclidean cost, by LP and a glued coupling with a
99.9% lower confidence bound). Continuous families run at most 40 cases (12 and 8 for
the LP families; fewer with --quick).
"""


LOSS_READING = """\
Each loss of `bisimkit.losses` (the functions the agents import) trains a free table
d[s, t], diagonal included, from sampled batches of one-hot or embedded states on a
finite MDP, whose policy and transitions are inverse-CDF samplers of uniform noise:
shared noise is the entangled coupling, independent noise the product coupling. The
expected target is then the operator named in the row, so the table must converge to
its exact fixed point (`bisimkit solve`). A row holds when the final max error over all
pairs is at most 1% of the largest exact distance.
"""


def loss_markdown(losses: dict) -> list[str]:
    """The learned-loss section of the report."""
    if not losses or (not losses.get("runs") and "skipped" not in losses):
        return []
    lines = ["## Learned losses (docs/losses.md)", ""]
    if "skipped" in losses:
        return lines + [f"Loss checks {losses['skipped']}.", ""]
    cfg = losses.get("config", {})
    lines += [LOSS_READING, f"Training: {cfg.get('steps')} SGD steps, batch {cfg.get('batch')}, "
              f"{cfg.get('samples')} target samples, seed {cfg.get('seed')}.", "",
              "| check | loss | fixed point | MDP | max error | tolerance | max d(s,s) exact / learned | seconds |",
              "|---|---|---|---|---|---|---|---|"]
    for r in losses["runs"]:
        metric = r["metric"] + (f" ({r['ground']})" if r["ground"] else "")
        lines.append(f"| {r['id']} | {r['loss']} | {metric} | {r['family']} ({r['mdp']}) | {r['final_error']:.2e} "
                     f"| {r['tolerance']:.2e} | {r['exact_diagonal']:.3g} / {r['learned_diagonal']:.3g} "
                     f"| {r['seconds']:.1f} |")
    return lines + [""]


def finding_markdown(findings: list[dict]) -> list[str]:
    """The established findings (``validation/findings.py``) and whether each reproduced."""
    if not findings:
        return []
    lines = ["", "## Established findings", "",
             "Declared in `validation/findings.py`; each must reproduce on its witness MDP "
             "(sampled rows of these claims may fail or hold).", "",
             "| claim | expected | witness | reproduced | why |", "|---|---|---|---|---|"]
    for f in findings:
        lines.append(f"| {f['label']} | {f['expected']} | {f['witness']}: {f['detail']} "
                     f"| {'yes' if f['reproduced'] else '**no**'} | {f['reason']} |")
    return lines


def markdown(report: dict) -> str:
    """The human-readable report."""
    cfg = report["config"]
    scope = (f"The MDPs given ({', '.join(cfg['mdps'])}) as family `{USER_FAMILY}`: every claim that applies "
             f"to them; no loss checks or figures (they are about the generated families)"
             if cfg.get("mdps") else f"{cfg['cases']} cases per family, seed {cfg['seed']}")
    lines = ["# bisimkit verify report", "",
             f"{scope}, {report['seconds']:.1f} s "
             f"({', '.join(f'{k} {v:.1f} s' for k, v in report['phase_seconds'].items())}). "
             f"Exit status {report['exit_status']}"
             + (f": {len(report['surprises'])} verdict(s) differ from what is recorded (surprises, below)."
                if report['exit_status'] else ": every verdict matches what is recorded (every claim held except "
                                              "the established findings, and each of those reproduced)."),
             "", "## Verdicts", ""]
    for cid, text in report["verdicts"].items():
        lines.append(f"- **{cid}**: {text}")
    lines += ["", "## Surprises", ""]
    lines += [f"- {text}" for text in report["surprises"]] or ["None: every verdict is as recorded."]
    lines += finding_markdown(report.get("findings", []))
    lines += ["", READINGS, "## Results", "",
              "Margin: the worst signed slack of the claim over the cases (negative = violated by that much); "
              "a distance, except C2 (minus the number of state pairs whose relation and zero set disagree) "
              "and C7 (spare cells under the bound).", "",
              "```", table(report["rows"]), "```", ""]
    lines += loss_markdown(report.get("losses", {}))
    ces = [r for r in report["rows"] if r["counterexample"]]
    if ces:
        lines += ["## Counterexamples", "",
                  "Each is an MDP JSON file (`bisimkit info FILE`, `bisimkit solve FILE --metric ...`).", ""]
        for r in ces:
            lines.append(f"- {r['label']} on {r['family']}: [{r['counterexample']}]({r['counterexample']})"
                         f"{' (shrunk by hypothesis)' if r['shrunk'] else ''}: {r['worst_detail']}")
        lines.append("")
    if report["figures"]:
        lines += ["## Figures", ""]
        for p in report["figures"]:
            lines += [f"![{p}]({p})", ""]
    return "\n".join(lines)


def console_summary(report: dict, out: str | Path) -> str:
    """What the command line prints after a run: the table, the verdicts, where the report is."""
    lines = [table(report["rows"]), ""]
    lines += [f"{cid}: {text}" for cid, text in report["verdicts"].items()]
    if "skipped" in report.get("losses", {}):
        lines.append(f"L1-L{len(learning.LOSS_CHECKS)}: {report['losses']['skipped']}")
    known = [f["label"] for f in report.get("findings", []) if f["reproduced"]]
    if known:
        lines.append(f"established findings reproduced: {', '.join(known)} (validation/findings.py)")
    lines += [f"SURPRISE: {text}" for text in report.get("surprises", [])]
    lines.append(f"\nreport: {Path(out) / 'report.md'} ({report['seconds']:.1f} s); exit status {report['exit_status']}")
    return "\n".join(lines)
