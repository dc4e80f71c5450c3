"""``python -m agents.sweep launch|status``: the command lines of :mod:`agents.sweep.launch`.

(``gather`` draws the paper's tables and curves, so it lives a layer up, in
:mod:`figures.sweep_report`; ``agents/sweep/__main__.py`` dispatches to it.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bisimkit.cluster import EXECUTORS
from bisimkit.errors import InputError
from bisimkit.files import check_output

from ..entry import run_command
from .launch import DEFAULTS, launch, status_lines, wait
from .runner import MAX_FAILURES
from .spec import Spec, apply_flags, load_spec

USAGE = f"""python -m agents.sweep launch [SPEC] [--root ROOT] [--grid FIELD=V1,V2]... [--set FIELD=V]...
                              [--executor {'|'.join(EXECUTORS)}] [--dry-run] ...
       python -m agents.sweep status ROOT
       python -m agents.sweep gather ROOT --out DIR"""


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (raised as :class:`InputError`)."""

    def error(self, message: str):
        raise InputError(message.removeprefix("argument "))


def build_parser() -> Parser:
    p = Parser(
        prog="python -m agents.sweep",
        usage=USAGE,
        description="Grids of training runs on SLURM (through submitit) or this machine: launch, resume, "
        "status, gather into the paper's tables.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    la = sub.add_parser(
        "launch",
        prog="python -m agents.sweep launch",
        help="validate every run's configuration and submit the unfinished runs",
    )
    la.add_argument("spec", nargs="?", help="sweep spec, .toml or .json (see docs/agents.md, Sweeps)")
    la.add_argument("--root", help="sweep root (default: sweeps/NAME of the spec)")
    la.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="FIELD=V1,V2",
        help="an axis of the grid (a TrainConfig field); replaces the spec's",
    )
    la.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=V",
        dest="fixed",
        help="a TrainConfig field fixed for every run",
    )
    la.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="slurm (submitit's SlurmExecutor) or local (submitit's LocalExecutor)",
    )
    la.add_argument("--dry-run", action="store_true", help="build and validate every configuration; submit nothing")
    la.add_argument(
        "--retry-failed",
        action="store_true",
        help=f"submit runs marked failed ({MAX_FAILURES} failures) again, with a fresh count",
    )
    la.add_argument(
        "--wait",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="wait until the submitted runs end (default: on for local, off for slurm)",
    )
    la.add_argument("--parallel", type=int, metavar="N", help=f"local: runs at a time (default {DEFAULTS['parallel']})")
    la.add_argument("--partition", help="slurm: partition")
    la.add_argument("--gpus-per-run", type=int, metavar="N", help=f"GPUs per run (default {DEFAULTS['gpus_per_run']})")
    la.add_argument(
        "--cpus-per-run", type=int, metavar="N", help=f"slurm: CPUs per run (default {DEFAULTS['cpus_per_run']})"
    )
    la.add_argument("--mem-gb", type=int, metavar="N", help="slurm: memory per run in GB")
    la.add_argument(
        "--time-min", type=int, metavar="N", help=f"time limit per job in minutes (default {DEFAULTS['time_min']})"
    )
    la.add_argument("--array-parallelism", type=int, metavar="N", help="slurm: array elements running at a time")
    la.add_argument(
        "--sbatch",
        action="append",
        default=[],
        metavar="KEY[=VALUE]",
        help="slurm: an extra sbatch option (e.g. account=proj, constraint=a100, requeue)",
    )
    st = sub.add_parser("status", prog="python -m agents.sweep status", help="one line per run and a summary count")
    st.add_argument("root", help="sweep root")
    sub.add_parser(
        "gather",
        prog="python -m agents.sweep gather",
        add_help=False,
        help="the paper's tables per condition, learning curves and a tidy CSV of every evaluation "
        "(python -m agents.sweep gather ROOT --out DIR; see figures.sweep_report)",
    )
    return p


def spec_from_args(args) -> Spec:
    spec = load_spec(args.spec) if args.spec else Spec(name=None)
    return apply_flags(spec, args.grid, args.fixed)


def options_from_args(args, spec: Spec) -> dict:
    options = dict(spec.slurm if args.executor == "slurm" else spec.local)
    for key in ("parallel", "partition", "gpus_per_run", "cpus_per_run", "mem_gb", "time_min", "array_parallelism"):
        value = getattr(args, key)
        if value is not None:
            if isinstance(value, int) and value < (0 if key == "gpus_per_run" else 1):
                raise InputError(f"{key.replace('_', '-')}: {value} is not a positive integer")
            options[key] = value
    if args.sbatch:
        extra = dict(options.get("sbatch", {}))
        for item in args.sbatch:
            key, value = item.split("=", 1) if "=" in item else (item, True)  # a bare KEY: a flag (--requeue)
            if not key.strip():
                raise InputError(f"sbatch: {item!r} is not KEY=VALUE or KEY")
            extra[key.strip().replace("-", "_")] = value
        options["sbatch"] = extra
    return options


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        if args.command == "gather":  # python -m agents.sweep gather runs figures.sweep_report (a layer up)
            raise InputError("gather: run it as python -m agents.sweep gather ROOT --out DIR")
        if args.command == "status":
            lines, _ = status_lines(Path(args.root))
            print("\n".join(lines))
            return 0
        spec = spec_from_args(args)
        if args.root:
            root = Path(args.root)
        elif spec.name:
            root = Path("sweeps") / spec.name
        else:
            raise InputError("root: give --root (no spec file to name the sweep)")
        check_output(root, "root", folder=True)  # a dry run too: it says whether the launch would work
        spec.name = spec.name or root.name
        options = options_from_args(args, spec)
        result = launch(spec, root, args.executor, options, dry_run=args.dry_run, retry_failed=args.retry_failed)
        waiting = args.wait if args.wait is not None else args.executor == "local"
        if waiting and not args.dry_run and result.get("jobs"):
            names = [n for job in result["jobs"] for n in job["runs"]]
            statuses = wait(root, names)
            done = sum(s == "done" for s in statuses.values())
            print(f"{done} of {len(names)} submitted run(s) done; python -m agents.sweep status {root}")
        return 0

    return run_command(body, interrupted="launch the sweep again to resume its unfinished runs")


if __name__ == "__main__":
    sys.exit(main())
