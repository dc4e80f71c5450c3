"""What a ``bisimkit verify`` run checks: the claims and families chosen, the user's MDPs as family ``user``,
the run's key and the state it resumes from."""

import pytest

from bisimkit import example
from bisimkit.errors import InputError
from validation import learning, verify as V
from validation.claims import CLAIMS
from validation.verify_plan import (
    DEFAULT_CASES,
    QUICK_CASES,
    USER_FAMILY,
    load_state,
    plan_run,
    save_state,
    select_claims,
    user_case,
    user_claims,
)


def test_unknown_claims_are_refused_in_one_line():
    with pytest.raises(InputError, match=r"^claims: unknown claim 'C99' \(choose from C1, "):
        select_claims(["C99"])
    assert [c.id for c in select_claims(["C1"])] and {c.id for c in select_claims(["C1"])} == {"C1"}


def test_the_cases_default_per_run_and_must_be_positive(tmp_path):
    assert plan_run(tmp_path, None, 0, ["C1"], quick=True).cases == QUICK_CASES
    assert plan_run(tmp_path, None, 0, ["C1"], quick=False).cases == DEFAULT_CASES
    with pytest.raises(InputError, match=r"^cases: must be at least 1, got 0$"):
        plan_run(tmp_path, 0, 0, ["C1"], quick=True)


def test_the_families_are_those_of_the_chosen_claims(tmp_path):
    plan = plan_run(tmp_path, 2, 0, ["C1"], quick=True)
    assert set(plan.families) == {f for c in plan.claims for f in c.families}
    assert plan.loss_ids == []


def test_user_mdps_get_the_claims_that_apply_to_any_mdp(tmp_path):
    source, case = user_case("chain.json", example("chain"), "policy")
    plan = plan_run(tmp_path, None, 0, None, quick=True, mdps=[(source, case)])
    assert plan.families == [USER_FAMILY] and plan.cases == 1 and plan.loss_ids == []
    assert all(c.families == (USER_FAMILY,) for c in plan.claims)
    assert {c.id for c in plan.claims} == {c.id for c in user_claims(CLAIMS)}
    assert plan.config["mdps"] == ["chain.json"] and len(plan.config["mdps_sha256"]) == 16
    with pytest.raises(InputError, match=r"^cases: applies to the generated families only"):
        plan_run(tmp_path, 3, 0, None, quick=True, mdps=[(source, case)])
    with pytest.raises(InputError, match=r"^claims: L1: the loss checks train on their own MDPs"):
        plan_run(tmp_path, None, 0, ["L1"], quick=True, mdps=[(source, case)])
    with pytest.raises(InputError, match=r"^mdp: rooms: has no policy"):
        user_case("rooms", example("mirrored-rooms"))


def test_a_state_is_resumed_only_under_its_key(tmp_path):
    plan = plan_run(tmp_path / "run", 2, 0, ["C1"], quick=True)
    state = load_state(plan, resume=True)
    assert state == {"key": plan.key, "families": {}}
    state["families"]["random-dense"] = {"done": True}
    save_state(plan, state)
    assert load_state(plan, resume=True) == state and load_state(plan, resume=False)["families"] == {}
    other = plan_run(tmp_path / "run", 2, 1, ["C1"], quick=True)  # another seed: another key
    assert other.key != plan.key and load_state(other, resume=True)["families"] == {}


def test_claim_selection_knows_the_loss_ids():
    assert V.select_losses(None) == learning.loss_ids() == ["L1", "L2", "L3", "L4", "L5", "L6"]
    assert V.select_losses(["C1", "L2"]) == ["L2"] and V.select_claims(["L2"]) == []
    assert V.select_losses(["C1"]) == []
