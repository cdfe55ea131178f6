"""The count of an op's life in docs/architecture.md stays honest (issue 52 item 6): the files
``addcdiv``'s path runs code in, measured by ``tests/support/op_life.py``, are at most the
documented numbers, so a change that lengthens the path updates the page (and shows it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
_ROW = re.compile(r"^\| (\w+) \| (\d+) \| (\d+)[^|]* \| (\d+) \|$", re.M)


def documented() -> dict[str, tuple[int, int, int]]:
    """Backend -> (runtime core, the backend's own, op list), from the page's table."""
    text = PAGE.read_text()
    table = text[text.index("<!-- op-life:") :]
    return {m.group(1): tuple(int(m.group(i)) for i in (2, 3, 4)) for m in _ROW.finditer(table)}


def measured(backend: str) -> dict[str, list[str]]:
    code = (
        "import json, sys; from tests.support.op_life import op_life; "
        f"json.dump(op_life({backend!r}), sys.stdout)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_page_documents_each_built_in_backend():
    assert set(documented()) == {"torchscript", "fx", "jax", "inductor"}


@pytest.mark.parametrize("backend", ["torchscript", "fx"])
def test_an_op_s_life_crosses_at_most_the_documented_files(backend):
    core, own, op_list = documented()[backend]
    groups = measured(backend)
    counts = (
        len(groups.get("runtime core", [])),
        len(groups.get(f"backend {backend}", [])),
        len(groups.get("op list", [])),
    )
    assert counts[1] > 0 and counts[2] > 0, groups  # the hook saw the op's path
    assert all(c <= d for c, d in zip(counts, (core, own, op_list), strict=True)), (
        f"addcdiv on {backend} crosses {counts} files (core, backend, op list), more than "
        f"docs/architecture.md's {(core, own, op_list)}: shorten the path or update the "
        f"page's count (python -m tests.support.op_life {backend}):\n"
        + json.dumps(groups, indent=1)
    )
