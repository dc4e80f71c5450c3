"""Environment throughput: distracting-control as shipped against ``agents.dcs``, on one CPU core.

Both run the same task with dynamic video backgrounds (the 2 training videos)
and the hard, dynamic camera distraction at 84x84, same seed and actions:

* ``shipped``: the package's ``suite.load`` (background + camera wrappers,
  dm_control's pixel wrapper), with only the shims needed to run on MuJoCo 3 and
  numpy 2. It renders after every control step.
* ``ours``: ``make_env(task, action_repeat=1)``: also one rendered frame per
  control step, so both do the same work per step (the ratio is the speed-up of
  the step itself).
* ``ours-paper``: ``make_env(task)`` with the paper's action repeat: one frame
  (and one texture upload) per agent step; reported in control steps/s.

Blocks of the three are interleaved (so load from other processes hits all
alike); each rate is the median over blocks, in wall-clock steps/s and in steps
per CPU-second of this process. The process is pinned to one core first.

    python -m benchmarks.bench_env [--tasks walker-walk,cheetah-run] [--steps 100] [--repeats 5] [--core 0]

Writes ``benchmarks/results/env.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "env.json"


def pin(core: int) -> None:
    """Run this process (and the GL threads it starts later) on one core, single-threaded maths."""
    os.sched_setaffinity(0, {core})
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"


def shipped_env(task: str, root: Path, seed: int):
    """distracting-control's own pipeline with background + hard camera at 84x84 (a dm_env)."""
    from agents.compat import distracting_control  # after pin() sets the thread variables
    from agents.dcs import task_spec  # after pin() sets the thread variables

    spec = task_spec(task)
    return distracting_control().suite.load(
        spec.domain,
        spec.task,
        difficulty="hard",
        dynamic=True,
        distraction_types=("background", "camera"),
        background_dataset_path=str(root),
        background_dataset_videos="train",
        background_kwargs={"num_videos": 2},
        render_kwargs={"height": 84, "width": 84, "camera_id": 0},
        task_kwargs={"random": seed},
        distraction_seed=seed,
    )


class Runner:
    """Steps one environment in timed blocks, resetting when an episode ends."""

    def __init__(self, label: str, env, kind: str, shape: tuple, seed: int, repeat: int = 1):
        import numpy as np  # after pin() sets the thread variables

        self.label, self.env, self.kind, self.repeat = label, env, kind, repeat
        self.rng = np.random.default_rng(seed)
        self.shape = shape
        self.wall: list[float] = []
        self.cpu: list[float] = []
        start = time.perf_counter()
        self.reset()
        self.reset_seconds = time.perf_counter() - start
        self.done = False

    def reset(self) -> None:
        self.env.reset()

    def step(self) -> bool:
        action = self.rng.uniform(-1.0, 1.0, self.shape)
        if self.kind == "dm_env":
            return self.env.step(action).last()
        return self.env.step(action)[2]

    def block(self, steps: int) -> None:
        """Time ``steps`` steps (control steps for dm_envs, agent steps otherwise)."""
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            if self.step():
                self.reset()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        self.wall.append(steps * self.repeat / wall)
        self.cpu.append(steps * self.repeat / cpu)

    def record(self) -> dict:
        return {
            "control_steps_per_s": statistics.median(self.wall),
            "control_steps_per_cpu_s": statistics.median(self.cpu),
            "blocks_wall": self.wall,
            "blocks_cpu": self.cpu,
            "action_repeat": self.repeat,
            "first_reset_s": self.reset_seconds,
        }


