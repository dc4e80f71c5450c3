"""Dependencies point one way, and importing a module changes nothing in the environment.

Layers (each may import only itself and the layers to its left)::

    bisimkit (core, losses)  <-  validation  <-  figures  <-  bisimkit_cli (command lines)
    bisimkit  <-  bisimkit_runs (run folders, sweeps, aggregates, tables)  <-  figures, agents

``agents`` imports ``bisimkit`` (its losses, errors, files) and ``bisimkit_runs`` (the files it writes),
never ``validation`` or ``figures``; ``figures`` never imports ``agents``. The scripts (``__main__.py``:
run, never imported) are the entry points and may import any layer: ``python -m agents.sweep gather`` and
``python -m agents.metric_check`` draw with ``figures``, ``python -m figures.nearest_neighbours`` rolls out
an agent. Every module is imported in a fresh interpreter, which reports the project packages that got
imported and whether ``os.environ`` changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: under pytest-xdist, one worker runs this file (its module fixture imports every module once)
pytestmark = pytest.mark.xdist_group("layers")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("bisimkit", "bisimkit_cli", "bisimkit_runs", "validation", "figures", "agents")
#: What each package may import (besides third-party code).
ALLOWED = {
    "bisimkit": {"bisimkit"},
    "validation": {"bisimkit", "validation"},
    "bisimkit_runs": {"bisimkit", "bisimkit_runs"},
    "figures": {"bisimkit", "validation", "bisimkit_runs", "figures"},
    "bisimkit_cli": {"bisimkit", "bisimkit_cli", "validation", "figures"},
    "agents": {"bisimkit", "bisimkit_runs", "agents"},
}
#: ``bisimkit.cli`` names three functions of the command line (``bisimkit_cli.core``) under the core's name for code
#: written against it; it is the one core module that imports the top layer, and no core module imports it.
CORE_ALIAS = "bisimkit.cli"
#: Packages whose modules must leave ``os.environ`` alone at import (agents sets MUJOCO_GL only
#: when it first loads dm_control, in agents.compat.distracting_control).
ENV_CHECKED = ("bisimkit", "bisimkit_cli", "bisimkit_runs", "validation", "figures", "agents")

PROBE = """
import importlib, json, os, sys
before = dict(os.environ)
importlib.import_module(sys.argv[1])
packages = sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[2].split(',')))
print(json.dumps({"packages": packages, "environ_changed": sorted(
    k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))}))
"""


def modules(package: str) -> list[str]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__":
            continue  # run, never imported
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def probe(module: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, module, ",".join(PROJECT)], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert proc.returncode == 0, f"importing {module} failed:\n{proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: One fresh interpreter loads the third-party libraries the modules share, then imports each project module in a
#: forked child of its own: every child starts from an interpreter with no project module loaded, as a fresh
#: process would, at a fraction of the cost. The checks read only project packages and ``os.environ``.
FORK_PROBE = """
import importlib, json, os, sys
project = set(sys.argv[1].split(','))
for lib in ("numpy", "scipy.sparse", "scipy.optimize", "scipy.stats", "matplotlib", "torch"):
    try:
        importlib.import_module(lib)
    except ImportError:
        pass
