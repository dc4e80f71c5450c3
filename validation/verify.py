"""``bisimkit verify``: check every claim on every family and the bundled examples.

For each family the job draws ``cases`` MDPs from its seeded generator, runs
every claim that applies, and records per (claim, family): cases, how many held,
the worst margin and the seconds spent. A claim that fails gets its smallest
counterexample (hypothesis shrinking on the family's strategy) written as a
SPEC JSON file. Results go to ``report.json``, ``report.md`` and PNG figures in
the output folder; finished families are saved as the job goes, so ``--resume``
continues an interrupted run.

Exit status: 1 if a claim the paper asserts (under the SPEC's reading) failed, else 0.

The *margin* of a row is the worst signed slack of the claim over its cases
(negative: violated by that much): a distance for inequalities and equalities,
minus the number of disagreeing state pairs for the zero-set claims (C2), and
the number of spare cells under the bound for C7.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_json, atomic_write_text

from .claims import CLAIMS, Claim, FixedPoints, claim_ids
from .families import FAMILIES, GENERAL_FAMILIES, Case, example_cases
from .gaussian_claims import GAUSSIAN_CLAIMS, GAUSSIAN_FAMILIES, gaussian_cases

#: Finite-MDP claims, then the same claims checked in continuous space.
ALL_CLAIMS: list[Claim] = CLAIMS + GAUSSIAN_CLAIMS
from . import learning

DEFAULT_CASES = 40
QUICK_CASES = 3
#: Wall-clock budget for shrinking all counterexamples (full run / --quick).
SHRINK_SECONDS = 60.0
SHRINK_SECONDS_QUICK = 2.0


@dataclass
class Row:
    """Accumulated results of one claim on one family."""

    claim: str
    label: str
    statement: str
    source: str
    family: str
    asserted: bool
    expect: str
    cases: int = 0
    held: int = 0
    worst_margin: float = math.inf
    worst_detail: str = ""
    seconds: float = 0.0
    counterexample: str | None = None
    shrunk: bool = False
    violation: dict | None = field(default=None, repr=False)  # smallest violating case seen

    @property
    def status(self) -> str:
        if self.cases == 0:
            return "no cases"
        if self.expect == "gap":
            return f"gap in {self.cases - self.held}/{self.cases}"
        if self.held == self.cases:
            return "held"
        return "VIOLATED" if self.asserted else "fails"

    def to_json(self) -> dict:
        out = asdict(self)
        out.pop("violation")
        out["status"] = self.status
        out["worst_margin"] = None if math.isinf(self.worst_margin) else self.worst_margin
        return out


def _case_dict(case: Case) -> dict:
    data = case.mdp.to_dict()
    ground = None if isinstance(case.ground, str) else np.asarray(case.ground).tolist()
    return {"mdp": data, "ground": case.ground if isinstance(case.ground, str) else ground}


def _case_from_dict(data: dict) -> Case:
    from bisimkit.mdp import mdp_from_dict

    g = data["ground"]
    return Case(mdp_from_dict(data["mdp"]), g if isinstance(g, str) else np.array(g))


def _family_cases(name: str, cases: int, seed: int, quick: bool = False) -> list:
    if name == "examples":
        return example_cases()
    if name in GAUSSIAN_FAMILIES:
        return gaussian_cases(name, cases, seed, quick)
    index = list(FAMILIES).index(name)
    rng = np.random.default_rng([seed, index])
    return [FAMILIES[name].make(rng) for _ in range(cases)]


def _select(claims: list[str] | None) -> list[Claim]:
    known = claim_ids() + learning.loss_ids()
    if claims is None:
        return list(ALL_CLAIMS)
    bad = [c for c in claims if c not in known]
    if bad:
        raise InputError(f"unknown claim '{bad[0]}' (choose from {', '.join(known)})", param="claims")
    return [c for c in ALL_CLAIMS if c.id in claims]


def _select_losses(claims: list[str] | None) -> list[str]:
    """The loss checks (L1...) to run: all of them by default, else those listed."""
    return [i for i in learning.loss_ids() if claims is None or i in claims]


#: Source column of the loss rows.
LOSS_SOURCE = "SPEC 4, paper Alg. 1"
TORCH_MISSING = ("skipped: torch is not installed (the learned-loss checks need it: "
                 "pip install -e '.[torch]')")


def _loss_rows(results: list) -> list[Row]:
    """One row per (loss check, family) from the training curves."""
    rows: dict[tuple[str, str], Row] = {}
    for check, family, curve in results:
        row = rows.get((check.id, family))
        if row is None:
            row = rows[(check.id, family)] = Row(check.id, check.id, check.statement, LOSS_SOURCE, family,
                                                 True, "holds")
        row.cases += 1
        row.held += bool(curve["held"])
        row.seconds += curve["seconds"]
        margin = curve["tolerance"] - curve["final_error"]
        if margin < row.worst_margin:
            row.worst_margin = float(margin)
            row.worst_detail = (f"max error {curve['final_error']:.2e} <= {curve['tolerance']:.2e} "
                                f"(1% of max d* {curve['scale']:.3g}) after {curve['steps'][-1]} steps; "
                                f"max d(s,s): exact {curve['exact_diagonal']:.3g}, "
                                f"learned {curve['learned_diagonal']:.3g}")
    return list(rows.values())


def run_losses(ids: list[str], quick: bool, seed: int, bar: "_Bar | None" = None) -> dict:
    """Train a table with each selected loss on the loss cases (the ``losses`` part of the report)."""
    if not ids:
        return {"runs": []}
    if not learning.torch_available():
        return {"runs": [], "skipped": TORCH_MISSING}

    def progress(check, case, curve):
        if bar:
            bar.update(1, f"loss {check.id} {case.family}")

    results = learning.run_loss_checks(quick=quick, seed=seed, ids=ids, progress=progress)
    config = results[0][2].config if results else {}
    runs = [{"id": check.id, "loss": check.loss, "metric": check.metric, "ground": check.ground,
             "family": case.family, **{k: v for k, v in curve.to_json().items() if k != "config"}}
            for check, case, curve in results]
    return {"runs": runs, "config": config, "relative_tolerance": learning.RELATIVE_TOLERANCE}


class _Bar:
    """A small progress bar on stderr (quiet when not a terminal, except every 10%)."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total, self.done, self.enabled = max(total, 1), 0, enabled
        self.start = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.last_decile = -1

    def update(self, k: int, label: str) -> None:
        self.done += k
        if not self.enabled:
            return
        frac = self.done / self.total
        elapsed = time.perf_counter() - self.start
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        line = f"verify [{'#' * int(30 * frac):<30}] {self.done}/{self.total} cases  {elapsed:5.1f}s  eta {eta:4.0f}s  {label}"
        if self.tty:
            sys.stderr.write("\r" + line[:110].ljust(110))
            sys.stderr.flush()
        elif int(frac * 10) > self.last_decile:
            self.last_decile = int(frac * 10)
            sys.stderr.write(line + "\n")

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


