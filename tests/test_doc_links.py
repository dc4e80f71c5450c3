"""Every link between the documentation pages (README.md, CHANGELOG.md, the pages under docs/) reaches a file
that exists, and a link to a heading (``page.md#anchor``) reaches a heading of that page, by GitHub's anchor rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters of any script, digits,
    ``_`` and ``-`` kept), spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # no headings inside code blocks
    return {anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def test_the_anchor_rule():
    heading = "Solvers (`bisimkit/solvers.py`, `bisimkit/engine.py`)"
    assert anchor(heading) == "solvers-bisimkitsolverspy-bisimkitenginepy"
    assert anchor("ε-R with the world model: one seed") == "ε-r-with-the-world-model-one-seed"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_between_pages_resolve(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no such heading")
    assert broken == []
