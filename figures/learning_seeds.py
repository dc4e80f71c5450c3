"""The learning check under distractions seed by seed: DrQ beside ε-R with its world model on
detached latents (``--no-model-grad --beta 0.1``) and, on the seeds where it was run, the same ε-R
without its bisimulation loss (``--beta 0``), drawn from the committed learning-check records.

    python -m figures.learning_seeds [--results benchmarks/results] [--out docs/learning_check_seeds.png]

One panel per seed, each with every method's evaluations (mean ± std of the evaluation episodes on
the held-out videos), the uniform random policy's band on that seed's held-out episodes and the pass
mark (the record's ``pass_mark``: the random mean plus the larger of 100 and 3 standard deviations).
The records are ``benchmarks.learning_check``'s ``learning.json`` files: for seed k,
``learning_check_distractions_drq_seed{k}.json`` and ``learning_check_distractions_model_grad_off_seed{k}.json``;
seed 0's DrQ run is the ``drq`` entry of ``learning_check_distractions.json`` and its ε-R run
``learning_check_distractions_model_grad_off.json``. The β = 0 runs are
``learning_check_distractions_beta0_seed{k}.json``, drawn where they exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

from bisimkit.errors import InputError

from .style import check_axes, plt, save

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
SEEDS = (0, 1, 2, 3)


class Series(NamedTuple):
    """One method's curves: its legend label, its name in the panel titles, its colour, the record file of
    seed k, seed 0's record file and the method's entry in it (None: seed 0's follows ``pattern`` too), and
    whether it is drawn only on the seeds that have its record."""

    label: str
    short: str
    colour: str
    pattern: str
    seed0: tuple[str, str | None] | None = None
    optional: bool = False


SERIES: dict[str, Series] = {
    "drq": Series(
        "DrQ",
        "DrQ",
        "tab:blue",
        "learning_check_distractions_drq_seed{seed}.json",
        ("learning_check_distractions.json", "drq"),
    ),
    "eps-r": Series(
        "ε-R, models on detached latents, β = 0.1",
        "ε-R β = 0.1",
        "tab:orange",
        "learning_check_distractions_model_grad_off_seed{seed}.json",
        ("learning_check_distractions_model_grad_off.json", None),
    ),
    "eps-r-beta0": Series(
        "ε-R, models on detached latents, β = 0",
        "ε-R β = 0",
        "tab:green",
        "learning_check_distractions_beta0_seed{seed}.json",
        optional=True,
    ),
}
#: methods drawn only on the seeds that have their record
OPTIONAL = frozenset(m for m, series in SERIES.items() if series.optional)
FIELDS = ("steps", "eval_mean", "eval_std", "random_mean", "random_std", "pass_mark", "last_evaluations_mean", "passed")


def record_path(results: Path, method: str, seed: int) -> tuple[Path, str | None]:
    """The record file of ``method``'s run with ``seed``, and the entry of the file that holds it."""
    series = SERIES[method]
    if seed == 0 and series.seed0 is not None:
        return Path(results) / series.seed0[0], series.seed0[1]
    return Path(results) / series.pattern.format(seed=seed), None


def seed_records(results: Path, seeds=SEEDS) -> dict[int, dict[str, dict]]:
    """``{seed: {method: record}}`` read from ``results``; a missing record (of a method not in
    :data:`OPTIONAL`) or an incomplete one raises :class:`~bisimkit.errors.InputError` naming the file."""
    out: dict[int, dict[str, dict]] = {}
    for seed in seeds:
        out[seed] = {}
        for method in SERIES:
            path, entry = record_path(results, method, seed)
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                if method in OPTIONAL:
                    continue
                raise InputError(
                    f"results: {path} does not exist (it is the OUT/learning.json that "
                    f"benchmarks.learning_check writes for {method} under distractions with seed {seed})"
                ) from None
            except json.JSONDecodeError as exc:
                raise InputError(f"results: {path} is not JSON ({exc.msg}, line {exc.lineno})") from None
            if entry is not None:
                record = record.get("methods", {}).get(entry, {})
            missing = [f for f in FIELDS if f not in record]
            if missing:
                raise InputError(f"results: {path}{f' [{entry}]' if entry else ''} lacks {', '.join(missing)}")
            out[seed][method] = record
    return out


def plot_seeds(path, records: dict[int, dict[str, dict]]) -> Path:
    """One panel per seed: each method's evaluation curve with a band of one std, the random policy's
    band and the pass mark; the panel's title gives each method's last-three mean and verdict."""
    seeds = sorted(records)
    cols = min(2, len(seeds))
    rows = (len(seeds) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 3.9 * rows), sharey=True, squeeze=False)
    for ax, seed in zip(axes.flat, seeds):
        runs = records[seed]
        curves = [
            (SERIES[m].label, SERIES[m].colour, r["steps"], r["eval_mean"], r["eval_std"]) for m, r in runs.items()
        ]
        verdicts = [
            f"{SERIES[m].short} {r['last_evaluations_mean']:.0f} {'PASS' if r['passed'] else 'FAIL'}"
            for m, r in runs.items()
        ]
        first = next(iter(runs.values()))
        r_mean, r_std, mark = first["random_mean"], first["random_std"], first["pass_mark"]
        check_axes(
            ax,
            curves,
            r_mean,
            r_std,
            mark,
            random_label=f"uniform random policy ({r_mean:.0f} ± {r_std:.0f})",
            mark_label=f"pass mark {mark:.0f}",
        )
        ax.set_title(f"seed {seed}, last three evaluations:\n" + ", ".join(verdicts), fontsize=9)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("evaluation return (held-out videos)")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=7)
    for ax in list(axes.flat)[len(seeds) :]:
        ax.set_visible(False)
    fig.suptitle("walker-stand with background and camera distractions, 48 px, 2 CPU cores", fontsize=10)
    return save(fig, path, tight=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--results", default=str(RESULTS), help="folder of the learning-check records (default benchmarks/results)"
    )
    parser.add_argument(
        "--seeds",
        default=",".join(map(str, SEEDS)),
        help=f"comma-separated seeds, one panel each (default: every seed recorded, {', '.join(map(str, SEEDS))})",
    )
    parser.add_argument("--out", default="docs/learning_check_seeds.png", help="the figure file (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        try:
            seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
        except ValueError:
            raise InputError(f"seeds: {args.seeds!r} is not a comma-separated list of integers") from None
        if not seeds or min(seeds) < 0:
            raise InputError(f"seeds: {args.seeds!r} names no seed, or a negative one")
        records = seed_records(Path(args.results), seeds)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(plot_seeds(args.out, records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