def run_family(name: str, cases: list, claims: list[Claim], bar: _Bar | None = None,
               keep: list | None = None) -> list[Row]:
    """Run every applicable claim on every case of one family (finite :class:`Case` objects
    go through a :class:`FixedPoints` cache; continuous cases are checked directly)."""
    rows = [Row(c.id, c.label, c.statement, c.source, name, c.asserted, c.expect)
            for c in claims if name in c.families]
    todo = [(row, claim) for row, claim in zip(rows, [c for c in claims if name in c.families])]
    for case in cases:
        finite = isinstance(case, Case)
        fp = FixedPoints(case) if finite else case
        for row, claim in todo:
            t = time.perf_counter()
            outcome = claim.check(fp)
            row.seconds += time.perf_counter() - t
            row.cases += 1
            row.held += bool(outcome.held)
            if outcome.margin < row.worst_margin:
                row.worst_margin, row.worst_detail = float(outcome.margin), outcome.detail
            if not outcome.held and finite:
                size = case.mdp.n_states * case.mdp.n_actions
                if row.violation is None or size < row.violation["size"]:
                    row.violation = {"size": size, "case": _case_dict(case), "detail": outcome.detail,
                                     "margin": float(outcome.margin)}
        if keep is not None and name in GENERAL_FAMILIES:
            keep.append((name, fp))
        if bar:
            bar.update(1, f"{name}")
    return rows


