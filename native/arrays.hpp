// Strided views of numpy arrays, as the kernels index them.
//
// A kernel reads and writes its arguments in place through these views: a pointer, the shape and
// the strides in elements (any layout numpy hands over: C order, slices, transposes). Slicing
// returns a view of the same memory, as numpy's basic slicing does. Only a kernel's own scratch, a
// Buffer, owns memory; it comes from and goes back to a per-thread pool. A Buffer's memory, and scratch
// a binding checked to be contiguous, can also be seen through Line and Grid, whose unit stride the
// compiler knows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

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

/// One axis of stride 1, known when the kernel is compiled: ``v[i]`` is element ``i`` past ``data``. For the
/// arrays a kernel lays out itself (a Buffer's), in loops so short that the stride's multiplication of a
/// :class:`Vec` counts.
template <class T> struct Line {
    T *data = nullptr;
    i64 size = 0;

    T &operator[](i64 i) const { return data[i]; }
};

/// Two axes whose rows are contiguous: ``m(i, j)`` is ``i * stride0 + j`` elements past ``data`` (as
/// :class:`Mat` with ``stride1 == 1`` known when the kernel is compiled).
template <class T> struct Grid {
    T *data = nullptr;
    i64 rows = 0, cols = 0;
    i64 stride0 = 0;

    T &operator()(i64 i, i64 j) const { return data[i * stride0 + j]; }
};

/// Three axes: ``c[p]`` is a :class:`Mat`.
template <class T> struct Cube {
    T *data = nullptr;
    i64 n0 = 0, n1 = 0, n2 = 0;
    i64 stride0 = 0, stride1 = 0, stride2 = 1;

    Mat<T> operator[](i64 p) const { return {data + p * stride0, n1, n2, stride1, stride2}; }
};

/// Freed kernel buffers of at least ``smallest`` bytes kept for this thread's next kernel calls, at most
/// ``most_blocks`` of them and ``limit`` bytes in all: a fresh page costs a fault on its first touch, which on
/// some machines costs more than a kernel's work on it (smaller blocks come from the allocator's heap, whose
/// pages stay mapped, and pass straight through).
class BufferPool {
  public:
    static constexpr std::size_t smallest = std::size_t{64} << 10;
    static constexpr std::size_t limit = std::size_t{16} << 20;
    static constexpr std::size_t most_blocks = 32;

    /// ``(memory, its size)``: a kept block of ``bytes`` to twice that, the smallest such, else a new one.
    std::pair<void *, std::size_t> take(std::size_t bytes) {
        std::size_t best = held_.size();
        if (bytes >= smallest)
            for (std::size_t x = 0; x < held_.size(); ++x) {
                const std::size_t size = held_[x].first;
                if (size >= bytes && size <= 2 * bytes && (best == held_.size() || size < held_[best].first))
                    best = x;
            }
        if (best == held_.size()) return {::operator new(bytes), bytes};
        const auto block = held_[best];
        total_ -= block.first;
        held_[best] = held_.back();
        held_.pop_back();
        return {block.second, block.first};
    }
    void give(void *p, std::size_t size) {
        if (size < smallest || held_.size() == most_blocks || total_ + size > limit) {
            ::operator delete(p);
            return;
        }
        held_.emplace_back(size, p);
        total_ += size;
    }
    ~BufferPool() {
        for (auto &[size, p] : held_) ::operator delete(p);
    }

  private:
    std::vector<std::pair<std::size_t, void *>> held_;  // (size, memory)
    std::size_t total_ = 0;
};

inline BufferPool &buffer_pool() {
    thread_local BufferPool pool;
    return pool;
}

/// Gives a buffer's memory, of ``size`` bytes, back to this thread's pool.
template <class T> struct PoolDelete {
    std::size_t size = 0;
    void operator()(T *p) const { buffer_pool().give(p, size); }
};

/// A contiguous buffer owned by a kernel, uninitialised as numpy's ``np.empty`` inside a kernel body.
template <class T> struct Buffer {
    std::unique_ptr<T[], PoolDelete<T>> store;
    i64 size;

    explicit Buffer(i64 n = 0) : store(allocate(n)), size(n > 0 ? n : 0) {}
    Vec<T> view() const { return {store.get(), size, 1}; }
    /// The first ``rows * cols`` elements as a C-order matrix (``buffer[:rows * cols].reshape(rows, cols)``).
    Mat<T> matrix(i64 rows, i64 cols) const { return {store.get(), rows, cols, cols, 1}; }
    /// :meth:`view` as a :class:`Line`.
    Line<T> line() const { return {store.get(), size}; }
    /// :meth:`matrix` as a :class:`Grid`.
    Grid<T> grid(i64 rows, i64 cols) const { return {store.get(), rows, cols, cols}; }

  private:
    static std::unique_ptr<T[], PoolDelete<T>> allocate(i64 n) {
        const auto [memory, size] = buffer_pool().take(sizeof(T) * static_cast<std::size_t>(n > 0 ? n : 1));
        return {static_cast<T *>(memory), PoolDelete<T>{size}};
    }
};

}  // namespace bisimkit