def bench_task(task: str, steps: int, repeats: int, seed: int, root: Path) -> dict:
    """Interleaved timed blocks of the shipped package, ours (repeat 1) and ours (paper repeat)."""
    from agents.dcs import make_env  # after pin() sets the thread variables

    shipped = shipped_env(task, root, seed)
    ours = make_env(task, background=True, camera=True, split="train", seed=seed, action_repeat=1)
    paper = make_env(task, background=True, camera=True, split="train", seed=seed)
    runners = [
        Runner("shipped", shipped, "dm_env", shipped.action_spec().shape, seed),
        Runner("ours", ours, "dcs", ours.action_spec.shape, seed),
        Runner("ours-paper", paper, "dcs", paper.action_spec.shape, seed, paper.action_repeat),
    ]
    for runner in runners:  # warm-up: GL context, caches
        runner.block(5)
        runner.wall.clear(), runner.cpu.clear()
    for _ in range(repeats):
        for runner in runners:
            runner.block(max(1, steps // runner.repeat) if runner.label == "ours-paper" else steps)
    out = {runner.label: runner.record() for runner in runners}
    base = out["shipped"]
    for label in ("ours", "ours-paper"):
        out[label]["ratio_wall"] = out[label]["control_steps_per_s"] / base["control_steps_per_s"]
        out[label]["ratio_cpu"] = out[label]["control_steps_per_cpu_s"] / base["control_steps_per_cpu_s"]
    out["ours-paper"]["agent_steps_per_s"] = out["ours-paper"]["control_steps_per_s"] / paper.action_repeat
    ours.close(), paper.close()
    return out


def main() -> None:
    from agents.dcs import PAPER_TASKS  # after pin() sets the thread variables (main pins first)

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--tasks",
        default=",".join(PAPER_TASKS),
        help=f"comma-separated tasks (default the paper's: {','.join(PAPER_TASKS)})",
    )
    parser.add_argument("--steps", type=int, default=100, help="control steps per timed block (default 100)")
    parser.add_argument("--repeats", type=int, default=5, help="timed blocks per environment (default 5)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the environments and of the random actions (default 0)"
    )
    parser.add_argument(
        "--core",
        type=int,
        default=min(os.sched_getaffinity(0)),
        help="the CPU core the process is pinned to (default the lowest it may run on, here %(default)s)",
    )
    parser.add_argument(
        "--davis", default=None, help="DAVIS-2017 folder (default: $BISIMKIT_DAVIS or procedural videos)"
    )
    parser.add_argument("--out", default=str(RESULTS), help=f"the JSON file of the results (default {RESULTS})")
    args = parser.parse_args()
    pin(args.core)
    from agents.videos import resolve_videos  # after pin() sets the thread variables
    from bisimkit.files import atomic_write_json  # after pin() sets the thread variables (it loads numpy)

    source = resolve_videos(args.davis)
    load_start = os.getloadavg()[0]
    print(f"# {source.describe()}; one core ({args.core}); load average {load_start:.2f}", flush=True)
    print(
        f"{'task':18} {'shipped':>9} {'ours':>9} {'ratio':>7} {'ours-paper':>11} {'ratio':>7}   "
        "(control steps/s, wall; median of blocks)",
        flush=True,
    )
    results = {}
    for task in args.tasks.split(","):
        r = bench_task(task, args.steps, args.repeats, args.seed, source.root)
        results[task] = r
        print(
            f"{task:18} {r['shipped']['control_steps_per_s']:9.1f} {r['ours']['control_steps_per_s']:9.1f} "
            f"{r['ours']['ratio_wall']:6.1f}x {r['ours-paper']['control_steps_per_s']:11.1f} "
            f"{r['ours-paper']['ratio_wall']:6.1f}x",
            flush=True,
        )
    summary = {
        label: statistics.median(r[label]["control_steps_per_s"] for r in results.values())
        for label in ("shipped", "ours", "ours-paper")
    }
    summary_cpu = {
        label: statistics.median(r[label]["control_steps_per_cpu_s"] for r in results.values())
        for label in ("shipped", "ours", "ours-paper")
    }
    ratio = {
        (label, kind): statistics.median(r[label][f"ratio_{kind}"] for r in results.values())
        for label in ("ours", "ours-paper")
        for kind in ("wall", "cpu")
    }  # the median of the tasks' ratios
    print(
        f"{'median':18} {summary['shipped']:9.1f} {summary['ours']:9.1f} {ratio['ours', 'wall']:6.1f}x "
        f"{summary['ours-paper']:11.1f} {ratio['ours-paper', 'wall']:6.1f}x"
    )
    print(
        f"{'median (cpu-s)':18} {summary_cpu['shipped']:9.1f} {summary_cpu['ours']:9.1f} "
        f"{ratio['ours', 'cpu']:6.1f}x {summary_cpu['ours-paper']:11.1f} {ratio['ours-paper', 'cpu']:6.1f}x"
    )
    atomic_write_json(
        args.out,
        {
            "workload": "env",
            "source": source.describe(),
            "core": args.core,
            "loadavg": [load_start, os.getloadavg()[0]],
            "steps": args.steps,
            "repeats": args.repeats,
            "image_size": 84,
            "summary_wall": summary,
            "summary_cpu": summary_cpu,
            "tasks": results,
            "command": " ".join(["python -m benchmarks.bench_env", *sys.argv[1:]]),
        },
    )
    print(f"# wrote {args.out}")


if __name__ == "__main__":
    main()
