"""The scene check: every bisimulation method's learned metric against the exact one.

    python -m benchmarks.metric_check [--scenes ring,sprite,grid] [--methods eps-r,eps-pi,drq+pse,drq+dbc]
        [--steps 1500] [--batch 64] [--samples-per-pair 1] [--out benchmarks/results/metric_check]
        [--figure docs/metric_check.png]
    python -m benchmarks.metric_check --image-size 84 --device cuda --out runs/metric_check_gpu   # the GPU variant

Runs ``python -m agents.metric_check`` (isolated, all three distractors) for each
scene and method, one process at a time, into OUT/SCENE/METHOD; a run already
there is kept (delete its folder to redo it). Then writes OUT/table.md (one row
per run, and whether the eps-r / eps-pi targets hold), OUT/summary.json and the
figure (every run's scatter and heatmaps). Extra arguments after ``--`` go to
every run; ``--gather`` runs nothing and only gathers what OUT holds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from agents.metric_check import METRIC_METHODS, SAMPLES_PER_PAIR, markdown_table, meets_targets
from agents.scenes import SCENES
from bisimkit.files import atomic_write_bytes, atomic_write_json
from figures.metric_check import load_run, plot_metric_check

TARGETED = ("eps-r", "eps-pi")
TARGET_SCENES = ("ring", "sprite")


def run_one(scene: str, method: str, out: Path, args, extra: list[str]) -> dict | None:
    folder = out / scene / method
    if (folder / "summary.json").exists():
        return json.loads((folder / "summary.json").read_text())
    if args.gather:
        return None
    cmd = [
        sys.executable,
        "-m",
        "agents.metric_check",
        "--scene",
        scene,
        "--method",
        method,
        "--out",
        str(folder),
        "--steps",
        str(args.steps),
        "--batch",
        str(args.batch),
        "--image-size",
        str(args.image_size),
        "--device",
        args.device,
        "--seed",
        str(args.seed),
        "--eval-every",
        str(args.eval_every),
        "--samples-per-pair",
        str(args.samples_per_pair),
        *(["--threads", str(args.threads)] if args.threads else []),
        *extra,
    ]
    print(" ".join(cmd), flush=True)
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        print(f"{scene} {method}: exit {proc.returncode}", flush=True)
        return None
    return json.loads((folder / "summary.json").read_text())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--scenes",
        default="ring,sprite,grid",
        help=f"comma-separated built-in scenes, of {', '.join(SCENES)} (default ring,sprite,grid)",
    )
    p.add_argument(
        "--methods",
        default="eps-r,eps-pi,drq+pse,drq+dbc",
        help=f"comma-separated methods, of {', '.join(METRIC_METHODS)} (default eps-r,eps-pi,drq+pse,drq+dbc)",
    )
    p.add_argument("--steps", type=int, default=1500, help="updates of each run (default 1500)")
    p.add_argument("--batch", type=int, default=64, help="transitions per update (default 64)")
    p.add_argument("--image-size", type=int, default=32, help="frame side of the scenes, in pixels (default 32)")
    p.add_argument("--device", default="cpu", help="torch device of each run: cpu, cuda or cuda:N (default cpu)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of networks, transitions and distractors of each run (default 0)"
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads of each run (default: torch's)")
    p.add_argument(
        "--samples-per-pair",
        type=int,
        default=SAMPLES_PER_PAIR,
        help=f"noise draws per bisimulation target of each run (default {SAMPLES_PER_PAIR}, as training; "
        "the records in benchmarks/results/metric_check drew 4)",
    )
    p.add_argument("--eval-every", type=int, default=250, help="the curve's spacing in updates (default 250)")
    p.add_argument(
        "--out",
        default="benchmarks/results/metric_check",
        help="folder of the runs (OUT/SCENE/METHOD), the table and the summary "
        "(default benchmarks/results/metric_check)",
    )
    p.add_argument("--figure", default=None, help="the figure of every run (default OUT/metric_check.png)")
    p.add_argument("--gather", action="store_true", help="run nothing: table and figure of the runs in OUT")
    args = p.parse_args(argv)
    out = Path(args.out)
    summaries = []
    for scene in args.scenes.split(","):
        for method in args.methods.split(","):
            s = run_one(scene, method, out, args, extra)
            if s is not None:
                summaries.append(s)
    if not summaries:
        return 1
    lines = [markdown_table(summaries), ""]
    for s in summaries:
        if s["method"] in TARGETED and s["scene"] in TARGET_SCENES:
            met = meets_targets(s)
            lines.append(
                f"* {s['scene']} {s['method']}: " + ", ".join(f"{k} {'met' if v else 'missed'}" for k, v in met.items())
            )
    atomic_write_bytes(out / "table.md", ("\n".join(lines) + "\n").encode())
    atomic_write_json(out / "summary.json", summaries)
    runs = [load_run(out / s["scene"] / s["method"]) for s in summaries]
    print(plot_metric_check(args.figure or out / "metric_check.png", runs))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
