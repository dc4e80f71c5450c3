"""The benchmarks' baseline: the per-pair loop of :mod:`validation.reference`, timed.

:func:`timed_baseline` runs it to completion when it fits a time budget and otherwise
extrapolates the sweeps it would need (:func:`sweeps_needed`) from the contraction of its
steps, its own or one observed at smaller n of the same family (:func:`observed_contraction`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from validation.reference import ReferenceModel

BASIS_MEASURED = "measured"
BASIS_APRIORI = "a-priori c (upper bound)"


def sweeps_needed(last_step: float, done: int, rate: float, tol: float, c: float) -> int:
    """Sweeps until the certified stop ``c/(1-c) * step <= tol``, if the step keeps shrinking by ``rate``.

    ``last_step`` is the step of sweep ``done`` (``done = 1`` with the first sweep's step).
    """
    target = tol * (1 - c) / c
    if last_step <= target:
        return done
    if rate <= 0:
        return done + 1
    if rate >= 1:
        return 10**9
    return done + math.ceil(math.log(target / last_step) / math.log(rate) - 1e-9)


def observed_contraction(steps) -> float | None:
    """A completed run's mean per-sweep contraction of the step, ``(s_K / s_1) ** (1 / (K - 1))``.

    Extrapolating from sweep 1 with it reproduces the run's sweep count (the
    steps shrink faster in the first sweeps than later, so a run's last ratio
    would overstate the sweeps from sweep 1). This is what the benchmark runner
    passes to ``timed_baseline(contraction=...)`` at larger n of the same family.
    """
    steps = list(steps)
    if len(steps) < 2 or steps[0] <= 0:
        return None
    return float((steps[-1] / steps[0]) ** (1.0 / (len(steps) - 1))) if steps[-1] > 0 else 0.0


def _interval_overlaps(P: np.ndarray, s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Entangled (north-west-corner) couplings of the rows ``P[s]`` and ``P[t]``, shape (len(s), m, m):
    the mass on (a, b) is the overlap of a's interval in s's cumulative sums with b's in t's."""
    C = np.concatenate([np.zeros((P.shape[0], 1)), np.cumsum(P, axis=1)], axis=1)
    lo = np.maximum(C[s, :-1][:, :, None], C[t, :-1][:, None, :])
    hi = np.minimum(C[s, 1:][:, :, None], C[t, 1:][:, None, :])
    return np.maximum(hi - lo, 0.0)


def first_step(mdp, metric: str, chunk: int = 200_000) -> float:
    """The step of the loop's first sweep, ``max_{s,t} F(0)(s, t)`` (reward ground), without the loop:
    at d = 0 every transport and expectation term vanishes and F(0) is the one-step difference.

    Vectorised over pairs in chunks; used to extrapolate a baseline stopped inside its first sweep.
    """
    model = ReferenceModel(mdp)
    n, m = model.n, model.m
    R = model.R
    if metric == "bisim":
        return float(max(np.ptp(R[:, a]) for a in range(m)))
    if metric in ("pi", "mico", "dbc"):
        return float(np.ptp(model.Rpi))
    best = 0.0
    s_all, t_all = np.triu_indices(n, 0 if metric in ("psm-sampled", "mico", "dbc-sampled") else 1)
    for k in range(0, len(s_all), chunk):
        s, t = s_all[k : k + chunk], t_all[k : k + chunk]
        if metric in ("psm", "psm-sampled"):
            v = np.abs(model.abar[s] - model.abar[t]).sum(axis=1)
        elif metric in ("eps", "eps-bar", "eps-avg"):
            g = _interval_overlaps(model.pi, s, t)
            v = np.einsum("kab,kab->k", g, np.abs(R[s][:, :, None] - R[t][:, None, :]))
        elif metric == "dbc-sampled":
            w = model.pi[s][:, :, None] * model.pi[t][:, None, :]
            v = np.einsum("kab,kab->k", w, np.abs(R[s][:, :, None] - R[t][:, None, :]))
        else:
            raise ValueError(metric)
        best = max(best, float(v.max(initial=0.0)))
    return best


def _pair_rows(n: int, diagonal: bool, seed: int):
    """Rows s in a random order, each with its t >= s (diagonal) or t > s.

    The order does not change the sweep (every pair reads the previous sweep's
    d); it makes a partial sweep's rate a fair sample of the whole sweep's.
    """
    for s in np.random.default_rng(seed).permutation(n):
        s = int(s)
        yield s, range(s if diagonal else s + 1, n)


