"""Exact reference for the bisimilarity distance of small labelled Markov chains, in rational arithmetic.

Shares no code with ``bisimkit.lmc``. A chain is a list of rows ``{successor: Fraction}`` and a ground
``g[s][t]`` of Fractions (``[L(s) != L(t)]`` for labels). The distance is the least fixed point of
``F(d)(s, t) = g + (1 - g) c W1(P(s), P(t); d)``.

Method: probabilistic bisimilarity by naive partition refinement (distance 0), then strategy iteration
over couplings that are vertices of the transportation polytopes, each found by enumerating the spanning
trees of the bipartite support graph; every strategy is evaluated by exact Gaussian elimination. With the
bisimilar pairs fixed at 0, every strategy leaves the other pairs with probability 1 (for c = 1 too), so
the fixed point on them is unique and strategy iteration ends at it.

Also here, independent of the distances: the pairs at distance 1 for c = 1 by a direct graph search (a
pair is at distance 1 iff the ground separates it or, through successor pairs not separated by the
ground, it cannot reach a bisimilar pair), and value iteration in floats from any start.
"""

from __future__ import annotations

import itertools
from fractions import Fraction


def label_ground(labels) -> list[list[Fraction]]:
    n = len(labels)
    return [[Fraction(int(labels[s] != labels[t])) for t in range(n)] for s in range(n)]


def bisimilarity(rows, ground) -> list[int]:
    """Block of each state under probabilistic bisimilarity w.r.t. the classes of ``ground == 0``."""
    n = len(rows)
    block = [None] * n
    count = 0
    for s in range(n):
        if block[s] is None:
            for t in range(n):
                if ground[s][t] == 0:
                    block[t] = count
            count += 1
    while True:
        sig = {}
        new = []
        for s in range(n):
            mass: dict[int, Fraction] = {}
            for u, p in rows[s].items():
                mass[block[u]] = mass.get(block[u], Fraction(0)) + p
            key = (block[s], tuple(sorted((b, m) for b, m in mass.items() if m != 0)))
            new.append(sig.setdefault(key, len(sig)))
        if len(sig) == count:
            return new
        block, count = new, len(sig)


def _vertices(p: dict, q: dict):
    """Every vertex of the transportation polytope of ``p`` and ``q`` (dicts state -> mass), as dicts
    ``(u, v) -> mass``."""
    A = [u for u in p if p[u] > 0]
    B = [v for v in q if q[v] > 0]
    cells = [(a, b) for a in range(len(A)) for b in range(len(B))]
    size = len(A) + len(B) - 1
    seen = set()
    out = []
    for tree in itertools.combinations(cells, size):
        parent = list(range(len(A) + len(B)))

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x

        ok = True
        for a, b in tree:
            ra, rb = find(a), find(len(A) + b)
            if ra == rb:
                ok = False
                break
            parent[ra] = rb
        if not ok:
            continue
        flow = _tree_flow(tree, [p[u] for u in A], [q[v] for v in B])
        if flow is None:
            continue
        key = tuple(sorted((c, m) for c, m in flow.items() if m != 0))
        if key in seen:
            continue
        seen.add(key)
        out.append({(A[a], B[b]): m for (a, b), m in flow.items() if m != 0})
    return out


def _tree_flow(tree, a, b):
    """The flows on a spanning tree's cells meeting the marginals (leaf elimination); None if negative."""
    ra, rb = list(a), list(b)
    left = set(tree)
    flow = {}
    while left:
        deg_a = {}
        deg_b = {}
        for i, j in left:
            deg_a[i] = deg_a.get(i, 0) + 1
            deg_b[j] = deg_b.get(j, 0) + 1
        leaf = next(((i, j) for (i, j) in left if deg_a[i] == 1), None)
        if leaf is not None:
            i, j = leaf
            f = ra[i]
        else:
            i, j = next((i, j) for (i, j) in left if deg_b[j] == 1)
            f = rb[j]
        if f < 0:
            return None
        flow[(i, j)] = f
        ra[i] -= f
        rb[j] -= f
        left.discard((i, j))
    if any(x != 0 for x in ra) or any(x != 0 for x in rb):
        return None
    return flow


def _solve(M, rhs):
    """Exact Gaussian elimination of ``M x = rhs`` (Fractions)."""
    n = len(rhs)
    A = [list(row) + [rhs[i]] for i, row in enumerate(M)]
    for col in range(n):
        piv = next((r for r in range(col, n) if A[r][col] != 0), None)
        if piv is None:
            raise ZeroDivisionError("singular system")
        A[col], A[piv] = A[piv], A[col]
        for r in range(n):
            if r != col and A[r][col] != 0:
                f = A[r][col] / A[col][col]
                A[r] = [x - f * y for x, y in zip(A[r], A[col])]
    return [A[i][n] / A[i][i] for i in range(n)]


