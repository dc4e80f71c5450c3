"""python -m agents.metric_check --scene ring --method eps-r --out DIR

Train a bisimulation agent's encoder on a pixel scene with distractors and compare its
latent distance with the exact metric of the MDP behind the pixels (docs/agents.md,
"The learned metric against the exact one"). Writes into DIR (which must be new or
empty): summary.json, learned.npy, exact.npy, states.npy, the scene's MDP (mdp.json,
or mdp-gaussian.json for a linear-Gaussian scene), table.md and metric_check.png.

A user's own scene: --mdp FILE (a finite MDP or linear-Gaussian JSON file that bisimkit
loads) with --render MODULE:FUNCTION (a function of a state returning an (H, W, 3) or
(H, W, 4) uint8 image) and, for a finite MDP, --behaviour FILE (JSON {"mean": [...],
"std": [...]}: the pre-squash behaviour per state).

Variants: --coupling independent (eps-r's reward-ground loss with independent
noise for the two states), --update-rule dbc (drq+dbc under DBC's own update).
Every summary states --samples-per-pair, the noise draws per bisimulation target
(default 1, as training draws).

Bad input is one line naming the argument, exit status 2, and nothing written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from bisimkit.errors import InputError
from bisimkit.files import check_output, staged_folder
from bisimkit.gaussian import load_gaussian
from bisimkit.gaussian.model import is_gaussian_file
from bisimkit.mdp import load_mdp
from figures.metric_check import plot_metric_check

from ..entry import run_command
from ..scenes import DISTRACTORS, IMAGE_SIZE, SCENES
from .learn import learn_metric
from .methods import METRIC_METHODS, SAMPLES_PER_PAIR
from .references import MC_SAMPLES
from .results import meets_targets, write_results
from .settings import MODES, Settings

#: The options that are :class:`Settings` fields of the same name (``--config`` is parsed as JSON first).
SETTINGS_OPTIONS = (
    "method",
    "distractors",
    "steps",
    "mode",
    "batch",
    "image_size",
    "seed",
    "device",
    "draws",
    "schedule",
    "eval_every",
    "samples",
    "warmup",
    "samples_per_pair",
    "coupling",
    "update_rule",
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m agents.metric_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--scene", default=None, help=f"a built-in scene: {', '.join(SCENES)} (default ring)")
    p.add_argument("--mdp", default=None, help="a finite MDP or linear-Gaussian JSON file (with --render)")
    p.add_argument("--render", default=None, help="MODULE:FUNCTION drawing a state of --mdp")
    p.add_argument("--behaviour", default=None, help="finite --mdp: JSON {\"mean\": [...], \"std\": [...]}")
    p.add_argument("--method", default="eps-r", help=f"one of {', '.join(METRIC_METHODS)} (default eps-r)")
    p.add_argument("--mode", default="isolated", help=f"{' or '.join(MODES)} (default isolated)")
    p.add_argument("--out", required=True, help="folder for the results (new or empty)")
    p.add_argument("--steps", type=int, default=1500, help="updates (default 1500)")
    p.add_argument("--batch", type=int, default=64, help="transitions per update (default 64)")
    p.add_argument(
        "--samples-per-pair",
        type=int,
        default=SAMPLES_PER_PAIR,
        help="noise draws averaged per bisimulation target (TrainConfig.bisim_samples; default "
        f"{SAMPLES_PER_PAIR}, as training draws)",
    )
    p.add_argument(
        "--coupling",
        default=None,
        help="eps-r only: 'independent', its reward-ground loss with the two states' noise drawn "
        "independently (default: the method's own coupling)",
    )
    p.add_argument(
        "--update-rule",
        default="joint",
        help="joint, or for drq+dbc dbc: DBC's own update as the dbc preset sets it up (default joint)",
    )
    p.add_argument(
        "--image-size", type=int, default=IMAGE_SIZE, help=f"frame side of a built-in scene (default {IMAGE_SIZE})"
    )
    p.add_argument(
        "--distractors",
        default="all",
        help=f"comma-separated subset of {', '.join(DISTRACTORS)}, 'all' or 'none' (default all)",
    )
    p.add_argument("--draws", type=int, default=8, help="distractor draws per evaluation state (default 8)")
    p.add_argument("--seed", type=int, default=0, help="seed of networks, transitions and distractors")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument(
        "--schedule",
        default="decay",
        help="constant, or decay: the learning rate's cosine to a tenth over the second half (default decay)",
    )
    p.add_argument("--eval-every", type=int, default=0, help="also measure every N updates (curve.json)")
    p.add_argument(
        "--samples",
        type=int,
        default=MC_SAMPLES,
        help=f"Monte Carlo rollout pairs per state pair on a Gaussian scene (default {MC_SAMPLES})",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="updates of the world model alone before the bisimulation loss joins the encoder's loss "
        "(TrainConfig.bisim_warmup; default a third of --steps)",
    )
    p.add_argument(
        "--config",
        default=None,
        help="more agents.config.TrainConfig fields as JSON, e.g. '{\"augment\": false, \"beta\": 1.0}'",
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def _user_scene(args):
    """The MDP, renderer and behaviour of --mdp / --render / --behaviour."""
    if args.render is None:
        raise InputError("render: --mdp needs --render MODULE:FUNCTION")
    module, _, name = args.render.partition(":")
    try:
        render = getattr(importlib.import_module(module), name) if name else None
    except (ImportError, AttributeError) as exc:
        raise InputError(f"render: cannot load {args.render!r} ({exc})") from None
    if render is None or not callable(render):
        raise InputError(f"render: {args.render!r} is not MODULE:FUNCTION naming a function")
    if not os.path.exists(args.mdp):
        raise InputError(f"mdp: {args.mdp} does not exist")
    if is_gaussian_file(args.mdp):
        return load_gaussian(args.mdp), render, None
    mdp = load_mdp(args.mdp)
    if args.behaviour is None:
        raise InputError("behaviour: a finite --mdp needs --behaviour FILE ({\"mean\": [...], \"std\": [...]})")
    try:
        data = json.loads(Path(args.behaviour).read_text())
        behaviour = (data["mean"], data["std"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"behaviour: {args.behaviour} is not a JSON object with mean and std ({exc})") from None
    return mdp, render, behaviour


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(lambda: _run(args), interrupted="nothing was written", bad_input=(InputError, ValueError))


def _run(args) -> int:
    out = Path(args.out)
    if args.method not in METRIC_METHODS:
        raise InputError(
            f"method: {args.method!r} has no metric loss to check (choose from {', '.join(METRIC_METHODS)})"
        )
    if args.scene is not None and args.mdp is not None:
        raise InputError("scene: give --scene or --mdp, not both")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"out: {out} already exists and is not an empty folder")
    check_output(out, folder=True)
    if args.threads is not None:
        if args.threads < 1:
            raise InputError(f"threads: expected a positive integer, got {args.threads}")
        import torch  # the agents extra: a missing one is reported by run_command, not at import

        torch.set_num_threads(args.threads)
    try:
        config = json.loads(args.config) if args.config else {}
    except ValueError as exc:
        raise InputError(f"config: not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise InputError("config: expected a JSON object of TrainConfig fields")
    if args.mdp is not None:
        mdp, render, behaviour = _user_scene(args)
    else:
        mdp, render, behaviour = args.scene or "ring", None, None
    progress = (
        None
        if args.quiet
        else (
            lambda step, row: print(
                f"step {step}/{args.steps}: "
                + ", ".join(f"{k} {v:.4g}" for k, v in row.items() if isinstance(v, float)),
                flush=True,
            )
        )
    )
    settings = Settings(**{name: getattr(args, name) for name in SETTINGS_OPTIONS}, config=config)
    check = learn_metric(mdp, render, settings, behaviour=behaviour, progress=progress)
    # everything computed: write into a fresh folder beside OUT, which then takes the (empty) OUT's place
    with staged_folder(out) as staging:
        write_results(check, staging)
        plot_metric_check(
            staging / "metric_check.png",
            [
                {
                    "learned": check.learned,
                    "exact": check.exact,
                    "summary": check.summary,
                    "title": f"{check.summary['scene']} {check.summary['method']} ({check.summary['mode']})",
                }
            ],
        )
    s = check.summary
    met = meets_targets(s)
    print(
        f"{s['scene']} {s['method']} ({s['mode']}): mean error {100 * s['mean_relative_error']:.2f}%, max "
        f"{100 * s['max_relative_error']:.2f}% of the largest exact distance {s['exact_max']:.4g}; Spearman "
        f"{s['spearman']:.3f}; distractor invariance {s['distractor_invariance']:.3f} (held-out family "
        f"{s['held_out']['distractor_invariance']:.3f}); {s['samples_per_pair']} sample(s) per pair; "
        f"{s['seconds']:.0f} s "
        f"(targets met: {', '.join(k for k, v in met.items() if v) or 'none'})"
    )
    if not s["exact"]["target_exact"]:
        print(f"note: {s['exact']['note']}")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
