"""Learning check on 2 CPU cores: DrQ learns walker-stand from pixels in under 30 minutes.

Trains ``drq`` on walker-stand (action repeat 2) without distractions for 40k
environment steps (20k agent steps, 19k updates) with a CPU-sized
configuration: DrQ's encoder (the 3-frame stack as one 9-channel image,
``stacked_frames``: a third of the paper's frame-wise convolutions), 48x48
frames, batch 64, the low-capacity MLPs (200 units), one augmented view and no
target encoder (``aug_k = aug_m = 1``: cheaper on a CPU), everything else as in
the paper preset. It then evaluates a uniformly random policy on the same
evaluation episodes and plots the evaluation curve against it.

``--method eps-r`` trains eps-r with the same configuration (its bisimulation
loss reads the online latents through the world model, so it needs no target
encoder; beta 0.5 and the world-model heads as in the paper preset);
``--bisim-warmup N`` trains eps-r's world model alone for its first N updates before the
bisimulation loss joins (``TrainConfig.bisim_warmup``, as the scene check of ``agents.metric_check``
does); ``--beta B`` sets eps-r's bisimulation weight (the paper tunes it per task and reports no
value; the check's default is the presets' 0.5); ``--no-model-grad`` trains eps-r's transition and
reward heads on detached latents (``TrainConfig.model_grad``); ``--spread-units`` has eps-r's
bisimulation loss read distances in units of the batch's latent spread (``TrainConfig.spread_units``);
``--distractions`` turns the dynamic
video backgrounds and the camera distraction on (training on the 2 training videos, evaluation, and the random
policy, on the 30 held-out ones; procedural videos unless ``$BISIMKIT_DAVIS``
points at DAVIS-2017). ``--method eps-r,drq`` trains each
method in ``OUT/<method>`` and draws every curve on one figure in ``OUT``.

    python -m benchmarks.learning_check [--out runs/learning-check] [--task walker-stand]
                                        [--method drq|eps-r|eps-r,drq] [--distractions]
                                        [--env-steps 40000] [--eval-every 5000] [--seed 0]
                                        [--bisim-warmup 0] [--beta 0.5] [--no-model-grad]
                                        [--spread-units] [--resume]

Writes ``learning.png`` and ``learning.json`` into the output folder and prints a
verdict per method: the check passes when the mean of the last three evaluations
(5 episodes each) exceeds the random policy's mean by at least 100 and by 3 of its
standard deviations; one lucky evaluation does not pass it. The exit status is
0 when every method passes, 1 when one fails, 2 on bad arguments. A killed check
continues with ``--resume`` (a finished run is then only read back); ``--eval-every``
spaces evaluations and checkpoints alike, and a resumed check may change it and
``--env-steps``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from agents.config import METHODS, ConfigParser, TrainConfig, make_config
from agents.dcs import TASKS
from agents.rollout import evaluate_policy, make_run_env
from agents.train import train
from bisimkit.errors import InputError
from bisimkit.extras import report_missing
from bisimkit.files import atomic_write_json
from bisimkit_runs.runs import read_csv_columns

# DrQ with its stacked encoder at CPU size (48 px, batch 64, 200-unit MLPs, cheap rendering), and one
# augmented view without a target encoder: the paper preset's K = M = 2 views and target encoder
# make an update 2.5x dearer on a CPU (19k updates would take over an hour on 2 cores).
CHECK_CONFIG = make_config(
    "paper",
    method="drq",
    task="walker-stand",
    background=False,
    camera=False,
    stacked_frames=True,
    aug_k=1,
    aug_m=1,
    target_encoder=False,
    alpha_beta1=0.9,
    env_steps=40_000,
    image_size=48,
    batch_size=64,
    capacity="low",
    eval_every=5_000,
    eval_episodes=5,
    eval_train_videos=False,
    checkpoint_every=5_000,
    device="cpu",
)
#: The methods the check trains, with their curve's label and colour: eps-r under CHECK_CONFIG's
#: settings needs nothing more (its loss reads the online latents through the world model, not the
#: target encoder), and takes the paper preset's beta and world-model heads.
CHECK_METHODS = {"drq": ("DrQ", "tab:blue"), "eps-r": ("ε-R", "tab:orange")}
RANDOM_EPISODES = 10
LAST_EVALUATIONS = 3
MARGIN = 100.0


def check_config(method: str = "drq", distractions: bool = False, **fields) -> TrainConfig:
    """CHECK_CONFIG for ``method`` (one of :data:`CHECK_METHODS`), with the video background and
    the camera distraction on when ``distractions``, and ``fields`` applied last; validated."""
    if method not in CHECK_METHODS:
        raise InputError(f"{method!r} is not one of {', '.join(CHECK_METHODS)}", param="method")
    return replace(CHECK_CONFIG, method=method, background=distractions, camera=distractions, **fields).validated()


def parse_methods(text: str) -> list[str]:
    """``'eps-r,drq'`` -> ``['eps-r', 'drq']``: each one of :data:`CHECK_METHODS`, none twice."""
    methods = [m.strip() for m in str(text).split(",")]
    for i, method in enumerate(methods):
        if method not in CHECK_METHODS:
            raise InputError(f"{method!r} (item {i}) is not one of {', '.join(CHECK_METHODS)}", param="method")
        if method in methods[:i]:
            raise InputError(f"{method!r} (item {i}) is named twice", param="method")
    return methods


def beta_field(method: str, beta: float | None) -> dict:
    """``{'beta': beta}`` for a method with a bisimulation loss; ``{}`` when none is given; an error for
    drq, which has no such loss to weigh."""
    if beta is None:
        return {}
    if METHODS[method].bisim is None:
        raise InputError(f"{beta!r} is given, and {method} has no bisimulation loss to weigh", param="beta")
    return {"beta": beta}


class RandomPolicy:
    """Uniform actions in [-1, 1]^k (what 'random policy' means in the check)."""

    def __init__(self, action_dim: int, seed: int = 0):
        self.rng, self.action_dim = np.random.default_rng(seed), action_dim

    def act(self, obs, explore: bool = False) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, self.action_dim)


def random_returns(cfg: TrainConfig, episodes: int | None = None) -> list[float]:
    """Returns of the random policy on the run's evaluation episodes (the first ``episodes`` of them,
    :data:`RANDOM_EPISODES` by default)."""
    episodes = RANDOM_EPISODES if episodes is None else episodes
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


def plot(out: Path, curves, random_mean: float, random_std: float, title: str, mark: float | None = None) -> Path:
    """Evaluation curves with a band of one std each, the random policy's band and the pass mark;
    ``curves``: (label, colour, steps, means, stds[, line style]) per run."""
    from figures.style import check_axes, plt, return_curve_axes, save  # matplotlib: only with a figure to draw

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    check_axes(
        ax, curves, random_mean, random_std, mark, mark_label=f"pass mark (last {LAST_EVALUATIONS} evaluations' mean)"
    )
    return_curve_axes(ax, title)
    return save(fig, out, tight=True)


def build_parser() -> ConfigParser:
    """The command line of the module doc (errors: one line naming the option, exit 2)."""
    p = ConfigParser(prog="python -m benchmarks.learning_check", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--out",
        default="runs/learning-check",
        help="the run folder (learning.json, learning.png, the agent's files; default runs/learning-check)",
    )
    p.add_argument("--task", default=CHECK_CONFIG.task, help=f"one of {', '.join(TASKS)} (default {CHECK_CONFIG.task})")
    p.add_argument(
        "--method",
        default="drq",
        help=f"{' or '.join(CHECK_METHODS)}, or several separated by commas (each in OUT/<method>; default drq)",
    )
    p.add_argument(
        "--distractions",
        action="store_true",
        help="dynamic video backgrounds and the camera distraction on (the random policy too)",
    )
    p.add_argument(
        "--env-steps",
        type=int,
        default=CHECK_CONFIG.env_steps,
        help=f"environment steps to train (default {CHECK_CONFIG.env_steps})",
    )
    p.add_argument(
        "--eval-every",
        type=int,
        default=CHECK_CONFIG.eval_every,
        help="environment steps between evaluations, and between checkpoints (a resumed check may "
        f"change it; default {CHECK_CONFIG.eval_every})",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the agent's and the environments' seed; the random policy is evaluated on this seed's "
        "held-out episodes (default 0)",
    )
    p.add_argument(
        "--bisim-warmup",
        type=int,
        default=CHECK_CONFIG.bisim_warmup,
        help="eps-r: updates of the world model alone before the bisimulation loss joins "
        f"(TrainConfig.bisim_warmup; default {CHECK_CONFIG.bisim_warmup}, the paper's)",
    )
    p.add_argument(
        "--beta",
        type=float,
        default=None,
        help="eps-r: the weight of the bisimulation loss (TrainConfig.beta; default the presets' "
        "0.5, which the paper tunes per task)",
    )
    p.add_argument(
        "--no-model-grad",
        dest="model_grad",
        action="store_false",
        help="eps-r: the transition and reward losses do not train the encoder (TrainConfig.model_grad; "
        "the paper's do)",
    )
    p.add_argument(
        "--spread-units",
        action="store_true",
        help="eps-r: the bisimulation loss reads distances in units of the batch's latent spread "
        "(TrainConfig.spread_units; the paper's reads them as they are)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue each method's run from its last checkpoint in OUT (one at or past --env-steps is "
        "read back without training)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        methods = parse_methods(args.method)
        configs = {
            m: check_config(
                m,
                args.distractions,
                task=args.task,
                env_steps=args.env_steps,
                seed=args.seed,
                eval_every=args.eval_every,
                checkpoint_every=args.eval_every,
                bisim_warmup=args.bisim_warmup,
                model_grad=args.model_grad,
                spread_units=args.spread_units,
                **beta_field(m, args.beta),
            )
            for m in methods
        }
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    folders = {m: out if len(methods) == 1 else out / m for m in methods}
    minutes = {}
    for method, cfg in configs.items():
        try:
            minutes[method] = train(cfg, folders[method], resume=args.resume, tensorboard=False)["seconds"] / 60
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except ModuleNotFoundError as exc:
            return report_missing(exc)
    cfg = configs[methods[0]]
    rand = random_returns(cfg)  # the methods' configs differ in nothing the environment reads
    r_mean, r_std = float(np.mean(rand)), float(np.std(rand))
    records, curves, lines = {}, [], []
    for method in methods:
        table = read_csv_columns(folders[method] / "eval.csv")
        steps = [int(x) for x in table["env_step"]]
        means, stds = table["mean_return"].tolist(), table["std_return"].tolist()
        passed, last, mark = verdict(means, rand)
        name, colour = CHECK_METHODS[method]
        curves.append((f"{name} (evaluation: mean ± std of {cfg.eval_episodes} episodes)", colour, steps, means, stds))
        records[method] = {
            "config": configs[method].to_dict(),
            "minutes": minutes[method],
            "steps": steps,
            "eval_mean": means,
            "eval_std": stds,
            "random_returns": rand,
            "random_mean": r_mean,
            "random_std": r_std,
            "last_evaluations_mean": last,
            "pass_mark": mark,
            "passed": passed,
        }
        who = f"{name}: " if len(methods) > 1 else ""
        lines.append(
            f"{'PASS' if passed else 'FAIL'}: {who}mean of the last {LAST_EVALUATIONS} evaluations "
            f"{last:.1f} (up to {steps[-1]} env steps) against a pass mark of {mark:.1f}; random policy "
            f"{r_mean:.1f} ± {r_std:.1f}; {minutes[method]:.1f} min of training"
        )
    mark = records[methods[0]]["pass_mark"]
    setting = " with background + camera distractions" if args.distractions else ""
    if len(methods) == 1:
        method = methods[0]
        title = (
            f"{CHECK_METHODS[method][0]}, {cfg.task}{setting} from {cfg.image_size}x{cfg.image_size} pixels, "
            f"2 CPU cores: {minutes[method]:.0f} min\nlast {LAST_EVALUATIONS} evals "
            f"{records[method]['last_evaluations_mean']:.0f} vs random {r_mean:.0f} ± {r_std:.0f} "
            f"(pass mark {mark:.0f})"
        )
        record = records[method]
    else:
        title = (
            f"{cfg.task}{setting}, {cfg.image_size}x{cfg.image_size} pixels, 2 CPU cores\n"
            + ", ".join(
                f"{CHECK_METHODS[m][0]} {records[m]['last_evaluations_mean']:.0f} ({minutes[m]:.0f} min)"
                for m in methods
            )
            + f" vs random {r_mean:.0f} ± {r_std:.0f} (pass mark {mark:.0f})"
        )
        record = {
            "distractions": args.distractions,
            "random_returns": rand,
            "random_mean": r_mean,
            "random_std": r_std,
            "pass_mark": mark,
            "passed": all(r["passed"] for r in records.values()),
            "methods": records,
        }
    png = plot(out / "learning.png", curves, r_mean, r_std, title, mark)
    atomic_write_json(out / "learning.json", record)
    print("\n".join(lines) + f"; figure {png}")
    return 0 if all(r["passed"] for r in records.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
