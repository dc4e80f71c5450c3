"""The coupling study: every method's learned metric against the metric it intends and its loss's own fixed point.

    python -m benchmarks.coupling_study [--out benchmarks/results/coupling_study] [--slice K/N] [--threads 1]
    python -m benchmarks.coupling_study --dry-run                    # every cell at tiny sizes, into a fresh folder
    python -m benchmarks.coupling_study --gather                     # table and figure of the records there are
    python -m benchmarks.coupling_study --image-size 84 --batch 512 --device cuda \\
        --out runs/coupling_study_84                                 # the GPU variant

One run per mode, scene, method and seed (``agents.metric_check.learn_metric``, all
three distractors): modes ``isolated`` and ``agent``; scenes ``ring`` (exact),
``sprite`` and ``sprite-noisy`` (linear-Gaussian, the second with four times the
transition noise, where the coupling of the next states matters); methods

=========  ==========================================================  ============  ====================
method     loss                                                        intends       own fixed point
=========  ==========================================================  ============  ====================
eps-r      entangled, reward ground                                    ``pi``        ``eps-bar-reward``
indep-r    eps-r's loss with independent noise (``coupling``)          ``pi``        ``independent-reward``
eps-pi     entangled, policy ground                                    ``psm``       ``eps-bar-policy``
drq+pse    independent, policy ground                                  ``psm``       ``psm-sampled``
drq+dbc    the paper's summed DBC loss                                 ``pi``        none
dbc        DBC's own update (``update_rule dbc``, the ``dbc`` preset)  ``pi``        none
=========  ==========================================================  ============  ====================

(``agents/metric_check/references.py`` says what each metric is and how it is
computed.) eps-r / indep-r and eps-pi / drq+pse differ only in the coupling. Each
run is held against both metrics: errors relative to the largest distance, per-pair
relative errors over pairs above 5% of it, Spearman, and the distractor invariance
on fresh draws of the training distractors and on the held-out family. In agent
mode on the ring both metrics are those of the agent's final policy; on the sprites
no exact metric of the agent's own policy exists and the behaviour's is used (the
record says so).

Every run's record goes into its own folder, ``OUT/MODE/SCENE/METHOD/seedK/``
(``summary.json``, the learned matrices under both distractor families, the two
reference matrices, the evaluation states), written whole or not at all. A run
whose folder holds a record is skipped, so the command resumes where it stopped; a
record made with other settings stops it (one line naming the record). The
metrics a scene's behaviour fixes are computed once and kept in ``OUT/targets/``.
``--slice K/N`` runs the K-th of N interleaved shares of the runs, so N processes
(one per core, ``--threads 1``) split the study; a run recorded by another process
while this one works is skipped when its turn comes, so a process that finishes its
share early can take over the tail of another's (``--slice`` with a narrower
``--seeds``). At the end (and with ``--gather`` alone) it writes ``OUT/table.md``
and ``OUT/coupling_study.png`` from every record there (``python -m
figures.coupling_study``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agents.entry import run_command
from agents.metric_check import check_variant, compare, intended_metric, learn_metric, own_fixed_point, reference_metric
from agents.metric_check.references import MC_SAMPLES, PER_PAIR_FLOOR, Reference
from agents.scenes import SCENES, build_scene
from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json, atomic_write_text, staged_folder
from figures.coupling_study import aggregate, findings, load_records, markdown_table, plot_coupling_study

#: The study's methods: the agent's method and the variant (coupling, update rule).
STUDY_METHODS = {
    "eps-r": ("eps-r", None, "joint"),
    "indep-r": ("eps-r", "independent", "joint"),
    "eps-pi": ("eps-pi", None, "joint"),
    "drq+pse": ("drq+pse", None, "joint"),
    "drq+dbc": ("drq+dbc", None, "joint"),
    "dbc": ("drq+dbc", None, "dbc"),
}
STUDY_SCENES = ("ring", "sprite", "sprite-noisy")
STUDY_MODES = ("isolated", "agent")
#: The settings of the records (docs/results/coupling_study.md): each run's updates, batch, frame side, noise draws
#: per bisimulation target, Monte Carlo rollout pairs per state pair, distractor draws per evaluated state.
DEFAULTS = dict(
    steps=1500, batch=64, image_size=32, samples_per_pair=1, samples=MC_SAMPLES, draws=8, seeds="0-4", device="cpu"
)
#: --dry-run: every cell, one seed, at these sizes (seed_steps: agent mode's random steps before learning).
DRY = dict(steps=6, batch=8, image_size=16, samples=50, draws=2, seeds="0", seed_steps=8)
#: Settings a record must share with the command to count as one of its runs.
SETTINGS = ("steps", "batch", "image_size", "samples_per_pair", "mc_samples", "draws")


def parse_seeds(text: str) -> list[int]:
    """``0-4`` or ``0,2,5`` (or a mix) as a sorted list of distinct non-negative seeds."""
    seeds: set[int] = set()
    for i, part in enumerate(str(text).split(",")):
        lo, dash, hi = part.strip().partition("-")
        try:
            values = range(int(lo), int(hi) + 1) if dash else [int(lo)]
        except ValueError:
            raise InputError(f"seeds[{i}]: {part!r} is not a seed or a range A-B") from None
        if dash and int(hi) < int(lo) or min(values, default=0) < 0:
            raise InputError(f"seeds[{i}]: {part!r} is not a range of non-negative seeds")
        seeds.update(values)
    return sorted(seeds)


def parse_slice(text: str | None) -> tuple[int, int]:
    """``K/N`` with 1 <= K <= N as (K, N); None as (1, 1)."""
    if text is None:
        return 1, 1
    k, slash, n = str(text).partition("/")
    try:
        k, n = int(k), int(n)
    except ValueError:
        raise InputError(f"slice: {text!r} is not K/N") from None
    if not slash or n < 1 or not 1 <= k <= n:
        raise InputError(f"slice: {text!r} is not K/N with 1 <= K <= N")
    return k, n


def _names(text: str, allowed, what: str) -> list[str]:
    names = [x for x in str(text).split(",") if x]
    for i, name in enumerate(names):
        if name not in allowed:
            raise InputError(f"{what}[{i}]: {name!r} is not one of {', '.join(allowed)}")
    if not names:
        raise InputError(f"{what}: none given")
    return names


def plan(modes, scenes, methods, seeds) -> list[tuple[str, str, str, int]]:
    """Every run, in the order they are taken: seed first, so that a study stopped early has whole seeds of
    every cell, then mode, scene and method."""
    return [(mode, scene, method, seed) for seed in seeds for mode in modes for scene in scenes for method in methods]


def my_share(runs: list, k: int, n: int) -> list:
    """The K-th of N interleaved shares: runs K-1, K-1+N, K-1+2N, ..."""
    return runs[k - 1 :: n]


def run_folder(out: Path, mode: str, scene: str, method: str, seed: int) -> Path:
    return out / mode / scene / method / f"seed{seed}"


def finished(folder: Path, settings: dict) -> bool:
    """Whether ``folder`` holds a record of these ``settings`` (False when it holds none); a record of other
    settings is refused in one line naming it and the first setting that differs."""
    path = folder / "summary.json"
    if not path.is_file():
        return False
    try:
        record = json.loads(path.read_text())
    except ValueError as exc:
        raise InputError(f"out: {path} is not JSON ({exc}); delete its folder to run it again") from None
    for key in SETTINGS:
        if record.get(key) != settings[key]:
            raise InputError(
                f"out: {path} was run with {key} {record.get(key)!r}, this command asks "
                f"{settings[key]!r}: give another --out, or delete that folder"
            )
    return True


# ------------------------------------------------------------------ targets
def _reference_json(ref: Reference) -> dict:
    return {"name": ref.name, "lower": ref.lower.tolist(), "upper": ref.upper.tolist(), "info": ref.info}


def cached_reference(out: Path, scene, name: str, samples: int) -> Reference:
    """A reference of the scene's behaviour (:func:`agents.metric_check.reference_metric`, Monte Carlo seed 0),
    kept in ``OUT/targets/SCENE/NAME[-mcS].json`` so that every seed and slice reads the same one."""
    suffix = f"-mc{samples}" if scene.kind == "gaussian" else ""
    path = out / "targets" / scene.name / f"{name}{suffix}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            return Reference(data["name"], np.asarray(data["lower"]), np.asarray(data["upper"]), data["info"])
        except (ValueError, KeyError) as exc:
            raise InputError(f"out: {path} is not a reference file ({exc}); delete it to compute it again") from None
    ref = reference_metric(scene, name, samples=samples, seed=0)
    atomic_write_json(path, _reference_json(ref))
    return ref


def references(out: Path, scene, method: str, samples: int, policy=None) -> tuple[Reference, Reference | None]:
    """(intended, own) of a study method on ``scene``: of the behaviour (cached), or on a finite scene of
    ``policy``, the agent's final policy."""
    agent_method, coupling, update_rule = STUDY_METHODS[method]
    names = (intended_metric(agent_method), own_fixed_point(agent_method, coupling, update_rule))
    if policy is not None:
        return tuple(reference_metric(scene, n, policy=policy) if n else None for n in names)
    return tuple(cached_reference(out, scene, n, samples) if n else None for n in names)


