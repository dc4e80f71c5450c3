"""The Python and shell snippets of README.md and docs/ run as written.

Every fenced block whose language is ``python``, ``bash`` or ``sh`` is a snippet. The blocks of one
page run in page order in one folder of their own (a block may read what an earlier block of its page
wrote), from a scratch folder that holds links to the checkout's ``examples/``, ``agents/`` and ``tests/``;
``python`` and ``bisimkit`` are the test's own environment's. A Python block runs as ``python -c``, a
shell block under ``bash -euo pipefail``; a block passes when it exits 0.

Running the blocks takes minutes, so those tests are marked ``docs`` and left out of the default run;
``.ci/run`` runs them as a step of their own (``python -m pytest -n 2 --dist loadgroup -m docs``).

A block that cannot run here says why on the line above its fence (docs/development.md, "Snippets"):

* ``<!-- needs: gpu -->``: a CUDA device; skipped.
* ``<!-- needs: server -->``: a CARLA server or a SLURM cluster; skipped.
* ``<!-- needs: network -->``: installs packages or downloads data; skipped (the installs are
  ``.ci/run``'s own and the wheel test's, ``tests/integration/test_wheel.py``).
* ``<!-- needs: long run -->``: minutes to days (a training run, a benchmark, the full verify); skipped.
* ``<!-- needs: fragment -->``: a sketch whose names the reader supplies (a model, a tensor); skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)]
LANGUAGES = {"python": "python", "bash": "shell", "sh": "shell"}
#: What a ``<!-- needs: X -->`` marker may name, and what happens to the block.
NEEDS = {
    "gpu": "skip: needs a CUDA device",
    "server": "skip: needs a CARLA server or a SLURM cluster",
    "network": "skip: installs packages or downloads data",
    "fragment": "skip: a sketch whose names the reader supplies",
    "long run": "skip: runs for minutes or more",
}
MARKER = re.compile(r"^<!--\s*needs:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")
#: The checkout's folders the blocks read from their scratch folder.
LINKED = ("examples", "agents", "tests")


@dataclass(frozen=True)
class Snippet:
    page: str  # relative to the root
    line: int  # of the opening fence, 1-based
    language: str  # "python" or "shell"
    code: str
    needs: str | None


def snippets(text: str, page: str) -> list[Snippet]:
    """The runnable blocks of a Markdown text, each with the marker on the line above its fence."""
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, language = m.groups()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == ticks), len(lines))
        if language in LANGUAGES:
            body = [x[len(indent) :] if x.startswith(indent) else x.lstrip() for x in lines[i + 1 : end]]
            above = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = MARKER.match(above)
            found.append(
                Snippet(page, i + 1, LANGUAGES[language], "\n".join(body) + "\n", marker.group(1) if marker else None)
            )
        i = end + 1
    return found


def all_snippets() -> list[Snippet]:
    return [s for page in PAGES for s in snippets(page.read_text(), page.relative_to(ROOT).as_posix())]


def params():
    """One test per page with a runnable block: its blocks run in order, in one folder."""
    by_page: dict[str, list[Snippet]] = {}
    for s in all_snippets():
        by_page.setdefault(s.page, []).append(s)
    return [pytest.param(blocks, marks=[pytest.mark.docs], id=page) for page, blocks in by_page.items()]


def test_the_parser_reads_blocks_markers_and_indented_fences():
    text = (
        "# t\n\n```python\nx = 1\n```\n\n<!-- needs: gpu -->\n```bash\nnvidia-smi\n```\n\n```text\nno\n```\n"
        "* item\n\n  ```sh\n  echo a\n    echo b\n  ```\n"
    )
    found = snippets(text, "p.md")
    assert [(s.line, s.language, s.needs) for s in found] == [
        (3, "python", None),
        (8, "shell", "gpu"),
        (17, "shell", None),
    ]
    assert found[0].code == "x = 1\n" and found[2].code == "echo a\n  echo b\n"


def test_every_marker_names_a_known_need():
    unknown = [f"{s.page}:{s.line}: {s.needs}" for s in all_snippets() if s.needs is not None and s.needs not in NEEDS]
    assert unknown == []


def test_every_marker_sits_above_a_runnable_block():
    """A ``needs`` marker over a text block, or away from any fence, marks nothing: it is a mistake."""
    stray = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if MARKER.match(line.strip()):
                nxt = next((x for x in lines[i + 1 :] if x.strip()), "")
                m = FENCE.match(nxt)
                if not m or m.group(3) not in LANGUAGES:
                    stray.append(f"{page.relative_to(ROOT)}:{i + 1}")
    assert stray == []


@pytest.mark.parametrize("blocks", params())
def test_snippets_run(blocks: list[Snippet], tmp_path):
    """Every block of a page that needs nothing missing here, in page order, in one scratch folder."""
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    env = dict(
        os.environ,
        MPLBACKEND="Agg",
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    ran = 0
    for snippet in blocks:
        if NEEDS.get(snippet.needs or "", "").startswith("skip"):
            continue
        command = (
            [sys.executable, "-c", snippet.code]
            if snippet.language == "python"
            else ["bash", "-euo", "pipefail", "-c", snippet.code]
        )
        proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, (
            f"{snippet.page}:{snippet.line} exited {proc.returncode}\n"
            f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
        )
        ran += 1
    if not ran:
        reasons = sorted({NEEDS[s.needs][6:] for s in blocks if s.needs})
        pytest.skip(f"{blocks[0].page}: every block is marked ({'; '.join(reasons)})")
