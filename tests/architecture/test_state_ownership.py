"""Module-level mutable state in ``lazygen/runtime`` and ``lazygen/dynamo`` is the documented
few (issue 52 item 3): the runtime's state is one object, ``state.runtime`` (each
subsystem's state a part of it, ``state.part(Kind)``), which ``reset()`` replaces; a module
global may hold mutable state only where docs/architecture.md's "Module-level state" table
lists it with its reason (the runtime object, the process's holder, the settings and the
dispatch table themselves, and the op tables filled once at import). What torch holds references to lives on the one holder
``state.process`` (``test_state_inventory.py`` checks its table).

The scan finds, at module level (also under ``if``/``try``/``with``), six kinds:

* a *container*: a dict, list or set (literal or comprehension) or a call to a mutable
  container or counter (``dict()``, ``defaultdict``, ``deque``, ``WeakKeyDictionary``,
  ``WeakSet``, ``itertools.count()``...);
* a *rebound* global: a name a function rebinds with ``global``;
* a *memo*: a function decorated with ``functools.cache``/``lru_cache``;
* a *thread-local*: ``threading.local()``;
* an *alias of a part*: a global bound to ``state.part(...)``/``state.for_process(...)``
  (a reset would leave the module holding the old part; a process share must be read
  through ``for_process`` so that the holder's table sees it);
* an *instance*: a call to a class of the same module that is not frozen (a frozen
  dataclass, an enum, a named tuple, an exception or a class with empty ``__slots__`` is a
  constant).

Constants are tuples, frozensets or ``MappingProxyType``s; ``__all__`` is the export list; a
lock guards state and is not state. ``test_state_inventory.py`` checks that the table lists
exactly what this scan finds and states the count.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (ROOT / "lazygen" / "runtime", ROOT / "lazygen" / "dynamo")
PAGE = ROOT / "docs" / "architecture.md"
MARKER = "<!-- module-state:"
MUTABLE_CALLS = frozenset(
    {
        "dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "Counter",
        "ChainMap", "deque", "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "count",
    }
)  # fmt: skip
MUTABLE_NODES = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
MEMO_DECORATORS = frozenset({"cache", "lru_cache"})
NOT_STATE = frozenset({"__all__"})
HOLDER_CALLS = frozenset({"part", "for_process", "answers"})  # state's getters of its objects
_ROW = re.compile(r"^\| `([\w/.]+)` \| ([^|]+) \| [^|]+ \|$", re.M)


def _files() -> list[Path]:
    return [p for package in PACKAGES for p in sorted(package.rglob("*.py"))]


def _call_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Call):
        func = func.func
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


def _targets(statement: ast.stmt) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        return statement.targets
    return [statement.target] if isinstance(statement, ast.AnnAssign) else []


def mutable_globals(tree: ast.Module) -> dict[str, int]:
    """Name -> first line of each module-level container or rebound global of ``tree``."""
    found: dict[str, int] = {}
    for statement in _module_statements(tree.body):
        if not _is_mutable(getattr(statement, "value", None)):
            continue
        for target in _targets(statement):
            if isinstance(target, ast.Name) and target.id not in NOT_STATE:
                found.setdefault(target.id, statement.lineno)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                found.setdefault(name, node.lineno)
    return found


def _frozen(cls: ast.ClassDef) -> bool:
    for decorator in cls.decorator_list:
        if isinstance(decorator, ast.Call) and any(
            k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value
            for k in decorator.keywords
        ):
            return True
    for statement in cls.body:  # no fields at all: a sentinel
        if (
            isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in statement.targets)
            and isinstance(statement.value, ast.Tuple)
            and not statement.value.elts
        ):
            return True
    bases = {_call_name(b) for b in cls.bases}
    return bool(bases & {"Enum", "IntEnum", "NamedTuple", "Exception", "Warning"})


def state_with_lines(source: str) -> dict[str, tuple[str, int]]:
    """Name -> (kind, line) of each piece of module-level mutable state in ``source``."""
    tree = ast.parse(source)
    found = {name: ("container", line) for name, line in mutable_globals(tree).items()}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for node in _module_statements(tree.body):
        decorators = getattr(node, "decorator_list", ())
        if not isinstance(node, ast.ClassDef) and any(
            _call_name(d) in MEMO_DECORATORS for d in decorators
        ):
            found.setdefault(node.name, ("memo", node.lineno))
        value = getattr(node, "value", None)
        if not isinstance(value, ast.Call):
            continue
        called = _call_name(value.func)
        if called == "local":
            kind = "thread-local"
        elif called in HOLDER_CALLS:  # a reset would leave the module holding the old part
            kind = "alias of a part"
        elif called in classes and not _frozen(classes[called]):
            kind = "instance"
        else:
            continue
        for target in _targets(node):
            if isinstance(target, ast.Name):
                found.setdefault(target.id, (kind, node.lineno))
    return found


def state_in(source: str) -> dict[str, str]:
    """Name -> kind of each piece of module-level mutable state in ``source``."""
    return {name: kind for name, (kind, _) in state_with_lines(source).items()}


def module_of(path: Path) -> str:
    """How the table names a file: ``runtime/metrics.py``."""
    return path.relative_to(ROOT / "lazygen").as_posix()


def documented() -> dict[str, set[str]]:
    """Module -> the names the page's "Module-level state" table lists for it."""
    text = PAGE.read_text()
    table = text[text.index(MARKER) :]
    table = table[: table.index("\n\n", table.index("|"))]
    return {
        m.group(1): {n.strip().strip("`") for n in m.group(2).split(",")}
        for m in _ROW.finditer(table)
    }


