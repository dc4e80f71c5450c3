"""The compiled kernels (``bisimkit_native``) against their Python bodies: the same outputs, bit for bit.

Each check runs a kernel twice on copies of the same arguments, once compiled and once as the Python
function it is written as (``bisimkit.kernels.interpreted``), and compares every argument afterwards
(outputs are written in place) and the return values byte for byte: random inputs and the edge cases
(empty problems, one atom, ties, degenerate plans, warm starts good and bad, float32 data).
"""

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import bisimkit.kernels as kernels
from bisimkit import compiled, couplings, lmc, quotient, relations, roundoff, simplex
from bisimkit.kernels import Kernel, NativeKernelWarning, interpreted

ROOT = Path(__file__).resolve().parent.parent
MODULES = (simplex, couplings, compiled, relations, roundoff, lmc, quotient)


def same(x, y) -> bool:
    """Equal bit for bit: arrays (dtype, shape and bytes), tuples, scalars (a numpy scalar as the Python one
    of its kind; NaN equal to NaN)."""
    x, y = (v.item() if isinstance(v, np.generic) else v for v in (x, y))
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        x, y = np.asarray(x), np.asarray(y)
        return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    if isinstance(x, tuple):
        return type(x) is type(y) and len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    if isinstance(x, float) or isinstance(y, float):
        return np.float64(x).tobytes() == np.float64(y).tobytes()
    return type(x) is type(y) and x == y


def both(kern: Kernel, *args):
    """``kern(*args)`` compiled and as Python, each on its own copy of ``args``; asserts that the results
    and every argument afterwards are the same bits, and returns the compiled run's (result, args)."""
    assert kern.native is not None, f"{kern} has no compiled twin"
    ran, ref = copy.deepcopy(args), copy.deepcopy(args)
    out = kern(*ran)
    with interpreted():
        expected = kern(*ref)
    assert same(out, expected), (kern, out, expected)
    for x, (a, b) in enumerate(zip(ran, ref)):
        assert same(a, b), (kern, f"argument {x}", a, b)
    return out, ran


def every_kernel():
    return [
        (m.__name__, name, value)
        for m in MODULES
        for name, value in vars(m).items()
        if isinstance(value, Kernel) and value.__module__ == m.__name__
    ]


# ------------------------------------------------------------------------------------------ inventory
def test_every_kernel_has_its_compiled_twin_and_no_other_exists():
    import bisimkit_native

    found = {(module.rsplit(".", 1)[1], kern.__name__) for module, _, kern in every_kernel()}
    assert len(found) == len(every_kernel()) >= 36
    for module, name in found:
        assert callable(getattr(getattr(bisimkit_native, module), name)), (module, name)
    compiled_names = {
        (group, name)
        for group in ("simplex", "couplings", "compiled", "relations", "roundoff", "lmc", "quotient")
        for name in dir(getattr(bisimkit_native, group))
        if not name.startswith("__") and callable(getattr(getattr(bisimkit_native, group), name))
    }
    assert compiled_names == found


def test_the_compiled_constants_are_the_python_ones():
    import bisimkit_native

    constants = dict(bisimkit_native.simplex.CONSTANTS)
    assert np.dtype(simplex.BASIS_DTYPE) == np.int16 and constants.pop("BASIS_BITS") == 16
    for name, value in constants.items():
        assert getattr(simplex, name) == value, name


# ------------------------------------------------------------------------------------------ simplex
def padded_batch(rng, P, K, L, sizes=None, cost=None, masses="dirichlet"):
    """A padded batch: problem p has k[p] <= K rows and l[p] <= L columns."""
    k = rng.integers(1, K + 1, P) if sizes is None else np.asarray(sizes[0])
    l = rng.integers(1, L + 1, P) if sizes is None else np.asarray(sizes[1])
    a, b = np.zeros((P, K)), np.zeros((P, L))
    for p in range(P):
        if masses == "dirichlet":
            a[p, : k[p]] = rng.dirichlet(np.ones(k[p])) if k[p] else 0
            b[p, : l[p]] = rng.dirichlet(np.ones(l[p])) if l[p] else 0
        else:  # equal masses: degenerate plans (partial sums of rows meet those of columns)
            a[p, : k[p]] = 1.0 / max(k[p], 1)
            b[p, : l[p]] = 1.0 / max(l[p], 1)
    C = rng.random((P, K, L)) if cost is None else cost(rng, (P, K, L))
    return a, b, C, k.astype(np.int64), l.astype(np.int64)


def solve_batch_args(a, b, C, k, l, basis=None, warm=None):
    off = simplex.basis_offsets(k, l)
    P = len(k)
    basis = np.zeros((int(off[-1]), 2), dtype=simplex.BASIS_DTYPE) if basis is None else basis
    warm = np.zeros(P, dtype=np.bool_) if warm is None else warm
    nmax, dmax, _ = simplex._sizes(k, l)
    return (
        np.ascontiguousarray(a),
        np.ascontiguousarray(b),
        np.ascontiguousarray(C),
        k,
        l,
        np.zeros_like(C),
        np.zeros(P),
        np.zeros(P),
        np.zeros(P, dtype=np.bool_),
        np.zeros(P, dtype=np.int64),
        basis,
        off,
        warm,
        nmax,
        dmax,
    )


COSTS = {
    "random": lambda rng, shape: rng.random(shape),
    "ties": lambda rng, shape: rng.integers(0, 3, shape).astype(float),  # many equal costs: tie-breaking
    "zero": lambda rng, shape: np.zeros(shape),
    "line": lambda rng, shape: np.abs(np.arange(shape[1])[:, None] - np.arange(shape[2])[None, :]) * np.ones(shape),
}


