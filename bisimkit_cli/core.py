"""The core commands of the ``bisimkit`` command line: solve, relation, info, examples, metrics.

Bad input never produces a traceback: it prints one line ``bisimkit: error: ...``
naming the field and index, and exits with status 2. So does a solve whose memory estimate does
not fit (``--force`` overrides, :mod:`bisimkit.memory`); one that runs out of memory all the same
prints one line and exits with status 3, with nothing half-written.

This module imports only the core library, so a core command starts without the upper layers.
Commands built on them (``verify``, which needs :mod:`validation` and :mod:`figures`, and
``compare``) are added by :mod:`bisimkit_cli.main` through the ``commands`` hook of
:func:`build_parser` and :func:`main`; see ``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bisimkit import __version__
from bisimkit.errors import InputError
from bisimkit.examples import EXAMPLES, example
from bisimkit.files import atomic_write, atomic_write_json, atomic_write_text, check_output, file_error_line
from bisimkit.gaussian.model import is_gaussian_file, load_gaussian
from bisimkit.ground import resolve_ground
from bisimkit.gym import load_gym_spec
from bisimkit.mdp import ROW_TOLERANCE, FiniteMDP, coordinate_independent, load_mdp
from bisimkit.operators import (
    ACTION_ORDER_METRICS,
    BETWEEN_METRICS,
    GROUND_METRICS,
    GROUND_RELATIONS,
    LABELLED_CHAIN_METRICS,
    METRIC_NAMES,
    OPERATORS,
    QUERY_METRICS,
    STATE_ORDER_METRICS,
    operator,
)
from bisimkit.order import resolve_order
from bisimkit.progress import solve_progress
from bisimkit.quotient import QUOTIENT_METRICS
from bisimkit.relations import RELATION_ATOL, RELATION_KINDS, relation_blocks
from bisimkit.separable import separability
from bisimkit.solvers import (
    BACKENDS,
    DEFAULT_TOL,
    METHODS,
    TORCH_METRICS,
    PrecisionWarning,
    Solution,
    ZeroGroundWarning,
    solve,
)

EXIT_INPUT = 2
#: A solve that ran out of memory all the same (one line; outputs are written atomically, so none is half-written).
EXIT_MEMORY = 3
#: A file that could not be read or written during the work (disk full, a folder removed meanwhile): one line.
EXIT_IO = 4


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        raise InputError(message)


#: Suffixes of the model-checking files (Storm's DRN, PRISM's explicit export) that the model options apply to.
MODEL_FILE_SUFFIXES = (".drn", ".tra")
#: The options a model file takes (``--reward``, ``--discount``, ``--policy``) as argparse destinations.
MODEL_OPTIONS = ("reward", "discount", "policy")


def load_mdp_or_example(spec: str, args=None) -> FiniteMDP:
    """Load an MDP file, build the bundled example of that name, or import a tabular Gymnasium
    environment named ``gym:ID[?key=value&...]`` (:mod:`bisimkit.gym`; the ``gym`` extra).

    A model file from a model checker (``.drn``, ``.tra``) takes the options ``--reward``, ``--discount`` and
    ``--policy`` of ``args`` (:func:`bisimkit.load_mdp`); anything else refuses them in one line."""
    given = model_options(spec, args)
    if spec.startswith("gym:") and not Path(spec).exists():
        return load_gym_spec(spec)
    if not Path(spec).exists() and spec in EXAMPLES:
        return example(spec)
    if not Path(spec).exists():
        raise InputError(f"{spec}: no such file (bundled examples: {', '.join(EXAMPLES)})")
    if given.get("policy") not in (None, "uniform"):
        given["policy"] = _policy_file(given["policy"])
    reward = given.get("reward")
    if reward is not None and ":" in reward and reward.partition(":")[0] in ("label", "reward"):
        given["kind"], _, given["reward"] = reward.partition(":")
    return load_mdp(spec, **given)


def model_options(spec: str, args) -> dict:
    """The model-file options given in ``args`` (``{name: value}``), refused in one line unless ``spec`` is a
    model file."""
    given = {name: getattr(args, name, None) for name in MODEL_OPTIONS}
    given = {name: value for name, value in given.items() if value is not None}
    if given and Path(spec).suffix.lower() not in MODEL_FILE_SUFFIXES:
        option = "--" + next(iter(given))
        raise InputError(
            f"{option}: applies to model files ({', '.join(MODEL_FILE_SUFFIXES)}); {spec} carries its "
            f"own {'rewards' if option == '--reward' else option[2:]}"
        )
    if given.get("discount", 0.0) >= 1.0:
        raise InputError(
            f"--discount: {given['discount']:g} is not in [0, 1); c = 1 is for the labelled-chain "
            f"distance (--metric {', '.join(LABELLED_CHAIN_METRICS)})"
        )
    return given


def _policy_file(path: str) -> np.ndarray:
    """The (n, m) policy array of ``--policy FILE`` (.npy, or .json holding a list of rows)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"--policy: {path}: no such file (give 'uniform' or a .npy/.json file with an (n, m) array)")
    try:
        if file.suffix.lower() == ".npy":
            return np.load(file, allow_pickle=False)
        if file.suffix.lower() == ".json":
            return np.asarray(json.loads(file.read_text(encoding="utf-8")), dtype=np.float64)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--policy: {path}: cannot read an (n, m) array ({exc})") from None
    raise InputError(f"--policy: {path}: unsupported file type '{file.suffix}' (use .npy or .json)")


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The options of a model file from a model checker (``.drn``, ``.tra``): what its rewards, discount and
    policy are, which such a model does not carry (``docs/cli.md#model-files``)."""
    g = p.add_argument_group("model files (Storm's .drn, PRISM's explicit .tra with .lab and reward files)")
    g.add_argument(
        "--reward",
        default=None,
        metavar="NAME",
        help="a label (its indicator is the reward) or a reward structure of the model; label:NAME or "
        "reward:NAME for a name that is both (default: none, every reward 0)",
    )
    g.add_argument(
        "--discount",
        type=_discount,
        default=None,
        metavar="C",
        help="discount factor c in [0, 1) (default 0.9); --metric "
        f"{', '.join(LABELLED_CHAIN_METRICS)}: c in (0, 1] for any MDP file "
        "(default the model's own)",
    )
    g.add_argument(
        "--policy",
        default=None,
        metavar="POLICY",
        help="an MDP's policy: uniform, or a .npy/.json file with an (n, m) array (a Markov chain has its own)",
    )


# ------------------------------------------------------------------- solve
def _checked_out(out: str | None, suffixes: tuple[str, ...] = (".npy", ".json", ".csv"), kind: str = "") -> None:
    """Refuse an ``--out`` of another file type, or one that cannot be written (before any work)."""
    if not out:
        return
    if Path(out).suffix.lower() not in suffixes:
        raise InputError(
            f"--out: unsupported file type '{Path(out).suffix}'{kind} (use {', '.join(suffixes[:-1])} "
            f"or {suffixes[-1]})"
        )
    check_output(out)


def _write_solution(sol: Solution, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix == ".npy":
        atomic_write(path, lambda fh: np.save(fh, sol.distances))
    elif suffix == ".json":
        atomic_write_json(path, sol.to_json())
    elif suffix == ".csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        if getattr(sol, "pairs", None) is not None:  # queried pairs: one row each, with the bracket
            writer.writerow(["s", "t", "distance", "lower", "upper"])
            for (s, t), d, lo, up in zip(sol.pairs.tolist(), sol.distances, sol.lower, sol.upper):
                writer.writerow([s, t, f"{d:.17g}", f"{lo:.17g}", f"{up:.17g}"])
        else:
            for row in sol.distances:
                writer.writerow([f"{v:.17g}" for v in row])
        atomic_write_text(path, buf.getvalue())
    else:
        raise InputError(f"--out: unsupported file type '{path.suffix}' (use .npy, .json or .csv)")


def shown_distances(sol: Solution) -> tuple[np.ndarray, float]:
    """The distances as the summary shows them: entries within the certified error of 0 (and
    floating-point crumbs) are 0, since the certificate cannot tell them from 0. The solution's
    own array keeps the raw values. Returns the matrix and the threshold used."""
    D = sol.distances
    scale = float(np.max(np.abs(D))) if D.size else 0.0
    threshold = max(sol.certified_error, 4 * np.finfo(float).eps * max(scale, 1.0))
    return np.where(np.abs(D) <= threshold, 0.0, D), threshold


def summarize(mdp: FiniteMDP, sol: Solution) -> str:
    """Readable summary of a solution (values within the certified error of 0 shown as 0)."""
    D, threshold = shown_distances(sol)
    n = D.shape[0]
    off = D[~np.eye(n, dtype=bool)]
    ground = f", ground {sol.ground}" if sol.ground else ""
    status = "" if sol.converged else "  ** NOT CONVERGED: raise the iteration cap or the tolerance **"
    lines = [
        f"{mdp.label}: metric {sol.metric}{ground}; n={n}, m={mdp.n_actions}, discount={mdp.discount:g}",
        f"method: {sol.method}; iterations: {sol.iterations}; certified error: {sol.certified_error:.3e} "
        f"(tolerance {sol.tolerance:.0e}); {sol.seconds:.3f} s{status}",
    ]
    if sol.order_matters:
        lines.append(f"entangled coupling order: states {sol.order}; actions {sol.action_order}")
    if off.size:
        zero = int(np.sum(off == 0) // 2)
        lines.append(
            f"off-diagonal distances: min {off.min():.6g}, mean {off.mean():.6g}, max {off.max():.6g}; "
            f"pairs at distance 0: {zero} (values within {threshold:.1e} of 0, the certified error, "
            f"are shown as 0)"
        )
    diag = np.diag(D)
    if np.any(np.abs(diag) > 0):
        lines.append(f"diagonal: min {diag.min():.6g}, max {diag.max():.6g} (not a pseudometric)")
    if n <= 12:
        with np.printoptions(precision=6, suppress=True, linewidth=160):
            lines.append(str(D))
    else:
        lines.append("(use --out FILE.npy|.json|.csv for the full matrix)")
    return "\n".join(lines)


GAUSSIAN_ONLY = ("pairs", "samples", "horizon", "seed", "confidence")
#: The Monte Carlo settings a Gaussian ``solve`` uses when they are not given: those of
#: :func:`bisimkit.gaussian.pairs.solve_pairs` (imported only when a Gaussian MDP is solved).
MC_DEFAULTS = {"samples": 2000, "seed": 0, "confidence": 0.95}


def _ground_applies(metric: str, ground: str | None) -> None:
    """Refuse ``--ground`` with a metric that has no ground term (it would be ignored)."""
    if ground is not None and not operator(metric).uses_ground:
        raise InputError(
            f"--ground: metric '{metric}' has no ground term; --ground applies to {', '.join(GROUND_METRICS)}"
        )


def cmd_solve(args) -> int:
    if operator(args.metric).kind == "labelled-chain":
        return cmd_solve_chain(args)
    _ground_applies(args.metric, args.ground)
    if args.against is not None:
        return cmd_solve_between(args)
    model_options(args.mdp, args)
    if is_gaussian_file(args.mdp):
        return cmd_solve_gaussian(args)
    queried = args.pairs is not None and operator(args.metric).queries
    for option in GAUSSIAN_ONLY:
        if getattr(args, option) is not None and not (option == "pairs" and queried):
            hint = f"; on a finite MDP for --metric {', '.join(QUERY_METRICS + LABELLED_CHAIN_METRICS)}"
            raise InputError(
                f"--{option}: applies to Gaussian MDP files only ({args.mdp} is a finite MDP)"
                + (hint if option == "pairs" else "")
            )
    if args.method == "mc":
        raise InputError("--method mc: applies to Gaussian MDP files only (finite MDPs are solved exactly or by vi)")
    mdp = load_mdp_or_example(args.mdp, args)
    # Bad input is refused before anything is announced or computed.
    info = operator(args.metric)
    if info.uses_policy:
        mdp.require_policy(f"metric '{args.metric}'")
    ground = resolve_ground(mdp, args.ground) if info.uses_ground else None
    resolve_order(mdp, args.order, args.action_order, ground if ground is not None else "reward")
    pairs = _state_pairs(args.pairs) if queried else None  # only the queried pairs (bisimkit.query)
    _checked_out(args.out)
    return solve_and_report(
        args,
        lambda report: solve(
            mdp,
            args.metric,
            ground=args.ground,
            tol=args.tol,
            method=args.method,
            progress=report,
            max_iterations=args.max_iterations,
            order=args.order,
            action_order=args.action_order,
            quotient=not args.no_quotient,
            backend=args.backend,
            device=args.device,
            force=args.force,
            pairs=pairs,
        ),
        (ZeroGroundWarning, PrecisionWarning),
        f"n={mdp.n_states}" if pairs is None else f"{len(pairs)} pairs",
        (lambda sol: summarize(mdp, sol)) if pairs is None else summarize_queries,
    )


def summarize_queries(sol) -> str:
    """Readable summary of queried pairs (:class:`bisimkit.query.QuerySolution`): how many pairs they reach, the
    certificate, and the first 50 distances."""
    lines = [
        f"{sol.metric}: {len(sol.pairs)} queried pairs reach {sol.explored} pairs; certified error "
        f"{sol.certified_error:.3g}{'' if sol.converged else ' (NOT within tol)'}; {sol.seconds:.3g} s",
        f"method: {sol.method}",
    ]
    for (s, t), d in list(zip(sol.pairs.tolist(), sol.distances))[:50]:
        lines.append(f"d({s}, {t}) = {d:.10g}")
    if len(sol.pairs) > 50:
        lines.append(f"... {len(sol.pairs) - 50} more (--out FILE.json or .csv has them all)")
    return "\n".join(lines)


#: Options of ``solve`` that do not apply to the labelled-chain distance, and their defaults.
NOT_FOR_CHAINS = {
    "against": None,
    "method": "auto",
    "max_iterations": None,
    "order": "index",
    "action_order": "index",
    "no_quotient": False,
    "backend": BACKENDS[0],
    "device": None,
    "samples": None,
    "horizon": None,
    "seed": None,
    "confidence": None,
}


def cmd_solve_chain(args) -> int:
    """``bisimkit solve FILE --metric lmc [--discount C] [--ground G] [--pairs FILE]``: the bisimilarity distances of
    a labelled Markov chain (:mod:`bisimkit.lmc`), c in (0, 1] (default the model's own)."""
    for option, default in NOT_FOR_CHAINS.items():
        if getattr(args, option) != default and not (option == "method" and args.method == "exact"):
            raise InputError(
                f"--{option.replace('_', '-')}: does not apply to --metric {args.metric} (the "
                f"labelled-chain distance is solved by refinement, the pair graph and policy iteration "
                f"with a certified bracket)"
            )
    if is_gaussian_file(args.mdp):
        raise InputError(
            f"--metric {args.metric}: applies to labelled Markov chains ({args.mdp} is a linear-Gaussian model)"
        )
    # the discount is the distance's own (c in (0, 1]), for every kind of file: not read into the model
    mdp = load_mdp_or_example(args.mdp, argparse.Namespace(**{**vars(args), "discount": None}))
    pairs = None if args.pairs is None else _state_pairs(args.pairs)
    _checked_out(args.out)
    return solve_and_report(
        args,
        lambda report: solve(
            mdp, args.metric, ground=args.ground, tol=args.tol, discount=args.discount, pairs=pairs, force=args.force
        ),
        (PrecisionWarning,),
        f"n={mdp.n_states}" if pairs is None else f"{len(pairs)} pairs",
        lambda sol: summarize_chain(mdp, sol),
    )


def _state_pairs(path: str) -> np.ndarray:
    """The ``(q, 2)`` state pairs of ``--pairs FILE`` for a labelled chain: ``.json`` (a list of ``[s, t]``) or
    ``.npy``."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"--pairs: {path}: no such file (a .json list of [s, t] or a .npy array of shape (q, 2))")
    try:
        if file.suffix.lower() == ".npy":
            arr = np.load(file, allow_pickle=False)
        elif file.suffix.lower() == ".json":
            arr = np.asarray(json.loads(file.read_text(encoding="utf-8")))
        else:
            raise InputError(f"--pairs: {path}: unsupported file type '{file.suffix}' (use .json or .npy)")
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--pairs: {path}: cannot read state pairs ({exc})") from None
    if arr.size == 0 or arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(
            f"--pairs: {path}: expected a list of [s, t] state indices, got an array of shape "
            f"{arr.shape} and type {arr.dtype}"
        )
    return arr


def summarize_chain(mdp: FiniteMDP, sol) -> str:
    """Readable summary of a labelled-chain solution (:class:`bisimkit.lmc.LMCSolution`): the bracket, the pairs
    decided exactly, and the distances (all pairs up to 12 states, queried pairs up to 50)."""
    r = sol.result
    n = mdp.n_states
    status = "" if sol.converged else "  ** NOT CERTIFIED within the tolerance **"
    lines = [
        f"{mdp.label}: metric {sol.metric}, ground {sol.ground}; n={n}, discount={sol.discount:g}",
        f"method: {sol.method}",
        f"certified error: {sol.certified_error:.3e} (tolerance {sol.tolerance:.0e}; upper - lower); "
        f"{sol.seconds:.3f} s{status}",
        f"bisimulation classes: {r.n_classes}; pairs at distance 0: {r.zero_pairs}; at distance 1: {r.one_pairs}",
    ]
    if sol.pairs is not None:
        for (s, t), d, lo, up in list(zip(sol.pairs.tolist(), sol.distances, sol.lower, sol.upper))[:50]:
            lines.append(f"d({s}, {t}) = {d:.12g}  in [{lo:.12g}, {up:.12g}]")
        if len(sol.pairs) > 50:
            lines.append("(use --out FILE.npy|.json|.csv for every pair)")
    elif n <= 12:
        with np.printoptions(precision=6, suppress=True, linewidth=160):
            lines.append(str(sol.distances))
    else:
        lines.append("(use --out FILE.npy|.json|.csv for the full matrix)")
    return "\n".join(lines)


def solve_and_report(
    args, run: Callable, warned: tuple[type[Warning], ...], size: str, summary: Callable[[Solution], str]
) -> int:
    """The end of ``solve``: ``run(progress)`` under the progress line, the
    warnings of the classes ``warned`` as one line each, then ``--out`` written (its line names
    ``size``) or ``summary(sol)`` printed. Returns the exit status: 0 converged, 1 not."""
    line, report = solve_progress(args.metric, args.tol)
    try:
        with warnings.catch_warnings(record=True) as caught:
            for category in warned:
                warnings.simplefilter("always", category)
            sol = run(None if args.quiet else report)
    finally:
        line.close()
    for w in caught:
        if issubclass(w.category, warned):
            print(f"bisimkit: warning: {w.message}", file=sys.stderr)
    if args.out:
        _write_solution(sol, Path(args.out))
        print(
            f"wrote {args.out} ({sol.metric}, {size}, certified error {sol.certified_error:.3e}, {sol.seconds:.3f} s)"
        )
    else:
        print(summary(sol))
    return 0 if sol.converged else 1


#: Options of ``solve`` that do not apply with ``--against``, and their defaults.
NOT_WITH_AGAINST = {
    "order": "index",
    "action_order": "index",
    "no_quotient": False,
    "backend": BACKENDS[0],
    "device": None,
    "pairs": None,
    "samples": None,
    "horizon": None,
    "seed": None,
    "confidence": None,
}


def _load_side(spec: str, option: str = "", args=None) -> FiniteMDP:
    """One of the two MDPs of ``--against``; a message about its content names the file (and the
    option that gave it), so it is clear which of the two MDPs is at fault."""
    try:
        return load_mdp_or_example(spec, args)
    except InputError as exc:
        if str(exc).startswith("--"):  # an option's own message names it
            raise
        message = str(exc) if str(exc).startswith(spec) else f"{spec}: {exc}"
        raise InputError(f"{option} {message}" if option else message) from None


def cmd_solve_between(args) -> int:
    """``bisimkit solve A --against B --metric NAME``: the distances between the states of A and of B."""
    from bisimkit.between import BETWEEN_METRICS, check_between, solve_between  # start-up cost: only with --against

    for option, default in NOT_WITH_AGAINST.items():
        if getattr(args, option) != default:
            raise InputError(
                f"--{option.replace('_', '-')}: does not apply with --against (distances between "
                f"two MDPs are solved on their cross pairs, in index order, with numpy)"
            )
    for spec in (args.mdp, args.against):
        if is_gaussian_file(spec):
            raise InputError(f"--against: applies to finite MDPs only ({spec} is a linear-Gaussian model)")
    if args.method == "mc":
        raise InputError("--method mc: applies to Gaussian MDP files only (finite MDPs are solved exactly or by vi)")
    if args.metric not in BETWEEN_METRICS:
        operator(args.metric)  # an unknown name is refused as such
        raise InputError(
            f"--against: metric '{args.metric}' has no closed cross block between two MDPs (it needs "
            f"each MDP's own mico self-distances); use one of {', '.join(BETWEEN_METRICS)}"
        )
    mdp_a, mdp_b = _load_side(args.mdp, args=args), _load_side(args.against, "--against", args)
    _checked_out(args.out)
    # Bad input is refused before anything is announced or computed; the second MDP is --against.
    try:
        check_between(mdp_a, mdp_b, args.metric, args.ground, args.tol, args.method, args.max_iterations)
    except InputError as exc:
        if exc.param == "mdp_b":
            raise InputError(exc.detail, param="against") from None
        if exc.param == "mdp_a":
            raise InputError(f"{args.mdp}: {exc.detail}") from None
        raise
    return solve_and_report(
        args,
        lambda report: solve_between(
            mdp_a,
            mdp_b,
            args.metric,
            ground=args.ground,
            tol=args.tol,
            method=args.method,
            progress=report,
            max_iterations=args.max_iterations,
            force=args.force,
        ),
        (PrecisionWarning,),
        f"{mdp_a.n_states} x {mdp_b.n_states}",
        lambda sol: summarize_between(mdp_a, mdp_b, sol),
    )


def summarize_between(mdp_a: FiniteMDP, mdp_b: FiniteMDP, sol) -> str:
    """Readable summary of a :class:`bisimkit.between.BetweenSolution` (values within the certificate
    of 0 shown as 0)."""
    D, threshold = shown_distances(sol)
    ground = f", ground {sol.ground}" if sol.ground else ""
    status = "" if sol.converged else "  ** NOT CONVERGED: raise the iteration cap or the tolerance **"
    lines = [
        f"{mdp_a.label} against {mdp_b.label}: metric {sol.metric}{ground}; n={mdp_a.n_states} x {mdp_b.n_states}, "
        f"discount={mdp_a.discount:g}",
        f"method: {sol.method}; iterations: {sol.iterations}; certified error: {sol.certified_error:.3e} "
        f"(tolerance {sol.tolerance:.0e}); {sol.seconds:.3f} s{status}",
    ]
    if D.size:
        lines.append(
            f"distances: min {D.min():.6g}, mean {D.mean():.6g}, max {D.max():.6g}; pairs at distance 0: "
            f"{int(np.sum(D == 0))} (values within {threshold:.1e} of 0, the certified error, are shown as 0)"
        )
    if sol.initial_states is not None:
        i, j = sol.initial_states
        lines.append(f"initial states: d({i}, {j}) = {D[i, j]:.9g}")
    if max(D.shape) <= 12:
        with np.printoptions(precision=6, suppress=True, linewidth=160):
            lines.append(str(D))
    else:
        lines.append("(use --out FILE.npy|.json|.csv for the full matrix)")
    return "\n".join(lines)


def cmd_solve_gaussian(args) -> int:
    """``bisimkit solve MODEL.json --metric pi|psm|eps|eps-bar --pairs FILE``."""
    # start-up cost: the Gaussian solvers load scipy.special, which a finite solve does not need
    from bisimkit.gaussian.pairs import format_pairs, load_pairs, solve_pairs

    model = load_gaussian(args.mdp)
    for option in ("order", "action_order"):
        if getattr(args, option) != "index":
            raise InputError(
                f"--{option.replace('_', '-')}: applies to finite MDPs only (Gaussian MDPs have "
                f"diagonal noise, so their shared-noise coupling is the same in every coordinate order)"
            )
    if args.no_quotient:
        raise InputError("--no-quotient: applies to finite MDPs only (Gaussian MDPs are solved pair by pair)")
    if args.backend != BACKENDS[0] or args.device is not None:
        raise InputError("--backend/--device: apply to finite MDPs only (Gaussian MDPs are solved pair by pair)")
    if args.pairs is None:
        raise InputError(
            "--pairs: required for Gaussian MDPs (a .json list of [z, z'] pairs or a .npy array (P, 2, n))"
        )
    if args.method == "vi":
        raise InputError("--method vi: does not apply to Gaussian MDPs (use auto, exact or mc)")
    if args.max_iterations is not None:
        raise InputError(
            "--max-iterations: applies to finite MDPs only (a Gaussian pair's series is summed to "
            "its certified tail, a Monte Carlo rollout to --horizon)"
        )
    _checked_out(args.out, (".json", ".csv"), " for Gaussian MDPs")
    z, z2 = load_pairs(args.pairs, model.state_dim)
    mc = {name: MC_DEFAULTS[name] if getattr(args, name) is None else getattr(args, name) for name in MC_DEFAULTS}
    result = solve_pairs(model, args.metric, z, z2, ground=args.ground, method=args.method, horizon=args.horizon, **mc)
    if args.out:
        path = Path(args.out)
        if path.suffix.lower() == ".json":
            atomic_write_json(path, result.to_json())
        else:
            buf = io.StringIO()
            writer = csv.writer(buf)
            writer.writerow(["pair", "distance", "lower", "upper"])
            for i, (d, lo, hi) in enumerate(zip(result.distances, result.lower, result.upper)):
                writer.writerow([i, f"{d:.17g}", f"{lo:.17g}", f"{hi:.17g}"])
            atomic_write_text(path, buf.getvalue())
        print(f"wrote {args.out} ({result.metric}, {len(z)} pairs, {result.method}, {result.seconds:.3f} s)")
    else:
        print(format_pairs(model, result))
    return 0


# ---------------------------------------------------------- relation / info
def cmd_relation(args) -> int:
    if args.ground is not None and args.kind not in GROUND_RELATIONS:
        raise InputError(
            f"--ground: applies to --kind {', '.join(GROUND_RELATIONS)} only (the {args.kind} relation "
            f"has no ground term)"
        )
    mdp = load_mdp_or_example(args.mdp, args)
    ground = resolve_ground(mdp, args.ground) if args.kind in GROUND_RELATIONS else "reward"
    print(json.dumps(relation_blocks(mdp, args.kind, ground, atol=args.atol)))
    return 0


def describe_mdp(mdp: FiniteMDP) -> str:
    """Sizes and a validation report."""
    n, m = mdp.n_states, mdp.n_actions
    succ = (mdp.transitions > 0).sum(axis=2)
    lines = [
        f"name: {mdp.name or '(none)'}",
        f"states: {n}   actions: {m}   discount: {mdp.discount:g}",
        f"rewards: min {mdp.rewards.min():.6g}, max {mdp.rewards.max():.6g}",
        f"successors per (s, a): min {succ.min()}, mean {succ.mean():.2f}, max {succ.max()}"
        f"{'  (deterministic)' if succ.max() == 1 else ''}",
    ]
    if mdp.policy is None:
        lines.append("policy: none (only 'bisim' and the bisim relation apply)")
    else:
        support = (mdp.policy > 0).sum(axis=1)
        kind = "deterministic" if support.max() == 1 else f"stochastic (actions per state: max {support.max()})"
        lines.append(f"policy: {kind}")
    av = mdp.action_values
    lines.append(
        "action_values: identity" if np.array_equal(av, np.eye(m)) else f"action_values: {av.shape[0]} x {av.shape[1]}"
    )
    if mdp.state_shape is not None:
        ci = coordinate_independent(mdp)
        lines.append(
            f"state_shape: {list(mdp.state_shape)} (coordinate-independent transitions: {'yes' if ci else 'no'})"
        )
    if mdp.policy is not None:  # what a separable distance head can learn (docs/losses.md, claim C5)
        if mdp.state_shape is None:
            lines.append(
                "d_eps-bar separable: not checked (no state_shape, so no state coordinates for a "
                "SeparableDistance head; set state_shape to check)"
            )
        else:
            lines += [separability(mdp, ground).describe() for ground in ("reward", "policy")]
    lines.append(f"validation: ok (distributions within {ROW_TOLERANCE:g}, all values finite)")
    kinds = ["bisim"] + (["pi", "eps"] if mdp.policy is not None else [])
    counts = ", ".join(f"E_{k}: {len(relation_blocks(mdp, k))}" for k in kinds)
    lines.append(f"relation blocks (eps with reward ground): {counts}")
    return "\n".join(lines)


def cmd_info(args) -> int:
    if is_gaussian_file(args.mdp):
        from bisimkit.gaussian.pairs import describe_gaussian  # start-up cost: loads scipy.special

        print(describe_gaussian(load_gaussian(args.mdp)))
        return 0
    print(describe_mdp(load_mdp_or_example(args.mdp, args)))
    return 0


def cmd_examples(args) -> int:
    if args.write:
        out = check_output(args.write, "write", folder=True)
        for name in EXAMPLES:
            path = out / f"{name}.json"
            atomic_write_json(path, example(name).to_dict())
            print(f"wrote {path}")
        return 0
    width = max(len(k) for k in EXAMPLES)
    for name, (_, text) in EXAMPLES.items():
        print(f"{name.ljust(width)}  {text}")
    return 0


def cmd_metrics(args) -> int:
    width = max(len(k) for k in OPERATORS)
    for name, info in OPERATORS.items():
        print(f"{name.ljust(width)}  {info.summary}   [{info.source}]")
    return 0


# ------------------------------------------------------------------ parser
#: Adds one subcommand to the ``bisimkit`` parser (``add(subparsers)``); see :func:`build_parser`.
AddCommand = Callable[[argparse._SubParsersAction], None]


def build_parser(commands: Sequence[AddCommand] = ()) -> argparse.ArgumentParser:
    """The ``bisimkit`` parser: the core commands, plus ``commands`` (listed before ``metrics``)."""
    parser = _Parser(prog="bisimkit", description="Exact bisimulation metrics on finite and Gaussian MDPs.")
    parser.add_argument("--version", action="version", version=f"bisimkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("solve", help="fixed point of a bisimulation operator")
    p.add_argument(
        "mdp",
        metavar="MDP",
        help="MDP file (.json/.npz), model file (.drn, .tra), bundled example name, gym:ID (a tabular "
        "Gymnasium env), or a linear-Gaussian JSON file",
    )
    p.add_argument(
        "--metric",
        required=True,
        metavar="NAME",
        help=f"one of: {', '.join(METRIC_NAMES)} (Gaussian MDPs: pi, psm, eps, eps-bar)",
    )
    p.add_argument(
        "--ground",
        default=None,
        metavar="G",
        help="eps family: reward (default), policy, or a file with an (n*m)x(n*m) pseudometric; "
        f"{', '.join(LABELLED_CHAIN_METRICS)}: a file with an n x n ground in [0, 1] in place of the "
        "labels",
    )
    p.add_argument("--tol", type=_positive_float, default=DEFAULT_TOL, help="certified error (default 1e-9)")
    p.add_argument(
        "--method",
        default="auto",
        choices=METHODS + ("mc",),
        help=f"{', '.join(METHODS)} (default auto); Gaussian MDPs: auto, exact (series) or mc (Monte Carlo)",
    )
    p.add_argument("--max-iterations", type=_positive_int, default=None, help="cap on value-iteration sweeps")
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="write FILE.npy, FILE.json or FILE.csv (Gaussian MDPs: .json or .csv)",
    )
    p.add_argument(
        "--order",
        default="index",
        metavar="ORDER",
        help=f"state order of the entangled coupling ({', '.join(STATE_ORDER_METRICS)}): index (default), "
        "class-contiguous "
        "(each E_eps class numbered consecutively), a list such as 3,1,2,0 or a file with a "
        "permutation of the states (.json, .npy or text); on a grid MDP a permutation of the "
        "coordinates, e.g. 1,0 (docs/couplings.md)",
    )
    p.add_argument(
        "--action-order",
        default="index",
        metavar="ORDER",
        help=f"action order of the entangled policy coupling ({', '.join(ACTION_ORDER_METRICS)}): index "
        "(default), "
        "a list such as 1,0,2 or a permutation file",
    )
    p.add_argument(
        "--against",
        default=None,
        metavar="MDP_B",
        help="a second finite MDP (file, example or gym:ID): solve the distances between the states of "
        "MDP and those of MDP_B, for every metric but "
        f"{', '.join(m for m in METRIC_NAMES if m not in BETWEEN_METRICS)} "
        "(docs/operators.md#two-mdps)",
    )
    p.add_argument(
        "--no-quotient",
        action="store_true",
        help=f"{', '.join(QUOTIENT_METRICS)}: solve the MDP itself, not first its quotient by the largest "
        "relation "
        "of the metric's kind (docs/operators.md)",
    )
    p.add_argument(
        "--backend",
        default=BACKENDS[0],
        choices=BACKENDS,
        help=f"{', '.join(BACKENDS)} (default {BACKENDS[0]}); torch runs Smith's doubling with torch "
        f"products, for {', '.join(TORCH_METRICS)} (dbc-sampled: point-mass next states)",
    )
    p.add_argument(
        "--device", default=None, metavar="DEVICE", help="with --backend torch: cpu (default), cuda or cuda:N"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="solve even when the memory estimate says it will not fit (docs/performance.md#memory)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_model_options(p)
    g = p.add_argument_group("Gaussian MDPs (a JSON file with \"kind\": \"linear-gaussian\")")
    g.add_argument(
        "--pairs",
        default=None,
        metavar="FILE",
        help="state pairs: .json list of [z, z'] or .npy of shape (P, 2, n) (required); --metric "
        f"{', '.join(QUERY_METRICS + LABELLED_CHAIN_METRICS)} on a finite model: a .json list of [s, t] state "
        "indices or a .npy of shape (q, 2), only those pairs and the pairs they reach solved (default all pairs)",
    )
    g.add_argument(
        "--samples",
        type=_positive_int,
        default=None,
        help=f"Monte Carlo rollout pairs (default {MC_DEFAULTS['samples']})",
    )
    g.add_argument(
        "--horizon",
        type=_positive_int,
        default=None,
        help="Monte Carlo rollout length (default: certified truncation bound <= 1e-3)",
    )
    g.add_argument("--seed", type=int, default=None, help=f"Monte Carlo seed (default {MC_DEFAULTS['seed']})")
    g.add_argument(
        "--confidence",
        type=_probability,
        default=None,
        help=f"Monte Carlo confidence level (default {MC_DEFAULTS['confidence']})",
    )
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("relation", help="largest bisimulation relation by partition refinement")
    p.add_argument(
        "mdp", metavar="MDP", help="MDP file (.json/.npz), model file (.drn, .tra), bundled example name, or gym:ID"
    )
    p.add_argument(
        "--kind",
        required=True,
        choices=RELATION_KINDS,
        help="which relation: bisim (Ferns'), pi (under the MDP's policy), psm or eps (entangled)",
    )
    p.add_argument("--ground", default=None, metavar="G", help="for --kind eps: reward, policy or a file")
    p.add_argument(
        "--atol", type=_positive_float, default=RELATION_ATOL, help="equality tolerance for reals (default 1e-9)"
    )
    add_model_options(p)
    p.set_defaults(func=cmd_relation)

    p = sub.add_parser("info", help="sizes and validation report of an MDP (finite or linear-Gaussian)")
    p.add_argument(
        "mdp", metavar="MDP", help="MDP file (.json/.npz), model file (.drn, .tra), bundled example name, or gym:ID"
    )
    add_model_options(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("examples", help="list (or write) the bundled example MDPs")
    p.add_argument("--write", metavar="DIR", default=None, help="write each example as DIR/NAME.json")
    p.set_defaults(func=cmd_examples)

    for add in commands:
        add(sub)

    p = sub.add_parser("metrics", help="list the operators")
    p.set_defaults(func=cmd_metrics)
    return parser


def _argument_type(
    convert: Callable[[str], float], accept: Callable[[float], bool], expected: str
) -> Callable[[str], float]:
    """An argparse ``type``: ``convert`` the text, refuse it unless ``accept``, naming what was ``expected``."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'")
        return value

    return parse


_positive_float = _argument_type(float, lambda v: bool(np.isfinite(v)) and v > 0, "a positive number")
_positive_int = _argument_type(int, lambda v: v >= 1, "a positive integer")
_probability = _argument_type(float, lambda v: 0 < v < 1, "a number in (0, 1)")
_discount = _argument_type(float, lambda v: 0 <= v <= 1, "a discount factor in [0, 1]")


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every ``--option`` of ``parser`` and of its subcommands."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= option_strings(sub)
    return found


def main(argv: list[str] | None = None, commands: Sequence[AddCommand] = ()) -> int:
    """Run the command line (core commands plus ``commands``); returns the exit status."""
    parser = build_parser(commands)
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except InputError as exc:  # a library parameter is shown as the option that fed it
        print(f"bisimkit: error: {exc.for_option(option_strings(parser))}", file=sys.stderr)
        return EXIT_INPUT
    except MemoryError:
        print(
            "bisimkit: error: out of memory (MemoryError); nothing was written (docs/performance.md#memory)",
            file=sys.stderr,
        )
        return EXIT_MEMORY
    except BrokenPipeError:
        return 0
    except OSError as exc:  # output paths are checked up front (check_output); this is what happens after
        print(f"bisimkit: error: {file_error_line(exc)}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt:
        print("bisimkit: interrupted", file=sys.stderr)
        return 130


def run(commands: Sequence[AddCommand] = ()) -> None:
    """Console-script wrapper."""
    sys.exit(main(commands=commands))
