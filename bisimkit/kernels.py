"""Kernels compiled when the package is installed, with their Python bodies as the reference; and the
small-problem path, which runs a solve on numpy containers alone.

A kernel is written once as a plain Python function (loops over numpy arrays, outputs written in place)
and decorated with :func:`kernel`; ``native/`` holds the same function in C++, statement for statement,
built into the extension module ``bisimkit_native`` by ``pip install`` (scikit-build-core and nanobind;
``docs/development.md#the-compiled-kernels``). Calling a kernel calls its compiled twin, with the same
arguments and the same results bit for bit (the same operations, in the same order, rounded the same
way: ``tests/test_native.py``). Nothing is compiled at run time; the extension is loaded when a kernel is
first called (a few milliseconds), so ``import bisimkit`` does not load it.

The Python body runs instead where the extension is missing (a checkout never installed: one
:class:`NativeKernelWarning` says how to build it), where a call's arguments have types the compiled
kernel does not take (one warning per kernel names the argument), and inside ``with interpreted():``,
which tests use to compare the two.

**The small-problem path.** Inside ``with small_path(True):`` the stages of a solve that would build
scipy's sparse matrices use numpy arrays instead: the transition rows as :class:`DenseRows`, the pair
systems as dense matrices inverted by elimination in numpy (:func:`dense_inverse`), the zero-set
components by label propagation (:func:`components`). A solve takes this path when its MDP is small
(:func:`small_problem`, :data:`SMALL_PROBLEM_CELLS`); its process then does not import scipy. The kernels
are the compiled ones on both paths. Results are the same fixed points with the same kind of certificate
(the simplex's duality gaps, the residual bound of the linear solves): the same algorithms, with the
linear algebra carried out by numpy instead of scipy.
"""

from __future__ import annotations

import threading
import types
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

#: Work, in transport cells, up to which a solve takes the small-problem path: ``pairs x rows per pair
#: x (largest support)^2`` (:func:`problem_cells`; two MDPs' cross pairs: A's largest support times B's,
#: :func:`between_cells`), the cells one evaluation of a coupling operator prices at most. Below it a
#: solve's process does not import scipy; far above it the dense systems of the small path cost more
#: than scipy's sparse ones (whole processes cross between 84 000 and 191 000 cells,
#: ``docs/performance.md#start-up``); the limit keeps well below that.
SMALL_PROBLEM_CELLS = 20_000

#: Marks the loops of a kernel's body whose iterations the compiled kernel spreads over threads (OpenMP);
#: in the Python body it is ``range``.
prange = range

_local = threading.local()


class NativeKernelWarning(RuntimeWarning):
    """A kernel runs as Python: the compiled kernels are not installed, or a call's arguments have types
    its compiled twin does not take."""


#: What a process without the compiled kernels is told, once.
NATIVE_MISSING = (
    "bisimkit: the compiled kernels (the extension module bisimkit_native) are not installed, so "
    "the kernels run as Python, many times slower; build them with `pip install -e .` "
    "in the repository (a C++17 compiler and Python's C headers are needed; "
    "docs/development.md#the-compiled-kernels)"
)


#: Evaluations of the operator a solve makes, in units of coupling iteration's (about 5 rounds): value
#: iteration sweeps about 50 times as often (``log(tol) / log(c)``, some hundred at c = 0.9).
VALUE_ITERATION_FACTOR = 50


def small_problem(cells: float, value_iteration: bool = False) -> bool:
    """Whether a solve whose operator prices ``cells`` transport cells per evaluation (:func:`problem_cells`)
    takes the small-problem path; ``value_iteration`` counts its evaluations :data:`VALUE_ITERATION_FACTOR` times."""
    return cells * (VALUE_ITERATION_FACTOR if value_iteration else 1) <= SMALL_PROBLEM_CELLS


def problem_cells(n_pairs: int, rows_per_pair: int, support: int, other_support: int | None = None) -> float:
    """``n_pairs * rows_per_pair * support^2``: what one evaluation of a coupling operator prices at most
    (``support * other_support`` when the two laws of a pair have different largest supports)."""
    other = support if other_support is None else other_support
    return float(n_pairs) * float(rows_per_pair) * float(support) * float(other)