@pytest.mark.parametrize("costs", sorted(COSTS))
@pytest.mark.parametrize("masses", ["dirichlet", "equal"])
def test_batch_solves_cold_then_warm(costs, masses):
    rng = np.random.default_rng(len(costs) * 7 + len(masses))
    a, b, C, k, l = padded_batch(rng, 300, 7, 6, cost=COSTS[costs], masses=masses)
    for kern in (simplex._solve_batch, simplex._solve_batch_serial):
        _, cold = both(kern, *solve_batch_args(a, b, C, k, l))
        assert cold[8].all()  # solved
        basis = cold[10]
        # Warm: the same marginals, costs moved (the previous round's basis, nearly optimal).
        C2 = C + COSTS[costs](rng, C.shape) * 0.3
        _, warm = both(kern, *solve_batch_args(a, b, C2, k, l, basis.copy(), np.ones(len(k), dtype=np.bool_)))
        assert warm[8].all()


def test_one_atom_sides_and_empty_problems():
    rng = np.random.default_rng(1)
    sizes = ([1, 1, 5, 0, 0, 3, 1], [1, 4, 1, 0, 2, 0, 1])
    a, b, C, k, l = padded_batch(rng, 7, 5, 4, sizes=sizes)
    _, out = both(simplex._solve_batch_serial, *solve_batch_args(a, b, C, k, l))
    assert list(out[8]) == [True, True, True, False, False, False, True]  # no start for an empty side


def test_bad_warm_bases_fall_back_the_same_way():
    rng = np.random.default_rng(2)
    a, b, C, k, l = padded_batch(rng, 40, 6, 6, sizes=([5] * 40, [5] * 40))
    off = simplex.basis_offsets(k, l)
    _, cold = both(simplex._solve_batch_serial, *solve_batch_args(a, b, C, k, l))
    basis = cold[10].copy()
    bad = basis.copy()
    bad[off[0] : off[1]] = [[0, 0], [0, 0], [1, 1], [1, 1], [2, 2], [2, 2], [3, 3], [3, 3], [4, 4]]  # not a tree
    bad[off[1]] = [7, 0]  # a row out of range
    bad[off[2] : off[3]] = basis[off[2] : off[3]][::-1]  # the same tree, cells in another order
    bad[off[3] : off[4], 0] = basis[off[3] : off[4], 1]  # rows and columns swapped: infeasible or no tree
    bad[off[3] : off[4], 1] = basis[off[3] : off[4], 0]
    bad[off[4]] = [-1, 2]  # a negative row
    warm = np.ones(40, dtype=np.bool_)
    for kern in (simplex._solve_batch, simplex._solve_batch_serial):
        both(kern, *solve_batch_args(a, b, C, k, l, bad.copy(), warm.copy()))


def test_warm_bases_with_negative_flows_restart_cold():
    rng = np.random.default_rng(3)
    a, b, C, k, l = padded_batch(rng, 30, 4, 4, sizes=([4] * 30, [4] * 30))
    _, cold = both(simplex._solve_batch_serial, *solve_batch_args(a, b, C, k, l))
    a2, b2, _, _, _ = padded_batch(rng, 30, 4, 4, sizes=([4] * 30, [4] * 30))  # other marginals: tree infeasible
    both(simplex._solve_batch_serial, *solve_batch_args(a2, b2, C, k, l, cold[10].copy(), np.ones(30, np.bool_)))


