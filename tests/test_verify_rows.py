"""The result rows of ``bisimkit verify``: a row's status from its counts, its saved state, the case format."""

import math

import numpy as np
from hypothesis import given, strategies as st

from bisimkit import example
from validation.claims import CLAIMS
from validation.families import Case
from validation.findings import FINDINGS_BY_LABEL
from validation.verify_rows import Row, case_dict, case_from_dict


def holding_claim():
    """A claim expected to hold that is no established finding."""
    return next(c for c in CLAIMS if c.expect == "holds" and c.label not in FINDINGS_BY_LABEL)


def test_a_row_keeps_the_worst_margin_and_names_its_status():
    row = Row(holding_claim(), "random-dense")
    assert row.status == "no cases"
    row.record(True, 0.5, "first", 1.0)
    row.record(True, 0.25, "second", 2.0)
    assert (row.cases, row.held, row.worst_margin, row.worst_detail, row.seconds) == (2, 2, 0.25, "second", 3.0)
    assert row.status == "held" and not row.surprise
    row.record(False, -1.0, "third", 0.0)
    assert row.status == ("VIOLATED" if row.asserted else "fails") and row.surprise


def test_the_saved_state_round_trips():
    row = Row(holding_claim(), "random-sparse")
    row.record(False, -2.0, "bad", 0.5)
    row.violation = {"size": 3, "case": 0}
    again = Row.from_state(row.to_state(), CLAIMS)
    assert again.to_state() == row.to_state() and again.claim is row.claim
    fresh = Row(holding_claim(), "random-sparse").to_json()
    assert fresh["worst_margin"] is None and fresh["status"] == "no cases"
    assert math.isinf(Row.from_state(Row(holding_claim(), "random-dense").to_state(), CLAIMS).worst_margin)


def test_a_case_round_trips_with_a_named_or_a_matrix_ground():
    mdp = example("chain")
    for ground in ("policy", np.ones((mdp.n_states * mdp.n_actions,) * 2)):
        back = case_from_dict(case_dict(Case(mdp, ground)))
        assert back.mdp.to_dict() == mdp.to_dict()
        assert np.array_equal(np.asarray(back.ground, dtype=object), np.asarray(ground, dtype=object))


OUTCOMES = st.lists(
    st.tuples(st.booleans(), st.sampled_from([-2.0, -1.0, 0.0, 0.5, math.inf]), st.integers(2, 5)), max_size=8
)


@given(OUTCOMES, st.integers(0, 8))
def test_merging_a_row_split_anywhere_gives_the_row_of_all_cases(outcomes, cut):
    """Row.merge after record() over the first cases equals record() over all of them."""
    claim = CLAIMS[0]

    def row_of(part, offset):
        row = Row(claim, "random-dense")
        for k, (held, margin, size) in enumerate(part, offset):
            row.record(held, margin, f"case {k}", 0.0)
            if not held and (row.violation is None or size < row.violation["size"]):
                row.violation = {"size": size, "case": k}
        return row

    whole, first = row_of(outcomes, 0), row_of(outcomes[:cut], 0)
    first.merge(row_of(outcomes[cut:], min(cut, len(outcomes))))
    assert first.to_state() == whole.to_state()
