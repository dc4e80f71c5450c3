"""Train pixel agents on a Distracting Control Suite task and plot them: curves, table, aggregates.

    python examples/train_agent.py [--task cartpole-swingup] [--methods drq,eps-r] [--seeds 0,1] [--out runs-example]

Each (method, seed) is trained with the ``smoke`` preset (every part of training on a CPU in about a
minute: docs/agents.md#presets-every-choice-and-where-it-comes-from; not a learning run), with the
distracting backgrounds (procedural videos unless DAVIS is set up: ``python -m agents.videos fetch``).
Then the learning curves, the paper-layout results table and the aggregates (IQM, mean, median,
optimality gap with 95% CIs, probability of improvement, performance profiles) are drawn from the run
folders. ``--env-steps`` and ``--episode-steps`` shrink the runs further. Needs the 'agents' extra.
The same from the command line: ``python -m agents.train --preset smoke ...``, then
``python -m figures.learning_curves``, ``figures.results_table``, ``figures.aggregate_table``.
"""

import argparse
from pathlib import Path

from agents.config import make_config
from agents.train import train
from figures.aggregate_table import aggregate_runs, markdown, plot_profiles
from figures.learning_curves import plot_learning_curves
from figures.results_table import results_table

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--task", default="cartpole-swingup")
parser.add_argument("--methods", default="drq,eps-r", help="comma-separated methods")
parser.add_argument("--seeds", default="0,1", help="comma-separated seeds")
parser.add_argument("--out", default="runs-example", help="folder for the runs and the figures")
parser.add_argument("--env-steps", type=int, default=None, help="environment steps per run (smoke: 2000)")
parser.add_argument("--episode-steps", type=int, default=None, help="environment steps per episode (smoke: 400)")
args = parser.parse_args()

out = Path(args.out)
shorter = {}
if args.env_steps is not None:  # a shorter run: evaluate and checkpoint at every episode end
    episode = args.episode_steps or args.env_steps
    shorter = dict(
        env_steps=args.env_steps, episode_steps=episode, eval_every=episode, checkpoint_every=episode, seed_steps=2
    )
for method in args.methods.split(","):
    for seed in map(int, args.seeds.split(",")):
        cfg = make_config("smoke", task=args.task, method=method, seed=seed, **shorter)
        summary = train(cfg, out / "runs" / args.task / method / f"seed{seed}", progress=False)
        print(
            f"{method} seed {seed}: final evaluation return {summary['final_eval']:.1f} "
            f"after {summary['env_steps']} environment steps ({summary['seconds']:.0f} s)"
        )

runs = out / "runs"
print(f"curves: {plot_learning_curves(runs, out / 'curves.png')}")
print(results_table(runs), end="")
agg = aggregate_runs(runs, reps=2000)  # normalised by 0-1000 per DCS task
print(markdown(agg).split("### Per task")[0], end="")
print(f"performance profiles: {plot_profiles(agg, out / 'profiles.png')}")
