"""Evaluate a trained agent: ``python -m agents.evaluate RUN_OR_CHECKPOINT [--episodes 10]``.

Rolls out the deterministic policy (tanh of the actor's mean) of a checkpoint
for N episodes and prints ``mean ± std`` of the returns, and which backgrounds
were used. ``--split eval`` (default) plays the 30 held-out background videos,
``--split train`` the 2 training ones; a run trained without backgrounds is
evaluated with its own settings (the split is then irrelevant). Episode j is
seeded with ``(seed, eval, j)`` exactly as during training, so ``--seed`` equal
to the run's seed and ``--episodes`` equal to its ``eval_episodes`` reproduces
the last row of the run's ``eval.csv`` (when the checkpoint is the final one).

    python -m agents.evaluate runs/walker-walk/eps-r/seed0 --episodes 10 --json eval.json

Bad input (a missing file, a file that is not a checkpoint, episodes < 1, an
unknown split or device) prints one line ``error: ...`` naming the field and
exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

import numpy as np

from bisimkit.errors import InputError, check_count
from bisimkit.progress import Progress

from .entry import run_command
from .rollout import rollout
from .videos import SPLITS


def evaluate_checkpoint(
    path: str | os.PathLike, episodes: int = 10, split: str = "eval", seed: int = 0, device: str = "auto"
) -> dict:
    """Evaluate the checkpoint of a run folder (or a checkpoint file); returns a JSON-ready summary.

    Keys: ``checkpoint``, ``task``, ``method``, ``run_seed``, ``env_steps`` (trained),
    ``split`` ('eval', 'train' or 'train-settings' without backgrounds), ``seed``,
    ``episodes``, ``returns``, ``mean_return``, ``std_return`` (population std over
    episodes, as in ``eval.csv``), ``backgrounds`` (where the videos come from),
    ``videos`` (the video of each episode, None without backgrounds) and ``device``.
    """
    episodes = check_count("episodes", episodes)
    seed = check_count("seed", seed, low=0)
    if split not in SPLITS:
        raise InputError(f"split: {split!r} is not one of {', '.join(sorted(SPLITS))}")
    from .restore import restore_agent  # torch (the agents' extra): --help and bad input need none

    restored = restore_agent(path, device, split=split)
    env = restored.env
    bar = Progress(episodes, f"[evaluate {restored.config.method} {restored.config.task}]", unit="episodes", delay=2.0)
    try:
        returns, videos = rollout(restored.agent, env, episodes, seed, progress=bar)
        backgrounds = env.background_source
        used_split = env.split or "train-settings"
    finally:
        bar.close()
        env.close()
    cfg = restored.config
    return {
        "checkpoint": str(restored.path),
        "task": cfg.task,
        "method": cfg.method,
        "run_seed": cfg.seed,
        "env_steps": restored.env_steps,
        "split": used_split,
        "seed": seed,
        "episodes": episodes,
        "returns": returns,
        "mean_return": float(np.mean(returns)),
        "std_return": float(np.std(returns)),
        "backgrounds": backgrounds,
        "videos": videos,
        "device": restored.device,
    }


def format_summary(result: dict) -> str:
    """Two human-readable lines: the return and the backgrounds of an :func:`evaluate_checkpoint` result."""
    head = (
        f"{result['task']} {result['method']} (run seed {result['run_seed']}, {result['env_steps']} env steps): "
        f"return {result['mean_return']:.2f} ± {result['std_return']:.2f} over {result['episodes']} "
        f"episode{'s' if result['episodes'] != 1 else ''} (split {result['split']}, seed {result['seed']})"
    )
    named = [v for v in result["videos"] if v is not None]
    if named:
        counts = Counter(named)
        listing = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in sorted(counts.items()))
        tail = f"backgrounds: {result['backgrounds']}; videos: {listing}"
    else:
        tail = f"backgrounds: {result['backgrounds']}"
    return head + "\n" + tail


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors raise :class:`InputError` (one ``error:`` line, exit 2)."""

    def error(self, message: str):
        """argparse's error hook: raise instead of printing the usage and exiting."""
        raise InputError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser of ``python -m agents.evaluate``."""
    p = _Parser(
        prog="python -m agents.evaluate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("path", metavar="RUN_OR_CHECKPOINT", help="a run folder (holding checkpoint.pt) or a checkpoint")
    p.add_argument("--episodes", type=int, default=10, help="evaluation episodes")
    p.add_argument(
        "--split", default="eval", choices=sorted(SPLITS), help="background videos: eval (held out) or train"
    )
    p.add_argument("--seed", type=int, default=0, help="episode j is seeded with (seed, eval, j)")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the summary as JSON to OUT")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on bad input)."""

    def body() -> int:
        args = build_parser().parse_args(argv)
        result = evaluate_checkpoint(args.path, args.episodes, args.split, args.seed, args.device)
        if args.json:
            try:
                with open(args.json, "w") as f:
                    json.dump(result, f, indent=2)
            except OSError as exc:
                raise InputError(f"json: cannot write {args.json}: {exc.strerror}") from None
        print(format_summary(result))
        return 0

    return run_command(body, bad_input=(InputError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
