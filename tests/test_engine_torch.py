"""The torch backend (``bisimkit/engine_torch.py``): Smith's doubling with torch products, the same
certificate as the numpy path.

On the CPU (torch float64): the certificate bounds the error against the exact rational
reference (``tests/exact_reference.py``) on adversarial MDPs, and the torch and numpy
solutions agree within the sum of their certificates; dbc-sampled with point-mass next
states, where it is a Stein equation, agrees with the numpy path's value iteration over W2.
Bad arguments are one line naming ``backend`` or ``device``.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from exact_reference import exact_fixed_point
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from bisimkit import FiniteMDP, solve
from bisimkit.errors import InputError
from bisimkit.generators import random_mdp
from bisimkit.solvers import BACKENDS, TORCH_METRICS, PrecisionWarning
from bisimkit_cli.core import main as cli_main
from validation.strategies import adversarial_mdps

torch = pytest.importorskip("torch", reason="the torch backend needs the 'torch' extra (pip install -e '.[torch]')")


def _point_masses(mdp: FiniteMDP) -> FiniteMDP:
    """The same MDP with every P(s, a) moved onto its most likely next state (dbc-sampled is then linear)."""
    P = np.zeros_like(mdp.transitions)
    n, m = mdp.n_states, mdp.n_actions
    P[np.arange(n)[:, None], np.arange(m)[None, :], np.argmax(mdp.transitions, axis=2)] = 1.0
    return FiniteMDP(P, mdp.rewards, mdp.discount, mdp.policy, name=f"{mdp.name} (point masses)")


def _solve(mdp, metric, tol, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        return solve(mdp, metric, tol=tol, **kwargs)


@st.composite
def cases(draw):
    mdp = draw(adversarial_mdps())
    metric = draw(st.sampled_from(TORCH_METRICS))
    if metric == "dbc-sampled":
        mdp = _point_masses(mdp)
    return mdp, metric, draw(st.sampled_from([1e-6, 1e-9, 1e-12]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases())
def test_torch_certificate_bounds_the_exact_error_and_meets_numpy(case):
    mdp, metric, tol = case
    try:
        truth = exact_fixed_point(mdp, metric)
    except ValueError:  # a row that does not sum to exactly 1 in floating point
        assume(False)
    on_torch = _solve(mdp, metric, tol, backend="torch", device="cpu")
    on_numpy = _solve(mdp, metric, tol)
    assert on_torch.method.startswith("Smith doubling") and "torch" in on_torch.method
    # the reference is rounded to the nearest float once: allow that half ulp
    err = float(np.max(np.abs(on_torch.distances - truth) - np.spacing(np.abs(truth))))
    assert err <= on_torch.certified_error, f"{metric} {mdp.name}: {err:.3g} > {on_torch.certified_error:.3g}"
    if on_torch.converged:
        assert on_torch.certified_error <= tol
    gap = float(np.max(np.abs(on_torch.distances - on_numpy.distances)))
    assert gap <= on_torch.certified_error + on_numpy.certified_error


@pytest.mark.parametrize("metric", ["mico", "psm-sampled", "mico-reduced"])
def test_torch_and_numpy_agree_within_their_certificates_on_a_dense_mdp(metric):
    mdp = random_mdp(60, 3, seed=4, action_dim=2)
    on_numpy = solve(mdp, metric, tol=1e-10)
    on_torch = solve(mdp, metric, tol=1e-10, backend="torch")
    assert on_torch.converged and on_torch.certified_error <= 1e-10
    assert on_torch.iterations == on_numpy.iterations  # the same doubling, step for step
    gap = float(np.max(np.abs(on_torch.distances - on_numpy.distances)))
    assert gap <= on_torch.certified_error + on_numpy.certified_error


def test_sampled_dbc_with_point_masses_is_the_stein_solution_of_the_w2_operator():
    # numpy solves dbc-sampled by value iteration over W2 transport; torch by Smith's doubling
    mdp = random_mdp(25, 3, seed=2, deterministic=True)
    on_numpy = solve(mdp, "dbc-sampled", tol=1e-9)
    on_torch = solve(mdp, "dbc-sampled", tol=1e-9, backend="torch")
    assert on_numpy.method == "value iteration" and on_torch.converged
    gap = float(np.max(np.abs(on_torch.distances - on_numpy.distances)))
    assert gap <= on_torch.certified_error + on_numpy.certified_error
    assert float(np.min(np.diag(on_torch.distances))) > 0  # not a pseudometric: its diagonal is solved for


def test_a_wrong_distance_breaks_the_certificate():
    # the certificate is measured at the returned matrix: a matrix moved by 1e-6 is caught
    from bisimkit.engine_torch import _certificate
    from bisimkit.operators import stein_form

    mdp = random_mdp(12, 2, seed=1)
    form = stein_form(mdp, "mico")
    exact = solve(mdp, "mico", tol=1e-12, backend="torch")
    A, P = torch.as_tensor(form.A), torch.as_tensor(form.P)
    D = torch.as_tensor(exact.distances).clone()
    assert _certificate(form, A, P, D, mdp.discount).error <= 1e-11
    D[3, 5] += 1e-6
    D[5, 3] += 1e-6
    assert _certificate(form, A, P, D, mdp.discount).error >= 1e-6


def test_progress_is_reported_with_the_final_certificate():
    seen = []
    sol = solve(random_mdp(20, 2, seed=0), "mico", backend="torch", progress=lambda k, e, t: seen.append((k, e)))
    assert seen and seen[-1][1] == sol.certified_error and sol.history[-1] == sol.certified_error


@pytest.mark.parametrize(
    "kwargs, param, words",
    [
        ({"metric": "pi", "backend": "torch"}, "backend", "mico"),
        ({"metric": "mico", "backend": "jax"}, "backend", "numpy, torch"),
        ({"metric": "mico", "device": "cpu"}, "device", "torch"),
        ({"metric": "mico", "backend": "torch", "device": "tpu"}, "device", "cuda"),
        ({"metric": "mico", "backend": "torch", "method": "vi"}, "backend", "vi"),
        ({"metric": "dbc-sampled", "backend": "torch"}, "backend", "point mass"),
    ],
)
def test_bad_backend_arguments_are_one_line_naming_the_parameter(kwargs, param, words):
    mdp = random_mdp(6, 2, seed=0)
    metric = kwargs.pop("metric")
    with pytest.raises(InputError) as info:
        solve(mdp, metric, **kwargs)
    assert info.value.param == param and words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_a_gpu_names_the_device():
    with pytest.raises(InputError, match="no CUDA device") as info:
        solve(random_mdp(6, 2, seed=0), "mico", backend="torch", device="cuda")
    assert info.value.param == "device"


def test_a_device_too_small_for_the_doubling_is_one_line_naming_the_device():
    from bisimkit.engine_torch import DEVICE_ARRAYS, check_device_memory

    need = DEVICE_ARRAYS * 8 * 20000**2
    check_device_memory(20000, torch.device("cuda"), free=need)
    with pytest.raises(InputError, match="20000") as info:
        check_device_memory(20000, torch.device("cuda"), free=need - 1)
    assert info.value.param == "device" and "GiB" in str(info.value)


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.delitem(sys.modules, "bisimkit.engine_torch", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails as if it were not installed
    with pytest.raises(InputError, match=r"'torch' extra") as info:
        solve(random_mdp(6, 2, seed=0), "mico", backend="torch")
    assert info.value.param == "backend"


def test_import_bisimkit_does_not_import_torch():
    code = "import sys, bisimkit, bisimkit.solvers, bisimkit_cli.core; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_cli_backend_torch(tmp_path, capsys):
    out = tmp_path / "d.npy"
    assert (
        cli_main(
            [
                "solve",
                "chain",
                "--metric",
                "mico",
                "--backend",
                "torch",
                "--device",
                "cpu",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    on_numpy = solve(_example("chain"), "mico")
    assert np.max(np.abs(np.load(out) - on_numpy.distances)) <= 2e-9
    capsys.readouterr()
    assert cli_main(["solve", "chain", "--metric", "pi", "--backend", "torch", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--backend" in err and "Traceback" not in err


def test_cli_help_lists_the_backends_the_solver_checks():
    from bisimkit_cli.core import build_parser

    solve_parser = next(
        a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and "solve" in a.choices
    ).choices["solve"]
    backend = next(a for a in solve_parser._actions if a.dest == "backend")
    assert tuple(backend.choices) == BACKENDS and all(name in backend.help for name in BACKENDS + TORCH_METRICS)


def _example(name):
    from bisimkit.examples import example

    return example(name)