def timed_baseline(
    mdp,
    metric: str,
    tol: float = 1e-9,
    budget: float = 60.0,
    ground="reward",
    contraction: float | None = None,
    contraction_source: str | None = None,
    finish: bool = False,
    probe: float | None = None,
    seed: int = 0,
) -> dict:
    """The per-pair loop (pairs s <= t, mirrored: half the research code's work), run to
    completion when it can finish within ``budget`` seconds, else extrapolated.

    It stops early once it cannot finish in ``budget``: after ``probe`` seconds of
    the first sweep (default ``min(10, budget / 20)``) and after every sweep it
    estimates the time to finish from the best contraction it has (below) and
    stops when that exceeds the budget (with no contraction yet, only when even
    one more sweep cannot fit). The budget is also a hard cap.

    ``basis`` of the sweeps needed:

    * ``"measured"``: the loop reached the certified stop; ``sweeps_needed`` and
      ``seconds_total`` are measured.
    * ``"extrapolated from this run (...)"``: at least 3 sweeps finished; the
      steps go on shrinking by this run's last ratio ``s_k / s_{k-1}``.
    * ``"extrapolated from <contraction_source> (...)"``: fewer than 3 sweeps
      finished; the steps shrink from the last finished one (or from the partial
      first sweep's largest value, a lower bound of the first step) by
      ``contraction``, the per-sweep contraction observed on completed runs of
      the same family (:func:`observed_contraction`).
    * ``"a-priori c (upper bound)"``: no contraction known; the rate c.

    ``seconds_total`` is then ``seconds_per_sweep * sweeps_needed``, with the
    median time of the finished sweeps or, when none finished, the rate of the
    pairs done in the first sweep (at d = 0, a little cheaper than later sweeps).

    ``finish=True`` (the long benchmark's check) does not stop: it keeps the
    extrapolation it would have returned (where it would have stopped, or after
    sweep 1 when it would not have) and reports it next to the measurement under
    ``extrapolation_check``.
    """
    model = ReferenceModel(mdp, ground)
    n, c = model.n, model.c
    diagonal = metric in ("psm-sampled", "mico", "dbc-sampled")
    n_pairs = n * (n + 1) // 2 if diagonal else n * (n - 1) // 2
    probe = min(10.0, budget / 20) if probe is None else probe
    d = np.zeros((n, n))
    steps: list[float] = []
    sweep_seconds: list[float] = []
    first_pairs = 0  # pairs done in the first sweep, while it is partial
    first_max = 0.0  # the largest F(0) value so far: a lower bound of the first step
    first_start = 0.0

    def rate_and_basis(k: int) -> tuple[float, str]:
        if k >= 3 and steps[-2] > 0:
            r = steps[-1] / steps[-2]
            if contraction is not None and contraction > r:
                # Early sweeps contract faster than the asymptotic rate: of the two, the slower
                # (the family's) never makes the baseline look slower than it is.
                return contraction, (
                    f"extrapolated from {contraction_source or 'a smaller n'} "
                    f"(r = {contraction:.3f}; this run's {k} sweeps: {r:.3f})"
                )
            return r, f"extrapolated from this run ({k} sweeps, r = {r:.3f})"
        if contraction is not None:
            return contraction, f"extrapolated from {contraction_source or 'a smaller n'} (r = {contraction:.3f})"
        return c, BASIS_APRIORI

    def extrapolate(now: float, stopped: str) -> dict:
        k = len(steps)
        if k:
            per_sweep, per_basis = float(np.median(sweep_seconds)), f"median of {k} sweeps"
        else:
            per_sweep = (now - first_start) / max(first_pairs, 1) * n_pairs
            per_basis = f"{first_pairs} of {n_pairs} pairs of sweep 1 (d = 0)"
        rate, basis = rate_and_basis(k)
        first = first_max
        if not k and isinstance(ground, str) and ground == "reward":
            first = max(first_max, first_step(mdp, metric))  # the whole first sweep's step, not the part done
        needed = sweeps_needed(steps[-1] if k else first, max(k, 1), rate, tol, c)
        return {
            "finished": False,
            "basis": basis,
            "stopped": stopped,
            "sweeps": k,
            "sweeps_needed": needed,
            "seconds": now - start,
            "seconds_per_sweep": per_sweep,
            "per_sweep_basis": per_basis,
            "seconds_total": per_sweep * needed,
            "seconds_extrapolated": per_sweep * needed,
            "contraction": rate,
            "pairs": n_pairs,
            "pairs_done": first_pairs + max(k - 1, 0) * n_pairs,
        }

    def remaining_estimate(k: int, now: float) -> float:
        """Seconds still needed by the best estimate (a lower bound of one sweep without a contraction)."""
        if k == 0:
            per_sweep = (now - first_start) / max(first_pairs, 1) * n_pairs
            # Without a contraction: sweep 1 cannot certify when its step already exceeds the target,
            # so at least two sweeps are needed (a lower bound: the loop is never stopped unfairly).
            more = (
                (2 if c / (1 - c) * first_max > tol else 1)
                if contraction is None
                else sweeps_needed(first_max, 1, contraction, tol, c)
            )
            return per_sweep * more - (now - first_start)
        per_sweep = float(np.median(sweep_seconds))
        rate, basis = rate_and_basis(k)
        more = 1 if basis == BASIS_APRIORI else max(sweeps_needed(steps[-1], k, rate, tol, c) - k, 1)
        return per_sweep * more

    start = time.perf_counter()
    snapshot: dict | None = None  # the extrapolation a budgeted run would have returned (finish=True)
    probed = False
    stop: str | None = None

    def first_sweep_check(t0: float) -> tuple[str | None, float]:
        """Stop reason during the first sweep: the hard cap, or the estimate once ``probe`` seconds passed."""
        nonlocal probed
        now = time.perf_counter()
        if now - start > budget:
            return "budget", now
        if not probed and now - t0 >= probe:
            probed = True
            if now - start + remaining_estimate(0, now) > budget:
                return "estimate", now
        return None, now

    while stop is None:
        t0 = time.perf_counter()
        if not steps:
            first_start = t0
        new = np.zeros((n, n))
        for s, ts in _pair_rows(n, diagonal, seed):
            for t in ts:
                v = model.update(metric, d, s, t)
                new[s, t] = new[t, s] = v
                if steps:
                    continue
                first_pairs += 1
                first_max = max(first_max, v)
                if first_pairs == n_pairs or snapshot is not None:
                    continue
                why, now = first_sweep_check(t0)
                if why and finish:
                    snapshot = extrapolate(now, why)
                elif why:
                    stop = why
                    break
            if stop:
                break
        if stop:
            break
        # Later sweeps are started only when the estimate says they fit, so the cap is checked between sweeps.
        sweep_seconds.append(time.perf_counter() - t0)
        steps.append(float(np.max(np.abs(new - d))))
        d = new
        if c / (1 - c) * steps[-1] <= tol:
            break
        k, now = len(steps), time.perf_counter()
        why = (
            "budget"
            if now - start > budget
            else ("estimate" if now - start + remaining_estimate(k, now) > budget else None)
        )
        if finish and snapshot is None and (why or k == 1):
            snapshot = extrapolate(now, why or "after sweep 1 (would not have stopped there)")
        elif why and not finish:
            stop = why
    now = time.perf_counter()
    if stop is not None:
        out = extrapolate(now, stop)
    else:
        out = {
            "finished": True,
            "basis": BASIS_MEASURED,
            "stopped": "converged",
            "sweeps": len(steps),
            "sweeps_needed": len(steps),
            "seconds": now - start,
            "seconds_total": now - start,
            "seconds_per_sweep": float(np.median(sweep_seconds)),
            "per_sweep_basis": f"median of {len(steps)} sweeps",
            "contraction": None,
            "pairs": n_pairs,
            "pairs_done": len(steps) * n_pairs,
        }
        if snapshot is not None:
            out["extrapolation_check"] = {
                "at": snapshot["stopped"],
                "basis": snapshot["basis"],
                "sweeps_done": snapshot["sweeps"],
                "extrapolated_sweeps": snapshot["sweeps_needed"],
                "extrapolated_seconds": snapshot["seconds_total"],
                "measured_sweeps": out["sweeps_needed"],
                "measured_seconds": out["seconds_total"],
                "sweeps_ratio": snapshot["sweeps_needed"] / out["sweeps_needed"],
                "seconds_ratio": snapshot["seconds_total"] / out["seconds_total"],
            }
    out.update(
        observed_contraction=observed_contraction(steps),
        steps=steps,
        sweep_seconds=sweep_seconds,
        budget=budget,
        contraction_supplied=contraction,
        contraction_source=contraction_source,
    )
    return out
