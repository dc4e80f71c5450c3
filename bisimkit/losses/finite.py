"""A finite MDP as torch models over state vectors, for the losses of :mod:`bisimkit.losses`.

State s is the vector ``E[s]`` (one-hot by default, or a fixed embedding E);
a vector is read back as the index of its nearest row of E. Actions are index
tensors (B,). Both samplers take uniform noise on (0, 1) and apply the inverse
CDF in index order, ``F^-1(u) = min{i : p[0] + ... + p[i] >= u}``:

* ``policy(z, u)`` draws a ~ pi(s);
* ``transition(z, a, u)`` draws s+ ~ P(s, a) and returns ``E[s+]``; on a grid
  (``state_shape``) it takes one uniform per coordinate and draws each
  coordinate from its law given the earlier ones (Rosenblatt).

These ARE reparametrised samplers: their breakpoints are those of
:mod:`bisimkit.couplings`, so sharing u between two states draws from the
entangled (north-west-corner) coupling computed there (``docs/couplings.md``),
and independent u from the product coupling. So with a :class:`TabularDistance` the expected
target of :func:`~bisimkit.losses.entangled_loss` is the ``eps-bar`` operator
applied to the table, and so on for the other losses (see
:mod:`validation.learning`, which checks the fixed points).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..couplings import dense_breakpoints, rosenblatt_breakpoints
from ..mdp import FiniteMDP
from ..transport import optimal_transport
from .core import NextW2, Reparam, Tensor, check_batch


def quantile_index(breaks: Tensor, u: Tensor) -> Tensor:
    """``min{i : breaks[i] >= u}`` per row: the quantile function with breakpoints ``breaks`` (B x k)."""
    idx = torch.searchsorted(breaks, u.to(breaks.dtype).reshape(-1, 1)).reshape(-1)
    return idx.clamp_max(breaks.shape[1] - 1)


def inverse_cdf(weights: Tensor, u: Tensor) -> Tensor:
    """``min{i : cdf_i >= u}`` per row, for weights (B x k, rows with positive sum) and u (B,).

    The breakpoints are :func:`bisimkit.couplings.dense_breakpoints` of the weights, so a
    uniform shared by two rows draws their entangled coupling exactly.
    """
    breaks = dense_breakpoints(weights.detach().to("cpu", torch.float64).numpy())
    return quantile_index(torch.as_tensor(breaks, dtype=weights.dtype, device=weights.device), u)


def rosenblatt_sample(laws: Tensor, shape: tuple[int, ...], u: Tensor) -> Tensor:
    """Flat indices drawn from laws (B x n) on the C-order cells of a grid ``shape``,
    coordinate by coordinate with one uniform each (u: B x len(shape))."""
    tables = [
        torch.as_tensor(t, dtype=laws.dtype, device=laws.device)
        for t in rosenblatt_breakpoints(laws.detach().to("cpu", torch.float64).numpy(), shape)
    ]
    return _rosenblatt_index(tables, torch.arange(laws.shape[0], device=laws.device), shape, u)


def _rosenblatt_index(tables: list[Tensor], rows: Tensor, shape: tuple[int, ...], u: Tensor) -> Tensor:
    """Flat grid indices drawn with :func:`bisimkit.couplings.rosenblatt_breakpoints` tables
    (one per coordinate, indexed by law row and flat prefix)."""
    flat = torch.zeros(len(rows), dtype=torch.int64, device=rows.device)
    for axis, size in enumerate(shape):
        i = quantile_index(tables[axis][rows, flat], u[:, axis].contiguous())
        flat = flat * size + i
    return flat


def _projection_keys(E: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A direction w whose projections ``E @ w`` separate the states well: (w, sorted keys, state order)."""
    n = E.shape[0]
    w: np.ndarray | None
    if np.array_equal(E, np.eye(n)):
        w = np.arange(n, dtype=np.float64)
    else:
        rng = np.random.default_rng(0)
        best, w = -1.0, None
        for _ in range(64):  # the projection with the widest relative gap between neighbouring states
            cand = rng.normal(size=(E.shape[1],))
            keys = np.sort(E @ cand)
            gap = np.min(np.diff(keys), initial=np.inf) / (np.max(np.abs(keys)) + 1e-300)
            if gap > best:
                best, w = gap, cand
        if n > 1 and best < 1e-9:
            raise ValueError("embedding: cannot tell the states apart by a projection")
    assert w is not None  # E is finite, so the first projection's gap beats -1
    proj = E @ w
    order = np.argsort(proj, kind="stable")
    keys = proj[order]
    if n == 1:
        keys = np.concatenate([keys, keys + 1.0])
        order = np.concatenate([order, order])
    return w, keys, order.astype(np.float64)


