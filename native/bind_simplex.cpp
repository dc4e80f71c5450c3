// The bindings of bisimkit_native.simplex: the kernels of bisimkit/simplex.py (native/simplex.hpp).
//
// Bases are the batch's int16 (row, column) pairs (simplex.BASIS_DTYPE); the plans' state indices
// (``out_i``, ``out_j``) int32 or int64.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <tuple>

#include "bindings.hpp"
#include "simplex.hpp"

namespace bisimkit::bindings {

namespace sx = bisimkit::simplex;
using namespace nb::literals;
using B = std::int16_t;  // simplex.BASIS_DTYPE

namespace {

sx::Scratch scratch(nb::handle ws) {
    auto field = [&](const char *name) { return nb::cast<Out>(ws.attr(name)); };
    const Out adj = field("adj"), deg = field("deg"), er = field("edge_row"), ec = field("edge_col"),
              pe = field("parent_edge"), depth = field("depth"), stack = field("stack"), cycle = field("cycle"),
              left = field("left"), pot = field("pot"), rr = field("rest_row"), rc = field("rest_col"),
              done = field("done");
    return {mat<i64>(adj, "ws.adj"),      vec<i64>(deg, "ws.deg"),         vec<i64>(er, "ws.edge_row"),
            vec<i64>(ec, "ws.edge_col"),  vec<i64>(pe, "ws.parent_edge"),  vec<i64>(depth, "ws.depth"),
            vec<i64>(stack, "ws.stack"),  vec<i64>(cycle, "ws.cycle"),     vec<i64>(left, "ws.left"),
            vec<double>(pot, "ws.pot"),   vec<double>(rr, "ws.rest_row"),  vec<double>(rc, "ws.rest_col"),
            vec<bool>(done, "ws.done")};
}

/// The arguments ``D, xptr, xidx, xdat, src, yptr, yidx, ydat, dst, zero_diagonal, kernel_max, off, basis, warm,
/// kept, costs, gaps, state, out_i, out_j, out_mass`` of the ``_solve_rows`` kernels, as views (``J``: the element
/// type of the CSR index arrays, ``O``: that of ``out_i``).
template <class J, class O>
auto rows_args(const In &D, const In &xptr, const In &xidx, const In &xdat, const In &src, const In &yptr,
               const In &yidx, const In &ydat, const In &dst, nb::handle zero_diagonal, i64 kernel_max, const In &off,
               const Out &basis, const Out &warm, const Out &kept, const Out &costs, const Out &gaps,
               const Out &state, const Out &out_i, const Out &out_j, const Out &out_mass) {
    return std::make_tuple(mat<double>(D, "D"), vec<J>(xptr, "xptr"), vec<J>(xidx, "xidx"), vec<double>(xdat, "xdat"),
                           vec<i64>(src, "src"), vec<J>(yptr, "yptr"), vec<J>(yidx, "yidx"),
                           vec<double>(ydat, "ydat"), vec<i64>(dst, "dst"), truth(zero_diagonal), kernel_max,
                           vec<i64>(off, "off"), mat<B>(basis, "basis"), vec<bool>(warm, "warm"),
                           vec<bool>(kept, "kept"), vec<double>(costs, "costs"), vec<double>(gaps, "gaps"), vec<std::int8_t>(state, "state"),
                           vec<O>(out_i, "out_i"), vec<O>(out_j, "out_j"), vec<double>(out_mass, "out_mass"));
}

/// ``f(J{}, O{})`` for the CSR index type J of ``xidx`` and the plan index type O of ``out_i``.
template <class F> void rows_types(const In &xidx, const Out &out_i, F &&f) {
    indices(xidx, "xidx", [&](auto index_type) {
        indices(out_i, "out_i", [&](auto out_type) { f(index_type, out_type); });
    });
}

/// The arguments ``a, b, C, k, l, flows, costs, gaps, ok, pivots, basis, off, warm`` of the
/// ``_solve_batch`` kernels, as views.
auto batch(const In &a, const In &b, const In &C, const In &k, const In &l, const Out &flows, const Out &costs,
           const Out &gaps, const Out &ok, const Out &pivots, const Out &basis, const In &off, const In &warm) {
    return std::make_tuple(mat<double>(a, "a"), mat<double>(b, "b"), cube<double>(C, "C"), vec<i64>(k, "k"),
                           vec<i64>(l, "l"), cube<double>(flows, "flows"), vec<double>(costs, "costs"),
                           vec<double>(gaps, "gaps"), vec<bool>(ok, "ok"), vec<i64>(pivots, "pivots"),
                           mat<B>(basis, "basis"), vec<i64>(off, "off"), vec<bool>(warm, "warm"));
}

}  // namespace

void bind_simplex(nb::module_ m) {
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
        return std::apply(called(&sx::greedy_basis<Mat<double>, Vec<i64>, Mat<i64>>), args);
    });
    m.def("_warm_basis", [](In a, In b, i64 k, i64 l, Out flow, Out er, Out ec, Out adj, Out deg, In br, In bc,
                            Out rs, Out rd, Out left, Out done, Out stack) {
        return sx::warm_basis(vec<double>(a, "a"), vec<double>(b, "b"), k, l, mat<double>(flow, "flow"),
                              vec<i64>(er, "er"), vec<i64>(ec, "ec"), mat<i64>(adj, "adj"), vec<i64>(deg, "deg"),
                              vec<B>(br, "br"), vec<B>(bc, "bc"), vec<double>(rs, "rs"), vec<double>(rd, "rd"),
                              vec<i64>(left, "left"), vec<bool>(done, "done"), vec<i64>(stack, "stack"));
    });
    m.def("_tree_basis", [](i64 k, i64 l, Out er, Out ec, Out adj, Out deg, In br, In bc) {
        return sx::tree_basis(k, l, vec<i64>(er, "er"), vec<i64>(ec, "ec"), mat<i64>(adj, "adj"),
                              vec<i64>(deg, "deg"), vec<B>(br, "br"), vec<B>(bc, "bc"));
    });
    m.def("_peel_flows", [](In a, In b, i64 k, i64 l, Out flow, In er, In ec, In adj, In deg, Out rs, Out rd,
                            Out left, Out done, Out stack) {
        return sx::peel_flows(vec<double>(a, "a"), vec<double>(b, "b"), k, l, mat<double>(flow, "flow"),
                              vec<i64>(er, "er"), vec<i64>(ec, "ec"), mat<i64>(adj, "adj"), vec<i64>(deg, "deg"),
                              vec<double>(rs, "rs"), vec<double>(rd, "rd"), vec<i64>(left, "left"),
                              vec<bool>(done, "done"), vec<i64>(stack, "stack"));
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
                           nb::handle kept, nb::handle ws) {
        const auto args = std::make_tuple(vec<double>(a, "a"), vec<double>(b, "b"), mat<double>(C, "C"), k, l,
                                          mat<double>(flow, "flow"), vec<B>(basis_row, "basis_row"),
                                          vec<B>(basis_col, "basis_col"), truth(warm), truth(kept), scratch(ws));
        nb::gil_scoped_release release;
        return std::apply(called(&sx::solve_one<B, Mat<double>, sx::Scratch>), args);
    });
    m.def("_cost_range", [](In C, i64 k, i64 l) {
        const auto [scale, floor] = sx::cost_range(mat<double>(C, "C"), k, l);
        return std::make_tuple(scale, floor);
    });
    m.def("_forced_plan", [](In a, In b, In C, i64 k, i64 l, Out flow, Out basis_row, Out basis_col, nb::handle ws) {
        const auto args = std::make_tuple(vec<double>(a, "a"), vec<double>(b, "b"), mat<double>(C, "C"), k, l,
                                          mat<double>(flow, "flow"), vec<B>(basis_row, "basis_row"),
                                          vec<B>(basis_col, "basis_col"), scratch(ws));
        nb::gil_scoped_release release;
        return std::apply(called(&sx::forced_plan<B, Mat<double>, sx::Scratch>), args);
    });
    m.def("_plan_gap", [](In a, In b, i64 k, i64 l, In flow, In edge_row, In edge_col, In pot, double cost,
                          double violation, double scale, double floor, Out rows, Out cols) {
        return sx::plan_gap(vec<double>(a, "a"), vec<double>(b, "b"), k, l, mat<double>(flow, "flow"),
                            vec<i64>(edge_row, "edge_row"), vec<i64>(edge_col, "edge_col"), vec<double>(pot, "pot"),
                            cost, violation, scale, floor, vec<double>(rows, "rows"), vec<double>(cols, "cols"));
    });
    m.def("_basis_from_flow", [](In flow, In C, i64 k, i64 l, Out br, Out bc) {
        return sx::basis_from_flow(mat<double>(flow, "flow"), mat<double>(C, "C"), k, l, vec<B>(br, "br"),
                                   vec<B>(bc, "bc"));
    });
    m.def("_basis_from_flow_at", [](In flows, In C, In k, In l, Out basis, In off, Out ok, i64 p) {
        sx::basis_from_flow_at(cube<double>(flows, "flows"), cube<double>(C, "C"), vec<i64>(k, "k"), vec<i64>(l, "l"),
                               mat<B>(basis, "basis"), vec<i64>(off, "off"), vec<bool>(ok, "ok"), p);
    });
    for (const bool parallel : {true, false}) {
        m.def(parallel ? "_bases_from_flows" : "_bases_from_flows_serial",
              [parallel](In flows, In C, In k, In l, Out basis, In off, Out ok) {
                  const auto args = std::make_tuple(cube<double>(flows, "flows"), cube<double>(C, "C"),
                                                    vec<i64>(k, "k"), vec<i64>(l, "l"), mat<B>(basis, "basis"),
                                                    vec<i64>(off, "off"), vec<bool>(ok, "ok"), parallel);
                  nb::gil_scoped_release release;
                  std::apply(called(&sx::bases_from_flows<B>), args);
              });
    }
    m.def("_solve_block", [](In a, In b, In C, In k, In l, Out flows, Out costs, Out gaps, Out ok, Out pivots,
                             Out basis, In off, In warm, i64 blk, i64 nmax, i64 dmax) {
        const auto args = std::tuple_cat(batch(a, b, C, k, l, flows, costs, gaps, ok, pivots, basis, off, warm),
                                         std::make_tuple(blk, nmax, dmax));
        nb::gil_scoped_release release;
        std::apply(called(&sx::solve_block<B>), args);
    });
    for (const bool parallel : {true, false}) {
        m.def(parallel ? "_solve_batch" : "_solve_batch_serial",
              [parallel](In a, In b, In C, In k, In l, Out flows, Out costs, Out gaps, Out ok, Out pivots, Out basis,
                         In off, In warm, i64 nmax, i64 dmax) {
                  const auto args = std::tuple_cat(
                      batch(a, b, C, k, l, flows, costs, gaps, ok, pivots, basis, off, warm),
                      std::make_tuple(nmax, dmax, parallel));
                  nb::gil_scoped_release release;
                  std::apply(called(&sx::solve_batch<B>), args);
              });
    }
    m.def("_solve_rows_one",
          [](In D, In xptr, In xidx, In xdat, In src, In yptr, In yidx, In ydat, In dst, nb::handle zero_diagonal,
             i64 kernel_max, In off, Out basis, Out warm, Out kept, Out costs, Out gaps, Out state, Out out_i, Out out_j,
             Out out_mass, i64 p, Out cbuf, Out fbuf, nb::handle ws) {
              const sx::Scratch space = scratch(ws);
              rows_types(xidx, out_i, [&](auto index_type, auto out_type) {
                  using J = decltype(index_type);
                  using O = decltype(out_type);
                  const auto args = std::tuple_cat(
                      rows_args<J, O>(D, xptr, xidx, xdat, src, yptr, yidx, ydat, dst, zero_diagonal, kernel_max, off,
                                      basis, warm, kept, costs, gaps, state, out_i, out_j, out_mass),
                      std::make_tuple(p, line<double>(cbuf, "cbuf"), line<double>(fbuf, "fbuf"), space));
                  nb::gil_scoped_release release;
                  std::apply(called(&sx::solve_rows_one<J, B, O, sx::Scratch>), args);
              });
          });
    m.def("_solve_rows_block",
          [](In D, In xptr, In xidx, In xdat, In src, In yptr, In yidx, In ydat, In dst, nb::handle zero_diagonal,
             i64 kernel_max, In off, Out basis, Out warm, Out kept, Out costs, Out gaps, Out state, Out out_i, Out out_j,
             Out out_mass, i64 blk, i64 nmax, i64 dmax, i64 cmax) {
              rows_types(xidx, out_i, [&](auto index_type, auto out_type) {
                  using J = decltype(index_type);
                  using O = decltype(out_type);
                  const auto args = std::tuple_cat(
                      rows_args<J, O>(D, xptr, xidx, xdat, src, yptr, yidx, ydat, dst, zero_diagonal, kernel_max, off,
                                      basis, warm, kept, costs, gaps, state, out_i, out_j, out_mass),
                      std::make_tuple(blk, nmax, dmax, cmax));
                  nb::gil_scoped_release release;
                  std::apply(called(&sx::solve_rows_block<J, B, O>), args);
              });
          });
    for (const bool parallel : {true, false}) {
        m.def(parallel ? "_solve_rows" : "_solve_rows_serial",
              [parallel](In D, In xptr, In xidx, In xdat, In src, In yptr, In yidx, In ydat, In dst,
                         nb::handle zero_diagonal, i64 kernel_max, In off, Out basis, Out warm, Out kept, Out costs,
                         Out gaps, Out state, Out out_i, Out out_j, Out out_mass, i64 nmax, i64 dmax, i64 cmax) {
                  rows_types(xidx, out_i, [&](auto index_type, auto out_type) {
                      using J = decltype(index_type);
                      using O = decltype(out_type);
                      const auto args = std::tuple_cat(
                          rows_args<J, O>(D, xptr, xidx, xdat, src, yptr, yidx, ydat, dst, zero_diagonal, kernel_max,
                                          off, basis, warm, kept, costs, gaps, state, out_i, out_j, out_mass),
                          std::make_tuple(nmax, dmax, cmax, parallel));
                      nb::gil_scoped_release release;
                      std::apply(called(&sx::solve_rows<J, B, O>), args);
                  });
              });
    }
    m.def("_line_basis", [](In xs, In a, i64 k, In ys, In b, i64 l, In h, Out br, Out bc) {
        sx::line_basis(vec<i64>(xs, "xs"), vec<double>(a, "a"), k, vec<i64>(ys, "ys"), vec<double>(b, "b"), l,
                       vec<double>(h, "h"), vec<B>(br, "br"), vec<B>(bc, "bc"));
    });
    m.def("_line_bases", [](In xs, In a, In k, In ys, In b, In l, In h, Out basis, In off, Out valid) {
        const auto args = std::make_tuple(mat<i64>(xs, "xs"), mat<double>(a, "a"), vec<i64>(k, "k"),
                                          mat<i64>(ys, "ys"), mat<double>(b, "b"), vec<i64>(l, "l"),
                                          vec<double>(h, "h"), mat<B>(basis, "basis"), vec<i64>(off, "off"),
                                          vec<bool>(valid, "valid"));
        nb::gil_scoped_release release;
        std::apply(called(&sx::line_bases<i64, B>), args);
    });
    m.def("_marginal_gaps", [](In C, In xptr, In xidx, In src, In yptr, In yidx, In dst, In state, In marginal,
                               Out gaps) {
        indices(xidx, "xidx", [&](auto index_type) {
            using J = decltype(index_type);
            const auto args = std::make_tuple(mat<double>(C, "C"), vec<J>(xptr, "xptr"), vec<J>(xidx, "xidx"),
                                              vec<i64>(src, "src"), vec<J>(yptr, "yptr"), vec<J>(yidx, "yidx"),
                                              vec<i64>(dst, "dst"), vec<std::int8_t>(state, "state"),
                                              vec<double>(marginal, "marginal"), vec<double>(gaps, "gaps"));
            nb::gil_scoped_release release;
            std::apply(called(&sx::marginal_gaps<J>), args);
        });
    });
    nb::dict constants;
    constants["FLOW_EPS"] = sx::FLOW_EPS;
    constants["PRICE_TOL"] = sx::PRICE_TOL;
    constants["BLOCK"] = sx::BLOCK;
    constants["SOLVED"] = sx::SOLVED;
    constants["NO_START"] = sx::NO_START;
    constants["PIVOT_CAP"] = sx::PIVOT_CAP;
    constants["ROW_SOLVED"] = sx::ROW_SOLVED;
    constants["ROW_EXACT"] = sx::ROW_EXACT;
    constants["ROW_LEFT"] = sx::ROW_LEFT;
    constants["BASIS_BITS"] = 8 * static_cast<int>(sizeof(B));
    m.attr("CONSTANTS") = constants;
}

}  // namespace bisimkit::bindings