assert not {m.split('.')[0] for m in sys.modules} & project
results = {}
for name in sys.argv[2:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            before = dict(os.environ)
            importlib.import_module(name)
            out = {"packages": sorted({m.split('.')[0] for m in sys.modules} & project), "environ_changed": sorted(
                k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))}
        except BaseException as exc:
            out = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    results[name] = json.loads(b"".join(chunks))
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def imports() -> dict[str, dict]:
    names = [m for package in ALLOWED for m in modules(package)]
    proc = subprocess.run(
        [sys.executable, "-c", FORK_PROBE, ",".join(PROJECT), *names],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    failed = {m: r["error"] for m, r in found.items() if "error" in r}
    assert failed == {}, f"importing these modules failed: {failed}"
    return found


@pytest.mark.parametrize("package", list(ALLOWED))
def test_dependencies_point_one_way(imports, package):
    wrong = {}
    for module, found in imports.items():
        if module.split(".")[0] != package:
            continue
        allowed = ALLOWED[package] | ({"bisimkit_cli"} if module == CORE_ALIAS else set())
        extra = set(found["packages"]) - allowed
        if extra:
            wrong[module] = sorted(extra)
    assert wrong == {}


@pytest.mark.parametrize("package", ENV_CHECKED)
def test_importing_leaves_the_environment_alone(imports, package):
    changed = {
        m: found["environ_changed"]
        for m, found in imports.items()
        if m.split(".")[0] == package and found["environ_changed"]
    }
    assert changed == {}


def test_core_package_does_not_reach_up():
    """``import bisimkit`` (what a library user does) loads the core only."""
    assert probe("bisimkit")["packages"] == ["bisimkit"]


#: Never imported from these packages, not even inside a function (the import-time check
#: above cannot see a deferred import, nor one for type checking only). The ``__main__.py`` scripts are entry
#: points, not library code, and ``bisimkit/cli.py`` the alias of the command line's functions (``CORE_ALIAS``).
NEVER = {
    "bisimkit": {"validation", "figures", "agents", "bisimkit_cli", "bisimkit_runs"},
    "validation": {"figures", "agents", "bisimkit_cli", "bisimkit_runs"},
    "bisimkit_runs": {"validation", "figures", "agents", "bisimkit_cli"},
    "figures": {"agents", "bisimkit_cli"},
    "agents": {"validation", "figures", "bisimkit_cli"},
}


@pytest.mark.parametrize("package", list(NEVER))
def test_no_deferred_import_reaches_up(package):
    import ast

    wrong = []
    for path in sorted((ROOT / package).rglob("*.py")):
        if path.name == "__main__.py" or path == ROOT / "bisimkit" / "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            else:
                continue
            wrong += [
                f"{path.relative_to(ROOT)}:{node.lineno} {t}" for t in targets if t.split(".")[0] in NEVER[package]
            ]
    assert wrong == []


def _import_graph() -> dict[str, set[str]]:
    """Every project module's imports of project modules, top-level and inside functions alike."""
    import ast

    names = {m for package in PROJECT for m in modules(package)}
    graph: dict[str, set[str]] = {}
    for module in sorted(names):
        path = ROOT / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([base] if base else []))
                # ``from pkg import name``: the submodule pkg.name when there is one, else pkg itself
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in names and t != module}
        graph[module] = edges
    return graph


def test_no_import_cycles():
    """No module reaches itself through the imports of project modules (deferred imports included)."""
    graph = _import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == []


def test_core_never_imports_the_command_line():
    """No core module imports the command line, neither ``bisimkit_cli`` nor its alias ``bisimkit.cli``
    (the ``python -m bisimkit`` script runs it and is never imported)."""
    graph = _import_graph()
    users = sorted(
        m
        for m, edges in graph.items()
        if m.split(".")[0] == "bisimkit"
        and m != CORE_ALIAS
        and any(e == CORE_ALIAS or e.split(".")[0] == "bisimkit_cli" for e in edges)
    )
    assert users == []


def test_the_core_alias_of_the_command_line_only_names_its_functions():
    """``bisimkit/cli.py`` holds no code of its own: a docstring, one import from ``bisimkit_cli.core``, ``__all__``."""
    import ast

    body = ast.parse((ROOT / "bisimkit" / "cli.py").read_text()).body
    kinds = [type(node).__name__ for node in body]
    assert kinds == ["Expr", "ImportFrom", "Assign"]
    assert body[1].module == "bisimkit_cli.core"
    assert sorted(a.name for a in body[1].names) == sorted(ast.literal_eval(body[2].value))


def deferred_imports_without_reason(source: str) -> list[int]:
    """Lines of imports inside a function with no comment saying why: on the line itself, on the line
    above, or on the import just above it in the same group (one reason covers a block of imports)."""
    import ast

    lines = source.splitlines()

    def reasoned(lineno: int) -> bool:
        if "#" in lines[lineno - 1]:
            return True
        above = lineno - 2
        while above >= 0 and not lines[above].strip():
            above -= 1
        text = lines[above].strip() if above >= 0 else ""
        return text.startswith("#") or (text.startswith(("import ", "from ")) and reasoned(above + 1))

    wrong = set()
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            wrong |= {
                node.lineno
                for node in ast.walk(fn)
                if isinstance(node, ast.Import | ast.ImportFrom) and not reasoned(node.lineno)
            }
    return sorted(wrong)


def test_deferred_import_rule_reads_comments():
    source = (
        "def f():\n    import torch  # the agents extra\n\n    from x import y\n\n"
        "def g():\n    import json\n    return json\n\n"
        "def h():\n    # start-up cost\n    import scipy\n"
    )
    assert deferred_imports_without_reason(source) == [7]


