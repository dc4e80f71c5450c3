"""Exact fixed points of the bisimulation operators in rational arithmetic, for tiny MDPs.

An independent reference for the certificate tests: it shares no code with the
solvers (no simplex, couplings, pair spaces, averages or linear solvers of bisimkit;
it reads only the arrays of the MDP). Every input float is converted to a
:class:`fractions.Fraction` exactly, and everything after that is exact:

* the policy averages ``Rpi(s) = sum_a pi(a|s) R(s, a)``, ``Ppi(s) = sum_a pi(a|s) P(s, a)``
  and the mean actions ``abar(s) = sum_a pi(a|s) action_values[a]``, and every one-step
  term built from them (``|Rpi(s) - Rpi(t)|``, ``||abar(s) - abar(t)||_1``, ``G``);
* the entangled coupling (north-west corner, in index order) keeps every cell of
  positive mass, however small, and its marginals are checked to be the two laws exactly;
* optimal transport (W1): the transportation simplex (MODI) with Bland's rule, from
  the north-west corner basis, on integers (masses and costs scaled by a common
  denominator);
* the transport operators (pi, psm, eps, eps-avg, bisim): strategy iteration. The
  minimising player fixes one optimal plan per transport problem; the value of that
  strategy is a linear system (for bisim, the maximising player's best response over
  actions is found by its own strategy iteration), solved by exact elimination;
  plans are switched only where another plan is strictly cheaper under that value.
  The values decrease strictly and the strategies are finite, so it ends at a
  strategy whose value d satisfies d = F(d) exactly;
* the linear operators (eps-bar, mico, psm-sampled) and mico-reduced: one exact solve;
  dbc-sampled too when every next-state law the policy uses is a point mass (W2 between
  point masses is d itself, so the operator is linear; ``solve`` refuses other MDPs).

Linear systems are solved by fraction-free Gauss-Jordan elimination on integer rows
(each row scaled by the common denominator of its entries, and divided by the gcd of its
entries after every update), so no rational is reduced entry by entry.

Transition and policy rows must sum to exactly 1 in rational arithmetic of their float
entries (``ValueError`` otherwise): the reference then solves the very MDP the solver
sees. W2 operators (dbc, dbc-sampled) have irrational fixed points and are not covered
(but for dbc-sampled's linear case above).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

EXACT_METRICS = ("pi", "psm", "bisim", "eps", "eps-avg", "eps-bar", "mico", "psm-sampled", "mico-reduced")
#: The metrics that take a ground, and the grounds the reference computes for them.
GROUNDS = {"eps": ("reward", "policy"), "eps-avg": ("reward", "policy"), "eps-bar": ("reward", "policy")}


def exact_fixed_point(mdp, metric: str, ground: str = "reward") -> np.ndarray:
    """The exact fixed point of ``metric`` on ``mdp`` (a bisimkit FiniteMDP), as an n x n float array.

    The rationals are rounded to the nearest float only at the end (error <= half an ulp)."""
    return to_float(exact_fixed_point_fractions(mdp, metric, ground))


def exact_fixed_point_fractions(mdp, metric: str, ground: str = "reward") -> list[list[Fraction]]:
    """The exact fixed point of ``metric`` on ``mdp`` as an n x n list of Fractions."""
    return _Reference(mdp, ground).solve(metric)


def to_float(D: list[list[Fraction]]) -> np.ndarray:
    return np.array([[float(v) for v in row] for row in D])


def error_against(distances: np.ndarray, exact: list[list[Fraction]]) -> dict:
    """How far the float matrix ``distances`` is from the exact one, computed exactly.

    Returns ``error`` (``max |distances - exact|``), ``excess`` (``max (|distances - exact| -
    u/2)``, u the spacing of the floats at the entry's exact value: the error beyond rounding
    the exact value to the nearest float), ``max_exact`` (``max |exact|``) and ``where`` (the
    entry of the largest excess). ``error``, ``excess`` and ``max_exact`` are Fractions."""
    error, excess, max_exact, where = Fraction(0), None, Fraction(0), (0, 0)
    for s, row in enumerate(exact):
        for t, v in enumerate(row):
            gap = abs(Fraction(float(distances[s, t])) - v)
            beyond = gap - Fraction(float(np.spacing(abs(float(v))))) / 2
            if excess is None or beyond > excess:
                excess, where = beyond, (s, t)
            error, max_exact = max(error, gap), max(max_exact, abs(v))
    return {"error": error, "excess": excess, "max_exact": max_exact, "where": where}


def _frac(x) -> Fraction:
    return Fraction(float(x))


def entangled_cells(p: list[Fraction], q: list[Fraction]) -> list[tuple[int, int, Fraction]]:
    """The entangled (north-west-corner, quantile) coupling of two histograms in index order: every
    cell of positive mass, none dropped. Its marginals are checked to be ``p`` and ``q`` exactly."""
    cells, i, j = [], 0, 0
    a, b = list(p), list(q)
    while i < len(a) and j < len(b):
        m = min(a[i], b[j])
        if m > 0:
            cells.append((i, j, m))
        a[i] -= m
        b[j] -= m
        if a[i] == 0:
            i += 1
        if j < len(b) and b[j] == 0:
            j += 1
    rows, cols = [Fraction(0)] * len(p), [Fraction(0)] * len(q)
    for x, y, m in cells:
        rows[x] += m
        cols[y] += m
    if rows != list(p) or cols != list(q):
        raise AssertionError("the entangled coupling's marginals are not the two laws")
    return cells


def transport(a: list[int], b: list[int], C: list[list[int]]) -> tuple[int, dict]:
    """Exact ``min <g, C>`` over couplings g of the integer histograms ``a`` and ``b`` (equal total
    mass) for the integer cost ``C``: the optimum and an optimal plan ``{(i, j): mass}`` (cells of
    positive mass). Transportation simplex with Bland's rule (no cycling); any exact numbers work,
    integers are fastest."""
    k, l = len(a), len(b)
    # North-west corner basis: a spanning tree of k + l - 1 cells (zero-flow cells keep it a tree).
    flow: dict[tuple[int, int], int] = {}
    ra, rb = list(a), list(b)
    i = j = 0
    while True:
        m = min(ra[i], rb[j])
        flow[(i, j)] = m
        ra[i] -= m
        rb[j] -= m
        if i == k - 1 and j == l - 1:
            break
        if (ra[i] == 0 and i < k - 1) or j == l - 1:
            i += 1
        else:
            j += 1
    while True:
        u, v = _potentials(flow, C, k, l)
        enter = None
        for x in range(k):
            for y in range(l):
                if (x, y) not in flow and C[x][y] - u[x] - v[y] < 0:
                    enter = (x, y)
                    break
            if enter:
                break
        if enter is None:
            return sum(m * C[x][y] for (x, y), m in flow.items()), {c: m for c, m in flow.items() if m > 0}
        cycle = _cycle(flow, enter, k)
        minus = cycle[1::2]  # cells whose flow the pivot decreases
        theta = min(flow[c] for c in minus)
        leave = min((c for c in minus if flow[c] == theta))  # Bland: the smallest leaving cell
        for t, c in enumerate(cycle):
            if t == 0:
                flow[c] = theta
            else:
                flow[c] += theta if t % 2 == 0 else -theta
        del flow[leave]


def _potentials(flow, C, k, l):
    u: list = [None] * k
    v: list = [None] * l
    u[0] = 0
    changed = True
    while changed:
        changed = False
        for x, y in flow:
            if u[x] is not None and v[y] is None:
                v[y] = C[x][y] - u[x]
                changed = True
            elif v[y] is not None and u[x] is None:
                u[x] = C[x][y] - v[y]
                changed = True
    return u, v


def _cycle(flow, enter, k):
    """The cells of the pivot cycle, starting with ``enter`` and alternating +, -, +, ..."""
    adj: dict[int, list[int]] = {}
    for x, y in flow:
        adj.setdefault(x, []).append(k + y)
        adj.setdefault(k + y, []).append(x)
    start, goal = k + enter[1], enter[0]  # path in the tree from the entering column to its row
    parent = {start: None}
    stack = [start]
    while stack:
        node = stack.pop()
        for nxt in adj.get(node, []):
            if nxt not in parent:
                parent[nxt] = node
                stack.append(nxt)
    path, node = [], goal
    while node is not None:
        path.append(node)
        node = parent[node]
    # path: row enter[0] ... column enter[1]; consecutive nodes are tree cells.
    cells = [enter]
    for x, y in zip(path, path[1:]):
        cells.append((x, y - k) if x < k else (y, x - k))
    return cells


def _integers(values: list[Fraction]) -> tuple[list[int], int]:
    """``values`` as integers over their least common denominator: ``(numerators, denominator)``."""
    den = math.lcm(*(v.denominator for v in values)) if values else 1
    return [v.numerator * (den // v.denominator) for v in values], den


def _solve_linear(A: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Exact solution of ``A x = b`` (A nonsingular): Gauss-Jordan elimination on integer rows, each
    row kept free of common factors; zero entries cost nothing, so sparse systems stay cheap."""
    n = len(b)
    rows = [_integers(A[i] + [b[i]])[0] for i in range(n)]
    for col in range(n):
        piv = min((r for r in range(col, n) if rows[r][col] != 0), key=lambda r: abs(rows[r][col]))
        rows[col], rows[piv] = rows[piv], rows[col]
        P = rows[col]
        pk = P[col]
        for r in range(n):
            f = rows[r][col]
            if r == col or f == 0:
                continue
            g = math.gcd(f, pk)
            a, f = pk // g, f // g
            new = [a * x - f * y for x, y in zip(rows[r], P)]
            g = math.gcd(*new)
            rows[r] = [v // g for v in new] if g > 1 else new
    return [Fraction(rows[i][n], rows[i][i]) for i in range(n)]


class _Reference:
    def __init__(self, mdp, ground: str) -> None:
        P = np.asarray(mdp.transitions)
        self.n, self.m = P.shape[0], P.shape[1]
        n, m = self.n, self.m
        self.P = [[[_frac(P[s, a, x]) for x in range(n)] for a in range(m)] for s in range(n)]
        for s in range(n):
            for a in range(m):
                if sum(self.P[s][a]) != 1:
                    raise ValueError(f"transitions[s={s}, a={a}] does not sum to exactly 1")
        self.R = [[_frac(mdp.rewards[s, a]) for a in range(m)] for s in range(n)]
        self.c = _frac(mdp.discount)
        self.ground = ground
        self.pi = None
        if mdp.policy is not None:
            self.pi = [[_frac(mdp.policy[s, a]) for a in range(m)] for s in range(n)]
            for s in range(n):
                if sum(self.pi[s]) != 1:
                    raise ValueError(f"policy[s={s}] does not sum to exactly 1")
            values = np.asarray(mdp.action_values)
            self.abar = [
                [sum(self.pi[s][a] * _frac(values[a, k]) for a in range(m)) for k in range(values.shape[1])]
                for s in range(n)
            ]
            self.Rpi = [sum(self.pi[s][a] * self.R[s][a] for a in range(m)) for s in range(n)]
            self.Ppi = [[sum(self.pi[s][a] * self.P[s][a][x] for a in range(m)) for x in range(n)] for s in range(n)]
        self.pairs = [(s, t) for s in range(n) for t in range(s + 1, n)]
        self.index = {p: i for i, p in enumerate(self.pairs)}

    # ------------------------------------------------------------------ pieces
    def G(self, s, a, t, b) -> Fraction:
        if self.ground == "reward":
            return abs(self.R[s][a] - self.R[t][b])
        if self.ground == "policy":
            return self._l1_abar(s, t)
        raise ValueError(f"no exact reference for the ground '{self.ground}'")

    def _l1_abar(self, s, t) -> Fraction:
        return sum(abs(x - y) for x, y in zip(self.abar[s], self.abar[t]))

    def rows(self, metric: str, s: int, t: int):
        """The transport rows of pair (s, t): (weight, constant, law of s, law of t)."""
        m = self.m
        if metric == "pi":
            return [(Fraction(1), abs(self.Rpi[s] - self.Rpi[t]), self.Ppi[s], self.Ppi[t])]
        if metric == "psm":
            return [(Fraction(1), self._l1_abar(s, t), self.Ppi[s], self.Ppi[t])]
        if metric == "bisim":
            return [(Fraction(1), abs(self.R[s][a] - self.R[t][a]), self.P[s][a], self.P[t][a]) for a in range(m)]
        ge = entangled_cells(self.pi[s], self.pi[t])
        if metric == "eps":
            return [(w, self.G(s, a, t, b), self.P[s][a], self.P[t][b]) for a, b, w in ge]
        if metric == "eps-avg":
            return [(Fraction(1), sum(w * self.G(s, a, t, b) for a, b, w in ge), self.Ppi[s], self.Ppi[t])]
        raise ValueError(metric)

    def d(self, x, s, t):
        return 0 if s == t else x[self.index[(min(s, t), max(s, t))]]

    def ot(self, p, q, xi):
        """W1 of the laws ``p``, ``q`` under the integer pair costs ``xi``: the optimum (in the units
        of ``xi``) and an optimal plan, both with Fraction masses."""
        src = [i for i in range(self.n) if p[i] > 0]
        dst = [j for j in range(self.n) if q[j] > 0]
        masses, S = _integers([p[i] for i in src] + [q[j] for j in dst])
        C = [[self.d(xi, i, j) for j in dst] for i in src]
        value, plan = transport(masses[: len(src)], masses[len(src) :], C)
        return Fraction(value, S), {(src[i], dst[j]): Fraction(mass, S) for (i, j), mass in plan.items()}

    # ------------------------------------------------------------- fixed points
    def solve(self, metric: str):
        if metric in ("pi", "psm", "eps", "eps-avg", "bisim"):
            x = self._strategy_iteration(metric)
            return [[Fraction(self.d(x, s, t)) for t in range(self.n)] for s in range(self.n)]
        if metric == "eps-bar":
            return self._eps_bar()
        if metric in ("mico", "psm-sampled"):
            return self._stein(metric)
        if metric == "dbc-sampled":
            n, m = self.n, self.m
            if any(
                self.pi[s][a] > 0 and sum(1 for x in self.P[s][a] if x != 0) != 1 for s in range(n) for a in range(m)
            ):
                raise ValueError("dbc-sampled is linear only when the policy's next-state laws are point masses")
            return self._stein(metric)
        if metric == "mico-reduced":
            U = self._stein("mico")
            return [[U[s][t] - U[s][s] / 2 - U[t][t] / 2 for t in range(self.n)] for s in range(self.n)]
        raise ValueError(f"no exact reference for '{metric}'")

    def _strategy_iteration(self, metric: str):
        rows = {pair: self.rows(metric, *pair) for pair in self.pairs}
        zero = [0] * len(self.pairs)
        plans = {pair: [self.ot(p, q, zero)[1] for _, _, p, q in rows[pair]] for pair in self.pairs}
        while True:
            x = self._value(rows, plans, maximise=metric == "bisim")
            xi = _integers(x)[0]  # x over a common denominator: transport on integers
            switched = False
            for pair in self.pairs:
                for r, (_, _, p, q) in enumerate(rows[pair]):
                    current = sum(mass * self.d(xi, i, j) for (i, j), mass in plans[pair][r].items())
                    value, plan = self.ot(p, q, xi)
                    if value < current:
                        plans[pair][r] = plan
                        switched = True
            if not switched:
                return x

    def _value(self, rows, plans, maximise: bool):
        """The value of fixed plans: sum rows (or, for bisim, the best row per pair, by strategy iteration)."""
        choice = {pair: 0 for pair in self.pairs}
        while True:
            A = [[Fraction(0)] * len(self.pairs) for _ in self.pairs]
            b = [Fraction(0)] * len(self.pairs)
            for pair in self.pairs:
                k = self.index[pair]
                A[k][k] += 1
                used = [choice[pair]] if maximise else range(len(rows[pair]))
                for r in used:
                    w, const, _, _ = rows[pair][r]
                    weight = Fraction(1) if maximise else w
                    b[k] += weight * const
                    for (i, j), mass in plans[pair][r].items():
                        if i != j:
                            A[k][self.index[(min(i, j), max(i, j))]] -= weight * self.c * mass
            x = _solve_linear(A, b)
            if not maximise:
                return x
            improved = False
            for pair in self.pairs:
                q = [
                    const + self.c * sum(mass * self.d(x, i, j) for (i, j), mass in plans[pair][r].items())
                    for r, (_, const, _, _) in enumerate(rows[pair])
                ]
                best = max(range(len(q)), key=lambda r: q[r])
                if q[best] > q[choice[pair]]:
                    choice[pair] = best
                    improved = True
            if not improved:
                return x

    def _eps_bar(self):
        N = len(self.pairs)
        A = [[Fraction(0)] * N for _ in range(N)]
        b = [Fraction(0)] * N
        for (s, t), k in self.index.items():
            A[k][k] += 1
            for a, a2, w in entangled_cells(self.pi[s], self.pi[t]):
                b[k] += w * self.G(s, a, t, a2)
                for i, j, mass in entangled_cells(self.P[s][a], self.P[t][a2]):
                    if i != j:
                        A[k][self.index[(min(i, j), max(i, j))]] -= w * self.c * mass
        x = _solve_linear(A, b)
        return [[Fraction(self.d(x, s, t)) for t in range(self.n)] for s in range(self.n)]

    def _stein(self, metric: str):
        n = self.n
        cells = [(s, t) for s in range(n) for t in range(s, n)]  # symmetric: unknowns s <= t
        where = {cell: i for i, cell in enumerate(cells)}
        A = [[Fraction(0)] * len(cells) for _ in cells]
        b = [Fraction(0)] * len(cells)
        for (s, t), k in where.items():
            A[k][k] += 1
            if metric == "mico":
                b[k] = abs(self.Rpi[s] - self.Rpi[t])
            elif metric == "dbc-sampled":
                b[k] = sum(
                    self.pi[s][a] * self.pi[t][a2] * abs(self.R[s][a] - self.R[t][a2])
                    for a in range(self.m)
                    for a2 in range(self.m)
                )
            else:
                b[k] = self._l1_abar(s, t)
            for i in range(n):
                if self.Ppi[s][i] == 0:
                    continue
                for j in range(n):
                    if self.Ppi[t][j] != 0:
                        A[k][where[(min(i, j), max(i, j))]] -= self.c * self.Ppi[s][i] * self.Ppi[t][j]
        x = _solve_linear(A, b)
        return [[x[where[(min(s, t), max(s, t))]] for t in range(n)] for s in range(n)]
