// bisimkit_native: the kernels of bisimkit, compiled when the package is installed.
//
// One submodule per Python module that defines kernels (simplex, couplings, compiled, relations, roundoff, lmc,
// quotient); each function has the name and the arguments of its kernel there (numpy arrays in, outputs written
// in place, the same return value). bisimkit.kernels calls these in place of the Python bodies. The
// bindings of the simplex are in bind_simplex.cpp, those of the other kernels here.
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <tuple>

#include "bindings.hpp"
#include "compiled.hpp"
#include "couplings.hpp"
#include "lmc.hpp"
#include "quotient.hpp"
#include "relations.hpp"
#include "roundoff.hpp"

namespace bisimkit::bindings {

// ---------------------------------------------------------------------------------------- couplings
namespace cp = bisimkit::couplings;

void bind_couplings(nb::module_ m) {
    m.def("_row_breakpoints", [](In data, i64 lo, i64 hi, Out out) {
        cp::row_breakpoints(vec<double>(data, "data"), lo, hi, vec<double>(out, "out"));
    });
    m.def("_csr_breakpoints", [](In indptr, In data, Out out) {
        const auto args = std::make_tuple(vec<i64>(indptr, "indptr"), vec<double>(data, "data"), vec<double>(out, "out"));
        nb::gil_scoped_release release;
        std::apply(called(&cp::csr_breakpoints<i64, double>), args);
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
        std::apply(called(&cp::merge_rows<i64, i64>), args);
    });
    m.def("_gather_rows", [](In indptr, In indices_, In data, In rows, Out index, Out mass) {
        indices(indices_, "indices", [&](auto type) {
            using I = decltype(type);
            const auto args = std::make_tuple(vec<i64>(indptr, "indptr"), vec<I>(indices_, "indices"),
                                              vec<double>(data, "data"), vec<i64>(rows, "rows"),
                                              mat<i64>(index, "index"), mat<double>(mass, "mass"));
            nb::gil_scoped_release release;
            std::apply(called(&cp::gather_rows<i64, I, double, i64, double>), args);
        });
    });
}

// ----------------------------------------------------------------------------------------- compiled
namespace cc = bisimkit::compiled;

namespace {

/// ``f(args, C{}, X{})`` with the views ``off, ci, cj, mass, row_pair, row_weight, index, indptr, indices, data`` of
/// the kernels that write a pair system from plan slots (``indptr`` of element type P), C the cell type of ``ci``
/// and X the index type of ``index``.
template <class P, class A, class F>
decltype(auto) slot_fill(const In &off, const In &ci, const In &cj, const In &mass, const In &row_pair,
                         const In &row_weight, const In &index, const A &indptr, const Out &indices_, const Out &data,
                         F &&f) {
    return indices(ci, "ci", [&](auto cell_type) {
        return indices(index, "index", [&](auto index_type) {
            using C = decltype(cell_type);
            using X = decltype(index_type);
            const auto args = std::make_tuple(
                vec<i64>(off, "off"), vec<C>(ci, "ci"), vec<C>(cj, "cj"), vec<double>(mass, "mass"),
                vec<i64>(row_pair, "row_pair"), vec<double>(row_weight, "row_weight"), mat<X>(index, "index"),
                vec<P>(indptr, "indptr"), vec<std::int32_t>(indices_, "indices"), vec<double>(data, "data"));
            return f(args, C{}, X{});
        });
    });
}

}  // namespace

void bind_compiled(nb::module_ m) {
    m.def("_count_slots", [](In off, In ci, In cj, In mass, In row_pair, In index, Out counts) {
        indices(ci, "ci", [&](auto cell_type) {
            indices(index, "index", [&](auto index_type) {
                using C = decltype(cell_type);
                using X = decltype(index_type);
                const auto args = std::make_tuple(vec<i64>(off, "off"), vec<C>(ci, "ci"), vec<C>(cj, "cj"),
                                                  vec<double>(mass, "mass"), vec<i64>(row_pair, "row_pair"),
                                                  mat<X>(index, "index"), vec<i64>(counts, "counts"));
                nb::gil_scoped_release release;
                std::apply(called(&cc::count_slots<C, i64, X>), args);
            });
        });
    });
    m.def("_fill_slots", [](In off, In ci, In cj, In mass, In row_pair, In row_weight, In index, In indptr,
                            Out indices_, Out data) {
        slot_fill<i64>(off, ci, cj, mass, row_pair, row_weight, index, indptr, indices_, data,
                       [](const auto &args, auto cell_type, auto index_type) {
                           using C = decltype(cell_type);
                           using X = decltype(index_type);
                           nb::gil_scoped_release release;
                           std::apply(called(&cc::fill_slots<C, i64, X, i64, std::int32_t, double>), args);
                       });
    });
    m.def("_fill_in_order", [](In off, In ci, In cj, In mass, In row_pair, In row_weight, In index, Out indptr,
                               Out indices_, Out data) {
        return slot_fill<std::int32_t>(
            off, ci, cj, mass, row_pair, row_weight, index, indptr, indices_, data,
            [](const auto &args, auto cell_type, auto index_type) {
                using C = decltype(cell_type);
                using X = decltype(index_type);
                nb::gil_scoped_release release;
                return std::apply(called(&cc::fill_in_order<C, i64, X, std::int32_t, std::int32_t, double>), args);
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
                std::apply(called(&cc::eps_bar_pass<X, std::int32_t, D>), args);
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
                              std::apply(called(&cc::csr_matvec<P, J, D>), args);
                          });
                      });
                  });
              });
    }
    m.def("_csr_residual", [](In indptr, In indices_, In data, In b, double c, In x, Out out) {
        return indices(indptr, "indptr", [&](auto pointer_type) {
            return indices(indices_, "indices", [&](auto index_type) {
                using P = decltype(pointer_type);
                using J = decltype(index_type);
                const auto args = std::make_tuple(vec<P>(indptr, "indptr"), vec<J>(indices_, "indices"),
                                                  vec<double>(data, "data"), vec<double>(b, "b"), c,
                                                  vec<double>(x, "x"), vec<double>(out, "out"));
                nb::gil_scoped_release release;
                return std::apply(called(&cc::csr_residual<P, J>), args);
            });
        });
    });
    m.def("lower_mass", [](In indptr, In indices_, In data) {
        return indices(indptr, "indptr", [&](auto pointer_type) {
            return indices(indices_, "indices", [&](auto index_type) {
                return floats(data, "data", [&](auto data_type) {
                    using P = decltype(pointer_type);
                    using J = decltype(index_type);
                    using D = decltype(data_type);
                    const auto args =
                        std::make_tuple(vec<P>(indptr, "indptr"), vec<J>(indices_, "indices"), vec<D>(data, "data"));
                    nb::gil_scoped_release release;
                    return std::apply(called(&cc::lower_mass<P, J, D>), args);
                });
            });
        });
    });
    m.def("scc_gauss_seidel", [](In members, In indptr, In indices_, In data, In rhs, Out x, Out local,
                                  i64 max_sweeps, double target) {
        return indices(indptr, "indptr", [&](auto pointer_type) {
            return indices(indices_, "indices", [&](auto index_type) {
                using P = decltype(pointer_type);
                using J = decltype(index_type);
                const auto args = std::make_tuple(
                    vec<i64>(members, "members"), vec<P>(indptr, "indptr"), vec<J>(indices_, "indices"),
                    vec<double>(data, "data"), mat<double>(rhs, "rhs"), mat<double>(x, "x"), vec<i64>(local, "local"),
                    max_sweeps, target);
                nb::gil_scoped_release release;
                return std::apply(called(&cc::scc_gauss_seidel<P, J>), args);
            });
        });
    });
}

