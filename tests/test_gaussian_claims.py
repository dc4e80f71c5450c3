"""Continuous-space claim checks (C5, C6, C8): verdicts, teeth (fault injection), verify rows."""

import pytest

import validation.gaussian_claims as GC
from bisimkit.gaussian.closed_forms import abs_moment
from validation import verify as V


def _outcomes(family, check, count=2):
    return [check(case) for case in GC.gaussian_cases(family, count, seed=0, quick=True)]


def test_claims_hold_where_asserted():
    for family in ("gaussian-linear", "gaussian-pendulum"):
        assert all(o.held for o in _outcomes(family, GC.check_c6_gaussian))
        assert all(o.held and o.margin > 0 for o in _outcomes(family, GC.check_c8_gaussian))
    tight = _outcomes("gaussian-diagonal", GC.check_c5_tight_gaussian)
    assert all(o.held and abs(o.margin) < 1e-9 for o in tight)


def test_gaps_where_the_hypotheses_fail():
    correlated = _outcomes("gaussian-correlated", GC.check_c5_gap_correlated, 4)
    assert all(not o.held and o.margin < -1e-3 for o in correlated)  # strict gap, exact
    euclidean = _outcomes("gaussian-euclidean", GC.check_c5_gap_euclidean)
    assert all(not o.held and o.margin < 0 for o in euclidean)  # strict gap at 99.9% confidence


def test_c6_detects_independent_noise(monkeypatch):
    real = GC.coupled_step
    monkeypatch.setattr(
        GC, "coupled_step", lambda model, x, y, rng, coupling="entangled": real(model, x, y, rng, "independent")
    )
    out = _outcomes("gaussian-linear", GC.check_c6_gaussian, 1)[0]
    assert not out.held and out.margin < -1e-3


def test_c8_detects_entangled_noise(monkeypatch):
    real = GC.coupled_step
    monkeypatch.setattr(
        GC, "coupled_step", lambda model, x, y, rng, coupling="entangled": real(model, x, y, rng, "entangled")
    )
    case = next(c for c in GC.gaussian_cases("gaussian-pendulum", 2, 0, True))
    out = GC.check_c8_gaussian(case)
    assert not out.held and out.margin == 0


def test_c5_tight_check_has_teeth(monkeypatch):
    case = GC.gaussian_cases("gaussian-diagonal", 1, 0, True)[0]
    assert GC.check_c5_tight_gaussian(case).held
    # A decreasing noise map for one law (negative std): sharing the noise is then the
    # anti-monotone coupling, not the quantile one, and the LP finds a cheaper coupling.
    flipped = GC.GaussianCase(case.family, case.model, dict(case.data, s2=-case.data["s2"]), case.seed, True)
    out = GC.check_c5_tight_gaussian(flipped)
    assert not out.held and out.margin < -1e-3

    # A wrong closed form (stds added instead of subtracted) is caught by the shared-noise sampling.
    def wrong(m1, s1, m2, s2, w, powers):
        return sum((w[:, j] * abs_moment(m1 - m2, s1 + s2, p)).sum() for j, p in enumerate(powers))

    monkeypatch.setattr(GC, "separable_cost", wrong)
    assert not GC.check_c5_tight_gaussian(case).held


def test_verify_reports_continuous_rows(tmp_path):
    report = V.verify(
        out=tmp_path, cases=2, claims=["C5", "C6", "C8"], figures=False, progress=False, shrink_examples=0, quick=True
    )
    rows = {(r["label"], r["family"]): r for r in report["rows"]}
    assert rows[("C6 (continuous)", "gaussian-pendulum")]["status"] == "held"
    assert rows[("C8 (continuous)", "gaussian-linear")]["status"] == "held"
    assert rows[("C5 (continuous)", "gaussian-diagonal")]["status"] == "held"
    gap = rows[("C5 (continuous, hypotheses fail)", "gaussian-correlated")]
    assert gap["status"].startswith("gap in 2/2")
    assert "[continuous]" in report["verdicts"]["C6"] and report["exit_status"] == 0


@pytest.mark.parametrize("family", list(GC.GAUSSIAN_FAMILIES))
def test_families_are_seeded(family):
    a = GC.gaussian_cases(family, 2, seed=3, quick=True)
    b = GC.gaussian_cases(family, 2, seed=3, quick=True)
    assert [c.seed for c in a] == [c.seed for c in b] and len(a) == 2
