"""The public fitting recipe (bisimkit.losses.fit_tabular / fit_head, docs/losses.md) and the
separability line of ``bisimkit info``. Each test runs in a few seconds (the README example ~10 s)."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bisimkit import example, save_mdp
from bisimkit.mdp import FiniteMDP
from bisimkit_cli.core import main

ROOT = Path(__file__).resolve().parents[1]


def readme_fit_example() -> str:
    """The README's python block that calls fit_tabular."""
    blocks = re.findall(r"^( *)```python\n(.*?)^ *```", (ROOT / "README.md").read_text(), re.S | re.M)
    found = [textwrap.dedent(code) for _, code in blocks if "fit_tabular" in code]
    assert len(found) == 1, "README.md should hold one python example of fit_tabular"
    return found[0]


def test_readme_example_reaches_under_one_percent():
    pytest.importorskip("torch")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_fit_example(), "README.md", "exec"), {})
    match = re.search(r"max error ([0-9.]+)%", out.getvalue())
    assert match, out.getvalue()
    assert float(match.group(1)) < 1.0, out.getvalue()


def test_unknown_loss_names_the_allowed_ones():
    pytest.importorskip("torch")
    from bisimkit.losses import FIT_LOSSES, fit_tabular

    assert FIT_LOSSES == ("entangled-reward", "entangled-policy", "psm", "mico", "dbc")
    with pytest.raises(ValueError) as info:
        fit_tabular(example("chain"), "entangled")
    assert str(info.value) == (
        "loss: unknown loss 'entangled' (choose from entangled-reward, entangled-policy, psm, mico, dbc)"
    )


def test_bad_arguments_of_the_trainers_name_the_parameter():
    torch = pytest.importorskip("torch")
    from bisimkit.losses import SeparableDistance, fit_head, fit_tabular

    mdp = example("chain")
    with pytest.raises(ValueError, match=r"^schedule: expected a FitSchedule"):
        fit_tabular(mdp, "psm", {"steps": 10})
    with pytest.raises(ValueError, match=r"^exact: expected a finite 6 x 6 matrix"):
        fit_tabular(mdp, "psm", exact=np.zeros((2, 2)))
    head = SeparableDistance(1)
    for name, value in (("steps", 0), ("lr", 0.0), ("target_every", -1), ("log_every", 0)):
        with pytest.raises(ValueError, match=rf"^{name}: "):
            fit_head(head, lambda z, h, t, g: h(z, z).sum(), lambda g: torch.zeros(4, 1), **{name: value})


def test_fit_tabular_returns_the_table_and_its_curves():
    pytest.importorskip("torch")
    from bisimkit.losses import FitSchedule, fit_tabular, fixed_point

    mdp = example("chain")
    schedule = FitSchedule(steps=60, batch=256, samples=2, decay_start=20, log_every=20)
    plain = fit_tabular(mdp, "entangled-policy", schedule)
    assert plain.distances.shape == (6, 6) and np.allclose(plain.distances, plain.distances.T)
    assert plain.steps == [0, 20, 40, 60] and len(plain.loss_values) == 4
    assert plain.error == [] and plain.max_error is None and plain.relative_error is None
    assert (plain.metric, plain.ground, plain.schedule.target_every) == ("eps-bar", "policy", 1)
    exact = fixed_point(mdp, "entangled-policy")
    tracked = fit_tabular(mdp, "entangled-policy", schedule, exact=exact)
    np.testing.assert_array_equal(tracked.distances, plain.distances)  # seeded: the same run
    assert len(tracked.error) == 4 and tracked.error[-1] < tracked.error[0]
    assert tracked.relative_error == pytest.approx(np.max(np.abs(plain.distances - exact)) / exact.max())
    assert fit_tabular(mdp, "dbc", FitSchedule(steps=5, log_every=5)).schedule.target_every == 5


