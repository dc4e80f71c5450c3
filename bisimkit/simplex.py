"""Exact transportation simplex for many small OT problems, compiled kernels (:mod:`bisimkit.kernels`).

Each problem ``min sum g[i,j] C[i,j]`` with row sums ``a`` and column sums ``b``
is solved by the primal (network) simplex on the bipartite graph of rows and
columns. The basis is a spanning tree of ``k + l - 1`` cells kept as adjacency
lists, so dual potentials and the pivot cycle cost O(k + l). Pricing is block
search (as in LEMON and POT): scan blocks of about sqrt(k l) reduced costs
round-robin and enter the most negative cell of the first block that has one;
after ``50 (k + l)`` pivots the first negative cell enters instead. A full pass
with no negative reduced cost proves optimality.

Every solve also bounds its own error (:func:`_plan_gap`): the dual potentials
of the final basis, shifted by the largest reduced-cost violation that pricing
accepted, are a feasible dual, so weak duality gives a lower bound on the optimum;
the plan's marginal drift (round-off, crumbs set to 0) gives an upper one. The
value's distance to the true optimum is at most the larger of the two gaps.

Start: either a *warm* basis (a spanning tree from an earlier solve with the
same marginals, e.g. the previous round of coupling iteration: only the costs
changed, so it is still feasible and usually nearly optimal), or a greedy
least-cost basis. The result is a basic optimal solution, and the final basis
is returned for the next warm start.

Batches are padded: problem p has ``k[p]`` sources with masses ``a[p, :k[p]]``,
``l[p]`` sinks with masses ``b[p, :l[p]]`` and cost ``C[p, :k[p], :l[p]]``.
Bases are ragged: problem p's cells are ``basis[off[p]:off[p] + k[p] + l[p] - 1]``
as (row, column) pairs.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .kernels import kernel, prange, twins

#: Flows below this are rounding crumbs of exact zeros; they are set to 0. Left in,
#: a 1e-17 flow on a unit-cost cell would add 3e-9 to a W2 value through the square root.
FLOW_EPS = 1e-14
#: Pricing accepts a basis once every reduced cost is >= -PRICE_TOL * (1 + max |C|). Whatever violation
#: remains is measured and charged to the value's error bound (:func:`_plan_gap`), so this only trades
#: pivots against the size of that charge.
PRICE_TOL = 1e-15
#: Batches of at least this many problems are solved on all cores; smaller ones run on one thread
#: (waking the thread pool costs milliseconds on a busy machine, more than a small batch takes).
PARALLEL_MIN_PROBLEMS = 50_000
#: ... or batches whose problems have at least this many cells in all (large supports: few problems, much work).
PARALLEL_MIN_CELLS = 2_000_000
#: Bases are stored as (row, column) pairs of this type (supports stay below 32768 atoms).
BASIS_DTYPE = np.int16


@kernel
def _add_edge(e, i, j, k, er, ec, adj, deg):
    """Make cell (i, j) the basis tree's edge ``e``: its ends in ``er``/``ec``, and ``e`` appended to the edge
    lists ``adj`` (degrees ``deg``) of row node ``i`` and column node ``k + j``."""
    er[e] = i
    ec[e] = j
    adj[i, deg[i]] = e
    deg[i] += 1
    adj[k + j, deg[k + j]] = e
    deg[k + j] += 1


@kernel
def _remove_from(node, e, adj, deg):
    """Drop edge ``e`` from ``node``'s edge list in ``adj`` (the last entry takes its place; ``deg[node]`` shrinks)."""
    for x in range(deg[node]):
        if adj[node, x] == e:
            deg[node] -= 1
            adj[node, x] = adj[node, deg[node]]
            return


