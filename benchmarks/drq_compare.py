"""``--preset drq`` against DrQ's own update, update by update, on any device.

The diagnosis when ``--preset drq`` learns less than DrQ's published
curve: compare per-update losses and Q values with a minimal reimplementation
of DrQ's update on the same batches. The reimplementation is
:mod:`benchmarks.drq_reference` (a transcription of denisyarats/drq ``drq.py``,
float32 throughout, as DrQ ran). For each path of our agent (``plain``: float32;
``fast``: the bfloat16 conv trunk, channels-last, fused Adam, the CUDA default)
two measurements are made, with the same batches and the same random draws:

* **same weights**: before every update the reference is given the agent's
  weights, then both do one update; the relative differences of the critic
  loss, the mean Q and the actor loss are the error of one update;
* **free run**: both start from the same weights and do ``--updates`` updates
  each on their own; the relative difference of the critic losses over the last
  ten updates says how far the two trajectories drift apart.

    python -m benchmarks.drq_compare [--device auto] [--paths plain,fast] [--updates 100] [--batch 512]
                                     [--data cartpole|random] [--out FILE]

``--data cartpole`` (default) trains on 1000 transitions of cartpole-swingup
under random actions (84 px, dm_control's visuals, as ``--preset drq`` renders);
``random`` on random pixels (no simulator; the losses then mean nothing but
their agreement). Writes ``benchmarks/results/drq-compare-<device>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from agents.config import make_config

RESULTS = Path(__file__).parent / "results"
PATHS = ("plain", "fast")
TRANSITIONS = 1000


def cartpole_buffer(transitions: int = TRANSITIONS, seed: int = 0):
    """A replay buffer of cartpole-swingup transitions under uniform random actions."""
    from agents.dcs import make_env  # the simulator stack (agents' extra)
    from agents.replay import ReplayBuffer  # with the environment it fills

    env = make_env("cartpole-swingup", background=False, camera=False, seed=seed, fast_render=False)
    rng = np.random.default_rng(seed)
    buffer, obs, episode = ReplayBuffer(transitions, env.observation_shape, 1), env.reset(seed=seed), 0
    while buffer.total < transitions:
        action = rng.uniform(-1, 1, 1).astype(np.float32)
        nxt, reward, done, info = env.step(action)
        buffer.add(obs, action, reward, 0.0 if done and not info["truncated"] else 1.0, nxt)
        if done:
            episode += 1
            obs = env.reset(seed=seed + episode)
        else:
            obs = nxt
    env.close()
    return buffer


def batches(data: str, count: int, batch: int, seed: int = 0) -> list[dict]:
    """``count`` replay batches of ``batch`` transitions (numpy arrays)."""
    rng = np.random.default_rng(seed)
    if data == "cartpole":
        buffer = cartpole_buffer()
        return [buffer.sample(batch, rng) for _ in range(count)]
    out = []
    for _ in range(count):
        obs = rng.integers(0, 256, (batch, 9, 84, 84), dtype=np.uint8)
        out.append(
            {
                "obs": obs,
                "next_obs": np.concatenate(
                    [obs[:, 3:], rng.integers(0, 256, (batch, 3, 84, 84), dtype=np.uint8)], axis=1
                ),
                "action": rng.uniform(-1, 1, (batch, 1)).astype(np.float32),
                "reward": rng.uniform(0, 8, batch).astype(np.float32),
                "discount": np.ones(batch, np.float32),
            }
        )
    return out


def _pair(path: str, batch: int, device):
    """Our drq-preset agent on ``path`` and DrQ's transcription holding the same weights."""
    import torch  # torch, the agents' extra: --help and the record's summary need none

    from agents.agent import Agent  # torch
    from agents.encoder import conv_output_side  # torch
    from benchmarks.drq_reference import DrQ, load_from_agent  # torch

    torch.manual_seed(0)
    cfg = make_config("drq", batch_size=batch, device=str(device), fast=path == "fast", graphs=False)
    agent = Agent((9, 84, 84), 1, cfg, device)
    ref = DrQ(9, conv_output_side(84), 1, hidden=cfg.hidden, device=device)
    load_from_agent(ref, agent)
    return agent, ref


def _rel(a: list[float], b: list[float]) -> np.ndarray:
    a_, b_ = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a_ - b_) / np.maximum(np.abs(b_), 1e-12)


