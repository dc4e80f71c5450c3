// bisimkit_native: the kernels of bisimkit, compiled when the package is installed.
//
// One submodule per Python module that defines kernels (simplex, couplings, compiled, roundoff); each
// function has the name and the arguments of its kernel there (numpy arrays in, outputs written in
// place, the same return value). bisimkit.kernels calls these in place of the Python bodies.
//
// Arrays are taken as they come (any strides; read-only ones where the kernel only reads them), with
// the element types the callers pass: a kernel called with another type raises TypeError naming the
// argument before it touches anything, and bisimkit.kernels then runs the Python body.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <string>

#include "compiled.hpp"
#include "couplings.hpp"
#include "roundoff.hpp"
#include "simplex.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using bisimkit::Cube;
using bisimkit::i64;
using bisimkit::Mat;
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
bool truth(nb::handle value) {
    const int result = PyObject_IsTrue(value.ptr());
    if (result < 0) throw nb::python_error();
    return result != 0;
}

// ------------------------------------------------------------------------------------------ simplex
namespace sx = bisimkit::simplex;

sx::Scratch scratch(nb::handle ws) {
    auto field = [&](const char *name) { return nb::cast<Out>(ws.attr(name)); };
    const Out adj = field("adj"), deg = field("deg"), er = field("edge_row"), ec = field("edge_col"),
              pe = field("parent_edge"), depth = field("depth"), stack = field("stack"), cycle = field("cycle"),
              left = field("left"), pot = field("pot"), rr = field("rest_row"), rc = field("rest_col"),
              done = field("done");
    return {mat<i64>(adj, "ws.adj"),      vec<i64>(deg, "ws.deg"),       vec<i64>(er, "ws.edge_row"),
            vec<i64>(ec, "ws.edge_col"),  vec<i64>(pe, "ws.parent_edge"), vec<i64>(depth, "ws.depth"),
            vec<i64>(stack, "ws.stack"),  vec<i64>(cycle, "ws.cycle"),   vec<i64>(left, "ws.left"),
            vec<double>(pot, "ws.pot"),   vec<double>(rr, "ws.rest_row"), vec<double>(rc, "ws.rest_col"),
            vec<bool>(done, "ws.done")};
}

