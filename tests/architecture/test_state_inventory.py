"""Every piece of module-level mutable state in ``lazygen/runtime`` and ``lazygen/dynamo`` is
listed, with its reason, in docs/architecture.md ("Module-level state") (issue 52 item 3).

``test_state_ownership.py``'s scan finds every kind (a container, a rebound global, a
per-thread ``threading.local()``, a ``functools.cache`` memo, a module-level instance of a
class of the module) and fails, located, on a piece the page does not list; here the page's
table must list exactly what the scan finds (nothing stale) and state the count, so the
count the page gives is the code's and a new piece of state shows in review. Issue 52 wants the list
at most about 15 (the state torch itself holds references to), the rest on one runtime
object: ``test_module_state_is_the_documented_few`` holds it there.
"""

from __future__ import annotations

import ast
import re

from .test_state_ownership import (
    _ROW,
    PAGE,
    _call_name,
    _files,
    documented,
    module_of,
    state_in,
)

GOAL = 15


def _by_module(scan) -> dict[str, set[str]]:
    """Module (``runtime/metrics.py``) -> the names ``scan`` finds in its source, for every
    scanned module where it finds some."""
    found = {}
    for path in _files():
        names = scan(path.read_text())
        if names:
            found[module_of(path)] = set(names)
    return found


def inventory() -> dict[str, set[str]]:
    """Module (``runtime/metrics.py``) -> its state's names, for every scanned module."""
    return _by_module(state_in)


def test_the_page_lists_every_piece_of_module_state():
    found, listed = inventory(), documented()
    missing = {
        module: sorted(names - listed.get(module, set()))
        for module, names in found.items()
        if names - listed.get(module, set())
    }
    stale = {
        module: sorted(names - found.get(module, set()))
        for module, names in listed.items()
        if names - found.get(module, set())
    }
    assert not missing and not stale, (
        "docs/architecture.md's 'Module-level state' table is out of step with the code: "
        f"add (with the reason) {missing}; remove {stale}"
    )


def test_the_page_states_the_count():
    text = PAGE.read_text()
    pieces = sum(len(names) for names in inventory().values())
    match = re.search(r"(\d+) pieces of module-level state in (\d+) modules", text)
    assert match, "docs/architecture.md states the count as 'N pieces ... in M modules'"
    assert (int(match.group(1)), int(match.group(2))) == (pieces, len(inventory()))


def test_module_state_is_the_documented_few():
    assert sum(len(names) for names in inventory().values()) <= GOAL


# What the process holds (``state.process``) ---------------------------------------------

HELD_MARKER = "<!-- process-held:"


def held_in(source: str) -> dict[str, int]:
    """Name -> line of each share of ``state.process`` in ``source``: a class passed to
    ``for_process(...)`` and a function decorated with ``process_memo``."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and _call_name(node.func) == "for_process"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            found.setdefault(node.args[0].id, node.lineno)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            _call_name(d) == "process_memo" for d in node.decorator_list
        ):
            found.setdefault(node.name, node.lineno)
    return found


def held() -> dict[str, set[str]]:
    """Module -> the shares of ``state.process`` it holds, for every scanned module."""
    return _by_module(held_in)


def documented_held(text: str | None = None) -> dict[str, set[str]]:
    """Module -> the names the page's "What the process holds" table lists for it."""
    text = PAGE.read_text() if text is None else text
    table = text[text.index(HELD_MARKER) :]
    table = table[: table.index("\n\n", table.index("|"))]
    return {
        m.group(1): {n.strip().strip("`") for n in m.group(2).split(",")}
        for m in _ROW.finditer(table)
    }


def differences(found: dict[str, set[str]], listed: dict[str, set[str]]) -> dict:
    """What the table lacks ("add") and lists in vain ("remove"), by module."""
    modules = set(found) | set(listed)
    add = {m: sorted(found.get(m, set()) - listed.get(m, set())) for m in modules}
    remove = {m: sorted(listed.get(m, set()) - found.get(m, set())) for m in modules}
    return {
        "add": {m: names for m, names in add.items() if names},
        "remove": {m: names for m, names in remove.items() if names},
    }


def test_the_page_lists_what_the_process_holds():
    wrong = differences(held(), documented_held())
    assert not wrong["add"] and not wrong["remove"], (
        "docs/architecture.md's 'What the process holds' table is out of step with the code "
        f"(state.for_process / state.process_memo): {wrong}"
    )


def test_the_held_scan_catches_each_way_of_holding():
    source = (
        "class _Libs(list):\n    pass\n"
        "def install():\n    state.for_process(_Libs).append(1)\n"
        "@state.process_memo\ndef tables():\n    return {}\n"
        "@process_memo\ndef other():\n    return {}\n"
    )
    assert held_in(source) == {"_Libs": 4, "tables": 6, "other": 9}
    wrong = differences({"runtime/x.py": set(held_in(source))}, {"runtime/x.py": {"_Libs"}})
    assert wrong["add"] == {"runtime/x.py": ["other", "tables"]}
    assert differences({}, {"runtime/x.py": {"_Gone"}})["remove"] == {"runtime/x.py": ["_Gone"]}


if __name__ == "__main__":  # python -m tests.architecture.test_state_inventory
    pieces = inventory()
    print(
        f"{sum(len(n) for n in pieces.values())} pieces of module-level state in "
        f"{len(pieces)} modules; {sum(len(n) for n in held().values())} shares of "
        f"state.process in {len(held())} modules"
    )
    for module, names in sorted(pieces.items()):
        print(f"  {module}: {', '.join(sorted(names))}")