def shrink(claim: Claim, family: str, max_examples: int, seconds: float) -> Case | None:
    """Smallest case of ``family`` on which ``claim`` fails, found and shrunk by
    hypothesis within about ``seconds`` (after that, the best so far is kept)."""
    if family not in FAMILIES:
        return None
    from hypothesis import HealthCheck, Phase, find, settings

    deadline = time.perf_counter() + seconds
    best: list[Case] = []  # the shrinker only tries candidates simpler than the last failure

    def fails(case: Case) -> bool:
        if time.perf_counter() > deadline:
            return False  # out of time: accept no new (smaller) counterexample
        failed = not claim.check(FixedPoints(case)).held
        if failed:
            best.append(case)
        return failed

    conf = settings(max_examples=max_examples, deadline=None, database=None,
                    phases=[Phase.generate, Phase.shrink], derandomize=True,
                    suppress_health_check=list(HealthCheck))
    try:
        find(FAMILIES[family].strategy(), fails, settings=conf)
    except Exception:  # NoSuchExample, or the replay after the deadline disagreeing (flaky)
        pass
    return best[-1] if best else None


def save_counterexample(row: Row, case: Case, out: Path, shrunk: bool) -> str:
    """Write the case as a SPEC JSON MDP (plus the ground metric when it is a matrix)."""
    slug = f"{row.label.replace(' ', '-').replace('(', '').replace(')', '')}-{row.family}"
    mdp = case.mdp
    outcome = next(c for c in CLAIMS if c.label == row.label and row.family in c.families).check(FixedPoints(case))
    data = mdp.to_dict()
    data["name"] = f"counterexample to {row.label} ({row.family}{', shrunk' if shrunk else ''}): {outcome.detail}"
    path = out / "counterexamples" / f"{slug}.json"
    atomic_write_json(path, data)
    if not isinstance(case.ground, str):
        from bisimkit.files import atomic_write

        atomic_write(path.with_suffix(".ground.npy"), lambda fh: np.save(fh, np.asarray(case.ground)))
    return str(path.relative_to(out))