class FiniteModel:
    """The policy, transition, rewards and mean actions of a :class:`FiniteMDP` as torch
    callables over state vectors (rows of ``embedding``, default the identity)."""

    def __init__(self, mdp: FiniteMDP, embedding: np.ndarray | None = None) -> None:
        mdp.require_policy("the learned losses")
        n = mdp.n_states
        E = np.eye(n) if embedding is None else np.asarray(embedding, dtype=np.float64)
        if E.ndim != 2 or E.shape[0] != n:
            raise ValueError(f"embedding: expected shape (n, D) with n = {n} states, got {E.shape}")
        if not np.all(np.isfinite(E)):
            raise ValueError("embedding: not finite")
        gaps = np.linalg.norm(E[:, None, :] - E[None, :, :], axis=2) + np.eye(n)
        if n > 1 and gaps.min() <= 1e-6:
            raise ValueError("embedding: two states have (nearly) the same vector")
        self.mdp = mdp
        self.embedding = E
        self._keys = _projection_keys(E)
        self._one_hot = np.array_equal(E, np.eye(n))
        self.shape = tuple(mdp.state_shape) if mdp.state_shape is not None and len(mdp.state_shape) > 1 else None
        self.policy = Reparam(self._act, 1, "uniform")
        self.transition = Reparam(self._step, len(self.shape) if self.shape else 1, "uniform")
        self._cache: dict = {}

    @property
    def n_states(self) -> int:
        """Number of states."""
        return self.mdp.n_states

    @property
    def dim(self) -> int:
        """Length of a state vector."""
        return int(self.embedding.shape[1])

    def _t(self, name: str, like: Tensor, exact: bool = False) -> Tensor:
        """MDP array ``name`` on ``like``'s device (float64 when ``exact``, else like's dtype)."""
        dtype = torch.float64 if exact else like.dtype
        key = (name, like.device, dtype)
        if key not in self._cache:
            self._cache[key] = torch.tensor(
                np.array(self._source(name), dtype=np.float64), dtype=dtype, device=like.device
            )
        return self._cache[key]

    def _source(self, name: str) -> np.ndarray:
        """The numpy array behind tensor ``name``; ``breaks`` are the quantile breakpoints of the
        policy (``pi``) and of the transition rows (``P``, or ``P0``, ``P1``... per grid coordinate)."""
        mdp = self.mdp
        if name.startswith("breaks-"):
            if name == "breaks-pi":
                return dense_breakpoints(mdp.require_policy("the learned losses"))
            rows = mdp.transitions.reshape(mdp.n_states * mdp.n_actions, mdp.n_states)
            if self.shape is None:
                return dense_breakpoints(rows)
            return rosenblatt_breakpoints(rows, self.shape)[int(name[len("breaks-P") :])]
        return {
            "E": self.embedding,
            "w": self._keys[0],
            "keys": self._keys[1],
            "order": self._keys[2],
            "R": mdp.rewards,
            "Rpi": mdp.reward_pi,
            "abar": mdp.mean_action,
        }[name]

    def states(self, index: Tensor, like: Tensor | None = None) -> Tensor:
        """The vectors of states ``index`` (B,) (float64 on the CPU unless ``like`` says otherwise)."""
        like = torch.zeros((), dtype=torch.float64) if like is None else like
        return self._t("E", like)[index.to(device=like.device)]

    def index(self, z: Tensor) -> Tensor:
        """The state index of each row of z, which must be state vectors (rows of the embedding).

        Rows are told apart by one projection ``z @ w`` with well-separated values
        per state (w = 0, 1, ..., n-1 for one-hot states), matched to the nearest key.
        """
        check_batch("z", z)
        if z.shape[1] != self.dim:
            raise ValueError(f"z: expected {self.dim} columns (the state vectors), got shape {tuple(z.shape)}")
        w, keys, order = (self._t(name, z, exact=True) for name in ("w", "keys", "order"))
        v = z.to(torch.float64) @ w
        if self._one_hot:  # the keys are 0, 1, ..., n-1
            return v.round().long().clamp_(0, self.n_states - 1)
        hi = torch.searchsorted(keys, v).clamp(1, len(keys) - 1)
        nearer_lo = (v - keys[hi - 1]) < (keys[hi] - v)
        return order[hi - nearer_lo.long()].long()

    def _act(self, z: Tensor, u: Tensor) -> Tensor:
        return quantile_index(self._t("breaks-pi", z, exact=True)[self.index(z)], u[:, 0])

    def _step(self, z: Tensor, a: Tensor, u: Tensor) -> Tensor:
        row = self.index(z) * self.mdp.n_actions + a.to(device=z.device)
        if self.shape is None:
            nxt = quantile_index(self._t("breaks-P", z, exact=True)[row], u[:, 0])
        else:
            tables = [self._t(f"breaks-P{axis}", z, exact=True) for axis in range(len(self.shape))]
            nxt = _rosenblatt_index(tables, row, self.shape, u)
        return self._t("E", z)[nxt]

    def reward(self, z: Tensor, a: Tensor) -> Tensor:
        """R(s, a) (B,)."""
        return self._t("R", z)[self.index(z), a]

    def mean_reward(self, z: Tensor) -> Tensor:
        """The policy-averaged reward Rpi(s) (B,)."""
        return self._t("Rpi", z)[self.index(z)]

    def mean_action(self, z: Tensor) -> Tensor:
        """The mean action abar(s) (B x k)."""
        return self._t("abar", z)[self.index(z)]

    def w2_table(self, d: np.ndarray) -> np.ndarray:
        """``W2(P(s,a), P(t,b); d)`` for all (s, a), (t, b), as an (n*m) x (n*m) matrix.

        ``d`` is clipped at 0 (the cost is d^2) and need not have a zero diagonal.
        """
        n, m = self.mdp.n_states, self.mdp.n_actions
        d = np.asarray(d, dtype=np.float64)
        if d.shape != (n, n):
            raise ValueError(f"d: expected shape {(n, n)}, got {d.shape}")
        rows = self.mdp.transition_rows
        src, dst = np.triu_indices(n * m)
        values, _ = optimal_transport(rows, src, rows, dst, np.maximum(d, 0.0), p=2, zero_diagonal=False)
        W = np.zeros((n * m, n * m))
        W[src, dst] = values
        W[dst, src] = values
        return W

    def next_w2(self, d: np.ndarray) -> NextW2:
        """The finite DBC next-state term for :func:`~bisimkit.losses.dbc_loss`: exact
        ``W2(P(s,a), P(t,a'); d)`` under the distance table ``d`` (fixed at this call)."""
        W = self.w2_table(d)
        m = self.mdp.n_actions
        cache: dict = {}

        def w2(z: Tensor, a: Tensor, z2: Tensor, a2: Tensor) -> Tensor:
            key = (z.device, z.dtype)
            if key not in cache:
                cache[key] = torch.as_tensor(W, dtype=z.dtype, device=z.device)
            return cache[key][self.index(z) * m + a, self.index(z2) * m + a2]

        return w2


class TabularDistance(nn.Module):
    """A free symmetric table d[s, t] (diagonal included), read through ``model.index``.

    Entry (s, t) with s <= t is the parameter ``table[s, t]``; the lower triangle
    is unused. Starts at 0.
    """

    def __init__(self, model: FiniteModel, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.model = model
        n = model.n_states
        self.table = nn.Parameter(torch.zeros((n, n), dtype=dtype))

    def forward(self, z: Tensor, z2: Tensor) -> Tensor:
        """d(z, z') (B,)."""
        i, j = self.model.index(z), self.model.index(z2)
        return self.table[torch.minimum(i, j), torch.maximum(i, j)].to(z.dtype)

    def matrix(self) -> np.ndarray:
        """The symmetric n x n matrix the table represents."""
        T = np.triu(self.table.detach().cpu().numpy().astype(np.float64))
        return T + np.triu(T, 1).T