void bind_simplex(nb::module_ &m) {
    m.def("_add_edge", [](i64 e, i64 i, i64 j, i64 k, Out er, Out ec, Out adj, Out deg) {
        sx::add_edge(e, i, j, k, vec<i64>(er, "er"), vec<i64>(ec, "ec"), mat<i64>(adj, "adj"), vec<i64>(deg, "deg"));
    });
    m.def("_remove_from", [](i64 node, i64 e, Out adj, Out deg) {
        sx::remove_from(node, e, mat<i64>(adj, "adj"), vec<i64>(deg, "deg"));
    });
    m.def("_find", [](Out parent, i64 x) { return sx::find(vec<i64>(parent, "parent"), x); });
    m.def("_join", [](Out parent, i64 x, i64 y) { return sx::join(vec<i64>(parent, "parent"), x, y); });
    m.def("_greedy_basis", [](In a, In b, In C, i64 k, i64 l, Out flow, Out er, Out ec, Out adj, Out deg) {
        const auto args = std::make_tuple(vec<double>(a, "a"), vec<double>(b, "b"), mat<double>(C, "C"), k, l,
                                          mat<double>(flow, "flow"), vec<i64>(er, "er"), vec<i64>(ec, "ec"),
                                          mat<i64>(adj, "adj"), vec<i64>(deg, "deg"));
        nb::gil_scoped_release release;
        return std::apply(sx::greedy_basis, args);
    });
    m.def("_warm_basis", [](In a, In b, i64 k, i64 l, Out flow, Out er, Out ec, Out adj, Out deg, In br, In bc,
                            Out rs, Out rd, Out left, Out done, Out stack) {
        return integers(br, "br", [&](auto type) {
            using B = decltype(type);
            return sx::warm_basis(vec<double>(a, "a"), vec<double>(b, "b"), k, l, mat<double>(flow, "flow"),
                                  vec<i64>(er, "er"), vec<i64>(ec, "ec"), mat<i64>(adj, "adj"), vec<i64>(deg, "deg"),
                                  vec<B>(br, "br"), vec<B>(bc, "bc"), vec<double>(rs, "rs"), vec<double>(rd, "rd"),
                                  vec<i64>(left, "left"), vec<bool>(done, "done"), vec<i64>(stack, "stack"));
        });
    });
    m.def("_smallest_even_flow", [](In path, i64 length, In flow, In er, In ec, double theta, i64 leave) {
        return sx::smallest_even_flow(vec<i64>(path, "path"), length, mat<double>(flow, "flow"), vec<i64>(er, "er"),
                                      vec<i64>(ec, "ec"), theta, leave);
    });
    m.def("_hang", [](i64 root, In C, i64 k, In er, In ec, In adj, In deg, Out parent_edge, Out depth, Out pot,
                      Out stack) {
        sx::hang(root, mat<double>(C, "C"), k, vec<i64>(er, "er"), vec<i64>(ec, "ec"), mat<i64>(adj, "adj"),
                 vec<i64>(deg, "deg"), vec<i64>(parent_edge, "parent_edge"), vec<i64>(depth, "depth"),
                 vec<double>(pot, "pot"), vec<i64>(stack, "stack"));
    });
    m.def("_workspace", [](i64 nmax, i64 dmax) {
        const nb::module_ np = nb::module_::import_("numpy");
        const nb::object empty = np.attr("empty"), int64 = np.attr("int64");
        auto ints = [&] { return empty(nmax, "dtype"_a = int64); };
        const nb::object Scratch = nb::module_::import_("bisimkit.simplex").attr("Scratch");
        return Scratch(empty(nb::make_tuple(nmax, dmax), "dtype"_a = int64), ints(), ints(), ints(), ints(), ints(),
                       ints(), ints(), ints(), empty(nmax), empty(nmax), empty(nmax),
                       empty(nmax, "dtype"_a = np.attr("bool_")));
    });
    m.def("_solve_one", [](In a, In b, In C, i64 k, i64 l, Out flow, Out basis_row, Out basis_col, nb::handle warm,
                           nb::handle ws) {
        const sx::Scratch space = scratch(ws);
        const bool start = truth(warm);
        return integers(basis_row, "basis_row", [&](auto type) {
            using B = decltype(type);
            const auto args = std::make_tuple(vec<double>(a, "a"), vec<double>(b, "b"), mat<double>(C, "C"), k, l,
                                              mat<double>(flow, "flow"), vec<B>(basis_row, "basis_row"),
                                              vec<B>(basis_col, "basis_col"), start, space);
            nb::gil_scoped_release release;
            return std::apply(sx::solve_one<B>, args);
        });
    });
    m.def("_plan_gap", [](In a, In b, i64 k, i64 l, In flow, In edge_row, In edge_col, In pot, double cost,
                          double violation, double scale, double floor, Out rows, Out cols) {
        return sx::plan_gap(vec<double>(a, "a"), vec<double>(b, "b"), k, l, mat<double>(flow, "flow"),
                            vec<i64>(edge_row, "edge_row"), vec<i64>(edge_col, "edge_col"), vec<double>(pot, "pot"),
                            cost, violation, scale, floor, vec<double>(rows, "rows"), vec<double>(cols, "cols"));
    });
    m.def("_basis_from_flow", [](In flow, In C, i64 k, i64 l, Out br, Out bc) {
        return integers(br, "br", [&](auto type) {
            using B = decltype(type);
            return sx::basis_from_flow(mat<double>(flow, "flow"), mat<double>(C, "C"), k, l, vec<B>(br, "br"),
                                       vec<B>(bc, "bc"));
        });
    });
    m.def("_basis_from_flow_at", [](In flows, In C, In k, In l, Out basis, In off, Out ok, i64 p) {
        integers(basis, "basis", [&](auto type) {
            using B = decltype(type);
            sx::basis_from_flow_at(cube<double>(flows, "flows"), cube<double>(C, "C"), vec<i64>(k, "k"),
                                   vec<i64>(l, "l"), mat<B>(basis, "basis"), vec<i64>(off, "off"), vec<bool>(ok, "ok"),
                                   p);
        });
    });
    for (const bool parallel : {true, false}) {
        m.def(parallel ? "_bases_from_flows" : "_bases_from_flows_serial",
              [parallel](In flows, In C, In k, In l, Out basis, In off, Out ok) {
                  integers(basis, "basis", [&](auto type) {
                      using B = decltype(type);
                      const auto args = std::make_tuple(cube<double>(flows, "flows"), cube<double>(C, "C"),
                                                        vec<i64>(k, "k"), vec<i64>(l, "l"), mat<B>(basis, "basis"),
                                                        vec<i64>(off, "off"), vec<bool>(ok, "ok"), parallel);
                      nb::gil_scoped_release release;
                      std::apply(sx::bases_from_flows<B>, args);
                  });
              });
    }
    m.def("_solve_block", [](In a, In b, In C, In k, In l, Out flows, Out costs, Out gaps, Out ok, Out pivots,
                             Out basis, In off, In warm, i64 blk, i64 nmax, i64 dmax) {
        integers(basis, "basis", [&](auto type) {
            using B = decltype(type);
            const auto args = std::make_tuple(
                mat<double>(a, "a"), mat<double>(b, "b"), cube<double>(C, "C"), vec<i64>(k, "k"), vec<i64>(l, "l"),
                cube<double>(flows, "flows"), vec<double>(costs, "costs"), vec<double>(gaps, "gaps"),
                vec<bool>(ok, "ok"), vec<i64>(pivots, "pivots"), mat<B>(basis, "basis"), vec<i64>(off, "off"),
                vec<bool>(warm, "warm"), blk, nmax, dmax);
            nb::gil_scoped_release release;
            std::apply(sx::solve_block<B>, args);
        });
    });
    for (const bool parallel : {true, false}) {
        m.def(parallel ? "_solve_batch" : "_solve_batch_serial",
              [parallel](In a, In b, In C, In k, In l, Out flows, Out costs, Out gaps, Out ok, Out pivots, Out basis,
                         In off, In warm, i64 nmax, i64 dmax) {
                  integers(basis, "basis", [&](auto type) {
                      using B = decltype(type);
                      const auto args = std::make_tuple(
                          mat<double>(a, "a"), mat<double>(b, "b"), cube<double>(C, "C"), vec<i64>(k, "k"),
                          vec<i64>(l, "l"), cube<double>(flows, "flows"), vec<double>(costs, "costs"),
                          vec<double>(gaps, "gaps"), vec<bool>(ok, "ok"), vec<i64>(pivots, "pivots"),
                          mat<B>(basis, "basis"), vec<i64>(off, "off"), vec<bool>(warm, "warm"), nmax, dmax, parallel);
                      nb::gil_scoped_release release;
                      std::apply(sx::solve_batch<B>, args);
                  });
              });
    }
    m.def("_solve_supports_one",
          [](In D, In xs, In ys, In a, In b, In k, In l, In rows, In off, Out basis, Out warm, Out costs, Out gaps,
             Out ok, Out out_i, Out out_j, Out out_mass, i64 x, Out cbuf, Out fbuf, nb::handle ws) {
              const sx::Scratch space = scratch(ws);
              integers(basis, "basis", [&](auto basis_type) {
                  indices(out_i, "out_i", [&](auto out_type) {
                      using B = decltype(basis_type);
                      using O = decltype(out_type);
                      const auto args = std::make_tuple(
                          mat<double>(D, "D"), mat<i64>(xs, "xs"), mat<i64>(ys, "ys"), mat<double>(a, "a"),
                          mat<double>(b, "b"), vec<i64>(k, "k"), vec<i64>(l, "l"), vec<i64>(rows, "rows"),
                          vec<i64>(off, "off"), mat<B>(basis, "basis"), vec<bool>(warm, "warm"),
                          vec<double>(costs, "costs"), vec<double>(gaps, "gaps"), vec<bool>(ok, "ok"),
                          vec<O>(out_i, "out_i"), vec<O>(out_j, "out_j"), vec<double>(out_mass, "out_mass"), x,
                          vec<double>(cbuf, "cbuf"), vec<double>(fbuf, "fbuf"), space);
                      nb::gil_scoped_release release;
                      std::apply(sx::solve_supports_one<i64, B, O>, args);
                  });
              });
          });
    m.def("_solve_supports_block",
          [](In D, In xs, In ys, In a, In b, In k, In l, In rows, In off, Out basis, Out warm, Out costs, Out gaps,
             Out ok, Out out_i, Out out_j, Out out_mass, i64 blk, i64 nmax, i64 dmax, i64 cmax) {
              integers(basis, "basis", [&](auto basis_type) {
                  indices(out_i, "out_i", [&](auto out_type) {
                      using B = decltype(basis_type);
                      using O = decltype(out_type);
                      const auto args = std::make_tuple(
                          mat<double>(D, "D"), mat<i64>(xs, "xs"), mat<i64>(ys, "ys"), mat<double>(a, "a"),
                          mat<double>(b, "b"), vec<i64>(k, "k"), vec<i64>(l, "l"), vec<i64>(rows, "rows"),
                          vec<i64>(off, "off"), mat<B>(basis, "basis"), vec<bool>(warm, "warm"),
                          vec<double>(costs, "costs"), vec<double>(gaps, "gaps"), vec<bool>(ok, "ok"),
                          vec<O>(out_i, "out_i"), vec<O>(out_j, "out_j"), vec<double>(out_mass, "out_mass"), blk,
                          nmax, dmax, cmax);
                      nb::gil_scoped_release release;
                      std::apply(sx::solve_supports_block<i64, B, O>, args);
                  });
              });
          });
    for (const bool parallel : {true, false}) {
        m.def(parallel ? "_solve_supports" : "_solve_supports_serial",
              [parallel](In D, In xs, In ys, In a, In b, In k, In l, In rows, In off, Out basis, Out warm, Out costs,
                         Out gaps, Out ok, Out out_i, Out out_j, Out out_mass, i64 nmax, i64 dmax, i64 cmax) {
                  integers(basis, "basis", [&](auto basis_type) {
                      indices(out_i, "out_i", [&](auto out_type) {
                          using B = decltype(basis_type);
                          using O = decltype(out_type);
                          const auto args = std::make_tuple(
                              mat<double>(D, "D"), mat<i64>(xs, "xs"), mat<i64>(ys, "ys"), mat<double>(a, "a"),
                              mat<double>(b, "b"), vec<i64>(k, "k"), vec<i64>(l, "l"), vec<i64>(rows, "rows"),
                              vec<i64>(off, "off"), mat<B>(basis, "basis"), vec<bool>(warm, "warm"),
                              vec<double>(costs, "costs"), vec<double>(gaps, "gaps"), vec<bool>(ok, "ok"),
                              vec<O>(out_i, "out_i"), vec<O>(out_j, "out_j"), vec<double>(out_mass, "out_mass"), nmax,
                              dmax, cmax, parallel);
                          nb::gil_scoped_release release;
                          std::apply(sx::solve_supports<i64, B, O>, args);
                      });
                  });
              });
    }
    m.def("_line_basis", [](In xs, In a, i64 k, In ys, In b, i64 l, In h, Out br, Out bc) {
        integers(br, "br", [&](auto type) {
            using B = decltype(type);
            sx::line_basis(vec<i64>(xs, "xs"), vec<double>(a, "a"), k, vec<i64>(ys, "ys"), vec<double>(b, "b"), l,
                           vec<double>(h, "h"), vec<B>(br, "br"), vec<B>(bc, "bc"));
        });
    });
    m.def("_line_bases", [](In xs, In a, In k, In ys, In b, In l, In h, Out basis, In off, Out valid) {
        integers(basis, "basis", [&](auto type) {
            using B = decltype(type);
            const auto args = std::make_tuple(mat<i64>(xs, "xs"), mat<double>(a, "a"), vec<i64>(k, "k"),
                                              mat<i64>(ys, "ys"), mat<double>(b, "b"), vec<i64>(l, "l"),
                                              vec<double>(h, "h"), mat<B>(basis, "basis"), vec<i64>(off, "off"),
                                              vec<bool>(valid, "valid"));
            nb::gil_scoped_release release;
            std::apply(sx::line_bases<i64, B>, args);
        });
    });
}

