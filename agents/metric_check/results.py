"""A metric check's files: the matrices, the scene's MDP, the summary and its table, written atomically."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bisimkit.files import atomic_write_bytes, atomic_write_json
from bisimkit.gaussian import save_gaussian
from bisimkit.mdp import save_mdp

from ..scenes import Scene


@dataclass
class MetricCheck:
    """What :func:`learn_metric` returns: the learned and exact matrices over the evaluation ``states`` (the
    learned one averaged over distractor draws of the training family; ``learned_held_out`` over draws of the
    held-out family), the summary numbers, the scene, the trained agent and, in agent mode on a finite scene, the
    agent's final policy (per-state pre-squash mean and std) whose metric ``exact`` is."""

    learned: np.ndarray
    exact: np.ndarray
    states: np.ndarray
    summary: dict
    scene: Scene
    agent: object = field(repr=False, default=None)
    curve: list = field(default_factory=list)
    learned_held_out: np.ndarray | None = None
    policy: tuple[np.ndarray, np.ndarray] | None = None


TARGETS = {"mean_relative_error": 0.05, "max_relative_error": 0.15, "spearman": 0.95, "distractor_invariance": 0.05}


def meets_targets(summary: dict) -> dict[str, bool]:
    """Each number of the scene check's targets (eps-r and eps-pi, isolated), met or not."""
    return {k: (summary[k] >= v if k == "spearman" else summary[k] <= v) for k, v in TARGETS.items()}


def markdown_table(summaries: list[dict]) -> str:
    """One row per run: scene, method, mode, the four numbers and the seconds."""
    head = (
        "| scene | method | mode | mean rel. error | max rel. error | Spearman | distractor invariance | "
        "target exact | seconds |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| {s['scene']} | {s['method']} | {s['mode']} | {100 * s['mean_relative_error']:.1f}% | "
        f"{100 * s['max_relative_error']:.1f}% | {s['spearman']:.3f} | {s['distractor_invariance']:.3f} | "
        f"{'yes' if s['exact']['target_exact'] else 'no'} | {s['seconds']:.0f} |"
        for s in summaries
    ]
    return head + "\n".join(rows) + "\n"


def write_results(check: MetricCheck, out: str | Path) -> list[Path]:
    """``summary.json``, ``learned.npy``, ``exact.npy``, ``states.npy``, the scene's MDP (``mdp.json``, or
    ``mdp-gaussian.json`` for a linear-Gaussian scene: both load with ``bisimkit``), ``table.md`` and, in
    agent mode or with a curve, ``curve.json``; each written atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, array in (("learned.npy", check.learned), ("exact.npy", check.exact), ("states.npy", check.states)):
        written.append(atomic_write_bytes(out / name, _npy_bytes(array)))
    if check.scene.kind == "finite":
        written.append(save_mdp(check.scene.mdp, out / "mdp.json"))
    else:
        written.append(save_gaussian(check.scene.mdp, out / "mdp-gaussian.json"))
    written.append(atomic_write_json(out / "summary.json", check.summary))
    written.append(atomic_write_bytes(out / "table.md", markdown_table([check.summary]).encode()))
    if check.curve:
        written.append(atomic_write_json(out / "curve.json", check.curve))
    return [Path(p) for p in written]


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array))
    return buf.getvalue()


def load_results(folder: str | Path) -> dict:
    """The summary and matrices a :func:`write_results` folder holds."""
    folder = Path(folder)
    return {
        "summary": json.loads((folder / "summary.json").read_text()),
        "learned": np.load(folder / "learned.npy"),
        "exact": np.load(folder / "exact.npy"),
        "states": np.load(folder / "states.npy"),
    }
