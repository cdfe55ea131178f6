"""IR dumps: ``dump_ir``, ``render_ir``, ``last_graph()`` and ``LAZYGEN_SAVE_TENSORS_FILE``.

``dump_ir(tensors, "text" | "dot" | "backend")``; ``render_ir`` draws with Graphviz;
``last_graph()`` is what the backend ran last; with ``LAZYGEN_SAVE_TENSORS_FILE`` every
synced graph's IR is appended to that file (``LAZYGEN_SAVE_TENSORS_FMT``: ``text`` or
``dot``), after the Python frames that synced it and with the user's line of each node, as
LTC's ``LTC_SAVE_TENSORS_FILE`` does (that name is read too). Both are read at each sync, so
a program may set them at any time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import traceback

from . import state
from .errors import LazygenRuntimeError
from .graph import post_order
from .graph.uncompiled import UncompiledGraph
from .ir import Node, Value
from .sources import is_internal_file
from .tracing.tensor import inner


def _graph(tensors) -> tuple[list[Node], dict[Node, int], list[Value]]:
    outputs = list(dict.fromkeys(inner(t)._value for t in tensors))
    order, position = post_order(outputs)
    return order, position, outputs


def _operand_text(operand, position) -> str:
    if type(operand) is Value:
        return f"%{position[operand.node]}" + (f".{operand.index}" if operand.index else "")
    if operand is None:
        return "None"
    return "[" + ", ".join(_operand_text(o, position) for o in operand) + "]"


def _label(node: Node) -> str:
    if node.is_input:
        return {"scalar_data": "scalar"}.get(node.op_name, node.op_name)
    return node.op_kind


def _shapes_text(node: Node) -> str:
    return ", ".join(
        "undefined" if s is None else f"{s.dtype}{list(s.sizes)}".replace("torch.", "")
        for s in node.shapes
    )


def to_text(order, position, outputs) -> str:
    """The text form of a graph (``dump_ir(..., "text")``): one line per node."""
    lines = ["IR {"]
    for node in order:
        operands = ", ".join(_operand_text(o, position) for o in node.operands)
        attrs = ", ".join(repr(a) for a in node.attrs)
        args = ", ".join(p for p in (operands, attrs) if p)
        source = f", location={node.source}" if node.source else ""
        lines.append(
            f"  %{position[node]} = {_label(node)}({args}), "
            f"shape=({_shapes_text(node)}){source}"
        )
    roots = ", ".join(_operand_text(v, position) for v in outputs)
    lines.append(f"  ROOT ({roots})")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_dot(order, position, outputs) -> str:
    """The Graphviz form of a graph (``dump_ir(..., "dot")``)."""
    lines = ["digraph G {", "  node [shape=box];"]
    roots = {v.node for v in outputs}
    for node in order:
        label = f"{_label(node)}\\n{_shapes_text(node)}"
        if node.source:
            label += f"\\n{os.path.basename(node.source)}"
        style = ", style=bold" if node in roots else ""
        lines.append(f'  n{position[node]} [label="{label}"{style}];')
    for node in order:
        for i, value in enumerate(node.inputs()):
            lines.append(f'  n{position[value.node]} -> n{position[node]} [label="{i}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def dump_ir(tensors, ir_format: str = "text") -> str:
    """The pending graph that computes ``tensors``, as text (as ``torch._lazy.debug``).

    Args:
        tensors: Lazy tensors whose pending IR to dump.
        ir_format: ``"text"`` (lazygen's IR), ``"dot"`` (Graphviz) or ``"backend"`` (the
            device's backend's lowering of it; empty once the tensors are synced).

    Returns:
        The dump.
    """
    order, position, outputs = _graph(tensors)
    if ir_format == "text":
        return to_text(order, position, outputs)
    if ir_format == "dot":
        return to_dot(order, position, outputs)
    if ir_format == "backend":
        pending = [v for v in outputs if not v.node.is_input]
        if not pending:
            return ""
        device = next(inner(t)._device for t in tensors)
        order, position = post_order(pending)
        return device.backend.dump(order, pending, device.backing)
    raise ValueError(f"unknown IR format {ir_format!r}; expected 'text', 'dot' or 'backend'")


def render_ir(tensors, path: str) -> str:
    """Write the IR graph as an image (format from the suffix: .svg, .png, .pdf) with Graphviz."""
    dot = shutil.which("dot")
    if dot is None:
        raise LazygenRuntimeError(
            "lazygen.runtime.debug.render_ir needs Graphviz's `dot` program on PATH "
            "(e.g. `apt-get install graphviz`); debug.dump_ir(tensors, 'dot') gives the source"
        )
    image_format = os.path.splitext(path)[1].lstrip(".") or "svg"
    subprocess.run(
        [dot, f"-T{image_format}", "-o", path],
        input=dump_ir(tensors, "dot").encode(),
        check=True,
    )
    return path


# The latest graph, and graphs saved as they are synced ------------------------------------

_save_lock = threading.Lock()


class Synced:
    """What debugging remembers of the syncs (a part of ``state.runtime``).

    The latest graph a sync ran, and how many graphs this process appended to
    LAZYGEN_SAVE_TENSORS_FILE.
    """

    def __init__(self, saved: int = 0) -> None:
        """No latest graph yet; ``saved`` graphs already in the file."""
        self.latest: tuple | None = None  # (backend, executable)
        self.saved = saved

    def on_reset(self) -> Synced | None:
        """A reset forgets the latest graph but keeps the count.

        No two graphs in the file may share a number.
        """
        return Synced(self.saved) if self.saved else None


def save_tensors_file() -> str | None:
    """Where every synced graph's IR is appended; None when that is off.

    ``LAZYGEN_SAVE_TENSORS_FILE``, or LTC's ``LTC_SAVE_TENSORS_FILE``, read at each sync so
    that a user may set it mid-run.
    """
    return (
        os.environ.get("LAZYGEN_SAVE_TENSORS_FILE")
        or os.environ.get("LTC_SAVE_TENSORS_FILE")
        or None
    )


def note_sync(device, executable, order: list[Node], outputs) -> None:
    """The executor's hook for each graph it runs.

    It remembers the graph for ``last_graph()``, and appends its IR to
    ``LAZYGEN_SAVE_TENSORS_FILE`` when that is set (nothing else).
    """
    if type(executable) is UncompiledGraph:  # its text now: it holds the step's IR and data
        executable = executable.describe()
    state.part(Synced).latest = (device.backend, executable)
    path = save_tensors_file()
    if path:
        _save(path, device, order, outputs)


def last_graph() -> str:
    """The backend's text of the latest graph a sync ran; ``""`` before the first.

    For TorchScript its graph, for fx and inductor the GraphModule's code; as LTC's
    ``_get_latest_computation_graph``.
    """
    latest = state.part(Synced).latest
    if latest is None:
        return ""
    backend, executable = latest
    return executable if type(executable) is str else backend.describe(executable)


def _save(path: str, device, order, outputs) -> None:
    position = {node: i for i, node in enumerate(order)}
    ir_format = os.environ.get("LAZYGEN_SAVE_TENSORS_FMT", "text")
    body = (to_dot if ir_format == "dot" else to_text)(order, position, outputs)
    synced = state.part(Synced)
    with _save_lock:
        synced.saved += 1
        header = (
            f"[lazygen graph {synced.saved}] device {device.torch_device}, backend "
            f"{device.backend.name}, {len(order)} nodes, {len(outputs)} outputs\n"
        )
        with open(path, "a", encoding="utf-8") as file:
            file.write(header + python_stacktrace() + body + "\n")


def python_stacktrace() -> str:
    """The frames that led here, innermost first: LTC's "Python Stacktrace" block.

    They go from lazygen's API entry point (e.g. ``mark_step``) outwards through the user's
    code.
    """
    frames = traceback.extract_stack()
    lines = []
    for frame in reversed(frames):
        if frame.filename == _API_FILE or not is_internal_file(frame.filename):
            lines.append(f"  {frame.name} ({frame.filename}:{frame.lineno})")
    return "Python Stacktrace:\n" + "\n".join(lines) + "\n"


_API_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
