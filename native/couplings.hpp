// The entangled-coupling kernels of bisimkit/couplings.py, statement for statement (same arithmetic,
// same order: bit for bit the Python functions' results).
#pragma once

#include "arrays.hpp"

namespace bisimkit::couplings {

template <class D> void row_breakpoints(Vec<D> data, i64 lo, i64 hi, Vec<double> out) {
    double total = 0.0;
    for (i64 x = lo; x < hi; ++x) total += data[x];
    double run = 0.0;
    for (i64 x = lo; x < hi; ++x) {
        run += data[x];
        if (total > 0) {
            const double quotient = run / total;
            out[x] = 1.0 < quotient ? 1.0 : quotient;  // Python's min(run / total, 1.0)
        } else {
            out[x] = 1.0;
        }
    }
    if (hi > lo) out[hi - 1] = 1.0;  // the quantile function ends at 1 exactly: no crumb past the last atom
}

template <class P, class D> void csr_breakpoints(Vec<P> indptr, Vec<D> data, Vec<double> out) {
    for (i64 r = 0; r < indptr.size - 1; ++r) row_breakpoints(data, indptr[r], indptr[r + 1], out);
}

template <class IA, class IB, class OI, class OJ>
i64 merge_breakpoints(Vec<IA> ia, Vec<double> ba, Vec<IB> ib, Vec<double> bb, Vec<OI> out_i, Vec<OJ> out_j,
                      Vec<double> out_m) {
    const i64 la = ba.size;
    const i64 lb = bb.size;
    i64 a = 0;
    i64 b = 0;
    i64 n = 0;
    double prev = 0.0;
    while (a < la && b < lb) {
        const double ca = ba[a];
        const double cb = bb[b];
        const double nxt = ca < cb ? ca : cb;
        if (nxt > prev) {
            out_i[n] = static_cast<OI>(ia[a]);
            out_j[n] = static_cast<OJ>(ib[b]);
            out_m[n] = nxt - prev;
            n += 1;
            prev = nxt;
        }
        if (ca <= nxt) a += 1;
        if (cb <= nxt) b += 1;
    }
    return n;
}

template <class I, class O>
void merge_rows(Vec<i64> xptr, Vec<I> xidx, Vec<double> xbp, Vec<i64> src, Vec<i64> yptr, Vec<I> yidx,
                Vec<double> ybp, Vec<i64> dst, Vec<i64> offsets, Vec<O> out_i, Vec<O> out_j, Vec<double> out_m,
                Vec<i64> counts) {
    for (i64 k = 0; k < src.size; ++k) {
        const i64 r = src[k];
        const i64 s = dst[k];
        const i64 lo = offsets[k];
        counts[k] = merge_breakpoints(xidx.slice(xptr[r], xptr[r + 1]), xbp.slice(xptr[r], xptr[r + 1]),
                                      yidx.slice(yptr[s], yptr[s + 1]), ybp.slice(yptr[s], yptr[s + 1]),
                                      out_i.from(lo), out_j.from(lo), out_m.from(lo));
    }
}

template <class P, class I, class D, class O, class M>
void gather_rows(Vec<P> indptr, Vec<I> indices, Vec<D> data, Vec<i64> rows, Mat<O> index, Mat<M> mass) {
    for (i64 k = 0; k < rows.size; ++k) {
        const i64 lo = indptr[rows[k]];
        const i64 count = indptr[rows[k] + 1] - lo;
        for (i64 x = 0; x < count; ++x) {
            index(k, x) = static_cast<O>(indices[lo + x]);
            mass(k, x) = static_cast<M>(data[lo + x]);
        }
    }
}

}  // namespace bisimkit::couplings
