"""Reading models from probabilistic model checking: Storm's DRN, PRISM's explicit files, stormpy.

The same chains are read three ways (a DRN file Storm wrote, PRISM explicit files written by the
small exporter below, and the stormpy model itself) and must give the same arrays. Bad files are
refused in one line naming the file, the line and the field, and reading writes nothing.
"""

from __future__ import annotations

import importlib.util
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit.model_files import ModelData, read_drn, read_model, read_prism, stormpy_data

DATA = Path(__file__).parent / "data" / "model_files"
HAVE_STORMPY = importlib.util.find_spec("stormpy") is not None
needs_stormpy = pytest.mark.skipif(not HAVE_STORMPY, reason="stormpy is not installed (it comes with the 'test' extra)")


# ------------------------------------------------------------------------------ helpers
def _stormpy_files() -> Path:
    import stormpy

    return Path(stormpy.__file__).parent / "examples" / "files"


def _build(path: Path, constants: dict | None = None, exact: bool = False, prism_compatibility: bool = False):
    """A stormpy sparse model with every label, reward structure and choice label."""
    import stormpy

    program = (
        stormpy.parse_prism_program(str(path), prism_compatibility=True)
        if prism_compatibility
        else stormpy.parse_prism_program(str(path))
    )
    if constants:
        program, _ = stormpy.instantiate_constants(program, constants)
    options = stormpy.BuilderOptions(build_full=True)
    if exact:
        return stormpy.build_model[stormpy.Rational](program, options=options)
    return stormpy.build_model(program, options=options)


def _export_drn(model, path: Path, precision: int | None = None) -> Path:
    """Storm's DRN export (doubles with 10 significant digits, or ``precision`` digits)."""
    import stormpy
    import stormpy.io

    export = getattr(stormpy.io, "export_to_drn", None) or stormpy.export_to_drn
    if precision is None:
        export(model, str(path))
    else:
        from stormpy.developer import DirectEncodingExporterOptions

        options = DirectEncodingExporterOptions()
        options.output_precision = precision
        export(model, str(path), options=options)
    return path


def _value(entry):
    v = entry.value
    return v() if callable(v) else v


def _export_prism(model, stem: Path) -> Path:
    """Write ``stem.tra``, ``stem.lab`` and the reward files of a stormpy model as PRISM's
    ``-exportmodel`` does: one ``.srew`` and one ``.trew`` per reward structure (numbered when
    there are several), each with a ``# Reward structure "name"`` header."""
    matrix = model.transition_matrix
    n = model.nr_states
    mdp = model.model_type.name == "MDP"
    groups = list(model.nondeterministic_choice_indices) if mdp else list(range(n + 1))
    names = model.choice_labeling if mdp and model.has_choice_labeling() else None
    rows = []
    for s in range(n):
        for k, c in enumerate(range(groups[s], groups[s + 1])):
            action = "_".join(sorted(names.get_labels_of_choice(c))) if names is not None else ""
            for e in matrix.get_row(c):
                p = _value(e)
                text = str(p) if isinstance(p, float) is False else repr(p)
                fields = [s, k, e.column, text] if mdp else [s, e.column, text]
                rows.append(" ".join(map(str, fields)) + (f" {action}" if action else ""))
    head = f"{n} {model.nr_choices} {len(rows)}" if mdp else f"{n} {len(rows)}"
    stem.with_suffix(".tra").write_text(head + "\n" + "\n".join(rows) + "\n")

    labels = sorted(model.labeling.get_labels(), key=lambda x: ({"init": 0, "deadlock": 1}.get(x, 2), x))
    members = {lab: set(model.labeling.get_states(lab)) for lab in labels}
    lines = [" ".join(f'{i}="{lab}"' for i, lab in enumerate(labels))]
    for s in range(n):
        idx = [str(i) for i, lab in enumerate(labels) if s in members[lab]]
        if idx:
            lines.append(f"{s}: " + " ".join(idx))
    stem.with_suffix(".lab").write_text("\n".join(lines) + "\n")

    structures = list(model.reward_models.items())
    for r, (name, rm) in enumerate(structures, start=1):
        suffix = "" if len(structures) == 1 else str(r)
        title = f'# Reward structure "{name}"' if name else "# Reward structure"
        state = [float(v) for v in rm.state_rewards] if rm.has_state_rewards else [0.0] * n
        nonzero = [(s, v) for s, v in enumerate(state) if v != 0]
        body = [f"{s} {v!r}" for s, v in nonzero]
        stem.with_name(f"{stem.name}{suffix}.srew").write_text(
            "\n".join([title, "# State rewards", f"{n} {len(nonzero)}"] + body) + "\n"
        )
        action = (
            [float(v) for v in rm.state_action_rewards] if rm.has_state_action_rewards else [0.0] * model.nr_choices
        )
        body = []
        for s in range(n):
            for k, c in enumerate(range(groups[s], groups[s + 1])):
                if action[c] != 0:
                    for e in matrix.get_row(c):
                        body.append(f"{s} {k} {e.column} {action[c]!r}" if mdp else f"{s} {e.column} {action[c]!r}")
        head = f"{n} {model.nr_choices} {len(body)}" if mdp else f"{n} {len(body)}"
        stem.with_name(f"{stem.name}{suffix}.trew").write_text(
            "\n".join([title, "# Transition rewards", head] + body) + "\n"
        )
    return stem.with_suffix(".tra")