def undocumented(source: str, module: str, listed: dict[str, set[str]]) -> list[str]:
    """A located failure for each piece of state in ``source`` the table does not list."""
    allowed = listed.get(module, set())
    return [
        f"lazygen/{module}:{line}: module-level mutable state {name!r} ({kind}) is not one "
        "of the documented few: keep it on the runtime object instead (a small class in "
        "this module whose instance is a part of it: state.part(YourState); reset() then "
        "makes a new one; a memo: @state.memo), or, if torch holds a reference to it, "
        "on the process's holder (state.for_process(YourHeld) or @state.process_memo, "
        "listed in docs/architecture.md's 'What the process holds'); failing both, list "
        "it with its reason in docs/architecture.md's 'Module-level state' table"
        for name, (kind, line) in sorted(state_with_lines(source).items(), key=lambda i: i[1][1])
        if name not in allowed
    ]


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_module_state_is_documented(path):
    wrong = undocumented(path.read_text(), module_of(path), documented())
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "source, kind",
    [
        ("_cache = {}", "container"),
        ("_seen: set = set()", "container"),
        ("_ids = itertools.count()", "container"),
        ("_graphs = weakref.WeakSet()", "container"),
        ("if True:\n    _table = [1]", "container"),
        ("_n = 0\ndef bump():\n    global _n\n    _n += 1", "container"),
        ("@functools.cache\ndef table():\n    return {}", "memo"),
        ("@lru_cache(maxsize=None)\ndef table():\n    return {}", "memo"),
        ("_current = threading.local()", "thread-local"),
        ("class _Settings:\n    pass\nsettings = _Settings()", "instance"),
        ("_tables = state.part(Tables)", "alias of a part"),
        ("_libs = state.for_process(_Libs)", "alias of a part"),
    ],
)
def test_a_new_module_global_of_each_kind_fails(source, kind):
    """Adding one of each kind to a runtime module fails, naming the file, line and name."""
    wrong = undocumented(source, "runtime/example.py", {"runtime/other.py": {"_cache"}})
    assert len(wrong) == 1 and f"({kind})" in wrong[0], (source, wrong)
    assert wrong[0].startswith("lazygen/runtime/example.py:"), wrong
    assert "state.part" in wrong[0] and "docs/architecture.md" in wrong[0]


def test_a_listed_global_passes():
    source = "_libraries = []\n_cache = {}"
    wrong = undocumented(source, "runtime/example.py", {"runtime/example.py": {"_libraries"}})
    assert len(wrong) == 1 and "'_cache'" in wrong[0] and ":2:" in wrong[0]


@pytest.mark.parametrize(
    "source",
    [
        "KINDS = ('a', 'b')",
        "NAMES = frozenset({'a'})",
        "TABLE = MappingProxyType({'a': 1})",
        "__all__ = ['f']",
        "LOCK = threading.Lock()",  # a lock guards state; it is not state
        "@dataclass(frozen=True)\nclass Point:\n    x: int\nORIGIN = Point(0)",
        "class Kind(Enum):\n    A = 1\nDEFAULT = Kind(1)",
        "class _Hidden:\n    __slots__ = ()\nHIDDEN = _Hidden()",
        "def f():\n    cache = {}\n    return cache",
        "class Part:\n    def __init__(self):\n        self.cache = {}",  # a part: not a global
    ],
)
def test_constants_and_parts_pass(source):
    assert not undocumented(source, "runtime/example.py", {}), source
