"""Workload: bisimilarity distances of PRISM's standard Markov chains (``bisimkit.lmc``), undiscounted.

Each model is built by stormpy from the PRISM files bundled with it (``stormpy/examples/files``), some
with other values of their constants (``brp.pm`` leaves ``N`` and ``MAX`` open; the crowds model is its
bundled file with ``TotalRuns`` set, written to a temporary copy). Every model is solved for all pairs of
states, c = 1, labels = every label but ``init``, in a process of its own (clean peak memory), after a
warm-up solve that loads the compiled kernels. A model whose pairs need more than ``--max-memory`` is
refused by ``lmc_distances`` before the pair work, in one line naming the memory it would need; that
line is the record. The random chains are the 150-state class: random supports of 1 to 4 successors,
weights 1..9, two labels.

One JSON record per model in ``benchmarks/results/lmc/<name>.json`` (written atomically), with the
states, transitions, bisimulation classes, distance-0 and distance-1 pairs, the class pairs solved by
policy iteration, seconds (the solve; the build apart), peak resident memory, certified error.

    python -m benchmarks.bench_lmc --list
    python -m benchmarks.bench_lmc --model crowds-5-7 [--discount 1] [--max-memory GIB]
    python -m benchmarks.bench_lmc --all [--skip-done]      # each model in its own process
    python -m benchmarks.bench_lmc --table                  # markdown table of the records

Never run as a test (minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "lmc"

#: name -> (file under stormpy/examples/files, constants to instantiate, constants to set in the file)
MODELS = {
    "die": ("dtmc/die.pm", None, None),
    "herman-5": ("pdtmc/herman5.pm", "p=1/2", None),
    "leader-3-5": ("dtmc/leader-3-5.pm", None, None),
    "brp-16-2": ("dtmc/brp-16-2.pm", None, None),
    "nand-5-2": ("dtmc/nand-5-2.pm", None, None),
    "brp-64-5": ("dtmc/brp.pm", "N=64,MAX=5", None),
    "crowds-5-5": ("dtmc/crowds-5-5.pm", None, None),
    "brp-128-5": ("dtmc/brp.pm", "N=128,MAX=5", None),
    "crowds-5-6": ("dtmc/crowds-5-5.pm", None, {"TotalRuns": 6}),
    "brp-256-5": ("dtmc/brp.pm", "N=256,MAX=5", None),
    "crowds-5-7": ("dtmc/crowds-5-5.pm", None, {"TotalRuns": 7}),
    "crowds-5-8": ("dtmc/crowds-5-5.pm", None, {"TotalRuns": 8}),
    "brp-512-10": ("dtmc/brp.pm", "N=512,MAX=10", None),
}
RANDOM = "random-150"
RANDOM_SEEDS = 10

#: Tang and van Breugel, "Deciding probabilistic bisimilarity distance one for labelled Markov chains",
#: CAV 2018 (LNCS 10981, pp. 681-699), abstract: their algorithm (distance 0, distance 1, simple policy
#: iteration; Java, in a fork of PRISM) computes the distances of a 150-state chain in 13 ms where the
#: earlier best (Bacci et al.'s on-the-fly policy iteration) took over 49 hours, and handles chains of more
#: than 10,000 states in under 50 minutes.
PUBLISHED = {
    RANDOM: "13 ms (one 150-state chain; Bacci et al.: > 49 h)",
    "over 10,000 states": "< 50 min",
}


def stormpy_model(name: str):
    """A listed model, built by stormpy, as a :class:`~bisimkit.mdp.FiniteMDP` with its labels."""
    import stormpy

    from bisimkit.mdp import from_stormpy

    path, constants, setting = MODELS[name]
    source = Path(stormpy.__file__).parent / "examples" / "files" / path
    if setting:
        text = source.read_text()
        for key, value in setting.items():
            text, count = re.subn(rf"(const\s+\w+\s+{key}\s*=\s*)[^;]+;", rf"\g<1>{value};", text)
            if count != 1:
                raise SystemExit(f"{path}: constant {key} not found once")
        with tempfile.NamedTemporaryFile("w", suffix=".pm", delete=False) as fh:
            fh.write(text)
        try:
            program = stormpy.parse_prism_program(fh.name)
        finally:
            os.unlink(fh.name)
    else:
        program = stormpy.parse_prism_program(str(source))
    if constants:
        program, _ = stormpy.instantiate_constants(program, constants)
    return from_stormpy(stormpy.build_model(program))


def random_chain(n: int, seed: int):
    """A random labelled chain: 1 to 4 distinct successors per state, weights 1..9, two labels."""
    import numpy as np

    from bisimkit.lmc import LabelledChain

    rng = np.random.default_rng(seed)
    ptr, cols, probs = [0], [], []
    for _ in range(n):
        k = int(rng.integers(1, 5))
        succ = np.sort(rng.choice(n, size=k, replace=False))
        w = rng.integers(1, 10, size=k)
        cols += succ.tolist()
        probs += (w / w.sum()).tolist()
        ptr.append(len(cols))
    return LabelledChain(
        np.array(ptr),
        np.array(cols),
        np.array(probs),
        rng.integers(0, 2, size=n),
        source=f"random chain {n} states seed {seed}",
    )


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _warm_up() -> None:
    from bisimkit.lmc import lmc_distances

    for seed in (1000, 1001):  # every kernel, the large-component ones too
        lmc_distances(random_chain(150, seed), 1.0)
        lmc_distances(random_chain(150, seed), 0.9)


def run_model(name: str, discount: float, max_memory_gib: float) -> dict:
    from bisimkit.errors import InputError
    from bisimkit.lmc import lmc_distances

    _warm_up()
    record: dict = {"model": name, "discount": discount}
    if name == RANDOM:
        runs = []
        for seed in range(RANDOM_SEEDS):
            chain = random_chain(150, seed)
            start = time.perf_counter()
            r = lmc_distances(chain, discount)
            runs.append(
                {
                    "seed": seed,
                    "seconds": time.perf_counter() - start,
                    "classes": r.n_classes,
                    "solved_pairs": r.solved_pairs,
                    "certified_error": r.certified_error,
                    "evaluations": r.iterations,
                    "zero_pairs": r.zero_pairs,
                    "one_pairs": r.one_pairs,
                }
            )
        secs = sorted(x["seconds"] for x in runs)
        record.update(
            states=150,
            transitions=int(chain.row_ptr[-1]),
            runs=runs,
            seconds=secs[len(secs) // 2],
            seconds_max=secs[-1],
            certified_error=max(x["certified_error"] for x in runs),
            file="random",
            published=PUBLISHED[RANDOM],
        )
    else:
        start = time.perf_counter()
        model = stormpy_model(name)
        record.update(
            file=MODELS[name][0],
            constants=MODELS[name][1],
            set_constants=MODELS[name][2],
            build_seconds=time.perf_counter() - start,
            states=model.n_states,
            transitions=int(model.transition_rows.nnz),
            labels=sorted(set().union(*model.labels) - {"init"}),
        )
        before = _rss_mib()
        start = time.perf_counter()
        try:
            r = lmc_distances(model, discount, max_memory=int(max_memory_gib * 2**30))
        except InputError as err:
            record.update(refused=str(err), seconds=time.perf_counter() - start)
        else:
            record.update(
                seconds=r.seconds,
                classes=r.n_classes,
                zero_pairs=r.zero_pairs,
                one_pairs=r.one_pairs,
                solved_pairs=r.solved_pairs,
                certified_error=r.certified_error,
                certified=r.certified,
                evaluations=r.iterations,
                rounds=r.rounds,
                model_defect=r.model_defect,
                method=r.method,
                timings=r.timings,
            )
        record.update(rss_before_mib=before)
    record["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return record


def write(record: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if record["discount"] == 1.0 else f"-c{record['discount']:g}"
    path = RESULTS / f"{record['model']}{suffix}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, default=float) + "\n")
    os.replace(tmp, path)
    return path


def table() -> str:
    rows = []
    for path in sorted(RESULTS.glob("*.json"), key=lambda p: (json.loads(p.read_text()).get("states", 0), p.name)):
        r = json.loads(path.read_text())
        name = r["model"] + ("" if r["discount"] == 1.0 else f" (c = {r['discount']:g})")
        if "refused" in r:
            need = re.search(r"about ([\d.]+ GiB) \((\d+) pairs", r["refused"])
            what = f"refused: {need.group(2)} class pairs need {need.group(1)}" if need else "refused"
            rows.append(f"| {name} | {r['states']:,} | {r['transitions']:,} | | | | {what} | | |")
            continue
        if r["model"] == RANDOM:
            rows.append(
                f"| {name} ({RANDOM_SEEDS} chains) | 150 | ~{r['transitions']} | | | | "
                f"{r['seconds'] * 1000:.0f} ms median, {r['seconds_max'] * 1000:.0f} ms max | | "
                f"{r['certified_error']:.1e} |"
            )
            continue
        secs = r["seconds"]
        shown = f"{secs * 1000:.0f} ms" if secs < 1 else f"{secs:.1f} s"
        rows.append(
            f"| {name} | {r['states']:,} | {r['transitions']:,} | {r['classes']:,} | {r['zero_pairs']:,} | "
            f"{r['one_pairs']:,} | {shown} | {r['peak_rss_mib'] / 1024:.1f} GiB | {r['certified_error']:.1e} |"
        )
    head = (
        "| model | states | transitions | classes | distance-0 pairs | distance-1 pairs | time | peak memory | "
        "certified error |\n|---|---|---|---|---|---|---|---|---|"
    )
    return head + "\n" + "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=[*MODELS, RANDOM])
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--skip-done", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--discount", type=float, default=1.0)
    ap.add_argument("--max-memory", type=float, default=8.0, help="GiB the pair space may take")
    args = ap.parse_args(argv)
    if args.list:
        for name, (path, constants, setting) in MODELS.items():
            print(name, path, constants or "", setting or "")
        print(RANDOM)
        return
    if args.table:
        print(table())
        return
    if args.model:
        record = run_model(args.model, args.discount, args.max_memory)
        print(json.dumps(record, default=float))
        print(write(record), file=sys.stderr)
        return
    if args.all:
        for name in [RANDOM, *MODELS]:
            suffix = "" if args.discount == 1.0 else f"-c{args.discount:g}"
            if args.skip_done and (RESULTS / f"{name}{suffix}.json").exists():
                continue
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_lmc",
                    "--model",
                    name,
                    "--discount",
                    str(args.discount),
                    "--max-memory",
                    str(args.max_memory),
                ],
                check=False,
            )
        print(table())
        return
    ap.print_help()


if __name__ == "__main__":
    main()
