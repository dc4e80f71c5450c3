"""Property tests: every claim of docs/claims.md on hypothesis-generated MDPs.

Claims the evidence refutes are tested as refuted, on a known counterexample.
"""

import numpy as np
from hypothesis import given

from bisimkit import example
from validation.claims import (
    FixedPoints,
    c5_hypotheses,
    check_c1,
    check_c2,
    check_c2_literal,
    check_c3,
    check_c4,
    check_c4_literal,
    check_c5,
    check_c6,
    check_c7,
    check_c7_pair,
    check_c8,
    check_c9,
    check_c10_avg_ge_eps,
    check_c10_eps_ge_avg,
)
from validation.families import Case, monotone_product_cases
from validation.strategies import (
    finite_mdps,
    histogram_pairs,
    non_interchangeable_mdps,
    planted_mdps,
    product_grid_mdps,
)


def fp_of(mdp, ground="reward"):
    return FixedPoints(Case(mdp, ground))


@given(finite_mdps(max_states=5))
def test_c1_fixed_points_are_pseudometrics(mdp):
    out = check_c1(fp_of(mdp))
    assert out.held, out.detail


@given(planted_mdps())
def test_c2_zero_sets_equal_relations(pair):
    mdp, origin = pair
    out = check_c2(FixedPoints(Case(mdp, origin=origin)))
    assert out.held, out.detail


@given(finite_mdps(max_states=5, max_support=2))
def test_c3_eps_dominates_pi_and_psm(mdp):
    out = check_c3(fp_of(mdp))
    assert out.held, out.detail


@given(finite_mdps(max_states=5))
def test_c4_upper_bound_and_literal_zero_set(mdp):
    fp = fp_of(mdp)
    bar, eps = fp.d("eps-bar"), fp.d("eps")
    assert np.all(bar >= eps - 1e-8) and np.allclose(np.diag(bar), 0)
    assert check_c4_literal(fp).held


def test_c4_class_mass_reading_fails_on_coupling_order():
    fp = fp_of(example("coupling-order"))
    out = check_c4(fp)
    assert not out.held and abs(out.margin + 9.0) < 1e-8  # d_eps-bar(0, 5) = 9 on an E_eps pair
    assert check_c2(fp).held and not check_c2_literal(fp).held  # the readings trade C2 for C4


@given(monotone_product_cases())
def test_c5_tight_when_hypotheses_hold(case):
    fp = FixedPoints(case)
    ok, why = c5_hypotheses(fp)
    assert ok, why
    assert check_c5(fp).held


def test_c5_gap_when_coordinates_are_correlated():
    from validation.families import monotone_product_case

    rng = np.random.default_rng(0)
    gaps = [check_c5(FixedPoints(monotone_product_case(rng, correlated=True))).margin for _ in range(5)]
    assert min(gaps) < -1e-3  # a strict gap d_eps-bar > d_eps


@given(product_grid_mdps())
def test_c6_entangled_samples_vanish_at_identical_states(mdp):
    out = check_c6(fp_of(mdp))
    assert out.held, out.detail


@given(histogram_pairs())
def test_c7_few_cells(pair):
    p, q = pair
    assert check_c7_pair(p, q).held


@given(non_interchangeable_mdps())
def test_c7_on_mdps(mdp):
    assert check_c7(fp_of(mdp)).held


@given(finite_mdps(max_states=4, max_actions=3, policy="stochastic"))
def test_c8_sampled_operators_lose_self_similarity(mdp):
    out = check_c8(fp_of(mdp))
    assert out.held, out.detail


@given(finite_mdps(max_states=5))
def test_c9_jensen(mdp):
    out = check_c9(fp_of(mdp))
    assert out.held, out.detail


@given(finite_mdps(max_states=5))
def test_c10_eps_dominates_eps_avg(mdp):
    assert check_c10_eps_ge_avg(fp_of(mdp)).held


def test_c10_reverse_ordering_fails():
    from bisimkit import mdp_from_dict

    mdp = mdp_from_dict(
        {  # the 3-state counterexample hypothesis shrank to
            "transitions": [[[0, 0, 1], [1, 0, 0]], [[0, 1, 0], [1, 0, 0]], [[0, 1, 0], [0.5, 0.5, 0]]],
            "rewards": [[0, 0], [0, 0], [0.5, 0]],
            "policy": [[1 / 3, 2 / 3], [0.5, 0.5], [0.25, 0.75]],
            "discount": 0.8,
        }
    )
    out = check_c10_avg_ge_eps(fp_of(mdp))
    assert not out.held and out.margin < -1e-3


def test_c1_checks_exactly_the_operators_the_solvers_treat_as_pseudometrics():
    """The solvers store only s < t (zero diagonal) for operators flagged pseudometric; C1 checks the
    paper's list, so the two must name the same operators (the labelled-chain distance, a pseudometric on
    labelled chains solved by its own algorithm, is outside the paper's MDPs)."""
    from bisimkit.operators import LABELLED_CHAIN_METRICS, OPERATORS
    from validation.claims import PSEUDOMETRIC_METRICS

    assert set(PSEUDOMETRIC_METRICS) == {
        name for name, info in OPERATORS.items() if info.pseudometric and name not in LABELLED_CHAIN_METRICS
    }
