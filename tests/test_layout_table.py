"""The layout table of docs/development.md matches the tree: every module of the packages is in it,
and every path it names exists; the tests mirror the modules (``tests/test_<module>.py``), and the
feature and integration test files are the ones the page lists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bisimkit", "bisimkit_cli", "bisimkit_runs", "validation", "figures", "agents", "benchmarks")


def table_paths(text: str) -> list[str]:
    """The paths of the first column of the Layout table: a cell's first path is relative to the root,
    the bare names after it to that path's folder (the root's, after a file of the root)."""
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    paths = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        names = re.findall(r"`([^`]+)`", line.split(" | ")[0])
        folder = names[0].rpartition("/")[0] if not names[0].endswith("/") else names[0].rstrip("/")
        paths += [name if "/" in name or not folder else f"{folder}/{name}" for name in names]
    return paths


def modules() -> list[str]:
    """Every module and script of the packages (``__init__``/``__main__`` belong to their package)."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if (
                path.suffix in (".py", ".sh")
                and "__pycache__" not in path.parts
                and path.stem not in ("__init__", "__main__")
            ):
                found.append(path.relative_to(ROOT).as_posix())
    return found


def covered(module: str, paths: list[str]) -> bool:
    """Named in the table, or inside a subpackage the table names as a folder (``bisimkit/gaussian/``;
    a top-level package folder alone covers nothing: its modules are listed)."""
    return module in paths or any(p.endswith("/") and p.count("/") >= 2 and module.startswith(p) for p in paths)


def test_the_table_parser_reads_cells():
    text = (
        "## Layout\n\n| path | what |\n|---|---|\n| `a/b.py`, `c.py`, `d/e/` | x |\n| `f/` | y |\n"
        "| `g.txt`, `h.txt` | z |\n\n## Next\n"
    )
    assert table_paths(text) == ["a/b.py", "a/c.py", "d/e/", "f/", "g.txt", "h.txt"]
    assert covered("d/e/g.py", ["d/e/"]) and not covered("f/g.py", ["f/"])


def test_every_module_is_in_the_layout_table():
    paths = table_paths((ROOT / "docs" / "development.md").read_text())
    assert [m for m in modules() if not covered(m, paths)] == []


def test_every_path_of_the_layout_table_exists():
    paths = table_paths((ROOT / "docs" / "development.md").read_text())
    assert [p for p in paths if not (ROOT / p).exists()] == []


def feature_tests(text: str) -> list[str]:
    """The feature test files listed in docs/development.md's Tests section (the first code name of each item)."""
    block = text.split("<!-- feature tests -->", 1)[1].split("<!-- /feature tests -->", 1)[0]
    return re.findall(r"`([a-z_0-9]+)`(?= \(| and )", block)


def mirror_names() -> set[str]:
    """What ``tests/test_<name>.py`` may mirror: each module's name, and ``<subpackage>_<module>``."""
    names = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            parts = parts[:-1] if parts[-1] in ("__init__", "__main__") else parts
            names |= {parts[-1], "_".join(parts[-2:])} if len(parts) > 1 else {parts[-1]}
    return names


def test_the_feature_list_parser_reads_items():
    text = "<!-- feature tests -->\n`a` (x), `b_c` and `d` (y `e` z),\n<!-- /feature tests -->"
    assert feature_tests(text) == ["a", "b_c", "d"]


def integration_tests(text: str) -> list[str]:
    """The integration test files listed in docs/development.md's Tests section (``tests/integration/``)."""
    block = text.split("<!-- integration tests -->", 1)[1].split("<!-- /integration tests -->", 1)[0]
    return re.findall(r"`([a-z_0-9]+)`(?= \(| and )", block)


def test_every_test_file_mirrors_a_module_or_is_a_listed_feature():
    features = feature_tests((ROOT / "docs" / "development.md").read_text())
    names = mirror_names()
    stray = [t.name for t in sorted((ROOT / "tests").glob("test_*.py")) if t.stem[5:] not in names | set(features)]
    assert stray == []
    assert [f for f in features if not (ROOT / "tests" / f"test_{f}.py").exists()] == []
    assert [f for f in features if f in names] == []  # a mirror is not a feature


def test_the_integration_folder_holds_the_listed_files():
    listed = integration_tests((ROOT / "docs" / "development.md").read_text())
    assert sorted(t.stem[5:] for t in (ROOT / "tests" / "integration").glob("test_*.py")) == sorted(listed)
    assert not {f"test_{name}.py" for name in listed} & {t.name for t in (ROOT / "tests").glob("test_*.py")}


# ------------------------------------------------------------------ tests by module
def has_logic(path: Path) -> bool:
    """Whether a module defines a function or a class (a module of constants or a script's docstring has none)."""
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for node in ast.parse(path.read_text()).body
    )


def mirror_names_of(module: str) -> set[str]:
    """The names ``tests/test_<name>.py`` of a module may take: its own, or with its package's in front, or, in a
    subpackage (``agents/sweep/``), the subpackage's: its modules are tested as one unit."""
    parts = Path(module).with_suffix("").parts
    return {parts[-1], "_".join(parts[-2:])} | ({parts[-2]} if len(parts) > 2 else set())


def modules_with_logic() -> list[str]:
    """Every Python module of the packages that defines a function or a class."""
    return [m for m in modules() if m.endswith(".py") and has_logic(ROOT / m)]


def test_the_mirror_rule_reads_modules():
    assert mirror_names_of("agents/metric_check/settings.py") == {"settings", "metric_check_settings", "metric_check"}
    assert mirror_names_of("figures/style.py") == {"style", "figures_style"}
    assert has_logic(ROOT / "agents" / "agent.py") and not has_logic(ROOT / "bisimkit_runs" / "names.py")


def test_every_module_with_logic_has_its_test_file():
    tests = {t.stem[5:] for t in (ROOT / "tests").glob("test_*.py")}
    assert sorted(m for m in modules_with_logic() if not mirror_names_of(m) & tests) == []
