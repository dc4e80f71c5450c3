"""Slow, obviously-correct reference implementations for the tests.

Plain value iteration over every ordered pair (s, t), calling ``ot.emd2`` on
the full n-state histograms at every step, written straight from the SPEC
table and independent of bisimkit's operators, transport and couplings code.
"""

import numpy as np
import ot


def nw_corner(p, q):
    """North-west-corner coupling by the textbook scalar loop."""
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


def w1(p, q, d):
    return ot.emd2(p, q, d)


def w2(p, q, d):
    return np.sqrt(max(ot.emd2(p, q, d ** 2), 0.0))


def reference_operator(mdp, metric, d, ground="reward"):
    P, R, c = mdp.transitions, mdp.rewards, mdp.discount
    n, m = R.shape
    pi = mdp.policy
    out = np.zeros((n, n))
    if pi is not None:
        Rpi = np.array([sum(pi[s, a] * R[s, a] for a in range(m)) for s in range(n)])
        Ppi = np.array([sum(pi[s, a] * P[s, a] for a in range(m)) for s in range(n)])
        abar = pi @ mdp.action_values

    def G(s, a, t, b):
        if isinstance(ground, str) and ground == "reward":
            return abs(R[s, a] - R[t, b])
        if isinstance(ground, str) and ground == "policy":
            return np.abs(abar[s] - abar[t]).sum()
        return ground[s * m + a, t * m + b]

    for s in range(n):
        for t in range(n):
            if metric == "bisim":
                out[s, t] = max(abs(R[s, a] - R[t, a]) + c * w1(P[s, a], P[t, a], d) for a in range(m))
            elif metric == "pi":
                out[s, t] = abs(Rpi[s] - Rpi[t]) + c * w1(Ppi[s], Ppi[t], d)
            elif metric == "psm":
                out[s, t] = np.abs(abar[s] - abar[t]).sum() + c * w1(Ppi[s], Ppi[t], d)
            elif metric == "psm-sampled":
                out[s, t] = np.abs(abar[s] - abar[t]).sum() + c * Ppi[s] @ d @ Ppi[t]
            elif metric == "mico":
                out[s, t] = abs(Rpi[s] - Rpi[t]) + c * Ppi[s] @ d @ Ppi[t]
            elif metric == "dbc":
                out[s, t] = abs(Rpi[s] - Rpi[t]) + c * w2(Ppi[s], Ppi[t], d)
            elif metric == "dbc-sampled":
                out[s, t] = sum(pi[s, a] * pi[t, b] * (abs(R[s, a] - R[t, b]) + c * w2(P[s, a], P[t, b], d))
                                for a in range(m) for b in range(m) if pi[s, a] * pi[t, b] > 0)
            elif metric in ("eps", "eps-avg", "eps-bar"):
                ge = nw_corner(pi[s], pi[t])
                total = 0.0
                for a in range(m):
                    for b in range(m):
                        if ge[a, b] <= 0:
                            continue
                        if metric == "eps":
                            nxt = w1(P[s, a], P[t, b], d)
                        elif metric == "eps-bar":
                            nxt = float(np.sum(nw_corner(P[s, a], P[t, b]) * d))
                        else:
                            nxt = 0.0
                        total += ge[a, b] * (G(s, a, t, b) + c * nxt)
                if metric == "eps-avg":
                    total += c * w1(Ppi[s], Ppi[t], d)
                out[s, t] = total
            else:
                raise ValueError(metric)
    return out


def reference_fixed_point(mdp, metric, ground="reward", tol=1e-11):
    """Plain value iteration from 0 until c/(1-c) * step <= tol."""
    c = mdp.discount
    n = mdp.n_states
    if metric == "mico-reduced":
        U = reference_fixed_point(mdp, "mico", tol=tol)
        return U - np.diag(U)[:, None] / 2 - np.diag(U)[None, :] / 2
    d = np.zeros((n, n))
    for _ in range(100_000):
        new = reference_operator(mdp, metric, d, ground)
        step = np.max(np.abs(new - d))
        d = new
        if c * step / (1 - c) <= tol or step == 0:
            return d
    raise RuntimeError("reference value iteration did not converge")
