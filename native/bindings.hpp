// What the bindings of bisimkit_native share: how an argument becomes a view of its array, and the
// element types each kind of argument may have.
//
// Arrays are taken as they come (any strides; read-only ones where the kernel only reads them), with
// the element types the callers pass: a kernel called with another type raises TypeError naming the
// argument before it touches anything, and bisimkit.kernels then runs the Python body.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

#include "arrays.hpp"

namespace bisimkit::bindings {

namespace nb = nanobind;


/// The kernel ``f`` through a pointer the optimiser cannot see through, so that a binding calls the kernel's own
/// compiled body instead of inlining it into its argument handling: inlined there, a kernel's loops share
/// registers with the binding's code and spill them (``_block_tv`` on brp N = 64 took 118 µs inlined and 45 µs
/// called). The bindings of the kernels that loop over many problems, rows or entries call them through this;
/// the one-problem helpers, bound for the twin tests, are called as they are.
template <class F> F *called(F *f) {
    asm volatile("" : "+r"(f));
    return f;
}

/// An array the kernel only reads (read-only arrays accepted).
using In = nb::ndarray<nb::ro, nb::device::cpu>;
/// An array the kernel writes.
using Out = nb::ndarray<nb::device::cpu>;

inline std::string type_name(nb::dlpack::dtype t) {
    switch (static_cast<nb::dlpack::dtype_code>(t.code)) {
        case nb::dlpack::dtype_code::Int: return "int" + std::to_string(t.bits);
        case nb::dlpack::dtype_code::UInt: return "uint" + std::to_string(t.bits);
        case nb::dlpack::dtype_code::Float: return "float" + std::to_string(t.bits);
        case nb::dlpack::dtype_code::Bool: return "bool";
        default: return "dtype code " + std::to_string(t.code) + " of " + std::to_string(t.bits) + " bits";
    }
}

template <class A> [[noreturn]] void refuse(const A &a, const char *name, const std::string &wanted) {
    throw nb::type_error(("argument '" + std::string(name) + "': expected " + wanted + ", got " +
                          type_name(a.dtype()) + " with " + std::to_string(a.ndim()) + " dimension(s)")
                             .c_str());
}

template <class T, class A> T *pointer(const A &a) {
    return static_cast<T *>(const_cast<void *>(static_cast<const void *>(a.data())));
}

template <class T, class A> void expect(const A &a, std::size_t ndim, const char *name) {
    if (a.dtype() != nb::dtype<T>() || a.ndim() != ndim)
        refuse(a, name, type_name(nb::dtype<T>()) + " with " + std::to_string(ndim) + " dimension(s)");
}

template <class T, class A> Vec<T> vec(const A &a, const char *name) {
    expect<T>(a, 1, name);
    return {pointer<T>(a), static_cast<i64>(a.shape(0)), a.stride(0)};
}

/// A :class:`Line`: one axis of stride 1 (a kernel's scratch handed over from Python).
template <class T, class A> Line<T> line(const A &a, const char *name) {
    expect<T>(a, 1, name);
    if (a.shape(0) > 1 && a.stride(0) != 1) refuse(a, name, "a contiguous " + type_name(nb::dtype<T>()) + " array");
    return {pointer<T>(a), static_cast<i64>(a.shape(0))};
}

template <class T, class A> Mat<T> mat(const A &a, const char *name) {
    expect<T>(a, 2, name);
    return {pointer<T>(a), static_cast<i64>(a.shape(0)), static_cast<i64>(a.shape(1)), a.stride(0), a.stride(1)};
}

template <class T, class A> Cube<T> cube(const A &a, const char *name) {
    expect<T>(a, 3, name);
    return {pointer<T>(a), static_cast<i64>(a.shape(0)), static_cast<i64>(a.shape(1)), static_cast<i64>(a.shape(2)),
            a.stride(0),   a.stride(1),                   a.stride(2)};
}

/// ``f(T{})`` for the integer element type T of ``a`` (int16, int32 or int64).
template <class A, class F> decltype(auto) integers(const A &a, const char *name, F &&f) {
    const auto t = a.dtype();
    if (t == nb::dtype<std::int64_t>()) return f(std::int64_t{});
    if (t == nb::dtype<std::int32_t>()) return f(std::int32_t{});
    if (t == nb::dtype<std::int16_t>()) return f(std::int16_t{});
    refuse(a, name, "an int16, int32 or int64 array");
}

/// ``f(T{})`` for the integer element type T of ``a`` (int32 or int64: indices of scipy's sparse matrices).
template <class A, class F> decltype(auto) indices(const A &a, const char *name, F &&f) {
    const auto t = a.dtype();
    if (t == nb::dtype<std::int64_t>()) return f(std::int64_t{});
    if (t == nb::dtype<std::int32_t>()) return f(std::int32_t{});
    refuse(a, name, "an int32 or int64 array");
}

/// ``f(T{})`` for the float element type T of ``a`` (float32 or float64).
template <class A, class F> decltype(auto) floats(const A &a, const char *name, F &&f) {
    const auto t = a.dtype();
    if (t == nb::dtype<double>()) return f(double{});
    if (t == nb::dtype<float>()) return f(float{});
    refuse(a, name, "a float32 or float64 array");
}

/// Python's truth of a scalar argument (``if warm:`` in the Python body: bool, numpy.bool_, 0/1).
inline bool truth(nb::handle value) {
    const int result = PyObject_IsTrue(value.ptr());
    if (result < 0) throw nb::python_error();
    return result != 0;
}

void bind_simplex(nb::module_ m);
void bind_couplings(nb::module_ m);
void bind_compiled(nb::module_ m);
void bind_relations(nb::module_ m);
void bind_roundoff(nb::module_ m);
void bind_lmc(nb::module_ m);
void bind_quotient(nb::module_ m);

}  // namespace bisimkit::bindings
