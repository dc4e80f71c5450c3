// The order of ``np.argsort(values, kind="stable")``.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "arrays.hpp"

namespace bisimkit {

/// numpy's order of floats: NaN after every number (and equal to NaN).
inline bool float_less(double a, double b) { return a < b || (b != b && a == a); }

/// ``order[:n] = np.argsort([value(0), ..., value(n - 1)], kind="stable")``: ascending in numpy's order
/// of floats, equal values in increasing index (any stable sort gives this one result).
template <class Value> void stable_argsort(i64 n, Value value, std::vector<i64> &order) {
    order.resize(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), i64{0});
    auto less = [&](i64 x, i64 y) { return float_less(value(x), value(y)); };
    if (n <= 24) {  // insertion sort: stable, and no buffer to allocate for the small supports
        for (i64 x = 1; x < n; ++x) {
            i64 item = order[x];
            i64 y = x;
            while (y > 0 && less(item, order[y - 1])) {
                order[y] = order[y - 1];
                --y;
            }
            order[y] = item;
        }
        return;
    }
    std::stable_sort(order.begin(), order.end(), less);
}

}  // namespace bisimkit
