// ``_block_tv`` and ``_gather_block_rows`` of bisimkit/quotient.py, statement for statement (bit for bit their
// results).
#pragma once

#include <cmath>

#include "arrays.hpp"

namespace bisimkit::quotient {

template <class I, class J>
void block_tv(Vec<I> indptr, Vec<I> indices, Vec<double> data, Vec<i64> labels, Vec<J> q_indptr, Vec<J> q_indices,
              Vec<double> q_data, Vec<i64> rows_x, Vec<i64> rows_y, Vec<double> mass, Vec<double> out) {
    for (i64 i = 0; i < rows_x.size; ++i) {
        const i64 x = rows_x[i];
        const i64 y = rows_y[i];
        for (i64 e = indptr[x]; e < indptr[x + 1]; ++e) mass[labels[indices[e]]] += data[e];
        double total = 0.0;
        for (i64 e = q_indptr[y]; e < q_indptr[y + 1]; ++e) {
            const i64 b = q_indices[e];
            total += std::fabs(mass[b] - q_data[e]);
            mass[b] = -1.0;  // counted (an aggregated mass is never negative)
        }
        for (i64 e = indptr[x]; e < indptr[x + 1]; ++e) {
            const i64 b = labels[indices[e]];
            if (mass[b] != -1.0) {
                total += std::fabs(mass[b]);
                mass[b] = -1.0;
            }
        }
        for (i64 e = indptr[x]; e < indptr[x + 1]; ++e) mass[labels[indices[e]]] = 0.0;
        for (i64 e = q_indptr[y]; e < q_indptr[y + 1]; ++e) mass[q_indices[e]] = 0.0;
        out[i] = 0.5 * total;
    }
}

template <class I, class O>
i64 gather_block_rows(Vec<I> indptr, Vec<I> indices, Vec<double> data, Vec<i64> rows, Vec<i64> labels,
                      Vec<i64> stamp, Vec<double> mass, Vec<O> out_indptr, Vec<O> out_indices, Vec<double> out_data) {
    i64 nnz = 0;
    out_indptr[0] = 0;
    for (i64 i = 0; i < rows.size; ++i) {
        const i64 r = rows[i];
        const i64 start = nnz;
        for (i64 e = indptr[r]; e < indptr[r + 1]; ++e) {
            const i64 b = labels[indices[e]];
            if (stamp[b] != i) {
                stamp[b] = i;
                mass[b] = 0.0;
                out_indices[nnz] = static_cast<O>(b);
                ++nnz;
            }
            mass[b] += data[e];
        }
        for (i64 j = start + 1; j < nnz; ++j) {  // insertion sort: a row reaches few blocks
            const i64 b = out_indices[j];
            i64 x = j;
            while (x > start && out_indices[x - 1] > b) {
                out_indices[x] = out_indices[x - 1];
                --x;
            }
            out_indices[x] = b;
        }
        double total = 0.0;
        i64 kept = start;
        for (i64 j = start; j < nnz; ++j) {
            const i64 b = out_indices[j];
            if (mass[b] != 0.0) {
                out_indices[kept] = static_cast<O>(b);
                out_data[kept] = mass[b];
                total += mass[b];
                ++kept;
            }
        }
        for (i64 j = start; j < kept; ++j) out_data[j] = out_data[j] / total;
        nnz = kept;
        out_indptr[i + 1] = static_cast<O>(nnz);
    }
    return nnz;
}

}  // namespace bisimkit::quotient
