// The transportation simplex of bisimkit/simplex.py, statement for statement.
//
// Each function here is the kernel of the same name in bisimkit/simplex.py (its docstring says what
// it does and why); the arithmetic is the same, in the same order, so results are bit for bit those of
// the Python function. The batch drivers spread their blocks of problems over OpenMP threads where the
// Python body has ``prange``; every problem writes only its own slots, so the results do not depend on
// the number of threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "sort.hpp"

namespace bisimkit::simplex {

constexpr double FLOW_EPS = 1e-14;
constexpr double PRICE_TOL = 1e-15;
constexpr i64 SOLVED = 0, NO_START = 1, PIVOT_CAP = 2;
constexpr i64 BLOCK = 256;
constexpr double INF = std::numeric_limits<double>::infinity();

/// The scratch arrays of ``_solve_one`` (``Scratch`` in simplex.py), as views of the kinds ``IV`` (integer
/// vectors), ``FV`` (float vectors), ``IM`` (the adjacency matrix) and ``BV`` (flags).
template <class IV, class FV, class IM, class BV> struct ScratchOf {
    IM adj;
    IV deg, edge_row, edge_col, parent_edge, depth, stack, cycle, left;
    FV pot, rest_row, rest_col;
    BV done;
};

/// Scratch handed over from Python (any strides).
using Scratch = ScratchOf<Vec<i64>, Vec<double>, Mat<i64>, Vec<bool>>;
/// Scratch a kernel lays out itself (:class:`Workspace`): unit strides known when it is compiled.
using Packed = ScratchOf<Line<i64>, Line<double>, Grid<i64>, Line<bool>>;

/// ``_workspace(nmax, dmax)``: scratch owned by a block of problems.
struct Workspace {
    i64 nmax, dmax;
    Buffer<i64> adj, deg, edge_row, edge_col, parent_edge, depth, stack, cycle, left;
    Buffer<double> pot, rest_row, rest_col;
    Buffer<bool> done;

    Workspace(i64 nmax_, i64 dmax_)
        : nmax(nmax_), dmax(dmax_), adj(nmax_ * dmax_), deg(nmax_), edge_row(nmax_), edge_col(nmax_),
          parent_edge(nmax_), depth(nmax_), stack(nmax_), cycle(nmax_), left(nmax_), pot(nmax_), rest_row(nmax_),
          rest_col(nmax_), done(nmax_) {}

