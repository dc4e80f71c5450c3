"""Does the encoder keep frames apart? Latent spread over the first updates, per loss configuration.

    python -m benchmarks.encoder_collapse [--task walker-stand] [--transitions 2500] [--updates 800]
                                          [--every 100] [--variants drq,eps-r,...] [--seed 0]
                                          [--out benchmarks/results/encoder_collapse.json]
                                          [--figure docs/encoder_collapse.png]

The learning check's configuration (``benchmarks.learning_check.check_config``, background and
camera distractions on), trained offline: ``--transitions`` transitions of a uniformly random
policy are collected once, and each variant (:data:`VARIANTS`) starts from the same initial weights
and takes ``--updates`` updates (``Agent.update``: critic, actor, world model, bisimulation loss as
configured) on batches drawn from them with the same random stream. Every ``--every`` updates it
records, on a fixed probe set of 512 of the frames:

- the **latent spread**: the standard deviation of the critic's latent over the probe frames,
  averaged over latent coordinates. The encoder starts near 0.25; a latent that maps every frame to
  nearly one point (collapse) has a spread near 0; DrQ's encoder, trained by its critic alone,
  climbs back above 0.1 after an early dip;
- the **inverse-dynamics units alive**: the fraction of the inverse head's first-layer ReLU units
  that fire on some pair of consecutive probe frames (a unit that never fires passes no gradient);
- the update's losses.

It isolates which loss term holds the latent collapsed, on data that is the same for every variant
(no policy differences), in minutes instead of a learning run's hours.
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError, check_count
from bisimkit.files import atomic_write_bytes, atomic_write_json

#: name -> (method, TrainConfig changes, what it tests)
VARIANTS: dict[str, tuple[str, dict, str]] = {
    "drq": ("drq", {}, "the critic alone trains the encoder"),
    "eps-r": ("eps-r", {}, "the paper's loss: critic + transition + reward + inverse dynamics + 0.5 bisimulation"),
    "eps-r beta 0.1": ("eps-r", {"beta": 0.1}, "a fifth of the bisimulation weight"),
    "eps-r world model only": ("eps-r", {"bisim_warmup": 10**9}, "no bisimulation loss"),
    "eps-r no model grad": (
        "eps-r",
        {"model_grad": False},
        "transition and reward heads on detached latents (model_grad off)",
    ),
    "eps-r no model grad beta 0.1": (
        "eps-r",
        {"model_grad": False, "beta": 0.1},
        "model_grad off and a fifth of the bisimulation weight",
    ),
    "eps-r no model grad bisim after 400": (
        "eps-r",
        {"model_grad": False, "bisim_warmup": 400},
        "model_grad off and the bisimulation loss from update 400",
    ),
    "eps-r spread units": (
        "eps-r",
        {"spread_units": True},
        "the bisimulation loss in units of the batch's latent spread (spread_units)",
    ),
    "eps-r no model grad spread units": (
        "eps-r",
        {"model_grad": False, "spread_units": True},
        "model_grad off and spread_units",
    ),
}
PROBE_FRAMES = 512


class StoredActions:
    """The learning check's random policy, each action rounded to float32 (the dtype transitions store)
    before it acts, so the stored action is exactly the one the environment received."""

    def __init__(self, policy):
        self.policy = policy

    def act(self, obs, explore: bool = False) -> np.ndarray:
        return np.asarray(self.policy.act(obs, explore), np.float32)


def collect(cfg, transitions: int, seed: int) -> dict[str, np.ndarray]:
    """``transitions`` transitions of the learning check's uniformly random policy in the configuration's
    environment (training videos; episodes seeded as training episodes)."""
    from agents.rollout import TRAIN_STREAM, make_run_env
    from benchmarks.learning_check import RandomPolicy
    from benchmarks.learning_check_diagnosis import record_transitions

    env = make_run_env(cfg, "train")
    try:
        actions = int(env.action_spec.shape[0])
        data = record_transitions(
            env, StoredActions(RandomPolicy(actions, seed)), seed, stream=TRAIN_STREAM, limit=transitions
        )
        data["shape"], data["actions"] = np.asarray(env.observation_shape), np.asarray(actions)
    finally:
        env.close()
    return data


def spread_and_units(agent, probe: np.ndarray, episode: np.ndarray) -> tuple[float, float | None]:
    """(latent spread over ``probe``, fraction of inverse-head units alive or None)."""
    from benchmarks.learning_check_diagnosis import inverse_alive

    latents = agent.embed(probe).double().cpu().numpy()
    return float(latents.std(0).mean()), inverse_alive(agent, latents, episode)


def run_variant(name: str, data: dict[str, np.ndarray], task: str, updates: int, every: int, seed: int) -> dict:
    """One variant's trace (module doc)."""
    import torch

    from agents.agent import Agent
    from benchmarks.learning_check import check_config

    method, changes, about = VARIANTS[name]
    cfg = check_config(method, distractions=True, task=task, **changes)
    torch.manual_seed(seed)  # the same initial encoder and critic for every variant
    agent = Agent(tuple(int(x) for x in data["shape"]), int(data["actions"]), cfg, "cpu")
    rng = np.random.default_rng(seed)  # the same batches for every variant
    count = len(data["obs"])
    probe_rows = np.linspace(0, count - 1, min(PROBE_FRAMES, count)).astype(int)
    probe, episode = data["obs"][probe_rows], data["episode"][probe_rows]
    trace: dict[str, list] = {"update": [], "latent_spread": [], "inverse_alive": [], "losses": []}
    started, stats = time.perf_counter(), {}
    for u in range(updates + 1):
        if u % every == 0 or u == updates:
            spread, alive = spread_and_units(agent, probe, episode)
            trace["update"].append(u)
            trace["latent_spread"].append(spread)
            trace["inverse_alive"].append(alive)
            trace["losses"].append({k: float(v) for k, v in stats.items()})
        if u < updates:
            idx = rng.integers(0, count, cfg.batch_size)
            stats = agent.update({k: data[k][idx] for k in ("obs", "next_obs", "action", "reward", "discount")})
    return {
        "variant": name,
        "about": about,
        "method": method,
        "changes": changes,
        "seconds": time.perf_counter() - started,
        **trace,
    }


