// The assembly, product and Gauss-Seidel kernels of bisimkit/compiled.py, statement for statement (same arithmetic,
// same order: bit for bit the Python functions' results). The loops the Python bodies run with
// ``prange`` run on OpenMP threads; each iteration writes only its own row.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>

#include "arrays.hpp"
#include "couplings.hpp"

namespace bisimkit::compiled {

template <class C, class R, class X>
void count_slots(Vec<i64> off, Vec<C> ci, Vec<C> cj, Vec<double> mass, Vec<R> row_pair, Mat<X> index,
                 Vec<i64> counts) {
    for (i64 p = 0; p < off.size - 1; ++p) {
        const i64 r = row_pair[p];
        for (i64 e = off[p]; e < off[p + 1]; ++e) {
            if (mass[e] > 0 && index(ci[e], cj[e]) >= 0) counts[r] += 1;
        }
    }
}

template <class C, class R, class X, class P, class J, class D>
void fill_slots(Vec<i64> off, Vec<C> ci, Vec<C> cj, Vec<double> mass, Vec<R> row_pair, Vec<double> row_weight,
                Mat<X> index, Vec<P> indptr, Vec<J> indices, Vec<D> data) {
    Buffer<i64> fill_(indptr.size - 1);
    const Vec<i64> fill = fill_.view();
    for (i64 r = 0; r < indptr.size - 1; ++r) fill[r] = indptr[r];
    for (i64 p = 0; p < off.size - 1; ++p) {
        const i64 r = row_pair[p];
        const double w = row_weight[p];
        for (i64 e = off[p]; e < off[p + 1]; ++e) {
            const i64 col = index(ci[e], cj[e]);
            if (mass[e] > 0 && col >= 0) {
                indices[fill[r]] = static_cast<J>(col);
                data[fill[r]] = static_cast<D>(w * mass[e]);
                fill[r] += 1;
            }
        }
    }
}

template <class C, class R, class X, class P, class J, class D>
i64 fill_in_order(Vec<i64> off, Vec<C> ci, Vec<C> cj, Vec<double> mass, Vec<R> row_pair, Vec<double> row_weight,
                  Mat<X> index, Vec<P> indptr, Vec<J> indices, Vec<D> data) {
    i64 at = 0;
    i64 row = 0;
    indptr[0] = 0;
    for (i64 p = 0; p < off.size - 1; ++p) {
        const i64 r = row_pair[p];
        if (r < row) return -1;
        while (row < r) {
            row += 1;
            indptr[row] = static_cast<P>(at);
        }
        const double w = row_weight[p];
        for (i64 e = off[p]; e < off[p + 1]; ++e) {
            const i64 col = index(ci[e], cj[e]);
            if (mass[e] > 0 && col >= 0) {
                indices[at] = static_cast<J>(col);
                data[at] = static_cast<D>(w * mass[e]);
                at += 1;
            }
        }
    }
    while (row < indptr.size - 1) {
        row += 1;
        indptr[row] = static_cast<P>(at);
    }
    return at;
}

template <class X, class J, class D>
void eps_bar_pass(Vec<i64> S, Vec<i64> T, Mat<X> index, i64 m, Vec<i64> a_ptr, Vec<i64> a_idx, Vec<double> a_bp,
                  Vec<i64> x_ptr, Vec<i64> x_idx, Vec<double> x_bp, i64 mode, Vec<i64> counts, Vec<i64> indptr,
                  Vec<J> indices, Vec<D> data, Vec<double> vec, Vec<double> out) {
    const bool fill = mode == 1;
    const i64 pairs = S.size;
#pragma omp parallel for schedule(dynamic, 64)
    for (i64 p = 0; p < pairs; ++p) {
        const i64 s = S[p];
        const i64 t = T[p];
        const i64 room = a_ptr[s + 1] - a_ptr[s] + a_ptr[t + 1] - a_ptr[t];
        Buffer<i64> ai_(room), aj_(room);
        Buffer<double> am_(room);
        const Vec<i64> ai = ai_.view(), aj = aj_.view();
        const Vec<double> am = am_.view();
        const i64 na = couplings::merge_breakpoints(a_idx.slice(a_ptr[s], a_ptr[s + 1]),
                                                    a_bp.slice(a_ptr[s], a_ptr[s + 1]),
                                                    a_idx.slice(a_ptr[t], a_ptr[t + 1]),
                                                    a_bp.slice(a_ptr[t], a_ptr[t + 1]), ai, aj, am);
        i64 width = 0;
        for (i64 x = 0; x < na; ++x) {
            const i64 ra = s * m + ai[x];
            const i64 rb = t * m + aj[x];
            const i64 here = x_ptr[ra + 1] - x_ptr[ra] + x_ptr[rb + 1] - x_ptr[rb];
            width = here > width ? here : width;  // Python's max(width, here)
        }
        Buffer<i64> si_(width), sj_(width);
        Buffer<double> sm_(width);
        const Vec<i64> si = si_.view(), sj = sj_.view();
        const Vec<double> sm = sm_.view();
        i64 count = 0;
        double acc = 0.0;
        i64 pos = fill ? indptr[p] : 0;
        for (i64 x = 0; x < na; ++x) {
            const i64 ra = s * m + ai[x];
            const i64 rb = t * m + aj[x];
            const double w = am[x];
            const i64 ns = couplings::merge_breakpoints(x_idx.slice(x_ptr[ra], x_ptr[ra + 1]),
                                                        x_bp.slice(x_ptr[ra], x_ptr[ra + 1]),
                                                        x_idx.slice(x_ptr[rb], x_ptr[rb + 1]),
                                                        x_bp.slice(x_ptr[rb], x_ptr[rb + 1]), si, sj, sm);
            for (i64 y = 0; y < ns; ++y) {
                const i64 col = index(si[y], sj[y]);
                if (col >= 0) {
                    if (mode == 2) {
                        acc += w * sm[y] * vec[col];
                    } else if (fill) {
                        indices[pos] = static_cast<J>(col);
                        data[pos] = static_cast<D>(w * sm[y]);
                        pos += 1;
                    } else {
                        count += 1;
                    }
                }
            }
        }
        if (mode == 0) {
            counts[p] = count;
        } else if (mode == 2) {
            out[p] = acc;
        }
    }
}

template <class P, class J, class D>
void csr_matvec(Vec<P> indptr, Vec<J> indices, Vec<D> data, Vec<D> x, Vec<D> out, bool parallel) {
    const i64 rows = indptr.size - 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (i64 r = 0; r < rows; ++r) {
        double acc = 0.0;  // float64 accumulation, also for float32 data
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) acc += data[e] * x[indices[e]];
        out[r] = static_cast<D>(acc);
    }
}