@kernel
def _find(parent, x):
    """Union-find: the root of x's set in ``parent``, halving the path on the way."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@kernel
def _join(parent, x, y):
    """Union-find: merge the sets of x and y; False when they were one set already."""
    rx = _find(parent, x)
    ry = _find(parent, y)
    if rx == ry:
        return False
    parent[rx] = ry
    return True


@kernel
def _greedy_basis(a, b, C, k, l, flow, er, ec, adj, deg):
    """Least-cost start: fill cells in increasing cost, then join the forest
    into a spanning tree with zero-flow cells. Returns False on failure."""
    n = k + l
    order = np.argsort(C[:k, :l].ravel(), kind="stable")  # equal costs in index order, on every machine
    rs = a[:k].copy()
    rd = b[:l].copy()
    uf = np.arange(n)
    edges = 0
    for idx in order:
        i = idx // l
        j = idx % l
        if rs[i] > FLOW_EPS and rd[j] > FLOW_EPS:
            if not _join(uf, i, k + j):
                return False  # would close a cycle (should not happen)
            f = rs[i] if rs[i] < rd[j] else rd[j]
            flow[i, j] = f
            rs[i] -= f
            rd[j] -= f
            _add_edge(edges, i, j, k, er, ec, adj, deg)
            edges += 1
    for idx in order:
        if edges == n - 1:
            break
        i = idx // l
        j = idx % l
        if _join(uf, i, k + j):
            _add_edge(edges, i, j, k, er, ec, adj, deg)
            edges += 1
    return edges == n - 1


@kernel
def _warm_basis(a, b, k, l, flow, er, ec, adj, deg, br, bc, rs, rd, left, done, stack):
    """Flows of a given spanning tree by peeling leaves (:func:`_tree_basis`, then :func:`_peel_flows`).
    Returns False if the cells are not a spanning tree or give negative flows. ``rs, rd, left, done,
    stack`` are scratch arrays of at least k + l entries."""
    return _tree_basis(k, l, er, ec, adj, deg, br, bc) and _peel_flows(
        a, b, k, l, flow, er, ec, adj, deg, rs, rd, left, done, stack
    )


@kernel
def _tree_basis(k, l, er, ec, adj, deg, br, bc):
    """Make the ``k + l - 1`` cells ``(br[e], bc[e])`` the tree edges ``e`` (:func:`_add_edge`); False when a
    cell lies outside ``k x l``."""
    for e in range(k + l - 1):
        i = br[e]
        j = bc[e]
        if i < 0 or i >= k or j < 0 or j >= l:
            return False
        _add_edge(e, i, j, k, er, ec, adj, deg)
    return True


@kernel
def _peel_flows(a, b, k, l, flow, er, ec, adj, deg, rs, rd, left, done, stack):
    """The flows of the tree edges (``er, ec, adj, deg``) that meet the masses ``a`` and ``b``, by peeling
    leaves: a leaf's one edge carries what is left of its mass. False when that is negative (below
    -1e-12; crumbs above it become 0) or the edges do not span the k + l nodes."""
    n = k + l
    rs[:k] = a[:k]
    rd[:l] = b[:l]
    left[:n] = deg[:n]
    done[:n] = False
    top = 0
    for v in range(n):
        if left[v] == 1:
            stack[top] = v
            top += 1
    assigned = 0
    while top > 0:
        top -= 1
        v = stack[top]
        if left[v] != 1:
            continue
        e = -1
        for x in range(deg[v]):
            if not done[adj[v, x]]:
                e = adj[v, x]
                break
        if e < 0:
            continue
        i = er[e]
        j = ec[e]
        f = rs[i] if v < k else rd[j]
        if f < -1e-12:
            return False
        if f < 0.0:
            f = 0.0
        flow[i, j] = f
        rs[i] -= f
        rd[j] -= f
        done[e] = True
        assigned += 1
        left[i] -= 1
        left[k + j] -= 1
        for w in (i, k + j):
            if left[w] == 1:
                stack[top] = w
                top += 1
    return assigned == n - 1


@kernel
def _smallest_even_flow(path, length, flow, er, ec, theta, leave):
    """The smallest flow on the even-numbered edges of ``path[:length]`` (the edges whose
    flow the pivot decreases), starting from ``(theta, leave)``; returns ``(flow, edge)``."""
    for t in range(0, length, 2):
        e = path[t]
        f = flow[er[e], ec[e]]
        if f < theta:
            theta = f
            leave = e
    return theta, leave


@kernel
def _hang(root, C, k, er, ec, adj, deg, parent_edge, depth, pot, stack):
    """Set parents, depths and potentials (``C[i, j] = u_i + v_j`` on tree cells) of the subtree
    below ``root``, whose own three values are set, by a DFS that never goes back up a parent edge."""
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        v = stack[top]
        for x in range(deg[v]):
            e = adj[v, x]
            if e == parent_edge[v]:
                continue
            w = k + ec[e] if v < k else er[e]
            parent_edge[w] = e
            depth[w] = depth[v] + 1
            pot[w] = C[er[e], ec[e]] - pot[v]
            stack[top] = w
            top += 1


#: Status of one solve (:func:`_solve_one`).
SOLVED, NO_START, PIVOT_CAP = 0, 1, 2

#: The scratch arrays of :func:`_solve_one`, for problems of up to ``nmax = k + l`` nodes (rows
#: 0..k-1, then columns k..k+l-1) and ``dmax = max(k, l)``; tree edges are numbered 0..n-2.
Scratch = namedtuple(
    "Scratch",
    [
        "adj",  # (nmax, dmax) int: the tree edges at each node
        "deg",  # (nmax,) int: how many
        "edge_row",  # (nmax,) int: the cell (row, column) of each tree edge
        "edge_col",
        "parent_edge",  # (nmax,) int: the edge to each node's parent (-1 at the root, row 0)
        "depth",  # (nmax,) int: each node's depth below the root
        "stack",  # (nmax,) int: DFS stack; one side of the pivot cycle
        "cycle",  # (nmax,) int: the other side of the pivot cycle
        "left",  # (nmax,) int: unassigned edges at each node (warm start's leaf peeling)
        "pot",  # (nmax,) float: dual potentials u (rows) and v (columns)
        "rest_row",  # (nmax,) float: unplaced row mass (warm start); row sums of the plan (gap)
        "rest_col",  # (nmax,) float: the same for columns
        "done",  # (nmax,) bool: edges whose flow is set (warm start)
    ],
)


@kernel
def _workspace(nmax, dmax):
    """A :class:`Scratch` for problems up to ``nmax`` nodes (allocated once per block of problems)."""

    def ints():
        """An int64 scratch array of ``nmax`` entries."""
        return np.empty(nmax, dtype=np.int64)

    return Scratch(
        np.empty((nmax, dmax), dtype=np.int64),
        ints(),
        ints(),
        ints(),
        ints(),
        ints(),
        ints(),
        ints(),
        ints(),
        np.empty(nmax),
        np.empty(nmax),
        np.empty(nmax),
        np.empty(nmax, dtype=np.bool_),
    )


@kernel
def _solve_one(a, b, C, k, l, flow, basis_row, basis_col, warm, kept, ws):
    """Solve one transport problem by the network simplex.

    Parameters
    ----------
    a, b : row masses ``a[:k]`` and column masses ``b[:l]`` (equal totals).
    C : cost matrix, ``C[:k, :l]`` used.
    k, l : numbers of rows and columns.
    flow : output, the optimal basic plan in ``flow[:k, :l]``.
    basis_row, basis_col : the ``k + l - 1`` cells of a spanning-tree basis: read as the start when
        ``warm`` (if they are not a feasible tree, the greedy start is used), and overwritten with
        the final basis.
    warm : whether ``basis_row, basis_col`` hold a start.
    kept : with ``warm``, whether ``flow`` already holds the start's flows (its tree cells, 0 elsewhere) as an
        earlier solve from the same basis and masses left them without a pivot: the flows
        :func:`_peel_flows` gives, with its crumbs set to 0. They are then peeled again only if a pivot
        needs them (the crumbs can decide which edge leaves), so every result is the one a start without
        them gives.
    ws : a :class:`Scratch` from :func:`_workspace`.

    Returns ``(cost, status, pivots, gap, steady)``: ``status`` is SOLVED, NO_START (no spanning tree could
    be built) or PIVOT_CAP (``5000 (k + l)`` pivots without proving optimality); ``gap`` bounds the
    cost's distance to the optimum (:func:`_plan_gap`; inf unless SOLVED); ``steady`` whether the given
    basis was optimal as it was (SOLVED from it without a pivot), so that ``flow`` holds what ``kept`` asks of
    a later start from it.
    """
    if k == 1 or l == 1:
        return _forced_plan(a, b, C, k, l, flow, basis_row, basis_col, ws)
    n = k + l
    er, ec, adj, deg, pot = ws.edge_row, ws.edge_col, ws.adj, ws.deg, ws.pot
    parent_edge, depth, stack, cycle = ws.parent_edge, ws.depth, ws.stack, ws.cycle
    if not (warm and kept):
        for i in range(k):
            for j in range(l):
                flow[i, j] = 0.0
    deg[:n] = 0
    started = False
    lazy = False  # the kept flows stand in for the peeled ones until a pivot needs their exact bits
    if warm and kept:
        started = _tree_basis(k, l, er, ec, adj, deg, basis_row, basis_col)
        lazy = started
    elif warm:
        started = _warm_basis(
            a, b, k, l, flow, er, ec, adj, deg, basis_row, basis_col, ws.rest_row, ws.rest_col, ws.left, ws.done, stack
        )
    steady = started
    if not started:
        for i in range(k):
            for j in range(l):
                flow[i, j] = 0.0
        deg[:n] = 0
        started = _greedy_basis(a, b, C, k, l, flow, er, ec, adj, deg)
    if not started:
        return 0.0, NO_START, 0, np.inf, False
    scale, floor = _cost_range(C, k, l)
    eps = PRICE_TOL * (1.0 + scale)
    bland_after = 50 * n
    total = k * l
    block = max(int(np.sqrt(total)), 8)
    pi_ = 0  # pricing position (row, column), kept across pivots
    pj_ = 0
    status = PIVOT_CAP
    pivots = 0
    violation = 0.0
    # Potentials u (rows) and v (columns) with u_0 = 0: C[i, j] = u_i + v_j on tree cells,
    # by a DFS from row 0; after each pivot only the subtree that moved is updated.
    pot[0] = 0.0
    depth[0] = 0
    parent_edge[0] = -1
    _hang(0, C, k, er, ec, adj, deg, parent_edge, depth, pot, stack)
    for pivot in range(5000 * n):
        # Block search pricing: scan blocks of cells round-robin from where the
        # last scan stopped; enter the most negative cell of the first block
        # that has one. A full pass without one proves optimality.
        ei = -1
        ej = -1
        best = -eps
        low = 0.0  # the smallest reduced cost of this scan (of every cell when none enters)
        first = pivot >= bland_after
        count = 0
        for _ in range(total):
            r = C[pi_, pj_] - pot[pi_] - pot[k + pj_]
            if r < low:
                low = r
            if r < best:
                best = r
                ei = pi_
                ej = pj_
            pj_ += 1
            if pj_ == l:
                pj_ = 0
                pi_ += 1
                if pi_ == k:
                    pi_ = 0
            count += 1
            if ei >= 0 and (first or count >= block):
                break
            if count >= block:
                count = 0
        if ei < 0:
            status = SOLVED
            violation = -low
            break
        if lazy:  # the kept flows were peeled from this tree and masses once: peeled again, bit for bit
            lazy = False
            if not _peel_flows(a, b, k, l, flow, er, ec, adj, deg, ws.rest_row, ws.rest_col, ws.left, ws.done, stack):
                return 0.0, NO_START, pivots, np.inf, False  # not kept flows after all: left to the caller
        pivots += 1
        # Cycle: entering cell (+), then the tree path from column ej back to row ei.
        u = ei
        w = k + ej
        nu = 0  # edges on u's side, from u upward
        nw = 0  # edges on w's side, from w upward
        while u != w:
            if depth[u] >= depth[w]:
                cycle[nu] = parent_edge[u]
                nu += 1
                e = parent_edge[u]
                u = k + ec[e] if u < k else er[e]
            else:
                stack[nw] = parent_edge[w]
                nw += 1
                e = parent_edge[w]
                w = k + ec[e] if w < k else er[e]
        # Signs: the t-th edge from either end is - for even t, + for odd t.
        theta, leave = _smallest_even_flow(stack, nw, flow, er, ec, np.inf, -1)
        w_side = leave
        theta, leave = _smallest_even_flow(cycle, nu, flow, er, ec, theta, leave)
        # The leaving edge cuts off a subtree containing the entering cell's row (u side) or column.
        inner = k + ej if leave == w_side else ei
        outer = ei if leave == w_side else k + ej
        if theta < 0.0:
            theta = 0.0
        for t in range(nw):
            e = stack[t]
            flow[er[e], ec[e]] += -theta if t % 2 == 0 else theta
        for t in range(nu):
            e = cycle[t]
            flow[er[e], ec[e]] += -theta if t % 2 == 0 else theta
        flow[ei, ej] += theta
        li = er[leave]
        lj = ec[leave]
        flow[li, lj] = 0.0
        _remove_from(li, leave, adj, deg)
        _remove_from(k + lj, leave, adj, deg)
        _add_edge(leave, ei, ej, k, er, ec, adj, deg)
        # Re-hang the cut-off subtree from the entering edge: parents, depths, potentials.
        parent_edge[inner] = leave
        depth[inner] = depth[outer] + 1
        pot[inner] = C[ei, ej] - pot[outer]
        _hang(inner, C, k, er, ec, adj, deg, parent_edge, depth, pot, stack)
    cost = 0.0
    for i in range(k):
        for j in range(l):
            if flow[i, j] < FLOW_EPS:  # rounding crumbs (and exact-zero degenerate cells)
                flow[i, j] = 0.0
            cost += flow[i, j] * C[i, j]
    for e in range(n - 1):
        basis_row[e] = er[e]
        basis_col[e] = ec[e]
    if status != SOLVED:
        return cost, status, pivots, np.inf, False
    return (
        cost,
        status,
        pivots,
        _plan_gap(a, b, k, l, flow, er, ec, pot, cost, violation, scale, floor, ws.rest_row, ws.rest_col),
        steady and pivots == 0,
    )


@kernel
def _cost_range(C, k, l):
    """``(max |C|, min C)`` over ``C[:k, :l]``: the scale of the pricing tolerance and of the gap's terms."""
    scale = 0.0
    floor = np.inf
    for i in range(k):
        for j in range(l):
            if abs(C[i, j]) > scale:
                scale = abs(C[i, j])
            if C[i, j] < floor:
                floor = C[i, j]
    return scale, floor


