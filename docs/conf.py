"""Sphinx configuration of bisimkit's documentation site: the Markdown pages of docs/ (MyST), the API
reference from the docstrings (autodoc), the furo theme. Built offline, warnings as errors, by
``tests/integration/test_docs_site.py``; by hand::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's packages, for autodoc

import bisimkit  # noqa: E402  (after the checkout is on the path)

project = "bisimkit"
release = version = bisimkit.__version__
author = "the bisimkit authors"
copyright = "the bisimkit authors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# GitHub's heading anchors (``page.md#a-heading``), the ones the pages link to.
myst_heading_anchors = 6
myst_enable_extensions = ["dollarmath", "colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": False}
napoleon_numpy_docstring = True
napoleon_google_docstring = False

html_theme = "furo"
html_title = f"bisimkit {release}"
html_static_path: list[str] = []
# Offline: no intersphinx, nothing fetched.


# ---------------------------------------------------------------------------------------------- API pages
#: The modules whose public names (``__all__``, or the names listed) the API reference documents, in order.
API_MODULES = {
    "bisimkit": None,
    "bisimkit.model_files": ["ModelData", "read_model", "read_drn", "read_prism", "from_stormpy"],
    "bisimkit.gaussian": None,
    "bisimkit.losses": None,
}


def api_block(module_name: str) -> str:
    """An autodoc directive for each public name of a module: ``autoclass`` (with members),
    ``autofunction``, or ``autodata`` without its value (the tables' reprs say nothing)."""
    import importlib
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
            lines += [f".. autodata:: {name}", "   :no-value:", ""]
    return "\n".join(line for line in lines) + "```\n"


def expand_api(app, docname, source):
    """Replace each ``<!-- api: MODULE -->`` line of a page with the module's API block."""
    import re

    source[0] = re.sub(r"^<!-- api: ([\w.]+) -->$", lambda m: api_block(m.group(1)), source[0], flags=re.M)


def setup(app):
    app.connect("source-read", expand_api)
