"""The largest bisimulation relations, by partition refinement.

Each relation is computed exactly from the MDP, never by thresholding a metric:
start from one block and split blocks until every state in a block has the
same signature under the current partition.

* ``bisim`` (Ferns): for every action a, equal R(., a) and equal class masses of P(., a).
* ``pi`` (Castro): equal Rpi and equal class masses of Ppi.
* ``psm``: equal mean action abar and equal class masses of Ppi (the zero set of d_psm).
* ``eps`` (paper Def. 4.3): for every (a, a') in the support of the entangled
  coupling of pi(s) and pi(t), G(s,a,t,a') = 0 and P(s,a), P(t,a') have equal
  class masses. With one shared uniform U picking both actions, this holds iff
  the step functions ``U -> (G-class, class masses)(s, a_s(U))`` of the two
  states agree for almost every U, which gives each state a signature.

Real numbers (rewards, masses, quantile breakpoints) are compared with an
absolute tolerance ``atol`` (default :data:`RELATION_ATOL`, 1e-9) by single-linkage clustering.

The rounds. From one block, a round replaces the partition P by ``P ^ C_k(P)`` over every block k of P
(the first round also by the reward classes), where ``C_k(P)`` groups the states by the cluster of their
mass on k (per action for bisim) among the masses of all states on k, a state without an entry at mass 0;
a mass is the sum of the row's entries on k in their stored order. The rounds stop when one splits
nothing. :func:`_refine_blocks` runs them on the sparse rows, a round costing the rows that reach a
state that changed block (docs/relations.md#how-the-refinement-runs); the partition is the one the
rounds give with the dense ``n x blocks`` matrix of class masses (``tests/dense_relations.py``).
"""

from __future__ import annotations

import bisect

import numpy as np

from .errors import InputError
from .ground import Ground
from .kernels import components, csr_parts, kernel, on_small_path
from .mdp import FiniteMDP

#: Absolute tolerance below which two reals (rewards, masses, breakpoints) count as equal when blocks are
#: refined; :mod:`bisimkit.quotient` finds its blocks with the same one.
RELATION_ATOL = 1e-9


def cluster_values(values: np.ndarray, atol: float) -> np.ndarray:
    """Integer ids grouping 1-D ``values`` whose sorted neighbours differ by <= atol."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    jumps = ordered[1:] - ordered[:-1] > atol
    ids_sorted = np.concatenate([[0], np.cumsum(jumps)])
    ids = np.empty_like(ids_sorted)
    ids[order] = ids_sorted
    return ids


def cluster_rows(X: np.ndarray, atol: float) -> np.ndarray:
    """Integer ids of the rows of ``X``, rows equal when every column clusters together."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.shape[1] == 0:
        return np.zeros(X.shape[0], dtype=np.int64)
    cols = np.column_stack([cluster_values(X[:, k], atol) for k in range(X.shape[1])])
    return row_ids(cols)


def row_ids(X: np.ndarray) -> np.ndarray:
    """Integer ids 0, 1, ... of the rows of the integer matrix ``X``, equal exactly when the rows are equal.

    Rows are grouped by a fixed random linear hash (wrapping uint64 arithmetic) and every
    row is then compared with its group's first row; only if a hash collision joined
    different rows does it fall back to ``np.unique(X, axis=0)`` (the same partition,
    but a lexicographic sort of whole rows: seconds on the n*m x k matrices of n = 1000).
    """
    X = np.ascontiguousarray(X, dtype=np.int64)
    if X.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    weights = np.random.default_rng(20240518).integers(1, 2**63, size=X.shape[1], dtype=np.int64)
    h = X.view(np.uint64) @ weights.view(np.uint64)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if np.array_equal(X, X[first[inverse]]):
        return inverse
    return np.unique(X, axis=0, return_inverse=True)[1].ravel()