def _nonempty_labels(model: ModelData) -> dict[str, list[int]]:
    return {name: model.states_with(name).tolist() for name in model.label_names if len(model.states_with(name))}


def _assert_same(a: ModelData, b: ModelData, exact: bool = False, names: bool = True) -> None:
    assert (a.model_type, a.n_states, a.n_actions) == (b.model_type, b.n_states, b.n_actions)
    np.testing.assert_array_equal(a.choice_ptr, b.choice_ptr)
    np.testing.assert_array_equal(a.row_ptr, b.row_ptr)
    np.testing.assert_array_equal(a.columns, b.columns)
    if exact:
        np.testing.assert_array_equal(a.probabilities, b.probabilities)
    else:  # Storm writes doubles with 10 significant digits
        np.testing.assert_allclose(a.probabilities, b.probabilities, rtol=1e-9, atol=0)
    assert _nonempty_labels(a) == _nonempty_labels(b)
    np.testing.assert_array_equal(a.initial_states, b.initial_states)
    assert a.reward_names == b.reward_names
    for r in a.reward_names:
        np.testing.assert_allclose(a.state_rewards[r], b.state_rewards[r], rtol=1e-9, atol=0)
        np.testing.assert_allclose(a.action_rewards[r], b.action_rewards[r], rtol=1e-9, atol=0)
    if names:
        assert a.action_labels == b.action_labels


def _refused(path: Path, *fragments: str, culprit: str | None = None) -> str:
    """Reading ``path`` raises one line naming the culprit file (``path`` by default) and every
    fragment; nothing is written."""
    before = sorted(os.listdir(path.parent))
    with pytest.raises(InputError) as info:
        read_model(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path.parent / (culprit or path.name)))
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert sorted(os.listdir(path.parent)) == before
    return message


