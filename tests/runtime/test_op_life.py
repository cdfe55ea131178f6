"""An ordinary op's life stays short, and docs/architecture.md counts it honestly (issue 52).

``tests/support/op_life.py`` measures ``addcdiv`` on a backend two ways (its docstring says
how): the whole run of a one-op graph, and the op's own path (the files whose work grows
with each ``addcdiv``). The op's own path crosses at most 8 runtime core files and at most
3 files of each backend (issue 52's "done when"); every count, both readings and torch's
callbacks, is at most the page's table, so a change that lengthens the path updates the page
(and shows it).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
#: Issue 52: the op's own path crosses at most this many runtime core files ...
CORE_LIMIT = 8
#: ... and at most this many files of each backend.
BACKEND_LIMIT = 3
_CELL = r" \| (\d+)[^|]*"
_ROW = re.compile(r"^\| (\w+)" + _CELL * 7 + r" \|$", re.M)
_NO_JAX = importlib.util.find_spec("jax") is None
BACKENDS = [
    "torchscript",
    "fx",
    pytest.param(
        "jax", marks=pytest.mark.skipif(_NO_JAX, reason="no jax: pip install lazygen[jax]")
    ),
    pytest.param("inductor", marks=pytest.mark.slow),  # five Inductor compiles
]


def documented() -> dict[str, tuple[int, ...]]:
    """Backend -> the page's counts: the whole run (runtime core, the backend's own, op list),
    the op's own path (the same three) and torch's callbacks."""
    text = PAGE.read_text()
    table = text[text.index("<!-- op-life:") :]
    return {m.group(1): tuple(int(m.group(i)) for i in range(2, 9)) for m in _ROW.finditer(table)}


def measured(backend: str) -> dict[str, dict[str, list[str]]]:
    """``op_life(backend)``, in a process of its own (it initialises the runtime)."""
    code = (
        "import json, sys; from tests.support.op_life import op_life; "
        f"json.dump(op_life({backend!r}), sys.stdout)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _counts(groups: dict[str, list[str]], backend: str) -> tuple[int, int, int]:
    return (
        len(groups.get("runtime core", [])),
        len(groups.get(f"backend {backend}", [])),
        len(groups.get("op list", [])),
    )


def test_the_page_documents_each_built_in_backend():
    assert set(documented()) == {"torchscript", "fx", "jax", "inductor"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_op_s_life_is_short_and_counted_on_the_page(backend):
    """One measurement per backend (a process of its own; Inductor's compiles cost tens of
    seconds on CI), checked against issue 52's limits, then against the page."""
    readings = measured(backend)
    own = readings["op's own path"]
    core, backend_own, op_list = _counts(own, backend)
    assert backend_own > 0 and op_list > 0, own  # the hook saw the op's path
    per_backend = {g: len(f) for g, f in own.items() if g.startswith("backend ")}
    assert core <= CORE_LIMIT and max(per_backend.values()) <= BACKEND_LIMIT, (
        f"addcdiv's own path on {backend} crosses {core} runtime core files and "
        f"{per_backend} backend files; issue 52 allows {CORE_LIMIT} and {BACKEND_LIMIT} "
        f"(python -m tests.support.op_life {backend}):\n" + json.dumps(own, indent=1)
    )
    got = (
        _counts(readings["whole run"], backend)
        + (core, backend_own, op_list)
        + (sum(map(len, readings["torch's callbacks"].values())),)
    )
    page = documented()[backend]
    assert all(g <= p for g, p in zip(got, page, strict=True)), (
        f"addcdiv on {backend} crosses {got} files (whole run: core, backend, op list; own "
        f"path: the same; torch's callbacks), more than docs/architecture.md's {page}: "
        f"shorten the path or update the page's table (python -m tests.support.op_life "
        f"{backend}):\n" + json.dumps(readings, indent=1)
    )