def rows_problems(rng, n=12, rows=40, P=200, K=5, index_type=np.int32):
    """CSR rows of up to K atoms over n states (some repeated, so some problems are identical histograms, and
    one empty), the problems' rows, a symmetric ground with zero diagonal and the slots' offsets."""
    dense = np.zeros((rows, n))
    for r in range(1, rows):
        atoms = np.sort(rng.choice(n, rng.integers(1, K + 1), replace=False))
        dense[r, atoms] = rng.dirichlet(np.ones(len(atoms))).round(2)
        dense[r, atoms[-1]] += 1.0 - dense[r].sum()
    dense[rows // 2] = dense[rows // 2 + 1]
    X = sp.csr_matrix(dense)
    X.indptr, X.indices = X.indptr.astype(index_type), X.indices.astype(index_type)
    src, dst = rng.integers(0, rows, P), rng.integers(0, rows, P)
    dst[:10] = src[:10]
    D = rng.random((n, n)).round(1)
    D = D + D.T
    np.fill_diagonal(D, 0.0)
    slots = np.maximum(np.diff(X.indptr)[src] + np.diff(X.indptr)[dst] - 1, 0)
    off = np.concatenate([[0], np.cumsum(slots)]).astype(np.int64)
    return X, src.astype(np.int64), dst.astype(np.int64), D, off


def rows_args(X, src, dst, D, off, out_type, zero_diagonal=True, kernel_max=4):
    P, total = len(src), int(off[-1])
    return [
        D,
        X.indptr,
        X.indices,
        X.data,
        src,
        X.indptr,
        X.indices,
        X.data,
        dst,
        zero_diagonal,
        kernel_max,
        off,
        np.zeros((total, 2), simplex.BASIS_DTYPE),
        np.zeros(P, np.bool_),
        np.zeros(P, np.bool_),
        np.zeros(P),
        np.zeros(P),
        np.zeros(P, np.int8),
        np.zeros(total, out_type),
        np.zeros(total, out_type),
        np.zeros(total),
    ]


def test_solve_rows_reads_the_csr_rows_and_writes_plans():
    rng = np.random.default_rng(4)
    for index_type in (np.int32, np.int64):
        X, src, dst, D, off = rows_problems(rng, index_type=index_type)
        for out_type in (np.int32, np.int64):
            for zero_diagonal in (True, False):
                for kern in (simplex._solve_rows, simplex._solve_rows_serial):
                    args = rows_args(X, src, dst, D, off, out_type, zero_diagonal)
                    _, first = both(kern, *args, 10, 5, 25)
                    state = first[17]
                    assert {simplex.ROW_SOLVED, simplex.ROW_EXACT, simplex.ROW_LEFT} <= set(state.tolist())
                    again = list(first)  # its arguments after the call, the sizes included
                    again[0] = D * 1.1 + 0.01  # warm: the bases and warm flags of the first round
                    both(kern, *again)


def test_kept_flows_give_the_results_of_a_start_that_peels_them_again():
    rng = np.random.default_rng(11)
    X, src, dst, D, off = rows_problems(rng, n=8, P=400)
    for kern in (simplex._solve_rows, simplex._solve_rows_serial):
        _, first = both(kern, *rows_args(X, src, dst, D, off, np.int32), 10, 5, 25)
        assert not first[14].any()  # cold starts keep nothing
        first = list(first)
        first[0] = D * 1.1 + 0.01
        _, second = both(kern, *first)
        second = list(second)
        kept = second[14].copy()
        assert kept.any() and not kept.all()  # the warm bases that stayed optimal as they were
        noise = rng.random(D.shape) * 0.3
        second[0] = D + noise + noise.T
        np.fill_diagonal(second[0], 0.0)
        plain = copy.deepcopy(second)
        plain[14] = np.zeros_like(kept)
        _, reused = both(kern, *second)
        _, peeled = both(kern, *plain)
        for x in (12, 13, 14, 15, 16, 17, 18, 19, 20):  # bases, warm and kept flags, costs, gaps, states, plans
            assert same(reused[x], peeled[x]), x
        moved = kept & ~reused[14] & (reused[17] == simplex.ROW_SOLVED)
        assert moved.any()  # kept flows that a pivot needed: peeled again first


def test_solve_rows_values_are_those_of_pot():
    import ot

    rng = np.random.default_rng(7)
    X, src, dst, D, off = rows_problems(rng)
    args = rows_args(X, src, dst, D, off, np.int32, kernel_max=5)
    simplex.solve_rows(D, X, src, X, dst, True, 5, off, *args[12:18], tuple(args[18:]))
    costs, state = args[15], args[17]
    dense = X.toarray()
    expected = [ot.emd2(dense[a], dense[b], D) if dense[a].any() and dense[b].any() else 0.0 for a, b in zip(src, dst)]
    np.testing.assert_allclose(costs, expected, atol=1e-12)
    assert np.all(state[:10] == simplex.ROW_EXACT) and simplex.ROW_LEFT not in state


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_marginal_gaps_are_the_largest_reachable_cost_times_the_moved_mass(index_type):
    rng = np.random.default_rng(17)
    X, src, dst, _, _ = rows_problems(rng, n=12, rows=40, P=200, index_type=index_type)
    rows = random_rows(rng, 30, 9)  # the other side: other atoms, an empty row, differently sized
    Y = sp.csr_matrix(rows)
    Y.indptr, Y.indices = Y.indptr.astype(index_type), Y.indices.astype(index_type)
    dst = rng.integers(0, 30, len(src)).astype(np.int64)
    C = rng.random((12, 9)) - 0.2  # negative costs: the reach counts from 0
    state = rng.integers(0, 3, len(src)).astype(np.int8)
    marginal = rng.random(len(src))
    gaps = rng.random(len(src))
    args = (C, X.indptr, X.indices, src, Y.indptr, Y.indices, dst, state, marginal, gaps)
    _, ran = both(simplex._marginal_gaps, *args)
    # against the formula written with numpy
    row_max, col_max = np.maximum(C.max(axis=1), 0.0), np.maximum(C.max(axis=0), 0.0)
    dense_x, dense_y = X.toarray() > 0, Y.toarray() > 0
    left = np.array([row_max[atoms].max(initial=0.0) for atoms in dense_x])
    right = np.array([col_max[atoms].max(initial=0.0) for atoms in dense_y])
    reach = np.minimum(left[src], right[dst])
    expected = gaps + np.where(state == simplex.ROW_EXACT, 0.0, reach * marginal)
    assert same(ran[-1], expected)
    assert (reach[state != simplex.ROW_EXACT] > 0).any() and (dense_y.sum(axis=1) == 0).any()


def test_bases_from_flows_of_basic_and_degenerate_plans():
    rng = np.random.default_rng(5)
    a, b, C, k, l = padded_batch(rng, 120, 6, 6, cost=COSTS["ties"], masses="equal")
    flows = simplex.solve_padded(a, b, C, k, l)[1]
    flows[3] = 0.0  # no positive cell: every basis cell comes from the cheapest zero cells
    flows[4, :2, :2] = 0.25  # a cycle: not a basic plan
    off = simplex.basis_offsets(k, l)
    for kern in (simplex._bases_from_flows, simplex._bases_from_flows_serial):
        _, out = both(
            kern, flows, C, k, l, np.zeros((int(off[-1]), 2), simplex.BASIS_DTYPE), off, np.zeros(len(k), np.bool_)
        )
        assert not out[6][4]


def test_line_bases():
    rng = np.random.default_rng(6)
    P, K, n = 80, 6, 15
    k, l = rng.integers(0, K + 1, P), rng.integers(0, K + 1, P)
    xs, ys = rng.integers(0, n, (P, K)), rng.integers(0, n, (P, K))
    a, b, _, _, _ = padded_batch(rng, P, K, K, sizes=(k, l), masses="equal")
    h = rng.integers(0, 4, n).astype(float)  # tied keys
    off = simplex.basis_offsets(k, l)
    valid = rng.random(P) < 0.2
    both(
        simplex._line_bases,
        xs,
        a,
        k.astype(np.int64),
        ys,
        b,
        l.astype(np.int64),
        h,
        np.zeros((int(off[-1]), 2), simplex.BASIS_DTYPE),
        off,
        valid,
    )


@pytest.mark.parametrize("k, l", [(1, 1), (1, 4), (4, 1)])
def test_one_atom_on_a_side_takes_the_forced_plan_in_both_twins(k, l):
    rng = np.random.default_rng(k + 10 * l)
    a, b = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(l))
    C = rng.random((k, l))
    ws = simplex.Scratch(*(np.zeros_like(x) for x in simplex._workspace(k + l, max(k, l))))
    br, bc = np.zeros(k + l - 1, simplex.BASIS_DTYPE), np.zeros(k + l - 1, simplex.BASIS_DTYPE)
    result, ran = both(simplex._forced_plan, a, b, C, k, l, np.zeros((k, l)), br, bc, ws)
    assert result[1:3] == (simplex.SOLVED, 0) and 0.0 <= result[3] <= 1e-14
    assert result[0] == pytest.approx(float(np.sum(np.outer(a, b) * C)), abs=1e-15)  # the product plan, the only one
    flow, basis = ran[5], set(zip(ran[6].tolist(), ran[7].tolist()))
    np.testing.assert_allclose(flow, np.outer(a, b), atol=1e-15)
    assert basis == {(i, j) for i in range(k) for j in range(l)}  # every cell of a one-atom side is basic


