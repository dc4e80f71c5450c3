"""Workload: chains from the model-checking world, beside Storm, in one run.

PRISM's bounded retransmission protocol (``brp.pm`` from stormpy's bundled example files, MAX = 4,
N = ``--sizes``), built by stormpy (``stormpy.build_model`` of the program with its constants set: no
choice labels or origins) and read as a sparse MDP (:func:`bisimkit.from_stormpy`; one action, reward the
indicator of the label ``target``, c = 0.9). For each size, in-process, model loading excluded, the three
timings taken in turn in every repeat and their medians reported, wall-clock and CPU seconds of the process
(the second less sensitive to other jobs on the machine):

* **relation**: ``relation_labels(mdp, "pi")``, the blocks of the largest pi-bisimulation (with one action it
  is bisim's too);
* **quotient**: :func:`bisimkit.quotient.quotient` for pi, the quotient-first stage of a solve (the blocks, the
  quotient MDP and the per-state deviations its certificate needs);
* **Storm**: ``stormpy.transformations.perform_bisimulation`` with the property ``P=? [F "target"]`` and Storm's
  default options (strong bisimulation, the sparse engine): its partition and quotient model. The quotient
  respects the labels of the properties, here ``target``, whose indicator is our reward: the same relation,
  so the block counts must be equal (the run stops with an error if they are not).

``--solve-sizes`` adds ``solve(mdp, "pi")`` on all pairs (its certificate, or the one line that refuses it
before any work, :mod:`bisimkit.memory`), ``--frozen-lake`` an in-process ``pi`` solve of
``gym:FrozenLake8x8-v1`` (the ``gym`` extra), ``--query-sizes`` the query ``solve(mdp, "pi", pairs=...)`` of
the distances from the initial state to ``--queries`` states drawn without replacement (seed 0): the pairs
solved (the closure of the queries, or the pairs explored with the others bracketed), the steps or rounds,
the time and the certificate, or the one line that refuses the query; ``--query-check`` compares those
sizes' answers with the all-pairs solve. One JSON object
per line; ``--out`` writes them all
(atomically).

    python -m benchmarks.bench_models [--sizes 16,64,256,1024] [--repeat 9] [--solve-sizes 16]
                                      [--frozen-lake] [--query-sizes 16,64] [--queries 100] [--query-check 16]
                                      [--out benchmarks/results/models.json]

Needs the ``storm`` extra (stormpy). Never run as a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time
import warnings
from datetime import date
from pathlib import Path

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json
from bisimkit.mdp import from_stormpy
from bisimkit.memory import NotEnoughMemory
from bisimkit.quotient import quotient
from bisimkit.relations import relation_labels
from bisimkit.solvers import solve

DISCOUNT = 0.9
MAX = 4
PROPERTY = 'P=? [F "target"]'


def brp(N: int, MAX: int = MAX):
    """stormpy's sparse DTMC of brp.pm with the constants N and MAX (its labels and reward model kept)."""
    import stormpy

    path = Path(stormpy.__file__).parent / "examples" / "files" / "dtmc" / "brp.pm"
    program, _ = stormpy.instantiate_constants(stormpy.parse_prism_program(str(path)), {"N": N, "MAX": MAX})
    return stormpy.build_model(program)


def storm_quotient(model, properties):
    """Storm's strong bisimulation quotient of ``model`` preserving ``properties``."""
    import stormpy.transformations

    return stormpy.transformations.perform_bisimulation(
        model, properties, bisimulation_type=stormpy.transformations.BisimulationType.STRONG
    )


