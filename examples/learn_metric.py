"""Learn a bisimulation metric with a loss and the validated recipe, and compare it with the exact one.

    python examples/learn_metric.py [--mdp examples/tiny-rooms.json] [--loss entangled-reward] [--steps 1500]

``fit_tabular`` trains a free table of distances with the loss's own sampler and the schedule that
the checks L1-L6 validate (a decaying SGD step and iterate averaging; docs/losses.md), then measures
it against the exact fixed point that ``solve`` certifies. Needs the 'torch' extra.
"""

import argparse
from dataclasses import replace
from pathlib import Path

from bisimkit.cli import load_mdp_or_example
from bisimkit.fitting import FitSchedule
from bisimkit.losses import FIT_LOSSES, fit_tabular

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument(
    "--mdp",
    default=str(Path(__file__).with_name("tiny-rooms.json")),
    help="an MDP file, a bundled example's name or gym:ID",
)
parser.add_argument("--loss", default="entangled-reward", choices=sorted(FIT_LOSSES))
parser.add_argument("--steps", type=int, default=FitSchedule().steps, help="SGD steps (default: the recipe's)")
args = parser.parse_args()

schedule = FitSchedule()
if args.steps != schedule.steps:  # another length: the same schedule, its decay start scaled with it
    schedule = replace(
        schedule, steps=args.steps, decay_start=max(1, round(schedule.decay_start * args.steps / schedule.steps))
    )
fit = fit_tabular(load_mdp_or_example(args.mdp), args.loss, schedule, exact=True)
print(f"{args.loss} ({fit.metric}) on {args.mdp}: {schedule.steps} steps in {fit.seconds:.1f} s")
print(f"largest error {fit.max_error:.4f} = {fit.relative_error:.2%} of the largest exact distance")
print("learned d(0, .):", fit.distances[0].round(3).tolist())
print("exact   d(0, .):", fit.exact[0].round(3).tolist())
