// ``_refine_blocks`` and ``_split_blocks`` of bisimkit/relations.py, statement for statement (bit for bit its
// results): signature refinement over the sparse rows, a round reading only the rows with an entry in a block
// the last round changed.
#pragma once

#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

#include "arrays.hpp"
#include "sort.hpp"

namespace bisimkit::relations {

/// The work arrays of ``_split_blocks`` (``work`` in the Python body), n entries each.
struct SplitWork {
    Buffer<i64> marked, first_cid, multi, hit, place, state_cid;
    explicit SplitWork(i64 n) : marked(n), first_cid(n), multi(n), hit(n), place(n), state_cid(n) {
        std::fill_n(marked.store.get(), n, i64{0});
        std::fill_n(first_cid.store.get(), n, i64{0});
        std::fill_n(multi.store.get(), n, i64{0});
        std::fill_n(hit.store.get(), n, i64{0});
        std::fill_n(place.store.get(), n, i64{0});
        std::fill_n(state_cid.store.get(), n, i64{0});
    }
};

inline std::tuple<i64, i64> split_blocks(const Vec<i64> group, const Vec<i64> group_cid, i64 n_group, Vec<i64> labels,
                                         Vec<i64> elems, Vec<i64> loc, Vec<i64> begin, Vec<i64> end, i64 n_blocks,
                                         Vec<i64> changed_round, Vec<i64> next_changed, i64 n_next, i64 rnd,
                                         SplitWork &work) {
    const Vec<i64> marked = work.marked.view(), first_cid = work.first_cid.view(), multi = work.multi.view(),
                   hit = work.hit.view(), place = work.place.view(), state_cid = work.state_cid.view();
    i64 n_hit = 0;
    for (i64 g = 0; g < n_group; ++g) {
        const i64 b = labels[group[g]];
        const i64 c = group_cid[g];
        if (marked[b] == 0) {
            hit[n_hit] = b;
            n_hit += 1;
            first_cid[b] = c;
            multi[b] = 0;
        } else if (c != first_cid[b]) {
            multi[b] = 1;
        }
        marked[b] += 1;
    }
    for (i64 h = 0; h < n_hit; ++h) {
        const i64 b = hit[h];
        place[b] = end[b] - marked[b];
    }
    for (i64 g = 0; g < n_group; ++g) {
        const i64 s = group[g];
        const i64 b = labels[s];
        const i64 p = place[b];
        place[b] += 1;
        const i64 q = loc[s];
        const i64 u = elems[p];
        elems[p] = s;
        loc[s] = p;
        elems[q] = u;
        loc[u] = q;
        state_cid[s] = group_cid[g];
    }
    for (i64 h = 0; h < n_hit; ++h) {
        const i64 b = hit[h];
        const i64 lo = end[b] - marked[b];
        const i64 hi = end[b];
        marked[b] = 0;
        const bool keep = lo > begin[b];
        if (!keep && multi[b] == 0) continue;
        if (changed_round[b] != rnd + 1) {
            changed_round[b] = rnd + 1;
            next_changed[n_next] = b;
            n_next += 1;
        }
        if (keep) end[b] = lo;
        i64 y = lo;
        while (y < hi) {
            const i64 c = state_cid[elems[y]];
            i64 z = y;
            while (z < hi && state_cid[elems[z]] == c) z += 1;
            if (!keep && y == lo) {
                end[b] = z;
            } else {
                const i64 f = n_blocks;
                n_blocks += 1;
                begin[f] = y;
                end[f] = z;
                for (i64 w = y; w < z; ++w) labels[elems[w]] = f;
                changed_round[f] = rnd + 1;
                next_changed[n_next] = f;
                n_next += 1;
            }
            y = z;
        }
    }
    return {n_blocks, n_next};
}

template <class P, class J>
i64 refine_blocks(Vec<P> indptr, Vec<J> indices, Vec<double> data, i64 m, Vec<i64> initial, double atol,
                  Vec<i64> labels) {
    const i64 n = labels.size;
    if (n == 0) return 0;
    const i64 n_rows = indptr.size - 1;
    Buffer<i64> pred_ptr_(n + 1);
    const Vec<i64> pred_ptr = pred_ptr_.view();
    for (i64 t = 0; t <= n; ++t) pred_ptr[t] = 0;
    for (i64 r = 0; r < n_rows; ++r)
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) pred_ptr[static_cast<i64>(indices[e]) + 1] += 1;
    for (i64 t = 0; t < n; ++t) pred_ptr[t + 1] += pred_ptr[t];
    Buffer<i64> pred_(pred_ptr[n]), fill_(n);
    const Vec<i64> pred = pred_.view(), fill = fill_.view();
    for (i64 t = 0; t < n; ++t) fill[t] = pred_ptr[t];
    for (i64 r = 0; r < n_rows; ++r) {
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) {
            const i64 t = indices[e];
            pred[fill[t]] = r;
            fill[t] += 1;
        }
    }
    Buffer<i64> elems_(n), loc_(n), begin_(n), end_(n);
    const Vec<i64> elems = elems_.view(), loc = loc_.view(), begin = begin_.view(), end = end_.view();
    for (i64 s = 0; s < n; ++s) {
        elems[s] = s;
        loc[s] = s;
        labels[s] = 0;
        begin[s] = 0;
        end[s] = 0;
    }
    end[0] = n;
    i64 n_blocks = 1;
    Buffer<i64> changed_a(n), changed_b(n), changed_round_(n);
    Vec<i64> changed = changed_a.view(), next_changed = changed_b.view();
    const Vec<i64> changed_round = changed_round_.view();
    for (i64 s = 0; s < n; ++s) {
        changed[s] = 0;
        next_changed[s] = 0;
        changed_round[s] = -1;
    }
    changed_round[0] = 0;
    i64 n_changed = 1;
    Buffer<i64> row_round_(n_rows), touched_(n_rows);
    const Vec<i64> row_round = row_round_.view(), touched = touched_.view();
    for (i64 r = 0; r < n_rows; ++r) row_round[r] = -1;
    const i64 width = pred_ptr[n];
    Buffer<i64> cell_row_(width), cell_block_(width), cell_action_(width), cell_cid_(width);
    Buffer<double> cell_value_(width);
    const Vec<i64> cell_row = cell_row_.view(), cell_block = cell_block_.view(), cell_action = cell_action_.view(),
                   cell_cid = cell_cid_.view();
    const Vec<double> cell_value = cell_value_.view();
    Buffer<i64> group_(n), group_cid_(n);
    const Vec<i64> group = group_.view(), group_cid = group_cid_.view();
    SplitWork split_work(n);
    std::vector<i64> order;
    i64 rnd = 0;
    while (n_changed > 0) {
        i64 n_touched = 0;
        for (i64 x = 0; x < n_changed; ++x) {
            const i64 k = changed[x];
            for (i64 y = begin[k]; y < end[k]; ++y) {
                const i64 t = elems[y];
                for (i64 p = pred_ptr[t]; p < pred_ptr[t + 1]; ++p) {
                    const i64 r = pred[p];
                    if (row_round[r] != rnd) {
                        row_round[r] = rnd;
                        touched[n_touched] = r;
                        n_touched += 1;
                    }
                }
            }
        }
        i64 n_cells = 0;
        for (i64 x = 0; x < n_touched; ++x) {
            const i64 r = touched[x];
            const i64 first = n_cells;
            for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) {
                const i64 k = labels[static_cast<i64>(indices[e])];
                if (changed_round[k] == rnd) {
                    i64 c = first;
                    while (c < n_cells && cell_block[c] != k) c += 1;
                    if (c == n_cells) {
                        cell_row[c] = r;
                        cell_block[c] = k;
                        cell_action[c] = r % m;
                        cell_value[c] = 0.0;
                        n_cells += 1;
                    }
                    cell_value[c] += data[e];
                }
            }
        }
        // np.lexsort((row, value, action, block)): a total order (one cell per row and block)
        order.resize(static_cast<std::size_t>(n_cells));
        std::iota(order.begin(), order.end(), i64{0});
        std::sort(order.begin(), order.end(), [&](i64 u, i64 v) {
            if (cell_block[u] != cell_block[v]) return cell_block[u] < cell_block[v];
            if (cell_action[u] != cell_action[v]) return cell_action[u] < cell_action[v];
            if (float_less(cell_value[u], cell_value[v])) return true;
            if (float_less(cell_value[v], cell_value[u])) return false;
            return cell_row[u] < cell_row[v];
        });
        i64 n_next = 0;
        if (rnd == 0) {
            std::vector<i64> by_class(static_cast<std::size_t>(n));
            std::iota(by_class.begin(), by_class.end(), i64{0});
            std::stable_sort(by_class.begin(), by_class.end(), [&](i64 u, i64 v) { return initial[u] < initial[v]; });
            for (i64 x = 0; x < n; ++x) {
                group[x] = by_class[x];
                group_cid[x] = initial[by_class[x]];
            }
            std::tie(n_blocks, n_next) = split_blocks(group, group_cid, n, labels, elems, loc, begin, end, n_blocks,
                                                      changed_round, next_changed, 0, rnd, split_work);
        }
        i64 x = 0;
        while (x < n_cells) {
            const i64 k = cell_block[order[x]];
            const i64 a = cell_action[order[x]];
            i64 y = x;
            while (y < n_cells && cell_block[order[y]] == k && cell_action[order[y]] == a) y += 1;
            const bool zero = y - x < n;
            i64 cid = 0;
            double prev = 0.0;
            bool started = false;
            i64 zero_cid = -1;
            for (i64 z = x; z < y; ++z) {
                const double v = cell_value[order[z]];
                if (zero && zero_cid < 0 && v >= 0.0) {
                    if (started && 0.0 - prev > atol) cid += 1;
                    prev = 0.0;
                    started = true;
                    zero_cid = cid;
                }
                if (started && v - prev > atol) cid += 1;
                prev = v;
                started = true;
                cell_cid[order[z]] = cid;
            }
            if (zero && zero_cid < 0) {
                if (started && 0.0 - prev > atol) cid += 1;
                zero_cid = cid;
            }
            i64 n_group = 0;
            for (i64 z = x; z < y; ++z) {
                const i64 c = order[z];
                if (cell_cid[c] != zero_cid) {
                    group[n_group] = cell_row[c] / m;
                    group_cid[n_group] = cell_cid[c];
                    n_group += 1;
                }
            }
            std::tie(n_blocks, n_next) = split_blocks(group, group_cid, n_group, labels, elems, loc, begin, end,
                                                      n_blocks, changed_round, next_changed, n_next, rnd, split_work);
            x = y;
        }
        std::swap(changed, next_changed);
        n_changed = n_next;
        rnd += 1;
    }
    Buffer<i64> rank_(n_blocks);
    const Vec<i64> rank = rank_.view();
    for (i64 b = 0; b < n_blocks; ++b) rank[b] = -1;
    i64 count = 0;
    for (i64 s = 0; s < n; ++s) {
        const i64 b = labels[s];
        if (rank[b] < 0) {
            rank[b] = count;
            count += 1;
        }
        labels[s] = rank[b];
    }
    return count;
}

}  // namespace bisimkit::relations
