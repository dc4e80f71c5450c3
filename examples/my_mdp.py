"""Your own MDP: from a JSON file, from arrays, and from a tabular Gymnasium environment.

    python examples/my_mdp.py [--mdp examples/tiny-rooms.json] [--out my-mdp.json]

Loads the file (format: docs/cli.md#mdp-files), solves two metrics with their certified error,
lists the π-bisimulation classes, builds the same MDP from arrays and saves it, and, when the
'gym' extra is installed, imports FrozenLake-v1 under the uniform policy.
"""

import argparse
from pathlib import Path

import numpy as np

from bisimkit import InputError, load_mdp, mdp_from_dict, relation_blocks, save_mdp, solve

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument(
    "--mdp", default=str(Path(__file__).with_name("tiny-rooms.json")), help="an MDP file (JSON or .npz)"
)
parser.add_argument("--out", default="my-mdp.json", help="where to save the MDP built from arrays")
args = parser.parse_args()

# 1. from a file: every field is checked; a bad one is an InputError naming it (and the index)
mdp = load_mdp(args.mdp)
print(f"{args.mdp}: {mdp.n_states} states, {mdp.n_actions} actions, discount {mdp.discount}")
for metric in ("bisim", "pi"):
    sol = solve(mdp, metric)
    print(f"  d_{metric}(0, 1) = {sol.distances[0, 1]:.4f} (certified error {sol.certified_error:.1e})")
print(f"  π-bisimulation classes: {relation_blocks(mdp, 'pi')}")

# 2. from arrays: transitions P[s, a, s'], rewards R[s, a], policy pi[s, a]
P = np.zeros((3, 2, 3))
P[:, 0, 0] = 1.0  # action 0 goes to state 0
P[:, 1, 2] = 1.0  # action 1 goes to state 2
mine = mdp_from_dict(
    {
        "name": "three-states",
        "transitions": P,
        "rewards": [[0, 1], [0, 1], [1, 1]],
        "policy": np.full((3, 2), 0.5),
        "discount": 0.9,
    }
)
save_mdp(mine, args.out)
print(f"saved {args.out}; d_pi = {solve(load_mdp(args.out), 'pi').distances.round(3).tolist()}")
try:
    mdp_from_dict({"transitions": [[[0.5, 0.4]]], "rewards": [[0.0]], "discount": 0.9})
except InputError as exc:
    print(f"a bad file is one line: {exc}")

# 3. from Gymnasium (extra 'gym'): any env with a tabular model P[s][a] = [(p, s', r, done), ...]
try:
    from bisimkit import from_gymnasium

    lake = from_gymnasium("FrozenLake-v1", policy="uniform")
    print(f"FrozenLake-v1: {lake.n_states} states; π classes: {len(relation_blocks(lake, 'pi'))}")
except ModuleNotFoundError:
    print("FrozenLake-v1: skipped (gymnasium is not installed: pip install -e '.[gym]')")
