"""The compiled kernels against the Python fallback in whole solves, and the small-problem path (numpy
containers) against the other one."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import bisimkit.kernels as kernels
from bisimkit.generators import random_mdp
from bisimkit.kernels import DenseRows, components, interpreted
from bisimkit.simplex import solve_padded
from bisimkit.solvers import solve

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("pi", "psm", "bisim", "eps", "eps-avg", "eps-bar", "mico", "dbc")


def force(small: bool, monkeypatch) -> None:
    """The small-problem path at every size, or never."""
    monkeypatch.setattr(kernels, "SMALL_PROBLEM_CELLS", float("inf") if small else -1.0)


def _solve(mdp, metric, small: bool, monkeypatch, **kw):
    force(small, monkeypatch)
    return solve(mdp, metric, **kw)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("small", [True, False])
def test_whole_solves_with_the_python_kernels_are_the_compiled_ones_bit_for_bit(seed, small, monkeypatch):
    """Every stage around the kernels is the same code either way, so a solve whose kernels run as Python
    (:func:`bisimkit.kernels.interpreted`) gives the same bits as the compiled one, on both paths."""
    rng = np.random.default_rng(seed + 10)
    n, m = int(rng.integers(2, 7)), int(rng.integers(1, 3))
    mdp = random_mdp(n, m, seed=seed, max_support=int(rng.integers(1, n + 1)), reward_levels=[None, 2][seed % 2])
    force(small, monkeypatch)
    for metric in METRICS:
        compiled = solve(mdp, metric)
        with interpreted():
            python = solve(mdp, metric)
        assert compiled.converged and python.converged, metric
        assert np.array_equal(compiled.distances, python.distances), metric
        assert compiled.certified_error == python.certified_error and compiled.iterations == python.iterations


@pytest.mark.parametrize("seed", range(4))
def test_small_path_agrees_with_the_sparse_one_within_the_certificates(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 8)), int(rng.integers(1, 4))
    levels = [None, 2][seed % 2]  # tied rewards: relations that merge states, so the quotient stage runs
    mdp = random_mdp(n, m, seed=seed, max_support=int(rng.integers(1, n + 1)), reward_levels=levels)
    for metric in METRICS:
        small = _solve(mdp, metric, True, monkeypatch)
        compiled = _solve(mdp, metric, False, monkeypatch)
        assert small.converged and compiled.converged, metric
        assert small.method == compiled.method, metric
        gap = np.max(np.abs(small.distances - compiled.distances))
        assert gap <= small.certified_error + compiled.certified_error, (metric, gap)


def test_small_path_with_a_ground_matrix_and_full_diagonal(monkeypatch):
    mdp = random_mdp(5, 2, seed=7, max_support=3, reward_levels=2)
    G = np.abs(mdp.rewards.reshape(-1)[:, None] - mdp.rewards.reshape(-1)[None, :])
    for kw in ({"ground": G}, {"full_diagonal": True}):
        small = _solve(mdp, "eps", True, monkeypatch, **kw)
        compiled = _solve(mdp, "eps", False, monkeypatch, **kw)
        assert np.max(np.abs(small.distances - compiled.distances)) <= small.certified_error + compiled.certified_error


def test_interpreted_simplex_is_the_compiled_one_bit_for_bit():
    rng = np.random.default_rng(3)
    k = np.array([3, 5, 1, 4])
    a = np.zeros((4, 5))
    b = np.zeros((4, 5))
    for p, size in enumerate(k):
        a[p, :size] = rng.dirichlet(np.ones(size))
        b[p, :size] = rng.dirichlet(np.ones(size))
    C = rng.random((4, 5, 5))
    compiled = solve_padded(a, b, C, k, k)
    with interpreted():
        python = solve_padded(a, b, C, k, k)
    for x, y in zip(compiled, python):
        np.testing.assert_array_equal(x, y)


def test_dense_rows_read_as_scipy_csr():
    rng = np.random.default_rng(0)
    X = rng.random((6, 5)) * (rng.random((6, 5)) < 0.5)
    rows, csr = DenseRows(X), sp.csr_matrix(X)
    for name in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(rows, name), getattr(csr, name))
    assert rows.shape == csr.shape and rows.nnz == csr.nnz
    np.testing.assert_array_equal(rows[[4, 1]].toarray(), X[[4, 1]])


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_valid_csr_parts_make_the_matrix_scipys_constructor_makes(index_type):
    rng = np.random.default_rng(3)
    X = rng.random((7, 5)) * (rng.random((7, 5)) < 0.5)
    X[2] = 0.0  # an empty row
    ref = sp.csr_matrix(X)
    parts = ref.data.copy(), ref.indices.astype(index_type), ref.indptr.astype(index_type)
    made = kernels.valid_csr(*parts, (7, 5))
    assert type(made) is sp.csr_matrix and made.shape == (7, 5) and made.nnz == ref.nnz
    assert made.indices is parts[1] and made.indptr is parts[2] and made.data is parts[0]  # taken as they are
    assert made.has_sorted_indices and made.has_canonical_format
    v = rng.random(5)
    np.testing.assert_array_equal(made @ v, ref @ v)
    np.testing.assert_array_equal(made.toarray(), X)
    np.testing.assert_array_equal(made.tocsc().toarray(), X)
    np.testing.assert_array_equal((made + made).toarray(), 2 * X)
    np.testing.assert_array_equal(made.T.toarray(), X.T)
    assert repr(made) == repr(ref).replace(str(ref.indices.dtype), str(made.indices.dtype))
    # parts of other types or lengths go through scipy's constructor (which checks them)
    odd = kernels.valid_csr(ref.data.astype(np.float32), ref.indices, ref.indptr, (7, 5))
    assert odd.dtype == np.float32 and np.array_equal(odd.toarray(), X.astype(np.float32))
    with pytest.raises(ValueError):
        kernels.valid_csr(ref.data[:-1], ref.indices[:-1], ref.indptr, (7, 5))


@pytest.mark.parametrize("seed", range(5))
def test_components_are_scipys(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    A = rng.random((n, n)) < 0.15
    _, expected = connected_components(sp.csr_matrix(A), directed=False)
    np.testing.assert_array_equal(components(A), expected)


def test_components_of_a_long_path_and_of_no_vertex():
    n = 200
    path = np.zeros((n, n), dtype=bool)
    order = np.random.default_rng(0).permutation(n)
    path[order[:-1], order[1:]] = True  # one component whose diameter is n - 1
    path[3, :] = path[:, 3] = False  # vertex 3 cut out: its neighbours' halves split, 3 alone
    _, expected = connected_components(sp.csr_matrix(path), directed=False)
    np.testing.assert_array_equal(components(path), expected)
    assert components(np.zeros((0, 0), dtype=bool)).shape == (0,)


def test_a_tiny_solve_process_imports_neither_numba_nor_scipy_and_runs_compiled_kernels(tmp_path):
    out = tmp_path / "d.json"
    code = (
        "import sys\nfrom bisimkit_cli.main import main\n"
        "assert main(['solve', 'examples/tiny-rooms.json', '--metric', 'pi', "
        f"'--out', {str(out)!r}, '--quiet']) == 0\n"
        "print(sorted(m for m in ('numba', 'scipy', 'bisimkit_native') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "['bisimkit_native']"
    assert json.loads(out.read_text())["converged"] is True


def test_small_problems_take_the_small_path_by_their_size_alone():
    from bisimkit.kernels import mdp_cells, small_problem
    from bisimkit.solvers import small_solve

    mdp = random_mdp(4, 2, seed=0, max_support=2)
    assert small_problem(mdp_cells(4, 2, mdp.transitions)) and small_solve(mdp, "pi", "auto")
    assert small_problem(kernels.SMALL_PROBLEM_CELLS) and not small_problem(kernels.SMALL_PROBLEM_CELLS + 1)
    assert not small_problem(kernels.SMALL_PROBLEM_CELLS / 2, value_iteration=True)


def test_small_path_between_two_mdps_agrees_with_the_sparse_one(monkeypatch):
    from bisimkit.between import solve_between

    a, b = random_mdp(3, 2, seed=1, max_support=2), random_mdp(5, 2, seed=2, max_support=3)
    for metric in ("pi", "bisim", "eps", "eps-bar"):
        force(True, monkeypatch)
        small = solve_between(a, b, metric)
        force(False, monkeypatch)
        compiled = solve_between(a, b, metric)
        gap = np.max(np.abs(small.distances - compiled.distances))
        assert gap <= small.certified_error + compiled.certified_error, (metric, gap)


def test_between_cells_price_each_cross_pair_as_a_law_of_a_against_one_of_b():
    from bisimkit.kernels import between_cells, mdp_cells

    full_a, full_b = np.full((6, 1, 6), 1 / 6), np.full((18, 1, 18), 1 / 18)
    assert between_cells(full_a, full_b) == 6 * 18 * 6 * 18  # 108 pairs of 6 x 18 cells, not 18 x 18
    a, b = random_mdp(6, 1, seed=0, max_support=2), random_mdp(18, 1, seed=1, max_support=3)
    support_a = np.max(np.count_nonzero(a.transitions, axis=-1))
    support_b = np.max(np.count_nonzero(b.transitions, axis=-1))
    assert between_cells(a.transitions, b.transitions) == 6 * 18 * support_a * support_b
    assert between_cells(a.transitions, b.transitions) == between_cells(b.transitions, a.transitions)
    c = random_mdp(7, 3, seed=2, max_support=2)  # a policy mixes three laws: support up to 6 of 7, 5 rows
    assert between_cells(c.transitions, c.transitions) == mdp_cells(7, 3, c.transitions, pairs=49)


def test_dense_two_mdps_of_svi_shape_take_the_small_path_and_agree_with_the_sparse_one(monkeypatch):
    """6 and 18 states of full support (SVI's smallest pair's shape): 11 664 cross cells, the small path."""
    from bisimkit.between import small_between, solve_between
    from bisimkit.mdp import FiniteMDP

    rng = np.random.default_rng(0)
    a, b = (
        FiniteMDP(rng.dirichlet(np.ones(n), size=(n, 1)), rng.random((n, 1)), 0.95, np.ones((n, 1))) for n in (6, 18)
    )
    assert small_between(a, b, "pi", "auto") and not small_between(a, b, "pi", "vi")
    small = solve_between(a, b, "pi")
    force(False, monkeypatch)
    compiled = solve_between(a, b, "pi")
    assert small.converged and compiled.converged
    gap = np.max(np.abs(small.distances - compiled.distances))
    assert gap <= small.certified_error + compiled.certified_error, gap


@pytest.mark.parametrize("n", [1, 5, 108, 200])
def test_dense_inverse_is_numpys(n):
    rng = np.random.default_rng(n)
    T = rng.dirichlet(np.ones(n), size=n) * (rng.random((n, n)) < 0.3)  # substochastic, as a pair system's
    A = np.eye(n) - 0.95 * T
    A[[0, -1]] = A[[-1, 0]]  # a row order that needs pivoting
    np.testing.assert_allclose(kernels.dense_inverse(A), np.linalg.inv(A), rtol=0, atol=1e-10)
    with pytest.raises(np.linalg.LinAlgError):
        kernels.dense_inverse(np.ones((3, 3)))
