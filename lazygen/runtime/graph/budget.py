"""The recompile budget: how many graphs one step structure may compile (its record; what
happens past it is decided by ``policy.decide``).

A step structure is the sequence of computed ops of a graph (inputs and constants left
out), whatever its sizes and attributes: a training step over changing sequence lengths,
or with a changing Python int, is one structure compiling again and again. Each may
compile ``LAZYGEN_RECOMPILE_LIMIT`` graphs (``config.set_recompile_limit``; 8 by default,
Dynamo's limit; 0: no limit). Past it, a warning (once per structure), then a bounded
behaviour, never silent unbounded compiling, stated once in ``PAST_THE_LIMIT``: one more
graph for all sizes where that can serve (a backend whose graphs serve every size,
``Backend.size_generic``; dynamic shapes switched on by ``dynamic.switch_on``), and every
other graph of the structure run op by op, uncompiled (``graph/uncompiled.py``: a
changing int attribute, a lowering that reads sizes, a backend that is not size-generic).

The record also remembers the size-generic keys a lowering refused to compile for all
sizes (it reads a size): their later sizes compile for their own sizes without trying.
"""

from __future__ import annotations

import warnings

from ..ir import Node, Value
from ..sources import user_stacklevel
from ..state import settings


class RecompileLimitWarning(UserWarning):
    """A step structure exhausted its recompile budget (``LAZYGEN_RECOMPILE_LIMIT``)."""


class Structure:
    """What one step structure compiled: how many graphs, which size-generic keys could
    not be compiled for all sizes, whether it spent its one compile past the limit."""

    __slots__ = ("compiles", "refused_keys", "size_keys", "extra_spent", "warned", "ops")

    def __init__(self, ops: int) -> None:
        self.compiles = 0
        #: Size-generic keys refused for all sizes (a lowering reads a size): each of their
        #: sizes compiles for its own sizes, without trying all sizes again.
        self.refused_keys: set = set()
        #: ``generic_key(key, constants=False)`` of every graph compiled: a graph
        #: whose one is among them differs from a compiled one in sizes only.
        self.size_keys: set = set()
        self.extra_spent = False
        self.warned = False
        self.ops = ops

    def exhausted(self) -> bool:
        limit = settings.recompile_limit
        return limit > 0 and self.compiles >= limit


def structure_key(order: list[Node], outputs: list[Value]) -> tuple:
    return (tuple([type(n) for n in order if not (n.is_input or n.is_constant)]), len(outputs))


def structure(structures: dict, order: list[Node], outputs: list[Value]) -> Structure:
    """The ``Structure`` record of this graph's step structure (made on first sight)."""
    key = structure_key(order, outputs)
    found = structures.get(key)
    if found is None:
        if len(structures) >= 4 * max(settings.compile_cache_size, 1):
            structures.clear()  # structures that come and go: forget the oldest all at once
        found = structures[key] = Structure(len(key[0]))
    return found


#: What happens past a structure's budget, stated once: the warning says it, and
#: docs/dynamic-shapes.md and docs/guides/recompiles.md quote it (a test holds them equal).
PAST_THE_LIMIT = (
    "Past the limit, the structure compiles one more graph, for all sizes, if its backend "
    "compiles graphs for all sizes and its graphs differed in sizes only or dynamic shapes "
    "are on (they are switched on, if off, from the next traced step); every other graph of "
    "the structure runs op by op, uncompiled (UncompiledGraphRun), and nothing more of it "
    "is compiled."
)


def warn_once(
    record: Structure, backend_name: str, forcing_dynamic: bool, dynamic_on: bool
) -> None:
    """Say, once per structure, that its budget is spent, what happens past it, and what
    happens now (``forcing_dynamic``: the one compile for all sizes is still to come)."""
    if record.warned:
        return
    record.warned = True
    now = "one more graph for all sizes" if forcing_dynamic else "its graphs run uncompiled"
    sizes = "" if dynamic_on else ", LAZYGEN_DYNAMIC_SHAPES=1 for changing sizes"
    warnings.warn(
        f"lazygen: a step structure of {record.ops} ops compiled {record.compiles} graphs on "
        f"the {backend_name} backend, its budget (LAZYGEN_RECOMPILE_LIMIT="
        f"{settings.recompile_limit}). {PAST_THE_LIMIT} Here: {now}. Set "
        f"LAZYGEN_EXPLAIN_RECOMPILES=1 to see what changes between its graphs{sizes}, or "
        "raise the limit (lazygen.runtime.config.set_recompile_limit).",
        RecompileLimitWarning,
        stacklevel=user_stacklevel(),
    )