def test_every_deferred_import_says_why():
    """Imports inside functions only for an optional extra or a measured start-up cost, each with a
    one-line reason (docs/development.md, "Imports")."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PROJECT
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in deferred_imports_without_reason(path.read_text())
    ]
    assert wrong == []


STARTUP_PROBE = """
import json, sys
{code}
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} or m in {heavy!r})))
"""


def _loaded(code: str, heavy: tuple[str, ...]) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", STARTUP_PROBE.format(code=code, heavy=heavy)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_bisimkit_loads_no_heavy_library_and_its_names_on_first_use():
    """``import bisimkit`` loads neither numpy, scipy, the compiled kernels, torch nor matplotlib
    (docs/performance.md#start-up); every name of ``__all__`` is still there."""
    assert _loaded("import bisimkit", ("numpy", "scipy", "bisimkit_native", "numba", "torch", "matplotlib")) == []
    assert _loaded("import bisimkit.gaussian", ("scipy",)) == []
    assert "scipy.special" in _loaded("from bisimkit.gaussian import *", ("scipy.special",))
    names = _loaded(
        "import bisimkit\nfrom bisimkit import *\n"
        "assert all(n in dir(bisimkit) for n in bisimkit.__all__)\n"
        "print(len([globals()[n] for n in bisimkit.__all__]))",
        ("numba", "bisimkit_native"),
    )
    assert names == []  # the compiled kernels are loaded when a kernel is first called (bisimkit.kernels)


def test_a_core_command_starts_without_the_added_commands_modules():
    """``bisimkit solve`` and the other core commands do not import verify's and compare's
    modules (validation, hypothesis, figures) or the Gaussian solvers (scipy.special)."""
    code = "from bisimkit_cli.main import main\nassert main(['metrics']) == 0"
    assert _loaded(code, ("validation", "hypothesis", "figures", "scipy.special")) == []
    verify_help = (
        "from bisimkit_cli.main import main\ntry:\n    main(['verify', '--help'])\nexcept SystemExit:\n    pass"
    )
    assert "validation" in _loaded(verify_help, ("validation",))


# ------------------------------------------------------------------ public names only
#: Where the imports of private names are looked for: the packages, the benchmarks and the tests.
PUBLIC_NAMES_CHECKED = (*PROJECT, "benchmarks", "tests")
#: Imports of a core module's private name by another module, named until the core's rebuild makes them
#: public (the core, ``bisimkit/``, is not changed here); the list only shrinks.
CORE_PRIVATE_IMPORTS = {
    "bisimkit/between.py: bisimkit.engine._Reporter",
    "bisimkit/engine_torch.py: bisimkit.engine._Reporter",
    "tests/test_engine_torch.py: bisimkit.engine_torch._certificate",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(source: str, module: str, is_package: bool, project: set[str]) -> list[str]:
    """``module.NAME`` of each private name ``source`` (the text of ``module``) imports from another project module
    (a top-level name in ``project``), relative imports resolved; ``import a._b`` counts too."""
    import ast

    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base.split(".")[0] in project:
                found += [f"{base}.{a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            found += [
                a.name
                for a in node.names
                if a.name.split(".")[0] in project and any(_private(p) for p in a.name.split("."))
            ]
    return found


def test_the_private_import_rule_resolves_relative_imports():
    source = (
        "from .engine import _Reporter, solve\nfrom numpy import _core\nimport bisimkit._x\n"
        "def f():\n    from ..files import __all__, _write\n"
    )
    found = private_imports(source, "bisimkit.sub.mod", False, {"bisimkit"})
    assert sorted(found) == ["bisimkit._x", "bisimkit.files._write", "bisimkit.sub.engine._Reporter"]
    assert private_imports(source, "pkg", True, {"bisimkit"}) == ["bisimkit._x"]  # pkg.engine is not the project's


def test_modules_import_only_each_others_public_names():
    """No module imports another's private name (``from x import _name``), so a module's underscore names are its
    own to change; the core's known ones are listed (``CORE_PRIVATE_IMPORTS``), and listed only while they exist."""
    project = set(PROJECT) | {"benchmarks"} | {p.stem for p in (ROOT / "tests").glob("*.py")}
    found = set()
    for package in PUBLIC_NAMES_CHECKED:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            module = ".".join(parts[1:] if package == "tests" else parts)
            is_package = path.name == "__init__.py"
            if is_package:
                module = module.rpartition(".")[0]
            found |= {
                f"{path.relative_to(ROOT).as_posix()}: {name}"
                for name in private_imports(path.read_text(), module, is_package, project)
            }
    assert found - CORE_PRIVATE_IMPORTS == set()
    assert CORE_PRIVATE_IMPORTS - found == set()  # a fixed one leaves the list


def test_no_module_exports_a_private_name():
    """``__all__`` (what ``from module import *`` and the docs take as a module's names) holds public names only."""
    import ast

    wrong = []
    for package in PROJECT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                    wrong += [f"{path.relative_to(ROOT)}: {n}" for n in ast.literal_eval(node.value) if _private(n)]
    assert wrong == []
