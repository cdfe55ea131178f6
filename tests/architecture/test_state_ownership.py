"""Every module-level mutable global of the runtime and of ``lazygen.dynamo`` has an owner
(issue 42, item 5): ``state.register(__name__, reset, owns=(...))`` (``lr.reset()`` puts it
back) or ``state.once_per_process(__name__, (...), reason)`` (it must outlive a reset).

The scan finds, at module level (also under ``if``/``try``/``with``), every assignment of a
dict, list or set (literal or comprehension) or of a call to a mutable container or counter
(``dict()``, ``defaultdict``, ``deque``, ``WeakKeyDictionary``, ``WeakSet``,
``itertools.count()``...), and every name a function rebinds with ``global``. Constants are
tuples, frozensets or ``MappingProxyType``s; ``__all__`` is the export list. A module
declares its owners with literal names, so the scan reads them from the same module.
Only the state registry's own calls declare (``state.register``/``state.once_per_process``,
reached as the ``state`` module, through ``capture_interface``, or imported by name from
either), for the calling module (first argument ``__name__``): any other call named
``register`` (``atexit.register``, a module's own ``register()``) declares nothing.
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
STATE = ROOT / "lazygen" / "runtime" / "state.py"
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


#: The modules whose ``register``/``once_per_process`` declare a module's state: ``state``
#: and the interface that hands them to ``lazygen.dynamo``.
OWNER_MODULES = frozenset({"state", "capture_interface"})


def _owner_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names this module reaches ``OWNER_MODULES`` by (``state``, ``runtime``...) and the
    declaring functions it imported from them by name (``register``...)."""
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            last = (node.module or "").rpartition(".")[2]
            for alias in node.names:
                if alias.name in OWNER_MODULES:  # from .. import state
                    modules.add(alias.asname or alias.name)
                elif last in OWNER_MODULES and alias.name in ("register", "once_per_process"):
                    functions.add(alias.asname or alias.name)  # from ..state import register
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.rpartition(".")[2] in OWNER_MODULES and alias.asname:
                    modules.add(alias.asname)
    return modules, functions


def _declaring_call(node: ast.Call, modules: set[str], functions: set[str], own: bool) -> str:
    """``"register"`` or ``"once_per_process"`` when ``node`` is the state registry's call
    made for this module (its first argument ``__name__``), else ``""``. Any other call
    of that name (``atexit.register``, a module's own ``register()``) declares nothing."""
    func = node.func
    if isinstance(func, ast.Attribute):
        if not (isinstance(func.value, ast.Name) and func.value.id in modules):
            return ""
        name = func.attr
    elif isinstance(func, ast.Name) and (func.id in functions or own):
        name = func.id
    else:
        return ""
    if name not in ("register", "once_per_process"):
        return ""
    first = node.args[0] if node.args else None
    return name if isinstance(first, ast.Name) and first.id == "__name__" else ""


def declared_owners(tree: ast.Module, own: bool = False) -> set[str]:
    """The globals this module names in ``state.register(__name__, reset, owns=...)`` and
    ``state.once_per_process(__name__, names, reason)`` calls (``own``: the module is
    ``state`` itself, which calls them by their bare names)."""
    modules, functions = _owner_names(tree)
    owned: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _declaring_call(node, modules, functions, own)
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


def unowned(source: str, own: bool = False) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    owned = declared_owners(tree, own)
    return sorted((line, name) for name, line in mutable_globals(tree).items() if name not in owned)


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_mutable_global_has_an_owner(path):
    rel = path.relative_to(ROOT)
    wrong = [
        f"{rel}:{line}: module-level mutable global {name!r} has no owner: register it with "
        f"state.register(__name__, reset_fn, owns=({name!r},)) so lr.reset() puts it back, "
        f"or declare it with state.once_per_process(__name__, ({name!r},), reason) if it "
        f"must outlive a reset (a constant is a tuple, frozenset or MappingProxyType)"
        for line, name in unowned(path.read_text(), own=path == STATE)
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
        # Only the state registry's calls declare, for this module:
        "_cache = {}\nregistry.register(__name__, _cache.clear, owns=('_cache',))",
        "_cache = {}\nregister(__name__, _cache.clear, owns=('_cache',))",
        "import atexit\n_cache = {}\natexit.register(_cache.clear, owns=('_cache',))",
        "from .. import state\n_cache = {}\nstate.register('x', _cache.clear, owns=('_cache',))",
        "_o = {}\nlibrary.once_per_process(__name__, ('_o',), 'torch holds it')",
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
        "from .. import state\n_cache = {}\nstate.register(__name__, _cache.clear, owns=('_cache',))",
        "from ..state import once_per_process\n_orig = {}\n"
        "once_per_process(__name__, ('_orig',), 'torch holds it')",
        "from lazygen.runtime import capture_interface as runtime\n_c = {}\n"
        "runtime.register(__name__, _c.clear, owns=('_c',))",
        "def f():\n    cache = {}\n    return cache",
    ],
)
def test_the_scan_leaves_constants_and_owned_globals_alone(source):
    assert not unowned(source), source