def _config_key(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _compile_kernels_aside():
    """Start a process that compiles (or loads from numba's disk cache) the simplex kernels;
    None when the process cannot start (the kernels then compile on first use)."""
    code = ("from bisimkit.generators import random_mdp\nfrom bisimkit.solvers import solve\n"
            "m = random_mdp(8, 2, seed=0, max_support=4)\n"
            "for metric in ('pi', 'eps', 'bisim', 'eps-bar', 'dbc', 'psm'):\n    solve(m, metric)\n")
    try:
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def verify(out: str | Path = "verify-out", cases: int | None = None, seed: int = 0, claims: list[str] | None = None,
           quick: bool = False, resume: bool = False, shrink_examples: int | None = None, figures: bool = True,
           progress: bool = True) -> dict:
    """Run the verification job; returns the report (also written to ``out``)."""
    t0 = time.perf_counter()
    out = Path(out)
    cases = cases if cases is not None else (QUICK_CASES if quick else DEFAULT_CASES)
    if cases < 1:
        raise InputError(f"must be at least 1, got {cases}", param="cases")
    chosen = _select(claims)
    loss_ids = _select_losses(claims)
    families = [f for f in list(FAMILIES) + ["examples"] + list(GAUSSIAN_FAMILIES)
                if any(f in c.families for c in chosen)]
    config = {"cases": cases, "seed": seed, "claims": sorted({c.label for c in chosen}), "families": families,
              "losses": loss_ids, "quick": quick}
    state_path = out / ".verify-state.json"
    state = {"key": _config_key(config), "families": {}}
    if resume and state_path.exists():
        saved = json.loads(state_path.read_text())
        if saved.get("key") == state["key"]:
            state = saved
    out.mkdir(parents=True, exist_ok=True)

    all_cases = {f: _family_cases(f, cases, seed, quick) for f in families if f not in state["families"]}
    loss_runs = 0
    if "losses" not in state and learning.torch_available():
        loss_runs = len(learning.loss_plan(quick, seed, loss_ids)) if loss_ids else 0
    bar = _Bar(sum(len(v) for v in all_cases.values()) + loss_runs, progress)
    keep: list = []
    rows: list[Row] = []
    # The compiled simplex is JIT-compiled once per checkout (~9 s, then cached on disk):
    # compile it in a side process while the loss checks train, instead of before them.
    compiling = _compile_kernels_aside() if any(f not in state["families"] for f in families) else None
    t_losses = time.perf_counter()
    if "losses" not in state:
        state["losses"] = run_losses(loss_ids, quick, seed, bar)
        atomic_write_json(state_path, state)
    elapsed_losses = time.perf_counter() - t_losses
    by_family: dict[str, list[Row]] = {}
    # continuous families first: they need no compiled simplex, so the side compile keeps going
    for fam in sorted(families, key=lambda f: f not in GAUSSIAN_FAMILIES):
        if fam in state["families"]:
            by_family[fam] = [_row_from_state(r) for r in state["families"][fam]]
            continue
        if compiling is not None and fam not in GAUSSIAN_FAMILIES:
            compiling.wait()
            compiling = None
        by_family[fam] = run_family(fam, all_cases[fam], chosen, bar, keep)
        state["families"][fam] = [_row_to_state(r) for r in by_family[fam]]
        atomic_write_json(state_path, state)
    if compiling is not None:
        compiling.wait()
    for fam in families:
        rows += by_family[fam]
    elapsed_cases = time.perf_counter() - t0 - elapsed_losses
    losses = state["losses"]
    rows += _loss_rows([(learning.LOSSES[r["loss"]], r["family"], r) for r in losses["runs"]])
    bar.close()
    t_shrink = time.perf_counter()

    # Counterexamples: shrink one per claim label; the other families keep their smallest case.
    budget = shrink_examples if shrink_examples is not None else (30 if quick else 150)
    seconds = SHRINK_SECONDS_QUICK if quick else SHRINK_SECONDS
    pending = {r.label for r in rows if r.violation is not None and r.family in FAMILIES}
    shrunk_labels: set[str] = set()
    for row in sorted(rows, key=lambda r: not r.asserted):  # asserted claims get the budget first
        if row.violation is None:
            continue
        case = None
        if budget > 0 and row.label in pending and row.family in FAMILIES:
            claim = next(c for c in chosen if c.label == row.label and row.family in c.families)
            share = max(seconds - (time.perf_counter() - t_shrink), 0.5) / len(pending)
            case = shrink(claim, row.family, budget, share)
            if case is not None:
                shrunk_labels.add(row.label)
                pending.discard(row.label)
        row.shrunk = case is not None
        if case is None:
            case = _case_from_dict(row.violation["case"])
        row.counterexample = save_counterexample(row, case, out, row.shrunk)

    elapsed_shrink = time.perf_counter() - t_shrink
    figure_paths = _figures(out, keep, quick, losses["runs"]) if figures else []
    failed = [r for r in rows if r.asserted and r.expect == "holds" and r.held < r.cases]
    report = {
        "config": config,
        "seconds": time.perf_counter() - t0,
        "phase_seconds": {"cases": elapsed_cases, "losses": elapsed_losses, "counterexamples": elapsed_shrink,
                          "figures": time.perf_counter() - t_shrink - elapsed_shrink},
        "rows": [r.to_json() for r in rows],
        "verdicts": verdicts(rows),
        "losses": losses,
        "figures": figure_paths,
        "exit_status": 1 if failed else 0,
        "violated_asserted": sorted({r.label for r in failed}),
    }
    atomic_write_json(out / "report.json", report)
    atomic_write_text(out / "report.md", markdown(report))
    return report


def _row_to_state(row: Row) -> dict:
    data = asdict(row)
    data["worst_margin"] = None if math.isinf(row.worst_margin) else row.worst_margin
    return data


def _row_from_state(data: dict) -> Row:
    data = dict(data)
    data["worst_margin"] = math.inf if data["worst_margin"] is None else data["worst_margin"]
    return Row(**data)


def _figures(out: Path, keep: list, quick: bool, loss_runs: list | None = None) -> list[str]:
    from figures.diagonal import plot_sampled_diagonals
    from figures.heatmaps import plot_metric_heatmaps
    from figures.scatter import plot_bound_scatter

    paths = [plot_metric_heatmaps(out / "heatmaps.png", tol=1e-6 if quick else 1e-8)]
    if keep:
        paths.append(plot_bound_scatter(out / "scatter.png", keep))
    paths.append(plot_sampled_diagonals(out / "diagonal.png", mdps=2 if quick else 8, points=5 if quick else 9))
    if loss_runs:
        from figures.loss_convergence import plot_loss_curves

        runs = [(r["loss"], r["family"], r) for r in loss_runs]
        paths.append(plot_loss_curves(out / "loss_convergence.png", runs, learning.RELATIVE_TOLERANCE))
    return [str(Path(p).relative_to(out)) for p in paths]


# --------------------------------------------------------------- reporting
def _summary(rows: list[Row]) -> str:
    """One clause for the rows of one claim label."""
    total = sum(r.cases for r in rows)
    held = sum(r.held for r in rows)
    bad = [r for r in rows if r.held < r.cases]
    where = ", ".join(f"{r.family} {r.cases - r.held}/{r.cases}" for r in bad)
    if rows[0].expect == "gap":
        largest = max((-r.worst_margin for r in rows if not math.isinf(r.worst_margin)), default=0.0)
        return f"strict gap in {total - held}/{total} cases ({where or 'none'}); largest gap {largest:.3g}"
    if not bad:
        return f"held in all {total} cases"
    return f"{'VIOLATED' if rows[0].asserted else 'fails'} in {total - held}/{total} cases ({where})"


def verdicts(rows: list[Row]) -> dict[str, str]:
    """One sentence per claim id, from the evidence."""
    labels: dict[str, dict[str, list[Row]]] = {}
    for r in rows:
        labels.setdefault(r.claim, {}).setdefault(r.label, []).append(r)
    out = {}
    for cid, groups in labels.items():
        ordered = sorted(groups.items(), key=lambda kv: kv[0] != cid)  # the SPEC reading first
        out[cid] = "; ".join((f"[{label[len(cid) + 2:-1]}] " if label != cid else "") + _summary(rs)
                             for label, rs in ordered)
    c10 = labels.get("C10", {})
    if "C10" in c10 and "C10 (reverse)" in c10:
        forward = all(r.held == r.cases for r in c10["C10"])
        reverse = all(r.held == r.cases for r in c10["C10 (reverse)"])
        if forward and not reverse:
            out["C10"] += (". Ordering that always holds: d_eps >= d_eps-avg (Jensen on the W1 term, C9); "
                           "the reverse fails (counterexample saved); they coincide for deterministic policies")
    return out


def table(rows: list[dict]) -> str:
    """Plain-text table: claim, family, cases, held, worst margin, seconds, status."""
    head = ("claim", "family", "cases", "held", "worst margin", "seconds", "status")
    body = [(r["label"], r["family"], str(r["cases"]), str(r["held"]),
             "-" if r["worst_margin"] is None else f"{r['worst_margin'] + 0.0:.3g}", f"{r['seconds']:.2f}", r["status"])
            for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*b) for b in body]
    return "\n".join(lines)


