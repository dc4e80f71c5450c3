"""Unordered state pairs, the unknowns of the symmetric solvers.

Every operator in bisimkit is symmetric, so a distance matrix is stored as a
vector over the pairs ``s < t`` (or ``s <= t`` when the diagonal is unknown
too, as for the sampled operators whose fixed points have ``d(s, s) > 0``).
"""

from __future__ import annotations

import numpy as np


class PairSpace:
    """Index of the pairs ``{s, t}`` of ``n`` states, with or without ``s == t``."""

    def __init__(self, n: int, diagonal: bool, s: np.ndarray | None = None, t: np.ndarray | None = None) -> None:
        self.n = n
        self.diagonal = diagonal
        if s is None:
            self.s, self.t = np.triu_indices(n, 0 if diagonal else 1)
        else:
            self.s, self.t = np.asarray(s, dtype=np.int64), np.asarray(t, dtype=np.int64)
        self.index = np.full((n, n), -1, dtype=np.int64)
        ids = np.arange(len(self.s), dtype=np.int64)
        self.index[self.s, self.t] = ids
        self.index[self.t, self.s] = ids

    @classmethod
    def diagonal_only(cls, n: int) -> "PairSpace":
        """Just the pairs (s, s): for checking that F(d) vanishes on the diagonal."""
        states = np.arange(n)
        return cls(n, True, states, states)

    def __len__(self) -> int:
        return int(self.s.size)

    def to_matrix(self, x: np.ndarray) -> np.ndarray:
        """The symmetric n x n matrix with these pair values (diagonal 0 if not stored)."""
        D = np.zeros((self.n, self.n))
        D[self.s, self.t] = x
        D[self.t, self.s] = x
        return D

    def from_matrix(self, D: np.ndarray) -> np.ndarray:
        """The pair values of a matrix (its upper triangle)."""
        return np.asarray(D)[self.s, self.t]

    def zeros(self) -> np.ndarray:
        """A zero vector over the pairs."""
        return np.zeros(len(self))