def plot(record: dict, path: str | Path) -> None:
    """Latent spread against updates, one line per variant (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.2))
    for trace in record["variants"]:
        style = "-" if trace["method"] == "drq" else ("--" if trace["changes"].get("model_grad") is False else ":")
        ax.plot(trace["update"], trace["latent_spread"], style, marker="o", markersize=3, label=trace["variant"])
    ax.set_yscale("log")
    ax.set_xlabel("updates (batch %d, the same batches for every variant)" % record["batch_size"])
    ax.set_ylabel("latent spread (std over frames)")
    ax.set_title(
        f"{record['task']}, background + camera distractions: {record['transitions']} random-policy transitions",
        fontsize=9,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())


def parse_variants(text: str) -> list[str]:
    """Comma-separated names of :data:`VARIANTS`, each once."""
    names = [v.strip() for v in text.split(",")]
    for i, name in enumerate(names):
        if name not in VARIANTS:
            raise InputError(f"{name!r} (item {i}) is not one of {', '.join(VARIANTS)}", param="variants")
        if name in names[:i]:
            raise InputError(f"{name!r} (item {i}) is named twice", param="variants")
    return names


def main(argv: list[str] | None = None) -> int:
    from agents.config import ConfigParser

    p = ConfigParser(prog="python -m benchmarks.encoder_collapse", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="walker-stand", help="the DCS task (default walker-stand)")
    p.add_argument(
        "--transitions",
        type=int,
        default=2500,
        help="random-policy transitions collected once, the training data of every variant (at least 2; default 2500)",
    )
    p.add_argument("--updates", type=int, default=800, help="updates of each variant (default 800)")
    p.add_argument(
        "--every", type=int, default=100, help="updates between measurements of the latent spread (default 100)"
    )
    p.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of: {', '.join(VARIANTS)} (default: all)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the random policy and its episodes, the initial weights and the batches (default 0)",
    )
    p.add_argument("--out", default=None, help="write the record as JSON to this file (default: not written)")
    p.add_argument(
        "--figure", default=None, help="draw the latent spread of every variant to this PNG file (default: no figure)"
    )
    try:
        args = p.parse_args(argv)
        names = parse_variants(args.variants)
        check_count("transitions", args.transitions, low=2)
        check_count("updates", args.updates)
        check_count("every", args.every)
        check_count("seed", args.seed, low=0)
        from benchmarks.learning_check import check_config

        cfg = check_config("drq", distractions=True, task=args.task)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"collecting {args.transitions} random-policy transitions on {args.task} (distractions on)", flush=True)
    data = collect(cfg, args.transitions, args.seed)
    record = {
        "task": args.task,
        "transitions": args.transitions,
        "updates": args.updates,
        "every": args.every,
        "seed": args.seed,
        "batch_size": cfg.batch_size,
        "image_size": cfg.image_size,
        "variants": [],
    }
    for name in names:
        trace = run_variant(name, data, args.task, args.updates, args.every, args.seed)
        record["variants"].append(trace)
        spreads = ", ".join(f"{u}: {s:.4f}" for u, s in zip(trace["update"], trace["latent_spread"]))
        print(f"{name}: latent spread {spreads} ({trace['seconds']:.0f} s)", flush=True)
    if args.out:
        atomic_write_json(args.out, record)
    if args.figure:
        plot(record, args.figure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