def test_fit_head_learns_the_exact_metric_of_a_linear_gaussian_mdp():
    """A separable head can represent this d_eps-bar (diagonal closed loop), and fit_head gets it."""
    torch = pytest.importorskip("torch")
    from bisimkit.gaussian.exact import distance
    from bisimkit.losses import (
        SeparableDistance,
        entangled_loss,
        fit_head,
        gaussian_policy,
        gaussian_transition,
        policy_ground,
    )
    from validation.learning import linear_gaussian_case

    model = linear_gaussian_case(0)
    n, k = model.state_dim, model.action_dim
    A, B, K = (torch.tensor(x, dtype=torch.float64) for x in (model.A, model.B, model.K))
    s_pi = torch.tensor(model.policy_std_vector, dtype=torch.float64)
    s_P = torch.tensor(model.transition_std_vector, dtype=torch.float64)
    policy = gaussian_policy(lambda z: (z @ K.T, s_pi.expand(len(z), k)), action_dim=k)
    transition = gaussian_transition(lambda z, a: (z @ A.T + a @ B.T, s_P.expand(len(z), n)), latent_dim=n)
    rng = np.random.default_rng(0)
    z1, z2 = rng.normal(size=(64, n)), rng.normal(size=(64, n))
    exact = distance(model, "eps-bar", "policy", z1, z2).values
    t1, t2 = torch.tensor(z1), torch.tensor(z2)

    def loss(z, head, target, gen):
        return entangled_loss(
            z,
            distance=head,
            target_distance=target,
            policy=policy,
            transition=transition,
            ground=policy_ground(lambda x: x @ K.T),
            discount=model.discount,
            samples=2,
            generator=gen,
        )

    head = SeparableDistance(n, powers=(1,)).double()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: 1 s on one thread, 20 s on two threads of a busy machine
    try:
        result = fit_head(
            head,
            loss,
            lambda g: torch.randn(256, n, generator=g, dtype=torch.float64),
            steps=600,
            lr=0.02,
            error=lambda h: float(np.max(np.abs(h(t1, t2).numpy() - exact))),
            log_every=100,
        )
    finally:
        torch.set_num_threads(threads)
    assert result["steps"][-1] == 600 and len(result["error"]) == len(result["loss"]) == 6
    assert result["error"][-1] <= 1e-6 * exact.max() < result["error"][0]


def test_validation_learning_runs_the_library_recipe(monkeypatch):
    pytest.importorskip("torch")
    import bisimkit.losses as L
    from bisimkit.losses import fit
    from validation import learning

    assert learning.fit_head is L.fit_head and learning.TrainConfig is L.FitSchedule
    for check in learning.LOSS_CHECKS:  # the checks' fixed points are the library's
        if check.loss in L.FIT_LOSSES:
            assert L.FIXED_POINTS[check.loss] == (check.metric, check.ground)
    assert set(learning.TABULAR_LOSSES) == set(L.FIT_LOSSES)
    calls = []
    real = fit.fit_tabular
    monkeypatch.setattr(fit, "fit_tabular", lambda *a, **kw: calls.append(a[1]) or real(*a, **kw))
    curve = learning.train_tabular(example("chain"), "mico", L.FitSchedule(steps=20, log_every=10))
    assert calls == ["mico"] and curve.steps == [0, 10, 20] and curve.config["steps"] == 20


def test_the_schedule_needs_no_torch():
    """validation.learning (and so `bisimkit verify` without the torch extra) plans with FitSchedule."""
    code = "import sys, bisimkit.fitting, validation.learning; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr


# ------------------------------------------------------------------ bisimkit info
def row_reward_grid() -> FiniteMDP:
    """3 x 3 grid, one action, each coordinate drifts up independently, reward = row^2: d_eps-bar
    depends on the row alone, so it is separable, with Monge and axis-additive terms (C5 holds)."""

    def drift(x: int, size: int) -> np.ndarray:
        law = np.zeros(size)
        law[min(x + 1, size - 1)] += 0.6
        law[x] += 0.4
        return law

    P = np.zeros((9, 1, 9))
    for s in range(9):
        P[s, 0] = np.outer(drift(s // 3, 3), drift(s % 3, 3)).ravel()
    R = np.array([[float(s // 3) ** 2] for s in range(9)])
    return FiniteMDP(P, R, 0.9, np.ones((9, 1)), state_shape=(3, 3), name="row-reward-grid")


def info(spec: str, capsys) -> str:
    assert main(["info", spec]) == 0
    return capsys.readouterr().out


def test_info_reports_whether_a_separable_head_can_represent_d_eps_bar(tmp_path, capsys):
    out = info("product-grid", capsys)
    start = "d_eps-bar separable in the state_shape coordinates (reward"
    line = next(x for x in out.splitlines() if x.startswith(start))
    assert "no: every sum of per-coordinate terms is off by at least 36% of its max 6.016" in line
    assert "C5's hypotheses fail" in line
    assert "(policy ground): no" in out
    assert "d_eps-bar separable: not checked (no state_shape" in info("chain", capsys)
    assert "separable" not in info("mirrored-rooms", capsys)  # no policy: no eps-bar
    out = info(str(save_mdp(row_reward_grid(), tmp_path / "grid.json")), capsys)
    assert (
        "(reward ground): yes, coordinate terms Monge, additive along each axis: SeparableDistance(powers=(1,)) "
        "on the features phi_i(x) = d(0, x e_i) represents it exactly (C5's hypotheses hold: d_eps-bar = d_eps)" in out
    )
    assert "(policy ground): d_eps-bar is 0 for every pair (the ground is 0 everywhere)" in out
