"""Cost of one agent update per method, plain path against fast path, in one run.

Times :meth:`agents.agent.Agent.update` at the paper's batch size (512) on
random pixel batches (3 stacked 84x84 frames; no environment needed). Every
method of the ``paper`` preset runs twice: ``plain`` (float32 NCHW convolutions,
foreach Adam; TF32 matrix units on CUDA) and ``fast`` (channels-last bf16 conv
trunk, fused Adam). Two reference rows come with them:

* ``eps-r@legacy``: the update as it was before the presets (one augmentation,
  K = M = 1, no target encoder, no actor head), plain: the "28.6 ms on an H200"
  row of the earlier README, measured again on the same card;
* ``drq@drq``: the ``drq`` preset (DrQ's agent, stacked encoder) that the GPU
  fidelity check trains.

The variants are interleaved in rounds so machine load hits all alike; the
medians are reported, with ``fast / plain`` per method.

    python -m benchmarks.bench_updates [--device auto] [--batch 512] [--rounds 5] [--methods drq,eps-r]

Writes ``benchmarks/results/updates-<device>.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
METHODS = ["sac", "drq", "drq+dbc", "eps-r", "drq+pse", "eps-pi"]
PATHS = ("plain", "fast")
LEGACY = dict(aug_k=1, aug_m=1, target_encoder=False, actor_head=False)
TARGET_MS = 14.0  # issue 12: eps-r at batch 512 on an H200, from 28.6 ms


def variants(methods: list[str], paths: tuple[str, ...]) -> dict[str, tuple[str, dict]]:
    """label -> (preset, config fields) of every timed variant."""
    out: dict[str, tuple[str, dict]] = {}
    for method in methods:
        for path in paths:
            out[f"{method}/{path}"] = ("paper", dict(method=method, fast=path == "fast"))
    if "eps-r" in methods:
        out["eps-r@legacy/plain"] = ("paper", dict(method="eps-r", fast=False, **LEGACY))
    if "drq" in methods:
        for path in paths:
            out[f"drq@drq/{path}"] = ("drq", dict(fast=path == "fast"))
    return out


def make_agent(preset: str, fields: dict, batch: int, device, seed: int = 0):
    """An agent of ``preset`` with ``fields`` for 84x84 pixels and 6 actions."""
    import torch

    from agents.agent import Agent
    from agents.config import make_config

    torch.manual_seed(seed)
    cfg = make_config(preset, batch_size=batch, device=str(device), **fields)
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
    p.add_argument("--updates", type=int, default=None, help="updates per timed block (even; 2 on CPU, 20 on CUDA)")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--paths", default=",".join(PATHS))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    device = pick_device(args.device)
    if device.type == "cuda":
        fast_cuda_math()
    updates = args.updates or (20 if device.type == "cuda" else 2)
    methods, paths = args.methods.split(","), tuple(args.paths.split(","))
    unknown = [m for m in methods if m not in METHODS] + [x for x in paths if x not in PATHS]
    if unknown:
        print(f"error: methods/paths: unknown {', '.join(unknown)} (methods: {', '.join(METHODS)}; paths: "
              f"{', '.join(PATHS)})", file=sys.stderr)
        return 2
    batch = random_batch(args.batch, device)
    table = variants(methods, paths)
    agents = {label: make_agent(preset, fields, args.batch, device) for label, (preset, fields) in table.items()}
    for agent in agents.values():  # warm-up: allocator, cuDNN autotuning
        time_updates(agent, batch, 4, device)
    times: dict[str, list[float]] = {label: [] for label in agents}
    for r in range(args.rounds):
        for label, agent in agents.items():
            times[label].append(time_updates(agent, batch, updates, device))
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{k} {1e3 * v[-1]:.1f}" for k, v in times.items()),
              file=sys.stderr, flush=True)
    median = {label: statistics.median(t) for label, t in times.items()}
    ratios = {f"{m} fast / plain": median[f"{m}/fast"] / median[f"{m}/plain"]
              for m in methods if f"{m}/fast" in median and f"{m}/plain" in median}
    if "eps-r/fast" in median and "eps-r@legacy/plain" in median:
        ratios["eps-r fast / legacy plain"] = median["eps-r/fast"] / median["eps-r@legacy/plain"]
    record = {"device": str(device), "device_name": torch.cuda.get_device_name(device) if device.type == "cuda"
              else "cpu", "torch": torch.__version__, "threads": torch.get_num_threads(), "batch": args.batch,
              "rounds": args.rounds, "updates_per_block": updates, "seconds_per_update": median,
              "updates_per_s": {k: 1.0 / v for k, v in median.items()}, "ratios": ratios,
              "variants": {label: {"preset": preset, **fields} for label, (preset, fields) in table.items()}}
    print(f"{'variant':22s} {'ms/update':>10s} {'updates/s':>10s}   ({record['device_name']}, batch {args.batch})")
    for label in agents:
        print(f"{label:22s} {1e3 * median[label]:10.2f} {1 / median[label]:10.1f}")
    for name, value in ratios.items():
        print(f"{name}: {value:.3f}")
    if "eps-r/fast" in median:
        ms = 1e3 * median["eps-r/fast"]
        print(f"eps-r fast: {ms:.1f} ms per update (target <= {TARGET_MS:.0f} ms on an H200: "
              f"{'met' if ms <= TARGET_MS else 'not met'} on this {record['device_name']})")
    out = Path(args.out) if args.out else RESULTS / f"updates-{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
