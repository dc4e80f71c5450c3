"""The learned metric against the exact one: an agent's encoder trained on a pixel scene with distractors.

    python examples/metric_check.py [--scene ring] [--method eps-r] [--steps 1500] [--out metric-check]

``agents.metric_check.learn_metric`` renders the states of a small MDP as pixels (with background,
colour and sprite distractors that never touch the dynamics), trains the method's encoder, world
model and distance head on them with the agent's own losses, and compares the latent distance with
the exact fixed point of the operator the loss targets (eps-r: d_eps-bar with the reward ground,
certified by ``bisimkit.solve``). The command-line version is ``python -m agents.metric_check``
(docs/agents.md). Needs the 'agents' extra.
"""

import argparse

from agents.metric_check import learn_metric, meets_targets, write_results

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--scene", default="ring", help="a built-in scene: ring, grid or sprite")
parser.add_argument("--method", default="eps-r", help="eps-r, eps-pi, drq+pse or drq+dbc")
parser.add_argument("--steps", type=int, default=1500, help="updates")
parser.add_argument("--batch", type=int, default=128, help="transitions per update")
parser.add_argument("--image-size", type=int, default=32, help="frame side in pixels")
parser.add_argument("--draws", type=int, default=8, help="distractor draws per evaluated state")
parser.add_argument("--out", default="metric-check", help="folder for the matrices, the MDP and summary.json")
args = parser.parse_args()

check = learn_metric(
    args.scene, method=args.method, steps=args.steps, batch=args.batch, image_size=args.image_size, draws=args.draws
)
s = check.summary
print(f"{args.method} on the {args.scene} scene, {s['states']} states, {args.steps} updates:")
print(
    f"  error relative to the largest exact distance: mean {s['mean_relative_error']:.3f}, "
    f"max {s['max_relative_error']:.3f}; Spearman {s['spearman']:.3f}; "
    f"distractor invariance {s['distractor_invariance']:.3f}"
)
print("  targets met: " + ", ".join(f"{k} {'yes' if ok else 'no'}" for k, ok in meets_targets(s).items()))
print(
    f"wrote {len(write_results(check, args.out))} files into {args.out} (figure: python -m figures.metric_check "
    f"{args.out} --out metric_check.png)"
)
