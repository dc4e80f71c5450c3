"""The MDP model: validation messages, file formats, derived quantities."""

import numpy as np
import pytest

from bisimkit import FiniteMDP, InputError, load_mdp, mdp_from_dict, save_mdp
from bisimkit.examples import EXAMPLES, example
from bisimkit.mdp import coordinate_independent


def good():
    return {
        "transitions": [[[0.5, 0.5], [1.0, 0.0]], [[0.0, 1.0], [0.2, 0.8]]],
        "rewards": [[1.0, 0.0], [0.5, 0.25]],
        "policy": [[0.3, 0.7], [1.0, 0.0]],
        "discount": 0.9,
    }


def test_derived_quantities():
    mdp = mdp_from_dict(good())
    np.testing.assert_allclose(mdp.reward_pi, [0.3, 0.5])
    np.testing.assert_allclose(mdp.transition_pi, [[0.85, 0.15], [0.0, 1.0]])
    np.testing.assert_allclose(mdp.mean_action, [[0.3, 0.7], [1.0, 0.0]])  # identity action values
    av = mdp_from_dict({**good(), "action_values": [[-1.0], [2.0]]})
    np.testing.assert_allclose(av.mean_action, [[1.1], [-1.0]])


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(transitions=[[0.5, 0.5]]), "transitions: expected a 3-D array"),
        (lambda d: d.update(transitions=[[[0.5, 0.5, 0.0]], [[0, 1, 0]]]), "last axis has 3 entries"),
        (lambda d: d["transitions"][1][1].__setitem__(0, 0.3), "transitions[s=1, a=1] sums to 1.1"),
        (lambda d: d["transitions"][0][1].__setitem__(1, -0.5), "transitions[s=0, a=1, s'=1] = -0.5 is negative"),
        (lambda d: d["transitions"][0][0].__setitem__(0, float("nan")), "transitions[s=0, a=0, s'=0] is not finite"),
        (lambda d: d["transitions"][1].__setitem__(0, [0.5]), "transitions[1][0]: has length 1, expected 2"),
        (lambda d: d["transitions"][1][0].__setitem__(0, "x"), 'transitions[1][0][0]: expected a number, got "x"'),
        (lambda d: d.update(rewards=[1.0, 2.0]), "rewards: expected shape (s, a) = (2, 2), got (2,)"),
        (lambda d: d["rewards"][1].__setitem__(1, float("inf")), "rewards[s=1, a=1] is not finite"),
        (lambda d: d["policy"][1].__setitem__(1, 0.5), "policy[s=1] sums to 1.5"),
        (lambda d: d["policy"][0].__setitem__(0, -0.3), "policy[s=0, a=0] = -0.3 is negative"),
        (lambda d: d.update(discount=1.0), "discount = 1.0 must satisfy 0 <= discount < 1"),
        (lambda d: d.update(discount=-0.1), "discount = -0.1"),
        (lambda d: d.update(discount="0.9"), "discount: expected a number"),
        (lambda d: d.update(discount=float("nan")), "discount = nan"),
        (lambda d: d.update(action_values=[[1.0], [2.0], [3.0]]), "action_values: expected shape (m, k) with m = 2"),
        (lambda d: d.update(state_shape=[3]), "state_shape: the product of [3] is 3, but there are 2 states"),
        (lambda d: d.update(state_shape=[2, 0]), "state_shape[1] = 0 is not a positive integer"),
        (lambda d: d.update(colour="red"), "unknown field 'colour'"),
        (lambda d: d.pop("rewards"), "missing field 'rewards'"),
        (lambda d: d.update(name=3), "name: expected a string"),
        (lambda d: d.update(initial_state=2), "initial_state: 2 is not a state (there are 2 states, 0..1)"),
        (lambda d: d.update(initial_state=0.5), "initial_state: expected a state index (an integer), got 0.5"),
    ],
)
def test_bad_input_names_field_and_index(change, message):
    data = good()
    change(data)
    with pytest.raises(InputError) as info:
        mdp_from_dict(data)
    assert message in str(info.value)


def test_tiny_deviations_are_cleaned():
    data = good()
    data["transitions"][0][0] = [0.5 + 4e-10, 0.5]
    data["policy"][1] = [1.0 + 1e-10, -1e-10]
    mdp = mdp_from_dict(data)
    assert np.all(mdp.transitions >= 0) and np.allclose(mdp.transitions.sum(-1), 1, atol=1e-15)
    assert np.all(mdp.policy >= 0)