template <class P, class J>
double csr_residual(Vec<P> indptr, Vec<J> indices, Vec<double> data, Vec<double> b, double c, Vec<double> x,
                    Vec<double> out) {
    double largest = 0.0;
    for (i64 r = 0; r < indptr.size - 1; ++r) {
        double acc = 0.0;
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) acc += data[e] * x[indices[e]];
        const double value = b[r] + c * acc - x[r];
        out[r] = value;
        const double size = std::fabs(value);
        if (size > largest || size != size) largest = size;  // a NaN stays: nothing compares greater than it
    }
    return largest;
}

template <class P, class J, class D>
std::tuple<double, double> lower_mass(Vec<P> indptr, Vec<J> indices, Vec<D> data) {
    double stale = 0.0;
    double total = 0.0;
    for (i64 r = 0; r < indptr.size - 1; ++r) {
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) {
            total += data[e];
            if (indices[e] < r) stale += data[e];
        }
    }
    return {stale, total};
}

/// Rows up to which ``scc_gauss_seidel`` keeps its divisors in an array (8 MB, within the buffer pool's blocks).
constexpr i64 STORED_DIVISORS = i64{1} << 20;

template <class P, class J>
std::tuple<i64, double> scc_gauss_seidel(Vec<i64> members, Vec<P> indptr, Vec<J> indices, Vec<double> data,
                                         Mat<double> rhs, Mat<double> x, Vec<i64> local, i64 max_sweeps,
                                         double target) {
    const i64 r = rhs.cols;
    const i64 size = members.size;
    for (i64 i = 0; i < size; ++i) local[members[i]] = i;
    // the part of the right-hand side from outside S is fixed
    Buffer<double> fixed_(size * r);
    const Mat<double> fixed = fixed_.matrix(size, r);
    for (i64 i = 0; i < size; ++i) {
        const i64 p = members[i];
        for (i64 j = 0; j < r; ++j) fixed(i, j) = rhs(p, j);
        for (i64 e = indptr[p]; e < indptr[p + 1]; ++e) {
            const i64 q = indices[e];
            if (local[q] < 0) {
                for (i64 j = 0; j < r; ++j) fixed(i, j) += data[e] * x(q, j);
            }
        }
    }
    // each row's divisor 1 - T[p, p] (its diagonal entries summed in their stored order): kept for every sweep
    // where its array is small enough for the buffer pool, else summed again in each sweep (the same value)
    auto divisor_of = [&](i64 p) {
        double diag = 0.0;
        for (i64 e = indptr[p]; e < indptr[p + 1]; ++e) {
            if (indices[e] == p) diag += data[e];
        }
        return 1.0 - diag;
    };
    const bool stored = size <= STORED_DIVISORS;
    Buffer<double> divisor_(stored ? size : 0);
    const Vec<double> divisor = divisor_.view();
    if (stored)
        for (i64 i = 0; i < size; ++i) divisor[i] = divisor_of(members[i]);
    i64 sweeps = 0;
    double resid = std::numeric_limits<double>::infinity();
    // One sweep. ``whole``: S holds every state (local[q] >= 0 for all q); ``column``: one right-hand side in
    // contiguous x. Both only spare the compiler work: the operations are the same, in the same order.
    auto sweep = [&](auto whole, auto column) {
        double largest = 0.0;
        for (i64 i = 0; i < size; ++i) {
            const i64 p = members[i];
            const double div = stored ? divisor[i] : divisor_of(p);
            const i64 cols = column ? 1 : r;
            for (i64 j = 0; j < cols; ++j) {
                double acc = fixed(i, j);
                for (i64 e = indptr[p]; e < indptr[p + 1]; ++e) {
                    const i64 q = indices[e];
                    if (q != p && (whole || local[q] >= 0)) acc += data[e] * (column ? x.data[q] : x(q, j));
                }
                const double next = acc / div;
                double &at = column ? x.data[p] : x(p, j);
                const double change = std::fabs(next - at);
                if (change > largest) largest = change;
                at = next;
            }
        }
        return largest;
    };
    const bool whole = size == local.size;
    const bool column = r == 1 && x.stride0 == 1;
    while (sweeps < max_sweeps) {
        sweeps += 1;
        if (whole && column)
            resid = sweep(std::true_type{}, std::true_type{});
        else if (column)
            resid = sweep(std::false_type{}, std::true_type{});
        else
            resid = sweep(std::false_type{}, std::false_type{});
        if (resid <= target) break;
    }
    for (i64 i = 0; i < size; ++i) local[members[i]] = -1;
    return {sweeps, resid};
}

}  // namespace bisimkit::compiled
