"""The claim checks catch broken operators: injected faults must turn claims red."""

import numpy as np
import pytest

import bisimkit.operators as ops
from bisimkit.couplings import independent_cells
from validation.claims import FixedPoints, check_c1, check_c4, check_c5, check_c6
from validation.families import FAMILIES, Case

CASES = [FAMILIES["random-sparse"].make(np.random.default_rng(k)) for k in range(3)]
TIGHT = [FAMILIES["monotone-product"].make(np.random.default_rng(k)) for k in range(3)]


def held(check, cases):
    return all(check(FixedPoints(c)).held for c in cases)


def test_checks_pass_without_faults():
    assert held(check_c1, CASES) and held(check_c4, CASES) and held(check_c5, TIGHT)


def test_wrong_action_coupling_turns_c1_red(monkeypatch):
    """The eps operators couple actions independently instead of entangled."""
    def independent_policy_cells(mdp, pairs):
        import scipy.sparse as sp

        pi = sp.csr_matrix(mdp.policy)
        return independent_cells(pi, pairs.s, pi, pairs.t)

    monkeypatch.setattr(ops, "policy_cells", independent_policy_cells)
    # The solvers store only s < t; the diagonal check against the operator exposes it.
    assert not held(check_c1, CASES)


def test_wrong_sample_coupling_turns_c6_red(monkeypatch):
    import validation.claims as claims

    monkeypatch.setattr(claims, "entangled_cells", lambda X, s, Y, t, shape=None: independent_cells(X, s, Y, t))
    assert not held(check_c6, CASES)


def test_dropped_discount_in_eps_bar_turns_c5_red(monkeypatch):
    """eps-bar's next-state term loses its factor c: F(d) = b + T d."""
    real = ops.eps_bar_form

    def dropped(mdp, ground="reward", pairs=None):
        form = real(mdp, ground, pairs)
        form.T = form.T / mdp.discount
        return form

    monkeypatch.setattr(ops, "eps_bar_form", dropped)
    assert not held(check_c5, TIGHT)