# --------------------------------------------------------------------- runs
def _npy(folder: Path, name: str, array) -> None:
    np.save(folder / name, np.asarray(array))


def one_run(out: Path, mode: str, scene_name: str, method: str, seed: int, args, extra: dict) -> dict:
    """Train, measure and write one run's record into its folder (whole or not at all); the record."""
    agent_method, coupling, update_rule = STUDY_METHODS[method]
    check_variant(agent_method, coupling, update_rule)
    scene = build_scene(scene_name, args.image_size)
    intended, own = references(out, scene, method, args.samples)
    ref = own or intended  # learn_metric's own summary: the loss's fixed point, or the intended metric
    target = (ref.matrix, {"reference": ref.name, **ref.info, "target_exact": own is not None})
    check = learn_metric(
        scene,
        method=agent_method,
        distractors="all",
        steps=args.steps,
        mode=mode,
        batch=args.batch,
        image_size=args.image_size,
        seed=seed,
        device=args.device,
        draws=args.draws,
        samples=args.samples,
        samples_per_pair=args.samples_per_pair,
        coupling=coupling,
        update_rule=update_rule,
        target=target,
        config=extra or None,
    )
    policy_note = "the scene's behaviour policy"
    if mode == "agent" and check.policy is not None:
        intended, own = references(out, scene, method, args.samples, policy=check.policy)
        policy_note = "the agent's final policy"
    elif mode == "agent":
        policy_note = "the scene's behaviour policy (no exact metric of the agent's own policy on a Gaussian scene)"
    s = check.summary
    record = {
        "mode": mode,
        "scene": scene_name,
        "method": method,
        "seed": seed,
        "agent_method": agent_method,
        "coupling": s["coupling"],
        "update_rule": update_rule,
        "samples_per_pair": args.samples_per_pair,
        "steps": args.steps,
        "batch": args.batch,
        "image_size": args.image_size,
        "mc_samples": args.samples,
        "draws": args.draws,
        "device": args.device,
        "threads": args.threads,
        "seconds": s["seconds"],
        "cpu_seconds": s["cpu_seconds"],
        "policy": policy_note,
        "learned_distance": s["learned_distance"],
        "per_pair_floor": PER_PAIR_FLOOR,
        "invariance": {"seen": s["distractor_invariance"], "held_out": s["held_out"]["distractor_invariance"]},
        "intended": {
            "name": intended.name,
            "info": intended.info,
            "errors": compare(check.learned, intended),
            "held_out_errors": compare(check.learned_held_out, intended),
        },
        "own": (
            {
                "name": own.name,
                "info": own.info,
                "errors": compare(check.learned, own),
                "held_out_errors": compare(check.learned_held_out, own),
                "against_intended": compare(own.matrix, intended),
            }
            if own is not None
            else {
                "name": None,
                "note": "no operator on states is the fixed point of the deep DBC loss (its target "
                "reads W2 between latent Gaussians, not the learned distance)",
            }
        ),
        "check": s,
    }
    if check.policy is not None:
        record["policy_mean"], record["policy_std"] = (np.asarray(x).tolist() for x in check.policy)
    folder = run_folder(out, mode, scene_name, method, seed)
    for stale in folder.parent.glob(f".{folder.name}.*"):  # a staging folder left by a run that was killed
        shutil.rmtree(stale, ignore_errors=True)
    with staged_folder(folder) as staging:
        _npy(staging, "learned.npy", check.learned)
        _npy(staging, "learned_held_out.npy", check.learned_held_out)
        _npy(staging, "intended_lower.npy", intended.lower)
        _npy(staging, "intended_upper.npy", intended.upper)
        if own is not None:
            _npy(staging, "own.npy", own.matrix)
        _npy(staging, "states.npy", scene.eval_states)
        atomic_write_json(staging / "summary.json", _clean(record))
    return record


