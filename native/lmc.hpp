// The kernels of bisimkit/lmc.py, statement for statement (same arithmetic, same order: bit for bit the
// Python functions' results): the dual lower bounds of the simplex's bases, and the block
// back-substitution of the coupling systems ``x = rhs + T x`` (its Gauss-Seidel sweeps are compiled.hpp's).
#pragma once

#include <cmath>
#include <limits>
#include <tuple>

#include "arrays.hpp"

namespace bisimkit::lmc {

template <class B>
void tree_dual_bounds(Cube<B> basis, Cube<double> C, Mat<double> a, Mat<double> b, double law_error,
                      Vec<double> low) {
    const double eps = 1.1102230246251565e-16;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const i64 G = C.n0, ka = C.n1, kb = C.n2;
    const i64 edges = basis.n1;
    Buffer<double> u_(ka), v_(kb);
    const Vec<double> u = u_.view(), v = v_.view();
    for (i64 p = 0; p < G; ++p) {
        const Mat<B> bp = basis[p];
        const Mat<double> Cp = C[p];
        for (i64 i = 0; i < ka; ++i) u[i] = nan;
        for (i64 j = 0; j < kb; ++j) v[j] = nan;
        u[0] = 0.0;
        for (i64 sweep = 0; sweep < edges; ++sweep) {
            bool changed = false;
            for (i64 e = 0; e < edges; ++e) {
                const i64 r = bp(e, 0);
                const i64 c = bp(e, 1);
                if (!std::isnan(u[r]) && std::isnan(v[c])) {
                    v[c] = Cp(r, c) - u[r];
                    changed = true;
                } else if (std::isnan(u[r]) && !std::isnan(v[c])) {
                    u[r] = Cp(r, c) - v[c];
                    changed = true;
                }
            }
            if (!changed) break;
        }
        bool missing = false;
        for (i64 i = 0; i < ka; ++i) missing = missing || std::isnan(u[i]);
        for (i64 j = 0; j < kb; ++j) missing = missing || std::isnan(v[j]);
        if (missing) {
            low[p] = 0.0;
            continue;
        }
        double violation = 0.0;
        double top = 0.0;
        for (i64 i = 0; i < ka; ++i) {
            for (i64 j = 0; j < kb; ++j) {
                const double x = u[i] + v[j] - Cp(i, j);
                if (x > violation) violation = x;
                if (std::fabs(Cp(i, j)) > top) top = std::fabs(Cp(i, j));
            }
        }
        double max_u = std::fabs(u[0]);
        for (i64 i = 1; i < ka; ++i) max_u = std::fabs(u[i]) > max_u ? std::fabs(u[i]) : max_u;
        double max_v = std::fabs(v[0]);
        for (i64 j = 1; j < kb; ++j) max_v = std::fabs(v[j]) > max_v ? std::fabs(v[j]) : max_v;
        const double size = max_u + max_v;
        const double shift = violation + 4 * eps * (size + top);
        double dual = 0.0;
        double terms = 0.0;
        double big_u = 0.0;
        for (i64 i = 0; i < ka; ++i) {
            const double w = u[i] - shift;
            dual += a(p, i) * w;
            terms += std::fabs(a(p, i) * w);
            if (std::fabs(w) > big_u) big_u = std::fabs(w);
        }
        double big_v = 0.0;
        for (i64 j = 0; j < kb; ++j) {
            dual += b(p, j) * v[j];
            terms += std::fabs(b(p, j) * v[j]);
            if (std::fabs(v[j]) > big_v) big_v = std::fabs(v[j]);
        }
        const double bound =
            dual - static_cast<double>((ka + kb + 2) * 2) * eps * terms - law_error * (big_u + big_v);
        low[p] = bound > 0.0 ? bound : 0.0;
    }
}

template <class P, class J>
void scc_sweep(Vec<i64> scc_ptr, Vec<i64> members, i64 first, i64 last, Vec<P> indptr, Vec<J> indices,
               Vec<double> data, Mat<double> rhs, Mat<double> x, Vec<i64> local) {
    const i64 r = rhs.cols;
    for (i64 comp = first; comp < last; ++comp) {
        const i64 lo = scc_ptr[comp];
        const i64 hi = scc_ptr[comp + 1];
        const i64 size = hi - lo;
        if (size == 1) {
            const i64 p = members[lo];
            double diag = 0.0;
            for (i64 j = 0; j < r; ++j) x(p, j) = rhs(p, j);
            for (i64 e = indptr[p]; e < indptr[p + 1]; ++e) {
                const i64 q = indices[e];
                if (q == p) {
                    diag += data[e];
                } else {
                    for (i64 j = 0; j < r; ++j) x(p, j) += data[e] * x(q, j);
                }
            }
            for (i64 j = 0; j < r; ++j) x(p, j) /= 1.0 - diag;
            continue;
        }
        for (i64 i = 0; i < size; ++i) local[members[lo + i]] = i;
        Buffer<double> M_(size * size), R_(size * r);
        const Mat<double> M = M_.matrix(size, size), R = R_.matrix(size, r);
        for (i64 i = 0; i < size * size; ++i) M_.store[i] = 0.0;
        for (i64 i = 0; i < size * r; ++i) R_.store[i] = 0.0;
        for (i64 i = 0; i < size; ++i) {
            const i64 p = members[lo + i];
            M(i, i) = 1.0;
            for (i64 j = 0; j < r; ++j) R(i, j) = rhs(p, j);
            for (i64 e = indptr[p]; e < indptr[p + 1]; ++e) {
                const i64 q = indices[e];
                if (local[q] >= 0) {
                    M(i, local[q]) -= data[e];
                } else {
                    for (i64 j = 0; j < r; ++j) R(i, j) += data[e] * x(q, j);
                }
            }
        }
        // Gaussian elimination with partial pivoting
        for (i64 col = 0; col < size; ++col) {
            i64 piv = col;
            double best = std::fabs(M(col, col));
            for (i64 i = col + 1; i < size; ++i) {
                if (std::fabs(M(i, col)) > best) {
                    best = std::fabs(M(i, col));
                    piv = i;
                }
            }
            if (piv != col) {
                for (i64 j = 0; j < size; ++j) {
                    const double tmp = M(col, j);
                    M(col, j) = M(piv, j);
                    M(piv, j) = tmp;
                }
                for (i64 j = 0; j < r; ++j) {
                    const double tmp = R(col, j);
                    R(col, j) = R(piv, j);
                    R(piv, j) = tmp;
                }
            }
            const double inv = 1.0 / M(col, col);
            for (i64 i = col + 1; i < size; ++i) {
                const double f = M(i, col) * inv;
                if (f != 0.0) {
                    for (i64 j = col; j < size; ++j) M(i, j) -= f * M(col, j);
                    for (i64 j = 0; j < r; ++j) R(i, j) -= f * R(col, j);
                }
            }
        }
        for (i64 i = size - 1; i >= 0; --i) {
            for (i64 j = 0; j < r; ++j) {
                double acc = R(i, j);
                for (i64 m = i + 1; m < size; ++m) acc -= M(i, m) * R(m, j);
                R(i, j) = acc / M(i, i);
            }
        }
        for (i64 i = 0; i < size; ++i) {
            const i64 p = members[lo + i];
            for (i64 j = 0; j < r; ++j) x(p, j) = R(i, j);
            local[p] = -1;
        }
    }
}

}  // namespace bisimkit::lmc