def canonical(labels: np.ndarray) -> np.ndarray:
    """Relabel blocks 0, 1, ... in order of their smallest state."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inverse.ravel()]


def blocks(labels: np.ndarray) -> list[list[int]]:
    """Blocks of a labelling as sorted lists of states, ordered by smallest state."""
    labels = canonical(np.asarray(labels))
    out: list[list[int]] = [[] for _ in range(int(labels.max(initial=-1)) + 1)]
    for s, b in enumerate(labels.tolist()):
        out[b].append(s)
    return out


def zero_components(adjacent: np.ndarray) -> np.ndarray:
    """Component labels of the undirected graph of the boolean matrix ``adjacent``: scipy's
    ``connected_components``, or on the small-problem path :func:`bisimkit.kernels.components`."""
    if on_small_path():
        return components(adjacent)
    # start-up cost: scipy.sparse.csgraph loads in ~0.3 s, which a small problem's solve does without
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    return connected_components(sp.csr_matrix(adjacent), directed=False)[1]


@kernel
def _refine_blocks(indptr, indices, data, m, initial, atol, labels):
    """The partition of the states the refinement rounds end in (module docstring), over the sparse rows, in place.

    Rounds ``P <- P ^ initial ^ C_k(P)`` from one block (``initial`` in the first round only), where
    ``C_k(P)`` groups the states by the single-linkage cluster (``atol``) of their mass on the block ``k``
    of ``P`` (per action when ``m > 1``), over every state, a state without an entry counting as mass 0:
    the rounds of the dense refinement (module docstring), with the work of a round bounded by the rows
    that reach a state that changed block.

    * A column whose block did not change splits nothing the partition has not split already: a round
      reads only the columns of the blocks the last round changed.
    * A block that splits keeps its id for its largest part; the other parts are new blocks, whose columns
      are built from their rows (the rows with an entry in a new block), so a state moves into a new block
      at most ``log2 n`` times.
    * A kept block's column (the sorted masses with their counts, and the gaps wider than ``atol``) is
      updated with the new masses of the rows that reached the states it lost; masses of the other rows are
      the same sums of the same entries. If no removed mass opens a new gap, every cluster keeps the
      states it had, so only the updated states can leave their block (each compared with a state of
      its block that was not updated); otherwise the column splits its blocks from scratch.

    Arguments
    ---------
    indptr, indices, data : int32 or int64, int32 or int64, float64
        The transitions as CSR rows over the ``n`` states: row ``s * m + a`` is state s's law under its
        ``a``-th row (``m = 1``: the policy's chain). A block's mass is summed in the row's stored order,
        from 0.0, as ``P @ onehot`` sums it.
    m : int
        Rows per state (the number of actions for bisim, 1 for the policy's chain); ``len(indptr) - 1 ==
        n * m``.
    initial : int64 (n,)
        Classes that are never merged (the reward classes): the first round splits by them.
    atol : float
        Masses within ``atol`` of each other, directly or through a chain of masses, are equal.
    labels : int64 (n,)
        Output: the block of every state, numbered 0, 1, ... in order of their smallest state.

    Returns the number of blocks.
    """
    n = len(labels)
    if n == 0:
        return 0
    n_rows = len(indptr) - 1
    first_entry = indptr[0]
    pred_ptr = np.zeros(n + 1, dtype=np.int64)  # the rows with an entry in column t: pred[pred_ptr[t]:pred_ptr[t + 1]]
    longest = 0
    for r in range(n_rows):
        longest = max(longest, indptr[r + 1] - indptr[r])
        for e in range(indptr[r], indptr[r + 1]):
            pred_ptr[indices[e] + 1] += 1
    for t in range(n):
        pred_ptr[t + 1] += pred_ptr[t]
    width = pred_ptr[n]
    pred = np.empty(width, dtype=np.int64)
    fill = np.empty(n, dtype=np.int64)
    for t in range(n):
        fill[t] = pred_ptr[t]
    for r in range(n_rows):
        for e in range(indptr[r], indptr[r + 1]):
            t = indices[e]
            pred[fill[t]] = r
            fill[t] += 1
    # block b holds the states elems[begin[b]:end[b]]; loc[s] is the position of state s in elems
    elems = np.empty(n, dtype=np.int64)
    loc = np.empty(n, dtype=np.int64)
    begin = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    for s in range(n):
        elems[s] = s
        loc[s] = s
        labels[s] = 0
    end[0] = n
    n_blocks = 1
    has_columns = np.zeros(n, dtype=np.int64)  # whether block k's columns exist: column[k * m + a]
    column = np.full(n * m, -1, dtype=np.int64)
    columns: list[tuple] = []  # per column: mass counts, sorted masses, the masses followed by a gap wider than atol
    changed = np.zeros(n, dtype=np.int64)  # the blocks the last round changed (all of them at first)
    next_changed = np.zeros(n, dtype=np.int64)
    changed_round = np.full(n, -1, dtype=np.int64)  # the round in which a block was last changed
    changed_round[0] = 0
    n_changed = 1
    row_round = np.full(n_rows, -1, dtype=np.int64)
    touched = np.empty(n_rows, dtype=np.int64)
    own_count = np.zeros(n_rows, dtype=np.int64)  # row r's masses per block, as last computed, from its first entry
    own_block = np.empty(width, dtype=np.int64)
    own_value = np.empty(width, dtype=np.float64)
    row_block = np.empty(longest, dtype=np.int64)
    row_value = np.empty(longest, dtype=np.float64)
    fresh_row = np.empty(width, dtype=np.int64)  # masses on the new blocks
    fresh_block = np.empty(width, dtype=np.int64)
    fresh_action = np.empty(width, dtype=np.int64)
    fresh_value = np.empty(width, dtype=np.float64)
    up_row = np.empty(2 * width, dtype=np.int64)  # masses on the kept blocks that changed: old and new
    up_block = np.empty(2 * width, dtype=np.int64)
    up_action = np.empty(2 * width, dtype=np.int64)
    up_old = np.empty(2 * width, dtype=np.float64)
    up_new = np.empty(2 * width, dtype=np.float64)
    group = np.empty(n, dtype=np.int64)  # the states one split moves, their clusters ascending per block
    group_cid = np.empty(n, dtype=np.float64)
    group_order = np.empty(n, dtype=np.int64)
    state_mark = np.full(n, -1, dtype=np.int64)
    rep_mark = np.full(n, -1, dtype=np.int64)
    rep_cid = np.zeros(n, dtype=np.float64)
    rep_has = np.zeros(n, dtype=np.int64)
    row_mark = np.full(n_rows, -1, dtype=np.int64)
    stamp = 0
    split_work = (
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.float64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.float64),
    )
    rnd = 0
    while n_changed > 0:
        # the rows with an entry in a new block
        n_touched = 0
        for x in range(n_changed):
            k = changed[x]
            if has_columns[k] == 1:
                continue
            for y in range(begin[k], end[k]):
                t = elems[y]
                for p in range(pred_ptr[t], pred_ptr[t + 1]):
                    r = pred[p]
                    if row_round[r] != rnd:
                        row_round[r] = rnd
                        touched[n_touched] = r
                        n_touched += 1
        # their masses per block, against those last computed
        n_fresh = 0
        n_up = 0
        for x in range(n_touched):
            r = touched[x]
            base = indptr[r] - first_entry
            count = 0
            for e in range(indptr[r], indptr[r + 1]):
                k = labels[indices[e]]
                c = 0
                while c < count and row_block[c] != k:
                    c += 1
                if c == count:
                    row_block[c] = k
                    row_value[c] = 0.0
                    count += 1
                row_value[c] += data[e]
            for c in range(count):
                k = row_block[c]
                if changed_round[k] == rnd:
                    if has_columns[k] == 0:
                        fresh_row[n_fresh] = r
                        fresh_block[n_fresh] = k
                        fresh_action[n_fresh] = r % m
                        fresh_value[n_fresh] = row_value[c]
                        n_fresh += 1
                    else:  # a kept block: the row's mass on it, if it changed
                        old = 0.0
                        had = False
                        for d in range(own_count[r]):
                            if own_block[base + d] == k:
                                old = own_value[base + d]
                                had = True
                        if not had or old != row_value[c]:
                            up_row[n_up] = r
                            up_block[n_up] = k
                            up_action[n_up] = r % m
                            up_old[n_up] = old
                            up_new[n_up] = row_value[c]
                            n_up += 1
            for d in range(own_count[r]):  # kept blocks the row no longer reaches: mass 0
                k = own_block[base + d]
                if changed_round[k] == rnd and has_columns[k] == 1:
                    c = 0
                    while c < count and row_block[c] != k:
                        c += 1
                    if c == count:
                        up_row[n_up] = r
                        up_block[n_up] = k
                        up_action[n_up] = r % m
                        up_old[n_up] = own_value[base + d]
                        up_new[n_up] = 0.0
                        n_up += 1
            for c in range(count):
                own_block[base + c] = row_block[c]
                own_value[base + c] = row_value[c]
            own_count[r] = count
        n_next = 0
        if rnd == 0:  # the first round also splits by the initial classes
            by_class = np.argsort(initial, kind="stable")
            for x in range(n):
                group[x] = by_class[x]
                group_cid[x] = initial[by_class[x]]
            n_blocks, n_next = _split_blocks(
                group,
                group_cid,
                n,
                labels,
                elems,
                loc,
                begin,
                end,
                n_blocks,
                changed_round,
                next_changed,
                n_next,
                rnd,
                split_work,
            )
        # the kept blocks' columns, updated
        order = np.argsort(up_block[:n_up] * m + up_action[:n_up], kind="stable")  # by column
        x = 0
        while x < n_up:
            k = up_block[order[x]]
            a = up_action[order[x]]
            y = x
            while y < n_up and up_block[order[y]] == k and up_action[order[y]] == a:
                y += 1
            col = columns[column[k * m + a]]
            for z in range(x, y):
                _column_add(col, up_new[order[z]], atol)
            cut = False
            for z in range(x, y):
                if _column_remove(col, up_old[order[z]], atol):
                    cut = True
            stamp += 1
            n_group = 0
            if cut:  # a cluster broke: the column splits from scratch
                n_group = _column_group(
                    col,
                    k,
                    a,
                    m,
                    begin,
                    end,
                    elems,
                    pred_ptr,
                    pred,
                    own_count,
                    own_block,
                    own_value,
                    indptr,
                    first_entry,
                    row_mark,
                    stamp,
                    group,
                    group_cid,
                )
            else:
                for z in range(x, y):
                    state_mark[up_row[order[z]] // m] = stamp
                for z in range(x, y):
                    r = up_row[order[z]]
                    s = r // m
                    b = labels[s]
                    if rep_mark[b] != stamp:  # the cluster of the states of b this column leaves in place
                        rep_mark[b] = stamp
                        w = begin[b]
                        while w < end[b] and state_mark[elems[w]] == stamp:
                            w += 1
                        rep_has[b] = 0
                        if w < end[b]:
                            rep_has[b] = 1
                            rep_cid[b] = _column_cid(
                                col,
                                _own_mass(elems[w] * m + a, k, own_count, own_block, own_value, indptr, first_entry),
                            )
                    c = _column_cid(col, up_new[order[z]])
                    if rep_has[b] == 0 or c != rep_cid[b]:
                        group[n_group] = s
                        group_cid[n_group] = c
                        n_group += 1
            n_blocks, n_next = _split_sorted(
                group,
                group_cid,
                group_order,
                n_group,
                labels,
                elems,
                loc,
                begin,
                end,
                n_blocks,
                changed_round,
                next_changed,
                n_next,
                rnd,
                split_work,
            )
            x = y
        # the new blocks' columns, built
        for x in range(n_changed):
            k = changed[x]
            if has_columns[k] == 0:
                has_columns[k] = 1
                for a in range(m):  # every state at mass 0 until its rows are added
                    column[k * m + a] = len(columns)
                    columns.append(({0.0: n}, [0.0], []))
        order = np.argsort(fresh_block[:n_fresh] * m + fresh_action[:n_fresh], kind="stable")
        x = 0
        while x < n_fresh:
            k = fresh_block[order[x]]
            a = fresh_action[order[x]]
            y = x
            while y < n_fresh and fresh_block[order[y]] == k and fresh_action[order[y]] == a:
                y += 1
            col = columns[column[k * m + a]]
            for z in range(x, y):
                _column_add(col, fresh_value[order[z]], atol)
            for z in range(x, y):
                _column_remove(col, 0.0, atol)
            zero = _column_cid(col, 0.0) if 0.0 in col[0] else -np.inf
            n_group = 0
            for z in range(x, y):
                c = _column_cid(col, fresh_value[order[z]])
                if c != zero:
                    group[n_group] = fresh_row[order[z]] // m
                    group_cid[n_group] = c
                    n_group += 1
            n_blocks, n_next = _split_sorted(
                group,
                group_cid,
                group_order,
                n_group,
                labels,
                elems,
                loc,
                begin,
                end,
                n_blocks,
                changed_round,
                next_changed,
                n_next,
                rnd,
                split_work,
            )
            x = y
        changed, next_changed = next_changed, changed
        n_changed = n_next
        rnd += 1
    rank = np.full(n_blocks, -1, dtype=np.int64)  # blocks numbered by their smallest state
    count = 0
    for s in range(n):
        b = labels[s]
        if rank[b] < 0:
            rank[b] = count
            count += 1
        labels[s] = rank[b]
    return count


def _column_add(col, v, atol):
    """One more mass ``v`` in the column ``col`` = (counts, sorted masses, masses followed by a gap > atol)."""
    counts, values, cuts = col
    if v in counts:
        counts[v] += 1
        return
    counts[v] = 1
    i = bisect.bisect_left(values, v)
    values.insert(i, v)
    if i + 1 < len(values) and values[i + 1] - v > atol:
        bisect.insort(cuts, v)
    if i > 0:
        u = values[i - 1]
        j = bisect.bisect_left(cuts, u)
        was = j < len(cuts) and cuts[j] == u
        if v - u > atol and not was:
            cuts.insert(j, u)
        elif v - u <= atol and was:
            del cuts[j]


def _column_remove(col, v, atol):
    """One mass ``v`` fewer in the column ``col``; whether a gap > atol opened where there was none (a cluster
    broke in two)."""
    counts, values, cuts = col
    counts[v] -= 1
    if counts[v] > 0:
        return False
    del counts[v]
    i = bisect.bisect_left(values, v)
    del values[i]
    j = bisect.bisect_left(cuts, v)
    cut_after = j < len(cuts) and cuts[j] == v
    if cut_after:
        del cuts[j]
    if i == 0:
        return False
    u = values[i - 1]
    j = bisect.bisect_left(cuts, u)
    cut_before = j < len(cuts) and cuts[j] == u
    if i == len(values):  # v was the largest: u has no neighbour above any more
        if cut_before:
            del cuts[j]
        return False
    gap = values[i] - u > atol
    if gap and not cut_before:
        cuts.insert(j, u)
    elif not gap and cut_before:
        del cuts[j]
    return gap and not cut_before and not cut_after


def _column_cid(col, v):
    """The cluster of mass ``v`` in the column: the largest mass of its cluster (inf for the last cluster)."""
    cuts = col[2]
    j = bisect.bisect_left(cuts, v)
    return cuts[j] if j < len(cuts) else np.inf


def _own_mass(r, k, own_count, own_block, own_value, indptr, first_entry):
    """Row r's mass on block k as last computed (0 without an entry)."""
    base = indptr[r] - first_entry
    for d in range(own_count[r]):
        if own_block[base + d] == k:
            return own_value[base + d]
    return 0.0


def _column_group(
    col,
    k,
    a,
    m,
    begin,
    end,
    elems,
    pred_ptr,
    pred,
    own_count,
    own_block,
    own_value,
    indptr,
    first_entry,
    row_mark,
    stamp,
    group,
    group_cid,
):
    """The states of the rows ``s * m + a`` with an entry in block k whose cluster is not that of mass 0, with
    their clusters, into ``group``; returns how many."""
    zero = _column_cid(col, 0.0) if 0.0 in col[0] else -np.inf
    n_group = 0
    for y in range(begin[k], end[k]):
        t = elems[y]
        for p in range(pred_ptr[t], pred_ptr[t + 1]):
            r = pred[p]
            if r % m == a and row_mark[r] != stamp:
                row_mark[r] = stamp
                c = _column_cid(col, _own_mass(r, k, own_count, own_block, own_value, indptr, first_entry))
                if c != zero:
                    group[n_group] = r // m
                    group_cid[n_group] = c
                    n_group += 1
    return n_group


def _split_sorted(
    group,
    group_cid,
    group_order,
    n_group,
    labels,
    elems,
    loc,
    begin,
    end,
    n_blocks,
    changed_round,
    next_changed,
    n_next,
    rnd,
    work,
):
    """:func:`_split_blocks` with ``group[:n_group]`` first sorted by cluster (stably)."""
    order = np.argsort(group_cid[:n_group], kind="stable")
    for g in range(n_group):
        group_order[g] = group[order[g]]
    for g in range(n_group):
        group[g] = group_order[g]
    cids = group_cid[order]
    for g in range(n_group):
        group_cid[g] = cids[g]
    return _split_blocks(
        group,
        group_cid,
        n_group,
        labels,
        elems,
        loc,
        begin,
        end,
        n_blocks,
        changed_round,
        next_changed,
        n_next,
        rnd,
        work,
    )


def _split_blocks(
    group, group_cid, n_group, labels, elems, loc, begin, end, n_blocks, changed_round, next_changed, n_next, rnd, work
):
    """Split every block met in ``group[:n_group]`` by ``group_cid`` (ascending within each block), the
    states of the block outside the group forming one more part: the largest part (the first of equal ones,
    the states outside the group first) keeps the block's id, the others take new ids, in order. Blocks that
    change are appended to ``next_changed``. Returns ``(n_blocks, n_next)``: of :func:`_refine_blocks`."""
    marked, first_cid, multi, hit, place, state_cid = work
    n_hit = 0
    for g in range(n_group):
        b = labels[group[g]]
        c = group_cid[g]
        if marked[b] == 0:
            hit[n_hit] = b
            n_hit += 1
            first_cid[b] = c
            multi[b] = 0
        elif c != first_cid[b]:
            multi[b] = 1
        marked[b] += 1
    for h in range(n_hit):
        b = hit[h]
        place[b] = end[b] - marked[b]
    for g in range(n_group):  # the group's states to the end of their block, in the group's order
        s = group[g]
        b = labels[s]
        p = place[b]
        place[b] += 1
        q = loc[s]
        u = elems[p]
        elems[p] = s
        loc[s] = p
        elems[q] = u
        loc[u] = q
        state_cid[s] = group_cid[g]
    for h in range(n_hit):
        b = hit[h]
        lo = end[b] - marked[b]
        hi = end[b]
        marked[b] = 0
        if lo == begin[b] and multi[b] == 0:
            continue
        best_lo = begin[b]  # the largest part
        best_hi = lo
        y = lo
        while y < hi:
            c = state_cid[elems[y]]
            z = y
            while z < hi and state_cid[elems[z]] == c:
                z += 1
            if z - y > best_hi - best_lo:
                best_lo = y
                best_hi = z
            y = z
        if changed_round[b] != rnd + 1:
            changed_round[b] = rnd + 1
            next_changed[n_next] = b
            n_next += 1
        y = begin[b]
        while y < hi:  # the parts in order: the states outside the group, then each cluster
            if y < lo:
                z = lo
            else:
                c = state_cid[elems[y]]
                z = y
                while z < hi and state_cid[elems[z]] == c:
                    z += 1
            if y != best_lo:
                f = n_blocks
                n_blocks += 1
                begin[f] = y
                end[f] = z
                for w in range(y, z):
                    labels[elems[w]] = f
                changed_round[f] = rnd + 1
                next_changed[n_next] = f
                n_next += 1
            y = z
        begin[b] = best_lo
        end[b] = best_hi
    return n_blocks, n_next


def refine_labels(P, m: int, initial: np.ndarray, atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the partition the refinement rounds end in (module docstring), from the classes ``initial``:
    the states of a block put equal masses (within ``atol``) on every block, action by action.
    :func:`_refine_blocks` on the CSR rows ``P`` (``n * m`` rows over ``n`` states)."""
    initial = np.ascontiguousarray(initial, dtype=np.int64)
    n = len(initial)
    if P.shape != (n * m, n):
        raise ValueError(f"P has shape {P.shape}, expected ({n * m}, {n})")
    labels = np.empty(n, dtype=np.int64)
    _refine_blocks(*csr_parts(P), int(m), initial, float(atol), labels)
    return labels


def pi_relation_labels(mdp: FiniteMDP, atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest pi-bisimulation relation E_pi."""
    return refine_labels(mdp.transition_pi_rows, 1, cluster_values(mdp.reward_pi, atol), atol)


def psm_relation_labels(mdp: FiniteMDP, atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest relation with equal mean actions and equal class masses of Ppi."""
    return refine_labels(mdp.transition_pi_rows, 1, cluster_rows(mdp.mean_action, atol), atol)


def bisim_relation_labels(mdp: FiniteMDP, atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest (Ferns) bisimulation relation E_bisim."""
    return refine_labels(mdp.transition_rows, mdp.n_actions, cluster_rows(mdp.rewards, atol), atol)


def mass_classes(P, labels: np.ndarray, atol: float = RELATION_ATOL) -> np.ndarray:
    """Integer ids of the rows of ``P`` (CSR, ``R`` rows over the states), equal exactly when the rows' masses on
    every block of ``labels`` lie in the same single-linkage cluster (``atol``) of that block's column over all
    ``R`` rows, a row without an entry counting as mass 0: ``cluster_rows(P @ onehot(labels), atol)`` without the
    ``R x blocks`` matrix, in ``O(nnz log nnz)``. A block's mass is summed in the row's stored order."""
    indptr, indices, data = csr_parts(P)
    n_rows = len(indptr) - 1
    row = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(indptr))
    block = np.asarray(labels, dtype=np.int64)[indices]
    k = int(block.max(initial=-1)) + 1
    key = row * k + block
    cells, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    value = np.zeros(len(cells))
    np.add.at(value, inverse.ravel(), data)  # sequential, in stored order: the sums of P @ onehot
    cell_row, cell_block = cells // max(k, 1), cells % max(k, 1)
    # each column's masses ascending, with one mass 0 for the rows without an entry (where there are some)
    per_block = np.bincount(cell_block, minlength=k)
    zero_blocks = np.nonzero(per_block < n_rows)[0]
    all_block = np.concatenate([cell_block, zero_blocks])
    all_value = np.concatenate([value, np.zeros(len(zero_blocks))])
    order = np.lexsort((all_value, all_block))
    sorted_block, sorted_value = all_block[order], all_value[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (sorted_block[1:] != sorted_block[:-1]) | (np.diff(sorted_value) > atol)
    cid = np.empty(len(order), dtype=np.int64)
    cid[order] = np.cumsum(new)
    zero_cid = np.full(k, -1, dtype=np.int64)
    zero_cid[zero_blocks] = cid[len(cells) :]
    cell_cid = cid[: len(cells)]
    kept = cell_cid != zero_cid[cell_block]  # cells in their column's zero cluster read as no entry
    sigs: dict[tuple, int] = {(): 0}
    out = np.zeros(n_rows, dtype=np.int64)
    bounds = np.searchsorted(cell_row[kept], np.arange(n_rows + 1))
    pairs = list(zip(cell_block[kept].tolist(), cell_cid[kept].tolist()))
    for r in np.nonzero(np.diff(bounds))[0].tolist():
        out[r] = sigs.setdefault(tuple(pairs[bounds[r] : bounds[r + 1]]), len(sigs))
    return out


def _refine(n: int, signature) -> np.ndarray:
    """Rounds ``labels <- classes of (labels, signature(labels))`` from one block until a round splits nothing."""
    labels = np.zeros(n, dtype=np.int64)
    while True:
        new = row_ids(np.column_stack([labels, signature(labels)]))
        if new.max() == labels.max():
            return canonical(labels)
        if new.max() + 1 == n:  # all singletons: nothing left to split
            return canonical(new)
        labels = new


def ground_classes(mdp: FiniteMDP, ground: Ground, atol: float = RELATION_ATOL) -> np.ndarray:
    """Zero-set classes of G on state-action pairs: an (n, m) array of ids."""
    n, m = mdp.n_states, mdp.n_actions
    if isinstance(ground, str):
        if ground == "reward":
            return cluster_values(mdp.rewards.ravel(), atol).reshape(n, m)
        if ground == "policy":
            return np.repeat(cluster_rows(mdp.mean_action, atol)[:, None], m, axis=1)
        raise InputError(f"unknown ground metric '{ground}'", param="ground")
    return zero_components(np.asarray(ground) <= atol).reshape(n, m)


def eps_relation_labels(
    mdp: FiniteMDP, ground: Ground = "reward", atol: float = RELATION_ATOL, reading: str = "class-mass"
) -> np.ndarray:
    """Block labels of the largest entangled bisimulation relation E_eps.

    ``reading="class-mass"`` (the default, docs/relations.md): P(s,a) and P(t,a') have equal masses on
    every block; ``reading="literal"``: P(s,a) = P(t,a') exactly.
    """
    if reading not in ("class-mass", "literal"):
        raise ValueError(f"unknown reading '{reading}'")
    n, m = mdp.n_states, mdp.n_actions
    pi = mdp.require_policy("the eps relation")
    gclass = ground_classes(mdp, ground, atol)
    P = mdp.transition_rows
    cums = np.cumsum(pi, axis=1)
    cums[:, -1] = 1.0
    live = pi > atol * 1e-3
    bp = cluster_values(cums[live], atol)
    bp_id = np.full((n, m), -1, dtype=np.int64)
    bp_id[live] = bp

    def signature(labels):
        masses = mass_classes(P, labels, atol).reshape(n, m)
        action_label = np.unique(np.column_stack([gclass.ravel(), masses.ravel()]), axis=0, return_inverse=True)[
            1
        ].reshape(n, m)
        sigs: dict[tuple, int] = {}
        out = np.empty(n, dtype=np.int64)
        for s in range(n):
            steps: list[tuple[int, int]] = []
            for a in np.nonzero(live[s])[0]:
                lab = int(action_label[s, a])
                if steps and steps[-1][1] == lab:
                    steps[-1] = (int(bp_id[s, a]), lab)  # extend the previous step
                else:
                    steps.append((int(bp_id[s, a]), lab))
            out[s] = sigs.setdefault(tuple(steps), len(sigs))
        return out

    if reading == "literal":  # class masses over singletons are the laws themselves
        return canonical(signature(np.arange(n)))
    return _refine(n, signature)


def relation_labels(mdp: FiniteMDP, kind: str, ground: Ground = "reward", atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest relation of ``kind`` (bisim, pi, psm or eps)."""
    refine = RELATIONS.get(kind) if isinstance(kind, str) else None
    if refine is None:
        raise InputError(f"unknown relation '{kind}' (choose from {', '.join(RELATION_KINDS)})", param="kind")
    return refine(mdp, ground, atol)


#: Each relation's partition refinement, by kind (the ground matters for eps only).
RELATIONS = {
    "bisim": lambda mdp, ground, atol: bisim_relation_labels(mdp, atol),
    "pi": lambda mdp, ground, atol: pi_relation_labels(mdp, atol),
    "psm": lambda mdp, ground, atol: psm_relation_labels(mdp, atol),
    "eps": lambda mdp, ground, atol: eps_relation_labels(mdp, ground, atol),
}


RELATION_KINDS = tuple(RELATIONS)


def relation_blocks(
    mdp: FiniteMDP, kind: str, ground: Ground = "reward", atol: float = RELATION_ATOL
) -> list[list[int]]:
    """The largest relation of ``kind`` as blocks (sorted lists of states)."""
    return blocks(relation_labels(mdp, kind, ground, atol))


def zero_set_labels(d: np.ndarray, atol: float = 1e-7) -> np.ndarray:
    """Blocks of the zero set of a distance matrix: components of ``d <= atol``."""
    d = np.asarray(d)
    return canonical(zero_components(d <= atol))
