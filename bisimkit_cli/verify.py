"""``bisimkit verify``: the options, and the job run with its figures (``docs/cli.md``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bisimkit.cluster import EXECUTORS
from bisimkit.errors import InputError
from bisimkit.files import check_output
from validation.claims import claim_ids
from validation.learning import loss_ids
from validation.verify import DEFAULT_CASES, QUICK_CASES, console_summary, user_case, verify
from validation.verify_shards import DEFAULT_JOBS, EXTRA, MAX_ATTEMPTS, TIME_MIN, check_sharding, verify_sharded

from .core import load_mdp_or_example


def add_verify_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``verify`` subcommand to the ``bisimkit`` parser."""
    claims, losses = claim_ids(), loss_ids()
    p = sub.add_parser(
        "verify",
        help="check the paper's claims on families of MDPs (the main job)",
        description="Check the paper's claims on families of MDPs and train the learned losses. "
        "Exit status 0 when every verdict matches what validation/findings.py records "
        "(established findings reproduce, every other claim holds), 1 on a surprise, "
        "2 on bad input.",
    )
    p.add_argument("--out", default="verify-out", help="output folder (default ./verify-out)")
    p.add_argument(
        "--quick", action="store_true", help=f"{QUICK_CASES} cases per family and short loss trainings (about 20 s)"
    )
    p.add_argument(
        "--cases", type=int, default=None, help=f"cases per family (default {DEFAULT_CASES}, --quick {QUICK_CASES})"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the generated families' MDPs (default 0)")
    p.add_argument(
        "--claims",
        default=None,
        help=f"comma-separated claim ids, {claims[0]}-{claims[-1]} (e.g. C1,C4), or "
        f"{losses[0]}-{losses[-1]} (the learned losses)",
    )
    p.add_argument(
        "--mdp",
        nargs="+",
        default=None,
        metavar="FILE",
        help="check the claims on these MDPs instead of the generated families (family 'user'): "
        "MDP files (.json/.npz; a saved counterexample's FILE.ground.npy is used with it), "
        "bundled example names or gym:ID; every claim that applies runs, no loss checks",
    )
    p.add_argument(
        "--ground",
        default=None,
        metavar="G",
        help="with --mdp: the eps family's ground, reward (default), policy or a file",
    )
    p.add_argument("--resume", action="store_true", help="reuse the families a previous run finished")
    p.add_argument(
        "--shrink-examples",
        type=int,
        default=None,
        help="hypothesis examples per counterexample search (0: no shrinking)",
    )
    p.add_argument("--no-figures", action="store_true", help="write the report and records without figures")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    cluster = p.add_argument_group("on a cluster (submitit, the '" + EXTRA + "' extra)")
    cluster.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=None,
        help=f"split the cases into --jobs shards run as submitit jobs, {' or '.join(EXECUTORS)}, "
        f"and merge them into the report one process writes; a shard is tried "
        f"up to {MAX_ATTEMPTS} times; a rerun reuses the finished shards",
    )
    cluster.add_argument("--jobs", type=int, default=None, metavar="K", help=f"shards (default {DEFAULT_JOBS})")
    cluster.add_argument(
        "--time-min",
        type=int,
        default=TIME_MIN,
        metavar="M",
        help=f"time limit of one shard's job in minutes (default {TIME_MIN})",
    )
    cluster.add_argument("--partition", default=None, help="SLURM partition (default: the cluster's)")
    p.set_defaults(func=cmd_verify)


def load_user_cases(specs: list[str], ground: str | None) -> list:
    """The ``--mdp`` arguments as (source, case) pairs, each loaded and validated before anything is
    written (bad input: one line, exit 2, no output folder). A file ``X.json`` with an ``X.ground.npy``
    beside it (a counterexample of a family with a matrix ground) is checked under that ground
    unless ``--ground`` is given."""
    cases = []
    for spec in specs:
        try:
            mdp = load_mdp_or_example(spec)
        except InputError as exc:  # name the file whose field is at fault
            raise InputError(str(exc) if str(exc).startswith(spec) else f"{spec}: {exc}") from None
        beside = Path(spec).with_suffix(".ground.npy")
        use = ground if ground is not None else (str(beside) if Path(spec).is_file() and beside.is_file() else None)
        cases.append(user_case(spec, mdp, use))
    return cases


def cmd_verify(args: argparse.Namespace) -> int:
    """Run the job, print the table and verdicts; the exit status is the report's."""
    if args.ground is not None and not args.mdp:
        raise InputError("applies with --mdp only (the generated families bring their own grounds)", param="ground")
    check_sharding(args.mdp, args.jobs, args.executor)
    mdps = load_user_cases(args.mdp, args.ground) if args.mdp else None
    writer = None
    if not args.no_figures:
        from figures.verify_figures import draw_verify_figures as writer  # matplotlib: ~2 s of start-up
    claims = None if not args.claims else [c.strip() for c in args.claims.split(",") if c.strip()]
    check_output(args.out, folder=True)
    if args.executor:
        report = verify_sharded(
            out=args.out,
            cases=args.cases,
            seed=args.seed,
            claims=claims,
            quick=args.quick,
            shrink_examples=args.shrink_examples,
            figures=writer,
            progress=not args.quiet,
            executor=args.executor,
            jobs=DEFAULT_JOBS if args.jobs is None else args.jobs,
            time_min=args.time_min,
            partition=args.partition,
        )
        print(console_summary(report, args.out))
        return int(report["exit_status"])
    report = verify(
        out=args.out,
        cases=args.cases,
        seed=args.seed,
        claims=claims,
        quick=args.quick,
        resume=args.resume,
        shrink_examples=args.shrink_examples,
        figures=writer,
        progress=not args.quiet,
        mdps=mdps,
    )
    print(console_summary(report, args.out))
    return int(report["exit_status"])