# ------------------------------------------------------------------------------ hand-written files
def test_tiny_drn_arrays_labels_and_rewards():
    m = read_model(DATA / "tiny.drn")
    assert (m.model_type, m.n_states, m.n_actions, m.n_transitions) == ("dtmc", 3, 1, 5)
    np.testing.assert_array_equal(m.choice_ptr, [0, 1, 2, 3])
    np.testing.assert_array_equal(m.row_ptr, [0, 2, 4, 5])
    np.testing.assert_array_equal(m.columns, [1, 2, 0, 1, 2])
    assert m.columns.dtype == np.int64 and m.probabilities.dtype == np.float64
    np.testing.assert_array_equal(m.probabilities, [float(Fraction(1, 3)), 2 / 3, 0.25, 0.75, 1.0])
    assert [m.labels(s) for s in range(3)] == [
        frozenset({"init", "start"}),
        frozenset({"far away", "start"}),
        frozenset({"goal"}),
    ]
    np.testing.assert_array_equal(m.initial_states, [0])
    np.testing.assert_array_equal(m.label_mask("start"), [True, True, False])
    assert m.reward_names == ("cost", "bonus")
    np.testing.assert_array_equal(m.state_rewards["cost"], [1, 2, 0])
    np.testing.assert_array_equal(m.action_rewards["cost"], [0.5, 0, 0])
    np.testing.assert_array_equal(m.state_rewards["bonus"], [0, 0, 3])
    np.testing.assert_array_equal(m.action_rewards["bonus"], [0, 0, 1])
    # a structure's reward adds the state's and the action's; a label's is its indicator
    np.testing.assert_array_equal(m.reward_matrix("cost"), [[1.5], [2.0], [0.0]])
    np.testing.assert_array_equal(m.reward_matrix("bonus"), [[0.0], [0.0], [4.0]])
    np.testing.assert_array_equal(m.reward_matrix("far away"), [[0.0], [1.0], [0.0]])
    np.testing.assert_array_equal(m.reward_vector("goal", kind="label"), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(m.label_classes(), [0, 1, 2])
    np.testing.assert_array_equal(m.label_classes(["start"]), [0, 0, 1])
    P = m.transition_matrix()
    assert P.shape == (3, 3)
    np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0)


def test_unknown_and_ambiguous_reward_names_are_refused_in_one_line(tmp_path):
    m = read_model(DATA / "tiny.drn")
    with pytest.raises(InputError) as info:
        m.reward_vector("gaol")
    message = str(info.value)
    assert message.startswith("reward: unknown reward 'gaol'") and "\n" not in message
    for known in ("'goal'", "'far away'", "'init'", "'cost'", "'bonus'"):
        assert known in message
    with pytest.raises(InputError, match="unknown label 'x'"):
        m.states_with("x")
    with pytest.raises(InputError, match="out of range"):
        m.labels(3)
    # a name that is both a label and a reward structure must be said which
    clash = tmp_path / "clash.drn"
    clash.write_text((DATA / "tiny.drn").read_text().replace("cost bonus", "goal bonus"))
    m2 = read_model(clash)
    with pytest.raises(InputError, match="both a label and a reward structure"):
        m2.reward_vector("goal")
    np.testing.assert_array_equal(m2.reward_vector("goal", kind="label"), [0, 0, 1])
    np.testing.assert_array_equal(m2.reward_vector("goal", kind="reward"), [1.5, 2, 0])


def test_prism_explicit_files_give_the_drn_model():
    drn = read_model(DATA / "tiny.drn")
    tra = read_model(DATA / "tiny.tra")  # finds tiny.lab, tiny1/2.srew, tiny1/2.trew
    _assert_same(drn, tra, exact=True, names=False)
    assert tra.action_labels is None
    assert "deadlock" in tra.label_names and len(tra.states_with("deadlock")) == 0
    # the same files given explicitly
    explicit = read_prism(
        DATA / "tiny.tra",
        DATA / "tiny.lab",
        [DATA / "tiny1.srew", DATA / "tiny2.srew"],
        [DATA / "tiny1.trew", DATA / "tiny2.trew"],
    )
    _assert_same(tra, explicit, exact=True, names=False)


def test_transition_rewards_of_a_chain_are_expected_per_state(tmp_path):
    (tmp_path / "c.tra").write_text("2 3\n0 0 0.25\n0 1 0.75\n1 1 1\n")
    (tmp_path / "c.trew").write_text("2 2\n0 0 4\n0 1 8\n")
    m = read_model(tmp_path / "c.tra")
    assert m.reward_names == ("",)
    np.testing.assert_allclose(m.action_rewards[""], [0.25 * 4 + 0.75 * 8, 0.0])
    np.testing.assert_array_equal(m.initial_states, [0])  # no .lab: state 0, as PRISM assumes