READINGS = """\
**Readings.** The SPEC defines E_eps with *equal class masses* of P(s,a) and P(t,a')
(the usual bisimulation reading); the paper's Def. 4.3 literally asks for *identical*
laws P(s,a) = P(t,a'). Rows marked `(literal)` use the second reading; they are
reported, not asserted. Under the class-mass reading Theorem 4.3 (C2) holds and the
"d_eps-bar = 0 on E_eps" part of Theorem 4.5 (C4) can fail: the entangled coupling
pairs next states in index order, so bisimilar but distinct successors are paired
across classes. Under the literal reading it is the other way round.
C5 is checked where its hypotheses provably hold (`monotone-product`: coordinate-
independent transitions, d_eps-bar separable with Monge coordinate terms, the finite
form of "separable convex") and its gap is measured where they fail.

Rows marked `(continuous)` check C5, C6 and C8 in continuous space (SPEC section 3):
on random linear-Gaussian MDPs and a heteroscedastic pendulum with a tanh-squashed
policy (C6, C8), on pendulum transition laws with separable convex costs (C5, exact LP
on product quantile quantisations against the entangled coupling, and the closed form
against shared-noise sampling), and where the hypotheses fail (C5 gap: correlated
covariances, exactly by Bures; a Euclidean cost, by LP and a glued coupling with a
99.9% lower confidence bound). Continuous families run at most 40 cases (12 and 8 for
the LP families; fewer with --quick).
"""