def test_the_helpers_of_one_solve():
    rng = np.random.default_rng(7)
    k, l = 5, 4
    a, b = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(l))
    C = rng.integers(0, 3, (k, l)).astype(float)
    ws = simplex._workspace(k + l, max(k, l))
    assert type(ws) is simplex.Scratch and ws.adj.shape == (k + l, max(k, l)) and ws.done.dtype == np.bool_
    ws = simplex.Scratch(*(np.zeros_like(x) for x in ws))
    flow = np.zeros((k, l))
    (scale, floor), _ = both(simplex._cost_range, C - 1.5, k, l)
    assert (scale, floor) == (float(np.max(np.abs(C - 1.5))), float(np.min(C - 1.5)))
    (ok, greedy) = both(simplex._greedy_basis, a, b, C, k, l, flow, ws.edge_row, ws.edge_col, ws.adj, ws.deg)
    assert ok
    br, bc = np.zeros(k + l - 1, simplex.BASIS_DTYPE), np.zeros(k + l - 1, simplex.BASIS_DTYPE)
    result, ran = both(simplex._solve_one, a, b, C, k, l, flow, br, bc, False, False, ws)
    assert result[1] == simplex.SOLVED
    _, _, _, _, _, flow, br, bc, _, _, ws = ran
    both(simplex._solve_one, a, b, C * 2 + 1, k, l, flow, br, bc, np.bool_(True), False, ws)  # warm, numpy's bool
    both(simplex._solve_one, a, b, C * 2 + 1, k, l, flow, br, bc, True, np.bool_(True), ws)  # its flows kept
    both(
        simplex._plan_gap,
        a,
        b,
        k,
        l,
        flow,
        ws.edge_row,
        ws.edge_col,
        ws.pot,
        0.3,
        1e-16,
        2.0,
        0.0,
        ws.rest_row,
        ws.rest_col,
    )
    fresh = simplex.Scratch(*(np.zeros_like(x) for x in ws))
    both(
        simplex._warm_basis,
        a,
        b,
        k,
        l,
        np.zeros((k, l)),
        fresh.edge_row,
        fresh.edge_col,
        fresh.adj,
        fresh.deg,
        br,
        bc,
        fresh.rest_row,
        fresh.rest_col,
        fresh.left,
        fresh.done,
        fresh.stack,
    )
    both(simplex._hang, 0, C, k, ws.edge_row, ws.edge_col, ws.adj, ws.deg, ws.parent_edge, ws.depth, ws.pot, ws.stack)
    both(
        simplex._smallest_even_flow,
        np.arange(k + l, dtype=np.int64) % (k + l - 1),
        7,
        flow,
        ws.edge_row,
        ws.edge_col,
        np.inf,
        -1,
    )
    both(simplex._add_edge, 2, 1, 3, k, fresh.edge_row, fresh.edge_col, fresh.adj, fresh.deg)
    both(simplex._remove_from, 1, int(ws.adj[1, 0]), ws.adj, ws.deg)
    parent = np.array([0, 0, 1, 2, 4, 4], dtype=np.int64)
    assert both(simplex._find, parent, 3)[0] == 0
    assert both(simplex._join, parent, 3, 5)[0] is True and both(simplex._join, parent, 0, 0)[0] is False
    both(simplex._basis_from_flow, flow, C, k, l, br, bc)
    both(simplex._line_basis, np.arange(k), a, k, np.arange(l), b, l, rng.random(max(k, l)), br, bc)


def test_the_block_and_slot_kernels():
    rng = np.random.default_rng(8)
    a, b, C, k, l = padded_batch(rng, 300, 5, 5)
    args = solve_batch_args(a, b, C, k, l)
    both(simplex._solve_block, *args[:13], 1, *args[13:])
    flows = simplex.solve_padded(a, b, C, k, l)[1]
    off = simplex.basis_offsets(k, l)
    both(
        simplex._basis_from_flow_at,
        flows,
        C,
        k,
        l,
        np.zeros((int(off[-1]), 2), simplex.BASIS_DTYPE),
        off,
        np.zeros(len(k), np.bool_),
        17,
    )
    X, src, dst, D, off = rows_problems(rng, n=8, P=300)
    rows = rows_args(X, src, dst, D, off, np.int32)
    both(simplex._solve_rows_block, *rows, 0, 10, 5, 25)
    both(simplex._solve_rows_one, *rows, 5, np.zeros(25), np.zeros(25), simplex._workspace(10, 5))