// ---------------------------------------------------------------------------------------- relations
void bind_relations(nb::module_ m) {
    m.def("_refine_blocks", [](In indptr, In indices_, In data, i64 m_, In initial, double atol, Out labels) {
        return indices(indptr, "indptr", [&](auto pointer_type) {
            return indices(indices_, "indices", [&](auto index_type) {
                using P = decltype(pointer_type);
                using J = decltype(index_type);
                const auto args = std::make_tuple(vec<P>(indptr, "indptr"), vec<J>(indices_, "indices"),
                                                  vec<double>(data, "data"), m_, vec<i64>(initial, "initial"), atol,
                                                  vec<i64>(labels, "labels"));
                nb::gil_scoped_release release;
                return std::apply(called(&bisimkit::relations::refine_blocks<P, J>), args);
            });
        });
    });
}

// ----------------------------------------------------------------------------------------- roundoff
void bind_roundoff(nb::module_ m) {
    m.def("_breakpoint_errors", [](In indptr, In data, Out out) {
        const auto args = std::make_tuple(vec<i64>(indptr, "indptr"), vec<double>(data, "data"), vec<double>(out, "out"));
        nb::gil_scoped_release release;
        std::apply(called(&bisimkit::roundoff::breakpoint_errors<i64, double>), args);
    });
    m.def("_csr_row_defects", [](In indptr, In data, nb::handle compensated, Out out) {
        indices(indptr, "indptr", [&](auto type) {
            using P = decltype(type);
            const auto args = std::make_tuple(vec<P>(indptr, "indptr"), vec<double>(data, "data"), truth(compensated),
                                              vec<double>(out, "out"));
            nb::gil_scoped_release release;
            std::apply(called(&bisimkit::roundoff::csr_row_defects<P>), args);
        });
    });
}