@kernel
def _forced_plan(a, b, C, k, l, flow, basis_row, basis_col, ws):
    """:func:`_solve_one` where one side has a single atom (``k == 1`` or ``l == 1``): the only plan
    sends that atom's mass to every atom of the other side, ``flow[0, j] = b[j]`` (or
    ``flow[i, 0] = a[i]``), so its cost is optimal without a pivot. Its potentials are exact
    (``u_0 = 0, v_j = C[0, j]``, or ``v_0 = 0, u_i = C[i, 0]``: every reduced cost is 0), and the gap
    is :func:`_plan_gap`'s, which charges the two sides' differing totals and the rounding of the sum.
    Same outputs as :func:`_solve_one`: ``(cost, SOLVED, 0, gap, False)``, the plan and its basis (not
    ``steady``: the plan is set anew each time)."""
    er, ec, pot = ws.edge_row, ws.edge_col, ws.pot
    scale, floor = _cost_range(C, k, l)
    if k == 1:
        pot[0] = 0.0
        for j in range(l):
            er[j] = 0
            ec[j] = j
            flow[0, j] = b[j]
            pot[1 + j] = C[0, j]
    else:
        pot[k] = 0.0
        for i in range(k):
            er[i] = i
            ec[i] = 0
            flow[i, 0] = a[i]
            pot[i] = C[i, 0]
    cost = 0.0
    for i in range(k):
        for j in range(l):
            if flow[i, j] < FLOW_EPS:  # as in _solve_one
                flow[i, j] = 0.0
            cost += flow[i, j] * C[i, j]
    for e in range(k + l - 1):
        basis_row[e] = er[e]
        basis_col[e] = ec[e]
    gap = _plan_gap(a, b, k, l, flow, er, ec, pot, cost, 0.0, scale, floor, ws.rest_row, ws.rest_col)
    return cost, SOLVED, 0, gap, False


