"""Start-up: ``import bisimkit`` and small solves' whole processes, this tree beside another checkout.

    python -m benchmarks.bench_startup [--against /path/to/other/checkout] [--rounds 7]
                                       [--svi-repo /path/to/SVI] [--out benchmarks/results/startup.json]

Every sample is a fresh interpreter, timed from the outside (wall seconds of the child process):

* ``import bisimkit``: ``python -c "import bisimkit"``;
* ``tiny solve``: ``python -m bisimkit solve examples/tiny-rooms.json --metric pi --out FILE.json
  --quiet``, the whole process, after one untimed run of each command in each tree (file-system
  caches warm; a checkout that compiles its kernels with numba fills numba's disk cache then);
* ``two_mdp_solve``: ``python -m bisimkit solve A.json --against B.json --metric pi --out FILE.json
  --quiet`` on two Markov chains of the shape of SVI's smallest benchmark pair (miconic p01 against
  p02: 6 and 18 states, one action, c = 0.95, transition supports of at most 2 and 3), made by
  :func:`bisimkit.generators.random_mdp` with fixed seeds and written to a temporary folder at run
  time (:data:`STAND_INS`); ``dense_two_mdp_solve`` is the same shape with the generator's published
  recipe (supports up to n - 1: 5 and 17 here);
* ``svi_pair`` (with ``--svi-repo``, a checkout of https://github.com/SergioCalo/SVI): the same
  command on SVI's files of that pair, read as ``benchmarks.bench_between`` reads them;
* what the libraries cost on their own (this interpreter, no bisimkit): ``pass``, ``import numpy``,
  ``import scipy.sparse``, ``import bisimkit_native`` (the compiled kernels), the three together as a
  larger solve imports them, and
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

from benchmarks.trees import tree_env
from bisimkit.files import atomic_write_json
from bisimkit.generators import random_mdp
from bisimkit.mdp import save_mdp

HERE = Path(__file__).resolve().parent.parent
#: The start-up targets, seconds (medians).
IMPORT_TARGET = 0.35
TINY_SOLVE_TARGET = 0.6
#: The two-MDP solve of the SVI-shaped stand-in and of SVI's own pair (when measured).
TWO_MDP_TARGET = 0.6
#: The two-MDP stand-ins: (A's, B's) arguments of :func:`bisimkit.generators.random_mdp` besides one
#: action and c = 0.95. ``two_mdp_solve`` has SVI's smallest pair's shape and supports (miconic p01:
#: 6 states, supports 1-2; p02: 18 states, supports 1-3); ``dense_two_mdp_solve`` the published recipe's.
STAND_INS = {
    "two_mdp_solve": ({"n": 6, "seed": 0, "max_support": 2}, {"n": 18, "seed": 1, "max_support": 3}),
    "dense_two_mdp_solve": ({"n": 6, "seed": 0}, {"n": 18, "seed": 1}),
}
#: SVI's smallest benchmark pair, under its ``benchmarks/`` folder.
SVI_PAIR = ("deterministic/miconic/p01.json", "deterministic/miconic/p02.json")
#: What the libraries cost alone, for the breakdown: the solver's three (scipy.sparse with its linear
#: algebra and graphs, the compiled kernels, numpy under both), and this tree's command line with all it imports.
LIBRARIES = {
    "python": "pass",
    "numpy": "import numpy",
    "scipy.sparse": "import scipy.sparse",
    "bisimkit_native": "import bisimkit_native",
    "all three": "import scipy.sparse.linalg, scipy.sparse.csgraph, bisimkit_native",
    "bisimkit.cli": "import bisimkit.cli",
}


def _env(tree: Path) -> dict:
    return tree_env(tree)  # this checkout's bisimkit, ahead of the installed one


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
    return [
        sys.executable,
        "-m",
        "bisimkit",
        "solve",
        "examples/tiny-rooms.json",
        "--metric",
        "pi",
        "--out",
        str(out),
        "--quiet",
    ]


def two_mdp_solve(a: Path, b: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bisimkit",
        "solve",
        str(a),
        "--against",
        str(b),
        "--metric",
        "pi",
        "--out",
        str(out),
        "--quiet",
    ]


def write_pairs(folder: Path, svi_repo: Path | None) -> dict[str, tuple[Path, Path]]:
    """The two-MDP problems as MDP files in ``folder``: the stand-ins of :data:`STAND_INS`, and SVI's
    pair when ``svi_repo`` is given."""
    pairs = {}
    for key, specs in STAND_INS.items():
        paths = []
        for side, spec in zip("ab", specs):
            spec = dict(spec)
            mdp = random_mdp(spec.pop("n"), 1, discount=0.95, **spec)
            paths.append(save_mdp(mdp, folder / f"{key}-{side}.json"))
        pairs[key] = (paths[0], paths[1])
    if svi_repo is not None:
        # start-up cost: benchmarks.bench_between brings POT (seconds), needed only to read SVI's files
        from benchmarks.bench_between import SVI_DISCOUNT, svi_mdp

        pairs["svi_pair"] = tuple(
            save_mdp(svi_mdp(svi_repo / "benchmarks" / rel, SVI_DISCOUNT), folder / f"svi-{side}.json")
            for side, rel in zip("ab", SVI_PAIR)
        )
    return pairs


def measure(trees: dict[str, Path], rounds: int, svi_repo: Path | None = None) -> dict:
    """Samples per tree and per library, ``rounds`` of each, alternating the trees' order."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        pairs = write_pairs(Path(tmp), svi_repo)
        commands = {
            "import": lambda tree: [sys.executable, "-c", "import bisimkit"],
            "tiny_solve": lambda tree: tiny_solve(tree, out),
        }
        commands.update({key: (lambda tree, a=a, b=b: two_mdp_solve(a, b, out)) for key, (a, b) in pairs.items()})
        samples = {name: {k: [] for key in commands for k in (key, f"{key}_cpu")} for name in trees}
        samples["libraries"] = {key: [] for lib in LIBRARIES for key in (lib, f"{lib}_cpu")}
        for tree in trees.values():
            for key in commands:
                if key != "import":
                    timed(commands[key](tree), tree)  # warm caches (numba's disk cache, for a numba checkout)
        names = list(trees)
        for r in range(rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                tree = trees[name]
                for key, command in commands.items():
                    wall, cpu = timed(command(tree), tree)
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
    parser.add_argument(
        "--svi-repo",
        default=None,
        metavar="PATH",
        help="a checkout of SergioCalo/SVI: also time the two-MDP solve of its smallest pair",
    )
    parser.add_argument("--out", default=None, metavar="FILE.json", help="write the samples and medians here")
    args = parser.parse_args(argv)
    svi_repo = None if args.svi_repo is None else Path(args.svi_repo).resolve()
    if svi_repo is not None and not all((svi_repo / "benchmarks" / rel).is_file() for rel in SVI_PAIR):
        print(
            f"--svi-repo: {args.svi_repo} has no benchmarks/{SVI_PAIR[0]} and benchmarks/{SVI_PAIR[1]} "
            "(a checkout of SergioCalo/SVI)",
            file=sys.stderr,
        )
        return 2
    trees = {"this": HERE}
    if args.against:
        trees["other"] = Path(args.against).resolve()
    samples = measure(trees, args.rounds, svi_repo)
    medians = {
        name: {key: statistics.median(values) for key, values in group.items()} for name, group in samples.items()
    }
    for name in trees:
        m = medians[name]
        print(
            f"{name:6s} ({trees[name]}): import bisimkit {m['import']:.3f} s (CPU {m['import_cpu']:.3f} s), "
            f"tiny solve {m['tiny_solve']:.3f} s (CPU {m['tiny_solve_cpu']:.3f} s); medians of {args.rounds}"
        )
        two = ", ".join(
            f"{key} {m[key]:.3f} s (CPU {m[key + '_cpu']:.3f} s)" for key in (*STAND_INS, "svi_pair") if key in m
        )
        print(f"{'':6s} two MDPs, 6 x 18 states, pi: {two}")
    libs = ", ".join(
        f"{lib} {medians['libraries'][lib]:.3f} s (CPU {medians['libraries'][lib + '_cpu']:.3f} s)" for lib in LIBRARIES
    )
    print(f"libraries alone, whole process: {libs}")
    this = medians["this"]
    targets = {"import": IMPORT_TARGET, "tiny_solve": TINY_SOLVE_TARGET, "two_mdp_solve": TWO_MDP_TARGET}
    if "svi_pair" in this:
        targets["svi_pair"] = TWO_MDP_TARGET
    met = all(this[key] <= target for key, target in targets.items())
    print(
        f"targets: {', '.join(f'{key} <= {target} s' for key, target in targets.items())}: "
        f"{'met' if met else 'NOT met'}"
    )
    if args.out:
        atomic_write_json(
            args.out,
            {
                "rounds": args.rounds,
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "trees": {name: str(path) for name, path in trees.items()},
                "medians": medians,
                "samples": samples,
                "stand_ins": STAND_INS,
                "svi_pair": None if svi_repo is None else list(SVI_PAIR),
                "targets": targets,
            },
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
