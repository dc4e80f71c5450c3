"""Verdict and figure of the DrQ fidelity check: ``--preset drq`` on cartpole-swingup against DrQ.

DrQ reports 759 ± 92 on cartpole-swingup at 100k environment steps (Kostrikov
et al. 2020, Table 1, PlaNet benchmark, 10 seeds). A seed passes when its final
evaluation (10 episodes) reaches 667, DrQ's mean minus one standard deviation.

DrQ's own learning curves behind that table (denisyarats/drq,
``data/dmc_planet_bench.csv``: 10 seeds, an evaluation every 16k steps on
cartpole-swingup; the rows up to 500k steps, all six tasks, are kept unchanged in
``figures/data/drq_planet_bench.csv``, :mod:`figures.reference_runs`) put each run in context: at
every evaluation step, where the run stands among DrQ's ten runs interpolated
to that step. That matters twice. A run stopped early (the GPU time ran out)
can still be read: on track or behind. And the pass mark is strict: at 96k two
of DrQ's own ten runs are below 667 (572, 655), at 100k (interpolated) one is
(646), so even a perfect reimplementation fails the two-seed check about one
time in five; the context line tells a miss of that kind from a real gap.

    python -m benchmarks.drq_fidelity RUN [RUN ...] [--out fidelity.png] [--json fidelity.json]

Prints one line per run, a Markdown table of every evaluation beside DrQ's
runs (median, range) and PASS when every run passes; runs of both update paths
(the bf16 fast path and float32, each run's ``config.json`` says which) are
labelled by path, so ``benchmarks/gpu_check.sh fp32`` sets float32 seeds beside
the fast-path ones (exit 0; 1 otherwise,
2 on bad input). The figure shows each run's evaluation curve (mean ± std over
its episodes) over the range of DrQ's ten runs and their median, DrQ's
published 759 ± 92 at 100k and the pass mark.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json
from bisimkit_runs.runs import read_csv_columns
from figures.reference_runs import DRQ_SOURCE, Runs, drq_at, drq_grid, drq_runs

DRQ_MEAN, DRQ_STD, AT_STEPS = 759.0, 92.0, 100_000
PASS_MARK = DRQ_MEAN - DRQ_STD


def context(value: float, step: int, runs: Runs) -> dict:
    """Where ``value`` at ``step`` stands among DrQ's runs at that step: their mean, std (n - 1),
    range, and how many of them it is above."""
    ref = drq_at(runs, step)
    if ref.size == 0:
        return {"step": step, "drq_runs": 0}
    return {
        "step": step,
        "drq_runs": int(ref.size),
        "drq_mean": float(ref.mean()),
        "drq_median": float(np.median(ref)),
        "drq_std": float(ref.std(ddof=1)) if ref.size > 1 else 0.0,
        "drq_min": float(ref.min()),
        "drq_max": float(ref.max()),
        "above": int((value > ref).sum()),
    }


def describe(c: dict) -> str:
    """One clause for :func:`context`'s dict."""
    if not c["drq_runs"]:
        return f"no run of DrQ's reaches {c['step']} steps"
    return (
        f"DrQ's {c['drq_runs']} runs at {c['step'] / 1000:g}k: {c['drq_mean']:.0f} ± {c['drq_std']:.0f} "
        f"({c['drq_min']:.0f}-{c['drq_max']:.0f}); above {c['above']} of them"
    )


def markdown_table(results: list[dict]) -> str:
    """The runs' evaluations step by step beside DrQ's runs there (median, range): a Markdown table for
    the README and docs (every run's evaluation steps; each run's context from :func:`context`)."""
    steps = sorted({s for r in results for s in r["steps"]})
    head = "| env steps | " + " | ".join(f"{s / 1000:g}k" if s else "0" for s in steps) + " |"
    rows = [head, "|---" * (len(steps) + 1) + "|"]
    for r in results:
        by_step = dict(zip(r["steps"], r["mean"]))
        rows.append(
            f"| {r['label']} | " + " | ".join(f"{by_step[s]:.0f}" if s in by_step else "" for s in steps) + " |"
        )
    ctx = {c["step"]: c for r in results for c in r["drq_context"]}
    cells = [ctx.get(s, {"drq_runs": 0}) for s in steps]
    rows.append(
        "| DrQ's runs, median | " + " | ".join(f"{c['drq_median']:.0f}" if c["drq_runs"] else "" for c in cells) + " |"
    )
    rows.append(
        "| DrQ's runs, range | "
        + " | ".join(f"{c['drq_min']:.0f}-{c['drq_max']:.0f}" if c["drq_runs"] else "" for c in cells)
        + " |"
    )
    return "\n".join(rows)


