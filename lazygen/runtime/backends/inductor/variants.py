"""Why Inductor compiles another variant of a graph lazygen already compiled, told the way
lazygen's own recompiles are (``graph/recompiles.py``): which input, which value or which
size condition, and the user's line of the op that reads it.

Two causes, both decided inside ``CompiledGraph``: a scalar compiled in as a constant (a
lowering needed its value) takes a value no variant was compiled for (``value``), or the
sizes of a graph compiled for all sizes break a condition Inductor's tracing put on them
(``guard``). Each is counted as ``InductorRecompile`` and, by reason, as
``Recompile_value`` or ``Recompile_guard``; with ``LAZYGEN_EXPLAIN_RECOMPILES`` set it is
printed.
"""

from __future__ import annotations

import re

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

from ...graph.recompiles import Explanation
from .lowering import IR_NODE

_READ = torch.ops.aten._local_scalar_dense.default
_INPUT = re.compile(r"L\['t(\d+)'\]")


def reader(module: torch.fx.GraphModule, index: int) -> tuple[str, str | None]:
    """The first op reading graph input ``index`` (through a scalar read, if any) and the
    user's line that traced it."""
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    if index >= len(placeholders):
        return f"input {index}", None
    users = list(placeholders[index].users)
    for user in users:
        for node in [user, *user.users] if user.target is _READ else [user]:
            ir_node = node.meta.get(IR_NODE)
            if ir_node is not None and not ir_node.is_input:
                op = ir_node.op_kind or ir_node.op_name or type(ir_node).__name__
                return f"input {index}, read by {op}", ir_node.source
    return f"input {index}", None


def changed_value(
    module: torch.fx.GraphModule, fixed: tuple[int, ...], now: tuple, compiled: list[tuple]
) -> Explanation:
    """The first compiled-in scalar whose value ``now`` differs from the nearest compiled
    variant's (``compiled``: the values of each variant, in ``fixed``'s order)."""
    nearest = max(
        compiled, key=lambda values: sum(a == b for a, b in zip(values, now, strict=False))
    )
    position = next(i for i, (a, b) in enumerate(zip(now, nearest, strict=False)) if a != b)
    what, source = reader(module, fixed[position])
    return Explanation(
        "value",
        -1,
        f"the number {what} is compiled in",
        source,
        f"{now[position]!r}",
        ", ".join(sorted({f"{values[position]!r}" for values in compiled})),
        _size(module),
        layer="inductor",
    )


def rejected_guard(module: torch.fx.GraphModule, parts: list[str], inputs: list) -> Explanation:
    """The first size condition of a graph compiled for all sizes that ``inputs`` break
    (no ``parts``: the graph was compiled for its own sizes only, which these are not)."""
    scope = {"L": {f"t{i}": x for i, x in enumerate(inputs)}}
    failed = next((p for p in parts if not _holds(p, scope)), parts[0] if parts else "")
    if not failed:
        return Explanation(
            "guard",
            -1,
            "Inductor compiled it for its own sizes only (not for all sizes)",
            None,
            ", ".join(_sizes(x) for x in inputs if isinstance(x, torch.Tensor)),
            "the sizes of its first call",
            _size(module),
            layer="inductor",
        )
    indices = sorted({int(i) for i in _INPUT.findall(failed)})
    what, source = reader(module, indices[0]) if indices else ("an input", None)
    sizes = ", ".join(f"input {i}: {_sizes(inputs[i])}" for i in indices)
    return Explanation(
        "guard",
        -1,
        f"sizes of {what} break a condition",
        source,
        sizes or "these sizes",
        failed,
        _size(module),
        layer="inductor",
    )


def _holds(code: str, scope: dict) -> bool:
    try:
        return bool(eval(code, SYMPY_INTERP, scope))  # noqa: S307 (the shape env's own code)
    except Exception:
        return False


def _sizes(x) -> str:
    return str(list(x.shape)) if isinstance(x, torch.Tensor) else repr(x)


def _size(module: torch.fx.GraphModule) -> int:
    return sum(1 for n in module.graph.nodes if n.op == "call_function")