// ---------------------------------------------------------------------------------------------- lmc
namespace lm = bisimkit::lmc;

void bind_lmc(nb::module_ m) {
    m.def("_tree_dual_bounds", [](In basis, In C, In a, In b, double law_error, Out low) {
        integers(basis, "basis", [&](auto type) {
            using B = decltype(type);
            const auto args = std::make_tuple(cube<B>(basis, "basis"), cube<double>(C, "C"), mat<double>(a, "a"),
                                              mat<double>(b, "b"), law_error, vec<double>(low, "low"));
            nb::gil_scoped_release release;
            std::apply(called(&lm::tree_dual_bounds<B>), args);
        });
    });
    m.def("_scc_sweep", [](In scc_ptr, In members, i64 first, i64 last, In indptr, In indices_, In data, In rhs,
                           Out x, Out local) {
        indices(indptr, "indptr", [&](auto pointer_type) {
            indices(indices_, "indices", [&](auto index_type) {
                using P = decltype(pointer_type);
                using J = decltype(index_type);
                const auto args = std::make_tuple(
                    vec<i64>(scc_ptr, "scc_ptr"), vec<i64>(members, "members"), first, last, vec<P>(indptr, "indptr"),
                    vec<J>(indices_, "indices"), vec<double>(data, "data"), mat<double>(rhs, "rhs"),
                    mat<double>(x, "x"), vec<i64>(local, "local"));
                nb::gil_scoped_release release;
                std::apply(called(&lm::scc_sweep<P, J>), args);
            });
        });
    });
}

// ----------------------------------------------------------------------------------------- quotient
void bind_quotient(nb::module_ m) {
    m.def("_block_tv", [](In indptr, In indices_, In data, In labels, In q_indptr, In q_indices, In q_data, In rows_x,
                          In rows_y, Out mass, Out out) {
        indices(indptr, "indptr", [&](auto x_type) {
            indices(q_indptr, "q_indptr", [&](auto y_type) {
                using I = decltype(x_type);
                using J = decltype(y_type);
                const auto args = std::make_tuple(
                    vec<I>(indptr, "indptr"), vec<I>(indices_, "indices"), vec<double>(data, "data"),
                    vec<i64>(labels, "labels"), vec<J>(q_indptr, "q_indptr"), vec<J>(q_indices, "q_indices"),
                    vec<double>(q_data, "q_data"), vec<i64>(rows_x, "rows_x"), vec<i64>(rows_y, "rows_y"),
                    vec<double>(mass, "mass"), vec<double>(out, "out"));
                nb::gil_scoped_release release;
                std::apply(called(&bisimkit::quotient::block_tv<I, J>), args);
            });
        });
    });
    m.def("_gather_block_rows", [](In indptr, In indices_, In data, In rows, In labels, Out stamp, Out mass,
                                   Out out_indptr, Out out_indices, Out out_data) {
        return indices(indptr, "indptr", [&](auto in_type) {
            return indices(out_indptr, "out_indptr", [&](auto out_type) {
                using I = decltype(in_type);
                using O = decltype(out_type);
                const auto args = std::make_tuple(
                    vec<I>(indptr, "indptr"), vec<I>(indices_, "indices"), vec<double>(data, "data"),
                    vec<i64>(rows, "rows"), vec<i64>(labels, "labels"), vec<i64>(stamp, "stamp"),
                    vec<double>(mass, "mass"), vec<O>(out_indptr, "out_indptr"), vec<O>(out_indices, "out_indices"),
                    vec<double>(out_data, "out_data"));
                nb::gil_scoped_release release;
                return std::apply(called(&bisimkit::quotient::gather_block_rows<I, O>), args);
            });
        });
    });
}

}  // namespace bisimkit::bindings

NB_MODULE(bisimkit_native, m) {
    namespace bk = bisimkit::bindings;
    m.doc() = "The kernels of bisimkit, compiled when the package is installed (bisimkit.kernels calls them).";
    bk::bind_simplex(m.def_submodule("simplex", "Kernels of bisimkit.simplex."));
    bk::bind_couplings(m.def_submodule("couplings", "Kernels of bisimkit.couplings."));
    bk::bind_compiled(m.def_submodule("compiled", "Kernels of bisimkit.compiled."));
    bk::bind_relations(m.def_submodule("relations", "Kernels of bisimkit.relations."));
    bk::bind_roundoff(m.def_submodule("roundoff", "Kernels of bisimkit.roundoff."));
    bk::bind_lmc(m.def_submodule("lmc", "Kernels of bisimkit.lmc."));
    bk::bind_quotient(m.def_submodule("quotient", "Kernels of bisimkit.quotient."));
#ifdef _OPENMP
    m.attr("OPENMP") = true;
#else
    m.attr("OPENMP") = false;
#endif
}
