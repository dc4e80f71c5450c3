"""Established findings: the claim rows whose failure (or order dependence) is expected.

``bisimkit verify`` treats these like strict expected failures in pytest. Each
finding names the claim row it covers (its label), what is expected of it, why,
and a small **witness** MDP on which it must reproduce. A run passes (exit 0)
when every other row holds and every finding's witness still reproduces; it
fails (exit 1) on a surprise: a row not listed here that does not hold, or a
finding that does not reproduce. Sampled rows of a finding may fail or hold
(few cases may miss it); the witness decides.

This is the one place where findings are declared; ``docs/claims.md`` explains them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from bisimkit.examples import example
from bisimkit.mdp import FiniteMDP

from .claims import FixedPoints
from .families import Case


@dataclass(frozen=True)
class Finding:
    """A claim row whose failure is established, with a witness that must reproduce it."""

    label: str  # the claim row, e.g. "C4" or "C10 (reverse)"
    expected: str  # what a run finds on the witness: "fails" or "varies"
    reason: str
    witness_name: str
    witness: Callable[[], Case]
    verdict: str = ""  # appended to the claim's verdict when its sampled rows show the finding


def two_absorbing_states() -> Case:
    """Two absorbing states with equal rewards: bisimilar, but their laws (each a point mass on
    itself) are not identical."""
    P = np.zeros((2, 1, 2))
    P[0, 0, 0] = P[1, 0, 1] = 1.0
    return Case(FiniteMDP(P, np.zeros((2, 1)), 0.9, np.ones((2, 1)), name="two absorbing states"))


def crossed_actions() -> Case:
    """States 0 and 1 share a uniform policy and rewards; at 0 action a leads to state 2+a, at 1
    to state 3-a; states 2 and 3 are absorbing with rewards 0 and 1. The policy-averaged laws
    agree (d_eps-avg(0, 1) = 0), the per-action ones do not (d_eps(0, 1) = c / (1 - c))."""
    P = np.zeros((4, 2, 4))
    P[0, 0, 2] = P[0, 1, 3] = P[1, 0, 3] = P[1, 1, 2] = 1.0
    P[2, :, 2] = P[3, :, 3] = 1.0
    R = np.zeros((4, 2))
    R[3] = 1.0
    return Case(FiniteMDP(P, R, 0.9, np.full((4, 2), 0.5), name="crossed actions"))


def three_action_rewards() -> Case:
    """States 0 and 1 take actions with rewards 0, 1, 2 under policies (1/3, 1/3, 1/3) and
    (1/2, 0, 1/2), then stop in an absorbing state 2. The entangled action coupling, so
    d_eps(0, 1), is 1/3 in the index order and 2/3 with actions 0 and 1 swapped."""
    P = np.zeros((3, 3, 3))
    P[:, :, 2] = 1.0
    R = np.zeros((3, 3))
    R[0] = R[1] = [0.0, 1.0, 2.0]
    pi = np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 0.0, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    return Case(FiniteMDP(P, R, 0.9, pi, name="three-action rewards"))


def coupling_order() -> Case:
    """The bundled ``coupling-order`` example (states 0 and 5 are E_eps-related, d_eps-bar(0, 5) = 9)."""
    return Case(example("coupling-order"))


FINDINGS: list[Finding] = [
    Finding(
        "C4",
        "fails",
        "with equal class masses as E_eps and states in index order, the entangled coupling of two "
        "E_eps-related laws can pair successors from different classes, so d_eps-bar > 0 on E_eps; "
        "numbering each class consecutively removes it (C11 (class-contiguous))",
        "coupling-order",
        coupling_order,
        "with states in index order; it holds once each E_eps class is numbered consecutively (C11)",
    ),
    Finding(
        "C2 (literal)",
        "fails",
        "read literally (identical next-state laws), two equal-reward absorbing states are not related "
        "although d_eps between them is 0; the same literal reading would also break the "
        "pi-bisimulation theorem the paper builds on",
        "two absorbing states",
        two_absorbing_states,
        "trivially: equal-reward absorbing states have different laws but distance 0",
    ),
    Finding(
        "C10 (reverse)",
        "fails",
        "d_eps-avg >= d_eps is not a theorem: the policy-averaged laws can agree while the per-action laws "
        "differ; the forward direction d_eps >= d_eps-avg is one (a policy-weighted mixture of per-action "
        "optimal couplings couples the averaged laws)",
        "crossed actions",
        crossed_actions,
    ),
    Finding(
        "C11 (state order)",
        "varies",
        "d_eps-bar couples next states along the state order; swapping states 3 and 4 of coupling-order "
        "changes d_eps-bar(0, 5) from 9 to 0",
        "coupling-order",
        coupling_order,
    ),
    Finding(
        "C11 (action order)",
        "varies",
        "the entangled policy coupling follows the action order, so d_eps, d_eps-avg, d_eps-bar and E_eps "
        "change when actions are renumbered",
        "three-action rewards",
        three_action_rewards,
    ),
]
FINDINGS_BY_LABEL: dict[str, Finding] = {f.label: f for f in FINDINGS}


@dataclass
class WitnessResult:
    """Whether a finding reproduced on its witness."""

    finding: Finding
    reproduced: bool
    detail: str

    def to_json(self) -> dict:
        f = self.finding
        return {
            "label": f.label,
            "expected": f.expected,
            "reason": f.reason,
            "witness": f.witness_name,
            "reproduced": self.reproduced,
            "detail": self.detail,
        }


def check_witnesses(claims, labels: set[str] | None = None) -> list[WitnessResult]:
    """Run each finding's claim check on its witness (only findings whose label is in ``labels``,
    when given). A finding reproduces when its check does not hold there."""
    by_label = {c.label: c for c in claims}
    out = []
    for f in FINDINGS:
        claim = by_label.get(f.label)
        if claim is None or claim.check is None or (labels is not None and f.label not in labels):
            continue
        outcome = claim.check(FixedPoints(f.witness()))
        out.append(WitnessResult(f, not outcome.held, outcome.detail))
    return out
