"""How much memory a solve will take, said before it starts, and how much the process may use.

:func:`estimate_solve` predicts the peak memory a solve adds to the process from the sizes of the
problem alone (states, actions, supports of the laws, unknown pairs, plan cells, entries of the
eps-bar matrix); nothing is allocated or compiled to get it. :func:`available_memory` is the
smallest of what the machine has free (``MemAvailable``), what the process's cgroup still allows
and what its address-space limit (``RLIMIT_AS``) leaves. :func:`check_memory` is the check stage's
test: a solve is refused when :data:`MARGIN` times its estimate does not fit, with one line naming
the estimate, the limit and what would fit (``docs/performance.md#memory``).

The byte counts per unit below are measured (``python -m benchmarks.bench_memory``): each path's
peak is held within a factor 1.5 of its estimate at three sizes.
"""

from __future__ import annotations

import functools
import math
import os
import resource
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .errors import InputError
from .forms import (
    COMPILED_EPS_BAR_PAIRS,
    COMPILED_PAIR_SYSTEM_CELLS,
    EPS_BAR_MEMORY_SHARE,
    EPS_BAR_SINGLE_PAIRS,
    SHARED_MASS_MIN_SUPPORT,
    physical_memory,
)
from .mdp import FiniteMDP
from .operators import operator

#: A solve must fit in the available memory with its estimate multiplied by this. The estimates are
#: held within a factor 1.5 of measured peaks and measured between 0.75 and 1.4 of them
#: (docs/performance.md#memory): the margin covers an estimate a quarter low, while a solve that
#: fits with a quarter to spare is not refused.
MARGIN = 1.25

#: Bytes per plan cell of a coupling-iteration round (the plan and its basis, its pair-system entry; the
#: transport problems read their supports from the laws' rows, so nothing more per cell): numpy assembles
#: bisim's systems, and any below COMPILED_PAIR_SYSTEM_CELLS cells, from triplets (sorted copies of every
#: cell); elsewhere compiled code writes the system in place. Fitted to the measured peaks of
#: ``benchmarks.bench_memory`` (docs/performance.md#memory).
COUPLING_CELL_BYTES = 65.0
COUPLING_CELL_BYTES_COMPILED = 45.0
#: Bytes per plan cell of a value-iteration sweep (plans are made chunk by chunk and not kept).
SWEEP_CELL_BYTES = 20.0
#: Bytes per entry of the eps-bar matrix: float64 values with int32 columns (12), and the float32
#: copy the Krylov solves use, of which measured peaks show about a third alive at once; the float32
#: path keeps only the copy (values and columns).
EPS_BAR_ENTRY_BYTES = 15.0
EPS_BAR_SINGLE_ENTRY_BYTES = 8.0
#: Bytes per coupling cell while the eps-bar matrix is assembled by numpy (cells, triplets, sort).
EPS_BAR_CELL_BYTES = 72.0
#: n x n float64 matrices alive at once: pair index and distance matrices; for the Stein form A, P,
#: Ppi, the iterate, the power of P and the products (measured: 8.2 to 8.5 at the peak).
PAIR_MATRICES = 4
STEIN_MATRICES = 9
#: float64 vectors over the pairs alive at once (iterates, residuals, Krylov basis of 20).
PAIR_VECTORS = 8
KRYLOV_VECTORS = 24


@dataclass(frozen=True)
class Shape:
    """The sizes a solve's memory depends on: states, actions, mean supports of the transition rows
    P(s, a), of the policy rows pi(s) and of the policy's transition rows Ppi(s)."""

    n: int
    m: int
    transition_support: float
    policy_support: float
    pi_support: float

    @classmethod
    def of(cls, mdp: FiniteMDP) -> "Shape":
        n, m = mdp.n_states, mdp.n_actions
        support = mdp.supports
        if mdp.policy is None:
            return cls(n, m, float(support.mean()), 0.0, 0.0)
        used = mdp.policy > 0
        # Ppi(s) is supported on the union of the supports of the actions pi takes at s;
        # their sum bounds it, and so does n.
        pi_support = np.minimum((support * used).sum(axis=1), n)
        return cls(n, m, float(support.mean()), float(used.sum(axis=1).mean()), float(pi_support.mean()))

    def scaled(self, n: int) -> "Shape":
        """The same MDP family at ``n`` states (supports capped at ``n``)."""
        return replace(
            self, n=n, transition_support=min(self.transition_support, n), pi_support=min(self.pi_support, n)
        )


