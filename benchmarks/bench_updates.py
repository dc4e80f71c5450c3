"""Cost of one agent update per method, plain path against fast path, in one run.

Times :meth:`agents.agent.Agent.update` at the paper's batch size (512) on
random pixel batches (3 stacked 84x84 frames; no environment needed). Every
method of the ``paper`` preset runs as ``plain`` (float32 NCHW convolutions,
foreach Adam; TF32 convolutions on CUDA), ``fast`` (channels-last bf16 conv
trunk, fused Adam) and, on CUDA, ``graphs`` (the fast update captured in CUDA
graphs and replayed, :class:`agents.agent.UpdateGraphs`); ``--paths`` may add
``compiled`` (the graphs path with the conv trunks through ``torch.compile``;
on a CPU, the fast path compiled). Two reference rows come with them:

* ``eps-r@legacy``: the lighter eps-r update (one augmentation, K = M = 1, no
  target encoder, no actor head), the work the speed target is set on (28.6 ms
  plain on an H200 in ``results/gpu/bench.log``): its fast and graphs paths say how much
  faster the same work runs;
* ``drq@drq``: the ``drq`` preset (DrQ's agent, stacked encoder) that the GPU
  fidelity check trains.

The variants are interleaved in rounds so machine load hits all alike; the
medians are reported, with ``fast / plain`` per method.

    python -m benchmarks.bench_updates [--device auto] [--batch 512] [--rounds 5] [--methods drq,eps-r]
    python -m benchmarks.bench_updates --check-graphs [--methods eps-r,drq]   # CUDA: graphs learn what eager does

Writes ``benchmarks/results/updates-<device>.json`` (or ``--out``).

``--check-graphs`` runs 50 fast updates of each method eagerly and from
graphs, from one initialisation, on the same batches (their rewards scaled by
1-4 in turn, so a replay reading a stale batch shows) and the same generator
state before each update. It passes with the tolerances of the CPU test of the
fast path (each of the first 10 critic losses within 3%, the median within 5%,
the means of the last 25 within 10%; exit 1 otherwise) and says whether the
replays drew the very random numbers of the eager updates (all 50 losses
within 0.1%), as PyTorch's graph-safe generator should make them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from agents.config import make_config
from bisimkit.files import atomic_write_json

RESULTS = Path(__file__).parent / "results"
METHODS = ["sac", "drq", "drq+dbc", "eps-r", "drq+pse", "eps-pi"]
PATHS = ("plain", "fast", "graphs", "compiled")
DEFAULT_PATHS = ("plain", "fast", "graphs")
CHECK_UPDATES = 50
LEGACY = dict(aug_k=1, aug_m=1, target_encoder=False, actor_head=False)
TARGET_MS = 14.0  # eps-r at batch 512 on an H200: half its plain path (28.6 ms, results/gpu/bench.log)
TARGET_ROWS = {  # what the target is read off: the fastest non-plain path of each
    "eps-r@legacy": "the lighter update, 28.6 ms plain (K = M = 1, no target encoder, no actor head)",
    "eps-r": "the paper preset's update (K = M = 2, target encoder, actor head: about 1.75x that work)",
}


def target_lines(seconds_per_update: dict[str, float]) -> list[str]:
    """The eps-r speed target (<= TARGET_MS ms per update at batch 512 on an H200), read off the fastest
    non-plain path of ``eps-r@legacy`` (the work the target is defined on) and of ``eps-r`` (the paper preset)."""
    lines = []
    for row, about in TARGET_ROWS.items():
        timed = {
            label: 1e3 * s
            for label, s in seconds_per_update.items()
            if label.startswith(row + "/") and not label.endswith("/plain")
        }
        if timed:
            best = min(timed, key=timed.get)
            lines.append(
                f"{row}, {about}: fastest path {best}, {timed[best]:.1f} ms per update (target <= "
                f"{TARGET_MS:.0f} ms on an H200: {'met' if timed[best] <= TARGET_MS else 'not met'})"
            )
    return lines


def variants(methods: list[str], paths: tuple[str, ...], cuda: bool = True) -> dict[str, tuple[str, dict]]:
    """label -> (preset, config fields) of every timed variant."""
    out: dict[str, tuple[str, dict]] = {}
    for method in methods:
        for path in paths:
            out[f"{method}/{path}"] = ("paper", dict(method=method, **path_fields(path, cuda)))
    if "eps-r" in methods:
        for path in paths:
            out[f"eps-r@legacy/{path}"] = ("paper", dict(method="eps-r", **path_fields(path, cuda), **LEGACY))
    if "drq" in methods:
        for path in paths:
            out[f"drq@drq/{path}"] = ("drq", path_fields(path, cuda))
    return out


def path_fields(path: str, cuda: bool = True) -> dict:
    """The config fields of a path: plain, fast, graphs (fast and captured) or compiled (fast, the trunks
    through torch.compile, and captured on CUDA)."""
    return {"fast": path != "plain", "graphs": cuda and path in ("graphs", "compiled"), "compile": path == "compiled"}


def make_agent(preset: str, fields: dict, batch: int, device, seed: int = 0):
    """An agent of ``preset`` with ``fields`` for 84x84 pixels and 6 actions."""
    import torch  # torch, the agents' extra: --help and the record's summary need none

    from agents.agent import Agent  # torch

    torch.manual_seed(seed)
    cfg = make_config(preset, batch_size=batch, device=str(device), **fields)
    return Agent((9, 84, 84), 6, cfg, device)


def random_batch(batch: int, device, seed: int = 0) -> dict:
    """A replay-like batch with the pixels already on ``device`` (as the GPU replay mirror gives them)."""
    import torch  # torch, the agents' extra: --help and the record's summary need none

    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 256, (batch, 9, 84, 84), generator=g, dtype=torch.uint8).to(device)
    rng = np.random.default_rng(seed)
    return {
        "obs": obs,
        "next_obs": torch.roll(obs, 1, dims=0),
        "action": rng.uniform(-1, 1, (batch, 6)).astype(np.float32),
        "reward": rng.uniform(0, 1, batch).astype(np.float32),
        "discount": np.ones(batch, np.float32),
    }


def time_updates(agent, batch: dict, updates: int, device) -> float:
    """Mean seconds per update over ``updates`` updates (an even number: actor steps included)."""
    import torch  # torch, the agents' extra: --help and the record's summary need none

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(updates):
        agent.update(batch)
    agent.flush_checks()
    sync()
    return (time.perf_counter() - start) / updates


def check_graphs(preset: str, fields: dict, batch: int, device, updates: int = CHECK_UPDATES) -> dict:
    """Critic losses of ``updates`` fast updates, eager and from CUDA graphs, from one initialisation, on the
    same batches with the generator reseeded before each update; their largest relative difference."""
    import torch  # torch, the agents' extra: --help and the record's summary need none

    losses = {}
    for graphs in (False, True):
        agent = make_agent(preset, {**fields, "fast": True, "graphs": graphs}, batch, device)
        out = []
        for i in range(updates):
            data = random_batch(batch, device, seed=i)
            data["reward"] = data["reward"] * (1 + i % 4)  # batches that differ visibly in their losses
            torch.manual_seed(1000 + i)
            out.append(float(agent.update(data)["critic_loss"]))
        agent.flush_checks()
        losses["graphs" if graphs else "eager"] = out
    return compare_losses(losses["eager"], losses["graphs"])


def compare_losses(eager: list[float], graphed: list[float]) -> dict:
    """The verdict of ``--check-graphs`` on two runs' critic losses (see the module doc)."""
    eager_a, graphed_a = np.asarray(eager, dtype=float), np.asarray(graphed, dtype=float)
    rel = np.abs(graphed_a - eager_a) / np.maximum(np.abs(eager_a), 1e-12)
    half = len(rel) // 2
    tail = abs(graphed_a[half:].mean() - eager_a[half:].mean()) / abs(eager_a[half:].mean())
    passed = rel[:10].max() < 0.03 and np.median(rel) < 0.05 and tail < 0.10
    return {
        "eager": eager_a.tolist(),
        "graphs": graphed_a.tolist(),
        "max_rel": float(rel.max()),
        "first10_max_rel": float(rel[:10].max()),
        "median_rel": float(np.median(rel)),
        "last25_mean_rel": float(tail),
        "same_draws": bool(rel.max() < 1e-3),
        "passed": bool(passed),
    }


