"""Where an agent update spends its time on a GPU: a torch.profiler table per variant.

    python -m benchmarks.profile_update [--variants drq@drq/fast,eps-r/graphs] [--batch 512] [--top 20]

For each variant (labels of :mod:`benchmarks.bench_updates`): warm up, time 20 updates with the
device synchronised (wall ms per update) and the host time to enqueue them (launch-bound when
the two are close), then profile 3 updates and print the kernels with the most device time.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    import torch  # torch, the agents' extra: --help and the record's summary need none
    from torch.profiler import ProfilerActivity, profile  # torch

    from agents.agent import fast_cuda_math, pick_device  # torch
    from benchmarks.bench_updates import METHODS, PATHS, make_agent, random_batch, variants  # with torch

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--variants",
        default="drq@drq/fast,eps-r/fast",
        help="comma-separated variant labels of benchmarks.bench_updates, e.g. eps-r/graphs "
        "(default drq@drq/fast,eps-r/fast)",
    )
    p.add_argument("--batch", type=int, default=512, help="transitions per update (default 512)")
    p.add_argument(
        "--top",
        type=int,
        default=20,
        help="rows of each profile table, the operations with the most device time (default 20)",
    )
    p.add_argument(
        "--device",
        default="auto",
        help="torch device: auto (CUDA when present, else CPU), cpu, cuda or cuda:N (default auto)",
    )
    args = p.parse_args(argv)
    device = pick_device(args.device)
    if device.type == "cuda":
        fast_cuda_math()
    table = variants(METHODS, PATHS, cuda=device.type == "cuda")
    batch = random_batch(args.batch, device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for label in args.variants.split(","):
        if label not in table:
            print(f"error: variants: {label!r} is not one of {', '.join(table)}", file=sys.stderr)
            return 2
        preset, fields = table[label]
        agent = make_agent(preset, fields, args.batch, device)
        for _ in range(10):  # graphs: 3 eager updates per pattern of due steps, then the captures
            agent.update(batch)
        sync()
        start = time.perf_counter()
        for _ in range(20):
            agent.update(batch)
        host = (time.perf_counter() - start) / 20
        sync()
        wall = (time.perf_counter() - start) / 20
        print(f"== {label}: {1e3 * wall:.2f} ms per update (host enqueue {1e3 * host:.2f} ms)")
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            for _ in range(3):
                agent.update(batch)
            sync()
        key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
        print(prof.key_averages().table(sort_by=key, row_limit=args.top, max_name_column_width=60))
        del agent
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