@kernel
def _plan_gap(a, b, k, l, flow, edge_row, edge_col, pot, cost, violation, scale, floor, rows, cols):
    """A bound on ``|cost - OT(a, b; C)|`` for the plan ``flow`` with potentials ``pot``
    (``scale = max |C|``, ``floor = min C``).

    Lower side: ``u_i = pot[i] - violation`` and ``v_j = pot[k + j]`` satisfy
    ``u_i + v_j <= C[i, j]`` (``violation`` is the largest ``-(C - u - v)``, or 0), so weak
    duality gives ``OT >= sum a u + sum b v``; and always ``OT >= min C sum a`` (which is the
    better bound for a nearly free plan, whose potentials are large). Upper side: the plan's
    marginals differ from ``a, b`` by round-off and by the crumbs set to 0, and moving that much mass costs at most
    ``max |C|`` per unit, so ``OT <= cost + max|C| (||a - rows||_1 + ||b - cols||_1)``. The
    evaluation of these sums is charged at ``(k + l) eps`` of their absolute terms. The plan is
    basic: only the tree cells ``(edge_row[e], edge_col[e])`` carry flow, so the marginals cost
    O(k + l). ``rows, cols`` are scratch arrays of at least ``k`` and ``l`` entries."""
    rows[:k] = 0.0
    cols[:l] = 0.0
    for e in range(k + l - 1):
        f = flow[edge_row[e], edge_col[e]]
        rows[edge_row[e]] += f
        cols[edge_col[e]] += f
    dual = 0.0
    size = cost
    drift = 0.0
    for i in range(k):
        dual += a[i] * (pot[i] - violation)
        size += abs(a[i] * pot[i]) + a[i] * violation
        drift += abs(a[i] - rows[i])
    for j in range(l):
        dual += b[j] * pot[k + j]
        size += abs(b[j] * pot[k + j])
        drift += abs(b[j] - cols[j])
    mass = 0.0
    for i in range(k):
        mass += a[i]
    eps = 2.220446049250313e-16
    below = cost - dual + (k + l + 2) * eps * size
    trivial = cost - floor * mass + (k + l + 2) * eps * (abs(cost) + abs(floor) * mass)
    if trivial < below:
        below = trivial
    above = scale * drift + (k + l + 2) * eps * abs(cost)
    gap = below if below > above else above
    return gap if gap > 0.0 else 0.0


