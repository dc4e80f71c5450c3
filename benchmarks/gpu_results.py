"""File what a GPU machine brought back: ``results.tgz`` of ``benchmarks/gpu_check.sh`` into the repository.

    python -m benchmarks.gpu_results RESULTS_TGZ --name h200-all [--figure docs/gpu_drq_fidelity.png]
                                     [--distracted-figure docs/gpu_distracted.png]
    python -m benchmarks.gpu_results --distracted [--distracted-figure docs/gpu_distracted.png]

Unpacks the archive into ``benchmarks/results/gpu/NAME/`` (refused if that folder
exists; members that are not plain files or folders, or whose paths leave the
folder, are refused before anything is written), then prints what goes into the
README and ``docs/agents.md``:

* the fidelity verdict (``benchmarks.drq_fidelity`` on ``fidelity/drq-seed*``:
  each seed against the 667 mark and among DrQ's own runs, the Markdown table),
  rewriting ``fidelity.json`` there and drawing the figure (``--figure``, default
  ``NAME/fidelity.png``);
* each update benchmark (``updates-cuda.json``, ``updates-compiled.json``) as a
  Markdown table of ms per update, with its ratios and the eps-r target (<= 14 ms
  on an H200) read off the fastest path of ``eps-r@legacy`` (the update the
  target is defined on) and of ``eps-r`` (the paper preset), by
  ``benchmarks.bench_updates.target_lines``;
* the graphs check (``graphs-check.json``) and ``drq-compare.json``, when present, a line
  per method or path.
* the distracted runs (``gpu_check.sh distracted``: eps-r, drq+dbc and drq on
  cartpole-swingup with both distractions): one table of every such run filed so far
  under ``benchmarks/results/gpu/*/distracted/`` (:func:`distracted_table`), so the
  table fills as the runs land over several calls; then each run judged by the CPU learning
  check's rule (``benchmarks.learning_check.verdict``) against a uniform random policy on the
  same evaluation episodes (computed once and cached in ``distracted_random.json``), written to
  ``distracted.json``, and every curve drawn (``--distracted-figure``, default
  ``distracted.png`` beside the filings). ``python -m benchmarks.gpu_results --distracted``
  does that last step alone, from what is filed.

Exit 0 when filed (whatever the verdicts say), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
from pathlib import Path

import numpy as np

from benchmarks.bench_updates import target_lines
from bisimkit.errors import InputError
from bisimkit_runs.runs import read_csv_columns

GPU_RESULTS = Path(__file__).resolve().parent / "results" / "gpu"


def unpack(archive: Path, dest: Path) -> list[str]:
    """Extract ``archive`` into the new folder ``dest``; returns the member names. Checks every member
    first: plain files and folders only, paths inside ``dest``."""
    if dest.exists():
        raise InputError(f"name: {dest} already exists; choose another name")
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            for m in members:
                parts = Path(m.name).parts
                if not (m.isfile() or m.isdir()) or Path(m.name).is_absolute() or ".." in parts:
                    raise InputError(f"archive: member {m.name!r} is not a plain file or folder inside the archive")
            dest.mkdir(parents=True)
            try:
                tar.extractall(dest, members=members, filter="data")
            except BaseException:
                shutil.rmtree(dest, ignore_errors=True)  # nothing half-written
                raise
    except (OSError, tarfile.TarError) as exc:
        raise InputError(f"archive: cannot read {archive}: {exc}") from None
    return [m.name for m in members]


def bench_table(record: dict) -> str:
    """A benchmark record (``bench_updates`` JSON) as Markdown: variants, ms per update, ratios, target."""
    ms = {label: 1e3 * s for label, s in record["seconds_per_update"].items()}
    lines = [
        f"{record.get('device_name', '?')}, batch {record.get('batch', '?')}, torch {record.get('torch', '?')}, "
        f"{record.get('rounds_done', record.get('rounds', '?'))} rounds (medians)",
        "",
        "| variant | ms per update | updates/s |",
        "|---|---|---|",
    ]
    lines += [f"| {label} | {value:.2f} | {1e3 / value:.1f} |" for label, value in ms.items()]
    lines += [f"- {name}: {value:.3f}" for name, value in record.get("ratios", {}).items()]
    lines += [f"- {line}" for line in target_lines(record["seconds_per_update"])]
    return "\n".join(lines)


#: The methods of ``gpu_check.sh distracted``, in the order of its table.
DISTRACTED_METHODS = ("eps-r", "drq+dbc", "drq")


def distracted_runs(root: Path) -> dict[tuple[str, int], tuple[dict, list[tuple[int, float, float]], str]]:
    """Every run of ``gpu_check.sh distracted`` filed under ``root`` (``*/distracted/<run>/``), by (method, seed):
    its config, its evaluations (env step, mean, std on the held-out videos) and the filing it is read from. A
    run filed twice (a partial run filed again when it went further) counts once, with its longest record."""
    runs: dict = {}
    for folder in sorted(Path(root).glob("*/distracted/*/")):
        try:
            cfg = json.loads((folder / "config.json").read_text())["config"]
            table = read_csv_columns(folder / "eval.csv")
            rows = [
                (int(s), float(m), float(d))
                for s, m, d in zip(table["env_step"], table["mean_return"], table["std_return"])
            ]
            key = (str(cfg["method"]), int(cfg["seed"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a run stopped before its first evaluation: nothing to show
        if key not in runs or len(rows) > len(runs[key][1]):
            runs[key] = (cfg, rows, folder.parent.parent.name)
    return runs


def _steps(n: int) -> str:
    return f"{n // 1000}k" if n and n % 1000 == 0 else str(n)


def distracted_table(root: Path) -> str:
    """Markdown: one row per method and seed of :func:`distracted_runs`, the mean ± std of the evaluation at
    each multiple of the runs' ``eval_every`` up to their ``env_steps`` (blank where it has not landed), then
    per method the seeds that reached ``env_steps`` and their mean there, and the filings read."""
    runs = distracted_runs(root)
    steps = max((int(c.get("env_steps", 100_000)) for c, _, _ in runs.values()), default=100_000)
    every = min((int(c.get("eval_every", 20_000)) for c, _, _ in runs.values()), default=20_000)
    columns = list(range(0, steps + 1, every))
    lines = ["| method | seed | " + " | ".join(_steps(c) for c in columns) + " |", "|---|---|" + "---|" * len(columns)]
    methods = [m for m in DISTRACTED_METHODS if any(k[0] == m for k in runs)]
    methods += sorted({k[0] for k in runs} - set(methods))
    finals: dict[str, list[float]] = {}
    for method in methods:
        for seed in sorted(s for m, s in runs if m == method):
            at = {step: (mean, std) for step, mean, std in runs[(method, seed)][1]}
            cells = [f"{at[c][0]:.0f} ± {at[c][1]:.0f}" if c in at else "" for c in columns]
            lines.append(f"| {method} | {seed} | " + " | ".join(cells) + " |")
            if steps in at:
                finals.setdefault(method, []).append(at[steps][0])
    lines.append("")
    for method in methods:
        done = finals.get(method, [])
        seeds = sum(1 for m, _ in runs if m == method)
        lines.append(
            f"- {method}: {len(done)} of {seeds} filed seeds at {_steps(steps)}"
            + (f", mean {sum(done) / len(done):.0f}" if done else "")
        )
    if runs:
        lines.append(f"- from {', '.join(sorted({name for _, _, name in runs.values()}))}")
    return "\n".join(lines)


#: The uniform random policy's returns on the distracted runs' evaluation episodes, cached beside the filings.
DISTRACTED_RANDOM = "distracted_random.json"
#: What the random policy's returns depend on: the environment and the evaluation episodes, not the agent.
RANDOM_KEYS = ("task", "action_repeat", "episode_steps", "seed", "eval_episodes", "background", "camera")


def random_key(cfg: dict) -> dict:
    return {k: cfg.get(k) for k in RANDOM_KEYS}


def distracted_random(root: Path, cfg: dict, episodes: int = 10) -> list[float]:
    """Returns of a uniform random policy on the evaluation episodes of a distracted run with config ``cfg``
    (``episodes`` of them, on the held-out videos), read from ``root/distracted_random.json`` when it holds
    them for the same environment and episodes, else computed (``benchmarks.learning_check.random_returns``:
    it renders, a minute or two on a CPU) and written there."""
    path = Path(root) / DISTRACTED_RANDOM
    key = random_key(cfg)
    try:
        cached = json.loads(path.read_text())
        if cached.get("key") == key and len(cached.get("returns", [])) == episodes:
            return [float(r) for r in cached["returns"]]
    except (OSError, ValueError, AttributeError):
        pass
    from agents.config import TrainConfig  # torch and the environments: only when the returns are not cached
    from benchmarks.learning_check import random_returns
    from bisimkit.files import atomic_write_json

    print(f"the random policy's returns on {key['task']} with the distractions: {episodes} episodes ...", flush=True)
    returns = random_returns(TrainConfig.from_dict(cfg), episodes)
    atomic_write_json(
        path,
        {
            "key": key,
            "episodes": episodes,
            "returns": returns,
            "policy": "uniform actions in [-1, 1]^k (benchmarks.learning_check.RandomPolicy)",
        },
    )
    return returns


#: Colours of the methods in the distracted figure (line style by seed).
DISTRACTED_COLOURS = {"eps-r": "tab:orange", "drq+dbc": "tab:green", "drq": "tab:blue"}


def distracted_summary(root: Path, figure: Path | None = None, random: list[float] | None = None) -> dict:
    """Every distracted run filed under ``root`` judged by the CPU learning check's rule
    (``benchmarks.learning_check.verdict``: the mean of the last three evaluations clears the uniform
    random policy's mean by 100 and by 3 of its standard deviations) at the last step it reached, the
    record written to ``root/distracted.json`` and, with ``figure``, every curve drawn against the random
    policy's band and the pass mark. ``random``: the random policy's returns (default
    :func:`distracted_random` for the first run's config)."""
    from benchmarks.learning_check import LAST_EVALUATIONS, plot, verdict  # the rule and its figure live there

    runs = distracted_runs(root)
    if not runs:
        return {}
    first_cfg = next(iter(runs.values()))[0]
    rand = distracted_random(root, first_cfg) if random is None else [float(r) for r in random]
    r_mean, r_std = float(np.mean(rand)), float(np.std(rand))
    record: dict = {
        "rule": f"mean of the last {LAST_EVALUATIONS} evaluations >= random mean + max(100, 3 std)",
        "random_returns": rand,
        "random_mean": r_mean,
        "random_std": r_std,
        "runs": {},
    }
    curves = []
    for (method, seed), (cfg, rows, filing) in sorted(
        runs.items(),
        key=lambda kv: (list(DISTRACTED_COLOURS).index(kv[0][0]) if kv[0][0] in DISTRACTED_COLOURS else 99, kv[0][1]),
    ):
        steps, means, stds = (list(x) for x in zip(*rows))
        passed, last, mark = verdict(means, rand)
        record["pass_mark"] = mark
        record["runs"][f"{method}-seed{seed}"] = {
            "method": method,
            "seed": seed,
            "filing": filing,
            "steps": steps,
            "eval_mean": means,
            "eval_std": stds,
            "reached": steps[-1],
            "planned": int(cfg.get("env_steps", steps[-1])),
            "eval_episodes": cfg.get("eval_episodes"),
            "last_evaluations_mean": last,
            "passed": passed,
        }
        style = "-" if seed == 0 else "--"
        curves.append(
            (
                f"{method} seed {seed} (last {LAST_EVALUATIONS}: {last:.0f}, {'pass' if passed else 'fail'})",
                DISTRACTED_COLOURS.get(method, "tab:purple"),
                steps,
                means,
                stds,
                style,
            )
        )
    from bisimkit.files import atomic_write_json

    atomic_write_json(Path(root) / "distracted.json", record)
    if figure is not None:
        title = f"{first_cfg.get('task')}, background + camera distractions, held-out videos (GPU runs)"
        record["figure"] = str(plot(Path(figure), curves, r_mean, r_std, title, record["pass_mark"]))
    return record


def distracted_lines(record: dict) -> str:
    """One line per run of :func:`distracted_summary`'s record: its verdict at the step it reached."""
    lines = [
        f"- random policy {record['random_mean']:.1f} ± {record['random_std']:.1f} "
        f"({len(record['random_returns'])} episodes); pass mark {record['pass_mark']:.1f}"
    ]
    for name, r in record["runs"].items():
        lines.append(
            f"- {name}: {'PASS' if r['passed'] else 'FAIL'}, last three evaluations "
            f"{r['last_evaluations_mean']:.1f} at {_steps(r['reached'])} of {_steps(r['planned'])}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("archive", nargs="?", help="results.tgz from benchmarks/gpu_check.sh")
    p.add_argument("--name", help="folder under benchmarks/results/gpu/ (e.g. h200-all); with an archive")
    p.add_argument("--figure", default=None, help="fidelity figure (default: in the new folder)")
    p.add_argument(
        "--distracted", action="store_true", help="without an archive: judge and draw the distracted runs filed so far"
    )
    p.add_argument(
        "--distracted-figure",
        default=None,
        help="figure of the distracted runs (default distracted.png beside the filings)",
    )
    p.add_argument("--root", default=str(GPU_RESULTS), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    figure = Path(args.distracted_figure) if args.distracted_figure else Path(args.root) / "distracted.png"
    if args.archive is None:
        if not args.distracted:
            print("error: archive: name a results.tgz, or pass --distracted", file=sys.stderr)
            return 2
        record = distracted_summary(Path(args.root), figure)
        if not record:
            print(f"error: no distracted runs filed under {args.root}", file=sys.stderr)
            return 2
        print(distracted_table(Path(args.root)) + "\n\n" + distracted_lines(record) + f"\n- figure {figure}")
        return 0
    dest = Path(args.root) / (args.name or "")
    try:
        if not args.name:
            raise InputError("name: give --name, the folder the archive is filed in")
        if not args.name or Path(args.name).name != args.name or args.name in (".", ".."):
            raise InputError(f"name: {args.name!r} is not a plain folder name")
        names = unpack(Path(args.archive), dest)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"unpacked {len(names)} entries into {dest}")
    seeds = sorted((dest / "fidelity").glob("drq-seed*"))
    if seeds:
        from benchmarks.drq_fidelity import main as fidelity  # only for a results archive with fidelity runs

        figure = args.figure or str(dest / "fidelity.png")
        print("\n## Fidelity (benchmarks.drq_fidelity)\n")
        fidelity([str(s) for s in seeds] + ["--out", figure, "--json", str(dest / "fidelity.json")])
    else:
        print("no fidelity runs in the archive")
    for name in ("updates-cuda.json", "updates-compiled.json"):
        path = dest / name
        if path.is_file():
            print(f"\n## {name}\n")
            try:
                print(bench_table(json.loads(path.read_text())))
            except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
                print(f"{name}: not a bench_updates record ({exc})")
    checks = dest / "graphs-check.json"
    if checks.is_file():
        for method, c in json.loads(checks.read_text()).get("checks", {}).items():
            print(
                f"graphs check, {method}: {'pass' if c.get('passed') else 'FAIL'} (largest relative difference "
                f"{c.get('max_rel', float('nan')):.2e}; {'same' if c.get('same_draws') else 'different'} draws)"
            )
    compare = dest / "drq-compare.json"
    if compare.is_file():
        record = json.loads(compare.read_text())
        for path, r in record.get("paths", {}).items():
            same = r["same_weights"]
            print(
                f"drq_compare, {path} vs DrQ (float32): critic loss {same['critic']['median_rel']:.1e} median / "
                f"{same['critic']['max_rel']:.1e} max per update; free run of {record.get('updates')} updates "
                f"{r['free_run']['last10_median_rel']:.1e} apart"
            )
    if (dest / "distracted").is_dir():
        print("\n## Distracted runs (gpu_check.sh distracted), held-out videos, every filing so far\n")
        print(distracted_table(Path(args.root)))
        record = distracted_summary(Path(args.root), figure)
        print("\n" + distracted_lines(record) + f"\n- figure {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
