"""Sizes a newcomer can read: no function over 60 lines, no module over 450 lines anywhere
in ``lazygen/``, and at most 20 top-level modules in ``lazygen/runtime`` (the rest live in
sub-packages named after the stage they serve: ``tracing/``, ``execution/``, ``graph/``...).

A module or function past its bound is split by responsibility, not by line count: each
new module gets one job and a docstring saying why it stands apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lazygen"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450
MAX_RUNTIME_TOP_LEVEL_MODULES = 20


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _long_functions(tree: ast.AST, limit: int) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, length)`` of every function (methods and nested ones
    too) longer than ``limit`` lines, decorators included."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                length = child.end_lineno - first + 1
                if length > limit:
                    found.append((prefix + child.name, first, length))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def test_the_function_scan_sees_methods_and_nested_functions():
    body = "\n".join(["    x = 1"] * 61)
    source = f"class A:\n    def m(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
    source += f"def f():\n    def g():\n    {body.replace(chr(10), chr(10) + '    ')}\n"
    names = [name for name, _, _ in _long_functions(ast.parse(source), MAX_FUNCTION_LINES)]
    assert names == ["A.m", "f", "f.g"]
    assert _long_functions(ast.parse("def f():\n    return 1\n"), MAX_FUNCTION_LINES) == []


def test_no_function_over_60_lines():
    wrong = []
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        wrong += [
            f"{path.relative_to(ROOT)}:{line}: {name} is {length} lines"
            for name, line, length in _long_functions(tree, MAX_FUNCTION_LINES)
        ]
    assert not wrong, (
        f"functions over {MAX_FUNCTION_LINES} lines (the rule: at most {MAX_FUNCTION_LINES}; "
        "split each into steps with one job each):\n" + "\n".join(wrong)
    )


def test_no_module_over_450_lines():
    wrong = []
    for path in _modules():
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            wrong.append(f"{path.relative_to(ROOT)} is {lines} lines")
    assert not wrong, (
        f"modules over {MAX_MODULE_LINES} lines (the rule: at most {MAX_MODULE_LINES}; split "
        "each by responsibility into modules with one job each):\n" + "\n".join(wrong)
    )


def test_at_most_20_top_level_runtime_modules():
    top_level = sorted(p.name for p in (PACKAGE / "runtime").glob("*.py"))
    assert len(top_level) <= MAX_RUNTIME_TOP_LEVEL_MODULES, (
        f"lazygen/runtime has {len(top_level)} top-level modules (the rule: at most "
        f"{MAX_RUNTIME_TOP_LEVEL_MODULES}, __init__.py included): {', '.join(top_level)}; "
        "put a new one in the sub-package of the stage it serves (tracing/, execution/, "
        "graph/, ...)"
    )