def summarise(
    times: dict[str, list[float]], methods: list[str], table: dict, device, args, updates: int, rounds_done: int
) -> dict:
    """The record of the rounds timed so far: medians, updates/s and ratios (``fast / plain`` per
    method, ``eps-r fast / legacy plain``)."""
    import torch  # torch, the agents' extra: --help and the record's summary need none

    median = {label: statistics.median(t) for label, t in times.items()}
    ratios = {
        f"{m} {path} / plain": median[f"{m}/{path}"] / median[f"{m}/plain"]
        for m in methods + ["drq@drq", "eps-r@legacy"]
        for path in ("fast", "graphs", "compiled")
        if f"{m}/{path}" in median and f"{m}/plain" in median
    }
    if "eps-r/fast" in median and "eps-r@legacy/plain" in median:
        ratios["eps-r fast / legacy plain"] = median["eps-r/fast"] / median["eps-r@legacy/plain"]
    return {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "batch": args.batch,
        "rounds": args.rounds,
        "rounds_done": rounds_done,
        "updates_per_block": updates,
        "seconds_per_update": median,
        "updates_per_s": {k: 1.0 / v for k, v in median.items()},
        "ratios": ratios,
        "variants": {label: {"preset": preset, **fields} for label, (preset, fields) in table.items()},
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
    p.add_argument("--batch", type=int, default=512, help="transitions per update (default 512, the paper's)")
    p.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="rounds, each timing every variant once in turn (medians reported; default 5)",
    )
    p.add_argument("--updates", type=int, default=None, help="updates per timed block (even; 2 on CPU, 20 on CUDA)")
    p.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated methods of the paper preset, of {', '.join(METHODS)} (default: all)",
    )
    p.add_argument(
        "--paths",
        default=",".join(DEFAULT_PATHS),
        help=f"of {', '.join(PATHS)} (compiled: torch.compile's first updates take a minute; "
        f"default {','.join(DEFAULT_PATHS)})",
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"the JSON file of the record (default {RESULTS / 'updates-DEVICE.json'}, DEVICE cpu or "
        f"cuda; with --check-graphs {RESULTS / 'graphs-check.json'})",
    )
    p.add_argument("--check-graphs", action="store_true", help="compare 50 eager and graph updates (CUDA)")
    args = p.parse_args(argv)
    try:
        device = pick_device(args.device)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if device.type == "cuda":
        fast_cuda_math()
    updates = args.updates or (20 if device.type == "cuda" else 2)
    methods, paths = args.methods.split(","), tuple(args.paths.split(","))
    unknown = [m for m in methods if m not in METHODS] + [x for x in paths if x not in PATHS]
    for name in ("batch", "rounds", "updates"):
        value = getattr(args, name)
        if value is not None and value < 1:
            print(f"error: {name}: {value} is not a positive count", file=sys.stderr)
            return 2
    if unknown:
        print(
            f"error: methods/paths: unknown {', '.join(unknown)} (methods: {', '.join(METHODS)}; paths: "
            f"{', '.join(PATHS)})",
            file=sys.stderr,
        )
        return 2
    if device.type != "cuda":
        if args.check_graphs:
            print("error: check-graphs: CUDA graphs need a CUDA device", file=sys.stderr)
            return 2
        if "graphs" in paths:
            print("graphs path skipped: CUDA graphs need a CUDA device", file=sys.stderr)
            paths = tuple(x for x in paths if x != "graphs")
    if args.check_graphs:
        checks = {}
        for method in methods:
            preset, fields = ("drq", {}) if method == "drq" else ("paper", {"method": method})
            checks[method] = check_graphs(preset, fields, args.batch, device)
            c = checks[method]
            print(
                f"{method} ({preset} preset): {CHECK_UPDATES} updates, critic loss eager vs graphs: largest "
                f"relative difference {c['max_rel']:.2e} (first 10: {c['first10_max_rel']:.2e}), median "
                f"{c['median_rel']:.2e}, last-25 means {c['last25_mean_rel']:.2e}; "
                f"{'the same random draws' if c['same_draws'] else 'different random draws'}: "
                f"{'pass' if c['passed'] else 'FAIL'} (3% / 5% / 10%)"
            )
        out = Path(args.out) if args.out else RESULTS / "graphs-check.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(
                {
                    "device_name": torch.cuda.get_device_name(device),
                    "torch": torch.__version__,
                    "batch": args.batch,
                    "checks": checks,
                },
                indent=2,
            )
        )
        print(f"wrote {out}")
        return 0 if all(c["passed"] for c in checks.values()) else 1
    batch = random_batch(args.batch, device)
    table = variants(methods, paths, cuda=device.type == "cuda")
    agents = {label: make_agent(preset, fields, args.batch, device) for label, (preset, fields) in table.items()}
    for agent in agents.values():  # warm-up: allocator, cuDNN autotuning, compiling; graphs: 3 eager updates
        time_updates(agent, batch, 10 if device.type == "cuda" else 4, device)  # per pattern, then the captures
    times: dict[str, list[float]] = {label: [] for label in agents}
    out = Path(args.out) if args.out else RESULTS / f"updates-{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for r in range(args.rounds):
        for label, agent in agents.items():
            times[label].append(time_updates(agent, batch, updates, device))
        print(
            f"round {r + 1}/{args.rounds}: " + ", ".join(f"{k} {1e3 * v[-1]:.1f}" for k, v in times.items()),
            file=sys.stderr,
            flush=True,
        )
        # after every round, so a stopped run leaves the medians of the rounds it finished
        record = summarise(times, methods, table, device, args, updates, rounds_done=r + 1)
        atomic_write_json(out, record)
    median, ratios = record["seconds_per_update"], record["ratios"]
    print(f"{'variant':22s} {'ms/update':>10s} {'updates/s':>10s}   ({record['device_name']}, batch {args.batch})")
    for label in agents:
        print(f"{label:22s} {1e3 * median[label]:10.2f} {1 / median[label]:10.1f}")
    for name, value in ratios.items():
        print(f"{name}: {value:.3f}")
    for line in target_lines(median):
        print(f"{line} on this {record['device_name']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