def _clean(value):
    """JSON-safe: NaN and infinities as null, numpy scalars as numbers."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def gather(out: Path, figure: Path | None = None) -> list[str]:
    """Table and figure of every record in ``out``; the lines of the findings."""
    records = load_records(out)
    if not records:
        return []
    cells = aggregate(records)
    lines = findings(cells)
    atomic_write_text(out / "table.md", markdown_table(cells) + "\n" + "\n".join(f"* {x}" for x in lines) + "\n")
    plot_coupling_study(figure or out / "coupling_study.png", cells)
    return lines


# ---------------------------------------------------------------- command
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.coupling_study",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--out",
        default=None,
        help="folder of the records (default benchmarks/results/coupling_study; with --dry-run a new temporary folder)",
    )
    p.add_argument("--modes", default=",".join(STUDY_MODES), help=f"of {', '.join(STUDY_MODES)} (default both)")
    p.add_argument(
        "--scenes", default=",".join(STUDY_SCENES), help=f"of {', '.join(SCENES)} (default {','.join(STUDY_SCENES)})"
    )
    p.add_argument("--methods", default=",".join(STUDY_METHODS), help=f"of {', '.join(STUDY_METHODS)} (default all)")
    p.add_argument("--seeds", default=None, help=f"seeds, e.g. 0-4 or 0,3 (default {DEFAULTS['seeds']})")
    p.add_argument("--steps", type=int, default=None, help=f"updates per run (default {DEFAULTS['steps']})")
    p.add_argument(
        "--batch",
        type=int,
        default=None,
        help=f"transitions per update (default {DEFAULTS['batch']}; the GPU variant 512)",
    )
    p.add_argument(
        "--image-size",
        type=int,
        default=None,
        help=f"frame side in pixels (default {DEFAULTS['image_size']}; the GPU variant 84)",
    )
    p.add_argument(
        "--samples-per-pair",
        type=int,
        default=None,
        help=f"noise draws per bisimulation target (default {DEFAULTS['samples_per_pair']}, as training)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=None,
        help=f"Monte Carlo rollout pairs per state pair on the sprites (default {DEFAULTS['samples']})",
    )
    p.add_argument(
        "--draws", type=int, default=None, help=f"distractor draws per evaluated state (default {DEFAULTS['draws']})"
    )
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's; 1 per slice)")
    p.add_argument("--slice", default=None, help="K/N: run the K-th of N interleaved shares of the runs")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="every cell, seed 0, at tiny sizes (6 updates, batch 8, 16 px, 50 rollout pairs), into a "
        "new temporary folder unless --out is given",
    )
    p.add_argument("--gather", action="store_true", help="run nothing: the table and figure of OUT's records")
    p.add_argument("--list", action="store_true", help="print this slice's runs and whether each is done; run nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(
        lambda: _run(args),
        interrupted="the records written so far stay; run the same command to resume",
        bad_input=(InputError, ValueError),
    )


def _settings(args) -> None:
    """Fill the options left unset: --dry-run's sizes, else the records' settings."""
    base = {**DEFAULTS, **({k: v for k, v in DRY.items() if k != "seed_steps"} if args.dry_run else {})}
    for key in ("steps", "batch", "image_size", "samples_per_pair", "samples", "draws", "seeds", "device"):
        if getattr(args, key) is None:
            setattr(args, key, base[key])
    for name, low in (
        ("steps", 1),
        ("batch", 2),
        ("image_size", 16),
        ("samples_per_pair", 1),
        ("samples", 2),
        ("draws", 2),
        ("threads", 1),
    ):
        value = getattr(args, name)
        if value is not None and value < low:
            raise InputError(f"{name}: expected an integer >= {low}, got {value}")


def _run(args) -> int:
    _settings(args)
    modes = _names(args.modes, STUDY_MODES, "modes")
    scenes = _names(args.scenes, SCENES, "scenes")
    methods = _names(args.methods, tuple(STUDY_METHODS), "methods")
    seeds = parse_seeds(args.seeds)
    k, n = parse_slice(args.slice)
    if args.out is None:
        args.out = (
            tempfile.mkdtemp(prefix="coupling_study_dry_") if args.dry_run else "benchmarks/results/coupling_study"
        )
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"out: {out} exists and is not a folder")
    if args.gather:
        lines = gather(out)
        print("\n".join(lines) if lines else f"no records in {out}")
        return 0
    if args.threads is not None:
        import torch  # the agents extra: a missing one is reported by run_command, not at import

        torch.set_num_threads(args.threads)
    settings = {
        "steps": args.steps,
        "batch": args.batch,
        "image_size": args.image_size,
        "samples_per_pair": args.samples_per_pair,
        "mc_samples": args.samples,
        "draws": args.draws,
    }
    runs = my_share(plan(modes, scenes, methods, seeds), k, n)
    done = [finished(run_folder(out, *r), settings) for r in runs]
    if args.list:
        for r, d in zip(runs, done):
            print(f"{'done' if d else 'todo'} {r[0]} {r[1]} {r[2]} seed {r[3]}")
        return 0
    extra = {"seed_steps": DRY["seed_steps"]} if args.dry_run else {}
    todo = [r for r, d in zip(runs, done) if not d]
    print(f"slice {k}/{n}: {len(runs)} runs, {len(runs) - len(todo)} done, {len(todo)} to run, into {out}", flush=True)
    start = time.monotonic()
    for i, (mode, scene, method, seed) in enumerate(todo, 1):
        t0 = time.monotonic()
        if finished(run_folder(out, mode, scene, method, seed), settings):
            print(
                f"[{i}/{len(todo)}] {mode} {scene} {method} seed {seed}: recorded meanwhile by another "
                "process; skipped",
                flush=True,
            )
            continue
        print(f"[{i}/{len(todo)}] {mode} {scene} {method} seed {seed}: start", flush=True)
        record = one_run(out, mode, scene, method, seed, args, extra)
        e = record["intended"]["errors"]
        own = record["own"].get("errors")
        elapsed = time.monotonic() - start
        print(
            f"[{i}/{len(todo)}] {mode} {scene} {method} seed {seed}: {time.monotonic() - t0:.0f} s; against "
            f"{record['intended']['name']} mean {100 * e['mean_relative_error']:.1f}% max "
            f"{100 * e['max_relative_error']:.1f}%"
            + (
                f"; against {record['own']['name']} mean {100 * own['mean_relative_error']:.1f}% max "
                f"{100 * own['max_relative_error']:.1f}%"
                if own
                else ""
            )
            + f"; invariance {record['invariance']['seen']:.3f} seen, {record['invariance']['held_out']:.3f} "
            f"held-out; about {elapsed / i * (len(todo) - i) / 60:.0f} min left",
            flush=True,
        )
    lines = gather(out)
    print("\n".join(lines))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
