"""The results pages (docs/results/): each says what was run, the command, the record, the figure and the
caveats, in that order at its top; the records and figures it names are committed; the results index
lists every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
PAGES = sorted(p for p in RESULTS.glob("*.md") if p.name != "index.md")
ITEMS = ("What was run", "Command", "Record", "Figure", "Caveats")


def header(text: str) -> dict[str, str]:
    """The page's leading ``* **Item**: text`` lines, item -> text, in page order."""
    return dict(re.findall(r"^\* \*\*([^*]+)\*\*: (.*)$", text.split("\n## ", 1)[0], re.M))


def named_paths(text: str) -> list[str]:
    """The repository paths a header item names in backticks (records under benchmarks/ or figures/data/,
    figures under docs/); a ``*`` in a path is a pattern, and it must match."""
    return [p for p in re.findall(r"`([^`\s]+)`", text) if re.match(r"(benchmarks/results|figures/data|docs)/", p)]


def exists(path: str) -> bool:
    return any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()


def test_the_header_reader_reads_items_and_paths():
    text = "# T\n\n* **Record**: `benchmarks/results/a.json` and `x`.\n* **Figure**: none.\n\n## Body\n* **No**: y\n"
    assert header(text) == {"Record": "`benchmarks/results/a.json` and `x`.", "Figure": "none."}
    assert named_paths(header(text)["Record"]) == ["benchmarks/results/a.json"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_results_page_opens_with_its_five_items(page):
    assert tuple(header(page.read_text())) == ITEMS


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_records_and_figures_a_page_names_are_committed(page):
    items = header(page.read_text())
    records = named_paths(items["Record"])
    assert records, "a results page names the record its numbers come from"
    assert [p for p in records + named_paths(items["Figure"]) if not exists(p)] == []


def test_the_index_lists_every_results_page():
    index = (RESULTS / "index.md").read_text()
    assert [p.name for p in PAGES if f"]({p.name})" not in index] == []