@dataclass(frozen=True)
class Estimate:
    """A solve's predicted peak memory (bytes added to the process) and what it is made of."""

    bytes: float
    path: str  # the method the engine will take
    sizes: str  # the counts it follows from, for the message

    def __str__(self) -> str:
        return f"{format_bytes(self.bytes)} ({self.path}; {self.sizes})"


def _cells(rows: float, a: float, b: float) -> float:
    """Plan or coupling cells of ``rows`` problems between laws of mean supports ``a`` and ``b``
    (a basic plan, and the entangled coupling, has at most a + b - 1 cells)."""
    return rows * max(a + b - 1.0, 1.0)


def estimate_shape(
    shape: Shape,
    metric: str,
    method: str = "auto",
    full_diagonal: bool = False,
    single_eps_bar: bool | None = None,
    pairs: float | None = None,
    cells: float | None = None,
) -> Estimate:
    """The estimate for an MDP of this :class:`Shape` (see :func:`estimate_solve`); ``pairs``, when
    given, is the number of unknown pairs (the cross pairs of :func:`estimate_between`) in place of
    the pairs of ``shape.n`` states, and ``cells`` the entries of the distance-shaped matrices (the
    pair index, the distances) in place of ``n^2``."""
    info = operator(metric)
    if info.base is not None:
        return estimate_shape(shape, info.base, method, full_diagonal)
    n, m = shape.n, shape.m
    if pairs is None:
        pairs = n * (n + 1) / 2 if (full_diagonal or not info.pseudometric) else n * (n - 1) / 2
    square = 8.0 * (n * n if cells is None else cells)
    exact = method in ("auto", "exact")
    if info.kind == "stein":
        total = STEIN_MATRICES * square if exact else (STEIN_MATRICES - 2) * square
        return Estimate(total, "Smith doubling" if exact else "value iteration", f"{n} x {n} matrices")
    base = PAIR_MATRICES * square + PAIR_VECTORS * 8.0 * pairs
    if info.kind == "pair-linear":
        action_cells = _cells(pairs, shape.policy_support, shape.policy_support)
        entries = _cells(action_cells, shape.transition_support, shape.transition_support)
        if single_eps_bar is None:
            single_eps_bar = pairs >= EPS_BAR_SINGLE_PAIRS and 16.0 * entries > EPS_BAR_MEMORY_SHARE * physical_memory()
        per_entry = EPS_BAR_SINGLE_ENTRY_BYTES if single_eps_bar else EPS_BAR_ENTRY_BYTES
        assembly = 0.0 if pairs >= COMPILED_EPS_BAR_PAIRS else EPS_BAR_CELL_BYTES * entries
        total = base + KRYLOV_VECTORS * 8.0 * pairs + max(per_entry * entries, assembly)
        kind = "float32 eps-bar matrix" if single_eps_bar else "eps-bar matrix"
        return Estimate(
            total,
            "sparse linear solve" if exact else "value iteration",
            f"{pairs:,.0f} pairs, {kind} of {entries:,.0f} entries",
        )
    # transport: rows per pair and the laws each row compares (Operator.rows)
    if info.rows == "one":
        rows, support = pairs, shape.pi_support
    elif info.rows == "per-action":
        rows, support = pairs * m, shape.transition_support
    elif info.rows == "entangled":
        rows, support = _cells(pairs, shape.policy_support, shape.policy_support), shape.transition_support
    else:  # "action-pairs": every pair of actions the policy takes
        rows, support = pairs * shape.policy_support**2, shape.transition_support
    if info.pseudometric and not full_diagonal and info.p == 1 and support > SHARED_MASS_MIN_SUPPORT:
        # dense W1 laws: the solver moves only (p - q)+ onto (q - p)+, whose supports together
        # cover the union of the two supports (for independent supports of s of n states,
        # n (1 - (1 - s/n)^2) of them) at most
        cells = rows * max(n * (1.0 - (1.0 - support / n) ** 2) - 1.0, 1.0)
    else:
        cells = _cells(rows, support, support)
    coupling = exact and info.exact
    if not coupling:
        per_cell = SWEEP_CELL_BYTES
    elif info.rows == "per-action" or cells < COMPILED_PAIR_SYSTEM_CELLS:
        per_cell = COUPLING_CELL_BYTES  # bisim's systems are built from the chosen rows' plans, by numpy
    else:
        per_cell = COUPLING_CELL_BYTES_COMPILED
    return Estimate(
        base + per_cell * cells,
        "coupling iteration" if coupling else "value iteration",
        f"{pairs:,.0f} pairs, {cells:,.0f} plan cells",
    )


