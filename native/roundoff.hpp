// ``_breakpoint_errors`` and ``_csr_row_defects`` of bisimkit/roundoff.py, statement for statement (bit for bit
// their results).
#pragma once

#include <cmath>

#include "arrays.hpp"

namespace bisimkit::roundoff {

template <class P, class D> void breakpoint_errors(Vec<P> indptr, Vec<D> data, Vec<double> out) {
    const double u = 1.1102230246251565e-16;
    for (i64 r = 0; r < indptr.size - 1; ++r) {
        const i64 lo = indptr[r];
        const i64 hi = indptr[r + 1];
        const i64 k = hi - lo;
        if (k <= 1) {
            out[r] = 0.0;  // one atom: its breakpoint is 1, exactly
            continue;
        }
        double total = 0.0;
        double lost = 0.0;  // sum of |rounding errors| of the running sum
        for (i64 x = lo; x < hi; ++x) {
            const double s = total + data[x];
            const double bb = s - total;
            lost += std::fabs((total - (s - bb)) + (data[x] - bb));
            total = s;
        }
        const double lost_total = lost * (1.0 + 2.0 * static_cast<double>(k) * u);
        if (total <= lost_total || total <= 0.0) {
            out[r] = static_cast<double>(k);  // nothing is known about this row's breakpoints
            continue;
        }
        const double low = (total - lost_total) * (1.0 - 2.0 * u);  // a lower bound on the exact total
        const bool exact_division = total == 1.0;
        double run = 0.0;
        lost = 0.0;
        double acc = 0.0;
        for (i64 x = lo; x < hi - 1; ++x) {  // the last breakpoint is set to 1, which is exact
            const double s = run + data[x];
            const double bb = s - run;
            lost += std::fabs((run - (s - bb)) + (data[x] - bb));
            run = s;
            double b = run / total;
            if (b > 1.0) b = 1.0;
            acc += (lost * (1.0 + 2.0 * static_cast<double>(k) * u) + b * lost_total) / low;
            if (!exact_division) acc += u * b;
        }
        out[r] = acc * (1.0 + 4.0 * static_cast<double>(k) * u);
    }
}

template <class P> void csr_row_defects(Vec<P> indptr, Vec<double> data, bool compensated, Vec<double> out) {
    const double u = 1.1102230246251565e-16;
    const double tiny = 5e-324;
    for (i64 r = 0; r < indptr.size - 1; ++r) {
        const i64 lo = indptr[r];
        const i64 hi = indptr[r + 1];
        const i64 k = hi - lo;
        if (k == 0) {
            out[r] = 1.0;
            continue;
        }
        double total = 0.0;
        double lost = 0.0;
        double size = 0.0;
        bool on_grid = true;
        for (i64 x = lo; x < hi; ++x) {
            const double v = data[x];
            const double scaled = v * 4503599627370496.0;
            if (scaled != std::floor(scaled)) on_grid = false;
            const double s = total + v;
            const double bb = s - total;
            lost += (total - (s - bb)) + (v - bb);
            total = s;
            size += std::fabs(v);
        }
        if (on_grid && total <= 1.5) {
            out[r] = std::fabs(total - 1.0);
            continue;
        }
        const double kd = static_cast<double>(k);
        const double g = kd * u / (1.0 - kd * u);
        if (compensated) {
            out[r] = std::fabs((total - 1.0) + lost) * (1.0 + 4.0 * u) + g * g * size * (1.0 + 4.0 * u) + 2.0 * kd * tiny;
        } else {
            out[r] = std::fabs(total - 1.0) + g * total;
        }
    }
}

}  // namespace bisimkit::roundoff