// ---------------------------------------------------------------------------------------- couplings
namespace cp = bisimkit::couplings;

void bind_couplings(nb::module_ &m) {
    m.def("_row_breakpoints", [](In data, i64 lo, i64 hi, Out out) {
        cp::row_breakpoints(vec<double>(data, "data"), lo, hi, vec<double>(out, "out"));
    });
    m.def("_csr_breakpoints", [](In indptr, In data, Out out) {
        const auto args = std::make_tuple(vec<i64>(indptr, "indptr"), vec<double>(data, "data"), vec<double>(out, "out"));
        nb::gil_scoped_release release;
        std::apply(cp::csr_breakpoints<i64, double>, args);
    });
    m.def("merge_breakpoints", [](In ia, In ba, In ib, In bb, Out out_i, Out out_j, Out out_m) {
        return integers(ia, "ia", [&](auto label_type) {
            return integers(out_i, "out_i", [&](auto out_type) {
                using I = decltype(label_type);
                using O = decltype(out_type);
                return cp::merge_breakpoints(vec<I>(ia, "ia"), vec<double>(ba, "ba"), vec<I>(ib, "ib"),
                                             vec<double>(bb, "bb"), vec<O>(out_i, "out_i"), vec<O>(out_j, "out_j"),
                                             vec<double>(out_m, "out_m"));
            });
        });
    });
    m.def("_merge_rows", [](In xptr, In xidx, In xbp, In src, In yptr, In yidx, In ybp, In dst, In offsets, Out out_i,
                            Out out_j, Out out_m, Out counts) {
        const auto args = std::make_tuple(
            vec<i64>(xptr, "xptr"), vec<i64>(xidx, "xidx"), vec<double>(xbp, "xbp"), vec<i64>(src, "src"),
            vec<i64>(yptr, "yptr"), vec<i64>(yidx, "yidx"), vec<double>(ybp, "ybp"), vec<i64>(dst, "dst"),
            vec<i64>(offsets, "offsets"), vec<i64>(out_i, "out_i"), vec<i64>(out_j, "out_j"),
            vec<double>(out_m, "out_m"), vec<i64>(counts, "counts"));
        nb::gil_scoped_release release;
        std::apply(cp::merge_rows<i64, i64>, args);
    });
    m.def("_gather_rows", [](In indptr, In indices_, In data, In rows, Out index, Out mass) {
        indices(indices_, "indices", [&](auto type) {
            using I = decltype(type);
            const auto args = std::make_tuple(vec<i64>(indptr, "indptr"), vec<I>(indices_, "indices"),
                                              vec<double>(data, "data"), vec<i64>(rows, "rows"),
                                              mat<i64>(index, "index"), mat<double>(mass, "mass"));
            nb::gil_scoped_release release;
            std::apply(cp::gather_rows<i64, I, double, i64, double>, args);
        });
    });
}