def distances(rows, ground, c: Fraction) -> list[list[Fraction]]:
    """The exact least fixed point, as an n x n matrix of Fractions."""
    n = len(rows)
    c = Fraction(c)
    block = bisimilarity(rows, ground)
    unknown = [(s, t) for s in range(n) for t in range(s + 1, n) if block[s] != block[t] and ground[s][t] < 1]
    index = {pair: i for i, pair in enumerate(unknown)}
    verts = {pair: _vertices(rows[pair[0]], rows[pair[1]]) for pair in unknown}
    strategy = {pair: verts[pair][0] for pair in unknown}

    def fixed(u, v):
        if block[u] == block[v]:
            return Fraction(0)
        if ground[u][v] == 1:
            return Fraction(1)
        return None

    def value(x, u, v):
        f = fixed(u, v)
        if f is not None:
            return f
        return x[index[(min(u, v), max(u, v))]]

    while True:
        N = len(unknown)
        M = [[Fraction(int(i == j)) for j in range(N)] for i in range(N)]
        rhs = [Fraction(0)] * N
        for i, (s, t) in enumerate(unknown):
            g = ground[s][t]
            rhs[i] = g
            for (u, v), m in strategy[(s, t)].items():
                f = fixed(u, v)
                w = (1 - g) * c * m
                if f is not None:
                    rhs[i] += w * f
                else:
                    M[i][index[(min(u, v), max(u, v))]] -= w
        x = _solve(M, rhs) if N else []
        changed = False
        for i, pair in enumerate(unknown):

            def cost(vertex):
                return sum(m * value(x, u, v) for (u, v), m in vertex.items())

            current = cost(strategy[pair])
            best = min(verts[pair], key=cost)
            if cost(best) < current:
                strategy[pair] = best
                changed = True
        if not changed:
            break
    d = [[Fraction(0)] * n for _ in range(n)]
    for s in range(n):
        for t in range(n):
            if s != t:
                f = fixed(s, t)
                d[s][t] = f if f is not None else x[index[(min(s, t), max(s, t))]]
    return d


def operator(rows, ground, c, d):
    """``F(d)`` exactly (transport by vertex enumeration)."""
    n = len(rows)
    out = [[Fraction(0)] * n for _ in range(n)]
    for s in range(n):
        for t in range(n):
            if s == t:
                continue
            g = ground[s][t]
            w = min(sum(m * d[u][v] for (u, v), m in vert.items()) for vert in _vertices(rows[s], rows[t]))
            out[s][t] = g + (1 - g) * Fraction(c) * w
    return out


def distance_one_pairs(rows, ground) -> set[tuple[int, int]]:
    """Pairs s < t at distance 1 for c = 1, by a direct search over the pair graph."""
    n = len(rows)
    block = bisimilarity(rows, ground)
    out = set()
    for s in range(n):
        for t in range(s + 1, n):
            if ground[s][t] == 1:
                out.add((s, t))
                continue
            stack, seen, found = [(s, t)], {(s, t)}, False
            while stack and not found:
                a, b = stack.pop()
                if block[a] == block[b]:
                    found = True
                    break
                if ground[a][b] == 1:
                    continue
                for u in rows[a]:
                    for v in rows[b]:
                        if (u, v) not in seen:
                            seen.add((u, v))
                            stack.append((u, v))
            if not found:
                out.add((s, t))
    return out


def value_iteration(rows, ground, c: float, start: float, sweeps: int):
    """Floats: ``F^sweeps(d0)`` with ``d0 = start`` off the diagonal (1 where the ground is 1)."""
    import numpy as np
    from scipy.optimize import linprog

    n = len(rows)
    g = np.array([[float(ground[s][t]) for t in range(n)] for s in range(n)])
    d = np.where(np.eye(n, dtype=bool), 0.0, np.maximum(g, start))
    for _ in range(sweeps):
        new = np.zeros_like(d)
        for s in range(n):
            for t in range(s + 1, n):
                A = sorted(rows[s])
                B = sorted(rows[t])
                cost = np.array([[d[u, v] for v in B] for u in A]).ravel()
                eq = np.zeros((len(A) + len(B), len(A) * len(B)))
                for i in range(len(A)):
                    eq[i, i * len(B) : (i + 1) * len(B)] = 1
                for j in range(len(B)):
                    eq[len(A) + j, j :: len(B)] = 1
                rhs = [float(rows[s][u]) for u in A] + [float(rows[t][v]) for v in B]
                w = linprog(cost, A_eq=eq, b_eq=rhs, bounds=(0, None), method="highs").fun
                new[s, t] = new[t, s] = g[s, t] + (1 - g[s, t]) * c * w
        d = new
    return d
