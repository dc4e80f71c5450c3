"""Learning check on 2 CPU cores: DrQ learns walker-stand from pixels in under 30 minutes.

Trains ``drq`` on walker-stand (action repeat 2) without distractions for 40k
environment steps (20k agent steps, 19k updates) with a CPU-sized
configuration: DrQ's encoder (the 3-frame stack as one 9-channel image,
``stacked_frames``: a third of the paper's frame-wise convolutions), 48x48
frames, batch 64, the low-capacity MLPs (200 units), one augmented view and no
target encoder (``aug_k = aug_m = 1``: cheaper on a CPU), everything else as in
the paper preset. It then evaluates a uniformly random policy on the same
evaluation episodes and plots the evaluation curve against it.

    python -m benchmarks.learning_check [--out runs/learning-check] [--task walker-stand]
                                        [--env-steps 40000] [--seed 0] [--resume]

Writes ``learning.png`` and ``learning.json`` into the run folder and prints a
verdict: the check passes when the mean of the last three evaluations (5
episodes each) exceeds the random policy's mean by at least 100 and by 3 of its
standard deviations; one lucky evaluation does not pass it. The exit status is
0 on a pass, 1 on a fail, 2 on bad arguments. A killed check continues with
``--resume``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from agents.config import TrainConfig, make_config
from agents.dcs import TASKS
from agents.rollout import evaluate_policy, make_run_env
from agents.train import train
from bisimkit.errors import InputError
from bisimkit.extras import report_missing
from bisimkit.files import atomic_write_json
from figures.runs import read_csv_columns

# DrQ with its stacked encoder at CPU size (48 px, batch 64, 200-unit MLPs, cheap rendering), and one
# augmented view without a target encoder: the paper preset's K = M = 2 views and target encoder
# make an update 2.5x dearer on a CPU (19k updates would take over an hour on 2 cores).
CHECK_CONFIG = make_config("paper", method="drq", task="walker-stand", background=False, camera=False,
                           stacked_frames=True, aug_k=1, aug_m=1, target_encoder=False, alpha_beta1=0.9,
                           env_steps=40_000, image_size=48, batch_size=64, capacity="low", eval_every=5_000,
                           eval_episodes=5, eval_train_videos=False, checkpoint_every=5_000, device="cpu")
RANDOM_EPISODES = 10
LAST_EVALUATIONS = 3
MARGIN = 100.0


class RandomPolicy:
    """Uniform actions in [-1, 1]^k (what 'random policy' means in the check)."""

    def __init__(self, action_dim: int, seed: int = 0):
        self.rng, self.action_dim = np.random.default_rng(seed), action_dim

    def act(self, obs, explore: bool = False) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, self.action_dim)


def random_returns(cfg: TrainConfig, episodes: int = RANDOM_EPISODES) -> list[float]:
    """Returns of the random policy on the run's evaluation episodes (the first ``episodes`` of them)."""
    env = make_run_env(cfg, "eval")
    try:
        return evaluate_policy(RandomPolicy(env.action_spec.shape[0], cfg.seed), env, episodes, cfg.seed)
    finally:
        env.close()


def verdict(eval_means: list[float], random: list[float]) -> tuple[bool, float, float]:
    """(passed, mean of the last evaluations, pass mark): the rule of the module doc."""
    r_mean, r_std = float(np.mean(random)), float(np.std(random))
    last = float(np.mean(eval_means[-LAST_EVALUATIONS:]))
    mark = r_mean + max(MARGIN, 3 * r_std)
    return len(eval_means) > LAST_EVALUATIONS and last >= mark, last, mark


def plot(out: Path, steps, means, stds, random_mean: float, random_std: float, title: str,
         mark: float | None = None) -> Path:
    """The evaluation curve with a band of one std, the random policy's band and the pass mark."""
    from figures.style import plt, return_curve_axes, save

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    steps, means, stds = map(np.asarray, (steps, means, stds))
    ax.plot(steps, means, marker="o", color="tab:blue", label="DrQ (evaluation: mean ± std of 5 episodes)")
    ax.fill_between(steps, means - stds, means + stds, color="tab:blue", alpha=0.2)
    ax.axhline(random_mean, color="grey", ls="--", label="uniform random policy")
    ax.axhspan(random_mean - random_std, random_mean + random_std, color="grey", alpha=0.2)
    if mark is not None:
        ax.axhline(mark, color="tab:red", ls=":", label=f"pass mark (last {LAST_EVALUATIONS} evaluations' mean)")
    return_curve_axes(ax, title)
    return save(fig, out, tight=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/learning-check")
    p.add_argument("--task", default=CHECK_CONFIG.task, help=f"one of {', '.join(TASKS)}")
    p.add_argument("--env-steps", type=int, default=CHECK_CONFIG.env_steps)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args(argv)
    try:
        cfg = replace(CHECK_CONFIG, task=args.task, env_steps=args.env_steps, seed=args.seed).validated()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        summary = train(cfg, out, resume=args.resume, tensorboard=False)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        return report_missing(exc)
    table = read_csv_columns(out / "eval.csv")
    steps = [int(x) for x in table["env_step"]]
    means, stds = table["mean_return"].tolist(), table["std_return"].tolist()
    rand = random_returns(cfg)
    r_mean, r_std = float(np.mean(rand)), float(np.std(rand))
    passed, last, mark = verdict(means, rand)
    minutes = summary["seconds"] / 60
    title = (f"DrQ, {cfg.task} from {cfg.image_size}x{cfg.image_size} pixels, 2 CPU cores: {minutes:.0f} min\n"
             f"last {LAST_EVALUATIONS} evals {last:.0f} vs random {r_mean:.0f} ± {r_std:.0f} (pass mark {mark:.0f})")
    png = plot(out / "learning.png", steps, means, stds, r_mean, r_std, title, mark)
    record = {"config": cfg.to_dict(), "minutes": minutes, "steps": steps, "eval_mean": means, "eval_std": stds,
              "random_returns": rand, "random_mean": r_mean, "random_std": r_std,
              "last_evaluations_mean": last, "pass_mark": mark, "passed": passed}
    atomic_write_json(out / "learning.json", record)
    print(f"{'PASS' if passed else 'FAIL'}: mean of the last {LAST_EVALUATIONS} evaluations {last:.1f} "
          f"(up to {steps[-1]} env steps) against a pass mark of {mark:.1f}; random policy {r_mean:.1f} ± "
          f"{r_std:.1f}; {minutes:.1f} min of training; figure {png}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
