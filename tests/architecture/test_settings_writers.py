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

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lazygen"
WRITERS = {"lazygen/runtime/__init__.py", "lazygen/runtime/config.py", "lazygen/runtime/state.py"}


def _settings_writes(tree: ast.AST) -> list[int]:
    """Lines assigning an attribute of a name ``settings`` (``settings.x = ...``, ``+=``,
    ``del``, ``setattr(settings, ...)``)."""
    lines = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "settings"
        ):
            lines.append(node.lineno)
        for target in targets:
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "settings"
                    and isinstance(sub.ctx, (ast.Store, ast.Del))
                ):
                    lines.append(node.lineno)
    return lines


def test_the_scan_sees_each_kind_of_write():
    source = "settings.a = 1\nsettings.b += 1\nx, settings.c = 1, 2\nsetattr(settings, 'd', 1)\n"
    assert _settings_writes(ast.parse(source)) == [1, 2, 3, 4]
    assert _settings_writes(ast.parse("y = settings.a\nsettings.log(1)\n")) == []


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
