"""Help text cannot drift from the code: every number and id that ``--help`` states is checked.

For every command (``bisimkit`` and each subcommand, ``python -m agents.train``,
``agents.evaluate``, ``agents.metric_check``, ``agents.sweep`` and its subcommands,
``figures.learning_curves``, ``figures.results_table``):

* every claim or check id (``C4``, ``L1``) exists, and every id range (``C1-C11``)
  spans exactly the ids the code has;
* every ``default N`` an option's help states equals the option's real default (or,
  where argparse's default is None and the code picks it, the constant the code uses);
* the metric names ``solve --metric`` lists are exactly the operators;
* ``verify --quick``'s case count is the one the job uses.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from bisimkit import METRIC_NAMES
from bisimkit.mdp import MODEL_DISCOUNT
from bisimkit_cli import core as core_cli
from bisimkit_cli.main import COMMANDS
from validation.claims import claim_ids
from validation.learning import loss_ids
from validation.verify import DEFAULT_CASES, QUICK_CASES

ID = re.compile(r"\b([CL])(\d+)\b")
RANGE = re.compile(r"\b([CL])(\d+)\s*[-–]\s*\1?(\d+)\b")
DEFAULT = re.compile(r"\bdefault:?\s+(-?\d+(?:\.\d+)?(?:e-?\d+)?)\b(?![/.\w])")  # not "default 1/dimension"
#: The figure scripts and the agents' smaller entry points (``python -m NAME``), whose parsers
#: ``main`` builds.
FIGURE_MODULES = tuple(
    f"figures.{name}"
    for name in (
        "aggregate_table",
        "coupling_study",
        "diagonal",
        "gaussian_grid",
        "gaussian_slice",
        "heatmaps",
        "learning_curves",
        "learning_seeds",
        "loss_convergence",
        "metric_check",
        "nearest_neighbours.__main__",
        "order_dependence",
        "performance",
        "results_table",
        "scatter",
        "sweep_report",
    )
)
AGENT_MODULES = ("agents.carla_env", "agents.videos")
#: Extras the agents' and figures' entry points may lack on a machine without them.
OPTIONAL = {"torch", "dm_control", "distracting_control", "mujoco", "cv2", "submitit", "carla", "tensorboard"}


def _implied_defaults() -> dict[tuple[str, str], float]:
    """(command, dest) -> the value the code uses where argparse's default is None (or suppressed) and
    the code picks it."""
    from bisimkit_cli.compare import DEFAULT_TOL
    from validation.verify_shards import DEFAULT_JOBS

    out = {("bisimkit solve", name): value for name, value in core_cli.MC_DEFAULTS.items()}
    out |= {(f"bisimkit {command}", "discount"): MODEL_DISCOUNT for command in ("solve", "relation", "info")}
    out |= {
        ("bisimkit compare", "tol"): DEFAULT_TOL,
        ("bisimkit verify", "cases"): DEFAULT_CASES,
        ("bisimkit verify", "jobs"): DEFAULT_JOBS,
    }
    try:
        from agents.config import DEFAULT_BETA, SIGMA_INIT
        from agents.sweep.launch import DEFAULTS as SWEEP_DEFAULTS
    except ModuleNotFoundError as exc:
        if exc.name.split(".")[0] not in OPTIONAL:
            raise
    else:
        out |= {("agents.train", "beta"): DEFAULT_BETA, ("agents.train", "transition_sigma_init"): SIGMA_INIT}
        out |= {("agents.sweep launch", name): value for name, value in SWEEP_DEFAULTS.items()}
    return out


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser by its command line."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        out[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, p in action.choices.items():
                    walk(f"{name} {sub}", p)

    walk("bisimkit", core_cli.build_parser(COMMANDS))
    try:
        from agents.evaluate import build_parser as evaluate_parser
        from agents.metric_check.__main__ import build_parser as metric_check_parser
        from agents.sweep.cli import build_parser as sweep_parser
        from agents.train import build_parser as train_parser
    except ModuleNotFoundError as exc:  # the agents extra is missing: the bisimkit commands are still checked
        if exc.name.split(".")[0] not in OPTIONAL:
            raise
    else:
        out["agents.train"] = train_parser()
        out["agents.evaluate"] = evaluate_parser()
        out["agents.metric_check"] = metric_check_parser()
        walk("agents.sweep", sweep_parser())
    for name in FIGURE_MODULES + AGENT_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name.split(".")[0] not in OPTIONAL or name in FIGURE_MODULES:
                raise
            continue
        out[name] = _captured_parser(module)
    return out


def _captured_parser(module) -> argparse.ArgumentParser:
    """The parser a figures module's ``main`` builds (taken at ``parse_args``, which is stopped)."""
    captured: list[argparse.ArgumentParser] = []

    class Stop(Exception):
        pass

    original = argparse.ArgumentParser.parse_args

    def grab(self, *args, **kwargs):
        captured.append(self)
        raise Stop

    argparse.ArgumentParser.parse_args = grab
    try:
        module.main(["--help"])
    except Stop:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    assert captured, f"{module.__name__}.main built no parser"
    return captured[0]


