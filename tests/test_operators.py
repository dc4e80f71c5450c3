"""The operator registry: one object per operator, asked for what it supports; metric names are read
only there."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

from bisimkit.errors import InputError
from bisimkit.forms import PairLinearForm, SteinForm, TransportTerms
from bisimkit.generators import random_mdp
from bisimkit.operators import (
    ACTION_ORDER_METRICS,
    BETWEEN_METRICS,
    LABELLED_CHAIN_METRICS,
    METRIC_NAMES,
    OPERATORS,
    QUOTIENT_METRICS,
    STATE_ORDER_METRICS,
    TORCH_METRICS,
    operator,
    operator_form,
)
from bisimkit.pairs import PairSpace

ROOT = Path(__file__).resolve().parents[1]
#: Where a metric's name may be compared with a literal: the registry itself.
REGISTRY = ROOT / "bisimkit" / "operators.py"
PACKAGES = ("bisimkit", "bisimkit_cli")
#: Vocabularies of their own that share words with the metric names: the learned losses ("dbc", "psm" are
#: losses there) and the Gaussian MDPs' estimators (which name the operators they estimate).
OTHER_VOCABULARIES = ("bisimkit/losses/", "bisimkit/gaussian/", "bisimkit/fitting.py")


def _names(node: ast.AST) -> list[str]:
    """The metric names a comparison operand spells out: a string literal, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in METRIC_NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _names(element)]
    return []


def metric_literal_comparisons() -> list[str]:
    """Every comparison (``==``, ``!=``, ``in``, ``not in``) with a metric-name literal outside the registry, as
    ``path:line name``; also ``str.startswith`` with one."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if path == REGISTRY or relative.startswith(OTHER_VOCABULARIES):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                operands = []
                if isinstance(node, ast.Compare):
                    operands = [node.left, *node.comparators]
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "startswith"
                ):
                    operands = list(node.args)
                for operand in operands:
                    found += [f"{path.relative_to(ROOT)}:{node.lineno} {name}" for name in _names(operand)]
    return found


def test_no_metric_name_is_compared_outside_the_registry():
    assert metric_literal_comparisons() == []


def test_the_literal_scan_finds_a_comparison(tmp_path, monkeypatch):
    """The scan is not vacuous: a module comparing a metric name is caught."""
    package = tmp_path / "bisimkit"
    package.mkdir()
    (package / "bad.py").write_text('def f(metric):\n    return metric in ("pi", "x") or metric == "eps-bar"\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert metric_literal_comparisons() == ["bisimkit/bad.py:2 pi", "bisimkit/bad.py:2 eps-bar"]


def test_every_metric_has_one_operator_and_its_capabilities_are_consistent():
    assert set(OPERATORS) == set(METRIC_NAMES) and len(METRIC_NAMES) == 12
    for name, op in OPERATORS.items():
        assert op.name == name and operator(name) is op
        assert op.kind in ("transport", "stein", "pair-linear", "derived", "labelled-chain")
        assert (op.relation is not None) == (name in QUOTIENT_METRICS)
        if op.relation is not None:
            assert op.pseudometric and op.kind == "transport"  # a relation is the zero set of a pseudometric
        if op.base is not None:
            assert op.kind == "derived" and operator(op.base).kind == "stein" and not op.between
        if op.uses_ground:
            assert op.term == "ground" and op.action_order  # the entangled coupling follows the action order
        if op.state_order:
            assert op.action_order
        assert op.exact == (op.p == 1)
    assert set(TORCH_METRICS) == {"mico", "mico-reduced", "psm-sampled", "dbc-sampled"}
    assert set(STATE_ORDER_METRICS) == {"eps-bar"} and set(ACTION_ORDER_METRICS) == {"eps", "eps-avg", "eps-bar"}
    assert "mico-reduced" not in BETWEEN_METRICS and "lmc" not in BETWEEN_METRICS and len(BETWEEN_METRICS) == 10
    assert LABELLED_CHAIN_METRICS == ("lmc",) and operator("lmc").term == "labels"


def test_the_labelled_chain_distance_has_no_operator_form():
    """lmc is solved by bisimkit.lmc, not through a form: asking for one is refused in one line."""
    mdp = random_mdp(4, 1, seed=0)
    with pytest.raises(InputError, match=r"^metric: 'lmc' is solved by bisimkit.lmc"):
        operator_form(mdp, "lmc")


def test_an_unknown_name_is_refused_naming_the_choices():
    with pytest.raises(InputError, match="unknown metric 'pj' .*choose from bisim, pi"):
        operator("pj")


@pytest.mark.parametrize(
    "metric", ["bisim", "pi", "psm", "dbc", "dbc-sampled", "eps", "eps-avg", "mico", "psm-sampled", "eps-bar"]
)
def test_one_mdp_is_the_pair_with_itself(metric):
    """The form of one MDP on pairs s < t equals the cross form of the MDP with a copy of itself on the same
    pairs: the operator builds both from the same code, the second reading two MDPs' laws."""
    mdp = random_mdp(5, 2, seed=3, max_support=3)
    twin = random_mdp(5, 2, seed=3, max_support=3)
    pseudo = operator(metric).pseudometric
    pairs = PairSpace(5, diagonal=not pseudo)
    one = operator_form(mdp, metric, "reward", pairs, zero_diagonal=False)
    two = operator_form(mdp, metric, "reward", PairSpace.cross(5, 5), zero_diagonal=False, other=twin)
    rng = np.random.default_rng(0)
    D = rng.random((5, 5))
    D = D + D.T
    if pseudo:
        np.fill_diagonal(D, 0.0)
    if isinstance(one, SteinForm):
        np.testing.assert_allclose(one.apply(D), two.apply(D), rtol=0, atol=1e-12)
        return
    assert isinstance(one, (TransportTerms, PairLinearForm))
    cross = PairSpace.cross(5, 5)
    full = cross.to_matrix(two.apply(cross.from_matrix(D)))
    np.testing.assert_allclose(one.apply(pairs.from_matrix(D)), full[pairs.s, pairs.t], rtol=0, atol=1e-12)
