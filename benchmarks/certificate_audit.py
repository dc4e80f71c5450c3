"""The certificate against the exact error, over the adversarial cases of the certificate property.

    python -m benchmarks.certificate_audit --cases 400 --seed 0 --out benchmarks/results/certificate_audit_before.json

Case i is drawn from a numpy generator seeded with ``(seed, i)`` through the same construction
functions as the property in ``tests/test_certificate.py`` (``validation.strategies.certificate_case``:
every family of ``validation.strategies.ALL_FAMILIES``, every metric with an exact reference, both
grounds, tolerances 1e-6 / 1e-9 / 1e-12, quotient on and off), so a seed always gives the same
cases and a longer run extends a shorter one. Each case is solved, its exact fixed point computed in
rational arithmetic (``tests/exact_reference.py``), and recorded: metric, ground, family, n, m, c,
tol, quotient, the error ``max |distances - exact|`` (exact, then rounded), the certificate, the
floor, converged, whether the bound held (beyond the half ulp of rounding the exact value), and the
ratio certificate / error where the error is above 1e-14 of the largest exact distance.

The summary (printed, and stored under ``summary``): violations (and the worst few), the share of
cases whose certificate is more than 1000 times the error (among those with a ratio), the share
ending ``converged=False``, and the same by metric and by family.

The record is rewritten atomically every ``--save-every`` cases and at the end; a run whose
``--out`` already holds cases of the same seed keeps them and solves only the others.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np

from bisimkit import solve
from bisimkit.files import atomic_write_text
from bisimkit.solvers import PrecisionWarning, ZeroGroundWarning
from validation.strategies import ALL_FAMILIES, SeededChoices, certificate_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from exact_reference import EXACT_METRICS, GROUNDS, error_against, exact_fixed_point_fractions  # noqa: E402

#: A certificate more than this many times the error counts as loose.
LOOSE = 1000.0
#: The ratio certificate / error is taken where the error exceeds this share of the largest distance.
RELATIVE_FLOOR = Fraction(1, 10**14)
FORMAT = "certificate-audit-1"


def draw_case(seed: int, index: int, families: tuple[str, ...], metrics: tuple[str, ...]):
    """Case ``index`` of the set drawn from ``seed``: ``(mdp, metric, ground, tol, quotient)``."""
    choose = SeededChoices(np.random.default_rng([seed, index]))
    return certificate_case(choose, metrics, GROUNDS, families)


def audit_case(mdp, metric: str, ground: str | None, tol: float, quotient: bool) -> dict:
    """Solve one case and measure its certificate against the exact error."""
    record = {
        "family": (mdp.name or "").removeprefix("adversarial-"),
        "metric": metric,
        "ground": ground,
        "n": mdp.n_states,
        "m": mdp.n_actions,
        "c": float(mdp.discount),
        "tol": tol,
        "quotient": quotient,
    }
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        warnings.simplefilter("ignore", ZeroGroundWarning)
        sol = solve(mdp, metric, ground=ground, tol=tol, quotient=quotient)
    record["solve_seconds"] = round(time.perf_counter() - start, 5)
    start = time.perf_counter()
    exact = exact_fixed_point_fractions(mdp, metric, ground or "reward")
    record["reference_seconds"] = round(time.perf_counter() - start, 5)
    gap = error_against(sol.distances, exact)
    cert = Fraction(sol.certified_error)
    ratio = None
    if gap["error"] > 0 and gap["error"] > RELATIVE_FLOOR * gap["max_exact"]:
        ratio = float(cert / gap["error"])
    record.update(
        error=float(gap["error"]),
        max_exact=float(gap["max_exact"]),
        where=list(gap["where"]),
        certified_error=sol.certified_error,
        floor=sol.floor,
        converged=bool(sol.converged),
        held=bool(gap["excess"] <= cert),
        converged_within_tol=bool(not sol.converged or cert <= Fraction(tol)),
        ratio=ratio,
        method=sol.method,
    )
    return record


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def _tally(records: list[dict]) -> dict:
    with_ratio = [r for r in records if r.get("ratio") is not None]
    loose = sum(r["ratio"] > LOOSE for r in with_ratio)
    not_converged = sum(not r["converged"] for r in records)
    return {
        "cases": len(records),
        "violations": sum(not r["held"] for r in records),
        "false_convergence": sum(not r["converged_within_tol"] for r in records),
        "with_ratio": len(with_ratio),
        "loose": loose,
        "loose_share": _share(loose, len(with_ratio)),
        "not_converged": not_converged,
        "not_converged_share": _share(not_converged, len(records)),
    }


def _badness(r: dict) -> float:
    """How badly a violation misses: error / certificate (inf for a certificate of 0)."""
    return r["error"] / r["certified_error"] if r["certified_error"] > 0 else float("inf")


def summarise(records: list[dict], worst: int = 5) -> dict:
    """Totals, the worst violations, and the totals by metric and by family."""
    done = [r for r in records if "held" in r]
    failed = [r for r in records if "exception" in r]
    violations = sorted((r for r in done if not r["held"]), key=lambda r: (_badness(r), r["error"]), reverse=True)
    keys = (
        "index",
        "family",
        "metric",
        "ground",
        "n",
        "m",
        "c",
        "tol",
        "quotient",
        "error",
        "certified_error",
        "converged",
        "method",
    )
    return {
        **_tally(done),
        "exceptions": len(failed),
        "worst_violations": [{k: r[k] for k in keys} for r in violations[:worst]],
        "by_metric": {k: _tally([r for r in done if r["metric"] == k]) for k in sorted({r["metric"] for r in done})},
        "by_family": {k: _tally([r for r in done if r["family"] == k]) for k in sorted({r["family"] for r in done})},
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def print_summary(summary: dict) -> None:
    s = summary
    print(
        f"{s['cases']} cases: {s['violations']} violations of the bound, "
        f"{s['false_convergence']} converged above tol, {s['exceptions']} raised"
    )
    print(
        f"certificate > {LOOSE:g}x the error: {s['loose']} of {s['with_ratio']} ({_pct(s['loose_share'])}; "
        f"cases with error > 1e-14 max distance); "
        f"converged=False: {s['not_converged']} ({_pct(s['not_converged_share'])})"
    )
    for r in s["worst_violations"]:
        print(
            f"  violation #{r['index']}: {r['metric']}/{r['ground'] or '-'} {r['family']} n={r['n']} m={r['m']} "
            f"c={r['c']} tol={r['tol']:g} quotient={r['quotient']}: error {r['error']:.3g}, certificate "
            f"{r['certified_error']:.3g}, converged={r['converged']} ({r['method']})"
        )
    for title, table in (("metric", s["by_metric"]), ("family", s["by_family"])):
        print(f"{'by ' + title:<22} {'cases':>6} {'violations':>10} {'loose':>14} {'not converged':>14}")
        for key, t in table.items():
            print(
                f"{key:<22} {t['cases']:>6} {t['violations']:>10} {t['loose']:>5}/{t['with_ratio']:<3} "
                f"{_pct(t['loose_share']):>5} {t['not_converged']:>6} {_pct(t['not_converged_share']):>6}"
            )


def _subset(text: str | None, allowed: tuple[str, ...], field: str) -> tuple[str, ...]:
    if text is None:
        return allowed
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    for i, x in enumerate(items):
        if x not in allowed:
            raise ValueError(f"{field}[{i}] = '{x}' is not one of {', '.join(allowed)}")
    if not items:
        raise ValueError(f"{field}: empty")
    return items


def _load(out: Path, config: dict) -> dict[int, dict]:
    """The cases ``out`` already holds for ``config`` (none if it does not exist)."""
    if not out.exists():
        return {}
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"--out {out}: not a readable audit record ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("cases"), list):
        raise ValueError(f"--out {out}: not an audit record (format {FORMAT})")
    for key, value in config.items():
        if data.get(key) != value:
            raise ValueError(f"--out {out}: holds {key} = {data.get(key)!r}, not {value!r}; choose another file")
    return {r["index"]: r for r in data["cases"] if isinstance(r, dict) and "index" in r}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, required=True, help="number of cases (indices 0 .. cases-1)")
    p.add_argument("--seed", type=int, required=True, help="seed of the case set")
    p.add_argument("--out", required=True, help="the JSON record (.json); cases already in it are kept")
    p.add_argument("--families", default=None, help=f"comma-separated subset of {','.join(ALL_FAMILIES)} (default all)")
    p.add_argument("--metrics", default=None, help=f"comma-separated subset of {','.join(EXACT_METRICS)} (default all)")
    p.add_argument("--save-every", type=int, default=20, help="rewrite the record every this many cases (default 20)")
    p.add_argument("--worst", type=int, default=5, help="violations listed in the summary (default 5)")
    args = p.parse_args(argv)
    out = Path(args.out)
    try:
        if args.cases < 1:
            raise ValueError(f"--cases: {args.cases} is not a positive number of cases")
        if args.seed < 0:
            raise ValueError(f"--seed: {args.seed} is negative")
        if args.save_every < 1:
            raise ValueError(f"--save-every: {args.save_every} is not positive")
        if out.suffix != ".json":
            raise ValueError(f"--out {out}: expected a .json file")
        if out.exists() and not out.is_file():
            raise ValueError(f"--out {out}: not a file")
        families = _subset(args.families, ALL_FAMILIES, "--families")
        metrics = _subset(args.metrics, EXACT_METRICS, "--metrics")
        config = {"format": FORMAT, "seed": args.seed, "families": list(families), "metrics": list(metrics)}
        records = _load(out, config)
    except ValueError as err:
        print(f"certificate_audit: {err}", file=sys.stderr)
        return 2

    def save() -> None:
        cases = [records[i] for i in sorted(records)]
        head = json.dumps({**config, "summary": summarise(cases, args.worst)}, indent=2)[:-2]
        body = ",\n".join("    " + json.dumps(c) for c in cases)  # one case a line
        atomic_write_text(out, f'{head},\n  "cases": [\n{body}\n  ]\n}}\n')

    todo = [i for i in range(args.cases) if i not in records]
    print(f"{len(records)} cases already in {out}; {len(todo)} to run (seed {args.seed})", flush=True)
    start, since_save = time.perf_counter(), 0
    for k, i in enumerate(todo, 1):
        mdp, metric, ground, tol, quotient = draw_case(args.seed, i, families, metrics)
        try:
            record = audit_case(mdp, metric, ground, tol, quotient)
        except Exception as err:  # recorded and counted, never silent
            record = {
                "family": (mdp.name or "").removeprefix("adversarial-"),
                "metric": metric,
                "ground": ground,
                "n": mdp.n_states,
                "m": mdp.n_actions,
                "c": float(mdp.discount),
                "tol": tol,
                "quotient": quotient,
                "exception": f"{type(err).__name__}: {err}",
            }
        records[i] = {"index": i, **record}
        if "exception" in record:
            print(f"  case {i}: {metric} {record['family']} raised {record['exception']}", flush=True)
        elif not record["held"]:
            print(
                f"  case {i}: violation, {metric}/{ground or '-'} {record['family']} n={record['n']} m={record['m']} "
                f"c={record['c']} tol={tol:g} quotient={quotient}: error {record['error']:.3g} > certificate "
                f"{record['certified_error']:.3g}",
                flush=True,
            )
        since_save += 1
        if since_save >= args.save_every or k == len(todo):
            save()
            since_save = 0
            done = list(records.values())
            t = _tally([r for r in done if "held" in r])
            print(
                f"[{len(records)}/{args.cases}] {time.perf_counter() - start:.0f} s: {t['violations']} violations, "
                f"{t['loose']}/{t['with_ratio']} loose, {t['not_converged']} not converged",
                flush=True,
            )
    if not todo:
        save()
    print_summary(summarise([records[i] for i in sorted(records)], args.worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