def mdp_cells(n_states: int, n_actions: int, transitions: np.ndarray, pairs: int | None = None) -> float:
    """:func:`problem_cells` of an MDP: pairs ``s < t`` (or ``pairs``), up to ``2 m - 1`` rows (an entangled
    coupling of two policies), the largest support of a next-state law ``P(s, a)`` times ``m`` (a policy's
    mixture)."""
    pairs = n_states * (n_states - 1) // 2 if pairs is None else pairs
    rows = max(2 * n_actions - 1, 1)
    if problem_cells(pairs, rows, 1) > SMALL_PROBLEM_CELLS:
        return problem_cells(pairs, rows, 1)  # too large already: no need to look at the supports
    return problem_cells(pairs, rows, _mixture_support(n_states, n_actions, transitions))


def between_cells(transitions_a: np.ndarray, transitions_b: np.ndarray) -> float:
    """The transport cells of the cross pairs ``(s, t)`` of two MDPs (transitions ``n x m x n``): ``n_A n_B``
    pairs, up to ``m_A + m_B - 1`` rows (an entangled coupling), each a problem between a law of A (its
    largest mixture support, as in :func:`mdp_cells`) and one of B: ``support_A x support_B`` cells, not
    the square of the larger (6 and 18 states of full support: 108 pairs of 6 x 18 cells)."""
    (n_a, m_a, _), (n_b, m_b, _) = transitions_a.shape, transitions_b.shape
    rows = max(m_a + m_b - 1, 1)
    if problem_cells(n_a * n_b, rows, 1) > SMALL_PROBLEM_CELLS:
        return problem_cells(n_a * n_b, rows, 1)  # too large already: no need to look at the supports
    return problem_cells(
        n_a * n_b, rows, _mixture_support(n_a, m_a, transitions_a), _mixture_support(n_b, m_b, transitions_b)
    )


def _mixture_support(n_states: int, n_actions: int, transitions: np.ndarray) -> int:
    """The largest support of a policy's mixture of next-state laws: ``m`` times that of one ``P(s, a)``,
    at most ``n``."""
    support = int(np.max(np.count_nonzero(transitions, axis=-1), initial=1))
    return min(support * n_actions, n_states)


@contextmanager
def small_path(on: bool = True) -> Iterator[None]:
    """Within the block, the solve stages use numpy containers (module doc)."""
    before = getattr(_local, "small", False)
    _local.small = bool(on)
    try:
        yield
    finally:
        _local.small = before


def on_small_path() -> bool:
    """Whether this thread is inside ``small_path(True)``."""
    return getattr(_local, "small", False)


@contextmanager
def interpreted(on: bool = True) -> Iterator[None]:
    """Within the block, this thread's kernels run as their Python bodies (the reference the compiled
    kernels are tested against)."""
    before = getattr(_local, "interpreted", False)
    _local.interpreted = bool(on)
    try:
        yield
    finally:
        _local.interpreted = before


_UNRESOLVED = object()
_native_module = _UNRESOLVED


def native_module():
    """The extension module ``bisimkit_native``, imported on first use; None (said once, in a
    :class:`NativeKernelWarning`) where it is not installed."""
    global _native_module
    if _native_module is _UNRESOLVED:
        try:
            import bisimkit_native  # the compiled kernels: a few milliseconds, when a kernel is first called
        except ImportError:
            bisimkit_native = None
            warnings.warn(NATIVE_MISSING, NativeKernelWarning, stacklevel=3)
        _native_module = bisimkit_native
    return _native_module