PARSERS = _parsers()


def _texts(parser: argparse.ArgumentParser) -> list[tuple[argparse.Action | None, str]]:
    texts: list[tuple[argparse.Action | None, str]] = [(None, (parser.description or "") + " " + (parser.epilog or ""))]
    texts += [(a, a.help or "") for a in parser._actions if a.help and a.help != argparse.SUPPRESS]
    return texts


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_ids_and_ranges_exist(name):
    known = {"C": claim_ids(), "L": loss_ids()}
    for _, text in _texts(PARSERS[name]):
        for letter, number in ID.findall(text):
            assert f"{letter}{number}" in known[letter], f"{name}: help names {letter}{number}, unknown in the code"
        for letter, lo, hi in RANGE.findall(text):
            ids = known[letter]
            assert (f"{letter}{lo}", f"{letter}{hi}") == (ids[0], ids[-1]), (
                f"{name}: help says {letter}{lo}-{hi}, the code has {ids[0]}-{ids[-1]}"
            )


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_stated_defaults_are_the_real_ones(name):
    implied = _implied_defaults()
    for action, text in _texts(PARSERS[name]):
        if action is None:
            continue
        stated = DEFAULT.findall(text)
        if not stated or isinstance(action.default, bool):
            continue
        default = action.default
        if default is None or default == argparse.SUPPRESS:
            assert (name, action.dest) in implied, (
                f"{name} {action.option_strings}: help says default {stated[0]}; "
                "the test does not know the code's value"
            )
            default = implied[name, action.dest]
        assert isinstance(default, (int, float)), (
            f"{name} {action.option_strings}: a numeric default stated for {default!r}"
        )
        assert float(stated[0]) == pytest.approx(float(default)), (
            f"{name} {action.option_strings}: help says default {stated[0]}, the code uses {default}"
        )


def test_every_figure_script_is_checked():
    """FIGURE_MODULES lists every figures module with a command line (a subpackage's is its ``__main__``)."""
    root = Path(__file__).resolve().parents[1] / "figures"
    scripts = {
        "figures." + ".".join(p.relative_to(root).with_suffix("").parts)
        for p in root.rglob("*.py")
        if "def main(" in p.read_text(encoding="utf-8")
    }
    assert scripts == set(FIGURE_MODULES)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_option_says_what_it_does(name):
    """No option or argument of a command is listed in ``--help`` with its name alone."""
    bare = [
        a.option_strings or [a.dest]
        for a in PARSERS[name]._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction))
        and a.help != argparse.SUPPRESS
        and not (a.help or "").strip()
    ]
    assert not bare, f"{name}: no help for {bare}"


def test_verify_case_counts_are_the_job_constants():
    verify = PARSERS["bisimkit verify"]
    helps = {a.dest: a.help for a in verify._actions}
    assert re.search(rf"\bdefault {DEFAULT_CASES}\b", helps["cases"]) and re.search(
        rf"--quick {QUICK_CASES}\b", helps["cases"]
    )
    assert helps["quick"].startswith(f"{QUICK_CASES} cases per family")


def test_solve_lists_exactly_the_metrics():
    solve = PARSERS["bisimkit solve"]
    text = next(a.help for a in solve._actions if a.dest == "metric")
    listed = text.split("one of: ")[1].split(" (")[0].split(", ")
    assert tuple(listed) == METRIC_NAMES


