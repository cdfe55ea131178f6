"""Compatibility aliases live in one module, ``lazygen/renamed.py``, each with the release
that drops it (issue 52): the code that honours an alias reads it there.

* ``lazygen.renamed`` imports nothing of lazygen but ``lazygen.diagnostics``, so the
  generator and the runtime may both read it;
* every alias names its new name and a release;
* a ``DeprecationWarning`` (the runtime's way of honouring an old name) is raised only by
  modules that read ``lazygen.renamed``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lazygen import renamed

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lazygen"
TABLES = ("OP_LIST_FILES", "HAND_WRITTEN_PACKAGES", "GENERATED_PACKAGES")
TABLES += ("KERNEL_SUPPORT_NAMES", "COUNTERS")


def _lazygen_imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lazygen"):
            found |= {f"{node.module}.{a.name}" if node.module == "lazygen" else node.module
                      for a in node.names}  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.add("relative")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("lazygen")}
    return found


def test_the_alias_module_imports_only_diagnostics():
    tree = ast.parse((PACKAGE / "renamed.py").read_text())
    assert _lazygen_imports(tree) <= {"lazygen.diagnostics"}


@pytest.mark.parametrize("table", TABLES)
def test_every_alias_names_its_new_name_and_the_release_that_drops_it(table):
    entries = getattr(renamed, table)
    assert entries, table
    for old, new in entries.items():
        assert isinstance(new, renamed.Renamed) and new.new and new.new != old, (table, old)
        assert new.goes_away_in.count(".") == 2, (table, old, new.goes_away_in)


def deprecation_without_the_alias_module(source: str) -> bool:
    """Whether ``source`` raises a ``DeprecationWarning`` without reading ``lazygen.renamed``."""
    tree = ast.parse(source)
    warns = any(
        isinstance(node, ast.Name) and node.id == "DeprecationWarning" for node in ast.walk(tree)
    )
    reads = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "lazygen"
        and any(a.name == "renamed" for a in node.names)
        for node in ast.walk(tree)
    )
    return warns and not reads


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_old_names_are_honoured_through_the_alias_module(path):
    assert not deprecation_without_the_alias_module(path.read_text()), (
        f"{path.relative_to(ROOT)} warns of a deprecated name without lazygen.renamed: list "
        "the alias there, with the release that drops it"
    )


def test_the_scan_finds_a_deprecation_kept_elsewhere():
    assert deprecation_without_the_alias_module("warnings.warn('old', DeprecationWarning)")
    assert not deprecation_without_the_alias_module(
        "from lazygen import renamed\nwarnings.warn('old', DeprecationWarning)"
    )
