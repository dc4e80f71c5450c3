"""One entangled coupling, whichever path computes it.

Every entangled coupling in bisimkit comes from one compiled kernel
(:func:`bisimkit.couplings.merge_breakpoints`). Two things around it have a
second path kept for speed, and these property tests require both paths to give
*identical* results (not merely close) on random MDPs, 1-D and grid state
spaces, every ground metric:

* eps-bar's matrix: from cells and numpy assembly (small problems) or assembled
  pair by pair in compiled code (from ``COMPILED_EPS_BAR_PAIRS`` pairs on);
* the pair system of fixed couplings: numpy, or compiled from
  ``COMPILED_PAIR_SYSTEM_CELLS`` cells on.

The losses' reparametrised samplers read the same breakpoints, so a shared
uniform draws exactly the coupling computed here.
"""

from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bisimkit.forms as forms
import bisimkit.kernels as kernels
import bisimkit.operators as ops
from bisimkit.couplings import dense_breakpoints, entangled_coupling
from bisimkit.generators import product_grid_mdp, random_mdp
from bisimkit.mdp import FiniteMDP
from bisimkit.operators import apply_operator, diagonal_values, eps_bar_form
from bisimkit.solvers import solve
from validation.strategies import finite_mdps, histogram_pairs, product_grid_mdps

NEVER = 10**12


@contextmanager
def assembly(compiled: bool):
    """Force the compiled (or the numpy) assembly paths, whatever the problem size (the sparse systems
    both build; the small-problem path of bisimkit.kernels, dense, is held to the certificates instead)."""
    size = 0 if compiled else NEVER
    with (
        mock.patch.object(ops, "COMPILED_EPS_BAR_PAIRS", size),
        mock.patch.object(forms, "COMPILED_PAIR_SYSTEM_CELLS", size),
        mock.patch.object(kernels, "SMALL_PROBLEM_CELLS", -1),
    ):
        yield


def user_ground(mdp: FiniteMDP, seed: int) -> np.ndarray:
    """A random pseudometric on state-action pairs (L1 between random points)."""
    x = np.random.default_rng(seed).normal(size=(mdp.n_states * mdp.n_actions, 2))
    return np.abs(x[:, None, :] - x[None, :, :]).sum(axis=2)


def as_1d_shape(mdp: FiniteMDP) -> FiniteMDP:
    return FiniteMDP(mdp.transitions, mdp.rewards, mdp.discount, mdp.policy, state_shape=(mdp.n_states,))


def same_csr(A, B) -> bool:
    return (
        np.array_equal(A.indptr, B.indptr) and np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data)
    )


def every_entry_point(mdp: FiniteMDP, ground) -> dict:
    """eps-bar through every public entry point that builds it."""
    rng = np.random.default_rng(0)
    d = rng.random((mdp.n_states, mdp.n_states))
    d = d + d.T
    form = eps_bar_form(mdp, ground)
    sol = solve(mdp, "eps-bar", ground=ground, tol=1e-10)
    return {
        "b": form.b,
        "T": form.T,
        "distances": sol.distances,
        "iterations": sol.iterations,
        "apply": apply_operator(mdp, "eps-bar", d, ground),
        "diagonal": diagonal_values(mdp, "eps-bar", d - np.diag(np.diag(d)), ground),
        "eps": solve(mdp, "eps", ground=ground, tol=1e-10).distances,
    }


def assert_identical(a: dict, b: dict) -> None:
    for key in a:
        if key == "T":
            assert same_csr(a[key].tocsr(), b[key].tocsr()), key
        else:
            assert np.array_equal(a[key], b[key]), key


mdps = st.one_of(
    finite_mdps(max_states=6, max_actions=3),
    finite_mdps(max_states=6, max_actions=3).map(as_1d_shape),
    product_grid_mdps(max_side=3, coordinate_independent=False),
    product_grid_mdps(max_side=3, coordinate_independent=True),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mdps, st.sampled_from(["reward", "policy", "user"]), st.integers(0, 2**16))
def test_compiled_and_numpy_assembly_are_identical(mdp, ground, seed):
    g = user_ground(mdp, seed) if ground == "user" else ground
    with assembly(compiled=False):
        slow = every_entry_point(mdp, g)
    with assembly(compiled=True):
        fast = every_entry_point(mdp, g)
    assert_identical(slow, fast)


@pytest.mark.parametrize(
    "make",
    [
        lambda: random_mdp(12, 3, seed=5, discount=0.9, max_support=4),
        lambda: random_mdp(9, 2, seed=1, discount=0.8),
        lambda: product_grid_mdp((2, 2, 3), 2, seed=3),
    ],
)
def test_real_valued_mdps_take_the_same_path_either_way(make):
    """Real-valued masses (breakpoint crumbs included) and a 3-D grid."""
    mdp = make()
    for ground in ("reward", "policy", user_ground(mdp, 7)):
        with assembly(compiled=False):
            slow = every_entry_point(mdp, ground)
        with assembly(compiled=True):
            fast = every_entry_point(mdp, ground)
        assert_identical(slow, fast)


@pytest.mark.parametrize("compiled", [False, True])
def test_the_forced_path_is_the_one_taken(compiled):
    mdp = random_mdp(6, 2, seed=0, max_support=3)
    with assembly(compiled), mock.patch.object(ops, "eps_bar_matrix", wraps=ops.eps_bar_matrix) as builder:
        eps_bar_form(mdp)
    assert builder.called == compiled


@settings(max_examples=200, deadline=None)
@given(histogram_pairs(max_atoms=8))
def test_a_shared_uniform_through_the_samplers_breakpoints_draws_the_coupling(pq):
    """Integrate (F_p^-1(u), F_q^-1(u)) over u exactly: between consecutive merged
    breakpoints both quantile indices are constant, so evaluate them at the midpoint."""
    torch = pytest.importorskip("torch")
    from bisimkit.losses import inverse_cdf

    p, q = pq
    cuts = np.unique(np.concatenate([[0.0], dense_breakpoints(p), dense_breakpoints(q)]))
    mid = torch.tensor((cuts[:-1] + cuts[1:]) / 2)
    rows = len(mid)
    i = inverse_cdf(torch.tensor(np.tile(p, (rows, 1))), mid).numpy()
    j = inverse_cdf(torch.tensor(np.tile(q, (rows, 1))), mid).numpy()
    law = np.zeros((len(p), len(q)))
    np.add.at(law, (i, j), np.diff(cuts))
    np.testing.assert_allclose(law, entangled_coupling(p, q), atol=1e-15)
