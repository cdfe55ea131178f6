"""Every module-level mutable global of the runtime and of ``lazygen.dynamo`` has an owner
(issue 42, item 5): ``state.register(__name__, reset, owns=(...))`` (``lr.reset()`` puts it
back) or ``state.once_per_process(__name__, (...), reason)`` (it must outlive a reset).

The scan finds, at module level (also under ``if``/``try``/``with``), every assignment of a
dict, list or set (literal or comprehension) or of a call to a mutable container or counter
(``dict()``, ``defaultdict``, ``deque``, ``WeakKeyDictionary``, ``WeakSet``,
``itertools.count()``...), and every name a function rebinds with ``global``. Constants are
tuples, frozensets or ``MappingProxyType``s; ``__all__`` is the export list. A module
declares its owners with literal names, so the scan reads them from the same module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (ROOT / "lazygen" / "runtime", ROOT / "lazygen" / "dynamo")
MUTABLE_CALLS = frozenset(
    {
        "dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "Counter",
        "ChainMap", "deque", "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "count",
    }
)  # fmt: skip
MUTABLE_NODES = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
NOT_STATE = frozenset({"__all__"})


def _files() -> list[Path]:
    return [p for package in PACKAGES for p in sorted(package.rglob("*.py"))]


def _call_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_mutable(value: ast.AST | None) -> bool:
    if isinstance(value, MUTABLE_NODES):
        return True
    return isinstance(value, ast.Call) and _call_name(value.func) in MUTABLE_CALLS


def _module_statements(body: list[ast.stmt]):
    for statement in body:
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                yield from _module_statements(getattr(statement, field, None) or [])
            for handler in getattr(statement, "handlers", None) or []:
                yield from _module_statements(handler.body)


def mutable_globals(tree: ast.Module) -> dict[str, int]:
    """Name -> first line of each module-level mutable global of ``tree``."""
    found: dict[str, int] = {}
    for statement in _module_statements(tree.body):
        if isinstance(statement, ast.Assign) and _is_mutable(statement.value):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign) and _is_mutable(statement.value):
            targets = [statement.target]
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id not in NOT_STATE:
                found.setdefault(target.id, statement.lineno)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                found.setdefault(name, node.lineno)
    return found


def _literal_names(node: ast.AST | None) -> set[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)}
    return set()


def declared_owners(tree: ast.Module) -> set[str]:
    """The globals this module names in ``register(..., owns=...)`` and
    ``once_per_process(..., names, ...)`` calls."""
    owned: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node.func)
        if name == "register":
            owned |= next(
                (_literal_names(k.value) for k in node.keywords if k.arg == "owns"), set()
            )
            if len(node.args) >= 3:
                owned |= _literal_names(node.args[2])
        elif name == "once_per_process":
            names = node.args[1] if len(node.args) >= 2 else None
            names = next((k.value for k in node.keywords if k.arg == "names"), names)
            owned |= _literal_names(names)
    return owned


def unowned(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    owned = declared_owners(tree)
    return sorted((line, name) for name, line in mutable_globals(tree).items() if name not in owned)


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_mutable_global_has_an_owner(path):
    rel = path.relative_to(ROOT)
    wrong = [
        f"{rel}:{line}: module-level mutable global {name!r} has no owner: register it with "
        f"state.register(__name__, reset_fn, owns=({name!r},)) so lr.reset() puts it back, "
        f"or declare it with state.once_per_process(__name__, ({name!r},), reason) if it "
        f"must outlive a reset (a constant is a tuple, frozenset or MappingProxyType)"
        for line, name in unowned(path.read_text())
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "source",
    [
        "_cache = {}",
        "_seen: set = set()",
        "_ids = itertools.count()",
        "_graphs = weakref.WeakSet()",
        "if True:\n    _table = [1]",
        "_n = 0\ndef bump():\n    global _n\n    _n += 1",
        "_cache = {}\nstate.register(__name__, _cache.clear, owns=('_other',))",
    ],
)
def test_the_scan_finds_each_unowned_form(source):
    assert unowned(source), source


@pytest.mark.parametrize(
    "source",
    [
        "KINDS = ('a', 'b')",
        "NAMES = frozenset({'a'})",
        "TABLE = MappingProxyType({'a': 1})",
        "__all__ = ['f']",
        "_cache = {}\nstate.register(__name__, _cache.clear, owns=('_cache',))",
        "_orig = {}\nstate.once_per_process(__name__, ('_orig',), 'torch holds it')",
        "def f():\n    cache = {}\n    return cache",
    ],
)
def test_the_scan_leaves_constants_and_owned_globals_alone(source):
    assert not unowned(source), source
