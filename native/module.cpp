// bisimkit_native: the kernels of bisimkit, compiled when the package is installed.
//
// One submodule per Python module that defines kernels (roundoff so far); each
// function has the name and the arguments of its kernel there (numpy arrays in, outputs written in
// place, the same return value). bisimkit.kernels calls these in place of the Python bodies.
//
// Arrays are taken as they come (any strides; read-only ones where the kernel only reads them), with
// the element types the callers pass: a kernel called with another type raises TypeError naming the
// argument before it touches anything.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

#include "roundoff.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using bisimkit::i64;
using bisimkit::Vec;

namespace {

/// An array the kernel only reads (read-only arrays accepted).
using In = nb::ndarray<nb::ro, nb::device::cpu>;
/// An array the kernel writes.
using Out = nb::ndarray<nb::device::cpu>;

std::string type_name(nb::dlpack::dtype t) {
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

// ----------------------------------------------------------------------------------------- roundoff
void bind_roundoff(nb::module_ &m) {
    m.def("_breakpoint_errors", [](In indptr, In data, Out out) {
        const auto args = std::make_tuple(vec<i64>(indptr, "indptr"), vec<double>(data, "data"), vec<double>(out, "out"));
        nb::gil_scoped_release release;
        std::apply(bisimkit::roundoff::breakpoint_errors<i64, double>, args);
    });
}

}  // namespace

NB_MODULE(bisimkit_native, m) {
    m.doc() = "The kernels of bisimkit, compiled when the package is installed (bisimkit.kernels calls them).";
    nb::module_ roundoff = m.def_submodule("roundoff", "Kernels of bisimkit.roundoff.");
    bind_roundoff(roundoff);
}
