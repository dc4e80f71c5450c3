"""The computable forms of the operators: one application, the evaluation's value and its error bound, the
pair system of fixed couplings as a sparse matrix."""

from __future__ import annotations

import numpy as np
import pytest

from bisimkit import example
from bisimkit.forms import PairLinearForm, SteinForm, csr_from_triplets, physical_memory
from bisimkit.operators import operator_form
from bisimkit.pairs import PairSpace


def test_one_stein_application_by_hand():
    P = np.array([[0.5, 0.5], [0.0, 1.0]])
    form = SteinForm(np.array([[0.0, 1.0], [1.0, 0.0]]), P, 0.5)
    D = np.array([[0.0, 2.0], [2.0, 0.0]])
    # P D P^T = [[1, 1], [1, 0]]
    assert np.array_equal(form.apply(D), [[0.5, 1.5], [1.5, 0.0]])
    ev = form.evaluate(D)
    assert np.array_equal(ev.value, form.apply(D)) and ev.at is D and 0 < ev.error < 1e-14


def test_stein_between_two_mdps_uses_the_right_factor():
    form = SteinForm(np.zeros((1, 2)), np.ones((1, 1)), 0.5, Q=np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert np.array_equal(form.apply(np.array([[2.0, 4.0]])), [[2.0, 1.0]])


def test_a_pair_linear_form_applies_b_plus_c_t_x():
    pairs = PairSpace(3, diagonal=False)
    T = csr_from_triplets(np.array([0, 0, 2]), np.array([1, 2, 0]), np.array([0.5, 0.25, 1.0]), 3)
    form = PairLinearForm(pairs, np.array([1.0, 0.0, 2.0]), T, 0.5)
    x = np.array([4.0, 8.0, 16.0])
    assert np.array_equal(form.apply(x), [1 + 0.5 * (4 + 4), 0.0, 2 + 0.5 * 4])
    assert form.evaluate(x).error > 0


def test_duplicate_triplets_add_up_in_the_product():
    T = csr_from_triplets(np.array([1, 0, 1]), np.array([0, 1, 0]), np.array([1.0, 2.0, 3.0]), 2)
    assert T.toarray().tolist() == [[0.0, 2.0], [4.0, 0.0]]


@pytest.mark.parametrize("metric", ["mico", "eps-bar", "pi"])
def test_each_kind_of_form_evaluates_to_its_application(metric):
    form = operator_form(example("chain"), metric)
    x = np.random.default_rng(0).random(form.A.shape if isinstance(form, SteinForm) else len(form.pairs))
    ev = form.evaluate(x)
    assert np.allclose(ev.value, form.apply(x), rtol=0, atol=ev.error + 1e-12)
    assert ev.error > 0 and ev.value.shape == x.shape


def test_physical_memory_is_a_positive_byte_count():
    assert physical_memory() > 2**20


def test_the_line_seed_starts_problems_with_three_or_more_atoms_only():
    from bisimkit.forms import LINE_SEED_MIN_ATOMS
    from bisimkit.generators import random_mdp

    for support, seeded in ((LINE_SEED_MIN_ATOMS - 1, False), (LINE_SEED_MIN_ATOMS + 1, True)):
        mdp = random_mdp(12, 1, seed=3, max_support=support)  # one action: the pi rows are the transition rows
        terms = operator_form(mdp, "pi")
        assert (terms._widest() >= LINE_SEED_MIN_ATOMS) == seeded
        x = terms.combine(terms.row_const)
        terms.seed_line(terms.pairs.to_matrix(x))  # F(0) of pi: a line metric, |R(s) - R(t)|
        bases = terms.warm._bases
        assert (bases is not None and bases[1].any()) == seeded
