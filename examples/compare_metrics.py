"""Compare bisimulation metrics on your MDP, with figures: heatmaps, a difference map, a scatter matrix.

    python examples/compare_metrics.py [--mdp examples/tiny-rooms.json] [--metrics bisim,pi,eps-bar,mico] [--out cmp]

The same as ``bisimkit compare MDP --metrics ... --out cmp`` (docs/cli.md). Prints the summary
(per metric: certified error, pairs at distance 0, rank correlation with the others) and writes
``summary.csv`` and the figures (PNG and PDF) into ``--out``.
"""

import argparse
from pathlib import Path

from bisimkit import compare
from bisimkit.cli import load_mdp_or_example
from figures.compare import write_comparison

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument(
    "--mdp",
    default=str(Path(__file__).with_name("tiny-rooms.json")),
    help="an MDP file, a bundled example's name or gym:ID",
)
parser.add_argument("--metrics", default="bisim,pi,eps-bar,mico", help="comma-separated metric names")
parser.add_argument("--out", default="cmp", help="folder for summary.csv and the figures")
args = parser.parse_args()

cmp = compare(load_mdp_or_example(args.mdp), args.metrics)  # each metric solved once, to a certified error
for row in cmp.summary():  # also in summary.csv, with more columns
    print(
        f"{row['metric']:>8}: largest distance {row['max']:.3f}, certified error {row['certified_error']:.1e}, "
        "rank correlation " + ", ".join(f"{m} {row['spearman_' + m]:.2f}" for m in cmp.metrics)
    )
metrics = args.metrics.split(",")
files = write_comparison(cmp, args.out, diff=(metrics[0], metrics[1]))
print(f"wrote {len(files)} files into {args.out}: {', '.join(sorted(p.name for p in files if p.suffix == '.png'))}")
