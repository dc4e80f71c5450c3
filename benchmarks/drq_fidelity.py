"""Verdict and figure of the DrQ fidelity check: ``--preset drq`` on cartpole-swingup against DrQ's paper.

DrQ reports 759 ± 92 on cartpole-swingup at 100k environment steps (Kostrikov
et al. 2020, Table 1, PlaNet benchmark, 10 seeds). A seed passes when its final
evaluation (10 episodes) reaches 667, DrQ's mean minus one standard deviation.

    python -m benchmarks.drq_fidelity RUN [RUN ...] [--out fidelity.png] [--json fidelity.json]

Prints one line per run and PASS when every run passes (exit 0; 1 otherwise,
2 on bad input). The figure shows each run's evaluation curve (mean ± std over
its episodes), DrQ's published band at 100k and the pass mark.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json
from figures.runs import read_csv_columns

DRQ_MEAN, DRQ_STD, AT_STEPS = 759.0, 92.0, 100_000
PASS_MARK = DRQ_MEAN - DRQ_STD


def read(run: Path) -> dict:
    """Steps, means and stds of a run's ``eval.csv``, and its configuration."""
    table = read_csv_columns(run / "eval.csv")
    if not table or "env_step" not in table:
        raise InputError(f"runs: {run} has no evaluation rows (eval.csv)")
    try:
        config = json.loads((run / "config.json").read_text())["config"]
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"runs: {run / 'config.json'} is not a run configuration ({exc})") from None
    return {"run": str(run), "seed": config.get("seed"), "preset": config.get("preset"),
            "steps": table["env_step"].astype(int).tolist(), "mean": table["mean_return"].tolist(),
            "std": table["std_return"].tolist(), "episodes": int(table["episodes"][-1])}


def plot(results: list[dict], out: Path) -> Path:
    """Each run's curve, DrQ's 759 ± 92 at 100k and the pass mark."""
    from figures.style import plt, return_curve_axes, save

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for r, colour in zip(results, ("tab:blue", "tab:orange", "tab:green", "tab:purple")):
        steps, mean, std = map(np.asarray, (r["steps"], r["mean"], r["std"]))
        ax.plot(steps, mean, marker="o", ms=3, color=colour, label=f"seed {r['seed']}: {mean[-1]:.0f} at {steps[-1] // 1000}k")
        ax.fill_between(steps, mean - std, mean + std, color=colour, alpha=0.15)
    ax.errorbar([AT_STEPS], [DRQ_MEAN], yerr=[DRQ_STD], fmt="s", color="black", capsize=4,
                label=f"DrQ paper: {DRQ_MEAN:.0f} ± {DRQ_STD:.0f} at 100k")
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
    passed = True
    for r in results:
        final, reached = r["mean"][-1], r["steps"][-1]
        ok = reached >= AT_STEPS and final >= PASS_MARK
        passed &= ok
        r["passed"] = ok
        print(f"seed {r['seed']}: {final:.1f} ± {r['std'][-1]:.1f} at {reached} env steps "
              f"({r['episodes']} episodes): {'pass' if ok else 'FAIL'} (mark {PASS_MARK:.0f})")
    print("PASS" if passed else "FAIL")
    if args.out:
        plot(results, Path(args.out))
    if args.json:
        atomic_write_json(Path(args.json), {"drq_paper": [DRQ_MEAN, DRQ_STD], "pass_mark": PASS_MARK,
                                            "runs": results, "passed": passed})
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
