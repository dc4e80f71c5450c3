// Strided views of numpy arrays, as the kernels index them.
//
// A kernel reads and writes its arguments in place through these views: a pointer, the shape and
// the strides in elements (any layout numpy hands over: C order, slices, transposes). Slicing
// returns a view of the same memory, as numpy's basic slicing does. Nothing here owns memory.
#pragma once

#include <cstdint>
#include <memory>

namespace bisimkit {

using i64 = std::int64_t;

/// One axis: ``v[i]`` is element ``i`` (``i * stride`` elements past ``data``).
template <class T> struct Vec {
    T *data = nullptr;
    i64 size = 0;
    i64 stride = 1;

    T &operator[](i64 i) const { return data[i * stride]; }
    /// ``v[lo:hi]``
    Vec slice(i64 lo, i64 hi) const { return {data + lo * stride, hi - lo, stride}; }
    /// ``v[lo:]``
    Vec from(i64 lo) const { return {data + lo * stride, size - lo, stride}; }
};

/// Two axes: ``m(i, j)``.
template <class T> struct Mat {
    T *data = nullptr;
    i64 rows = 0, cols = 0;
    i64 stride0 = 0, stride1 = 1;

    T &operator()(i64 i, i64 j) const { return data[i * stride0 + j * stride1]; }
    /// ``m[i]``
    Vec<T> row(i64 i) const { return {data + i * stride0, cols, stride1}; }
    /// ``m[lo:hi, j]``
    Vec<T> column(i64 j, i64 lo, i64 hi) const { return {data + lo * stride0 + j * stride1, hi - lo, stride0}; }
};

/// Three axes: ``c[p]`` is a :class:`Mat`.
template <class T> struct Cube {
    T *data = nullptr;
    i64 n0 = 0, n1 = 0, n2 = 0;
    i64 stride0 = 0, stride1 = 0, stride2 = 1;

    Mat<T> operator[](i64 p) const { return {data + p * stride0, n1, n2, stride1, stride2}; }
};

/// A contiguous buffer owned by a kernel, uninitialised as numpy's ``np.empty`` inside a kernel body.
template <class T> struct Buffer {
    std::unique_ptr<T[]> store;
    i64 size;

    explicit Buffer(i64 n = 0) : store(new T[static_cast<std::size_t>(n > 0 ? n : 1)]), size(n > 0 ? n : 0) {}
    Vec<T> view() const { return {store.get(), size, 1}; }
    /// The first ``rows * cols`` elements as a C-order matrix (``buffer[:rows * cols].reshape(rows, cols)``).
    Mat<T> matrix(i64 rows, i64 cols) const { return {store.get(), rows, cols, cols, 1}; }
};

}  // namespace bisimkit