def compare(path: str, data: list[dict], device) -> dict:
    """Both measurements of the module doc for one path; the reference is always float32."""
    import torch  # torch, the agents' extra: --help and the record's summary need none

    from benchmarks.drq_reference import load_from_agent  # torch

    ours: dict[str, list[float]] = {"critic": [], "q": [], "actor": []}
    theirs: dict[str, list[float]] = {"critic": [], "q": [], "actor": []}
    agent, ref = _pair(path, len(data[0]["reward"]), device)
    for step, batch in enumerate(data):  # same weights before every update
        load_from_agent(ref, agent)
        torch.manual_seed(100 + step)
        stats = agent.update(batch)
        torch.manual_seed(100 + step)
        critic, actor = ref.update(batch, step)
        ours["critic"].append(float(stats["critic_loss"]))
        theirs["critic"].append(float(critic))
        ours["q"].append(float(stats["q"]))
        theirs["q"].append(float(ref.last_q))
        if actor is not None:
            ours["actor"].append(float(stats["actor_loss"]))
            theirs["actor"].append(float(actor.detach()))
    agent.flush_checks()
    free_ours, free_theirs = [], []
    agent, ref = _pair(path, len(data[0]["reward"]), device)
    for step, batch in enumerate(data):  # free run
        torch.manual_seed(100 + step)
        free_ours.append(float(agent.update(batch)["critic_loss"]))
        torch.manual_seed(100 + step)
        free_theirs.append(float(ref.update(batch, step)[0]))
    agent.flush_checks()
    same = {k: _rel(ours[k], theirs[k]) for k in ours}
    tail = _rel(free_ours[-10:], free_theirs[-10:])
    return {
        "same_weights": {k: {"median_rel": float(np.median(v)), "max_rel": float(v.max())} for k, v in same.items()},
        "free_run": {"last10_median_rel": float(np.median(tail)), "ours": free_ours, "drq": free_theirs},
        "q_ours": ours["q"],
        "q_drq": theirs["q"],
    }


def main(argv: list[str] | None = None) -> int:
    import torch  # torch, the agents' extra: --help and the record's summary need none

    from agents.agent import fast_cuda_math, pick_device  # torch

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--device",
        default="auto",
        help="torch device: auto (CUDA when present, else CPU), cpu, cuda or cuda:N (default auto)",
    )
    p.add_argument(
        "--paths",
        default=",".join(PATHS),
        help=f"comma-separated paths of our agent, of {', '.join(PATHS)} (default: all)",
    )
    p.add_argument(
        "--updates",
        type=int,
        default=100,
        help="updates of each measurement, one batch each (at least 10; default 100)",
    )
    p.add_argument("--batch", type=int, default=512, help="transitions per batch (default 512)")
    p.add_argument(
        "--data",
        default="cartpole",
        choices=("cartpole", "random"),
        help=f"the batches' source: cartpole, {TRANSITIONS} cartpole-swingup transitions under random "
        "actions, or random, random pixels (default cartpole)",
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"the JSON file of the record (default {RESULTS / 'drq-compare-DEVICE.json'}, DEVICE cpu or cuda)",
    )
    args = p.parse_args(argv)
    paths = args.paths.split(",")
    bad = [x for x in paths if x not in PATHS]
    if bad or args.updates < 10 or args.batch < 1:
        print(
            f"error: {'paths: unknown ' + ', '.join(bad) if bad else 'updates: at least 10; batch: positive'}",
            file=sys.stderr,
        )
        return 2
    try:
        device = pick_device(args.device)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if device.type == "cuda":
        fast_cuda_math()
    data = batches(args.data, args.updates, args.batch)
    record = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "data": args.data,
        "batch": args.batch,
        "updates": args.updates,
        "paths": {},
    }
    for path in paths:
        r = record["paths"][path] = compare(path, data, device)
        same = r["same_weights"]
        print(
            f"{path} vs DrQ (float32), same weights each update: critic loss {same['critic']['median_rel']:.1e} "
            f"median / {same['critic']['max_rel']:.1e} max, Q {same['q']['median_rel']:.1e} / "
            f"{same['q']['max_rel']:.1e}, actor loss {same['actor']['median_rel']:.1e} / "
            f"{same['actor']['max_rel']:.1e}; free run of {args.updates} updates: critic losses "
            f"{r['free_run']['last10_median_rel']:.1e} apart over the last 10"
        )
    out = Path(args.out) if args.out else RESULTS / f"drq-compare-{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