    Packed view() const {
        return {adj.grid(nmax, dmax), deg.line(),   edge_row.line(), edge_col.line(),
                parent_edge.line(),   depth.line(), stack.line(),    cycle.line(),
                left.line(),          pot.line(),   rest_row.line(), rest_col.line(),
                done.line()};
    }
};

template <class IV, class IM> inline void add_edge(i64 e, i64 i, i64 j, i64 k, IV er, IV ec, IM adj, IV deg) {
    er[e] = i;
    ec[e] = j;
    adj(i, deg[i]) = e;
    deg[i] += 1;
    adj(k + j, deg[k + j]) = e;
    deg[k + j] += 1;
}

template <class IM, class IV> inline void remove_from(i64 node, i64 e, IM adj, IV deg) {
    const i64 count = deg[node];
    for (i64 x = 0; x < count; ++x) {
        if (adj(node, x) == e) {
            deg[node] -= 1;
            adj(node, x) = adj(node, deg[node]);
            return;
        }
    }
}

template <class IV> inline i64 find(IV parent, i64 x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

template <class IV> inline bool join(IV parent, i64 x, i64 y) {
    const i64 rx = find(parent, x);
    const i64 ry = find(parent, y);
    if (rx == ry) return false;
    parent[rx] = ry;
    return true;
}

/// ``np.argsort(C[:k, :l].ravel(), kind="stable")``
template <class FM> inline void cost_order(FM C, i64 k, i64 l, std::vector<i64> &order) {
    stable_argsort(k * l, [&](i64 idx) { return C(idx / l, idx % l); }, order);
}

template <class FM, class IV, class IM>
inline bool greedy_basis(Vec<double> a, Vec<double> b, FM C, i64 k, i64 l, FM flow, IV er, IV ec, IM adj, IV deg) {
    const i64 n = k + l;
    std::vector<i64> order;
    cost_order(C, k, l, order);
    Buffer<double> rs_(k), rd_(l);
    const Line<double> rs = rs_.line(), rd = rd_.line();
    for (i64 x = 0; x < k; ++x) rs[x] = a[x];
    for (i64 x = 0; x < l; ++x) rd[x] = b[x];
    Buffer<i64> uf_(n);
    const Line<i64> uf = uf_.line();
    for (i64 x = 0; x < n; ++x) uf[x] = x;
    i64 edges = 0;
    for (const i64 idx : order) {
        const i64 i = idx / l;
        const i64 j = idx % l;
        if (rs[i] > FLOW_EPS && rd[j] > FLOW_EPS) {
            if (!join(uf, i, k + j)) return false;  // would close a cycle (should not happen)
            const double f = rs[i] < rd[j] ? rs[i] : rd[j];
            flow(i, j) = f;
            rs[i] -= f;
            rd[j] -= f;
            add_edge(edges, i, j, k, er, ec, adj, deg);
            edges += 1;
        }
    }
    for (const i64 idx : order) {
        if (edges == n - 1) break;
        const i64 i = idx / l;
        const i64 j = idx % l;
        if (join(uf, i, k + j)) {
            add_edge(edges, i, j, k, er, ec, adj, deg);
            edges += 1;
        }
    }
    return edges == n - 1;
}

template <class B, class IV, class IM>
bool tree_basis(i64 k, i64 l, IV er, IV ec, IM adj, IV deg, Vec<B> br, Vec<B> bc) {
    for (i64 e = 0; e < k + l - 1; ++e) {
        const i64 i = br[e];
        const i64 j = bc[e];
        if (i < 0 || i >= k || j < 0 || j >= l) return false;
        // Repeated cells (not a tree) would run past a node's row of ``adj``, where the Python body
        // raises IndexError: not a spanning tree.
        if (deg[i] >= adj.cols || deg[k + j] >= adj.cols) return false;
        add_edge(e, i, j, k, er, ec, adj, deg);
    }
    return true;
}

template <class FM, class IV, class IM, class FV, class BV>
inline bool peel_flows(Vec<double> a, Vec<double> b, i64 k, i64 l, FM flow, IV er, IV ec, IM adj, IV deg, FV rs,
                       FV rd, IV left, BV done, IV stack) {
    const i64 n = k + l;
    for (i64 x = 0; x < k; ++x) rs[x] = a[x];
    for (i64 x = 0; x < l; ++x) rd[x] = b[x];
    for (i64 x = 0; x < n; ++x) left[x] = deg[x];
    for (i64 x = 0; x < n; ++x) done[x] = false;
    i64 top = 0;
    for (i64 v = 0; v < n; ++v) {
        if (left[v] == 1) {
            stack[top] = v;
            top += 1;
        }
    }
    i64 assigned = 0;
    while (top > 0) {
        top -= 1;
        const i64 v = stack[top];
        if (left[v] != 1) continue;
        i64 e = -1;
        for (i64 x = 0; x < deg[v]; ++x) {
            if (!done[adj(v, x)]) {
                e = adj(v, x);
                break;
            }
        }
        if (e < 0) continue;
        const i64 i = er[e];
        const i64 j = ec[e];
        double f = v < k ? rs[i] : rd[j];
        if (f < -1e-12) return false;
        if (f < 0.0) f = 0.0;
        flow(i, j) = f;
        rs[i] -= f;
        rd[j] -= f;
        done[e] = true;
        assigned += 1;
        left[i] -= 1;
        left[k + j] -= 1;
        for (const i64 w : {i, k + j}) {
            if (left[w] == 1) {
                stack[top] = w;
                top += 1;
            }
        }
    }
    return assigned == n - 1;
}

template <class B, class FM, class IV, class IM, class FV, class BV>
bool warm_basis(Vec<double> a, Vec<double> b, i64 k, i64 l, FM flow, IV er, IV ec, IM adj, IV deg, Vec<B> br,
                Vec<B> bc, FV rs, FV rd, IV left, BV done, IV stack) {
    return tree_basis(k, l, er, ec, adj, deg, br, bc) &&
           peel_flows(a, b, k, l, flow, er, ec, adj, deg, rs, rd, left, done, stack);
}

template <class IV, class FM>
inline std::pair<double, i64> smallest_even_flow(IV path, i64 length, FM flow, IV er, IV ec, double theta,
                                                 i64 leave) {
    for (i64 t = 0; t < length; t += 2) {
        const i64 e = path[t];
        const double f = flow(er[e], ec[e]);
        if (f < theta) {
            theta = f;
            leave = e;
        }
    }
    return {theta, leave};
}

template <class FM, class IV, class IM, class FV>
inline void hang(i64 root, FM C, i64 k, IV er, IV ec, IM adj, IV deg, IV parent_edge, IV depth, FV pot, IV stack) {
    stack[0] = root;
    i64 top = 1;
    while (top > 0) {
        top -= 1;
        const i64 v = stack[top];
        const i64 count = deg[v];
        for (i64 x = 0; x < count; ++x) {
            const i64 e = adj(v, x);
            if (e == parent_edge[v]) continue;
            const i64 w = v < k ? k + ec[e] : er[e];
            parent_edge[w] = e;
            depth[w] = depth[v] + 1;
            pot[w] = C(er[e], ec[e]) - pot[v];
            stack[top] = w;
            top += 1;
        }
    }
}

template <class FM, class IV, class FV>
inline double plan_gap(Vec<double> a, Vec<double> b, i64 k, i64 l, FM flow, IV edge_row, IV edge_col, FV pot,
                       double cost, double violation, double scale, double floor, FV rows, FV cols) {
    for (i64 x = 0; x < k; ++x) rows[x] = 0.0;
    for (i64 x = 0; x < l; ++x) cols[x] = 0.0;
    for (i64 e = 0; e < k + l - 1; ++e) {
        const double f = flow(edge_row[e], edge_col[e]);
        rows[edge_row[e]] += f;
        cols[edge_col[e]] += f;
    }
    double dual = 0.0;
    double size = cost;
    double drift = 0.0;
    for (i64 i = 0; i < k; ++i) {
        dual += a[i] * (pot[i] - violation);
        size += std::fabs(a[i] * pot[i]) + a[i] * violation;
        drift += std::fabs(a[i] - rows[i]);
    }
    for (i64 j = 0; j < l; ++j) {
        dual += b[j] * pot[k + j];
        size += std::fabs(b[j] * pot[k + j]);
        drift += std::fabs(b[j] - cols[j]);
    }
    double mass = 0.0;
    for (i64 i = 0; i < k; ++i) mass += a[i];
    const double eps = 2.220446049250313e-16;
    const double terms = static_cast<double>(k + l + 2);
    double below = cost - dual + terms * eps * size;
    const double trivial = cost - floor * mass + terms * eps * (std::fabs(cost) + std::fabs(floor) * mass);
    if (trivial < below) below = trivial;
    const double above = scale * drift + terms * eps * std::fabs(cost);
    const double gap = below > above ? below : above;
    return gap > 0.0 ? gap : 0.0;
}

/// ``(cost, status, pivots, gap, steady)`` of ``_solve_one``.
using Solved = std::tuple<double, i64, i64, double, bool>;

/// ``_cost_range``: ``(max |C|, min C)`` over ``C[:k, :l]``.
template <class FM> inline std::pair<double, double> cost_range(FM C, i64 k, i64 l) {
    double scale = 0.0;
    double floor = INF;
    for (i64 i = 0; i < k; ++i) {
        for (i64 j = 0; j < l; ++j) {
            if (std::fabs(C(i, j)) > scale) scale = std::fabs(C(i, j));
            if (C(i, j) < floor) floor = C(i, j);
        }
    }
    return {scale, floor};
}

/// ``_forced_plan``: one side with a single atom, whose only plan is optimal without a pivot.
template <class B, class FM, class S>
Solved forced_plan(Vec<double> a, Vec<double> b, FM C, i64 k, i64 l, FM flow, Vec<B> basis_row, Vec<B> basis_col,
                   const S &ws) {
    const auto er = ws.edge_row, ec = ws.edge_col;
    const auto pot = ws.pot;
    const auto [scale, floor] = cost_range(C, k, l);
    if (k == 1) {
        pot[0] = 0.0;
        for (i64 j = 0; j < l; ++j) {
            er[j] = 0;
            ec[j] = j;
            flow(0, j) = b[j];
            pot[1 + j] = C(0, j);
        }
    } else {
        pot[k] = 0.0;
        for (i64 i = 0; i < k; ++i) {
            er[i] = i;
            ec[i] = 0;
            flow(i, 0) = a[i];
            pot[i] = C(i, 0);
        }
    }
    double cost = 0.0;
    for (i64 i = 0; i < k; ++i) {
        for (i64 j = 0; j < l; ++j) {
            if (flow(i, j) < FLOW_EPS) flow(i, j) = 0.0;
            cost += flow(i, j) * C(i, j);
        }
    }
    for (i64 e = 0; e < k + l - 1; ++e) {
        basis_row[e] = static_cast<B>(er[e]);
        basis_col[e] = static_cast<B>(ec[e]);
    }
    return {cost, SOLVED, 0,
            plan_gap(a, b, k, l, flow, er, ec, pot, cost, 0.0, scale, floor, ws.rest_row, ws.rest_col), false};
}

template <class B, class FM, class S>
Solved solve_one(Vec<double> a, Vec<double> b, FM C, i64 k, i64 l, FM flow, Vec<B> basis_row, Vec<B> basis_col,
                 bool warm, bool kept, const S &ws) {
    if (k == 1 || l == 1) return forced_plan(a, b, C, k, l, flow, basis_row, basis_col, ws);
    const i64 n = k + l;
    const auto er = ws.edge_row, ec = ws.edge_col, deg = ws.deg;
    const auto adj = ws.adj;
    const auto pot = ws.pot;
    const auto parent_edge = ws.parent_edge, depth = ws.depth, stack = ws.stack, cycle = ws.cycle;
    if (!(warm && kept))
        for (i64 i = 0; i < k; ++i)
            for (i64 j = 0; j < l; ++j) flow(i, j) = 0.0;
    for (i64 x = 0; x < n; ++x) deg[x] = 0;
    bool started = false;
    bool lazy = false;
    if (warm && kept) {
        started = tree_basis(k, l, er, ec, adj, deg, basis_row, basis_col);
        lazy = started;
    } else if (warm) {
        started = warm_basis(a, b, k, l, flow, er, ec, adj, deg, basis_row, basis_col, ws.rest_row, ws.rest_col,
                             ws.left, ws.done, stack);
    }
    const bool steady = started;
    if (!started) {
        for (i64 i = 0; i < k; ++i)
            for (i64 j = 0; j < l; ++j) flow(i, j) = 0.0;
        for (i64 x = 0; x < n; ++x) deg[x] = 0;
        started = greedy_basis(a, b, C, k, l, flow, er, ec, adj, deg);
    }
    if (!started) return {0.0, NO_START, 0, INF, false};
    const auto [scale, floor] = cost_range(C, k, l);
    const double eps = PRICE_TOL * (1.0 + scale);
    const i64 bland_after = 50 * n;
    const i64 total = k * l;
    i64 block = static_cast<i64>(std::sqrt(static_cast<double>(total)));
    if (8 > block) block = 8;
    i64 pi_ = 0;  // pricing position (row, column), kept across pivots
    i64 pj_ = 0;
    i64 status = PIVOT_CAP;
    i64 pivots = 0;
    double violation = 0.0;
    pot[0] = 0.0;
    depth[0] = 0;
    parent_edge[0] = -1;
    hang(0, C, k, er, ec, adj, deg, parent_edge, depth, pot, stack);
    const i64 cap = 5000 * n;
    for (i64 pivot = 0; pivot < cap; ++pivot) {
        i64 ei = -1;
        i64 ej = -1;
        double best = -eps;
        double low = 0.0;
        const bool first = pivot >= bland_after;
        i64 count = 0;
        for (i64 scanned = 0; scanned < total; ++scanned) {
            const double r = C(pi_, pj_) - pot[pi_] - pot[k + pj_];
            if (r < low) low = r;
            if (r < best) {
                best = r;
                ei = pi_;
                ej = pj_;
            }
            pj_ += 1;
            if (pj_ == l) {
                pj_ = 0;
                pi_ += 1;
                if (pi_ == k) pi_ = 0;
            }
            count += 1;
            if (ei >= 0 && (first || count >= block)) break;
            if (count >= block) count = 0;
        }
        if (ei < 0) {
            status = SOLVED;
            violation = -low;
            break;
        }
        if (lazy) {
            lazy = false;
            if (!peel_flows(a, b, k, l, flow, er, ec, adj, deg, ws.rest_row, ws.rest_col, ws.left, ws.done, stack))
                return {0.0, NO_START, pivots, INF, false};
        }
        pivots += 1;
        i64 u = ei;
        i64 w = k + ej;
        i64 nu = 0;
        i64 nw = 0;
        while (u != w) {
            if (depth[u] >= depth[w]) {
                cycle[nu] = parent_edge[u];
                nu += 1;
                const i64 e = parent_edge[u];
                u = u < k ? k + ec[e] : er[e];
            } else {
                stack[nw] = parent_edge[w];
                nw += 1;
                const i64 e = parent_edge[w];
                w = w < k ? k + ec[e] : er[e];
            }
        }
        auto [theta, leave] = smallest_even_flow(stack, nw, flow, er, ec, INF, -1);
        const i64 w_side = leave;
        std::tie(theta, leave) = smallest_even_flow(cycle, nu, flow, er, ec, theta, leave);
        const i64 inner = leave == w_side ? k + ej : ei;
        const i64 outer = leave == w_side ? ei : k + ej;
        if (theta < 0.0) theta = 0.0;
        for (i64 t = 0; t < nw; ++t) {
            const i64 e = stack[t];
            flow(er[e], ec[e]) += t % 2 == 0 ? -theta : theta;
        }
        for (i64 t = 0; t < nu; ++t) {
            const i64 e = cycle[t];
            flow(er[e], ec[e]) += t % 2 == 0 ? -theta : theta;
        }
        flow(ei, ej) += theta;
        const i64 li = er[leave];
        const i64 lj = ec[leave];
        flow(li, lj) = 0.0;
        remove_from(li, leave, adj, deg);
        remove_from(k + lj, leave, adj, deg);
        add_edge(leave, ei, ej, k, er, ec, adj, deg);
        parent_edge[inner] = leave;
        depth[inner] = depth[outer] + 1;
        pot[inner] = C(ei, ej) - pot[outer];
        hang(inner, C, k, er, ec, adj, deg, parent_edge, depth, pot, stack);
    }
    double cost = 0.0;
    for (i64 i = 0; i < k; ++i) {
        for (i64 j = 0; j < l; ++j) {
            if (flow(i, j) < FLOW_EPS) flow(i, j) = 0.0;  // rounding crumbs (and exact-zero degenerate cells)
            cost += flow(i, j) * C(i, j);
        }
    }
    for (i64 e = 0; e < n - 1; ++e) {
        basis_row[e] = static_cast<B>(er[e]);
        basis_col[e] = static_cast<B>(ec[e]);
    }
    if (status != SOLVED) return {cost, status, pivots, INF, false};
    return {cost, status, pivots,
            plan_gap(a, b, k, l, flow, er, ec, pot, cost, violation, scale, floor, ws.rest_row, ws.rest_col),
            steady && pivots == 0};
}

template <class B>
bool basis_from_flow(Mat<double> flow, Mat<double> C, i64 k, i64 l, Vec<B> br, Vec<B> bc) {
    const i64 n = k + l;
    Buffer<i64> uf_(n);
    Vec<i64> uf = uf_.view();
    for (i64 x = 0; x < n; ++x) uf[x] = x;
    i64 edges = 0;
    for (i64 i = 0; i < k; ++i) {
        for (i64 j = 0; j < l; ++j) {
            if (flow(i, j) > 0.0) {
                if (edges == n - 1 || !join(uf, i, k + j)) return false;
                br[edges] = static_cast<B>(i);
                bc[edges] = static_cast<B>(j);
                edges += 1;
            }
        }
    }
    if (edges < n - 1) {
        std::vector<i64> order;
        cost_order(C, k, l, order);
        for (const i64 idx : order) {
            const i64 i = idx / l;
            const i64 j = idx % l;
            if (join(uf, i, k + j)) {
                br[edges] = static_cast<B>(i);
                bc[edges] = static_cast<B>(j);
                edges += 1;
                if (edges == n - 1) break;
            }
        }
    }
    return edges == n - 1;
}

template <class B>
void basis_from_flow_at(Cube<double> flows, Cube<double> C, Vec<i64> k, Vec<i64> l, Mat<B> basis, Vec<i64> off,
                        Vec<bool> ok, i64 p) {
    const i64 lo = off[p];
    const i64 hi = off[p] + k[p] + l[p] - 1;
    ok[p] = basis_from_flow(flows[p], C[p], k[p], l[p], basis.column(0, lo, hi), basis.column(1, lo, hi));
}

template <class B>
void bases_from_flows(Cube<double> flows, Cube<double> C, Vec<i64> k, Vec<i64> l, Mat<B> basis, Vec<i64> off,
                      Vec<bool> ok, bool parallel) {
    const i64 count = flows.n0;
#pragma omp parallel for schedule(dynamic) if (parallel)
    for (i64 p = 0; p < count; ++p) basis_from_flow_at(flows, C, k, l, basis, off, ok, p);
}

template <class B>
void solve_block(Mat<double> a, Mat<double> b, Cube<double> C, Vec<i64> k, Vec<i64> l, Cube<double> flows,
                 Vec<double> costs, Vec<double> gaps, Vec<bool> ok, Vec<i64> pivots, Mat<B> basis, Vec<i64> off,
                 Vec<bool> warm, i64 blk, i64 nmax, i64 dmax) {
    const Workspace space(nmax, dmax);
    const Packed ws = space.view();
    const i64 end = (blk + 1) * BLOCK < a.rows ? (blk + 1) * BLOCK : a.rows;
    for (i64 p = blk * BLOCK; p < end; ++p) {
        const i64 lo = off[p];
        const i64 hi = off[p] + k[p] + l[p] - 1;
        const auto [cost, status, piv, gap, steady] = solve_one(a.row(p), b.row(p), C[p], k[p], l[p], flows[p],
                                                                basis.column(0, lo, hi), basis.column(1, lo, hi),
                                                                warm[p], false, ws);
        (void)steady;
        costs[p] = cost;
        gaps[p] = gap;
        ok[p] = status == SOLVED;
        pivots[p] = piv;
    }
}

template <class B>
void solve_batch(Mat<double> a, Mat<double> b, Cube<double> C, Vec<i64> k, Vec<i64> l, Cube<double> flows,
                 Vec<double> costs, Vec<double> gaps, Vec<bool> ok, Vec<i64> pivots, Mat<B> basis, Vec<i64> off,
                 Vec<bool> warm, i64 nmax, i64 dmax, bool parallel) {
    const i64 blocks = (a.rows + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(dynamic) if (parallel)
    for (i64 blk = 0; blk < blocks; ++blk)
        solve_block(a, b, C, k, l, flows, costs, gaps, ok, pivots, basis, off, warm, blk, nmax, dmax);
}

/// ``state`` of ``solve_rows``: solved by the simplex, exact without it, or left to the caller.
constexpr std::int8_t ROW_SOLVED = 0, ROW_EXACT = 1, ROW_LEFT = 2;

template <class J, class B, class O, class S>
void solve_rows_one(Mat<double> D, Vec<J> xptr, Vec<J> xidx, Vec<double> xdat, Vec<i64> src, Vec<J> yptr,
                    Vec<J> yidx, Vec<double> ydat, Vec<i64> dst, bool zero_diagonal, i64 kernel_max, Vec<i64> off,
                    Mat<B> basis, Vec<bool> warm, Vec<bool> kept, Vec<double> costs, Vec<double> gaps,
                    Vec<std::int8_t> state, Vec<O> out_i, Vec<O> out_j, Vec<double> out_mass, i64 p,
                    Line<double> cbuf, Line<double> fbuf, const S &ws) {
    const i64 s = src[p];
    const i64 t = dst[p];
    const i64 xa = xptr[s];
    const i64 kk = xptr[s + 1] - xa;
    const i64 yb = yptr[t];
    const i64 ll = yptr[t + 1] - yb;
    const i64 lo = off[p];
    const i64 hi = off[p + 1];
    costs[p] = 0.0;
    gaps[p] = 0.0;
    bool hold = kept[p] && warm[p];
    kept[p] = false;
    if (kk == 0 || ll == 0) {
        for (i64 e = lo; e < hi; ++e) out_mass[e] = 0.0;
        state[p] = ROW_EXACT;
        return;
    }
    if (zero_diagonal && kk == ll) {
        bool same = true;
        for (i64 i = 0; i < kk; ++i) {
            if (xidx[xa + i] != yidx[yb + i] || xdat[xa + i] != ydat[yb + i]) {
                same = false;
                break;
            }
        }
        if (same) {
            for (i64 i = 0; i < kk; ++i) {
                out_i[lo + i] = static_cast<O>(xidx[xa + i]);
                out_j[lo + i] = static_cast<O>(xidx[xa + i]);
                out_mass[lo + i] = xdat[xa + i];
            }
            for (i64 e = lo + kk; e < hi; ++e) out_mass[e] = 0.0;
            state[p] = ROW_EXACT;
            return;
        }
    }
    if (!(warm[p] || (kk <= kernel_max && ll <= kernel_max))) {
        for (i64 e = lo; e < hi; ++e) out_mass[e] = 0.0;
        state[p] = ROW_LEFT;
        return;
    }
    const Grid<double> C{cbuf.data, kk, ll, ll};
    for (i64 i = 0; i < kk; ++i) {
        const i64 row = xidx[xa + i];
        for (i64 j = 0; j < ll; ++j) C(i, j) = D(row, yidx[yb + j]);
    }
    const Grid<double> flow{fbuf.data, kk, ll, ll};
    if (hold) {
        for (i64 i = 0; i < kk; ++i)
            for (i64 j = 0; j < ll; ++j) flow(i, j) = 0.0;
        for (i64 e = lo; e < hi; ++e) {
            const i64 r = basis(e, 0);
            const i64 c = basis(e, 1);
            if (r < 0 || r >= kk || c < 0 || c >= ll) {
                hold = false;
                break;
            }
            flow(r, c) = out_mass[e];
        }
    }
    const auto [cost, status, pivots, gap, steady] =
        solve_one(xdat.slice(xa, xa + kk), ydat.slice(yb, yb + ll), C, kk, ll, flow, basis.column(0, lo, hi),
                  basis.column(1, lo, hi), warm[p], hold, ws);
    (void)pivots;
    const bool good = status == SOLVED;
    for (i64 e = lo; e < hi; ++e) {
        const i64 r = good ? static_cast<i64>(basis(e, 0)) : 0;
        const i64 c = good ? static_cast<i64>(basis(e, 1)) : 0;
        out_i[e] = static_cast<O>(xidx[xa + r]);
        out_j[e] = static_cast<O>(yidx[yb + c]);
        out_mass[e] = good ? flow(r, c) : 0.0;
    }
    costs[p] = cost;
    gaps[p] = gap;
    warm[p] = good;
    kept[p] = good && steady;
    state[p] = good ? ROW_SOLVED : ROW_LEFT;
}

template <class J, class B, class O>
void solve_rows_block(Mat<double> D, Vec<J> xptr, Vec<J> xidx, Vec<double> xdat, Vec<i64> src, Vec<J> yptr,
                      Vec<J> yidx, Vec<double> ydat, Vec<i64> dst, bool zero_diagonal, i64 kernel_max, Vec<i64> off,
                      Mat<B> basis, Vec<bool> warm, Vec<bool> kept, Vec<double> costs, Vec<double> gaps, Vec<std::int8_t> state,
                      Vec<O> out_i, Vec<O> out_j, Vec<double> out_mass, i64 blk, i64 nmax, i64 dmax, i64 cmax) {
    const Buffer<double> cbuf(cmax), fbuf(cmax);
    const Workspace space(nmax, dmax);
    const Packed ws = space.view();
    const i64 end = (blk + 1) * BLOCK < src.size ? (blk + 1) * BLOCK : src.size;
    for (i64 p = blk * BLOCK; p < end; ++p)
        solve_rows_one(D, xptr, xidx, xdat, src, yptr, yidx, ydat, dst, zero_diagonal, kernel_max, off, basis, warm,
                       kept, costs, gaps, state, out_i, out_j, out_mass, p, cbuf.line(), fbuf.line(), ws);
}

template <class J, class B, class O>
void solve_rows(Mat<double> D, Vec<J> xptr, Vec<J> xidx, Vec<double> xdat, Vec<i64> src, Vec<J> yptr, Vec<J> yidx,
                Vec<double> ydat, Vec<i64> dst, bool zero_diagonal, i64 kernel_max, Vec<i64> off, Mat<B> basis,
                Vec<bool> warm, Vec<bool> kept, Vec<double> costs, Vec<double> gaps, Vec<std::int8_t> state, Vec<O> out_i,
                Vec<O> out_j, Vec<double> out_mass, i64 nmax, i64 dmax, i64 cmax, bool parallel) {
    const i64 blocks = (src.size + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(dynamic) if (parallel)
    for (i64 blk = 0; blk < blocks; ++blk)
        solve_rows_block(D, xptr, xidx, xdat, src, yptr, yidx, ydat, dst, zero_diagonal, kernel_max, off, basis, warm,
                         kept, costs, gaps, state, out_i, out_j, out_mass, blk, nmax, dmax, cmax);
}

template <class J>
void marginal_gaps(Mat<double> C, Vec<J> xptr, Vec<J> xidx, Vec<i64> src, Vec<J> yptr, Vec<J> yidx, Vec<i64> dst,
                   Vec<std::int8_t> state, Vec<double> marginal, Vec<double> gaps) {
    const i64 k = C.rows;
    const i64 l = C.cols;
    Buffer<double> row_max_(k), col_max_(l), left_(xptr.size - 1), right_(yptr.size - 1);
    const Vec<double> row_max = row_max_.view(), col_max = col_max_.view(), left = left_.view(),
                      right = right_.view();
    for (i64 i = 0; i < k; ++i) row_max[i] = 0.0;
    for (i64 j = 0; j < l; ++j) col_max[j] = 0.0;
    for (i64 i = 0; i < k; ++i) {
        for (i64 j = 0; j < l; ++j) {
            const double v = C(i, j);
            if (v > row_max[i]) row_max[i] = v;
            if (v > col_max[j]) col_max[j] = v;
        }
    }
    for (i64 r = 0; r < xptr.size - 1; ++r) {
        left[r] = 0.0;
        for (i64 e = xptr[r]; e < xptr[r + 1]; ++e)
            if (row_max[xidx[e]] > left[r]) left[r] = row_max[xidx[e]];
    }
    for (i64 r = 0; r < yptr.size - 1; ++r) {
        right[r] = 0.0;
        for (i64 e = yptr[r]; e < yptr[r + 1]; ++e)
            if (col_max[yidx[e]] > right[r]) right[r] = col_max[yidx[e]];
    }
    for (i64 p = 0; p < src.size; ++p) {
        double reach = left[src[p]];
        if (right[dst[p]] < reach) reach = right[dst[p]];
        gaps[p] += state[p] == ROW_EXACT ? 0.0 : reach * marginal[p];
    }
}

template <class I, class B>
void line_basis(Vec<I> xs, Vec<double> a, i64 k, Vec<I> ys, Vec<double> b, i64 l, Vec<double> h, Vec<B> br,
                Vec<B> bc) {
    std::vector<i64> oi, oj;
    stable_argsort(k, [&](i64 x) { return h[xs[x]]; }, oi);
    stable_argsort(l, [&](i64 x) { return h[ys[x]]; }, oj);
    i64 i = 0;
    i64 j = 0;
    double rs = a[oi[0]];
    double rd = b[oj[0]];
    for (i64 e = 0; e < k + l - 1; ++e) {
        br[e] = static_cast<B>(oi[i]);
        bc[e] = static_cast<B>(oj[j]);
        const double f = rs < rd ? rs : rd;
        rs -= f;
        rd -= f;
        if (j == l - 1 || (i < k - 1 && rs <= rd)) {
            i += 1;
            if (i < k) rs = a[oi[i]];
        } else {
            j += 1;
            if (j < l) rd = b[oj[j]];
        }
    }
}

template <class I, class B>
void line_bases(Mat<I> xs, Mat<double> a, Vec<i64> k, Mat<I> ys, Mat<double> b, Vec<i64> l, Vec<double> h,
                Mat<B> basis, Vec<i64> off, Vec<bool> valid) {
    for (i64 p = 0; p < k.size; ++p) {
        if (valid[p] || k[p] == 0 || l[p] == 0) continue;
        const i64 lo = off[p];
        const i64 hi = lo + k[p] + l[p] - 1;
        line_basis(xs.row(p), a.row(p), k[p], ys.row(p), b.row(p), l[p], h, basis.column(0, lo, hi),
                   basis.column(1, lo, hi));
        valid[p] = true;
    }
}

}  // namespace bisimkit::simplex
