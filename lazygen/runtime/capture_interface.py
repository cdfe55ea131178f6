"""What a graph-capture front end (``lazygen.dynamo``) uses of the runtime, in one place.

``torch.compile(backend="lazygen")`` hands lazygen FX graphs; ``lazygen.dynamo`` replays them
on lazy tensors, keys and compiles the IR they leave like a ``mark_step`` does, and runs the
result on later calls. It needs more than the public API (``lazygen.runtime``: ``init``,
``backend``, ``metrics``, ``config``, the errors), and exactly this much: every name below
is one the front end reads, grouped by the layer it comes from. The front end imports this
module and the public API only (``tests/architecture/test_layering.py`` checks it), so a
change inside the runtime that keeps these names keeps the front end working, and a change
of one of them shows here.

Nothing in the runtime imports this module: it sits at the top, beside the composition root.
"""

from __future__ import annotations

from . import op_registry
from .backend_interface import make_backend
from .backends import BUILTIN
from .devices import LazyDevice, all_devices, current_index, get_device
from .execution.executor import compile_cached, cut, run, runner, sync, sync_apart
from .graph import graph_key, post_order
from .graph.fragments import Fragment, FragmentCall
from .ir import DeviceData, InputWrite, ScalarData, Value
from .kernel_support import GeneratorData, default_generator
from .state import for_process, is_lazy_device, log, part, settings
from .tracing.random_inputs import SeedData, draw_seeds
from .tracing.tensor import (
    LazyTensor,
    device_data,
    fixed_scalars,
    from_data,
    inner,
    is_lazy,
    new_lazy,
    to_functional,
)

__all__ = [
    # devices
    "LazyDevice",
    "all_devices",
    "current_index",
    "get_device",
    "is_lazy_device",
    # lazy tensors: the functional wrapper's inner tensor, and tensors made from data or IR
    "LazyTensor",
    "device_data",
    "fixed_scalars",
    "from_data",
    "inner",
    "is_lazy",
    "new_lazy",
    "to_functional",
    # IR and graphs
    "DeviceData",
    "InputWrite",
    "ScalarData",
    "Value",
    "graph_key",
    "post_order",
    # a captured step's calls, spliced into the device's pending graph as one program
    "Fragment",
    "FragmentCall",
    # random ops: the generator state or seed a graph draws from
    "GeneratorData",
    "SeedData",
    "default_generator",
    "draw_seeds",
    # execution: compile a keyed graph once, run it, sync lazy tensors, end a step
    "compile_cached",
    "cut",
    "run",
    "runner",
    "sync",
    "sync_apart",
    # settings, logging, the state the front end keeps (per run, and for the process:
    # what torch and Dynamo hold)
    "for_process",
    "log",
    "part",
    "settings",
    # facts about ops, the built-in backends' names, a backend made from its name
    "BUILTIN",
    "make_backend",
    "may_alias_input",
    "host_read_counters",
    "FALLBACK_COUNTER",
    "RANDOM_SYNC",
]

#: The prefix of the counters of aten ops run by the eager fallback (``aten::nonzero``).
FALLBACK_COUNTER = op_registry.DEFAULT_NAMESPACE + "::"
#: The prefix of the counters of random ops replayed on their inputs' values (a sync).
RANDOM_SYNC = op_registry.RANDOM_SYNC


def may_alias_input(node) -> bool:
    """Whether a lowering may make ``node``'s result share an input's storage: an op outside
    aten, or one with the op fact ``may_alias`` (a view copy, ``clone``, ``_to_copy``...)."""
    packet = op_registry.packet_of(node.op_kind)  # "aten::slice_copy": every overload
    if packet is None or op_registry.namespace_of(packet) != op_registry.DEFAULT_NAMESPACE:
        return True
    return op_registry.has("may_alias", packet)


def host_read_counters() -> frozenset[str]:
    """The counters of the ops whose eager run is the host reading device data
    (``aten::_local_scalar_dense``: ``.item()``), the op fact ``host_reads``."""
    return frozenset(op_registry.fallback_counter(p) for p in op_registry.get("host_reads"))