@kernel
def _basis_from_flow(flow, C, k, l, br, bc):
    """A spanning-tree basis containing the positive cells of a basic plan,
    joined with cheapest zero cells. Returns False if the plan has a cycle."""
    n = k + l
    uf = np.arange(n)
    edges = 0
    for i in range(k):
        for j in range(l):
            if flow[i, j] > 0.0:
                if edges == n - 1 or not _join(uf, i, k + j):
                    return False
                br[edges] = i
                bc[edges] = j
                edges += 1
    if edges < n - 1:
        order = np.argsort(C[:k, :l].ravel(), kind="stable")
        for idx in order:
            i = idx // l
            j = idx % l
            if _join(uf, i, k + j):
                br[edges] = i
                bc[edges] = j
                edges += 1
                if edges == n - 1:
                    break
    return edges == n - 1


@kernel
def _basis_from_flow_at(flows, C, k, l, basis, off, ok, p):
    """Problem p of :func:`bases_from_flows`: its spanning-tree basis from ``flows[p]`` into its slot
    ``off[p]:off[p] + k[p] + l[p] - 1`` of ``basis``; ``ok[p]`` whether one was found."""
    lo = off[p]
    hi = off[p] + k[p] + l[p] - 1
    ok[p] = _basis_from_flow(flows[p], C[p], k[p], l[p], basis[lo:hi, 0], basis[lo:hi, 1])


def _bases_from_flows_body(flows, C, k, l, basis, off, ok):
    """Every problem of :func:`bases_from_flows` (on threads in the ``prange`` twin)."""
    for p in prange(flows.shape[0]):
        _basis_from_flow_at(flows, C, k, l, basis, off, ok, p)


_bases_from_flows, _bases_from_flows_serial = twins(_bases_from_flows_body)

#: Problems per block of a batch; each block allocates its scratch arrays once.
BLOCK = 256


@kernel
def _solve_block(a, b, C, k, l, flows, costs, gaps, ok, pivots, basis, off, warm, blk, nmax, dmax):
    """Problems ``blk * BLOCK`` up to the next block of a padded batch (:func:`solve_padded`)."""
    ws = _workspace(nmax, dmax)
    for p in range(blk * BLOCK, min((blk + 1) * BLOCK, a.shape[0])):
        lo = off[p]
        hi = off[p] + k[p] + l[p] - 1
        cost, status, piv, gap, _ = _solve_one(
            a[p], b[p], C[p], k[p], l[p], flows[p], basis[lo:hi, 0], basis[lo:hi, 1], warm[p], False, ws
        )
        costs[p] = cost
        gaps[p] = gap
        ok[p] = status == SOLVED
        pivots[p] = piv


