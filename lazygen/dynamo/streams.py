"""The lazy device's current stream, answered to Dynamo without asking torch each time.

Why this exists: while an accelerator is available, Dynamo registers its current stream in
every frame it compiles, and each call of a compiled frame then runs
``torch._dynamo.utils.get_current_stream(torch.device(...))`` before its graph (bytecode
Dynamo generates, read at call time from that module). For the lazy device that lookup goes
``torch.accelerator.current_stream`` -> C++ -> the Python device guard and builds a new
``torch.Stream`` each time: measured 3-8 us per compiled frame, about 15 us of a tiny
training step of 130 us, paid by every compiled frame of a process in which lazygen is
initialised (Inductor's own included).

The lazy device has exactly one stream per device index (id 0: the guard implements no
stream pool, ``set_stream`` changes nothing), so its current stream never changes and one
``torch.Stream`` per index is the exact answer. :func:`install` replaces Dynamo's lookup with
one that returns that object for the lazy device and defers to torch's for any other device.

The registration itself has a cost too: the prologue Dynamo puts before a frame's graph
(build ``torch.device``, look the stream up, ``store_user_object_weakrefs``) measured about
5 us per compiled frame's call, 10 us of a 120 us training step of two frames. For a frame
that never reads its current stream (no stream or event op, no ``current_stream()``), the
registry entry is read by nobody; :func:`forget_unread_current_stream`, called by the
backend while Dynamo compiles the frame, drops it, so no prologue is generated.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx

from lazygen.runtime import capture_interface as runtime

#: Each lazy device index's one stream, as torch answered it the first time.
_streams: dict[int, torch.Stream] = {}
#: The same streams by the ``torch.device`` Dynamo's bytecode asks with (an explicit index:
#: ``torch.device('lazygen', 0)``), so a call is one dict look-up (~0.3 us against ~1.4 us
#: through the device checks, per compiled frame and call).
_by_device: dict[torch.device, torch.Stream] = {}
_torch_lookup: list[Callable[[torch.device], torch.Stream]] = []  # Dynamo's own, once installed


def current_stream(device: torch.device) -> torch.Stream:
    """What ``torch.accelerator.current_stream(device)`` answers, from a per-index cache for
    the lazy device."""
    stream = _by_device.get(device)
    if stream is not None:
        return stream
    if not runtime.is_lazy_device(device):
        return _torch_lookup[0](device)
    index = runtime.current_index() if device.index is None else device.index
    stream = _streams.get(index)
    if stream is None:
        stream = _streams[index] = _torch_lookup[0](device)
    if device.index is not None:  # without one, the answer follows the current index
        _by_device[device] = stream
    return stream


def install() -> None:
    """Make Dynamo's compiled frames use :func:`current_stream` (idempotent)."""
    # Imported here, like the backend's aot_autograd: importing lazygen.dynamo must not pull
    # in Dynamo for programs that never compile.
    import torch._dynamo.utils

    if not _torch_lookup:
        _torch_lookup.append(torch._dynamo.utils.get_current_stream)
        torch._dynamo.utils.get_current_stream = current_stream


def forget_unread_current_stream(gm: torch.fx.GraphModule) -> bool:
    """Drop Dynamo's registration of the current stream for the frame being compiled when
    nothing in it reads that stream; returns whether it did.

    Dynamo registers the stream as user object 0 when it starts tracing a frame, as a
    variable it realises only when the program asks for it, and emits the prologue that
    refreshes the registry whenever anything is registered. It is read only through that
    variable (realised when the program uses it) or through its index, which stream and
    event ops put in the graph. So the entry is dropped only when it is the sole one, its
    variable was never realised, and no node of the graph (or of a subgraph) is a stream
    op, refers to the registry, or carries a stream annotation. Anything else (a tracer
    without stream state, a future Dynamo that registers differently) leaves it as it is.
    """
    # Dynamo's modules, imported when Dynamo calls the backend (as in ``install``).
    from torch._dynamo import graph_bytecode_inputs as registry
    from torch._dynamo.symbolic_convert import InstructionTranslator
    from torch._dynamo.variables.lazy import LazyVariableTracker

    constructors = registry.index_to_bytecode_constructor
    if list(constructors) != [registry.CURRENT_STREAM_INDEX]:
        return False
    tx = getattr(InstructionTranslator, "current_tx", lambda: None)
    try:
        tx = tx()
    except AttributeError:  # not called while Dynamo traces a frame
        return False
    stack = getattr(getattr(tx, "symbolic_stream_state", None), "cur_stream_stack", None)
    if stack is None or len(stack) != 1:
        return False
    (current,) = stack
    if not isinstance(current, LazyVariableTracker) or current.is_realized():
        return False
    if any(
        _reads_streams(node)
        for module in gm.modules()
        if isinstance(module, torch.fx.GraphModule)
        for node in module.graph.nodes
    ):
        return False
    constructors.clear()
    return True


def _reads_streams(node: torch.fx.Node) -> bool:
    """Whether a node may read a registered stream: a stream or event op (namespace
    ``streams``), a call into Dynamo's registry, or a node run under a stream annotation."""
    target = node.target
    # an OpOverload or a packet (``torch.ops.streams.fork``): its namespace
    is_op = isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))
    if is_op and runtime.op_identity.namespace_of(target) == "streams":
        return True
    if getattr(target, "__module__", None) == "torch._dynamo.graph_bytecode_inputs":
        return True
    custom = node.meta.get("custom")
    return isinstance(custom, dict) and "stream" in custom