def test_policy_is_optional_but_required_by_policy_metrics():
    data = good()
    del data["policy"]
    mdp = mdp_from_dict(data)
    with pytest.raises(InputError, match="policy: .* needs a policy"):
        mdp.reward_pi


@pytest.mark.parametrize("suffix", [".json", ".npz"])
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_round_trip(tmp_path, name, suffix):
    mdp = example(name)
    path = save_mdp(mdp, tmp_path / f"m{suffix}")
    back = load_mdp(path)
    np.testing.assert_array_equal(back.transitions, mdp.transitions)
    np.testing.assert_array_equal(back.rewards, mdp.rewards)
    assert back.discount == mdp.discount and back.name == mdp.name
    assert back.state_shape == mdp.state_shape
    np.testing.assert_array_equal(back.action_values, mdp.action_values)
    if mdp.policy is None:
        assert back.policy is None
    else:
        np.testing.assert_array_equal(back.policy, mdp.policy)


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_initial_state_round_trip(tmp_path, suffix):
    mdp = mdp_from_dict({**good(), "initial_state": 1})
    back = load_mdp(save_mdp(mdp, tmp_path / f"m{suffix}"))
    assert back.initial_state == 1 and back.to_dict()["initial_state"] == 1
    assert back.with_policy(None).initial_state == 1
    assert "initial_state" not in mdp_from_dict(good()).to_dict()


def test_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_mdp(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"transitions": [1, 2,')
    with pytest.raises(InputError, match="invalid JSON at line 1"):
        load_mdp(bad)
    (tmp_path / "x.txt").write_text("{}")
    with pytest.raises(InputError, match="unsupported file type"):
        load_mdp(tmp_path / "x.txt")
    (tmp_path / "y.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="cannot read as .npz"):
        load_mdp(tmp_path / "y.npz")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="expected a JSON object"):
        load_mdp(tmp_path / "list.json")
    with pytest.raises(InputError, match="is a directory"):
        load_mdp(tmp_path)


def test_arrays_are_read_only():
    mdp = mdp_from_dict(good())
    with pytest.raises(ValueError):
        mdp.transitions[0, 0, 0] = 1.0


def test_examples_are_what_they_claim():
    rooms = example("mirrored-rooms")
    assert rooms.n_states == 31 and rooms.n_actions == 4 and rooms.policy is None
    assert np.all(rooms.transitions.max(axis=2) == 1.0)  # deterministic
    assert set(np.unique(rooms.rewards)) == {-1.0, 0.0, 1.0}
    policy_rooms = example("mirrored-rooms-policy")
    assert np.all(policy_rooms.policy.max(axis=1) == 1.0)
    grid = example("product-grid")
    assert grid.state_shape == (4, 4) and coordinate_independent(grid)
    assert coordinate_independent(rooms) is None
    # The product of the grid's coordinate laws is not coordinate independent once mixed.
    P = grid.transitions.copy()
    P[0, 0] = 0.5 * P[0, 0] + 0.5 * P[5, 1]
    mixed = FiniteMDP(P, grid.rewards, grid.discount, grid.policy, state_shape=(4, 4))
    assert not coordinate_independent(mixed)


def test_a_sparse_chain_reads_its_rows_as_the_policy_chain_with_honest_bounds():
    from fractions import Fraction

    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    P = rng.random((9, 9)) * (rng.random((9, 9)) < 0.5) + np.eye(9) / 3
    chain = FiniteMDP(sp.csr_matrix(P / P.sum(axis=1, keepdims=True)), rng.random((9, 1)), 0.9, np.ones((9, 1)))
    assert chain.transition_pi_rows is chain.transition_rows  # the mixture of one row is that row
    assert chain.reward_pi.tolist() == chain.rewards[:, 0].tolist() and not np.any(chain.reward_pi_error)
    rows, law = chain.transition_rows, chain.roundoff.pi_law_error
    for s in range(9):
        stored = [Fraction(x) for x in rows.data[rows.indptr[s] : rows.indptr[s + 1]]]
        total = sum(stored)
        assert sum(abs(x - x / total) for x in stored) / 2 <= Fraction(law[s])  # TV to the normalised row
    # the quotient of the chain is built from parts taken as they are, and reads back the same
    q = FiniteMDP.from_valid_parts(rows, chain.rewards, 0.9, chain.policy, chain.action_values, "copy")
    assert q.sparse and q.name == "copy" and q.transitions.shape == (9, 1, 9)
    with pytest.raises(AttributeError):
        q.discount = 0.5
