"""Kernels compiled by numba when first called, and the small-problem path that runs them as Python.

A kernel is written once, as a plain Python function with numba's restrictions, and decorated
with :func:`kernel` (in place of ``numba.njit``). Nothing is compiled, and numba is not imported,
until a kernel is first called outside the small-problem path: numba then compiles the kernel
(or loads it from its disk cache) from a copy of the function whose globals see the other
kernels as numba dispatchers and :data:`prange` as ``numba.prange``. Importing numba and setting
up its CPU target take about a second of a process's start (``docs/performance.md#start-up``),
more than a tiny solve needs in all.

**The small-problem path.** Inside ``with small_path(True):`` every kernel runs as the Python
function it is written as (the same code, interpreted: a tiny solve takes 2-13 times as long as
compiled), and the stages of a solve that would build scipy's sparse matrices use numpy arrays
instead: the transition rows as :class:`DenseRows`, the pair systems as dense matrices inverted by
elimination in numpy (:func:`dense_inverse`), the zero-set components by a union-find
(:func:`components`). A solve takes this path when its MDP is small (:func:`small_problem`,
:data:`SMALL_PROBLEM_CELLS`) and numba is not loaded yet; its process then imports neither numba
nor scipy. Results are the same fixed points with the same kind of certificate (the simplex's
duality gaps, the residual bound of the linear solves): the same algorithms, with the arithmetic
carried out by the interpreter and numpy.
"""

from __future__ import annotations

import sys
import threading
import types
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

#: Work, in transport cells, up to which a solve takes the small-problem path: ``pairs x rows per pair
#: x (largest support)^2`` (:func:`problem_cells`; two MDPs' cross pairs: A's largest support times B's,
#: :func:`between_cells`), the cells one evaluation of a coupling operator prices at most. A process
#: that compiles pays about 1.5 s before its first kernel runs (numba and scipy imported, the kernels
#: loaded from numba's disk cache); the interpreted kernels cost more per cell. Whole processes of one
#: solve, each path forced, cross between about 30 000 and 47 000 cells (pi and eps, 2 shared cores;
#: ``docs/performance.md#start-up``); the limit keeps below that.
SMALL_PROBLEM_CELLS = 20_000

#: Stands for ``numba.prange`` in a kernel's body: ``range`` when the kernel runs as Python; the
#: compiled copy sees ``numba.prange``.
prange = range

_local = threading.local()
_on_load: list[Callable[[object], None]] = []


#: Evaluations of the operator a solve makes, in units of coupling iteration's (about 5 rounds): value
#: iteration sweeps about 50 times as often (``log(tol) / log(c)``, some hundred at c = 0.9).
VALUE_ITERATION_FACTOR = 50


def small_problem(cells: float, value_iteration: bool = False) -> bool:
    """Whether a solve whose operator prices ``cells`` transport cells per evaluation (:func:`problem_cells`)
    takes the small-problem path; ``value_iteration`` counts its evaluations :data:`VALUE_ITERATION_FACTOR` times.

    Only while numba is not loaded in this process: once it is (a larger solve before, a warm-up), the
    start-up cost is paid and the compiled kernels are the faster at every size (2-13 times per tiny solve)."""
    return not numba_loaded() and cells * (VALUE_ITERATION_FACTOR if value_iteration else 1) <= SMALL_PROBLEM_CELLS


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
    return problem_cells(n_a * n_b, rows, _mixture_support(n_a, m_a, transitions_a),
                         _mixture_support(n_b, m_b, transitions_b))


def _mixture_support(n_states: int, n_actions: int, transitions: np.ndarray) -> int:
    """The largest support of a policy's mixture of next-state laws: ``m`` times that of one ``P(s, a)``,
    at most ``n``."""
    support = int(np.max(np.count_nonzero(transitions, axis=-1), initial=1))
    return min(support * n_actions, n_states)


@contextmanager
def small_path(on: bool = True) -> Iterator[None]:
    """Within the block, kernels run as Python and the solve stages use numpy containers (module doc)."""
    before = getattr(_local, "small", False)
    _local.small = bool(on)
    try:
        yield
    finally:
        _local.small = before


def on_small_path() -> bool:
    """Whether this thread is inside ``small_path(True)``."""
    return getattr(_local, "small", False)


_UNRESOLVED = object()
_native_module = _UNRESOLVED


def native_module():
    """The extension module ``bisimkit_native`` (the kernels compiled when the package is installed),
    imported on first use; None where it is not installed."""
    global _native_module
    if _native_module is _UNRESOLVED:
        try:
            import bisimkit_native  # the compiled kernels: a few milliseconds, when a kernel is first called
        except ImportError:
            bisimkit_native = None
        _native_module = bisimkit_native
    return _native_module