LOSS_READING = """\
Each loss of `bisimkit.losses` (the functions the agents import) trains a free table
d[s, t], diagonal included, from sampled batches of one-hot or embedded states on a
finite MDP, whose policy and transitions are inverse-CDF samplers of uniform noise:
shared noise is the entangled coupling, independent noise the product coupling. The
expected target is then the operator named in the row, so the table must converge to
its exact fixed point (`bisimkit solve`). A row holds when the final max error over all
pairs is at most 1% of the largest exact distance.
"""


def loss_markdown(losses: dict) -> list[str]:
    """The learned-loss section of the report."""
    if not losses or (not losses.get("runs") and "skipped" not in losses):
        return []
    lines = ["## Learned losses (SPEC section 4)", ""]
    if "skipped" in losses:
        return lines + [f"Loss checks {losses['skipped']}.", ""]
    cfg = losses.get("config", {})
    lines += [LOSS_READING, f"Training: {cfg.get('steps')} SGD steps, batch {cfg.get('batch')}, "
              f"{cfg.get('samples')} target samples, seed {cfg.get('seed')}.", "",
              "| check | loss | fixed point | MDP | max error | tolerance | max d(s,s) exact / learned | seconds |",
              "|---|---|---|---|---|---|---|---|"]
    for r in losses["runs"]:
        metric = r["metric"] + (f" ({r['ground']})" if r["ground"] else "")
        lines.append(f"| {r['id']} | {r['loss']} | {metric} | {r['family']} ({r['mdp']}) | {r['final_error']:.2e} "
                     f"| {r['tolerance']:.2e} | {r['exact_diagonal']:.3g} / {r['learned_diagonal']:.3g} "
                     f"| {r['seconds']:.1f} |")
    return lines + [""]


def markdown(report: dict) -> str:
    """The human-readable report."""
    cfg = report["config"]
    lines = ["# bisimkit verify report", "",
             f"{cfg['cases']} cases per family, seed {cfg['seed']}, {report['seconds']:.1f} s "
             f"({', '.join(f'{k} {v:.1f} s' for k, v in report['phase_seconds'].items())}). "
             f"Exit status {report['exit_status']}"
             + (f" (asserted claims violated: {', '.join(report['violated_asserted'])})." if report['exit_status']
                else " (every asserted claim held)."), "", "## Verdicts", ""]
    for cid, text in report["verdicts"].items():
        lines.append(f"- **{cid}**: {text}")
    lines += ["", READINGS, "## Results", "",
              "Margin: the worst signed slack of the claim over the cases (negative = violated by that much); "
              "a distance, except C2 (minus the number of state pairs whose relation and zero set disagree) "
              "and C7 (spare cells under the bound).", "",
              "```", table(report["rows"]), "```", ""]
    lines += loss_markdown(report.get("losses", {}))
    ces = [r for r in report["rows"] if r["counterexample"]]
    if ces:
        lines += ["## Counterexamples", "",
                  "Each is a SPEC JSON MDP (`bisimkit info FILE`, `bisimkit solve FILE --metric ...`).", ""]
        for r in ces:
            lines.append(f"- {r['label']} on {r['family']}: [{r['counterexample']}]({r['counterexample']})"
                         f"{' (shrunk by hypothesis)' if r['shrunk'] else ''}: {r['worst_detail']}")
        lines.append("")
    if report["figures"]:
        lines += ["## Figures", ""]
        for p in report["figures"]:
            lines += [f"![{p}]({p})", ""]
    return "\n".join(lines)


def main_verify(args) -> int:
    """CLI entry for ``bisimkit verify``."""
    claims = None if not args.claims else [c.strip() for c in args.claims.split(",") if c.strip()]
    report = verify(out=args.out, cases=args.cases, seed=args.seed, claims=claims, quick=args.quick,
                    resume=args.resume, shrink_examples=args.shrink_examples, figures=not args.no_figures,
                    progress=not args.quiet)
    print(table(report["rows"]))
    print()
    for cid, text in report["verdicts"].items():
        print(f"{cid}: {text}")
    if "skipped" in report.get("losses", {}):
        print(f"L1-L5: {report['losses']['skipped']}")
    print(f"\nreport: {Path(args.out) / 'report.md'} ({report['seconds']:.1f} s); exit status {report['exit_status']}")
    return int(report["exit_status"])
