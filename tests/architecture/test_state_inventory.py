"""Every piece of module-level mutable state in ``lazygen/runtime`` and ``lazygen/dynamo`` is
listed, with its reason, in docs/architecture.md ("Module-level state") (issue 52 item 3).

``test_state_ownership.py``'s scan finds every kind (a container, a rebound global, a
per-thread ``threading.local()``, a ``functools.cache`` memo, a module-level instance of a
class of the module) and fails, located, on a piece the page does not list; here the page's
table must list exactly what the scan finds (nothing stale) and state the count, so the
count the page gives is the code's and a new piece of state shows in review. Issue 52 wants the list
down to about 15 (the state torch itself holds references to), on one runtime object; the
goal is recorded as a strict ``xfail`` below, which fails once it is met (then drop the mark).
"""

from __future__ import annotations

import re

import pytest

from .test_state_ownership import PAGE, _files, documented, module_of, state_in

GOAL = 15


def inventory() -> dict[str, set[str]]:
    """Module (``runtime/metrics.py``) -> its state's names, for every scanned module."""
    found = {}
    for path in _files():
        names = state_in(path.read_text())
        if names:
            found[module_of(path)] = set(names)
    return found


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


@pytest.mark.xfail(strict=True, reason="issue 52 item 3 (one runtime object) is not done")
def test_module_state_is_the_documented_few():
    assert sum(len(names) for names in inventory().values()) <= GOAL