class Kernel:
    """A kernel (module doc); ``py_func`` is the function itself. A kernel with a compiled twin in
    ``bisimkit_native`` (``bisimkit_native.<module>.<name>``: the same arguments, the same results bit
    for bit) runs it on both paths; the others are compiled by numba on their first call."""

    def __init__(self, py_func: Callable, options: dict) -> None:
        self.py_func = py_func
        self.options = options
        self._dispatcher = None
        self._native = _UNRESOLVED
        self.__name__, self.__qualname__, self.__doc__ = py_func.__name__, py_func.__qualname__, py_func.__doc__
        self.__module__ = py_func.__module__

    def __call__(self, *args):
        native = self.native
        if native is not None:
            return native(*args)
        if on_small_path():
            return self.py_func(*args)
        return self.dispatcher(*args)

    @property
    def native(self) -> Callable | None:
        """The compiled twin, or None where there is none."""
        if self._native is _UNRESOLVED:
            module = native_module()
            group = getattr(module, self.__module__.rsplit(".", 1)[-1], None) if module is not None else None
            self._native = getattr(group, self.__name__, None)
        return self._native

    @property
    def dispatcher(self):
        """numba's dispatcher of this kernel (numba imported now; it compiles or loads on the first call)."""
        if self._dispatcher is None:
            numba = load_numba()
            f = self.py_func
            scope = dict(f.__globals__)
            for name in _global_names(f.__code__) - {f.__name__}:
                value = scope.get(name)
                if isinstance(value, Kernel):
                    scope[name] = value.dispatcher  # the kernels it calls: their dispatchers (compiled with it)
                elif value is prange:
                    scope[name] = numba.prange
            copy = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__, f.__closure__)
            copy.__qualname__, copy.__module__, copy.__doc__ = f.__qualname__, f.__module__, f.__doc__
            dispatcher = numba.njit(**self.options)(copy)
            scope[f.__name__] = dispatcher
            self._dispatcher = dispatcher
        return self._dispatcher

    def __repr__(self) -> str:
        return f"<kernel {self.__module__}.{self.__qualname__}>"


def _global_names(code: types.CodeType) -> set[str]:
    """The global names a function's code (nested functions included) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def kernel(**options) -> Callable[[Callable], Kernel]:
    """``@kernel(cache=True, ...)``: ``numba.njit(**options)``, compiled on the first call (module doc)."""
    def wrap(func: Callable) -> Kernel:
        return Kernel(func, options)

    return wrap


def twins(body: Callable) -> tuple[Kernel, Kernel]:
    """A batch kernel and its serial twin, from one body: :data:`prange` spreads the iterations over
    threads in the first and is a plain ``range`` in the second (a small batch, or its one-time
    compilation, does not pay for waking the thread pool). The twin is a copy of the function under
    its own name, so each has its own on-disk cache entry."""
    serial = types.FunctionType(body.__code__, body.__globals__, f"{body.__name__}_serial", body.__defaults__,
                                body.__closure__)
    serial.__qualname__ = f"{body.__qualname__}_serial"
    serial.__module__ = body.__module__
    return Kernel(body, {"cache": True, "parallel": True}), Kernel(serial, {"cache": True})


def numba_loaded() -> bool:
    """Whether numba is imported in this process."""
    return "numba" in sys.modules


def load_numba():
    """numba, imported for a kernel about to be compiled or loaded from the cache; the callbacks of
    :func:`when_numba_loads` waiting for it run now (each once)."""
    import numba  # start-up cost: ~0.6 s, paid only when a kernel is compiled or loaded from the cache

    while _on_load:
        _on_load.pop(0)(numba)
    return numba


@contextmanager
def when_numba_loads(callback: Callable[[object], None]) -> Iterator[None]:
    """Within the block, ``callback(numba)`` runs once: at once if numba is loaded, else when a kernel
    first needs it (a kernel's dispatcher is built before it compiles or loads anything)."""
    if numba_loaded():
        callback(sys.modules["numba"])
        yield
        return
    _on_load.append(callback)
    try:
        yield
    finally:
        if callback in _on_load:
            _on_load.remove(callback)


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


def components(adjacent: np.ndarray) -> np.ndarray:
    """Connected components of the undirected graph of the boolean matrix ``adjacent`` (an edge where
    ``adjacent[i, j]`` or ``adjacent[j, i]``): a union-find with path halving over the edges; labels
    0, 1, ... in order of each component's smallest vertex."""
    adjacent = np.asarray(adjacent, dtype=bool)
    n = adjacent.shape[0]
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in zip(*np.nonzero(adjacent)):
        ri, rj = find(int(i)), find(int(j))
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)  # the root is the component's smallest vertex
    roots = np.array([find(x) for x in range(n)], dtype=np.int64)
    _, labels = np.unique(roots, return_inverse=True)
    return labels.ravel().astype(np.int64)
