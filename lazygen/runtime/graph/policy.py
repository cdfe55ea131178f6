"""Which executable a graph gets: the recompile policy, decided in one place.

The executor collects a step's graph, keys it, compiles and runs it; which executable the
graph gets is not its call. ``decide`` weighs the device's compile cache, the step
structure's recompile budget (``budget.py``) and dynamic shapes (``dynamic.py``) and
returns a ``Decision`` the executor acts on:

* ``CACHED``: an executable compiled before, for this key or, with dynamic shapes, for
  every size of it (``via_generic``: the executor caches it under this key too);
* ``COMPILE``: compile now, first for all sizes when ``for_all_sizes`` (dynamic shapes on,
  ``mark_dynamic``, or the budget's one extra compile; not for a graph whose size-generic
  key was refused before, since a lowering reads a size), else for its own sizes;
* ``UNCOMPILED``: past the structure's budget, run the graph op by op (``uncompiled.py``).

Deciding spends the budget (the structure's record counts the compile) and, past it, may
switch dynamic shapes on (``dynamic.switch_on``): state of the graph layer, never the
user's ``settings``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..ir import Node, Value
from . import GraphCache, GraphKey, budget, dynamic, generic_key


class Action(enum.Enum):
    CACHED = "cached"
    COMPILE = "compile"
    UNCOMPILED = "uncompiled"


@dataclass(frozen=True)
class Decision:
    """What the executor does with a graph (see the module docstring)."""

    action: Action
    #: ``CACHED``: the executable to run.
    executable: object = None
    #: ``CACHED``: found under the size-generic key (not yet under the graph's own key).
    via_generic: bool = False
    #: ``COMPILE``: try one compile serving every size first.
    for_all_sizes: bool = False
    #: The size-generic key, when dynamic shapes apply to this graph (else None).
    generic: GraphKey | None = None
    #: What ``LAZYGEN_EXPLAIN_RECOMPILES`` says of the outcome (None: a plain compile).
    outcome: str | None = None
    #: ``COMPILE``: the step structure's budget record.
    record: budget.Structure | None = None

    def refused_for_all_sizes(self) -> None:
        """Record that the graph could not be compiled for all sizes (a lowering reads a
        size): its other sizes then compile for their own sizes at once."""
        if self.generic is not None and self.record is not None:
            self.record.refused_keys.add(self.generic)


def decide(
    cache: GraphCache,
    key: GraphKey,
    order: list[Node],
    outputs: list[Value],
    backend_name: str,
    size_generic: bool,
) -> Decision:
    """The executable ``key``'s graph gets on a device whose compile cache is ``cache``
    and whose backend (``backend_name``) can, or cannot (``size_generic``), compile one
    graph for all sizes."""
    executable = cache.get(key)
    if executable is not None:
        return Decision(Action.CACHED, executable)
    generic = None
    if size_generic and (dynamic.on() or dynamic.reads_marked(order)):
        generic = generic_key(key)
        executable = cache.get(generic)
        if executable is not None:  # compiled for all sizes: this one too
            return Decision(Action.CACHED, executable, via_generic=True, generic=generic)
    record = budget.structure(cache.structures, order, outputs)
    sizes_key = generic_key(key, constants=False)
    if record.exhausted():
        # Sizes changed (or, with dynamic shapes on, may have): one compile for all sizes.
        sizes_only = sizes_key in record.size_keys or generic is not None
        forcing = size_generic and sizes_only and not record.extra_spent
        budget.warn_once(record, backend_name, forcing, dynamic.on())
        if forcing and not dynamic.on():
            dynamic.switch_on()  # the next traced steps have sizes as inputs
        # The one compile left is for a graph traced with sizes as inputs (not one traced
        # before they were: its size constants would be compiled in).
        sizes_are_inputs = generic is not None and not any(n.is_constant for n in order)
        if not (forcing and sizes_are_inputs):
            outcome = "past the recompile limit: run uncompiled, op by op"
            return Decision(Action.UNCOMPILED, generic=generic, outcome=outcome)
        record.extra_spent = True
        for_all_sizes = True
    else:
        for_all_sizes = generic is not None and generic not in record.refused_keys
    record.compiles += 1
    record.size_keys.add(sizes_key)
    outcome = "compiled once for all sizes" if for_all_sizes else None
    return Decision(
        Action.COMPILE, for_all_sizes=for_all_sizes, generic=generic, outcome=outcome, record=record
    )
