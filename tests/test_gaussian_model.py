"""Gaussian MDP models: JSON round trip, validation messages, vectorised sampling, mean actions."""

import json

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit.gaussian.couplings import coupled_step, paired_noise
from bisimkit.gaussian.examples import GAUSSIAN_EXAMPLES, gaussian_example
from bisimkit.gaussian.model import LinearGaussianMDP, linear_gaussian_from_dict, load_gaussian, save_gaussian

GOOD = {
    "kind": "linear-gaussian",
    "A": [[0.9, 0.1], [0.0, 0.8]],
    "B": [[0.0], [1.0]],
    "K": [[-0.2, -0.4]],
    "policy_std": [0.3],
    "transition_std": [0.1, 0.2],
    "reward": {"state": [1.0, 0.0], "action": [0.5]},
    "discount": 0.9,
}


def test_json_round_trip(tmp_path):
    model = gaussian_example("quadratic-2d")
    path = save_gaussian(model, tmp_path / "m.json")
    again = load_gaussian(path)
    for key in ("A", "B", "K", "policy_std_vector", "transition_std_vector"):
        assert np.array_equal(getattr(model, key), getattr(again, key))
    assert np.array_equal(model.reward_terms.H, again.reward_terms.H)
    assert again.discount == model.discount and again.name == "quadratic-2d"
    one = linear_gaussian_from_dict(
        {
            "kind": "linear-gaussian",
            "A": 0.5,
            "B": 1,
            "K": -0.2,
            "policy_std": 0.1,
            "transition_std": 0.2,
            "discount": 0.5,
        }
    )
    assert one.state_dim == 1 and one.action_dim == 1 and one.reward_terms.is_linear


def _with(**changes):
    data = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"A": [[0.9, 0.1, 0.0], [0.0, 0.8, 0.0]]}, "A: expected a square matrix"),
        ({"B": [[1.0]]}, "B: expected 2 rows"),
        ({"K": [[0.1, 0.2, 0.3]]}, "K: expected shape (1, 2)"),
        ({"policy_std": [-0.3]}, "policy_std[0] = -0.3 is negative"),
        ({"transition_std": [0.1]}, "transition_std: expected 2 numbers"),
        ({"A": [[0.9, "x"], [0.0, 0.8]]}, "A[0][1]: expected a number"),
        ({"A": [[0.9, float("nan")], [0.0, 0.8]]}, "A[i=0, j=1] is not finite"),
        ({"discount": 1.0}, "discount = 1.0"),
        ({"discount": None}, "missing field 'discount'"),
        ({"reward": {"state": [1.0], "action": [0.5]}}, "reward.state: expected 2 numbers"),
        ({"reward": {"bonus": 1}}, "reward: unknown field 'bonus'"),
        ({"reward": {"cross": [[1.0, 2.0]]}}, "reward.cross: expected shape (2, 1)"),
        ({"kind": "gaussian"}, "kind: expected 'linear-gaussian'"),
        ({"extra": 1}, "unknown field 'extra'"),
        ({"squash": "yes"}, "squash: expected true or false"),
        ({"squash": True, "action_scale": 0}, "action_scale: expected a positive number"),
    ],
)
def test_bad_json_names_field_and_index(changes, message):
    with pytest.raises(InputError) as info:
        linear_gaussian_from_dict(_with(**changes))
    assert message in str(info.value)


def test_load_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\"kind\": ")
    with pytest.raises(InputError, match="invalid JSON at line 1"):
        load_gaussian(bad)
    with pytest.raises(InputError, match="no such file"):
        load_gaussian(tmp_path / "missing.json")


@pytest.mark.parametrize("name", GAUSSIAN_EXAMPLES)
def test_models_are_vectorised(name):
    model = gaussian_example(name)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(7, model.state_dim))
    a, b, zp, zq = coupled_step(model, z, z, rng)
    assert a.shape == (7, model.action_dim) and zp.shape == (7, model.state_dim)
    assert np.array_equal(a, b) and np.array_equal(zp, zq)  # entangled draws at identical states coincide
    assert model.reward(z, a).shape == (7,)
    for ground in ("reward", "policy"):
        assert np.all(model.ground(ground, z, a, z, a) == 0)
    with pytest.raises(InputError, match="dimension"):
        model.states(np.zeros((3, model.state_dim + 1)))


def test_marginals_of_the_couplings():
    """Each member of a coupled draw follows the model's own law (moments within 5 standard errors)."""
    model = gaussian_example("linear-2d")
    rng = np.random.default_rng(1)
    N = 40_000
    z = np.tile([0.5, -1.0], (N, 1))
    z2 = np.tile([-1.0, 2.0], (N, 1))
    for coupling in ("entangled", "independent"):
        a, b, zp, zq = coupled_step(model, z, z2, rng, coupling)
        for state, action, nxt in ((z, a, zp), (z2, b, zq)):
            mean_a = state[0] @ model.K.T
            assert np.all(np.abs(action.mean(0) - mean_a) <= 5 * model.policy_std_vector / np.sqrt(N))
            assert np.allclose(action.std(0), model.policy_std_vector, rtol=0.03)
            m = state[0] @ model.closed_loop.T
            sd = np.sqrt(np.diag(model.step_covariance))
            assert np.all(np.abs(nxt.mean(0) - m) <= 5 * sd / np.sqrt(N))
            assert np.allclose(np.cov(nxt.T), model.step_covariance, atol=0.05 * sd.max() ** 2)
    xi, xi2 = paired_noise(rng, (5, 2), "independent")
    assert not np.array_equal(xi, xi2)


def test_entangled_is_the_quantile_coupling():
    """Shared noise through increasing maps: both draws are in the same order (comonotone)."""
    model = gaussian_example("squashed-2d")
    rng = np.random.default_rng(2)
    z = np.tile([0.3, 0.1], (500, 1))
    z2 = np.tile([-2.0, 1.0], (500, 1))
    a, b, zp, zq = coupled_step(model, z, z2, rng)
    assert np.array_equal(np.argsort(a[:, 0]), np.argsort(b[:, 0]))
    assert np.all(np.abs(a) <= 1.0)
    # next states: the same noise per coordinate, so the coordinate differences are monotone in it
    eta_order = np.argsort(zp[:, 0] - z[0] @ model.A[0] - a[:, 0] * model.B[0, 0])
    assert np.array_equal(eta_order, np.argsort(zq[:, 0] - z2[0] @ model.A[0] - b[:, 0] * model.B[0, 0]))


def test_squashed_mean_action_matches_sampling():
    model = gaussian_example("squashed-2d")
    z = np.array([[0.5, -1.0], [2.0, 2.0]])
    rng = np.random.default_rng(3)
    xi = rng.standard_normal((200_000, 1))
    for i in range(2):
        samples = model.act(np.repeat(z[i : i + 1], len(xi), 0), xi)
        assert abs(samples.mean() - model.mean_action(z)[i, 0]) <= 5 * samples.std() / np.sqrt(len(xi))


def test_linear_model_properties():
    model = LinearGaussianMDP(**{k: v for k, v in GOOD.items() if k != "kind"})
    assert np.allclose(model.closed_loop, model.A + model.B @ model.K)
    assert model.spectral_radius < 1
    assert model.ground_bound("reward") == np.inf
    pend = gaussian_example("pendulum")
    assert pend.ground_bound("reward") == 2.1 and pend.ground_bound("policy") == 4.0