def test_mdp_actions_are_aligned_by_name():
    m = read_model(DATA / "swapped.drn")
    assert m.actions == ("stay", "go")
    assert m.action_labels == ("stay", "go", "stay", "go")
    # state 1 lists go (to 0) before stay (to 1): read in the order of state 0's names
    np.testing.assert_array_equal(m.columns, [0, 1, 1, 0])
    np.testing.assert_array_equal(m.action_rewards["r"], [1, 2, 4, 3])
    np.testing.assert_array_equal(m.reward_matrix("r"), [[1, 2], [4, 3]])
    kept = read_model(DATA / "swapped.drn", align_actions="index")
    assert kept.actions is None
    np.testing.assert_array_equal(kept.columns, [0, 1, 0, 1])
    np.testing.assert_array_equal(kept.action_rewards["r"], [1, 2, 3, 4])


def test_prism_mdp_with_actions_in_any_line_order(tmp_path):
    (tmp_path / "m.tra").write_text("2 4 5\n1 1 1 1 stay\n0 1 1 0.5 go\n0 0 0 1 stay\n1 0 0 1 go\n0 1 0 0.5 go\n")
    m = read_model(tmp_path / "m.tra")
    assert (m.model_type, m.n_actions, m.actions) == ("mdp", 2, ("stay", "go"))
    np.testing.assert_array_equal(m.row_ptr, [0, 1, 3, 4, 5])
    np.testing.assert_array_equal(m.columns, [0, 0, 1, 1, 0])
    np.testing.assert_array_equal(m.probabilities, [1, 0.5, 0.5, 1, 1])


# ------------------------------------------------------------------------------ bad files
DRN_HEAD = "@type: {kind}\n@parameters\n\n@reward_models\nr\n@nr_states\n{n}\n@nr_choices\n{c}\n@model\n"
CHAIN = "state 0 [1] init\n\taction 0 [0]\n\t\t0 : 0.5\n\t\t1 : 0.5\nstate 1 [0] goal\n\taction 0 [0]\n\t\t1 : 1\n"
# the header above takes 10 lines: state 0 is line 11, its transitions lines 13-14, state 1 line 15


def _drn(kind="DTMC", n=2, c=2, body=CHAIN) -> str:
    return DRN_HEAD.format(kind=kind, n=n, c=c) + body