def read(run: Path) -> dict:
    """Steps, means and stds of a run's ``eval.csv``, and its configuration."""
    table = read_csv_columns(run / "eval.csv")
    if not table or "env_step" not in table:
        raise InputError(f"runs: {run} has no evaluation rows (eval.csv)")
    try:
        config = json.loads((run / "config.json").read_text())["config"]
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"runs: {run / 'config.json'} is not a run configuration ({exc})") from None
    fast = json.loads((run / "config.json").read_text()).get("fast")
    return {
        "run": str(run),
        "seed": config.get("seed"),
        "preset": config.get("preset"),
        "fast": fast,
        "label": f"seed {config.get('seed')}",
        "steps": table["env_step"].astype(int).tolist(),
        "mean": table["mean_return"].tolist(),
        "std": table["std_return"].tolist(),
        "episodes": int(table["episodes"][-1]),
    }


def plot(results: list[dict], runs: Runs, out: Path) -> Path:
    """Each run's curve over the range and median of DrQ's runs, DrQ's 759 ± 92 at 100k and the pass mark."""
    from figures.style import plt, return_curve_axes, save  # matplotlib: only with a figure to draw

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    last = max(max(r["steps"]) for r in results)
    grid, ref = drq_grid(runs, max(last, AT_STEPS))
    ax.fill_between(grid, ref.min(axis=0), ref.max(axis=0), color="0.85", label=f"DrQ's {ref.shape[0]} runs: range")
    ax.plot(grid, np.median(ref, axis=0), color="0.45", ls="--", lw=1.2, label="DrQ's runs: median")
    for r, colour in zip(results, ("tab:blue", "tab:orange", "tab:green", "tab:purple")):
        steps, mean, std = map(np.asarray, (r["steps"], r["mean"], r["std"]))
        ax.plot(
            steps, mean, marker="o", ms=3, color=colour, label=f"{r['label']}: {mean[-1]:.0f} at {steps[-1] // 1000}k"
        )
        ax.fill_between(steps, mean - std, mean + std, color=colour, alpha=0.15)
    ax.errorbar(
        [AT_STEPS],
        [DRQ_MEAN],
        yerr=[DRQ_STD],
        fmt="s",
        color="black",
        capsize=4,
        label=f"DrQ paper: {DRQ_MEAN:.0f} ± {DRQ_STD:.0f} at 100k",
    )
    ax.axhline(PASS_MARK, color="tab:red", ls=":", label=f"pass mark {PASS_MARK:.0f}")
    return_curve_axes(ax, "--preset drq, cartpole-swingup, no distractions", "evaluation return (10 episodes)", 8)
    return save(fig, out, tight=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run folders of python -m agents.train --preset drq")
    p.add_argument("--out", default=None, help="figure (PNG)")
    p.add_argument("--json", default=None, help="verdict as JSON")
    args = p.parse_args(argv)
    try:
        results = [read(Path(r)) for r in args.runs]
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len({r["fast"] for r in results}) > 1:  # both update paths: say which run is which
        for r in results:
            r["label"] += " (bf16 fast path)" if r["fast"] else " (float32)"
    runs = drq_runs("cartpole-swingup")
    at_mark = drq_at(runs, AT_STEPS)
    print(
        f"DrQ's own runs ({DRQ_SOURCE}): {(at_mark >= PASS_MARK).sum()} of {at_mark.size} reach "
        f"{PASS_MARK:.0f} at {AT_STEPS // 1000}k (interpolated)"
    )
    passed = True
    for r in results:
        final, reached = r["mean"][-1], r["steps"][-1]
        ok = reached >= AT_STEPS and final >= PASS_MARK
        passed &= ok
        r["passed"] = ok
        r["drq_context"] = [context(m, s, runs) for s, m in zip(r["steps"], r["mean"])]
        print(
            f"{r['label']}: {final:.1f} ± {r['std'][-1]:.1f} at {reached} env steps "
            f"({r['episodes']} episodes): {'pass' if ok else 'FAIL'} (mark {PASS_MARK:.0f}); "
            f"{describe(r['drq_context'][-1])}"
        )
    print(markdown_table(results))
    print("PASS" if passed else "FAIL")
    if args.out:
        plot(results, runs, Path(args.out))
    if args.json:
        atomic_write_json(
            Path(args.json),
            {
                "drq_paper": [DRQ_MEAN, DRQ_STD],
                "pass_mark": PASS_MARK,
                "drq_runs_source": DRQ_SOURCE,
                "drq_runs_reaching_mark_at_100k": int((at_mark >= PASS_MARK).sum()),
                "drq_runs": int(at_mark.size),
                "runs": results,
                "passed": passed,
            },
        )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
