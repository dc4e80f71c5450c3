"""Sphinx configuration of bisimkit's documentation site: the Markdown pages of docs/ (MyST), the API
reference from the docstrings (autodoc), the furo theme. Built offline, warnings as errors, by
``tests/integration/test_docs_site.py``; by hand::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's packages, for autodoc

import bisimkit  # noqa: E402  (after the checkout is on the path)

project = "bisimkit"
release = version = bisimkit.__version__
author = "the bisimkit authors"
copyright = "the bisimkit authors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.mathjax"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# GitHub's heading anchors (``page.md#a-heading``), the ones the pages link to.
myst_heading_anchors = 6
myst_enable_extensions = ["dollarmath", "colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": False}

html_theme = "furo"
html_title = f"bisimkit {release}"
html_static_path: list[str] = []
# Offline: no intersphinx, nothing fetched.


# ---------------------------------------------------------------------------------------------- API pages
#: The modules whose public names (``__all__``, or the names listed) the API reference documents, in order.
API_MODULES = {
    "bisimkit": None,
    "bisimkit.model_files": ["ModelData", "read_drn", "read_prism", "stormpy_data"],
    "bisimkit.gaussian": None,
    "bisimkit.losses": None,
}


def attribute_comment_module(package: str, name: str) -> str | None:
    """The module of ``package`` whose source documents ``name`` with a ``#:`` comment, if any: a
    package's data names are imported from their modules, and their comments stay there."""
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    root = importlib.import_module(package)
    candidates = [package] + [f"{package}.{m.name}" for m in pkgutil.iter_modules(root.__path__)]
    for module in candidates:
        try:
            docs = ModuleAnalyzer.for_module(module).find_attr_docs()
        except Exception:  # noqa: BLE001 - a module without source; the next one may hold the comment
            continue
        if ("", name) in docs:
            return module
    return None


def data_block(module_name: str, name: str, value) -> list[str]:
    """A data name: ``autodata`` from the module whose ``#:`` comment documents it, or, where no
    comment does, its type and its keys (a table) or items (a tuple)."""
    package = module_name if hasattr(importlib.import_module(module_name), "__path__") else None
    where = attribute_comment_module(package, name) if package else module_name
    if where is not None:
        return [f".. autodata:: {where}.{name}", "   :no-value:", ""]
    lines = [f".. py:data:: {name}", f"   :type: {type(value).__name__}", ""]
    if isinstance(value, (dict, tuple, list)) and all(isinstance(k, str) for k in value):
        what = "keys" if isinstance(value, dict) else "items"
        lines += [f"   Its {what}: " + ", ".join(f"``{k}``" for k in value) + ".", ""]
    return lines


def api_block(module_name: str) -> str:
    """An autodoc directive for each public name of a module: ``autoclass`` (with members),
    ``autofunction``, or the data name's block (:func:`data_block`)."""
    import inspect

    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:  # an optional extra (torch) not installed where the site is built
        return f"`{module_name}` needs the `{exc.name}` module, which is not installed where this page was built.\n"
    names = API_MODULES[module_name] or list(module.__all__)
    lines = ["```{eval-rst}", f".. currentmodule:: {module_name}", ""]
    for name in names:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            lines += [f".. autoclass:: {name}", "   :members:", ""]
        elif callable(obj):
            lines += [f".. autofunction:: {name}", ""]
        else:
            lines += data_block(module_name, name, obj)
    return "\n".join(lines) + "```\n"


#: A line ``name : description`` (or ``name, other : description``) anywhere in a docstring: a field.
FIELD = re.compile(r"^[A-Za-z_]\w*(?:, [A-Za-z_]\w*)* : \S")
#: The sections of a docstring whose lines ``name : description`` name a parameter, attribute or result.
NAMED_SECTIONS = {"Parameters", "Other Parameters", "Attributes", "Returns", "Yields", "Raises", "Warns"}


def numpy_sections(app, what, name, obj, options, lines):
    """The docstrings' sections in the numpy layout (a title over a row of dashes), where each entry
    reads ``name : description`` (the description, not a type, after the colon): the title becomes a
    rubric and each entry a definition list item, ``name`` over its indented description."""
    out, section, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            line.strip()
            and not line.startswith(" ")
            and set(nxt.strip()) == {"-"}
            and len(nxt.strip()) == len(line.strip())
        ):
            section = line.strip()
            out += ["", f".. rubric:: {section}", ""]
            i += 2
            continue
        named = section in NAMED_SECTIONS and line and not line.startswith(" ") and " : " in line
        if named or FIELD.match(line):
            term, _, text = line.partition(" : ")
            out += ([""] if out and out[-1].strip() else []) + [term, f"    {text}"]
        elif section in NAMED_SECTIONS and line and not line.startswith(" ") and line.rstrip().endswith(" :"):
            out.append(line.rstrip()[:-2])
        else:
            out.append(line)
        i += 1
    lines[:] = out


def close_lists(app, what, name, obj, options, lines):
    """The docstrings end a list or a definition with the next line of text, without the blank line
    reStructuredText asks for: add it wherever the text's indentation drops between two lines (a
    bullet's text is indented past its marker)."""

    def indent(text: str) -> int:
        body = text.lstrip()
        return len(text) - len(body) + (2 if body[:2] in ("* ", "- ", "+ ") else 0)

    i = 1
    while i < len(lines):
        above, line = lines[i - 1], lines[i]
        if above.strip() and line.strip() and indent(line) < indent(above):
            lines.insert(i, "")
            i += 1
        i += 1


def expand_api(app, docname, source):
    """Replace each ``<!-- api: MODULE -->`` line of a page with the module's API block."""
    source[0] = re.sub(r"^<!-- api: ([\w.]+) -->$", lambda m: api_block(m.group(1)), source[0], flags=re.M)


def folder_links(app, docname, source):
    """A link to a folder of the repository (``[records](../benchmarks/results/lmc/)``) opens the folder on
    GitHub, but a site has no page for it: there it reads as the text and the folder's path."""
    here = (Path(app.srcdir) / docname).parent

    def plain(m: re.Match) -> str:
        target = (here / m.group(2)).resolve()
        if not target.is_dir():
            return m.group(0)
        return f"{m.group(1)} (`{target.relative_to(ROOT).as_posix()}/`)"

    source[0] = re.sub(r"\[([^\]]+)\]\(((?![a-z]+:)[^)#\s]+/)\)", plain, source[0])


def setup(app):
    app.connect("source-read", expand_api)
    app.connect("source-read", folder_links)
    app.connect("autodoc-process-docstring", numpy_sections)
    app.connect("autodoc-process-docstring", close_lists, priority=600)  # after the sections' conversion