BAD_DRN = {
    "row_sum": (_drn(body=CHAIN.replace("1 : 0.5", "1 : 0.4")), ["line 12", "probabilities of state 0", "sum to 0.9"]),
    "target_range": (_drn(body=CHAIN.replace("\t\t1 : 1", "\t\t2 : 1")), ["line 17", "target state 2", "out of range"]),
    "state_missing": (
        _drn(n=3, c=3, body=CHAIN + "state 3\n\taction 0\n\t\t0 : 1\n"),
        ["line 18", "state 3 where state 2 was expected", "missing"],
    ),
    "out_of_order": (
        _drn(n=3, c=3, body=CHAIN.replace("state 1 [0] goal", "state 2 [0] goal") + "state 1\n\taction 0\n\t\t0 : 1\n"),
        ["line 15", "state 2 out of order"],
    ),
    "duplicate_state": (
        _drn(body=CHAIN.replace("state 1 [0] goal", "state 0 [0] goal")),
        ["line 15", "state 0 is listed twice (first at line 11)"],
    ),
    "malformed_probability": (_drn(body=CHAIN.replace("1 : 0.5", "1 : 0.5x")), ["line 14", "probability '0.5x'"]),
    "malformed_target": (_drn(body=CHAIN.replace("\t\t1 : 1", "\t\tone : 1")), ["line 17", "target state 'one'"]),
    "malformed_reward": (_drn(body=CHAIN.replace("[1]", "[one]")), ["line 11", "state reward 'one'"]),
    "reward_count": (_drn(body=CHAIN.replace("[1]", "[1, 2]")), ["line 15", "1 values", "2 reward structures"]),
    "bracket": (_drn(body=CHAIN.replace("[1] init", "[1 init")), ["line 11", "']' missing"]),
    "nr_states_more": (_drn(n=3, c=3), ["line 7", "@nr_states: 3", "lists 2 states"]),
    "nr_states_fewer": (_drn(n=1, c=1), ["line 15", "more states than @nr_states says (1)"]),
    "nr_choices": (_drn(c=5), ["line 9", "@nr_choices: 5", "lists 2 choices"]),
    "negative": (
        _drn(body=CHAIN.replace("0 : 0.5", "0 : -0.5").replace("1 : 0.5", "1 : 1.5")),
        ["line 13", "probability -0.5 is not in [0, 1]"],
    ),
    "no_transitions": (_drn(body=CHAIN.replace("\t\t1 : 1\n", "")), ["line 16", "state 1 has no transitions"]),
    "ctmc": (_drn(kind="CTMC"), ["line 1", "@type: CTMC is not supported"]),
    "pomdp": (_drn(kind="POMDP"), ["line 1", "@type: POMDP"]),
    "parameters": (
        _drn().replace("@parameters\n\n", "@parameters\np q\n"),
        ["line 3", "@parameters: p q", "parametric"],
    ),
    "value_type": (_drn().replace("@parameters", "@value_type: parametric\n@parameters"), ["line 2", "parametric"]),
    "header_line": (_drn().replace("@nr_choices", "@nr_actions"), ["line 8", "header: unexpected line '@nr_actions'"]),
    "no_model": ("@type: DTMC\n@nr_states\n2\n", ["@model: missing"]),
    "two_actions_in_a_dtmc": (
        _drn(body=CHAIN.replace("\t\t1 : 1", "\t\t1 : 1\n\taction 1\n\t\t0 : 1")),
        ["line 18", "state 1 has 2 actions; a DTMC has one per state"],
    ),
    "misspelt_action": (
        _drn(body=CHAIN.replace("\taction 0 [0]\n\t\t1 : 1", "\tacton 0 [0]\n\t\t1 : 1")),
        ["line 16", "action line: expected 'action NAME [rewards]', got 'acton 0 [0]'"],
    ),
    "garbage_line": (
        _drn(body=CHAIN.replace("\t\t1 : 1", "\t\tto 1 with 1")),
        ["line 17", "transition: expected 'target : probability', got 'to 1 with 1'"],
    ),
    "action_sets": (
        _drn(kind="MDP", c=3, body=CHAIN.replace("\t\t1 : 0.5\n", "\t\t1 : 0.5\n\taction 1 [0]\n\t\t1 : 1\n")),
        ["line 17", "state 1 has 1 action, state 0 has 2; bisimkit needs the same action set in every state"],
    ),
    "action_names": (
        _drn(
            kind="MDP",
            c=4,
            body=(
                "state 0 init\n\taction a\n\t\t0 : 1\n\taction b\n\t\t1 : 1\n"
                "state 1\n\taction a\n\t\t0 : 1\n\taction c\n\t\t1 : 1\n"
            ),
        ),
        ["line 16", "state 1 has actions {a, c}, state 0 has {a, b}"],
    ),
    "mdp_without_actions": (
        _drn(kind="MDP", body=CHAIN.replace("\taction 0 [0]\n", "")),
        ["line 12", "transition of state 0 before any of its action lines"],
    ),
    "transition_before_action": (
        _drn(
            kind="MDP",
            body=CHAIN.replace(
                "state 1 [0] goal\n\taction 0 [0]\n\t\t1 : 1", "state 1 [0] goal\n\t\t1 : 1\n\taction 0 [0]"
            ),
        ),
        ["line 16", "before any of its action lines"],
    ),
    "duplicate_target": (
        _drn(body=CHAIN.replace("\t\t1 : 0.5", "\t\t0 : 0.5")),
        ["line 14", "target 0 of state 0, action 0 is listed twice (also line 13)"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_DRN))
def test_bad_drn_is_refused_in_one_line(tmp_path, case):
    text, fragments = BAD_DRN[case]
    path = tmp_path / "model.drn"
    path.write_text(text)
    _refused(path, *fragments)


def test_rationals_are_accepted_and_converted(tmp_path):
    path = tmp_path / "r.drn"
    path.write_text(
        _drn(body=CHAIN.replace("0 : 0.5", "0 : 1/3").replace("1 : 0.5", "1 : 2/3").replace("[1]", "[1/4]"))
    )
    m = read_model(path)
    np.testing.assert_array_equal(m.probabilities[:2], [float(Fraction(1, 3)), float(Fraction(2, 3))])
    np.testing.assert_array_equal(m.state_rewards["r"], [0.25, 0.0])


TRA = "2 3\n0 0 0.5\n0 1 0.5\n1 1 1\n"
LAB = '0="init" 1="goal"\n0: 0\n1: 1\n'
BAD_PRISM = {
    "row_sum": ({"m.tra": TRA.replace("0 1 0.5", "0 1 0.25")}, "m.tra", ["line 2", "probabilities of state 0"]),
    "state_range": ({"m.tra": TRA.replace("1 1 1", "2 1 1")}, "m.tra", ["line 4", "state 2 is out of range"]),
    "target_range": ({"m.tra": TRA.replace("1 1 1", "1 5 1")}, "m.tra", ["line 4", "target state 5 is out of range"]),
    "malformed": ({"m.tra": TRA.replace("0 1 0.5", "0 1 half")}, "m.tra", ["line 3", "probability 'half'"]),
    "count": ({"m.tra": TRA.replace("2 3", "2 4")}, "m.tra", ["line 1", "header: 4 transitions", "lists 3"]),
    "header": ({"m.tra": TRA.replace("2 3", "two 3")}, "m.tra", ["line 1", "header: expected"]),
    "fields": ({"m.tra": TRA.replace("1 1 1", "1 1")}, "m.tra", ["line 4", "expected 's t p [action]'"]),
    "missing_state": (
        {"m.tra": "3 3\n0 0 0.5\n0 1 0.5\n1 1 1\n"},
        "m.tra",
        ["line 1", "header: 3 states, but state 2 has no transitions"],
    ),
    "missing_choice": ({"m.tra": "1 2 2\n0 0 0 1\n0 2 0 1\n"}, "m.tra", ["line 3", "state 0: choice 1 is missing"]),
    "choices_count": ({"m.tra": "1 3 2\n0 0 0 1\n0 1 0 1\n"}, "m.tra", ["line 1", "header: 3 choices"]),
    "pomdp": ({"m.tra": "1 1 1 1\n0 0 0 1 0\n"}, "m.tra", ["line 1", "POMDP"]),
    "action_sets": (
        {"m.tra": "2 3 3\n0 0 0 1\n0 1 1 1\n1 0 1 1\n"},
        "m.tra",
        ["line 4", "state 1 has 1 action, state 0 has 2"],
    ),
    "lab_index": (
        {"m.tra": TRA, "m.lab": LAB.replace("1: 1", "1: 7")},
        "m.lab",
        ["line 3", "label index 7 is not declared in line 1 (0..1)"],
    ),
    "lab_state": ({"m.tra": TRA, "m.lab": LAB.replace("1: 1", "9: 1")}, "m.lab", ["line 3", "state 9 is out of range"]),
    "lab_duplicate": (
        {"m.tra": TRA, "m.lab": LAB + "0: 1\n"},
        "m.lab",
        ["line 4", "state 0 is listed twice (first at line 2)"],
    ),
    "lab_header": (
        {"m.tra": TRA, "m.lab": LAB.replace('1="goal"', '2="goal"')},
        "m.lab",
        ["line 1", "label index 2 where 1 was expected"],
    ),
    "lab_malformed": ({"m.tra": TRA, "m.lab": LAB.replace("1: 1", "1: x")}, "m.lab", ["line 3", "label index 'x'"]),
    "srew_state": ({"m.tra": TRA, "m.srew": "2 1\n4 1.0\n"}, "m.srew", ["line 2", "state 4 is out of range"]),
    "srew_count": ({"m.tra": TRA, "m.srew": "2 2\n0 1.0\n"}, "m.srew", ["line 1", "header: 2 rewards", "lists 1"]),
    "srew_value": ({"m.tra": TRA, "m.srew": "2 1\n0 lots\n"}, "m.srew", ["line 2", "reward 'lots'"]),
    "srew_states": ({"m.tra": TRA, "m.srew": "3 0\n"}, "m.srew", ["line 1", "header: 3 states"]),
    "trew_missing": ({"m.tra": TRA, "m.trew": "2 1\n1 0 2\n"}, "m.trew", ["line 2", "no transition from state 1 to 0"]),
    "trew_count": (
        {"m.tra": TRA, "m.trew": "2 1\n0 0 2\n0 1 3\n"},
        "m.trew",
        ["line 1", "header: 1 rewards", "lists 2"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PRISM))
def test_bad_prism_files_are_refused_in_one_line(tmp_path, case):
    files, culprit, fragments = BAD_PRISM[case]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    _refused(tmp_path / "m.tra", *fragments, culprit=culprit)


def test_prism_choice_rewards_must_agree_within_a_choice(tmp_path):
    (tmp_path / "m.tra").write_text("2 2 3\n0 0 0 0.5\n0 0 1 0.5\n1 0 1 1\n")
    (tmp_path / "m.trew").write_text("2 2 2\n0 0 0 2\n0 0 1 3\n")
    _refused(tmp_path / "m.tra", "m.trew line 3: state 0, choice 0: reward 3.0 differs", culprit="m.trew")


def test_windows_line_ends_and_unnamed_reward_structures(tmp_path):
    path = tmp_path / "crlf.drn"
    path.write_bytes((DATA / "tiny.drn").read_bytes().replace(b"\n", b"\r\n"))
    _assert_same(read_model(path), read_model(DATA / "tiny.drn"), exact=True)
    (tmp_path / "u.tra").write_text(TRA)
    (tmp_path / "u1.srew").write_text("2 1\n0 1\n")
    (tmp_path / "u2.srew").write_text('# Reward structure "b"\n# State rewards\n2 1\n1 2\n')
    (tmp_path / "u3.srew").write_text("2 1\n1 3\n")
    m = read_model(tmp_path / "u.tra")
    assert m.reward_names == ("1", "b", "3")  # unnamed ones by position, as PRISM's R{1}
    np.testing.assert_array_equal(m.reward_vector("3"), [0, 3])


def test_from_stormpy_names_the_extra_when_stormpy_is_missing(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "stormpy", None)
    with pytest.raises(InputError, match="stormpy is not installed; it comes with the 'storm' extra"):
        stormpy_data(object())


def test_files_and_arguments_are_checked(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_model(tmp_path / "absent.drn")
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(InputError, match="unknown model file type '.txt'"):
        read_model(tmp_path / "m.txt")
    with pytest.raises(InputError, match="a DRN file holds its own labels"):
        read_model(DATA / "tiny.drn", labels=DATA / "tiny.lab")
    with pytest.raises(InputError, match="align_actions"):
        read_model(DATA / "tiny.drn", align_actions="label")
    (tmp_path / "e.drn").write_text("")
    with pytest.raises(InputError, match="@model: missing"):
        read_drn(tmp_path / "e.drn")
    (tmp_path / "z.drn").write_bytes(b"@type: DTMC\n\xff\xfe\n")
    with pytest.raises(InputError, match="line 2: not UTF-8 text"):
        read_drn(tmp_path / "z.drn")


# ------------------------------------------------------------------------------ stormpy round trips
DTMCS = [
    ("dtmc/die.pm", None, False),
    ("dtmc/die.pm", None, True),
    ("dtmc/brp.pm", {"N": 16, "MAX": 2}, False),
    ("dtmc/brp.pm", {"N": 16, "MAX": 2}, True),
    ("dtmc/crowds-5-5.pm", None, False),
    ("dtmc/leader-3-5.pm", None, True),
    ("dtmc/nand-5-2.pm", None, False),
]


@needs_stormpy
@pytest.mark.parametrize(
    "name,constants,exact", DTMCS, ids=[f"{d[0]}-{'rational' if d[2] else 'double'}" for d in DTMCS]
)
def test_stormpy_chain_drn_and_prism_files_agree(tmp_path, name, constants, exact):
    model = _build(_stormpy_files() / name, constants, exact)
    direct = stormpy_data(model)
    assert direct.model_type == "dtmc" and direct.n_states == model.nr_states
    assert direct.n_transitions == model.nr_transitions
    drn = read_model(_export_drn(model, tmp_path / "m.drn"))
    _assert_same(direct, drn, exact=exact)
    prism = read_model(_export_prism(model, tmp_path / "p"))
    _assert_same(direct, prism, exact=True, names=False)


@needs_stormpy
def test_drn_with_17_digits_gives_the_model_bit_for_bit(tmp_path):
    pytest.importorskip("stormpy.developer", reason="this stormpy has no exporter options")
    model = _build(_stormpy_files() / "dtmc" / "brp.pm", {"N": 16, "MAX": 2})
    direct = stormpy_data(model)
    _assert_same(direct, read_model(_export_drn(model, tmp_path / "m.drn", precision=17)), exact=True)


@needs_stormpy
@pytest.mark.parametrize("exact", [False, True], ids=["double", "rational"])
def test_stormpy_mdp_round_trip(tmp_path, exact):
    model = _build(DATA / "corridor.nm", exact=exact)
    direct = stormpy_data(model)
    assert (direct.model_type, direct.n_states, direct.n_actions, direct.actions) == ("mdp", 4, 2, ("left", "right"))
    assert direct.reward_names == ("steps", "at_goal") or set(direct.reward_names) == {"steps", "at_goal"}
    # rewards: 1 for left, 2 for right, and 5 in the goal cell
    left = direct.actions.index("left")
    R = direct.reward_matrix("steps")
    np.testing.assert_array_equal(R[:, left], 1.0)
    np.testing.assert_array_equal(R[:, 1 - left], 2.0)
    np.testing.assert_array_equal(direct.reward_matrix("at_goal")[:, 0], [0, 0, 0, 5])
    np.testing.assert_array_equal(direct.reward_matrix("goal"), [[0, 0], [0, 0], [0, 0], [1, 1]])
    drn = read_model(_export_drn(model, tmp_path / "m.drn"))
    _assert_same(direct, drn, exact=exact)
    prism = read_model(_export_prism(model, tmp_path / "p"))
    _assert_same(direct, prism, exact=True)


@needs_stormpy
def test_stormpy_mdp_with_differing_action_sets_is_refused(tmp_path):
    model = _build(_stormpy_files() / "mdp" / "two_dice.nm")
    with pytest.raises(InputError, match=r"^stormpy model line|^stormpy model: state \d+ has 1 action, state 0 has 2"):
        stormpy_data(model)
    path = _export_drn(model, tmp_path / "two_dice.drn")
    message = _refused(path, "has 1 action, state 0 has 2; bisimkit needs the same action set in every state")
    line = int(message.split(" line ")[1].split(":")[0])
    state = int(message.split(": state ")[1].split(" ")[0])
    assert path.read_text().split("\n")[line - 1].startswith(f"state {state}")


@needs_stormpy
def test_stormpy_shipped_drn_files_outside_scope_are_refused():
    files = _stormpy_files()
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for name, fragment in (("pdtmc/die.drn", "@parameters: p q"), ("ctmc/dft.drn", "@type: CTMC")):
            copy = Path(d) / Path(name).name
            shutil.copy(files / name, copy)
            _refused(copy, fragment, "line")


@needs_stormpy
def test_from_stormpy_refuses_a_ctmc():
    model = _build(_stormpy_files() / "ctmc" / "polling2.sm", prism_compatibility=True)
    with pytest.raises(InputError, match="stormpy model: model type CTMC is not supported"):
        stormpy_data(model)
