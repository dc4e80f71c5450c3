"""Cost of one agent update per method, and the overhead of the entangled loss.

Times :meth:`agents.agent.Agent.update` at the paper's batch size (512) on
random pixel batches (3 stacked 84x84 frames; no environment needed), for every
method, interleaving the methods in rounds so machine load hits all alike, and
reports the median seconds per update, updates/s and the ratios that matter:

* ``eps-r / drq+aux``: what the entangled loss adds to a DrQ update that
  already trains the world model it samples from (the target: at most 1.10);
* ``eps-r / drq``: the whole cost of the method over plain DrQ.

    python -m benchmarks.bench_updates [--device auto] [--batch 512] [--rounds 5] [--methods drq,eps-r]

Writes ``benchmarks/results/updates-<device>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
VARIANTS = ["sac", "drq", "drq+aux", "drq+dbc", "eps-r", "drq+pse", "eps-pi"]


def make_agent(variant: str, batch: int, device, seed: int = 0):
    """An agent of ``variant`` (a method name, or 'drq+aux': DrQ training the world-model heads)."""
    import torch

    from agents.agent import Agent
    from agents.config import TrainConfig

    method, aux = ("drq", True) if variant == "drq+aux" else (variant, None)
    torch.manual_seed(seed)
    cfg = replace(TrainConfig(), method=method, aux=aux, batch_size=batch).validated()
    return Agent((9, 84, 84), 6, cfg, device)


def random_batch(batch: int, device, seed: int = 0) -> dict:
    """A replay-like batch with the pixels already on ``device`` (as the GPU replay mirror gives them)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 256, (batch, 9, 84, 84), generator=g, dtype=torch.uint8).to(device)
    rng = np.random.default_rng(seed)
    return {"obs": obs, "next_obs": torch.roll(obs, 1, dims=0),
            "action": rng.uniform(-1, 1, (batch, 6)).astype(np.float32),
            "reward": rng.uniform(0, 1, batch).astype(np.float32), "discount": np.ones(batch, np.float32)}


def time_updates(agent, batch: dict, updates: int, device) -> float:
    """Mean seconds per update over ``updates`` updates (an even number: actor steps included)."""
    import torch

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(updates):
        agent.update(batch)
    agent.flush_checks()
    sync()
    return (time.perf_counter() - start) / updates


def main(argv: list[str] | None = None) -> int:
    import torch

    from agents.agent import fast_cuda_math, pick_device

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--updates", type=int, default=2, help="updates per timed block (even)")
    p.add_argument("--methods", default=",".join(VARIANTS))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    device = pick_device(args.device)
    if device.type == "cuda":
        fast_cuda_math()
        if args.updates == 2:
            args.updates = 20
    variants = args.methods.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        print(f"error: methods: unknown {', '.join(unknown)} (choose from {', '.join(VARIANTS)})", file=sys.stderr)
        return 2
    batch = random_batch(args.batch, device)
    agents = {v: make_agent(v, args.batch, device) for v in variants}
    for agent in agents.values():  # warm-up: allocator, cuDNN autotuning
        time_updates(agent, batch, 2, device)
    times: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in variants:
            times[v].append(time_updates(agents[v], batch, args.updates, device))
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{v} {1e3 * times[v][-1]:.1f} ms" for v in variants),
              file=sys.stderr)
    median = {v: statistics.median(t) for v, t in times.items()}
    record = {"device": str(device), "device_name": torch.cuda.get_device_name(device) if device.type == "cuda"
              else "cpu", "threads": torch.get_num_threads(), "batch": args.batch, "rounds": args.rounds,
              "updates_per_block": args.updates,
              "seconds_per_update": median, "updates_per_s": {v: 1.0 / s for v, s in median.items()}}
    ratios = {}
    if "eps-r" in median and "drq+aux" in median:
        ratios["eps-r / drq+aux"] = median["eps-r"] / median["drq+aux"]
    if "eps-pi" in median and "drq+aux" in median:
        ratios["eps-pi / drq+aux"] = median["eps-pi"] / median["drq+aux"]
    if "eps-r" in median and "drq" in median:
        ratios["eps-r / drq"] = median["eps-r"] / median["drq"]
    record["ratios"] = ratios
    print(f"{'method':10s} {'ms/update':>10s} {'updates/s':>10s}")
    for v in variants:
        print(f"{v:10s} {1e3 * median[v]:10.1f} {1 / median[v]:10.2f}")
    for name, value in ratios.items():
        verdict = " (target <= 1.10: " + ("PASS)" if value <= 1.10 else "FAIL)") if name == "eps-r / drq+aux" else ""
        print(f"{name}: {value:.3f}{verdict}")
    out = Path(args.out) if args.out else RESULTS / f"updates-{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