def estimate_solve(mdp: FiniteMDP, metric: str, method: str = "auto", full_diagonal: bool = False) -> Estimate:
    """The peak memory that solving ``metric`` on ``mdp`` itself (no quotient) will add to the process.

    The quotient can only make a solve smaller, so it is left out: the estimate is for the MDP as
    given. ``metric`` and ``method`` are assumed checked.
    """
    return estimate_shape(Shape.of(mdp), metric, method, full_diagonal)


#: Of the Stein form's :data:`STEIN_MATRICES`, those shaped like P (P, the policy's transitions and
#: the power of P); the others are shaped like the distances (A, the iterate, the products).
STEIN_FACTOR_MATRICES = 3


def estimate_between(mdp_a: FiniteMDP, mdp_b: FiniteMDP, metric: str, method: str = "auto") -> Estimate:
    """The peak memory of :func:`bisimkit.between.solve_between` (``metric`` and ``method`` checked).

    Smith's doubling holds the P-shaped matrices of each MDP (n_A x n_A and n_B x n_B) and the
    n_A x n_B distance-shaped ones. The pair forms have n_A n_B unknowns (cross pairs, no shared-mass
    reduction), and their pair index and distance matrices are n_A x n_B too
    (:func:`bisimkit.between.cross_pairs`); the supports are the two MDPs' averaged by their states.
    """
    a, b = Shape.of(mdp_a), Shape.of(mdp_b)
    na, nb = a.n, b.n
    exact = method in ("auto", "exact")
    if operator(metric).kind == "stein":
        factors = STEIN_FACTOR_MATRICES if exact else STEIN_FACTOR_MATRICES - 1  # no power of P
        others = STEIN_MATRICES - STEIN_FACTOR_MATRICES - (0 if exact else 1)
        total = 8.0 * (factors * (na * na + nb * nb) + others * na * nb)
        return Estimate(
            total,
            "Smith doubling" if exact else "value iteration",
            f"{na} x {na}, {nb} x {nb} and {na} x {nb} matrices",
        )
    n = na + nb

    def mean(x: float, y: float) -> float:
        return (na * x + nb * y) / max(n, 1)

    union = Shape(
        n,
        a.m,
        mean(a.transition_support, b.transition_support),
        mean(a.policy_support, b.policy_support),
        mean(a.pi_support, b.pi_support),
    )
    estimate = estimate_shape(union, metric, method, full_diagonal=True, pairs=float(na * nb), cells=float(na * nb))
    return replace(estimate, sizes=estimate.sizes.replace("pairs", "cross pairs", 1))


# ---------------------------------------------------------------- available
@dataclass(frozen=True)
class Available:
    """What the process may still allocate: the smallest of ``ram`` (``MemAvailable``), ``cgroup``
    (its limit less its usage, page cache it can reclaim counted as free) and ``address_space``
    (``RLIMIT_AS`` less the process's virtual size); None where there is no such limit or it cannot
    be read."""

    ram: float | None
    cgroup: float | None
    address_space: float | None

    @property
    def bytes(self) -> float:
        known = [v for v in (self.ram, self.cgroup, self.address_space) if v is not None]
        return max(min(known), 0.0) if known else math.inf

    def describe(self) -> str:
        parts = [
            f"{name} {format_bytes(v) if v is not None else 'no limit'}"
            for name, v in (("RAM available", self.ram), ("cgroup", self.cgroup), ("address space", self.address_space))
        ]
        return ", ".join(parts)


