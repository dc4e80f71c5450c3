"""State pairs, the unknowns of the solvers.

Every operator in bisimkit is symmetric, so on one MDP a distance matrix is stored as a vector
over the pairs ``s < t`` (or ``s <= t`` when the diagonal is unknown too, as for the sampled
operators whose fixed points have ``d(s, s) > 0``). Between two MDPs A and B the unknowns are the
cross pairs ``(s, t)``, s a state of A and t one of B (:meth:`PairSpace.cross`): their matrix is
``n_A x n_B`` and not symmetric.
"""

from __future__ import annotations

import numpy as np


class PairSpace:
    """Index of the pairs of states, on one MDP (``{s, t}`` of ``n`` states, with or without ``s == t``) or
    between two (:meth:`cross`).

    ``s`` and ``t`` are the two states of each pair (``t`` a state of the second MDP for cross pairs);
    ``index[i, j]`` is the pair of ``(i, j)`` (-1 for none), of shape :attr:`shape`: ``(n, n)`` and
    symmetric on one MDP, ``(n_A, n_B)`` between two.
    """

    def __init__(self, n: int, diagonal: bool, s: np.ndarray | None = None, t: np.ndarray | None = None) -> None:
        self.n = n
        self.diagonal = diagonal
        self.symmetric = True
        self.shape = (n, n)
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

    @classmethod
    def cross(cls, n_a: int, n_b: int) -> "PairSpace":
        """The ``n_A n_B`` pairs ``(s, t)`` between the states of two MDPs, pair ``s n_B + t``."""
        self = cls.__new__(cls)
        self.n = n_a
        self.diagonal = False
        self.symmetric = False
        self.shape = (n_a, n_b)
        self.s = np.repeat(np.arange(n_a, dtype=np.int64), n_b)
        self.t = np.tile(np.arange(n_b, dtype=np.int64), n_a)
        self.index = np.arange(n_a * n_b, dtype=np.int64).reshape(n_a, n_b)
        return self

    def __len__(self) -> int:
        return int(self.s.size)

    def to_matrix(self, x: np.ndarray) -> np.ndarray:
        """The matrix with these pair values: symmetric n x n on one MDP (diagonal 0 if not stored),
        n_A x n_B between two."""
        D = np.zeros(self.shape)
        D[self.s, self.t] = x
        if self.symmetric:
            D[self.t, self.s] = x
        return D

    def from_matrix(self, D: np.ndarray) -> np.ndarray:
        """The pair values of a matrix (its upper triangle on one MDP)."""
        return np.asarray(D)[self.s, self.t]

    def zeros(self) -> np.ndarray:
        """A zero vector over the pairs."""
        return np.zeros(len(self))

    def side_maxima(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The row and the column maxima of ``to_matrix(|x|)`` (0 for a missing diagonal), from the pair vector
        without forming the matrix: the largest distance each state of the first and of the second side
        has to anything."""
        rows, cols = np.zeros(self.shape[0]), np.zeros(self.shape[1])
        if len(x):
            x = np.abs(x)
            np.maximum.at(rows, self.s, x)
            np.maximum.at(cols, self.t, x)
            if self.symmetric:
                np.maximum.at(rows, self.t, x)
                np.maximum.at(cols, self.s, x)
        return rows, cols
