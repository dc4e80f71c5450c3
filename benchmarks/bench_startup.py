"""Start-up: ``import bisimkit`` and a tiny solve's whole process, this tree beside another checkout.

    python -m benchmarks.bench_startup [--against /path/to/other/checkout] [--rounds 7]
                                       [--out benchmarks/results/startup.json]

Every sample is a fresh interpreter, timed from the outside (wall seconds of the child process):

* ``import bisimkit``: ``python -c "import bisimkit"``;
* ``tiny solve``: ``python -m bisimkit solve examples/tiny-rooms.json --metric pi --out FILE.json
  --quiet``, the whole process, with the kernels already in numba's disk cache (one untimed run of
  each tree first fills it);
* what the libraries cost on their own (this interpreter, no bisimkit): ``pass``, ``import numpy``,
  ``import scipy.sparse``, ``import numba``, the three together as the solver imports them, and
  this tree's ``import bisimkit.cli`` (everything ``bisimkit solve`` imports before it runs).

Each sample records wall seconds and the child's CPU seconds (user + system, ``os.wait4``); on a
machine shared with other work the wall clock also measures the neighbours, the CPU time much less.

Rounds alternate which tree goes first; the medians are printed and written to ``--out``. The
targets (``docs/performance.md#start-up``) are checked here, never in the tests.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bisimkit.files import atomic_write_json

HERE = Path(__file__).resolve().parent.parent
#: The start-up targets, seconds (medians).
IMPORT_TARGET = 0.35
TINY_SOLVE_TARGET = 0.6
#: What the libraries cost alone, for the breakdown: the solver's three (scipy.sparse with its linear
#: algebra and graphs, numba, numpy under both), and this tree's command line with all it imports.
LIBRARIES = {"python": "pass", "numpy": "import numpy", "scipy.sparse": "import scipy.sparse",
             "numba": "import numba",
             "all three": "import scipy.sparse.linalg, scipy.sparse.csgraph, numba",
             "bisimkit.cli": "import bisimkit.cli"}


def _env(tree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)  # this checkout's bisimkit, ahead of the installed one
    return env


def timed(cmd: list[str], tree: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one child process running ``cmd`` in ``tree``
    (it must succeed). On a machine shared with other work the CPU seconds move much less."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tree, env=_env(tree), stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} in {tree} failed:\n{err.read().decode()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime


def tiny_solve(tree: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "bisimkit", "solve", "examples/tiny-rooms.json", "--metric", "pi",
            "--out", str(out), "--quiet"]


def measure(trees: dict[str, Path], rounds: int) -> dict:
    """Samples per tree and per library, ``rounds`` of each, alternating the trees' order."""
    samples = {name: {key: [] for key in ("import", "import_cpu", "tiny_solve", "tiny_solve_cpu")} for name in trees}
    samples["libraries"] = {key: [] for lib in LIBRARIES for key in (lib, f"{lib}_cpu")}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tiny.json"
        for tree in trees.values():
            timed(tiny_solve(tree, out), tree)  # fills numba's disk cache of that tree
        names = list(trees)
        for r in range(rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                tree = trees[name]
                for key, cmd in (("import", [sys.executable, "-c", "import bisimkit"]),
                                 ("tiny_solve", tiny_solve(tree, out))):
                    wall, cpu = timed(cmd, tree)
                    samples[name][key].append(wall)
                    samples[name][f"{key}_cpu"].append(cpu)
            for lib, code in LIBRARIES.items():
                wall, cpu = timed([sys.executable, "-c", code], HERE)
                samples["libraries"][lib].append(wall)
                samples["libraries"][f"{lib}_cpu"].append(cpu)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_startup", description=__doc__.split("\n")[0])
    parser.add_argument("--against", default=None, metavar="PATH", help="another checkout to measure beside this one")
    parser.add_argument("--rounds", type=int, default=7, help="fresh processes per measurement (default 7)")
    parser.add_argument("--out", default=None, metavar="FILE.json", help="write the samples and medians here")
    args = parser.parse_args(argv)
    trees = {"this": HERE}
    if args.against:
        trees["other"] = Path(args.against).resolve()
    samples = measure(trees, args.rounds)
    medians = {name: {key: statistics.median(values) for key, values in group.items()}
               for name, group in samples.items()}
    for name in trees:
        m = medians[name]
        print(f"{name:6s} ({trees[name]}): import bisimkit {m['import']:.3f} s (CPU {m['import_cpu']:.3f} s), "
              f"tiny solve {m['tiny_solve']:.3f} s (CPU {m['tiny_solve_cpu']:.3f} s); medians of {args.rounds}")
    libs = ", ".join(f"{lib} {medians['libraries'][lib]:.3f} s (CPU {medians['libraries'][lib + '_cpu']:.3f} s)"
                     for lib in LIBRARIES)
    print(f"libraries alone, whole process: {libs}")
    this = medians["this"]
    met = this["import"] <= IMPORT_TARGET and this["tiny_solve"] <= TINY_SOLVE_TARGET
    print(f"targets: import <= {IMPORT_TARGET} s, tiny solve <= {TINY_SOLVE_TARGET} s: {'met' if met else 'NOT met'}")
    if args.out:
        atomic_write_json(args.out, {"rounds": args.rounds, "machine": platform.machine(), "cpus": os.cpu_count(),
                                     "python": platform.python_version(),
                                     "trees": {name: str(path) for name, path in trees.items()},
                                     "medians": medians, "samples": samples,
                                     "targets": {"import": IMPORT_TARGET, "tiny_solve": TINY_SOLVE_TARGET}})
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
