"""The claim checks catch broken operators: injected faults must turn claims red."""

import numpy as np

import bisimkit.operators as ops
from bisimkit.couplings import independent_cells
from validation.claims import FixedPoints, check_c1, check_c4, check_c5, check_c6
from validation.families import FAMILIES

CASES = [FAMILIES["random-sparse"].make(np.random.default_rng(k)) for k in range(3)]
TIGHT = [FAMILIES["monotone-product"].make(np.random.default_rng(k)) for k in range(3)]


def held(check, cases):
    return all(check(FixedPoints(c)).held for c in cases)


def test_checks_pass_without_faults():
    assert held(check_c1, CASES) and held(check_c4, CASES) and held(check_c5, TIGHT)


def test_wrong_action_coupling_turns_c1_red(monkeypatch):
    """The eps operators couple actions independently instead of entangled."""

    def independent_action_cells(a, s, b=None, t=None):
        import scipy.sparse as sp

        if t is None:  # action_cells(mdp, s, t)
            b, t = a, b
        return independent_cells(sp.csr_matrix(a.policy), s, sp.csr_matrix(b.policy), t)

    monkeypatch.setattr(ops, "action_cells", independent_action_cells)
    # The solvers store only s < t; the diagonal check against the operator exposes it.
    assert not held(check_c1, CASES)


def product_instead_of_staircase(xptr, xidx, bx, src, yptr, yidx, by, dst):
    """A broken kernel: the product of the two laws instead of their north-west corner."""
    from bisimkit.couplings import Cells

    parts = []
    for k, (r, s) in enumerate(zip(src, dst)):
        a, b = slice(xptr[r], xptr[r + 1]), slice(yptr[s], yptr[s + 1])
        p, q = np.diff(bx[a], prepend=0.0), np.diff(by[b], prepend=0.0)
        i, j = np.meshgrid(np.arange(len(p)), np.arange(len(q)), indexing="ij")
        mass = np.outer(p, q)
        keep = mass.ravel() > 0
        parts.append(
            Cells(np.full(int(keep.sum()), k), xidx[a][i.ravel()[keep]], yidx[b][j.ravel()[keep]], mass.ravel()[keep])
        )
    return Cells.concat(parts)


def test_broken_coupling_kernel_turns_c6_and_c1_red(monkeypatch):
    """The library's entangled-coupling kernel is patched: the checks use it, not a copy of their own."""
    import bisimkit.couplings as couplings

    monkeypatch.setattr(couplings, "merge_rows", product_instead_of_staircase)
    assert not held(check_c6, CASES)
    assert not held(check_c1, CASES)


def test_dropped_discount_in_eps_bar_turns_c5_red(monkeypatch):
    """eps-bar's next-state term loses its factor c: F(d) = b + T d."""
    real = ops.eps_bar_form

    def dropped(mdp, ground="reward", pairs=None, other=None):
        form = real(mdp, ground, pairs, other)
        form.T = form.T / mdp.discount
        return form

    monkeypatch.setattr(ops, "eps_bar_form", dropped)
    assert not held(check_c5, TIGHT)