def _solve_batch_body(a, b, C, k, l, flows, costs, gaps, ok, pivots, basis, off, warm, nmax, dmax):
    """Every block of :data:`BLOCK` problems of :func:`solve_padded` (on threads in the ``prange`` twin)."""
    for blk in prange((a.shape[0] + BLOCK - 1) // BLOCK):
        _solve_block(a, b, C, k, l, flows, costs, gaps, ok, pivots, basis, off, warm, blk, nmax, dmax)


_solve_batch, _solve_batch_serial = twins(_solve_batch_body)


#: What :func:`solve_rows` leaves in ``state[p]``: problem p solved by the simplex; exact without it (an empty
#: side, or identical histograms under a zero-diagonal cost: cost 0, the identity plan); or left to the caller
#: (more than ``kernel_max`` atoms on a side and no basis, or the simplex stopped at its pivot cap).
ROW_SOLVED, ROW_EXACT, ROW_LEFT = 0, 1, 2


@kernel
def _solve_rows_one(
    D,
    xptr,
    xidx,
    xdat,
    src,
    yptr,
    yidx,
    ydat,
    dst,
    zero_diagonal,
    kernel_max,
    off,
    basis,
    warm,
    kept,
    costs,
    gaps,
    state,
    out_i,
    out_j,
    out_mass,
    p,
    cbuf,
    fbuf,
    ws,
):
    """Problem p of :func:`solve_rows`: its two histograms read from the CSR rows, its costs gathered from
    ``D`` into ``cbuf``, solved, and its plan (in D's index space), cost, gap and state written into its
    slots."""
    s = src[p]
    t = dst[p]
    xa = xptr[s]
    kk = xptr[s + 1] - xa
    yb = yptr[t]
    ll = yptr[t + 1] - yb
    lo = off[p]
    hi = off[p + 1]
    costs[p] = 0.0
    gaps[p] = 0.0
    hold = kept[p] and warm[p]
    kept[p] = False
    if kk == 0 or ll == 0:  # an empty side (equal masses 0) costs 0
        for e in range(lo, hi):
            out_mass[e] = 0.0
        state[p] = ROW_EXACT
        return
    if zero_diagonal and kk == ll:
        same = True
        for i in range(kk):
            if xidx[xa + i] != yidx[yb + i] or xdat[xa + i] != ydat[yb + i]:
                same = False
                break
        if same:  # identical histograms: cost 0, the identity plan
            for i in range(kk):
                out_i[lo + i] = xidx[xa + i]
                out_j[lo + i] = xidx[xa + i]
                out_mass[lo + i] = xdat[xa + i]
            for e in range(lo + kk, hi):
                out_mass[e] = 0.0
            state[p] = ROW_EXACT
            return
    if not (warm[p] or (kk <= kernel_max and ll <= kernel_max)):
        for e in range(lo, hi):
            out_mass[e] = 0.0
        state[p] = ROW_LEFT
        return
    C = cbuf[: kk * ll].reshape((kk, ll))
    for i in range(kk):
        row = xidx[xa + i]
        for j in range(ll):
            C[i, j] = D[row, yidx[yb + j]]
    flow = fbuf[: kk * ll].reshape((kk, ll))
    if hold:  # the flows this basis had in the last call, still in its slots
        for i in range(kk):
            for j in range(ll):
                flow[i, j] = 0.0
        for e in range(lo, hi):
            r = basis[e, 0]
            c = basis[e, 1]
            if r < 0 or r >= kk or c < 0 or c >= ll:
                hold = False
                break
            flow[r, c] = out_mass[e]
    cost, status, _, gap, steady = _solve_one(
        xdat[xa : xa + kk], ydat[yb : yb + ll], C, kk, ll, flow, basis[lo:hi, 0], basis[lo:hi, 1], warm[p], hold, ws
    )
    good = status == SOLVED
    for e in range(lo, hi):
        r = basis[e, 0] if good else 0
        c = basis[e, 1] if good else 0
        out_i[e] = xidx[xa + r]
        out_j[e] = yidx[yb + c]
        out_mass[e] = flow[r, c] if good else 0.0
    costs[p] = cost
    gaps[p] = gap
    warm[p] = good
    kept[p] = good and steady
    state[p] = ROW_SOLVED if good else ROW_LEFT


@kernel
def _solve_rows_block(
    D,
    xptr,
    xidx,
    xdat,
    src,
    yptr,
    yidx,
    ydat,
    dst,
    zero_diagonal,
    kernel_max,
    off,
    basis,
    warm,
    kept,
    costs,
    gaps,
    state,
    out_i,
    out_j,
    out_mass,
    blk,
    nmax,
    dmax,
    cmax,
):
    """Problems ``blk * BLOCK`` up to the next block of :func:`solve_rows`, with one cost and flow buffer of
    ``cmax`` cells and one workspace (``nmax`` nodes, ``dmax`` edges a node) for all of them."""
    cbuf = np.empty(cmax)
    fbuf = np.empty(cmax)
    ws = _workspace(nmax, dmax)
    for p in range(blk * BLOCK, min((blk + 1) * BLOCK, len(src))):
        _solve_rows_one(
            D,
            xptr,
            xidx,
            xdat,
            src,
            yptr,
            yidx,
            ydat,
            dst,
            zero_diagonal,
            kernel_max,
            off,
            basis,
            warm,
            kept,
            costs,
            gaps,
            state,
            out_i,
            out_j,
            out_mass,
            p,
            cbuf,
            fbuf,
            ws,
        )


def _solve_rows_body(
    D,
    xptr,
    xidx,
    xdat,
    src,
    yptr,
    yidx,
    ydat,
    dst,
    zero_diagonal,
    kernel_max,
    off,
    basis,
    warm,
    kept,
    costs,
    gaps,
    state,
    out_i,
    out_j,
    out_mass,
    nmax,
    dmax,
    cmax,
):
    """Every block of :data:`BLOCK` problems of :func:`solve_rows` (on threads in the ``prange`` twin)."""
    for blk in prange((len(src) + BLOCK - 1) // BLOCK):
        _solve_rows_block(
            D,
            xptr,
            xidx,
            xdat,
            src,
            yptr,
            yidx,
            ydat,
            dst,
            zero_diagonal,
            kernel_max,
            off,
            basis,
            warm,
            kept,
            costs,
            gaps,
            state,
            out_i,
            out_j,
            out_mass,
            blk,
            nmax,
            dmax,
            cmax,
        )


_solve_rows, _solve_rows_serial = twins(_solve_rows_body)


def _sizes(k: np.ndarray, l: np.ndarray) -> tuple[int, int, int]:
    """``(nmax, dmax, cmax)``: the scratch sizes of a batch (nodes, largest side, cells)."""
    km = int(np.max(k, initial=1))
    lm = int(np.max(l, initial=1))
    return km + lm, max(km, lm), km * lm


def _threaded(k: np.ndarray, l: np.ndarray, rows: np.ndarray | None = None) -> bool:
    """Whether a batch is worth the thread pool: many problems, or much work in few."""
    n = len(k) if rows is None else len(rows)
    if n >= PARALLEL_MIN_PROBLEMS:
        return True
    kk = np.asarray(k if rows is None else np.asarray(k)[rows], dtype=np.float64)
    ll = np.asarray(l if rows is None else np.asarray(l)[rows], dtype=np.float64)
    return float(np.dot(kk, ll)) >= PARALLEL_MIN_CELLS


def basis_offsets(k: np.ndarray, l: np.ndarray) -> np.ndarray:
    """Offsets of each problem's ``k + l - 1`` basis cells in a ragged basis array
    (an empty histogram gets no cells)."""
    return np.concatenate([[0], np.cumsum(np.maximum(np.asarray(k) + np.asarray(l) - 1, 0))]).astype(np.int64)


def _row_indices(X, Y) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(xptr, xidx, yptr, yidx)`` of the CSR rows X and Y in one integer type, as the row kernels take them:
    as they are when they share one, else int64."""
    xptr, xidx, yptr, yidx = X.indptr, X.indices, Y.indptr, Y.indices
    if not (xptr.dtype == xidx.dtype == yptr.dtype == yidx.dtype):
        xptr, xidx, yptr, yidx = (np.asarray(v, dtype=np.int64) for v in (xptr, xidx, yptr, yidx))
    return xptr, xidx, yptr, yidx


def solve_rows(
    D: np.ndarray,
    X,
    src: np.ndarray,
    Y,
    dst: np.ndarray,
    zero_diagonal: bool,
    kernel_max: int,
    off: np.ndarray,
    basis: np.ndarray,
    warm: np.ndarray,
    kept: np.ndarray,
    costs: np.ndarray,
    gaps: np.ndarray,
    state: np.ndarray,
    out: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Solve the problems ``(X[src[p]], Y[dst[p]])`` under the costs ``D``, reading both histograms straight
    from the CSR rows: no padded copy of the supports, one compiled pass over every problem.

    Parameters
    ----------
    D : the ground cost, ``D[i, j]`` for atom i of a row of X and atom j of a row of Y (float64, C order).
    X, Y : CSR matrices with sorted indices, rows summing to the same mass per problem (float64 data);
        their ``indptr`` and ``indices`` of one integer type.
    src, dst : int64, the rows of problem p.
    zero_diagonal : whether ``D`` has a zero diagonal, so identical histograms cost 0.
    kernel_max : problems with more atoms than this on a side are solved only from a basis (``warm[p]``);
        the others are left (``state[p] == ROW_LEFT``).
    off : int64, ``basis_offsets`` of the supports' sizes: problem p's slots are ``off[p]:off[p + 1]``.
    basis : ``(off[-1], 2)`` of :data:`BASIS_DTYPE`, the bases, read as starts where ``warm[p]`` and
        overwritten with the final ones.
    warm : bool per problem, whether its basis holds a start; becomes whether the simplex solved it.
    kept : bool per problem, whether its slots in ``out`` still hold the plan the last call left for its
        basis, which was optimal there as it was (see ``kept`` of :func:`_solve_one`): the flows the start then
        reads instead of peeling them (the same results, with less work where the basis stays optimal);
        becomes whether that holds for the next call with these slots.
    costs, gaps : float64 per problem, written: the optimal cost and a bound on its distance to the optimum
        (:func:`_plan_gap`); 0 for exact and left problems.
    state : int8 per problem, written: ``ROW_SOLVED``, ``ROW_EXACT`` or ``ROW_LEFT`` (above).
    out : ``(i, j, mass)`` of ``off[-1]`` slots each (``i``, ``j`` int32 or int64, one type): the optimal basic
        plan of each solved problem (mass 0 on degenerate cells) and the identity plan of identical
        histograms, in D's index space; the masses of every other slot are set to 0 (their cells are not
        written).
    """
    xptr, xidx, yptr, yidx = _row_indices(X, Y)
    if not len(src):
        return
    widest = max(int((xptr[1:] - xptr[:-1]).max(initial=1)), int((yptr[1:] - yptr[:-1]).max(initial=1)))
    nmax, dmax, cmax = 2 * widest, widest, widest * widest
    mean_x, mean_y = (float(ptr[-1]) / max(len(ptr) - 1, 1) for ptr in (xptr, yptr))
    cells = len(src) * mean_x * mean_y  # about the problems' cells in all
    kernel = _solve_rows if len(src) >= PARALLEL_MIN_PROBLEMS or cells >= PARALLEL_MIN_CELLS else _solve_rows_serial
    kernel(
        D,
        xptr,
        xidx,
        X.data,
        src,
        yptr,
        yidx,
        Y.data,
        dst,
        zero_diagonal,
        kernel_max,
        off,
        basis,
        warm,
        kept,
        costs,
        gaps,
        state,
        out[0],
        out[1],
        out[2],
        nmax,
        dmax,
        cmax,
    )


@kernel
def _marginal_gaps(C, xptr, xidx, src, yptr, yidx, dst, state, marginal, gaps):
    """Add to each problem's gap what moving its histograms to the exact laws can change its cost.

    Arguments
    ---------
    C : float64 (k, l)
        The ground cost between the atoms of X's rows (rows of C) and of Y's rows (columns).
    xptr, xidx, yptr, yidx : int32 or int64 (one type)
        The CSR pointers and atoms of the rows X and Y.
    src, dst : int64 (P,)
        The rows of problem p: ``X[src[p]]`` and ``Y[dst[p]]``.
    state : int8 (P,)
        :func:`solve_rows`' state of every problem; ``ROW_EXACT`` ones are exact and gain nothing.
    marginal : float64 (P,)
        A bound on how far problem p's two histograms are from the exact laws in total variation.
    gaps : float64 (P,)
        Increased in place by ``min(reach_X(src[p]), reach_Y(dst[p])) * marginal[p]`` for every problem that
        is not exact, with ``reach_X(r)`` the largest ``max(0, max_j C[i, j])`` over the atoms i of row r of X
        (0 for an empty row) and ``reach_Y`` the same over the columns of C: the largest cost either support
        can meet with any atom, which bounds the cost's change per unit of moved mass (lemma L2 of
        ``docs/operators.md#the-certificate``).
    """
    k, l = C.shape
    row_max = np.zeros(k)
    col_max = np.zeros(l)
    for i in range(k):
        for j in range(l):
            v = C[i, j]
            if v > row_max[i]:
                row_max[i] = v
            if v > col_max[j]:
                col_max[j] = v
    left = np.zeros(len(xptr) - 1)
    for r in range(len(xptr) - 1):
        for e in range(xptr[r], xptr[r + 1]):
            if row_max[xidx[e]] > left[r]:
                left[r] = row_max[xidx[e]]
    right = np.zeros(len(yptr) - 1)
    for r in range(len(yptr) - 1):
        for e in range(yptr[r], yptr[r + 1]):
            if col_max[yidx[e]] > right[r]:
                right[r] = col_max[yidx[e]]
    for p in range(len(src)):
        reach = left[src[p]]
        if right[dst[p]] < reach:
            reach = right[dst[p]]
        gaps[p] += 0.0 if state[p] == ROW_EXACT else reach * marginal[p]


def marginal_gaps(C: np.ndarray, X, src: np.ndarray, Y, dst: np.ndarray, state, marginal, gaps) -> None:
    """``gaps[p] += min(reach_X, reach_Y) * marginal[p]`` for the problems ``(X[src[p]], Y[dst[p]])`` that are not
    exact (:func:`_marginal_gaps`): the CSR rows X and Y, their indices of one integer type as in
    :func:`solve_rows`, ``C`` float64 in C order."""
    xptr, xidx, yptr, yidx = _row_indices(X, Y)
    _marginal_gaps(C, xptr, xidx, src, yptr, yidx, dst, state, marginal, gaps)


def bases_from_flows(flows: np.ndarray, C: np.ndarray, k: np.ndarray, l: np.ndarray):
    """Spanning-tree bases (ragged) of basic plans, e.g. POT's, for warm starts.
    Returns ``(basis, ok)``."""
    k = np.asarray(k, dtype=np.int64)
    l = np.asarray(l, dtype=np.int64)
    off = basis_offsets(k, l)
    basis = np.zeros((int(off[-1]), 2), dtype=BASIS_DTYPE)
    ok = np.zeros(len(k), dtype=np.bool_)
    if len(k):
        kernel = _bases_from_flows if _threaded(k, l) else _bases_from_flows_serial
        kernel(np.ascontiguousarray(flows), np.ascontiguousarray(C), k, l, basis, off, ok)
    return basis, ok


def solve_padded(
    a: np.ndarray,
    b: np.ndarray,
    C: np.ndarray,
    k: np.ndarray,
    l: np.ndarray,
    basis: np.ndarray | None = None,
    warm: np.ndarray | None = None,
):
    """Solve a padded batch.

    ``basis`` (ragged, see :func:`basis_offsets`) holds warm-start bases where
    ``warm`` is True and receives the final bases. Returns ``(costs, flows, ok,
    pivots, basis, gaps)``; ``ok`` is False where the pivot cap was hit, which callers
    re-solve another way; ``gaps`` bounds each cost's distance to the optimum.
    """
    P = a.shape[0]
    k = np.asarray(k, dtype=np.int64)
    l = np.asarray(l, dtype=np.int64)
    off = basis_offsets(k, l)
    if basis is None:
        basis = np.zeros((int(off[-1]), 2), dtype=BASIS_DTYPE)
        warm = np.zeros(P, dtype=np.bool_)
    elif warm is None:
        warm = np.ones(P, dtype=np.bool_)
    flows = np.zeros_like(C)
    costs = np.zeros(P)
    gaps = np.zeros(P)
    ok = np.zeros(P, dtype=np.bool_)
    pivots = np.zeros(P, dtype=np.int64)
    if P:
        kernel = _solve_batch if _threaded(k, l) else _solve_batch_serial
        kernel(
            np.ascontiguousarray(a),
            np.ascontiguousarray(b),
            np.ascontiguousarray(C),
            k,
            l,
            flows,
            costs,
            gaps,
            ok,
            pivots,
            basis,
            off,
            np.asarray(warm, dtype=np.bool_),
            *_sizes(k, l)[:2],
        )
    return costs, flows, ok, pivots, basis, gaps


# ------------------------------------------------------------ line-metric starts
@kernel
def _line_basis(xs, a, k, ys, b, l, h, br, bc):
    """The north-west-corner staircase of the two histograms with atoms sorted by ``h``:
    the monotone coupling, optimal for the cost |h_i - h_j|, as a spanning tree of
    ``k + l - 1`` cells (positions in the supports)."""
    oi = np.argsort(h[xs[:k]], kind="stable")
    oj = np.argsort(h[ys[:l]], kind="stable")
    i = 0
    j = 0
    rs = a[oi[0]]
    rd = b[oj[0]]
    for e in range(k + l - 1):
        br[e] = oi[i]
        bc[e] = oj[j]
        f = rs if rs < rd else rd
        rs -= f
        rd -= f
        if j == l - 1 or (i < k - 1 and rs <= rd):
            i += 1
            if i < k:
                rs = a[oi[i]]
        else:
            j += 1
            if j < l:
                rd = b[oj[j]]


@kernel
def _line_bases(xs, a, k, ys, b, l, h, basis, off, valid):
    """The monotone-coupling basis along the key ``h`` (:func:`_line_basis`) of every problem p not yet
    ``valid`` and with both sides non-empty, into its slot of ``basis``; marks it valid."""
    for p in range(len(k)):
        if valid[p] or k[p] == 0 or l[p] == 0:
            continue
        lo = off[p]
        hi = lo + k[p] + l[p] - 1
        _line_basis(xs[p], a[p], k[p], ys[p], b[p], l[p], h, basis[lo:hi, 0], basis[lo:hi, 1])
        valid[p] = True


def line_bases(
    xs: np.ndarray,
    a: np.ndarray,
    k: np.ndarray,
    ys: np.ndarray,
    b: np.ndarray,
    l: np.ndarray,
    h: np.ndarray,
    basis: np.ndarray,
    valid: np.ndarray,
) -> None:
    """Seed the problems of a padded batch that have no basis yet (``valid`` False) with the
    monotone coupling along the states' scalar key ``h`` (in place).

    Where the cost is ``|h_i - h_j|`` (a line metric, e.g. the one-step reward distance) that
    basis is optimal and the simplex only proves it (one pricing pass); otherwise it is a
    start as good as the key is a summary of the cost.
    """
    _line_bases(
        xs,
        a,
        np.asarray(k, dtype=np.int64),
        ys,
        b,
        np.asarray(l, dtype=np.int64),
        np.asarray(h, dtype=np.float64),
        basis,
        basis_offsets(k, l),
        valid,
    )
