// ``_refine_blocks`` of bisimkit/relations.py and its helpers (``_split_blocks``, ``_split_sorted``, the column
// helpers), statement for statement (bit for bit its results). A column is the Python body's triple: the mass
// counts with the sorted masses (one sorted vector of pairs) and the masses followed by a gap wider than atol.
#pragma once

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>
#include <tuple>
#include <vector>

#include "arrays.hpp"
#include "sort.hpp"

namespace bisimkit::relations {

/// The columns' sorted lists, in one arena: a column's list is ``size`` elements at ``at`` with room for
/// ``room``; a list that outgrows its room moves to the arena's end with twice the room (no allocation per
/// column, and the columns of one round lie together).
template <class T> struct Arena {
    std::vector<T> store;

    struct List {
        i64 at = 0, size = 0, room = 0;
    };

    T *data(const List &l) { return store.data() + l.at; }
    const T *data(const List &l) const { return store.data() + l.at; }
    void make(List &l, i64 room) {
        l.at = static_cast<i64>(store.size());
        l.size = 0;
        l.room = room;
        store.resize(store.size() + static_cast<std::size_t>(room));
    }
    void insert(List &l, i64 i, const T &v) {
        if (l.size == l.room) {
            const i64 at = static_cast<i64>(store.size());
            store.resize(store.size() + static_cast<std::size_t>(2 * l.room));
            std::copy(store.begin() + l.at, store.begin() + l.at + l.size, store.begin() + at);
            l.at = at;
            l.room *= 2;
        }
        T *d = data(l);
        for (i64 j = l.size; j > i; --j) d[j] = d[j - 1];
        d[i] = v;
        l.size += 1;
    }
    void erase(List &l, i64 i) {
        T *d = data(l);
        for (i64 j = i; j + 1 < l.size; ++j) d[j] = d[j + 1];
        l.size -= 1;
    }
};

using Masses = Arena<std::pair<double, i64>>;  // the distinct masses, sorted, with their counts (the Python
                                               // body's sorted list and dict)
using Cuts = Arena<double>;                    // the masses followed by a gap wider than atol, sorted

struct Column {
    Masses::List masses;
    Cuts::List cuts;
};

/// Every column's lists.
struct Columns {
    std::vector<Column> of;
    Masses masses;
    Cuts cuts;

