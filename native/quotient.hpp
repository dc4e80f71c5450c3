// ``_block_tv`` of bisimkit/quotient.py, statement for statement (bit for bit its results).
#pragma once

#include <cmath>

#include "arrays.hpp"

namespace bisimkit::quotient {

inline void block_tv(Vec<i64> indptr, Vec<i64> indices, Vec<double> data, Vec<i64> labels, Vec<i64> q_indptr,
                     Vec<i64> q_indices, Vec<double> q_data, Vec<i64> rows_x, Vec<i64> rows_y, Vec<double> mass,
                     Vec<double> out) {
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

}  // namespace bisimkit::quotient