class Kernel:
    """A kernel (module doc): calls its compiled twin ``native``, or ``py_func``, the function itself."""

    def __init__(self, py_func: Callable, parallel: bool = False, name: str | None = None) -> None:
        self.py_func = py_func
        self.parallel = parallel
        self._native: Any = _UNRESOLVED  # the compiled twin or None, once looked up
        self._refused = False
        self.__name__ = name or py_func.__name__
        self.__qualname__, self.__doc__ = py_func.__qualname__, py_func.__doc__
        self.__module__ = py_func.__module__

    def __call__(self, *args):
        native = self._native
        if native is _UNRESOLVED:
            native = self.native
        if native is None or getattr(_local, "interpreted", False):
            return self.py_func(*args)
        try:
            return native(*args)
        except TypeError as error:  # argument types the compiled kernel does not take (checked before any work)
            if not self._refused:
                self._refused = True
                warnings.warn(
                    f"bisimkit: the compiled kernel {self} does not take these arguments ({error}); it runs as Python",
                    NativeKernelWarning,
                    stacklevel=2,
                )
            return self.py_func(*args)

    @property
    def native(self) -> Callable | None:
        """The compiled twin (``bisimkit_native.<module>.<name>``), or None where there is none."""
        if self._native is _UNRESOLVED:
            module = native_module()
            group = getattr(module, self.__module__.rsplit(".", 1)[-1], None) if module is not None else None
            self._native = getattr(group, self.__name__, None)
            if module is not None and self._native is None:
                warnings.warn(
                    f"bisimkit: the installed compiled kernels lack {self}: rebuild them with "
                    "`pip install -e .` (docs/development.md#the-compiled-kernels); it runs as Python",
                    NativeKernelWarning,
                    stacklevel=3,
                )
        return self._native

    def __repr__(self) -> str:
        return f"<kernel {self.__module__}.{self.__qualname__}>"


def kernel(func: Callable | None = None, *, parallel: bool = False):
    """``@kernel``: the function is a kernel (module doc); ``@kernel(parallel=True)``: its ``prange`` loops
    run on threads in the compiled kernel."""
    if func is None:
        return lambda f: Kernel(f, parallel)
    return Kernel(func, parallel)


def twins(body: Callable) -> tuple[Kernel, Kernel]:
    """A batch kernel and its serial twin, from one body ``<name>_body``: :data:`prange` spreads the
    iterations over threads in the first and is a plain ``range`` in the second (a small batch does not
    pay for waking the threads). They are the kernels ``<name>`` and ``<name>_serial`` (the names of their
    compiled kernels); the twin's body is a copy of the function under its name."""
    name = body.__name__.removesuffix("_body")
    serial = types.FunctionType(body.__code__, body.__globals__, f"{name}_serial", body.__defaults__, body.__closure__)
    serial.__qualname__ = f"{name}_serial"
    serial.__module__ = body.__module__
    return Kernel(body, parallel=True, name=name), Kernel(serial)


# ------------------------------------------------------------------ numpy containers of the small path
#: Unknowns up to which :func:`dense_inverse` eliminates with numpy's elementwise operations; above it,
#: ``numpy.linalg.inv``. The elimination's N passes cost about N^3 elementwise steps: 4-6 ms at 108
#: unknowns, 22 ms at 200, 0.15 s at 400, where LAPACK's blocked inverse takes 0.1 s with its threads.
DENSE_ELIMINATION_MAX = 256


def dense_inverse(A: np.ndarray) -> np.ndarray:
    """The inverse of the square matrix ``A`` (the small path's dense systems, ``I - cT``): Gauss-Jordan
    elimination with partial pivoting in numpy's elementwise operations up to :data:`DENSE_ELIMINATION_MAX`
    rows, ``numpy.linalg.inv`` above.

    LAPACK's inverse runs on OpenBLAS's threads, which sleep while the interpreted kernels run between
    two systems: on 2 shared cores a 108 x 108 inverse then took about 50 ms waiting for them (0.5 ms once
    awake), and the woken thread spins on the other core afterwards. The elimination wakes no thread.
    Rounding as with LAPACK's partial pivoting; the solves refine on the exact residual anyway."""
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[0]
    if n > DENSE_ELIMINATION_MAX:
        return np.linalg.inv(A)
    M = np.concatenate([A, np.eye(n)], axis=1)
    for k in range(n):
        p = k + int(np.argmax(np.abs(M[k:, k])))
        if M[p, k] == 0.0:
            raise np.linalg.LinAlgError("Singular matrix")
        if p != k:
            M[[k, p]] = M[[p, k]]
        M[k] /= M[k, k]
        column = M[:, k].copy()
        column[k] = 0.0
        M -= np.multiply.outer(column, M[k])
    return M[:, n:].copy()


