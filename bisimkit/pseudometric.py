"""Checks that a distance matrix is a pseudometric, with the worst offenders named."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class PseudometricReport:
    """Worst violations of each pseudometric axiom (0 means the axiom holds exactly).

    ``triangle`` is ``max d[i,k] - d[i,j] - d[j,k]`` over all triples, attained
    at ``triangle_triple = (i, j, k)``.
    """

    n: int
    min_value: float
    negative_index: tuple[int, int] | None
    diagonal: float
    diagonal_index: int | None
    asymmetry: float
    asymmetry_pair: tuple[int, int] | None
    triangle: float
    triangle_triple: tuple[int, int, int] | None
    atol: float

    @property
    def holds(self) -> bool:
        """All axioms hold within ``atol``."""
        return (
            self.min_value >= -self.atol
            and self.diagonal <= self.atol
            and self.asymmetry <= self.atol
            and self.triangle <= self.atol
        )

    @property
    def worst_margin(self) -> float:
        """The largest violation over all axioms (<= atol when it holds)."""
        return max(-self.min_value, self.diagonal, self.asymmetry, self.triangle)

    def describe(self) -> str:
        """One line per failed axiom, or 'pseudometric'."""
        if self.holds:
            return f"pseudometric (worst violation {self.worst_margin:.3g} <= {self.atol:g})"
        lines = []
        if self.min_value < -self.atol:
            lines.append(f"negative entry {self.min_value:.6g} at {self.negative_index}")
        if self.diagonal > self.atol:
            lines.append(f"nonzero diagonal {self.diagonal:.6g} at index {self.diagonal_index}")
        if self.asymmetry > self.atol:
            lines.append(f"asymmetry {self.asymmetry:.6g} at {self.asymmetry_pair}")
        if self.triangle > self.atol:
            assert self.triangle_triple is not None  # None only for an empty matrix, which violates nothing
            i, j, k = self.triangle_triple
            lines.append(f"triangle inequality fails by {self.triangle:.6g}: d[{i},{k}] > d[{i},{j}] + d[{j},{k}]")
        return "; ".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        out = asdict(self)
        out["holds"] = self.holds
        return out


def check_pseudometric(d: np.ndarray, atol: float = 1e-9) -> PseudometricReport:
    """Check non-negativity, zero diagonal, symmetry and the triangle inequality.

    The triangle check is exact and costs O(n^3) time with O(n^2) memory.
    """
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"distance matrix must be square, got shape {d.shape}")
    n = d.shape[0]
    if n == 0:
        return PseudometricReport(0, 0.0, None, 0.0, None, 0.0, None, 0.0, None, atol)
    neg = np.unravel_index(np.argmin(d), d.shape)
    diag = np.abs(np.diag(d))
    asym = np.abs(d - d.T)
    asym_idx = np.unravel_index(np.argmax(asym), d.shape)
    # best[i, k] = min_j d[i, j] + d[j, k], with the j that attains it.
    best = np.full((n, n), np.inf)
    arg = np.zeros((n, n), dtype=np.int64)
    for j in range(n):
        via = d[:, j, None] + d[None, j, :]
        better = via < best
        best[better] = via[better]
        arg[better] = j
    gap = d - best
    tri_idx = np.unravel_index(np.argmax(gap), d.shape)
    i, k = int(tri_idx[0]), int(tri_idx[1])
    return PseudometricReport(
        n=n,
        min_value=float(d[neg]),
        negative_index=(int(neg[0]), int(neg[1])),
        diagonal=float(diag.max()),
        diagonal_index=int(np.argmax(diag)),
        asymmetry=float(asym[asym_idx]),
        asymmetry_pair=(int(asym_idx[0]), int(asym_idx[1])),
        triangle=max(float(gap[i, k]), 0.0),
        triangle_triple=(i, int(arg[i, k]), k),
        atol=atol,
    )


def metric_closure(d: np.ndarray) -> np.ndarray:
    """The shortest-path closure of a non-negative symmetric ``d`` with zero diagonal:
    ``min`` over paths of the summed entries, the largest pseudometric below ``d``
    (Floyd-Warshall, O(n^3) time, O(n^2) memory; ``d`` itself when it is a pseudometric)."""
    closed = np.array(d, dtype=np.float64, copy=True)
    for j in range(closed.shape[0]):
        np.minimum(closed, closed[:, j, None] + closed[None, j, :], out=closed)
    return closed
