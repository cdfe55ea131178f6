"""Every ```python block of the README and the docs runs.

Each page's blocks run in order in one fresh interpreter (a page is a story: a later block
uses what an earlier one made), from a scratch directory, with a timeout. A block that
cannot run here is tagged by an HTML comment on the line before it, which the rendered
page does not show and which says why::

    <!-- skip: needs several processes (torchrun); tests/distributed runs it -->

A fragment (a method of the reader's own class, a ``setup.py`` of their package) is tagged
``<!-- fragment: why -->`` instead: it is not run, but it must parse. The pages listed in
``EXCERPT_PAGES`` show excerpts of lazygen's generated code to explain it; their blocks
must parse too. A tag without a reason fails the test. Blocks in other languages (bash,
yaml, text) are not run. `examples/` scripts run in the slow suite (``test_examples.py``).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts
)
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[^\s`]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```", re.M | re.S
)
SKIP = re.compile(r"<!--\s*(?P<kind>skip|fragment):(?P<reason>[^>]*)-->\s*$")
#: Pages whose blocks are excerpts of lazygen's own code, explained by the page: parsed,
#: not run (docs/architecture.md is rewritten by another change; tag its blocks there).
EXCERPT_PAGES = {"docs/architecture.md": "excerpts of generated code, explained by the page"}


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    lang: str
    code: str
    skip: str | None  # the reason given, when tagged (or an excerpt page's)
    kind: str = "run"  # "run", "skip" (not run) or "fragment" (parsed only)


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks, each with the skip reason of the comment before it."""
    text = page.read_text()
    excerpt = EXCERPT_PAGES.get(str(page.relative_to(ROOT)))
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        tag = SKIP.search(before)
        indent = len(match.group("indent"))
        code = "\n".join(line[indent:] for line in match.group("code").splitlines())
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start()) + 1,
                lang=match.group("lang").lower(),
                code=code + "\n",
                skip=tag.group("reason").strip() if tag else excerpt,
                kind=tag.group("kind") if tag else ("fragment" if excerpt else "run"),
            )
        )
    return found


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in ("python", "py")]


RUNNABLE = [p for p in PAGES if any(b.skip is None for b in python_blocks(p))]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def program(page: Path) -> str:
    """The page's runnable blocks as one program; a failure names the block's line."""
    parts = []
    for block in python_blocks(page):
        if block.skip is None:
            parts.append(f"# --- {_name(page)}:{block.line}\n{block.code}")
    return "\n".join(parts)


def test_skip_tags_give_a_reason():
    empty = [f"{_name(b.page)}:{b.line}" for p in PAGES for b in blocks(p) if b.skip == ""]
    assert not empty, f"say why these blocks cannot run: {empty}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fragments_parse(page):
    for block in python_blocks(page):
        if block.kind == "fragment":
            try:
                ast.parse(block.code)
            except SyntaxError as error:
                pytest.fail(f"{_name(page)}:{block.line}: the fragment does not parse: {error}")


def test_the_extraction_sees_tags_and_blocks():
    page = ROOT / "docs" / "distributed.md"
    assert any(b.skip for b in python_blocks(page))
    assert any(b.skip is None for b in python_blocks(ROOT / "README.md"))


@pytest.mark.parametrize("page", RUNNABLE, ids=_name)
def test_page_code_runs(page, tmp_path):
    source = tmp_path / "page.py"
    source.write_text(program(page))
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, str(source)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    if result.returncode != 0:
        lines = [int(n) for n in re.findall(r'page\.py", line (\d+)', result.stderr)]
        program_lines = source.read_text().splitlines()
        where = ""
        if lines:
            marks = [s for s in program_lines[: lines[-1]] if s.startswith("# --- ")]
            where = marks[-1][6:] if marks else ""
        pytest.fail(f"the block at {where} failed:\n{result.stderr[-4000:]}")
