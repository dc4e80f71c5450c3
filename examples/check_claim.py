"""Check the paper's claims on your MDP: each claim that applies, with its verdict and margin.

    python examples/check_claim.py [--mdp examples/tiny-rooms.json] [--claims C3,C4,C10]

The whole check, every claim with counterexamples written as MDP files, is
``bisimkit verify --mdp my.json`` (docs/cli.md); the claims and their readings are in docs/claims.md.
Here the claim checks of ``validation.claims`` run on one MDP: each returns whether the claim held
and its margin (how far from failing, in the claim's unit).
"""

import argparse
from pathlib import Path

from bisimkit.cli import load_mdp_or_example
from validation.claims import CLAIMS, FixedPoints
from validation.families import Case

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument(
    "--mdp",
    default=str(Path(__file__).with_name("tiny-rooms.json")),
    help="an MDP file, a bundled example's name or gym:ID",
)
parser.add_argument("--claims", default="C3,C4,C10", help="claim ids (see bisimkit verify --help)")
parser.add_argument("--ground", default="reward", help="the eps family's ground: reward or policy")
args = parser.parse_args()

mdp = load_mdp_or_example(args.mdp)
fixed_points = FixedPoints(Case(mdp, args.ground))  # solves each metric once, on demand
wanted = args.claims.split(",")
for claim in CLAIMS:
    if claim.id in wanted and claim.check is not None:
        outcome = claim.check(fixed_points)
        verdict = "holds" if outcome.held else "FAILS"
        print(f"{claim.label:<16} {verdict:5}  margin {outcome.margin:+.3g}  {claim.statement[:60]}")
        if outcome.detail:
            print(f"{'':16} {outcome.detail}")
