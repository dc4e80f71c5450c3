"""State, coordinate and action order of the entangled coupling (bisimkit/order.py, claim C11)."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bisimkit import InputError, example, solve
from bisimkit.generators import product_grid_mdp
from bisimkit.order import class_contiguous_states, relabelled, resolve_order
from bisimkit.relations import eps_relation_labels
from validation.claims import FixedPoints, check_c11_action_order, check_c11_class_contiguous, check_c11_state_order
from validation.families import Case
from validation.findings import three_action_rewards
from validation.strategies import finite_mdps, planted_mdps

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)


# ------------------------------------------------------------ hand-computed
def test_coupling_order_swap_of_states_3_and_4():
    """The bundled example: 0 and 5 are E_eps-related, d_eps-bar(0, 5) = 9 in index order and
    0 once states 3 and 4 swap places (then each class is a block of the cumulative law)."""
    mdp = example("coupling-order")
    assert eps_relation_labels(mdp)[0] == eps_relation_labels(mdp)[5]
    assert solve(mdp, "eps-bar").distances[0, 5] == pytest.approx(9.0)
    swapped = solve(mdp, "eps-bar", order=[0, 1, 2, 4, 3, 5])
    assert swapped.distances[0, 5] == pytest.approx(0.0, abs=1e-12) and swapped.order == "given permutation"
    contiguous = solve(mdp, "eps-bar", order="class-contiguous")
    assert contiguous.order == "class-contiguous" and contiguous.distances[0, 5] == pytest.approx(0.0, abs=1e-12)
    assert contiguous.to_json()["order"] == "class-contiguous"


def test_class_contiguous_numbers_classes_in_blocks():
    mdp = example("coupling-order")
    order = class_contiguous_states(mdp)
    labels = eps_relation_labels(mdp)[order]
    assert sorted(order.tolist()) == list(range(6))
    assert all(labels[k] <= labels[k + 1] for k in range(5))  # one run per class


def test_action_order_changes_d_eps_by_hand():
    """Rewards 0, 1, 2 under (1/3, 1/3, 1/3) and (1/2, 0, 1/2): the entangled action coupling gives
    E|dR| = 1/3 in index order, 2/3 with actions 0 and 1 swapped (worked in findings.py)."""
    mdp = three_action_rewards().mdp
    assert solve(mdp, "eps").distances[0, 1] == pytest.approx(1 / 3)
    swapped = solve(mdp, "eps", action_order=[1, 0, 2])
    assert swapped.distances[0, 1] == pytest.approx(2 / 3) and swapped.action_order == "given permutation"


def test_grid_order_is_a_coordinate_order():
    mdp = product_grid_mdp((2, 3), 2, seed=1)
    o = resolve_order(mdp, [1, 0])
    assert o.state_shape == (3, 2) and o.label == "coordinates 1,0"
    # cell (x, y) of the 2x3 grid sits at (y, x) of the 3x2 one
    assert o.states.tolist() == np.arange(6).reshape(2, 3).T.ravel().tolist()
    # coordinate-independent laws: the Rosenblatt chain is a product, so the order does not matter
    a, b = solve(mdp, "eps-bar"), solve(mdp, "eps-bar", order="1,0")
    assert np.max(np.abs(a.distances - b.distances)) < 1e-9
    with pytest.raises(InputError, match="coordinates of the grid"):
        solve(mdp, "eps-bar", order=list(range(6)))
    with pytest.raises(InputError, match="class-contiguous .* grid"):
        solve(mdp, "eps-bar", order="class-contiguous")


@pytest.mark.parametrize(
    "bad, message",
    [
        ([0, 1, 2, 3], "expected a permutation of 6 states"),
        ([0, 1, 2, 3, 3, 5], r"\[4\] = 3 repeats \[3\]"),
        ([0, 1, 2, 3, 4, 5.5], r"\[5\] = 5.5 is not an integer"),
        ([0, 1, 2, 3, 4, 6], r"\[5\] = 6 is out of range 0..5"),
        ("sideways", "neither index, class-contiguous"),
    ],
)
def test_bad_orders_name_the_index(bad, message):
    with pytest.raises(InputError, match=message):
        solve(example("coupling-order"), "eps-bar", order=bad)


# --------------------------------------------------------------- properties
@SETTINGS
@given(finite_mdps(max_states=5), st.randoms(use_true_random=False))
def test_relabelling_maps_back_and_order_free_metrics_do_not_move(mdp, rnd):
    """Solving under an order and mapping back equals solving the relabelled MDP; pi (optimal
    couplings) and d_eps (optimal next-state coupling) do not depend on the state order."""
    perm = list(range(mdp.n_states))
    rnd.shuffle(perm)
    for metric in ("pi", "eps"):
        a, b = solve(mdp, metric).distances, solve(mdp, metric, order=perm).distances
        assert np.max(np.abs(a - b)) < 1e-7
    bar = solve(mdp, "eps-bar", order=perm).distances
    direct = solve(relabelled(mdp, perm), "eps-bar").distances
    assert np.max(np.abs(bar[np.ix_(perm, perm)] - direct)) < 1e-9


@SETTINGS
@given(planted_mdps())
def test_c4_holds_with_class_contiguous_states(planted):
    """The C11 statement as a property: with each E_eps class numbered consecutively d_eps-bar
    vanishes on E_eps (whatever the index order does)."""
    mdp, _ = planted
    d = solve(mdp, "eps-bar", order="class-contiguous").distances
    labels = eps_relation_labels(mdp)
    assert np.max(np.abs(d[labels[:, None] == labels[None, :]])) < 1e-8


def test_c11_checks_on_the_witnesses():
    fp = FixedPoints(Case(example("coupling-order")))
    assert check_c11_class_contiguous(fp).held
    spread = check_c11_state_order(fp)
    assert not spread.held and spread.margin == pytest.approx(-9.0)
    actions = check_c11_action_order(FixedPoints(three_action_rewards()))
    assert not actions.held and actions.margin == pytest.approx(-1 / 3)


# -------------------------------------------------------------- command line
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "bisimkit", *args], capture_output=True, text=True)


def test_cli_order_file_and_record(tmp_path):
    order = tmp_path / "order.json"
    order.write_text(json.dumps([0, 1, 2, 4, 3, 5]))
    out = tmp_path / "d.json"
    proc = _cli("solve", "coupling-order", "--metric", "eps-bar", "--order", str(order), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["order"] == str(order) and data["distances"][0][5] == pytest.approx(0.0, abs=1e-12)
    shown = _cli("solve", "coupling-order", "--metric", "eps-bar", "--order", "class-contiguous")
    assert "entangled coupling order: states class-contiguous; actions index" in shown.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        ("0 1 2 3 4", "expected a permutation of 6 states"),
        ("0 1 2 2 4 5", r"\[3\] = 2 repeats \[2\]"),
        ("0 1 2 x 4 5", r"\[3\] = 'x' is not an integer"),
        ("0 1 2 3 4 7", r"\[5\] = 7 is out of range"),
    ],
)
def test_cli_bad_order_file_is_one_line_exit_2(tmp_path, content, message):
    path = tmp_path / "order.txt"
    path.write_text(content)
    out = tmp_path / "d.npy"
    proc = _cli("solve", "coupling-order", "--metric", "eps-bar", "--order", str(path), "--out", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisimkit: error: --order: ")
    import re

    assert re.search(message, lines[0]) and not out.exists()


def test_c11_reports_where_even_in_index_action_order():
    """Round-off above 0 in the index action order is reported, not a crash."""
    from validation import claims as C

    fp = FixedPoints(Case(example("coupling-order")))
    original = C.zero_part
    try:
        C.zero_part = lambda fp, order="index", action_order=None: 1e-14 if action_order is None else 0.0
        outcome = check_c11_class_contiguous(fp)
    finally:
        C.zero_part = original
    assert outcome.held and "index actions" in outcome.detail
