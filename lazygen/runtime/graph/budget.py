"""The recompile budget: how many graphs one step structure may compile (its record; what
happens past it is decided by ``policy.decide``).

A step structure is the sequence of computed ops of a graph (inputs and constants left
out), whatever its sizes and attributes: a training step over changing sequence lengths,
or with a changing Python int, is one structure compiling again and again. Each may
compile ``LAZYGEN_RECOMPILE_LIMIT`` graphs (``config.set_recompile_limit``; 8 by default,
Dynamo's limit; 0: no limit). Past it, a warning (once per structure), then a bounded
behaviour, never silent unbounded compiling:

* when the graph differs from one compiled before in sizes only, on a backend whose
  graphs can serve every size (``Backend.size_generic``): dynamic shapes are switched on
  (``dynamic.switch_on``; sizes become graph inputs from the next traced op on), and the structure may compile
  one more graph, one for all sizes (``graph/dynamic.py``);
* every other graph of the structure runs op by op, uncompiled (``graph/uncompiled.py``),
  counted as ``UncompiledGraphRun`` (a changing int attribute, a lowering that reads sizes, a
  backend that is not size-generic).

Within the budget, the budget also drives automatic dynamic shapes: a graph whose
size-generic key was compiled before for other sizes compiles for all sizes.
"""

from __future__ import annotations

import warnings

from ..ir import Node, Value
from ..sources import user_stacklevel
from ..state import settings


class RecompileLimitWarning(UserWarning):
    """A step structure exhausted its recompile budget (``LAZYGEN_RECOMPILE_LIMIT``)."""


class Structure:
    """What one step structure compiled: how many graphs, which size-generic keys it
    compiled for one set of sizes, whether it spent its one compile past the limit."""

    __slots__ = ("compiles", "static_generic_keys", "size_keys", "extra_spent", "warned", "ops")

    def __init__(self, ops: int) -> None:
        self.compiles = 0
        #: Size-generic keys compiled for one set of sizes (a second one compiles for all).
        self.static_generic_keys: set = set()
        #: ``dynamic.generic_key(key, constants=False)`` of every graph compiled: a graph
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


def warn_once(record: Structure, backend_name: str, forcing_dynamic: bool) -> None:
    """Say, once per structure, that its budget is spent and what happens now."""
    if record.warned:
        return
    record.warned = True
    then = (
        "sizes become graph inputs from now on (dynamic shapes) and one more graph is "
        "compiled for all sizes; any other graph of this structure runs op by op, uncompiled"
        if forcing_dynamic
        else "its other graphs run op by op, uncompiled"
    )
    warnings.warn(
        f"lazygen: a step structure of {record.ops} ops compiled {record.compiles} graphs on "
        f"the {backend_name} backend (LAZYGEN_RECOMPILE_LIMIT={settings.recompile_limit}); "
        f"{then}. Set LAZYGEN_EXPLAIN_RECOMPILES=1 to see what changes between them, "
        "LAZYGEN_DYNAMIC_SHAPES=1 or lazygen.runtime.mark_dynamic() for changing sizes, or "
        "raise the limit (lazygen.runtime.config.set_recompile_limit).",
        RecompileLimitWarning,
        stacklevel=user_stacklevel(),
    )