def _read_system_file(path: str | Path) -> str:
    """A small system file's text (``/proc``, ``/sys/fs/cgroup``): read with the operating system's own calls,
    a few microseconds where ``Path.read_text`` takes tens, since the memory check reads them on every solve.
    Raises OSError as ``open`` does."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace")


def _read_number(path: Path) -> float | None:
    try:
        text = _read_system_file(path).split()[0]
    except (OSError, IndexError):
        return None
    if text == "max":
        return math.inf
    try:
        return float(text)
    except ValueError:
        return None


def _proc_bytes(path: str, key: str) -> float | None:
    """The ``key:`` line of a /proc file given in kB (``/proc/meminfo``, ``/proc/self/status``), in bytes."""
    try:
        for line in _read_system_file(path).splitlines():
            if line.startswith(key + ":"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reclaimable(stat: Path, key: str) -> float:
    try:
        for line in _read_system_file(stat).splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return float(value)
    except (OSError, ValueError):
        pass
    return 0.0


def _cgroup_dirs(root: Path, membership: Path) -> list[tuple[Path, str]]:
    """The directories of this process's memory cgroup and its ancestors, with the version
    (``"v2"`` or ``"v1"``), innermost first; a path that is not mounted here falls back to the mount's root.
    ``membership`` is ``/proc/self/cgroup``, ``root`` where the cgroup file systems are mounted."""
    try:
        text = _read_system_file(membership)
    except OSError:
        return []
    return list(_resolve_cgroup_dirs(root, text))


@functools.lru_cache(maxsize=8)
def _resolve_cgroup_dirs(root: Path, membership_text: str) -> tuple[tuple[Path, str], ...]:
    """:func:`_cgroup_dirs` for the contents of the membership file, found once per process for each
    contents (the directories are looked up on the file system: half a millisecond, per solve otherwise)."""
    found = []
    for line in membership_text.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            version, mount = (
                "v2",
                root if (root / "memory.max").exists() or (root / "cgroup.controllers").exists() else root / "unified",
            )
        elif "memory" in controllers.split(","):
            version, mount = "v1", root / "memory"
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            folder = mount.joinpath(*parts[:depth])
            if folder.is_dir():
                found.append((folder, version))
    return tuple(found)


def cgroup_room(root: Path = Path("/sys/fs/cgroup"), membership: Path = Path("/proc/self/cgroup")) -> float | None:
    """What this process's memory cgroup still allows (its tightest limit on the path less the
    usage there, reclaimable page cache counted as free), or None when no limit is set."""
    room = math.inf
    for folder, version in _cgroup_dirs(root, membership):
        names = (
            ("memory.max", "memory.current", "inactive_file")
            if version == "v2"
            else ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        )
        limit = _read_number(folder / names[0])
        if limit is None or limit >= 2.0**60:
            continue  # no limit here ("max", or v1's page-rounded largest number)
        usage = _read_number(folder / names[1])
        if usage is None:
            continue
        room = min(room, limit - usage + _reclaimable(folder / "memory.stat", names[2]))
    return None if math.isinf(room) else room


def address_space_room() -> float | None:
    """``RLIMIT_AS`` less the process's current virtual size, or None without such a limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    size = _proc_bytes("/proc/self/status", "VmSize")
    return float(soft) - (size or 0.0)


def available_memory() -> Available:
    """See :class:`Available`."""
    return Available(_proc_bytes("/proc/meminfo", "MemAvailable"), cgroup_room(), address_space_room())


