"""The families of test MDPs of ``bisimkit verify``: seeded cases, the separable ground, factored grids."""

import numpy as np
import pytest

from bisimkit.mdp import coordinate_independent
from validation.families import (
    FAMILIES,
    GENERAL_FAMILIES,
    Case,
    example_cases,
    factored_grid_case,
    monotone_product_case,
    separable_ground,
)


def test_the_separable_ground_by_hand():
    # a 2 x 1 grid, one action: G = w |f(z) - f(z')| on the first coordinate
    G = separable_ground((2, 1), 1, [np.array([0.0, 3.0]), np.array([0.0])], np.array([2.0, 1.0]))
    assert G.tolist() == [[0.0, 6.0], [6.0, 0.0]]
    assert separable_ground((2, 1), 2, [np.array([0.0, 1.0]), np.array([0.0])], np.ones(2)).shape == (4, 4)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_seed_draws_the_same_case(name):
    a = FAMILIES[name].make(np.random.default_rng(3))
    b = FAMILIES[name].make(np.random.default_rng(3))
    assert isinstance(a, Case) and a.mdp.to_dict() == b.mdp.to_dict()


def test_planted_cases_know_their_blocks_and_grids_their_independence():
    case = FAMILIES["planted"].make(np.random.default_rng(0))
    assert case.origin is not None and len(case.origin) == case.mdp.n_states
    assert coordinate_independent(monotone_product_case(np.random.default_rng(1)).mdp)
    assert set(GENERAL_FAMILIES) <= set(FAMILIES)


def test_a_factored_grid_moves_each_coordinate_by_its_kernel():
    stay = np.eye(2)[None]  # one action: each coordinate stays
    case = factored_grid_case(
        (2, 2), 1, 0.9, np.ones(1), [stay, stay], [np.array([0.0, 1.0])] * 2, np.ones(2), note="still"
    )
    assert np.array_equal(case.mdp.transitions[:, 0], np.eye(4))
    assert case.mdp.rewards[:, 0].tolist() == [0.0, 1.0, 1.0, 2.0] and case.label.endswith("(still)")


def test_the_example_cases_have_policies():
    cases = example_cases()
    assert cases and all(case.mdp.policy is not None for case in cases)
