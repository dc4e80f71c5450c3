"""The result rows of ``bisimkit verify`` (:mod:`validation.verify`): one per (claim, family),
what each records, and the case format its saved state and counterexamples use."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bisimkit.mdp import mdp_from_dict

from .claims import Claim, find_claim
from .families import Case
from .findings import FINDINGS_BY_LABEL


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
    counterexample_detail: str = ""  # the saved case's own outcome (the shrunk or smallest case, not the worst)
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

    def merge(self, later: "Row") -> None:
        """Add the outcomes of ``later``, the same row over the cases that follow this row's
        (a sharded run's next shard): the counts add up, and the worst margin and the smallest
        violation are the first such, as :meth:`record` keeps them case by case."""
        self.seconds += later.seconds
        self.cases += later.cases
        self.held += later.held
        if later.worst_margin < self.worst_margin:
            self.worst_margin, self.worst_detail = later.worst_margin, later.worst_detail
        if later.violation is not None and (self.violation is None or later.violation["size"] < self.violation["size"]):
            self.violation = later.violation

    def to_json(self) -> dict:
        c = self.claim
        return {
            "claim": c.id,
            "label": c.label,
            "statement": c.statement,
            "source": c.source,
            "family": self.family,
            "asserted": c.asserted,
            "expect": c.expect,
            "cases": self.cases,
            "held": self.held,
            "worst_margin": None if math.isinf(self.worst_margin) else self.worst_margin,
            "worst_detail": self.worst_detail,
            "seconds": self.seconds,
            "counterexample": self.counterexample,
            "counterexample_detail": self.counterexample_detail,
            "shrunk": self.shrunk,
            "status": self.status,
        }

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
        return cls(
            claim,
            data["family"],
            data["cases"],
            data["held"],
            margin,
            data["worst_detail"],
            data["seconds"],
            data["counterexample"],
            data["shrunk"],
            data.get("counterexample_detail", ""),
            data.get("violation"),
        )


def case_dict(case: Case) -> dict:
    data = case.mdp.to_dict()
    ground = None if isinstance(case.ground, str) else np.asarray(case.ground).tolist()
    return {"mdp": data, "ground": case.ground if isinstance(case.ground, str) else ground}


def case_from_dict(data: dict) -> Case:
    g = data["ground"]
    return Case(mdp_from_dict(data["mdp"]), g if isinstance(g, str) else np.array(g))
