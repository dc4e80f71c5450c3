"""Learning check on 2 CPU cores: DrQ learns cartpole-swingup from pixels in under 30 minutes.

Trains ``drq`` on cartpole-swingup without distractions for 100k environment
steps (12.5k agent steps) with a CPU-sized configuration: 48x48 frames (3
stacked), batch 32, the low-capacity MLPs (200 units), everything else as in
the paper's appendix. Then evaluates a uniformly random policy on the same
evaluation episodes and plots the evaluation curve against it.

    python -m benchmarks.learning_check [--out runs/learning-check] [--env-steps 100000] [--resume]

Writes ``learning.png`` and ``learning.json`` into the run folder and prints a
verdict: the check passes when the best evaluation return exceeds the random
policy's mean by at least 100 and 3 of its standard deviations. A killed check
continues with ``--resume``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from agents.config import TrainConfig
from agents.train import evaluate_policy, make_train_env, train

CHECK_CONFIG = replace(TrainConfig(), task="cartpole-swingup", method="drq", background=False, camera=False,
                       env_steps=100_000, image_size=48, batch_size=32, capacity="low", eval_every=10_000,
                       eval_episodes=5, checkpoint_every=10_000, device="cpu")
MARGIN = 100.0


class RandomPolicy:
    """Uniform actions in [-1, 1]^k (what 'random policy' means in the check)."""

    def __init__(self, action_dim: int, seed: int = 0):
        self.rng, self.action_dim = np.random.default_rng(seed), action_dim

    def act(self, obs, explore: bool = False) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, self.action_dim)


def random_returns(cfg: TrainConfig) -> list[float]:
    """Returns of the random policy on the run's evaluation episodes."""
    env = make_train_env(cfg, "eval")
    try:
        return evaluate_policy(RandomPolicy(env.action_spec.shape[0], cfg.seed), env, cfg.eval_episodes, cfg.seed)
    finally:
        env.close()


def plot(out: Path, steps, means, stds, random_mean: float, random_std: float, title: str) -> Path:
    """The evaluation curve with a band of one std, and the random policy's band."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    steps, means, stds = map(np.asarray, (steps, means, stds))
    ax.plot(steps, means, marker="o", color="tab:blue", label="DrQ (eval, mean of episodes)")
    ax.fill_between(steps, means - stds, means + stds, color="tab:blue", alpha=0.2)
    ax.axhline(random_mean, color="grey", ls="--", label="uniform random policy")
    ax.axhspan(random_mean - random_std, random_mean + random_std, color="grey", alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/learning-check")
    p.add_argument("--env-steps", type=int, default=CHECK_CONFIG.env_steps)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args(argv)
    cfg = replace(CHECK_CONFIG, env_steps=args.env_steps, seed=args.seed).validated()
    out = Path(args.out)
    summary = train(cfg, out, resume=args.resume, tensorboard=False)
    with open(out / "eval.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    steps = [int(r["env_step"]) for r in rows]
    means = [float(r["mean_return"]) for r in rows]
    stds = [float(r["std_return"]) for r in rows]
    rand = random_returns(cfg)
    r_mean, r_std = float(np.mean(rand)), float(np.std(rand))
    best = max(means)
    passed = best >= r_mean + max(MARGIN, 3 * r_std)
    minutes = summary["seconds"] / 60
    title = (f"DrQ, cartpole-swingup from 48x48 pixels, 2 CPU cores: {minutes:.0f} min\n"
             f"best eval {best:.0f} vs random {r_mean:.0f} ± {r_std:.0f}")
    png = plot(out / "learning.png", steps, means, stds, r_mean, r_std, title)
    record = {"config": cfg.to_dict(), "minutes": minutes, "steps": steps, "eval_mean": means, "eval_std": stds,
              "random_mean": r_mean, "random_std": r_std, "best_eval": best, "passed": passed}
    (out / "learning.json").write_text(json.dumps(record, indent=2))
    print(f"{'PASS' if passed else 'FAIL'}: best evaluation return {best:.1f} after {steps[int(np.argmax(means))]} "
          f"env steps; random policy {r_mean:.1f} ± {r_std:.1f}; {minutes:.1f} min of training; figure {png}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