def timed(function) -> tuple[object, float, float]:
    """``(result, wall seconds, CPU seconds of this process)`` of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - start, time.process_time() - cpu


def run_size(N: int, repeat: int, solve_it: bool) -> dict:
    import stormpy

    model = brp(N)
    mdp = from_stormpy(model, reward="target", discount=DISCOUNT)
    properties = stormpy.parse_properties(PROPERTY)
    mdp.transition_pi_rows  # the model's sparse rows, built once: part of loading, as Storm's model is
    times: dict[str, list[float]] = {"relation": [], "quotient": [], "storm": []}
    cpu: dict[str, list[float]] = {"relation": [], "quotient": [], "storm": []}
    for _ in range(repeat):  # in turn, so a busy moment of the machine falls on all three alike
        labels, seconds, cpu_seconds = timed(lambda: relation_labels(mdp, "pi"))
        times["relation"].append(seconds)
        cpu["relation"].append(cpu_seconds)
        q, seconds, cpu_seconds = timed(lambda: quotient(mdp, "pi", "reward"))
        times["quotient"].append(seconds)
        cpu["quotient"].append(cpu_seconds)
        storm, seconds, cpu_seconds = timed(lambda: storm_quotient(model, properties))
        times["storm"].append(seconds)
        cpu["storm"].append(cpu_seconds)
    blocks = int(labels.max()) + 1
    if not blocks == storm.nr_states == (mdp.n_states if q is None else q.n_blocks):
        raise SystemExit(
            f"brp N={N}: {blocks} blocks (quotient {None if q is None else q.n_blocks}), Storm {storm.nr_states}"
        )
    median = {key: statistics.median(value) for key, value in times.items()}
    median_cpu = {key: statistics.median(value) for key, value in cpu.items()}
    record = {
        "model": "brp",
        "N": N,
        "MAX": MAX,
        "states": mdp.n_states,
        "transitions": int(mdp.transition_rows.nnz),
        "property": PROPERTY,
        "blocks": blocks,
        "storm_blocks": storm.nr_states,
        "relation_seconds": median["relation"],
        "quotient_seconds": median["quotient"],
        "storm_seconds": median["storm"],
        "relation_ratio": median["relation"] / median["storm"],
        "quotient_ratio": median["quotient"] / median["storm"],
        "cpu_seconds": median_cpu,
        "cpu_relation_ratio": median_cpu["relation"] / median_cpu["storm"],
        "cpu_quotient_ratio": median_cpu["quotient"] / median_cpu["storm"],
        "repeat": repeat,
        "seconds": {key: value for key, value in times.items()},
        "cpu_seconds_all": {key: value for key, value in cpu.items()},
    }
    if solve_it:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.perf_counter()
            try:
                sol = solve(mdp, "pi")
                after = resource.getrusage(resource.RUSAGE_SELF)
                record.update(
                    solve_seconds=time.perf_counter() - start,
                    # the kernel's share: mostly first touches of freshly mapped pages (minor faults)
                    solve_system_seconds=after.ru_stime - before.ru_stime,
                    solve_minor_faults=after.ru_minflt - before.ru_minflt,
                    certified_error=sol.certified_error,
                    converged=sol.converged,
                    method=sol.method,
                    # the process's peak so far: the model, Storm's quotient and the solve
                    peak_rss_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                )
            except (NotEnoughMemory, InputError) as exc:
                record.update(solve_refused=str(exc), solve_seconds=time.perf_counter() - start)
    return record


def run_queries(N: int, count: int, check: bool = False) -> dict:
    """``solve(mdp, "pi", pairs=...)`` for (initial state, s), ``count`` states s drawn with seed 0; with
    ``check``, also the all-pairs solve and the largest difference of the answers, which must be within the two
    certificates."""
    import numpy as np

    mdp = from_stormpy(brp(N), reward="target", discount=DISCOUNT)
    init = next(s for s, names in enumerate(mdp.labels) if "init" in names)
    others = np.random.default_rng(0).choice(mdp.n_states, size=min(count, mdp.n_states), replace=False)
    pairs = np.stack([np.full(len(others), init), others], axis=1)
    record = {"model": "brp", "N": N, "MAX": MAX, "states": mdp.n_states, "queries": len(pairs), "metric": "pi"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        try:
            sol = solve(mdp, "pi", pairs=pairs)
            record.update(
                query_seconds=time.perf_counter() - start,
                explored_pairs=sol.explored,
                iterations=sol.iterations,
                certified_error=sol.certified_error,
                converged=sol.converged,
                method=sol.method,
            )
        except InputError as exc:
            record.update(query_refused=str(exc), query_seconds=time.perf_counter() - start)
        if check and "query_refused" not in record:
            full = solve(mdp, "pi")
            deviation = float(np.max(np.abs(sol.distances - full.distances[pairs[:, 0], pairs[:, 1]]), initial=0.0))
            record.update(
                all_pairs_certified_error=full.certified_error,
                all_pairs_max_difference=deviation,
                within_certificates=deviation <= sol.certified_error + full.certified_error,
            )
    return record


def run_frozen_lake(repeat: int) -> dict:
    from bisimkit.gym import load_gym_spec

    mdp = load_gym_spec("gym:FrozenLake8x8-v1")
    solve(mdp, "pi")  # the process's first solve: whatever it loads stays out of the timing
    times = []
    for _ in range(repeat):
        sol, seconds, _ = timed(lambda: solve(mdp, "pi"))
        times.append(seconds)
    return {
        "model": "FrozenLake8x8-v1",
        "states": mdp.n_states,
        "actions": mdp.n_actions,
        "metric": "pi",
        "solve_seconds": statistics.median(times),
        "fastest_seconds": min(times),
        "seconds": times,
        "certified_error": sol.certified_error,
        "method": sol.method,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16,64,256,1024", help="brp's N, comma-separated (default 16,64,256,1024)")
    parser.add_argument("--repeat", type=int, default=9, help="runs per timing, the median reported (default 9)")
    parser.add_argument("--solve-sizes", default="", help="the sizes also solved for pi on all pairs (default none)")
    parser.add_argument("--frozen-lake", action="store_true", help="add FrozenLake8x8's in-process solve")
    parser.add_argument(
        "--query-sizes", default="", help="the sizes also queried from the initial state (default none)"
    )
    parser.add_argument("--queries", type=int, default=100, help="states queried against the initial one (default 100)")
    parser.add_argument(
        "--query-check", default="", help="the query sizes also solved on all pairs, to compare (default none)"
    )
    parser.add_argument("--out", default=None, help="write the records to this JSON file (default: print only)")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    solve_sizes = {int(x) for x in args.solve_sizes.split(",") if x}
    records = []
    for N in sizes:
        records.append(run_size(N, args.repeat, N in solve_sizes))
        print(json.dumps({k: v for k, v in records[-1].items() if k not in ("seconds", "cpu_seconds_all")}), flush=True)
    for N in (int(x) for x in args.query_sizes.split(",") if x):
        records.append(run_queries(N, args.queries, N in {int(x) for x in args.query_check.split(",") if x}))
        print(json.dumps(records[-1]), flush=True)
    if args.frozen_lake:
        records.append(run_frozen_lake(args.repeat))
        print(json.dumps(records[-1]), flush=True)
    if args.out:
        import stormpy

        machine = {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "stormpy": stormpy.__version__,
            "date": str(date.today()),
            # glibc's allocator settings, where set (MALLOC_MMAP_THRESHOLD_: docs/performance.md)
            "malloc": {key: value for key, value in os.environ.items() if key.startswith("MALLOC_")},
        }
        atomic_write_json(Path(args.out), {"machine": machine, "records": records})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