    std::size_t bytes() const {
        return of.capacity() * sizeof(Column) + masses.store.capacity() * sizeof(std::pair<double, i64>) +
               cuts.store.capacity() * sizeof(double);
    }
};

/// This thread's columns, kept between calls while they hold at most ``kept_columns_bytes`` (like the kernels'
/// Buffers, arrays.hpp): the next refinement finds their pages mapped already.
constexpr std::size_t kept_columns_bytes = std::size_t{16} << 20;

inline Columns &kept_columns() {
    thread_local Columns columns;
    return columns;
}

inline i64 position(const Masses &arena, const Masses::List &l, double v) {  // bisect.bisect_left
    const auto *d = arena.data(l);
    return std::lower_bound(d, d + l.size, v, [](const std::pair<double, i64> &x, double y) { return x.first < y; }) -
           d;
}

inline i64 position(const Cuts &arena, const Cuts::List &l, double v) {
    const double *d = arena.data(l);
    return std::lower_bound(d, d + l.size, v) - d;
}

inline bool column_has(const Columns &C, const Column &col, double v) {
    const i64 i = position(C.masses, col.masses, v);
    return i < col.masses.size && C.masses.data(col.masses)[i].first == v;
}

inline bool cut_at(const Columns &C, const Column &col, i64 j, double v) {
    return j < col.cuts.size && C.cuts.data(col.cuts)[j] == v;
}

inline void column_add(Columns &C, Column &col, double v, double atol) {
    const i64 i = position(C.masses, col.masses, v);
    if (i < col.masses.size && C.masses.data(col.masses)[i].first == v) {
        C.masses.data(col.masses)[i].second += 1;
        return;
    }
    C.masses.insert(col.masses, i, {v, 1});
    const auto *m = C.masses.data(col.masses);
    if (i + 1 < col.masses.size && m[i + 1].first - v > atol)
        C.cuts.insert(col.cuts, position(C.cuts, col.cuts, v), v);
    if (i > 0) {
        const double u = m[i - 1].first;
        const i64 j = position(C.cuts, col.cuts, u);
        const bool was = cut_at(C, col, j, u);
        if (v - u > atol && !was) {
            C.cuts.insert(col.cuts, j, u);
        } else if (v - u <= atol && was) {
            C.cuts.erase(col.cuts, j);
        }
    }
}

inline bool column_remove(Columns &C, Column &col, double v, double atol) {
    const i64 i = position(C.masses, col.masses, v);
    C.masses.data(col.masses)[i].second -= 1;
    if (C.masses.data(col.masses)[i].second > 0) return false;
    C.masses.erase(col.masses, i);
    i64 j = position(C.cuts, col.cuts, v);
    const bool cut_after = cut_at(C, col, j, v);
    if (cut_after) C.cuts.erase(col.cuts, j);
    if (i == 0) return false;
    const auto *m = C.masses.data(col.masses);
    const double u = m[i - 1].first;
    j = position(C.cuts, col.cuts, u);
    const bool cut_before = cut_at(C, col, j, u);
    if (i == col.masses.size) {
        if (cut_before) C.cuts.erase(col.cuts, j);
        return false;
    }
    const bool gap = m[i].first - u > atol;
    if (gap && !cut_before) {
        C.cuts.insert(col.cuts, j, u);
    } else if (!gap && cut_before) {
        C.cuts.erase(col.cuts, j);
    }
    return gap && !cut_before && !cut_after;
}

inline double column_cid(const Columns &C, const Column &col, double v) {
    const i64 j = position(C.cuts, col.cuts, v);
    return j < col.cuts.size ? C.cuts.data(col.cuts)[j] : std::numeric_limits<double>::infinity();
}

/// The work arrays of ``_split_blocks`` (``work`` in the Python body), n entries each, of the index type I.
template <class I> struct SplitWork {
    Buffer<I> marked, multi, hit, place;
    Buffer<double> first_cid, state_cid;
    explicit SplitWork(i64 n) : marked(n), multi(n), hit(n), place(n), first_cid(n), state_cid(n) {
        std::fill_n(marked.store.get(), n, I{0});
        std::fill_n(multi.store.get(), n, I{0});
        std::fill_n(hit.store.get(), n, I{0});
        std::fill_n(place.store.get(), n, I{0});
        std::fill_n(first_cid.store.get(), n, 0.0);
        std::fill_n(state_cid.store.get(), n, 0.0);
    }
};

/// The arrays of the partition: labels, the states of each block contiguous in elems, the changed blocks.
template <class I> struct Blocks {
    Vec<I> labels, elems, loc, begin, end, changed_round, next_changed;
};

template <class I>
std::tuple<i64, i64> split_blocks(const Vec<I> group, const Vec<double> group_cid, i64 n_group, const Blocks<I> &B,
                                  i64 n_blocks, i64 n_next, i64 rnd, SplitWork<I> &work) {
    const Vec<I> labels = B.labels, elems = B.elems, loc = B.loc, begin = B.begin, end = B.end,
                 changed_round = B.changed_round, next_changed = B.next_changed;
    const Vec<I> marked = work.marked.view(), multi = work.multi.view(), hit = work.hit.view(),
                 place = work.place.view();
    const Vec<double> first_cid = work.first_cid.view(), state_cid = work.state_cid.view();
    i64 n_hit = 0;
    for (i64 g = 0; g < n_group; ++g) {
        const i64 b = labels[group[g]];
        const double c = group_cid[g];
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
        if (lo == begin[b] && multi[b] == 0) continue;
        i64 best_lo = begin[b];
        i64 best_hi = lo;
        i64 y = lo;
        while (y < hi) {
            const double c = state_cid[elems[y]];
            i64 z = y;
            while (z < hi && state_cid[elems[z]] == c) z += 1;
            if (z - y > best_hi - best_lo) {
                best_lo = y;
                best_hi = z;
            }
            y = z;
        }
        if (changed_round[b] != rnd + 1) {
            changed_round[b] = rnd + 1;
            next_changed[n_next] = b;
            n_next += 1;
        }
        y = begin[b];
        while (y < hi) {
            i64 z;
            if (y < lo) {
                z = lo;
            } else {
                const double c = state_cid[elems[y]];
                z = y;
                while (z < hi && state_cid[elems[z]] == c) z += 1;
            }
            if (y != best_lo) {
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
        begin[b] = best_lo;
        end[b] = best_hi;
    }
    return {n_blocks, n_next};
}

template <class I>
std::tuple<i64, i64> split_sorted(const Vec<I> group, const Vec<double> group_cid, i64 n_group,
                                  std::vector<std::pair<double, i64>> &sorted, const Blocks<I> &B, i64 n_blocks,
                                  i64 n_next, i64 rnd, SplitWork<I> &work) {
    // np.argsort(group_cid, kind="stable"): nothing to do when the clusters ascend already (often all equal)
    bool ascending = true;
    for (i64 g = 1; g < n_group && ascending; ++g) ascending = !float_less(group_cid[g], group_cid[g - 1]);
    if (!ascending) {
        sorted.resize(static_cast<std::size_t>(n_group));
        for (i64 g = 0; g < n_group; ++g) sorted[g] = {group_cid[g], g};
        std::sort(sorted.begin(), sorted.end(), [](const auto &x, const auto &y) {
            if (float_less(x.first, y.first)) return true;
            if (float_less(y.first, x.first)) return false;
            return x.second < y.second;
        });
        std::vector<I> states(static_cast<std::size_t>(n_group));
        for (i64 g = 0; g < n_group; ++g) states[g] = group[sorted[g].second];
        for (i64 g = 0; g < n_group; ++g) {
            group[g] = states[g];
            group_cid[g] = sorted[g].first;
        }
    }
    return split_blocks(group, group_cid, n_group, B, n_blocks, n_next, rnd, work);
}

/// Row r's masses per block as last computed: ``own_block`` / ``own_value`` from its first entry.
template <class P, class I> struct Own {
    Vec<P> indptr;
    i64 first_entry;
    Vec<I> count, block;
    Vec<double> value;

    double mass(i64 r, i64 k) const {
        const i64 base = static_cast<i64>(indptr[r]) - first_entry;
        for (i64 d = 0; d < count[r]; ++d)
            if (block[base + d] == k) return value[base + d];
        return 0.0;
    }
};

/// ``order[:count] = np.argsort(block * m + action, kind="stable")``: the cells by column, in their order within one.
template <class I>
void sort_cells(i64 count, const Vec<I> block, const Vec<I> action, i64 m, std::vector<std::pair<I, I>> &keys,
                std::vector<I> &order) {
    keys.resize(static_cast<std::size_t>(count));
    for (i64 c = 0; c < count; ++c) keys[c] = {static_cast<I>(block[c] * m + action[c]), static_cast<I>(c)};
    std::sort(keys.begin(), keys.end());
    order.resize(static_cast<std::size_t>(count));
    for (i64 c = 0; c < count; ++c) order[c] = keys[c].second;
}

/// :func:`refine_blocks` with its working arrays of the index type I (every state, row and entry index fits).
template <class I, class P, class J>
i64 refine_blocks_as(Vec<P> indptr, Vec<J> indices, Vec<double> data, i64 m, Vec<i64> initial, double atol,
                     Vec<i64> labels_out) {
    const i64 n = labels_out.size;
    if (n == 0) return 0;
    const i64 n_rows = indptr.size - 1;
    const i64 first_entry = indptr[0];
    Buffer<I> pred_ptr_(n + 1);
    const Vec<I> pred_ptr = pred_ptr_.view();
    for (i64 t = 0; t <= n; ++t) pred_ptr[t] = 0;
    i64 longest = 0;
    for (i64 r = 0; r < n_rows; ++r) {
        longest = std::max<i64>(longest, indptr[r + 1] - indptr[r]);
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) pred_ptr[static_cast<i64>(indices[e]) + 1] += 1;
    }
    for (i64 t = 0; t < n; ++t) pred_ptr[t + 1] += pred_ptr[t];
    const i64 width = pred_ptr[n];
    Buffer<I> pred_(width), fill_(n);
    const Vec<I> pred = pred_.view(), fill = fill_.view();
    for (i64 t = 0; t < n; ++t) fill[t] = pred_ptr[t];
    for (i64 r = 0; r < n_rows; ++r) {
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) {
            const i64 t = indices[e];
            pred[fill[t]] = r;
            fill[t] += 1;
        }
    }
    Buffer<I> labels_(n), elems_(n), loc_(n), begin_(n), end_(n);
    const Vec<I> labels = labels_.view(), elems = elems_.view(), loc = loc_.view(), begin = begin_.view(),
                 end = end_.view();
    for (i64 s = 0; s < n; ++s) {
        elems[s] = s;
        loc[s] = s;
        labels[s] = 0;
        begin[s] = 0;
        end[s] = 0;
    }
    end[0] = n;
    i64 n_blocks = 1;
    Buffer<I> has_columns_(n), column_(n * m);
    const Vec<I> has_columns = has_columns_.view(), column = column_.view();
    for (i64 s = 0; s < n; ++s) has_columns[s] = 0;
    for (i64 c = 0; c < n * m; ++c) column[c] = -1;
    Columns &columns = kept_columns();
    columns.of.clear();
    columns.masses.store.clear();
    columns.cuts.store.clear();
    columns.of.reserve(static_cast<std::size_t>(n * m));  // block ids stay below n
    columns.masses.store.reserve(static_cast<std::size_t>(4 * n * m));
    columns.cuts.store.reserve(static_cast<std::size_t>(2 * n * m));
    Buffer<I> changed_a(n), changed_b(n), changed_round_(n);
    Vec<I> changed = changed_a.view(), next_changed = changed_b.view();
    const Vec<I> changed_round = changed_round_.view();
    for (i64 s = 0; s < n; ++s) {
        changed[s] = 0;
        next_changed[s] = 0;
        changed_round[s] = -1;
    }
    changed_round[0] = 0;
    i64 n_changed = 1;
    Buffer<I> row_round_(n_rows), touched_(n_rows), own_count_(n_rows);
    Buffer<i64> row_mark_(n_rows);  // stamps: one per column a round updates, so i64 whatever I is
    const Vec<I> row_round = row_round_.view(), touched = touched_.view(), own_count = own_count_.view();
    const Vec<i64> row_mark = row_mark_.view();
    for (i64 r = 0; r < n_rows; ++r) {
        row_round[r] = -1;
        own_count[r] = 0;
        row_mark[r] = -1;
    }
    Buffer<I> own_block_(width), row_block_(longest), fresh_row_(width), fresh_block_(width), fresh_action_(width);
    Buffer<double> own_value_(width), row_value_(longest), fresh_value_(width);
    const Vec<I> own_block = own_block_.view(), row_block = row_block_.view(), fresh_row = fresh_row_.view(),
                 fresh_block = fresh_block_.view(), fresh_action = fresh_action_.view();
    const Vec<double> own_value = own_value_.view(), row_value = row_value_.view(), fresh_value = fresh_value_.view();
    Buffer<I> up_row_(2 * width), up_block_(2 * width), up_action_(2 * width);
    Buffer<double> up_old_(2 * width), up_new_(2 * width);
    const Vec<I> up_row = up_row_.view(), up_block = up_block_.view(), up_action = up_action_.view();
    const Vec<double> up_old = up_old_.view(), up_new = up_new_.view();
    Buffer<I> group_(n), rep_has_(n);
    Buffer<i64> state_mark_(n), rep_mark_(n);  // stamps
    Buffer<double> group_cid_(n), rep_cid_(n);
    const Vec<I> group = group_.view(), rep_has = rep_has_.view();
    const Vec<i64> state_mark = state_mark_.view(), rep_mark = rep_mark_.view();
    const Vec<double> group_cid = group_cid_.view(), rep_cid = rep_cid_.view();
    for (i64 s = 0; s < n; ++s) {
        state_mark[s] = -1;
        rep_mark[s] = -1;
        rep_cid[s] = 0.0;
        rep_has[s] = 0;
    }
    const Own<P, I> own{indptr, first_entry, own_count, own_block, own_value};
    i64 stamp = 0;
    SplitWork<I> split_work(n);
    std::vector<std::pair<double, i64>> sorted;
    std::vector<I> order;
    std::vector<std::pair<I, I>> keys;
    const double inf = std::numeric_limits<double>::infinity();
    i64 rnd = 0;
    while (n_changed > 0) {
        const Blocks<I> B{labels, elems, loc, begin, end, changed_round, next_changed};
        i64 n_touched = 0;
        for (i64 x = 0; x < n_changed; ++x) {
            const i64 k = changed[x];
            if (has_columns[k] == 1) continue;
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
        i64 n_fresh = 0;
        i64 n_up = 0;
        for (i64 x = 0; x < n_touched; ++x) {
            const i64 r = touched[x];
            const i64 base = static_cast<i64>(indptr[r]) - first_entry;
            i64 count = 0;
            for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) {
                const i64 k = labels[static_cast<i64>(indices[e])];
                i64 c = 0;
                while (c < count && row_block[c] != k) c += 1;
                if (c == count) {
                    row_block[c] = k;
                    row_value[c] = 0.0;
                    count += 1;
                }
                row_value[c] += data[e];
            }
            for (i64 c = 0; c < count; ++c) {
                const i64 k = row_block[c];
                if (changed_round[k] == rnd) {
                    if (has_columns[k] == 0) {
                        fresh_row[n_fresh] = r;
                        fresh_block[n_fresh] = k;
                        fresh_action[n_fresh] = r % m;
                        fresh_value[n_fresh] = row_value[c];
                        n_fresh += 1;
                    } else {
                        double old = 0.0;
                        bool had = false;
                        for (i64 d = 0; d < own_count[r]; ++d) {
                            if (own_block[base + d] == k) {
                                old = own_value[base + d];
                                had = true;
                            }
                        }
                        if (!had || old != row_value[c]) {
                            up_row[n_up] = r;
                            up_block[n_up] = k;
                            up_action[n_up] = r % m;
                            up_old[n_up] = old;
                            up_new[n_up] = row_value[c];
                            n_up += 1;
                        }
                    }
                }
            }
            for (i64 d = 0; d < own_count[r]; ++d) {
                const i64 k = own_block[base + d];
                if (changed_round[k] == rnd && has_columns[k] == 1) {
                    i64 c = 0;
                    while (c < count && row_block[c] != k) c += 1;
                    if (c == count) {
                        up_row[n_up] = r;
                        up_block[n_up] = k;
                        up_action[n_up] = r % m;
                        up_old[n_up] = own_value[base + d];
                        up_new[n_up] = 0.0;
                        n_up += 1;
                    }
                }
            }
            for (i64 c = 0; c < count; ++c) {
                own_block[base + c] = row_block[c];
                own_value[base + c] = row_value[c];
            }
            own_count[r] = count;
        }
        i64 n_next = 0;
        if (rnd == 0) {
            std::vector<i64> by_class(static_cast<std::size_t>(n));
            std::iota(by_class.begin(), by_class.end(), i64{0});
            std::stable_sort(by_class.begin(), by_class.end(), [&](i64 u, i64 v) { return initial[u] < initial[v]; });
            for (i64 x = 0; x < n; ++x) {
                group[x] = by_class[x];
                group_cid[x] = static_cast<double>(initial[by_class[x]]);
            }
            std::tie(n_blocks, n_next) = split_blocks(group, group_cid, n, B, n_blocks, n_next, rnd, split_work);
        }
        sort_cells(n_up, up_block, up_action, m, keys, order);
        i64 x = 0;
        while (x < n_up) {
            const i64 k = up_block[order[x]];
            const i64 a = up_action[order[x]];
            i64 y = x;
            while (y < n_up && up_block[order[y]] == k && up_action[order[y]] == a) y += 1;
            Column &col = columns.of[static_cast<std::size_t>(column[k * m + a])];
            for (i64 z = x; z < y; ++z) column_add(columns, col, up_new[order[z]], atol);
            bool cut = false;
            for (i64 z = x; z < y; ++z)
                if (column_remove(columns, col, up_old[order[z]], atol)) cut = true;
            stamp += 1;
            i64 n_group = 0;
            if (cut) {
                const double zero = column_has(columns, col, 0.0) ? column_cid(columns, col, 0.0) : -inf;
                for (i64 w = begin[k]; w < end[k]; ++w) {
                    const i64 t = elems[w];
                    for (i64 p = pred_ptr[t]; p < pred_ptr[t + 1]; ++p) {
                        const i64 r = pred[p];
                        if (r % m == a && row_mark[r] != stamp) {
                            row_mark[r] = stamp;
                            const double c = column_cid(columns, col, own.mass(r, k));
                            if (c != zero) {
                                group[n_group] = r / m;
                                group_cid[n_group] = c;
                                n_group += 1;
                            }
                        }
                    }
                }
            } else {
                for (i64 z = x; z < y; ++z) state_mark[up_row[order[z]] / m] = stamp;
                for (i64 z = x; z < y; ++z) {
                    const i64 r = up_row[order[z]];
                    const i64 s = r / m;
                    const i64 b = labels[s];
                    if (rep_mark[b] != stamp) {
                        rep_mark[b] = stamp;
                        i64 w = begin[b];
                        while (w < end[b] && state_mark[elems[w]] == stamp) w += 1;
                        rep_has[b] = 0;
                        if (w < end[b]) {
                            rep_has[b] = 1;
                            rep_cid[b] = column_cid(columns, col, own.mass(elems[w] * m + a, k));
                        }
                    }
                    const double c = column_cid(columns, col, up_new[order[z]]);
                    if (rep_has[b] == 0 || c != rep_cid[b]) {
                        group[n_group] = s;
                        group_cid[n_group] = c;
                        n_group += 1;
                    }
                }
            }
            std::tie(n_blocks, n_next) = split_sorted(group, group_cid, n_group, sorted, B, n_blocks, n_next, rnd,
                                                      split_work);
            x = y;
        }
        for (i64 w = 0; w < n_changed; ++w) {
            const i64 k = changed[w];
            if (has_columns[k] == 0) {
                has_columns[k] = 1;
                for (i64 a = 0; a < m; ++a) {
                    column[k * m + a] = static_cast<I>(columns.of.size());
                    columns.of.emplace_back();
                    Column &col = columns.of.back();
                    columns.masses.make(col.masses, 2);
                    columns.masses.insert(col.masses, 0, {0.0, n});
                    columns.cuts.make(col.cuts, 1);
                }
            }
        }
        sort_cells(n_fresh, fresh_block, fresh_action, m, keys, order);
        x = 0;
        while (x < n_fresh) {
            const i64 k = fresh_block[order[x]];
            const i64 a = fresh_action[order[x]];
            i64 y = x;
            while (y < n_fresh && fresh_block[order[y]] == k && fresh_action[order[y]] == a) y += 1;
            Column &col = columns.of[static_cast<std::size_t>(column[k * m + a])];
            for (i64 z = x; z < y; ++z) column_add(columns, col, fresh_value[order[z]], atol);
            for (i64 z = x; z < y; ++z) column_remove(columns, col, 0.0, atol);
            const double zero = column_has(columns, col, 0.0) ? column_cid(columns, col, 0.0) : -inf;
            i64 n_group = 0;
            for (i64 z = x; z < y; ++z) {
                const double c = column_cid(columns, col, fresh_value[order[z]]);
                if (c != zero) {
                    group[n_group] = fresh_row[order[z]] / m;
                    group_cid[n_group] = c;
                    n_group += 1;
                }
            }
            std::tie(n_blocks, n_next) = split_sorted(group, group_cid, n_group, sorted, B, n_blocks, n_next, rnd,
                                                      split_work);
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
        labels_out[s] = rank[b];
    }
    if (columns.bytes() > kept_columns_bytes) columns = Columns();  // too large to keep: give it back
    return count;
}

/// The refinement (``_refine_blocks`` of bisimkit/relations.py): ``labels`` of the partition it ends in, the
/// number of blocks returned. The working arrays are 32-bit when every state, row and entry index fits (half
/// the memory traffic of this memory-bound loop), else 64-bit; the result is the same either way.
template <class P, class J>
i64 refine_blocks(Vec<P> indptr, Vec<J> indices, Vec<double> data, i64 m, Vec<i64> initial, double atol,
                  Vec<i64> labels) {
    const i64 limit = std::numeric_limits<std::int32_t>::max() / 2;
    const i64 entries = indptr.size > 0 ? static_cast<i64>(indptr[indptr.size - 1]) - indptr[0] : 0;
    if (labels.size * std::max<i64>(m, 1) < limit && entries < limit)
        return refine_blocks_as<std::int32_t>(indptr, indices, data, m, initial, atol, labels);
    return refine_blocks_as<i64>(indptr, indices, data, m, initial, atol, labels);
}

}  // namespace bisimkit::relations