def format_bytes(value: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


# -------------------------------------------------------------------- check
class NotEnoughMemory(InputError):
    """A solve whose estimated peak does not fit in the memory available; ``force`` overrides it.

    The command line shows the override as ``--force`` (:meth:`for_option`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message + "; force=True tries anyway")
        self.plain = message

    def for_option(self, options: set[str] | frozenset[str] = frozenset()) -> str:
        override = "--force tries anyway" if "--force" in options else "force=True tries anyway"
        return f"{self.plain}; {override}"


def _largest_fitting(fits, low: int, high: int) -> int:
    """The largest integer in [low, high] for which the monotone ``fits`` holds (low - 1 if none)."""
    if not fits(low):
        return low - 1
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def would_fit(shape: Shape, metric: str, method: str, full_diagonal: bool, quotient: bool, room: float) -> list[str]:
    """What would fit in ``room`` bytes (with :data:`MARGIN`): the quotient when it was turned off,
    the float32 eps-bar matrix (which the solver takes only from :data:`EPS_BAR_SINGLE_PAIRS` pairs),
    value iteration, sparser transitions, fewer states."""
    info = operator(metric)
    name = info.base or metric

    def fits(estimate: Estimate) -> bool:
        return MARGIN * estimate.bytes <= room

    ideas = []
    if not quotient and info.relation is not None and not full_diagonal:
        ideas.append("quotient first (smaller when states merge)")
    if info.kind == "pair-linear" and shape.n * (shape.n - 1) / 2 >= EPS_BAR_SINGLE_PAIRS:
        single = estimate_shape(shape, name, method, full_diagonal, single_eps_bar=True)
        if fits(single):
            ideas.append(
                f"the float32 eps-bar matrix ({format_bytes(single.bytes)}; the solver takes it "
                f"from 1,000,000 pairs when the float64 one would fill half the RAM)"
            )
    if method != "vi":
        vi = estimate_shape(shape, name, "vi", full_diagonal)
        if vi.path == "value iteration" and fits(vi):
            ideas.append(f"method vi ({format_bytes(vi.bytes)})")
    if shape.transition_support > 1:
        k = _largest_fitting(
            lambda s: fits(
                estimate_shape(
                    replace(
                        shape,
                        transition_support=float(s),
                        pi_support=min(shape.pi_support, s * max(shape.policy_support, 1)),
                    ),
                    name,
                    method,
                    full_diagonal,
                )
            ),
            1,
            int(math.ceil(shape.transition_support)) - 1,
        )
        if k >= 1:
            ideas.append(f"sparser transitions (about {k} next states per state-action pair)")
    states = _largest_fitting(
        lambda n: fits(estimate_shape(shape.scaled(n), name, method, full_diagonal)), 2, max(shape.n - 1, 2)
    )
    if states >= 2:
        ideas.append(f"about {states} states")
    return ideas


def check_memory(
    mdp: FiniteMDP,
    metric: str,
    method: str = "auto",
    full_diagonal: bool = False,
    quotient: bool = True,
    available: Available | None = None,
) -> Estimate:
    """Raise :class:`NotEnoughMemory` when :data:`MARGIN` times the solve's estimate exceeds the
    available memory; return the estimate otherwise."""
    shape = Shape.of(mdp)
    estimate = estimate_shape(shape, metric, method, full_diagonal)
    return _refuse_unless_fits(
        estimate,
        f"{metric} on {mdp.n_states} states",
        available,
        lambda room: would_fit(shape, metric, method, full_diagonal, quotient, room),
    )


def check_memory_blocks(
    mdp: FiniteMDP, metric: str, blocks: int, method: str = "auto", available: Available | None = None
) -> Estimate:
    """:func:`check_memory` for a solve on the ``blocks`` blocks of the metric's largest relation
    (:mod:`bisimkit.quotient`): the engine's estimate at ``blocks`` states with the MDP's own supports, plus
    the lifted ``n x n`` distances."""
    shape = Shape.of(mdp)
    inner = estimate_shape(shape.scaled(blocks), metric, method)
    lifted = 8.0 * mdp.n_states**2
    estimate = Estimate(
        inner.bytes + lifted,
        f"{inner.path} on the quotient",
        f"{blocks} blocks of {mdp.n_states} states: {inner.sizes}; the lifted {mdp.n_states}² distances",
    )
    return _refuse_unless_fits(
        estimate, f"{metric} on {blocks} blocks of {mdp.n_states} states", available, lambda room: []
    )


def check_memory_between(
    mdp_a: FiniteMDP, mdp_b: FiniteMDP, metric: str, method: str = "auto", available: Available | None = None
) -> Estimate:
    """:func:`check_memory` for :func:`bisimkit.between.solve_between` (:func:`estimate_between`);
    value iteration is the one thing it suggests."""
    estimate = estimate_between(mdp_a, mdp_b, metric, method)

    def ideas(room: float) -> list[str]:
        if method == "vi":
            return []
        vi = estimate_between(mdp_a, mdp_b, metric, "vi")
        fits = vi.path == "value iteration" and MARGIN * vi.bytes <= room
        return [f"method vi ({format_bytes(vi.bytes)})"] if fits else []

    return _refuse_unless_fits(
        estimate, f"{metric} between {mdp_a.n_states} and {mdp_b.n_states} states", available, ideas
    )


def _refuse_unless_fits(estimate: Estimate, what: str, available: Available | None, ideas) -> Estimate:
    """``estimate`` when :data:`MARGIN` times it fits in ``available`` (read now when None), else
    :class:`NotEnoughMemory` naming ``what``, the estimate, the limit and ``ideas(room)``."""
    available = available_memory() if available is None else available
    room = available.bytes
    if MARGIN * estimate.bytes <= room:
        return estimate
    found = ideas(room)
    fit = f"; would fit: {', '.join(found)}" if found else ""
    raise NotEnoughMemory(
        f"memory: {what} needs about {estimate}, "
        f"{MARGIN:g}x that is over the {format_bytes(room)} available "
        f"({available.describe()}){fit}"
    )
