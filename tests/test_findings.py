"""The established findings: each witness reproduces its finding, and a finding's witness is checked only
when its label is asked for."""

from validation.claims import CLAIMS
from validation.findings import FINDINGS, FINDINGS_BY_LABEL, check_witnesses, crossed_actions, two_absorbing_states


def test_every_witness_reproduces_its_finding():
    results = check_witnesses(CLAIMS)
    assert [r.finding.label for r in results] == [f.label for f in FINDINGS]
    assert all(r.reproduced for r in results), [r.detail for r in results if not r.reproduced]
    assert results[0].to_json()["reproduced"] is True


def test_only_the_asked_labels_are_checked():
    label = FINDINGS[0].label
    assert [r.finding.label for r in check_witnesses(CLAIMS, {label})] == [label]
    assert check_witnesses(CLAIMS, set()) == [] and check_witnesses([], None) == []
    assert set(FINDINGS_BY_LABEL) == {f.label for f in FINDINGS}


def test_the_witnesses_are_the_described_mdps():
    absorbing = two_absorbing_states().mdp
    assert absorbing.transitions[:, 0].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    crossed = crossed_actions().mdp
    assert crossed.transitions[0, 0, 2] == crossed.transitions[1, 0, 3] == 1.0