# ---------------------------------------------------------------------------------------- couplings
def random_rows(rng, rows, cols, density=0.5, dtype=np.float64):
    X = rng.random((rows, cols)) * (rng.random((rows, cols)) < density)
    X[0] = 0.0  # an all-zero row
    X[1] = 0.0
    X[1, cols // 2] = 0.3  # one atom
    X[2, :] = 1e-300  # tiny masses
    X[3, :] = [1 / 3] * cols  # a total that is not 1 in floats
    X[4, :] = 0.0
    X[4, :4] = [0.5, 0.25, 0.125, 0.125]  # dyadic: exact sums
    return sp.csr_matrix(X.astype(dtype))


def test_breakpoints_and_their_errors():
    rng = np.random.default_rng(9)
    X = random_rows(rng, 40, 9)
    indptr = X.indptr.astype(np.int64)
    out, _ = both(couplings._csr_breakpoints, indptr, X.data, np.zeros(X.nnz))
    both(couplings._row_breakpoints, X.data, int(indptr[5]), int(indptr[6]), np.zeros(X.nnz))
    both(roundoff._breakpoint_errors, indptr, X.data, np.zeros(X.shape[0]))


def test_block_tv_against_dense_aggregates():
    rng = np.random.default_rng(11)
    n, k = 40, 7
    X = random_rows(rng, 60, n)  # rows over states, some with repeated blocks
    Y = random_rows(rng, 12, k, density=0.6)  # rows over blocks, canonical
    labels = rng.integers(0, k, n).astype(np.int64)
    rows_x, rows_y = rng.integers(0, 60, 90), rng.integers(0, 12, 90)
    _, ran = both(
        quotient._block_tv,
        X.indptr.astype(np.int64),
        X.indices.astype(np.int64),
        X.data,
        labels,
        Y.indptr.astype(np.int64),
        Y.indices.astype(np.int64),
        Y.data,
        rows_x.astype(np.int64),
        rows_y.astype(np.int64),
        np.zeros(k),
        np.zeros(90),
    )
    assert np.all(ran[9] == 0.0)  # the scratch is left as zeros
    onehot = np.zeros((n, k))
    onehot[np.arange(n), labels] = 1.0
    expected = 0.5 * np.abs((X.toarray() @ onehot)[rows_x] - Y.toarray()[rows_y]).sum(axis=1)
    np.testing.assert_allclose(ran[10], expected, rtol=1e-14, atol=1e-15)
    assert np.any(expected > 0.1)  # the rows differ: the check compares something


def test_gathered_block_rows_are_the_validated_aggregates():
    from bisimkit.mdp import FiniteMDP

    rng = np.random.default_rng(12)
    n, k = 30, 6
    dense = rng.random((60, n)) * (rng.random((60, n)) < 0.3)
    dense[np.arange(60), rng.integers(0, n, 60)] += 0.5  # no empty row
    dense /= dense.sum(axis=1, keepdims=True)
    X = FiniteMDP(sp.csr_matrix(dense), np.zeros((n, 2)), 0.9).transition_rows  # validated rows
    labels = rng.integers(0, k, n).astype(np.int64)
    rows = rng.integers(0, 60, 25).astype(np.int64)
    size = int((X.indptr[rows + 1] - X.indptr[rows]).sum())
    for index, out_index in ((np.int32, np.int32), (np.int64, np.int64), (np.int32, np.int64)):
        args = (
            X.indptr.astype(index),
            X.indices.astype(index),
            X.data,
            rows,
            labels,
            np.full(k, -1, dtype=np.int64),
            np.zeros(k),
            np.zeros(len(rows) + 1, dtype=out_index),
            np.zeros(size, dtype=out_index),
            np.zeros(size),
        )
        nnz, ran = both(quotient._gather_block_rows, *args)
        got = sp.csr_matrix((ran[9][:nnz], ran[8][:nnz], ran[7]), shape=(len(rows), k))
        onehot = np.zeros((n, k))
        onehot[np.arange(n), labels] = 1.0
        expected = sp.csr_matrix(X.toarray()[rows] @ onehot)  # canonical, as validation leaves rows
        expected.data /= np.repeat(np.asarray(expected.sum(axis=1)).ravel(), np.diff(expected.indptr))
        assert got.has_canonical_format and nnz == expected.nnz
        assert np.array_equal(got.indptr, expected.indptr) and np.array_equal(got.indices, expected.indices)
        np.testing.assert_allclose(got.data, expected.data, rtol=4e-16, atol=0)  # the sums' order may differ


def test_row_defects_of_csr_rows():
    rng = np.random.default_rng(13)
    X = random_rows(rng, 40, 9)
    for index in (np.int32, np.int64):
        for compensated in (True, False):
            both(roundoff._csr_row_defects, X.indptr.astype(index), X.data, compensated, np.zeros(40))


def test_merges_of_breakpoints():
    rng = np.random.default_rng(10)
    X, Y = random_rows(rng, 30, 8), random_rows(rng, 25, 6, density=0.8)
    lx, ly = couplings.CSRLaws(X), couplings.CSRLaws(Y)
    src, dst = rng.integers(0, 30, 200), rng.integers(0, 25, 200)
    sizes = np.maximum((lx.indptr[src + 1] - lx.indptr[src]) + (ly.indptr[dst + 1] - ly.indptr[dst]) - 1, 0)
    offsets = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    both(
        couplings._merge_rows,
        lx.indptr,
        lx.indices,
        lx.breakpoints,
        src,
        ly.indptr,
        ly.indices,
        ly.breakpoints,
        dst,
        offsets,
        np.zeros(total, np.int64),
        np.zeros(total, np.int64),
        np.zeros(total),
        np.zeros(200, np.int64),
    )
    r, s = 7, 3
    xa, xb = slice(lx.indptr[r], lx.indptr[r + 1]), slice(ly.indptr[s], ly.indptr[s + 1])
    room = (xa.stop - xa.start) + (xb.stop - xb.start)
    both(
        couplings.merge_breakpoints,
        lx.indices[xa],
        lx.breakpoints[xa],
        ly.indices[xb],
        ly.breakpoints[xb],
        np.zeros(room, np.int64),
        np.zeros(room, np.int64),
        np.zeros(room),
    )
    ties = np.array([0.25, 0.5, 0.5, 1.0])  # repeated breakpoints (empty atoms) and shared ones
    both(
        couplings.merge_breakpoints,
        np.arange(4),
        ties,
        np.arange(3),
        np.array([0.5, 0.75, 1.0]),
        np.zeros(6, np.int64),
        np.zeros(6, np.int64),
        np.zeros(6),
    )


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_gather_rows(index_type):
    rng = np.random.default_rng(11)
    X = random_rows(rng, 20, 7)
    rows = rng.integers(0, 20, 30)
    width = int(np.max(np.diff(X.indptr)))
    both(
        couplings._gather_rows,
        X.indptr.astype(np.int64),
        X.indices.astype(index_type),
        X.data,
        rows,
        np.zeros((30, width), np.int64),
        np.zeros((30, width)),
    )


# ----------------------------------------------------------------------------------------- compiled
@pytest.mark.parametrize("cell_type", [np.int32, np.int64])
def test_pair_system_slots(cell_type):
    rng = np.random.default_rng(12)
    n, P = 10, 60
    sizes = rng.integers(0, 6, P)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ci, cj = rng.integers(0, n, off[-1]).astype(cell_type), rng.integers(0, n, off[-1]).astype(cell_type)
    mass = rng.random(off[-1]) * (rng.random(off[-1]) < 0.8)
    index = rng.integers(-1, 30, (n, n))
    row_pair, row_weight = rng.integers(0, 30, P), rng.random(P)
    counts, _ = both(compiled._count_slots, off, ci, cj, mass, row_pair, index, np.zeros(30, np.int64))
    counts = np.zeros(30, np.int64)
    compiled._count_slots(off, ci, cj, mass, row_pair, index, counts)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    _, (*_, two_indices, two_data) = both(
        compiled._fill_slots,
        off,
        ci,
        cj,
        mass,
        row_pair,
        row_weight,
        index,
        indptr,
        np.zeros(indptr[-1], np.int32),
        np.zeros(indptr[-1]),
    )
    # rows in order: one pass writes what the count and the fill write
    in_order = np.sort(row_pair)
    counts = np.zeros(30, np.int64)
    compiled._count_slots(off, ci, cj, mass, in_order, index, counts)
    sorted_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    expected = (np.zeros(sorted_ptr[-1], np.int32), np.zeros(sorted_ptr[-1]))
    compiled._fill_slots(off, ci, cj, mass, in_order, row_weight, index, sorted_ptr, *expected)
    out = (np.zeros(31, np.int32), np.zeros(off[-1], np.int32), np.zeros(off[-1]))
    nnz, (*_, ptr, got_indices, got_data) = both(
        compiled._fill_in_order, off, ci, cj, mass, in_order, row_weight, index, *out
    )
    assert nnz == sorted_ptr[-1] and np.array_equal(ptr, sorted_ptr)
    assert same(got_indices[:nnz], expected[0]) and same(got_data[:nnz], expected[1])
    assert 0 < nnz < off[-1] and len(set(two_indices.tolist())) > 1 and two_data.any()
    # a row below the one before: -1, for the two passes to take over
    nnz, _ = both(compiled._fill_in_order, off, ci, cj, mass, in_order[::-1].copy(), row_weight, index, *out)
    assert nnz == -1
    system = compiled.pair_system_from_slots(off, ci, cj, mass, in_order, row_weight, index, 30)
    assert same(system.indptr, sorted_ptr.astype(np.int32)) and same(system.data, expected[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eps_bar_passes(dtype):
    rng = np.random.default_rng(13)
    n, m = 9, 3
    policy = rng.dirichlet(np.ones(m), size=n) * (rng.random((n, m)) < 0.7)
    policy[policy.sum(1) == 0, 0] = 1.0
    policy /= policy.sum(1, keepdims=True)
    P = rng.dirichlet(np.ones(n), size=n * m) * (rng.random((n * m, n)) < 0.5)
    P[P.sum(1) == 0, 0] = 1.0
    P /= P.sum(1, keepdims=True)
    S, T = np.triu_indices(n, 1)
    index = -np.ones((n, n), np.int64)
    index[S, T] = np.arange(len(S))
    index[T, S] = np.arange(len(S))
    acts, nxt = couplings.CSRLaws(policy), couplings.CSRLaws(P)
    common = (
        S.astype(np.int64),
        T.astype(np.int64),
        index,
        m,
        acts.indptr,
        acts.indices,
        acts.breakpoints,
        nxt.indptr,
        nxt.indices,
        nxt.breakpoints,
    )
    counts, _ = both(
        compiled._eps_bar_pass,
        *common,
        0,
        np.zeros(len(S), np.int64),
        np.zeros(1, np.int64),
        np.zeros(1, np.int32),
        np.zeros(1, dtype),
        np.zeros(1),
        np.zeros(1),
    )
    counts = compiled.eps_bar_counts(S, T, index, policy, P, m)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    both(
        compiled._eps_bar_pass,
        *common,
        1,
        counts,
        indptr,
        np.zeros(indptr[-1], np.int32),
        np.zeros(indptr[-1], dtype),
        np.zeros(1),
        np.zeros(1),
    )
    both(
        compiled._eps_bar_pass,
        *common,
        2,
        counts,
        indptr,
        np.zeros(1, np.int32),
        np.zeros(1),
        rng.random(len(S)),
        np.zeros(len(S)),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_csr_products(dtype, index_type):
    rng = np.random.default_rng(14)
    T = sp.random(50, 40, density=0.2, random_state=14, format="csr")
    x = rng.random(40).astype(dtype)
    for kern in (compiled._csr_matvec, compiled._csr_matvec_serial):
        both(
            kern,
            T.indptr.astype(index_type),
            T.indices.astype(index_type),
            T.data.astype(dtype),
            x,
            np.zeros(50, dtype),
        )


# ---------------------------------------------------------------------------------------- relations
def refinement_rows(rng, n, m, support, near):
    """CSR rows (n * m over n) with masses from few levels, some ``near`` apart, and a few masses near 0."""
    levels = np.array([0.125, 0.25, 0.5]) + near * rng.integers(0, 3, 3)
    rows, cols, vals = [], [], []
    for r in range(n * m):
        k = int(rng.integers(1, support + 1))
        for t in rng.choice(n, size=k, replace=True):  # repeated columns: duplicate entries, summed in order
            rows.append(r)
            cols.append(int(t))
            vals.append(float(rng.choice(levels)) if rng.random() < 0.8 else near * int(rng.integers(0, 3)))
    return _csr(rows, cols, vals, n * m, n)


def _csr(rows, cols, vals, n_rows, n):
    """CSR with the entries in the given order, duplicates kept (scipy's constructor would sum them)."""
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(np.asarray(rows, dtype=np.int64), minlength=n_rows), out=indptr[1:])
    return indptr, np.asarray(cols, dtype=np.int64)[order], np.asarray(vals, dtype=np.float64)[order]


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("m", [1, 3])
def test_refine_blocks(index_type, m):
    rng = np.random.default_rng(20 + m)
    for trial in range(12):
        n = int(rng.integers(1, 40))
        indptr, indices, data = refinement_rows(rng, n, m, 3, [1e-9, 4e-10, 0.0][trial % 3])
        initial = rng.integers(0, 1 + trial % 3, n).astype(np.int64)
        count, out = both(
            relations._refine_blocks,
            indptr.astype(index_type),
            indices.astype(index_type),
            data,
            m,
            initial,
            1e-9,
            np.zeros(n, dtype=np.int64),
        )
        labels = out[-1]
        assert count == labels.max() + 1 and labels[0] == 0
        assert np.all(np.diff(np.maximum.accumulate(labels)) <= 1)  # numbered by smallest state


def test_refine_blocks_edge_cases():
    empty = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    count, _ = both(relations._refine_blocks, *empty, 1, np.zeros(0, dtype=np.int64), 1e-9, np.zeros(0, np.int64))
    assert count == 0
    one = np.array([0, 1], dtype=np.int64), np.zeros(1, dtype=np.int64), np.ones(1)
    count, _ = both(relations._refine_blocks, *one, 1, np.zeros(1, dtype=np.int64), 1e-9, np.zeros(1, np.int64))
    assert count == 1
    # two absorbing states with different classes, a third moving to either: three blocks
    rows = np.array([0, 1, 2, 4], dtype=np.int64), np.array([0, 1, 0, 1], dtype=np.int64), np.array([1, 1, 0.5, 0.5])
    count, out = both(
        relations._refine_blocks, *rows, 1, np.array([0, 1, 0], dtype=np.int64), 0.0, np.zeros(3, np.int64)
    )
    assert count == 3 and list(out[-1]) == [0, 1, 2]


# ------------------------------------------------------------------------------------------ threads
THREADS_PROBE = """
import json, sys
import numpy as np
from bisimkit import compiled, simplex
rng = np.random.default_rng(0)
P, K = 2000, 6
k, l = rng.integers(1, K + 1, P), rng.integers(1, K + 1, P)
a, b = np.zeros((P, K)), np.zeros((P, K))
for p in range(P):
    a[p, :k[p]] = rng.dirichlet(np.ones(k[p]))
    b[p, :l[p]] = rng.dirichlet(np.ones(l[p]))
C = rng.integers(0, 4, (P, K, K)).astype(float)
out = {}
for name in ("_solve_batch", "_solve_batch_serial"):
    off = simplex.basis_offsets(k, l)
    args = [a, b, C, k, l, np.zeros_like(C), np.zeros(P), np.zeros(P), np.zeros(P, bool), np.zeros(P, np.int64),
            np.zeros((int(off[-1]), 2), simplex.BASIS_DTYPE), off, np.zeros(P, bool), 2 * K, K]
    getattr(simplex, name)(*args)
    out[name] = [x.tobytes().hex() for x in args[5:11]]
T = (rng.random((3000, 500)) < 0.05) * rng.random((3000, 500))
import scipy.sparse as sp
T = sp.csr_matrix(T)
x = rng.random(500)
for name in ("_csr_matvec", "_csr_matvec_serial"):
    y = np.zeros(3000)
    getattr(compiled, name)(T.indptr, T.indices, T.data, x, y)
    out[name] = y.tobytes().hex()
print(json.dumps(out))
"""


def test_parallel_kernels_give_the_same_bits_on_any_number_of_threads():
    runs = {}
    for threads in ("1", "3"):
        proc = subprocess.run(
            [sys.executable, "-c", THREADS_PROBE],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
            env={**__import__("os").environ, "OMP_NUM_THREADS": threads},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[threads] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert runs["1"] == runs["3"]
    assert runs["3"]["_solve_batch"] == runs["3"]["_solve_batch_serial"]
    assert runs["3"]["_csr_matvec"] == runs["3"]["_csr_matvec_serial"]


# ---------------------------------------------------------------------------------------------- lmc
def test_dual_bounds_of_simplex_bases():
    rng = np.random.default_rng(11)
    for ka, kb in ((3, 3), (3, 5), (6, 2)):
        a, b, C, k, l = padded_batch(rng, 40, ka, kb, sizes=(np.full(40, ka), np.full(40, kb)))
        basis = simplex.solve_padded(a, b, C, k, l)[4].reshape(40, ka + kb - 1, 2)
        basis[3] = basis[3, ::-1]  # the edges of a tree in any order
        basis[5, :, :] = 0  # not a spanning tree: bound 0
        C[7, 0, :] = C[7, 0, 0]  # ties
        low = both(lmc._tree_dual_bounds, basis, C, a, b, 2.0**-52, np.full(40, -1.0))[1][-1]
        assert low[5] == 0.0 and np.all(low >= 0.0)
        assert np.all(low <= np.einsum("gab,gab->g", simplex.solve_padded(a, b, C, k, l)[1], C) + 1e-12)
    both(
        lmc._tree_dual_bounds,
        np.zeros((0, 3, 2), np.int16),
        np.zeros((0, 2, 2)),
        np.zeros((0, 2)),
        np.zeros((0, 2)),
        0.0,
        np.zeros(0),
    )


def coupling_system(rng, n, density, index_type):
    """``T`` (CSR, rows summing to at most 0.9) of a random pair graph, its components in solving order, and
    right-hand sides."""
    T = sp.random(n, n, density=density, random_state=rng, format="csr")
    T = T + sp.diags(rng.random(n) * (rng.random(n) < 0.3))
    T = sp.csr_matrix(sp.diags(0.9 / np.maximum(np.asarray(T.sum(axis=1)).ravel(), 1.0)) @ T)
    T.indptr, T.indices = T.indptr.astype(index_type), T.indices.astype(index_type)
    return T, lmc._components(T), rng.random((n, 2))


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_block_back_substitution_and_gauss_seidel(index_type):
    rng = np.random.default_rng(12)
    for n, density in ((1, 1.0), (30, 0.02), (60, 0.05), (80, 0.2)):
        T, (scc_ptr, members), rhs = coupling_system(rng, n, density, index_type)
        data = np.asarray(T.data, np.float64)
        _, (*_, x, local) = both(
            lmc._scc_sweep,
            scc_ptr,
            members,
            0,
            len(scc_ptr) - 1,
            T.indptr,
            T.indices,
            data,
            rhs,
            np.zeros((n, 2)),
            np.full(n, -1, dtype=np.int64),
        )
        np.testing.assert_allclose(x - T @ x, rhs, atol=1e-12)
        assert np.all(local == -1)
        big = int(np.argmax(np.diff(scc_ptr)))
        S = members[scc_ptr[big] : scc_ptr[big + 1]]
        # one component, every state (the sweeps without the membership test), one column (contiguous x)
        one = np.ascontiguousarray(rhs[:, :1]), np.ascontiguousarray(x[:, :1] * 0.5)
        cases = [(S, rhs, x * 0.5), (S, *one), (np.arange(n - 1, -1, -1), *one), (np.arange(n), rhs, x * 0.5)]
        for states, b, start in cases:
            for sweeps, target in ((400, 2.0**-50), (3, 0.0), (0, 1.0)):
                out, (*_, solved, _, _, _) = both(
                    compiled.scc_gauss_seidel,
                    states,
                    T.indptr,
                    T.indices,
                    data,
                    b,
                    start.copy(),
                    np.full(n, -1, dtype=np.int64),
                    sweeps,
                    target,
                )
                assert out[0] <= sweeps
                if sweeps == 400 and len(states) == n:
                    np.testing.assert_allclose(solved - T @ solved, b, atol=1e-9)


def test_gauss_seidel_on_a_million_rows_sums_each_divisor_in_each_sweep_to_the_same_bits():
    # above its stored divisors' limit the compiled sweeps sum each row's diagonal again in every sweep: a system
    # of copies of one block gives every copy the bits the block alone gets (whose divisors are stored)
    rng = np.random.default_rng(5)
    block, _, rhs = coupling_system(rng, 16, 0.3, np.int32)
    block = block + sp.diags(np.full(16, 0.05))  # diagonal entries in every row, beside the others
    block = sp.csr_matrix(block)
    copies = (1 << 20) // 16 + 1
    T = sp.block_diag([block] * copies, format="csr")
    n = T.shape[0]
    assert n > 1 << 20 and T.indices.dtype == np.int32
    b = np.tile(rhs[:, :1], (copies, 1))
    alone = np.zeros((16, 1))
    sweeps, change = compiled.scc_gauss_seidel(
        np.arange(15, -1, -1),
        block.indptr,
        block.indices,
        block.data,
        np.ascontiguousarray(rhs[:, :1]),
        alone,
        np.full(16, -1, dtype=np.int64),
        6,
        0.0,
    )
    tiled = np.zeros((n, 1))
    got = compiled.scc_gauss_seidel(
        np.arange(n - 1, -1, -1), T.indptr, T.indices, T.data, b, tiled, np.full(n, -1, dtype=np.int64), 6, 0.0
    )
    assert got == (sweeps, change) and sweeps == 6
    assert same(tiled.reshape(copies, 16), np.tile(alone[:, 0], (copies, 1)))


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_fused_residual_is_numpys_residual(index_type):
    rng = np.random.default_rng(21)
    for n, density in ((1, 1.0), (40, 0.1), (90, 0.3)):
        T, _, rhs = coupling_system(rng, n, density, index_type)
        assert T.data.dtype == np.float64 and T.indices.dtype == index_type
        b, x = rhs[:, 0].copy(), rng.random(n)
        out, (*_, r) = both(compiled._csr_residual, T.indptr, T.indices, T.data, b, 0.9, x, np.empty(n))
        expected = b + 0.9 * (T @ x) - x
        assert same(r, expected) and same(out, float(np.max(np.abs(expected))))
        fused, largest = compiled.residual(T, b, 0.9)(x)
        assert same(fused, expected) and largest == out
    x[3] = np.nan  # a NaN anywhere is the largest entry, as np.max says
    out, _ = both(compiled._csr_residual, T.indptr, T.indices, T.data, b, 0.9, x, np.empty(n))
    assert np.isnan(out)


# ----------------------------------------------------------------------------------- dispatch itself
def test_a_call_the_compiled_kernel_does_not_take_runs_as_python_and_says_so_once():
    def doubled(indptr, data, out):
        for i in range(len(data)):
            out[i] = 2 * data[i] + indptr[i]

    kern = Kernel(doubled)
    kern.__module__, kern.__name__ = "bisimkit.roundoff", "_breakpoint_errors"  # borrow a compiled twin
    out = np.zeros(3)
    with pytest.warns(NativeKernelWarning, match="argument 'indptr': expected int64"):
        kern(np.ones(3), np.arange(3.0), out)  # float64 where the compiled kernel takes int64 offsets
    np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])  # the Python body's result
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kern(np.ones(3), np.arange(3.0), out)  # said once per kernel


def test_without_the_extension_kernels_run_as_python_after_one_warning(monkeypatch):
    monkeypatch.setattr(kernels, "_native_module", kernels._UNRESOLVED)
    monkeypatch.setitem(sys.modules, "bisimkit_native", None)  # import fails as when it is not installed
    kern = Kernel(couplings._csr_breakpoints.py_func)
    indptr, data = np.array([0, 2, 3], dtype=np.int64), np.array([1.0, 3.0, 2.0])
    out = np.zeros(3)
    with pytest.warns(NativeKernelWarning, match=r"pip install -e \."):
        kern(indptr, data, out)
    np.testing.assert_array_equal(out, [0.25, 1.0, 1.0])
    other = Kernel(roundoff._breakpoint_errors.py_func)
    errors = np.zeros(2)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        other(indptr, data, errors)  # said once per process
    assert errors[1] == 0.0


NO_NUMBA_PROBE = """
import sys
from bisimkit.generators import random_mdp
from bisimkit.kernels import SMALL_PROBLEM_CELLS, mdp_cells
from bisimkit.solvers import solve
mdp = random_mdp(30, 2, seed=0, max_support=4)
assert mdp_cells(mdp.n_states, mdp.n_actions, mdp.transitions) > SMALL_PROBLEM_CELLS
for metric in ("pi", "eps-bar", "dbc"):
    assert solve(mdp, metric).converged
print(sorted(m for m in ("numba", "bisimkit_native", "scipy.sparse") if m in sys.modules))
"""


def test_a_solve_above_the_small_size_runs_compiled_kernels_without_numba():
    proc = subprocess.run([sys.executable, "-c", NO_NUMBA_PROBE], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "['bisimkit_native', 'scipy.sparse']"
    assert "NativeKernelWarning" not in proc.stderr
