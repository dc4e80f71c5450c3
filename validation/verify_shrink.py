"""Counterexamples of ``bisimkit verify`` (:mod:`validation.verify`): hypothesis shrinks a failing
claim to a small case of its family, and each failing row's case is written as an MDP file."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, find, settings

from bisimkit.files import atomic_write, atomic_write_json

from .claims import Claim, FixedPoints
from .families import FAMILIES, Case
from .verify_plan import Plan
from .verify_rows import Row, case_from_dict

#: Wall-clock budget for shrinking all counterexamples (full run / --quick).
SHRINK_SECONDS = 60.0
SHRINK_SECONDS_QUICK = 2.0


def shrink(claim: Claim, family: str, max_examples: int, seconds: float) -> Case | None:
    """Smallest case of ``family`` on which ``claim`` fails, found and shrunk by
    hypothesis within about ``seconds`` (after that, the best so far is kept)."""
    if family not in FAMILIES:
        return None
    deadline = time.perf_counter() + seconds
    best: list[Case] = []  # the shrinker only tries candidates simpler than the last failure

    def fails(case: Case) -> bool:
        if time.perf_counter() > deadline:
            return False  # out of time: accept no new (smaller) counterexample
        failed = not claim.check(FixedPoints(case)).held
        if failed:
            best.append(case)
        return failed

    conf = settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    try:
        find(FAMILIES[family].strategy(), fails, settings=conf)
    except Exception:  # NoSuchExample, or the replay after the deadline disagreeing (flaky)
        pass
    return best[-1] if best else None


def save_counterexample(row: Row, case: Case, out: Path, shrunk: bool) -> tuple[str, str]:
    """Write the case as an MDP JSON file (plus the ground metric when it is a matrix); returns the
    file's path relative to ``out`` and the case's own outcome (what ``verify --mdp FILE`` reproduces)."""
    slug = f"{row.label.replace(' ', '-').replace('(', '').replace(')', '')}-{row.family}"
    outcome = row.claim.check(FixedPoints(case))
    data = case.mdp.to_dict()
    data["name"] = f"counterexample to {row.label} ({row.family}{', shrunk' if shrunk else ''}): {outcome.detail}"
    path = out / "counterexamples" / f"{slug}.json"
    atomic_write_json(path, data)
    if not isinstance(case.ground, str):
        atomic_write(path.with_suffix(".ground.npy"), lambda fh: np.save(fh, np.asarray(case.ground)))
    return str(path.relative_to(out)), outcome.detail


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
            case = case_from_dict(row.violation["case"])
        row.counterexample, row.counterexample_detail = save_counterexample(row, case, plan.out, row.shrunk)
