"""``bisimkit compare``: several metrics on one MDP, plotted side by side (``docs/cli.md``).

The numbers come from :func:`bisimkit.compare` (core), the drawing from :mod:`figures.compare`;
this module wires them to the command line. Every option is checked before anything is solved
or written: bad input prints one line and exits 2 with no output folder.
"""

from __future__ import annotations

import argparse
import sys

from bisimkit.comparison import check_compare, compare
from bisimkit.errors import InputError
from bisimkit.files import check_output
from bisimkit.operators import METRIC_NAMES
from bisimkit.solvers import DEFAULT_TOL

from .core import load_mdp_or_example


def add_compare_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``compare`` subcommand to the ``bisimkit`` parser."""
    p = sub.add_parser(
        "compare",
        help="several metrics on one MDP: heatmaps, scatter matrix, difference, summary.csv",
        description="Solve each metric once on the MDP and write, into --out, a heatmap per metric "
        "(all pairs, or the distances from --state on the grid when the MDP has a "
        "2-D state_shape), a scatter matrix between the metrics with the line y = x, the "
        "difference map of two metrics (--diff), each as PNG and PDF, and summary.csv.",
    )
    p.add_argument("mdp", metavar="MDP", help="MDP file (.json/.npz), bundled example name, or gym:ID")
    p.add_argument("--metrics", required=True, metavar="LIST", help=f"comma-separated, from: {', '.join(METRIC_NAMES)}")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created; files in it are replaced)")
    p.add_argument(
        "--ground",
        default=None,
        metavar="G",
        help="eps family: reward (default), policy, or a file with an (n*m)x(n*m) pseudometric",
    )
    p.add_argument(
        "--order",
        default="index",
        metavar="ORDER",
        help="state order of the entangled coupling (eps-bar), as for bisimkit solve",
    )
    p.add_argument(
        "--action-order",
        default="index",
        metavar="ORDER",
        help="action order of the entangled policy coupling, as for bisimkit solve",
    )
    p.add_argument(
        "--diff", default=None, metavar="A,B", help="the difference map d_A - d_B (default: the first two metrics)"
    )
    p.add_argument("--state", type=int, default=0, help="reference state of the grid maps (default 0)")
    p.add_argument("--tol", type=float, default=None, help="certified error of each solve (default 1e-9)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    """Check everything, solve, draw into a temporary folder, move it to --out; print what was written."""
    from figures.compare import check_figure_options, write_comparison  # matplotlib: ~2 s of start-up

    mdp = load_mdp_or_example(args.mdp)
    names, _ = check_compare(mdp, args.metrics, args.ground, args.order, args.action_order)
    diff = None
    if args.diff is not None:
        parts = [x.strip() for x in args.diff.split(",")]
        if len(parts) != 2 or not all(parts):
            raise InputError(f"expected two metrics A,B, got '{args.diff}'", param="diff")
        diff = (parts[0], parts[1])
    check_figure_options(names, mdp.n_states, diff, args.state)
    tol = DEFAULT_TOL if args.tol is None else args.tol
    if not tol > 0:
        raise InputError(f"expected a positive number, got {args.tol}", param="tol")
    check_output(args.out, folder=True)
    cmp = compare(
        mdp,
        names,
        ground=args.ground,
        tol=tol,
        order=args.order,
        action_order=args.action_order,
        progress=not args.quiet,
    )
    paths = write_comparison(cmp, args.out, diff, args.state)
    for row in cmp.summary():
        print(
            f"{row['metric']:>13}: max {row['max']:.6g}, mean {row['mean']:.6g}, zero-set blocks "
            f"{row['zero_set_blocks']}, certified error {row['certified_error']:.1e}, {row['seconds']:.3f} s"
        )
    print(
        f"wrote {len(paths)} files to {args.out} (summary.csv, "
        f"{', '.join(sorted({p.stem for p in paths if p.suffix == '.png'}))} as .png and .pdf)",
        file=sys.stdout,
    )
    return 0