class DenseRows:
    """The rows of a dense matrix in CSR layout (``indptr``, ``indices``, ``data``, sorted indices), as the
    transport and coupling code reads a ``scipy.sparse.csr_matrix``, built with numpy alone."""

    has_sorted_indices = True

    def __init__(self, dense: np.ndarray) -> None:
        dense = np.asarray(dense, dtype=np.float64)
        dense = dense.reshape(-1, dense.shape[-1]) if dense.ndim != 2 else dense
        self.shape = dense.shape
        rows, self.indices = np.nonzero(dense)
        self.indices = self.indices.astype(np.int32)
        self.data = dense[rows, self.indices]
        self.indptr = np.zeros(dense.shape[0] + 1, dtype=np.int32)
        np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=self.indptr[1:])
        self._dense = dense

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def __getitem__(self, rows) -> "DenseRows":
        return DenseRows(self._dense[rows])

    def toarray(self) -> np.ndarray:
        return self._dense.copy()

    def sorted_indices(self) -> "DenseRows":
        return self


def csr_parts(P) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of CSR rows (a scipy matrix or :class:`DenseRows`) as the kernels take them:
    float64 masses, int32 or int64 pointers and indices of one type (no copy when they already are)."""
    indptr, indices = P.indptr, P.indices
    if indptr.dtype not in (np.int32, np.int64) or indices.dtype != indptr.dtype:
        indptr, indices = indptr.astype(np.int64), indices.astype(np.int64)
    return indptr, indices, np.asarray(P.data, dtype=np.float64)


_CSR_TEMPLATE: dict[str, Any] = {}  # the attributes of one matrix scipy's constructor built (valid_csr)


def valid_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]):
    """A ``scipy.sparse.csr_matrix`` of CSR parts that are valid as they stand (a kernel's output: ``indptr``
    n + 1 non-decreasing offsets from 0, ``indices`` in ``[0, shape[1])`` of ``indptr``'s integer type, int32
    or int64, float64 ``data`` of the same length as ``indices``), taken as they are.

    scipy's constructor scans and checks the parts again and picks their index type, about 30 µs a call,
    more than a kernel takes to build a small system. Here the matrix is the attribute set of a matrix the
    constructor built once, with the parts and shape replaced; parts that do not have the types and lengths
    above go through the constructor instead."""
    import scipy.sparse as sp  # start-up cost: scipy.sparse is loaded only where a sparse matrix is built

    n_rows = int(shape[0])
    if not (
        indptr.dtype in (np.int32, np.int64)
        and indices.dtype == indptr.dtype
        and data.dtype == np.float64
        and indptr.ndim == indices.ndim == data.ndim == 1
        and len(indptr) == n_rows + 1
        and len(indices) == len(data) == int(indptr[-1])
    ):
        return sp.csr_matrix((data, indices, indptr), shape=shape)
    if not _CSR_TEMPLATE:
        one = np.zeros(1, dtype=np.int32), np.array([0, 1], dtype=np.int32)
        built = sp.csr_matrix((np.zeros(1), *one), shape=(1, 1))
        _CSR_TEMPLATE.update(vars(built))
    matrix = sp.csr_matrix.__new__(sp.csr_matrix)
    matrix.__dict__.update(_CSR_TEMPLATE)
    matrix.data, matrix.indices, matrix.indptr, matrix._shape = data, indices, indptr, (n_rows, int(shape[1]))
    return matrix


def components(adjacent: np.ndarray) -> np.ndarray:
    """Connected components of the undirected graph of the boolean matrix ``adjacent`` (an edge where
    ``adjacent[i, j]`` or ``adjacent[j, i]``), labels 0, 1, ... in order of each component's smallest vertex:
    every vertex takes the smallest label among itself and its neighbours, then the label of its label
    (pointer jumping), until nothing changes; each label is then its component's smallest vertex."""
    adjacent = np.asarray(adjacent, dtype=bool)
    n = adjacent.shape[0]
    linked = adjacent | adjacent.T
    labels = np.arange(n)
    while n:
        nearest = np.minimum(labels, np.where(linked, labels[None, :], n).min(axis=1))
        nearest = nearest[nearest]
        if np.array_equal(nearest, labels):
            break
        labels = nearest
    _, out = np.unique(labels, return_inverse=True)
    return out.ravel().astype(np.int64)
