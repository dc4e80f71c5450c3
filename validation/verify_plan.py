"""What a ``bisimkit verify`` run checks (:mod:`validation.verify`): the claims, loss checks and
families selected, the user's MDPs as family ``user``, the run's key, and the saved state that
``resume`` continues from."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json
from bisimkit.ground import resolve_ground

from . import learning
from .claims import CLAIMS, Claim, FixedPoints, Outcome, c5_hypotheses, check_c5, claim_ids
from .families import FAMILIES, Case
from .gaussian_claims import GAUSSIAN_CLAIMS, GAUSSIAN_FAMILIES
from .verify_rows import case_dict

#: Finite-MDP claims, then the same claims checked in continuous space.
ALL_CLAIMS: list[Claim] = CLAIMS + GAUSSIAN_CLAIMS

#: Cases per family: a full run, ``--quick``.
DEFAULT_CASES = 40
QUICK_CASES = 3

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
        config = {
            "cases": self.cases,
            "seed": self.seed,
            "claims": sorted({c.label for c in self.claims}),
            "families": self.families,
            "losses": self.loss_ids,
            "quick": self.quick,
        }
        if self.user_cases:
            config["mdps"] = [source for source, _ in self.user_cases]
            digest = hashlib.sha256(json.dumps([case_dict(case) for _, case in self.user_cases]).encode())
            config["mdps_sha256"] = digest.hexdigest()[:16]
        return config

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.config, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def state_path(self) -> Path:
        return self.out / ".verify-state.json"


def select_claims(claims: list[str] | None) -> list[Claim]:
    known = claim_ids() + learning.loss_ids()
    if claims is None:
        return list(ALL_CLAIMS)
    bad = [c for c in claims if c not in known]
    if bad:
        raise InputError(f"unknown claim '{bad[0]}' (choose from {', '.join(known)})", param="claims")
    return [c for c in ALL_CLAIMS if c.id in claims]


def select_losses(claims: list[str] | None) -> list[str]:
    """The loss checks (L1...) to run: all of them by default, else those listed."""
    return [i for i in learning.loss_ids() if claims is None or i in claims]


def user_case(source: str, mdp, ground=None) -> tuple[str, Case]:
    """A user MDP (``source``: its file or id, named in reports) as a case of :data:`USER_FAMILY`;
    ``ground`` (eps family): ``reward`` (default), ``policy``, a file or a matrix."""
    if isinstance(mdp, Case):
        return source, mdp
    if mdp.policy is None:
        raise InputError(
            f"{source}: has no policy, and every claim needs one (add a 'policy' table to the "
            f"file; a gym: id gets the uniform policy)",
            param="mdp",
        )
    return source, Case(mdp, resolve_ground(mdp, ground))


def plan_run(
    out: str | Path,
    cases: int | None,
    seed: int,
    claims: list[str] | None,
    quick: bool,
    mdps: list[tuple[str, Case]] | None = None,
) -> Plan:
    """Check the settings and choose the claims, loss checks and families to run (with ``mdps``,
    the user's (source, case) pairs: only the claims that apply to them, as family ``user``)."""
    if mdps:
        if cases is not None:
            raise InputError(
                "applies to the generated families only (with mdps the cases are the MDPs given)", param="cases"
            )
        losses = [c for c in claims or [] if c in learning.loss_ids()]
        if losses:
            raise InputError(
                f"{losses[0]}: the loss checks train on their own MDPs, not on the ones given "
                f"(choose from {', '.join(claim_ids())})",
                param="claims",
            )
        chosen = user_claims(select_claims(claims))
        return Plan(Path(out), len(mdps), seed, quick, chosen, [], [USER_FAMILY], list(mdps))
    cases = cases if cases is not None else (QUICK_CASES if quick else DEFAULT_CASES)
    if cases < 1:
        raise InputError(f"must be at least 1, got {cases}", param="cases")
    chosen = select_claims(claims)
    families = [
        f for f in list(FAMILIES) + ["examples"] + list(GAUSSIAN_FAMILIES) if any(f in c.families for c in chosen)
    ]
    return Plan(Path(out), cases, seed, quick, chosen, select_losses(claims), families)


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
