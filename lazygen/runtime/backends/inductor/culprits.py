"""Which inputs are to blame, in the two places Inductor needs to know: a trace that stopped
at a value-dependent branch (which scalar inputs to compile in: ``scalars_to_fix``), and a
call no compiled variant serves (which input, value or size condition made another
variant: ``changed_value``, ``rejected_guard``, told the way lazygen's own recompiles are,
``graph/recompiles.py``, with the user's line of the op that reads it).

Two causes of a variant, both decided inside ``CompiledGraph``: a scalar compiled in as a
constant takes a value no variant was compiled for (``value``), or the sizes of a graph
compiled for all sizes break a condition Inductor's tracing put on them (``guard``). Each
is counted as ``InductorRecompile`` and, by reason, as ``Recompile_value`` or
``Recompile_guard``; with ``LAZYGEN_EXPLAIN_RECOMPILES`` set it is printed.
"""

from __future__ import annotations

import re

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

from ...graph.recompiles import Explanation
from ...op_registry import base_name
from ..fx.lowering import IR_NODE
from ..fx.lowering import SCALAR_READ as _READ

_EXECUTING = re.compile(r"While executing %(\w+)")


#: The op a ``LoweringException`` names (Inductor's lowering of it refused the value).
_LOWERING_TARGET = re.compile(r"^\s*target: \w+\.(\w+)\.\w+$", re.MULTILINE)

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


# Scalars a trace needs the values of --------------------------------------------------


def scalars_to_fix(
    module: torch.fx.GraphModule, scalar_inputs: dict[torch.fx.Node, int], error: BaseException
) -> set[int]:
    """The scalar inputs read by the nodes of the op a failed trace names: by node name
    (this graph's, or, by op, a node of Inductor's own graph, in the error's text or in
    the frames it was raised through), by op (the target of a lowering that refused the
    value), or by the unbacked symbol it could not decide on (the input read as it).

    Every node of the failing op: a graph has many (one addmm per linear layer), and
    they would otherwise fail, and be fixed, one trace at a time. Never more: a scalar
    fixed that changes every step (an optimizer's bias correction) compiles a variant
    every step."""
    text = _full_text(error)
    nodes = {n.name: n for n in module.graph.nodes}
    found: set[int] = set()
    ops = set(_LOWERING_TARGET.findall(text))
    raised_in = frame_nodes(error)
    needed = symbol_reads(text, raised_in)  # the inputs whose values are needed
    for placeholder, i in scalar_inputs.items():
        if i in needed:
            found.add(i)
            ops |= {_op_name(user) for read in placeholder.users for user in read.users}
    for name in _EXECUTING.findall(text) + [n.name for n in raised_in]:
        node = nodes.get(name)
        if node is not None:
            found |= _scalars_read_by(node, scalar_inputs)
        ops.add(_op_name(node) if node is not None else re.sub(r"_\d+$", "", name))
    for candidate in module.graph.nodes:
        if _op_name(candidate) in ops:
            found |= _scalars_read_by(candidate, scalar_inputs)
    return found


def _scalars_read_by(node: torch.fx.Node, scalar_inputs: dict[torch.fx.Node, int]) -> set[int]:
    found = set()
    for operand in node.all_input_nodes:
        if operand.target is _READ and operand.args[0] in scalar_inputs:
            found.add(scalar_inputs[operand.args[0]])
    return found


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return base_name(target) if isinstance(target, torch._ops.OpOverload) else ""


#: How Inductor refuses a scalar input whose value it needs: a data-dependent guard, a
#: lowering converting the unbacked symbol to a number (to an int; to a float, as
#: ``constant_pad_nd`` does with a float pad value: "Cannot convert expression to float"), or
#: one handing it on to an ATen fallback kernel, whose FX node cannot hold a sympy symbol
#: (``scatter.value``'s value: "argument of type: <class 'sympy.core.symbol.Symbol'>").
_NEEDS_VALUE = (
    "data-dependent",
    "DataDependent",
    "Cannot convert symbols to int",
    "Cannot convert expression to float",
    "argument of type: <class 'sympy.",
)


def needs_value(error: BaseException) -> bool:
    text = _full_text(error)
    return any(words in text for words in _NEEDS_VALUE)


def frame_nodes(error: BaseException) -> list[torch.fx.Node]:
    """The FX nodes being handled where ``error`` (or an exception it came from) was
    raised: the node aot_autograd's interpreter ran (``run_node``'s ``n``), or the node of
    Inductor's graph a pass rewrote (its ``node``). A guard on an unbacked symbol raised in
    a fake kernel names no node in its text."""
    nodes = []
    for raised in _chain(error):
        tb = raised.__traceback__
        while tb is not None:
            local = tb.tb_frame.f_locals
            for name in ("n", "node"):
                if isinstance(local.get(name), torch.fx.Node):
                    nodes.append(local[name])
            tb = tb.tb_next
    return nodes


#: The unbacked symbols a data-dependent error names (``u42``, ``zuf3``).
_UNBACKED = re.compile(r"\b(u\d+|zuf\d+)\b")


def symbol_reads(text: str, nodes: list[torch.fx.Node]) -> set[int]:
    """The graph inputs whose reads defined the unbacked symbols ``text`` names, found in
    the graphs of ``nodes`` (aot's graph, whose inputs are the lazy graph's, in order): its
    ``_local_scalar_dense`` node whose value is the symbol reads that input."""
    symbols = set(_UNBACKED.findall(text))
    found: set[int] = set()
    if not symbols:
        return found
    for graph in {id(n.graph): n.graph for n in nodes}.values():
        positions = {p: i for i, p in enumerate(graph.find_nodes(op="placeholder"))}
        for read in graph.find_nodes(op="call_function", target=_READ):
            if str(read.meta.get("val")) in symbols and read.args[0] in positions:
                found.add(positions[read.args[0]])
    return found


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and the exceptions it was raised from or while handling."""
    chain, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


def _full_text(error: BaseException) -> str:
    parts = []
    for raised in _chain(error):
        parts.append(str(raised))
        parts.extend(getattr(raised, "__notes__", ()))
    return "\n".join(parts)
