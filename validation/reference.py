"""The slow, obviously-correct reference: per-pair value iteration with POT.

Written straight from the operator table of ``docs/operators.md`` and independent of bisimkit's
operators, transport and coupling code: a Python double loop over state pairs
that calls ``ot.emd2`` on the full n-state histograms at every sweep, the way
research code computes these metrics. The tests use it as an oracle on small
MDPs; ``benchmarks/baseline.py`` times it as the benchmarks' baseline.
"""

from __future__ import annotations

import math

import numpy as np
import ot


def nw_corner(p, q) -> np.ndarray:
    """North-west-corner (entangled) coupling by the textbook scalar loop."""
    p, q = list(map(float, p)), list(map(float, q))
    g = np.zeros((len(p), len(q)))
    i = j = 0
    rp, rq = p[0], q[0]
    while i < len(p) and j < len(q):
        x = min(rp, rq)
        g[i, j] += x
        rp -= x
        rq -= x
        if rp <= 1e-15:
            i += 1
            rp = p[i] if i < len(p) else 0.0
        if rq <= 1e-15:
            j += 1
            rq = q[j] if j < len(q) else 0.0
    return g


def _w1(p, q, d):
    return ot.emd2(p, q, d)


def _w2(p, q, d):
    return math.sqrt(max(ot.emd2(p, q, d**2), 0.0))


class ReferenceModel:
    """The MDP's arrays and derived quantities, computed by hand."""

    def __init__(self, mdp, ground="reward") -> None:
        self.P, self.R, self.c = mdp.transitions, mdp.rewards, mdp.discount
        self.n, self.m = self.R.shape
        self.pi = mdp.policy
        self.ground = ground
        if self.pi is not None:
            self.Rpi = np.array([sum(self.pi[s, a] * self.R[s, a] for a in range(self.m)) for s in range(self.n)])
            self.Ppi = np.array([sum(self.pi[s, a] * self.P[s, a] for a in range(self.m)) for s in range(self.n)])
            self.abar = self.pi @ mdp.action_values

    def G(self, s, a, t, b) -> float:
        if isinstance(self.ground, str) and self.ground == "reward":
            return abs(self.R[s, a] - self.R[t, b])
        if isinstance(self.ground, str) and self.ground == "policy":
            return float(np.abs(self.abar[s] - self.abar[t]).sum())
        return float(self.ground[s * self.m + a, t * self.m + b])

    def update(self, metric: str, d: np.ndarray, s: int, t: int) -> float:
        """F(d)(s, t) from the formula in docs/operators.md."""
        P, R, c, m, pi = self.P, self.R, self.c, self.m, self.pi
        if metric == "bisim":
            return max(abs(R[s, a] - R[t, a]) + c * _w1(P[s, a], P[t, a], d) for a in range(m))
        if metric == "pi":
            return abs(self.Rpi[s] - self.Rpi[t]) + c * _w1(self.Ppi[s], self.Ppi[t], d)
        if metric == "psm":
            return np.abs(self.abar[s] - self.abar[t]).sum() + c * _w1(self.Ppi[s], self.Ppi[t], d)
        if metric == "psm-sampled":
            return np.abs(self.abar[s] - self.abar[t]).sum() + c * self.Ppi[s] @ d @ self.Ppi[t]
        if metric == "mico":
            return abs(self.Rpi[s] - self.Rpi[t]) + c * self.Ppi[s] @ d @ self.Ppi[t]
        if metric == "dbc":
            return abs(self.Rpi[s] - self.Rpi[t]) + c * _w2(self.Ppi[s], self.Ppi[t], d)
        if metric == "dbc-sampled":
            return sum(
                pi[s, a] * pi[t, b] * (abs(R[s, a] - R[t, b]) + c * _w2(P[s, a], P[t, b], d))
                for a in range(m)
                for b in range(m)
                if pi[s, a] * pi[t, b] > 0
            )
        if metric in ("eps", "eps-avg", "eps-bar"):
            ge = nw_corner(pi[s], pi[t])
            total = 0.0
            for a in range(m):
                for b in range(m):
                    if ge[a, b] <= 0:
                        continue
                    if metric == "eps":
                        nxt = _w1(P[s, a], P[t, b], d)
                    elif metric == "eps-bar":
                        nxt = float(np.sum(nw_corner(P[s, a], P[t, b]) * d))
                    else:
                        nxt = 0.0
                    total += ge[a, b] * (self.G(s, a, t, b) + c * nxt)
            if metric == "eps-avg":
                total += c * _w1(self.Ppi[s], self.Ppi[t], d)
            return total
        raise ValueError(metric)


def reference_operator(mdp, metric: str, d: np.ndarray, ground="reward") -> np.ndarray:
    """F(d) on every ordered pair (s, t), diagonal included."""
    model = ReferenceModel(mdp, ground)
    return np.array([[model.update(metric, d, s, t) for t in range(model.n)] for s in range(model.n)])


def reference_fixed_point(mdp, metric: str, ground="reward", tol: float = 1e-11) -> np.ndarray:
    """Plain value iteration from 0 on every ordered pair until c/(1-c) * step <= tol."""
    if metric == "mico-reduced":
        U = reference_fixed_point(mdp, "mico", tol=tol)
        return U - np.diag(U)[:, None] / 2 - np.diag(U)[None, :] / 2
    c = mdp.discount
    d = np.zeros((mdp.n_states, mdp.n_states))
    for _ in range(100_000):
        new = reference_operator(mdp, metric, d, ground)
        step = np.max(np.abs(new - d))
        d = new
        if c * step / (1 - c) <= tol or step == 0:
            return d
    raise RuntimeError("reference value iteration did not converge")
