// Strided views of numpy arrays, as the kernels index them.
//
// A kernel reads and writes its arguments in place through these views: a pointer, the shape and
// the strides in elements (any layout numpy hands over: C order, slices, transposes). Slicing
// returns a view of the same memory, as numpy's basic slicing does. Only a kernel's own scratch, a
// Buffer, owns memory; it comes from and goes back to a per-thread pool.
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

/// Three axes: ``c[p]`` is a :class:`Mat`.
template <class T> struct Cube {
    T *data = nullptr;
    i64 n0 = 0, n1 = 0, n2 = 0;
    i64 stride0 = 0, stride1 = 0, stride2 = 1;

    Mat<T> operator[](i64 p) const { return {data + p * stride0, n1, n2, stride1, stride2}; }
};

/// Freed kernel buffers kept for this thread's next kernel calls, up to ``limit`` bytes: a fresh page costs a
/// fault on its first touch, which on some machines costs more than a kernel's work on it.
class BufferPool {
  public:
    static constexpr std::size_t limit = std::size_t{16} << 20;

    void *take(std::size_t bytes) {
        std::size_t best = held_.size();
        for (std::size_t x = 0; x < held_.size(); ++x) {
            const std::size_t size = held_[x].first;
            if (size >= bytes && size <= 2 * bytes + 4096 && (best == held_.size() || size < held_[best].first))
                best = x;
        }
        if (best == held_.size()) return ::operator new(bytes);
        void *p = held_[best].second;
        total_ -= held_[best].first;
        held_[best] = held_.back();
        held_.pop_back();
        return p;
    }
    void give(void *p, std::size_t bytes) {
        if (total_ + bytes > limit) {
            ::operator delete(p);
            return;
        }
        held_.emplace_back(bytes, p);
        total_ += bytes;
    }
    ~BufferPool() {
        for (auto &[size, p] : held_) ::operator delete(p);
    }

  private:
    std::vector<std::pair<std::size_t, void *>> held_;
    std::size_t total_ = 0;
};

inline BufferPool &buffer_pool() {
    thread_local BufferPool pool;
    return pool;
}

/// Gives a buffer's memory back to this thread's pool.
template <class T> struct PoolDelete {
    std::size_t bytes = 0;
    void operator()(T *p) const { buffer_pool().give(p, bytes); }
};

/// A contiguous buffer owned by a kernel, uninitialised as numpy's ``np.empty`` inside a kernel body.
template <class T> struct Buffer {
    std::unique_ptr<T[], PoolDelete<T>> store;
    i64 size;

    explicit Buffer(i64 n = 0) : store(allocate(n)), size(n > 0 ? n : 0) {}
    Vec<T> view() const { return {store.get(), size, 1}; }
    /// The first ``rows * cols`` elements as a C-order matrix (``buffer[:rows * cols].reshape(rows, cols)``).
    Mat<T> matrix(i64 rows, i64 cols) const { return {store.get(), rows, cols, cols, 1}; }

  private:
    static std::unique_ptr<T[], PoolDelete<T>> allocate(i64 n) {
        const std::size_t bytes = sizeof(T) * static_cast<std::size_t>(n > 0 ? n : 1);
        return {static_cast<T *>(buffer_pool().take(bytes)), PoolDelete<T>{bytes}};
    }
};

}  // namespace bisimkit
