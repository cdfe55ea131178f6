"""Settings are what the user set: only the user-facing API writes them.

``lazygen.runtime.state.settings`` is written by ``lr.init``/``lr.mark_dynamic``
(``lazygen/runtime/__init__.py``), ``lr.config`` and ``state`` itself (defaults, restore).
The compile path once switched dynamic shapes on by writing ``settings.dynamic_shapes``
from inside the executor; the graph layer now holds that switch in its own state
(``graph/dynamic.py``). A scan of every module in ``lazygen/`` fails on any other writer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lazygen"
WRITERS = {"lazygen/runtime/__init__.py", "lazygen/runtime/config.py", "lazygen/runtime/state.py"}


def _aliases(tree: ast.AST) -> set[str]:
    """Names that hold the settings object in this module: ``settings`` itself, an import
    of it under another name, and a name assigned from it (``s = state.settings``)."""
    names = {"settings"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname for a in node.names if a.name == "settings" and a.asname}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                value = node.value
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if value is not None and _is_settings(value, names):
                    for target in targets:
                        if isinstance(target, ast.Name) and target.id not in names:
                            names.add(target.id)
                            changed = True
    return names


def _is_settings(node: ast.AST, names: set[str]) -> bool:
    """``settings`` (or an alias), or any ``<expr>.settings`` (``state.settings``,
    ``lr.config.settings``)."""
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.Attribute) and node.attr == "settings"


_SETTERS = frozenset({"setattr", "delattr", "__setattr__", "__delattr__"})


def _settings_writes(tree: ast.AST) -> list[int]:
    """Lines writing an attribute of the settings object, however it is reached: an
    assignment, ``+=``, an annotated assignment, ``del``, a tuple or loop target,
    ``setattr``/``delattr``/``object.__setattr__``, or ``settings.__setattr__``; through
    ``settings``, ``state.settings``, ``lr.config.settings`` or a name bound to one."""
    names = _aliases(tree)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if _is_settings(node.value, names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name not in _SETTERS:
                continue
            if isinstance(func, ast.Attribute) and _is_settings(func.value, names):
                lines.append(node.lineno)  # settings.__setattr__("x", 1)
            elif node.args and _is_settings(node.args[0], names):
                lines.append(node.lineno)  # setattr(settings, ...), object.__setattr__(...)
    return sorted(lines)


@pytest.mark.parametrize(
    "source",
    [
        "settings.a = 1",
        "settings.b += 1",
        "x, settings.c = 1, 2",
        "setattr(settings, 'd', 1)",
        "state.settings.x = 1",
        "lr.config.settings.x = 1",
        "del state.settings.x",
        "settings.x: int = 1",
        "s = state.settings\ns.x = 1",
        "from lazygen.runtime.state import settings as knobs\nknobs.x = 1",
        "object.__setattr__(state.settings, 'x', 1)",
        "state.settings.__setattr__('x', 1)",
        "setattr(lr.config.settings, 'x', 1)",
        "for settings.x in range(3):\n    pass",
    ],
)
def test_the_scan_sees_each_kind_of_write(source):
    assert _settings_writes(ast.parse(source)), source


@pytest.mark.parametrize(
    "source",
    ["y = settings.a", "settings.log(1)", "y = state.settings.x + 1", "other.x = 1"],
)
def test_the_scan_leaves_reads_alone(source):
    assert _settings_writes(ast.parse(source)) == [], source


def test_only_the_user_facing_api_writes_settings():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative in WRITERS:
            continue
        for line in _settings_writes(ast.parse(path.read_text(), relative)):
            wrong.append(f"{relative}:{line}")
    assert not wrong, (
        "settings are written only by the user-facing API (lr.init, lr.config, state); "
        "hold runtime-decided state in the owning layer (e.g. graph/dynamic.py's switch) "
        "instead:\n" + "\n".join(wrong)
    )