def test_the_checker_catches_drift():
    """The checks are not vacuous: a stale range and a wrong default are caught."""
    parser = argparse.ArgumentParser(description="claims C1-C10")
    parser.add_argument("--cases", type=int, default=40, help="cases (default 4)")
    PARSERS["drift"] = parser
    try:
        with pytest.raises(AssertionError, match="C1-10"):
            test_ids_and_ranges_exist("drift")
        with pytest.raises(AssertionError, match="default 4"):
            test_stated_defaults_are_the_real_ones("drift")
        PARSERS["drift"] = argparse.ArgumentParser()
        PARSERS["drift"].add_argument("--jobs", type=int, default=None, help="shards (default 5)")
        with pytest.raises(AssertionError, match="does not know the code's value"):
            test_stated_defaults_are_the_real_ones("drift")
    finally:
        del PARSERS["drift"]


def test_gaussian_solve_defaults_are_the_library_ones():
    """``solve``'s Monte Carlo defaults for Gaussian MDPs are those of ``solve_pairs``."""
    import inspect

    from bisimkit.gaussian.pairs import solve_pairs

    params = inspect.signature(solve_pairs).parameters
    assert core_cli.MC_DEFAULTS == {name: params[name].default for name in core_cli.MC_DEFAULTS}


def test_train_help_states_each_presets_values():
    """``agents.train --help`` ends each field's help with ``[preset: value; ...]``: every value
    stated is that preset's value of the field, and every preset that sets the field is named."""
    if "agents.train" not in PARSERS:
        pytest.skip("the agents extra is not installed")
    from agents.config import FIELDS, PRESETS, TrainConfig

    base, checked = TrainConfig(), 0
    for action in PARSERS["agents.train"]._actions:
        if action.dest not in FIELDS or not action.help or action.dest in ("preset",):
            continue
        stated = re.search(r"\[([^\[\]]*)\]\s*$", " ".join(action.help.split()))
        assert stated, f"--{action.dest}: no [preset: value] list"
        pairs = dict(part.split(": ", 1) for part in stated.group(1).split("; "))
        for preset, text in pairs.items():
            value = PRESETS[preset].values.get(action.dest, getattr(base, action.dest))
            shown = (
                {None: "auto", True: "on", False: "off"}.get(value, None)
                if not isinstance(value, (int, float)) or isinstance(value, bool)
                else None
            )
            if shown is None:
                shown = f"{value:,}".replace(",", "_") if isinstance(value, int) and value >= 10_000 else str(value)
            assert text == shown, f"--{action.dest}: help says {preset}: {text}, the preset has {value!r}"
            checked += 1
        for preset, spec in PRESETS.items():
            if action.dest in spec.values and spec.values[action.dest] != getattr(base, action.dest):
                assert preset in pairs, f"--{action.dest}: help does not state the {preset} preset's value"
    assert checked > 40


def test_solve_help_lists_the_metrics_each_option_applies_to():
    """The metric lists ``solve --help`` states in words are the code's lists."""
    from bisimkit.between import BETWEEN_METRICS
    from bisimkit.gaussian.exact import EXACT_METRICS

    helps = {a.dest: " ".join(a.help.split()) for a in PARSERS["bisimkit solve"]._actions if a.help}
    gaussian = re.search(r"\(Gaussian MDPs: ([^)]*)\)", helps["metric"]).group(1).split(", ")
    assert tuple(gaussian) == EXACT_METRICS
    but = re.search(r"for every metric but ([\w, -]+?) \(", helps["against"]).group(1).split(", ")
    assert set(but) == set(METRIC_NAMES) - set(BETWEEN_METRICS)


def test_metric_check_command_defaults_are_learn_metrics():
    """``python -m agents.metric_check``'s defaults are those of the settings ``learn_metric`` runs with."""
    if "agents.metric_check" not in PARSERS:
        pytest.skip("the agents extra is not installed")
    import dataclasses

    from agents.metric_check import Settings

    params = {f.name: f.default for f in dataclasses.fields(Settings)}
    shared = [a for a in PARSERS["agents.metric_check"]._actions if a.dest in params]
    assert len(shared) >= 10
    for action in shared:
        assert action.default == params[action.dest], (
            f"--{action.dest}: the command's default {action.default!r}, the settings' {params[action.dest]!r}"
        )