// ----------------------------------------------------------------------------------------- compiled
namespace cc = bisimkit::compiled;

void bind_compiled(nb::module_ &m) {
    m.def("_count_slots", [](In off, In ci, In cj, In mass, In row_pair, In index, Out counts) {
        indices(ci, "ci", [&](auto cell_type) {
            indices(index, "index", [&](auto index_type) {
                using C = decltype(cell_type);
                using X = decltype(index_type);
                const auto args = std::make_tuple(vec<i64>(off, "off"), vec<C>(ci, "ci"), vec<C>(cj, "cj"),
                                                  vec<double>(mass, "mass"), vec<i64>(row_pair, "row_pair"),
                                                  mat<X>(index, "index"), vec<i64>(counts, "counts"));
                nb::gil_scoped_release release;
                std::apply(cc::count_slots<C, i64, X>, args);
            });
        });
    });
    m.def("_fill_slots", [](In off, In ci, In cj, In mass, In row_pair, In row_weight, In index, In indptr,
                            Out indices_, Out data) {
        indices(ci, "ci", [&](auto cell_type) {
            indices(index, "index", [&](auto index_type) {
                using C = decltype(cell_type);
                using X = decltype(index_type);
                const auto args = std::make_tuple(
                    vec<i64>(off, "off"), vec<C>(ci, "ci"), vec<C>(cj, "cj"), vec<double>(mass, "mass"),
                    vec<i64>(row_pair, "row_pair"), vec<double>(row_weight, "row_weight"), mat<X>(index, "index"),
                    vec<i64>(indptr, "indptr"), vec<std::int32_t>(indices_, "indices"), vec<double>(data, "data"));
                nb::gil_scoped_release release;
                std::apply(cc::fill_slots<C, i64, X, i64, std::int32_t, double>, args);
            });
        });
    });
    m.def("_eps_bar_pass", [](In S, In T, In index, i64 m_, In a_ptr, In a_idx, In a_bp, In x_ptr, In x_idx, In x_bp,
                              i64 mode, Out counts, In indptr, Out indices_, Out data, In vec_, Out out) {
        indices(index, "index", [&](auto index_type) {
            floats(data, "data", [&](auto data_type) {
                using X = decltype(index_type);
                using D = decltype(data_type);
                const auto args = std::make_tuple(
                    vec<i64>(S, "S"), vec<i64>(T, "T"), mat<X>(index, "index"), m_, vec<i64>(a_ptr, "a_ptr"),
                    vec<i64>(a_idx, "a_idx"), vec<double>(a_bp, "a_bp"), vec<i64>(x_ptr, "x_ptr"),
                    vec<i64>(x_idx, "x_idx"), vec<double>(x_bp, "x_bp"), mode, vec<i64>(counts, "counts"),
                    vec<i64>(indptr, "indptr"), vec<std::int32_t>(indices_, "indices"), vec<D>(data, "data"),
                    vec<double>(vec_, "vec"), vec<double>(out, "out"));
                nb::gil_scoped_release release;
                std::apply(cc::eps_bar_pass<X, std::int32_t, D>, args);
            });
        });
    });
    for (const bool parallel : {true, false}) {
        m.def(parallel ? "_csr_matvec" : "_csr_matvec_serial",
              [parallel](In indptr, In indices_, In data, In x, Out out) {
                  indices(indptr, "indptr", [&](auto pointer_type) {
                      indices(indices_, "indices", [&](auto index_type) {
                          floats(data, "data", [&](auto data_type) {
                              using P = decltype(pointer_type);
                              using J = decltype(index_type);
                              using D = decltype(data_type);
                              const auto args = std::make_tuple(vec<P>(indptr, "indptr"), vec<J>(indices_, "indices"),
                                                                vec<D>(data, "data"), vec<D>(x, "x"),
                                                                vec<D>(out, "out"), parallel);
                              nb::gil_scoped_release release;
                              std::apply(cc::csr_matvec<P, J, D>, args);
                          });
                      });
                  });
              });
    }
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
    nb::module_ simplex = m.def_submodule("simplex", "Kernels of bisimkit.simplex.");
    nb::module_ couplings = m.def_submodule("couplings", "Kernels of bisimkit.couplings.");
    nb::module_ compiled = m.def_submodule("compiled", "Kernels of bisimkit.compiled.");
    nb::module_ roundoff = m.def_submodule("roundoff", "Kernels of bisimkit.roundoff.");
    bind_simplex(simplex);
    bind_couplings(couplings);
    bind_compiled(compiled);
    bind_roundoff(roundoff);
    nb::dict constants;
    constants["FLOW_EPS"] = bisimkit::simplex::FLOW_EPS;
    constants["PRICE_TOL"] = bisimkit::simplex::PRICE_TOL;
    constants["BLOCK"] = bisimkit::simplex::BLOCK;
    constants["SOLVED"] = bisimkit::simplex::SOLVED;
    constants["NO_START"] = bisimkit::simplex::NO_START;
    constants["PIVOT_CAP"] = bisimkit::simplex::PIVOT_CAP;
    simplex.attr("CONSTANTS") = constants;
#ifdef _OPENMP
    m.attr("OPENMP") = true;
#else
    m.attr("OPENMP") = false;
#endif
}
