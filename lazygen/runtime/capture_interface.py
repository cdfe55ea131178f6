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

from . import op_facts
from .backends import BUILTIN
from .devices import LazyDevice, all_devices, current_index, get_device
from .execution.executor import compile_cached, run, runner, sync
from .graph import graph_key, post_order
from .ir import DeviceData, InputWrite, ScalarData, Value
from .kernel_support import GeneratorData, default_generator
from .state import is_lazy_device, log, once_per_process, register, settings
from .tracing.random_inputs import SeedData, draw_seeds
from .tracing.tensor import fixed_scalars, from_data, inner, to_functional

__all__ = [
    # devices
    "LazyDevice",
    "all_devices",
    "current_index",
    "get_device",
    "is_lazy_device",
    # lazy tensors: the functional wrapper's inner tensor, and tensors made from data
    "fixed_scalars",
    "from_data",
    "inner",
    "to_functional",
    # IR and graphs
    "DeviceData",
    "InputWrite",
    "ScalarData",
    "Value",
    "graph_key",
    "post_order",
    # random ops: the generator state or seed a graph draws from
    "GeneratorData",
    "SeedData",
    "default_generator",
    "draw_seeds",
    # execution: compile a keyed graph once, run it, sync lazy tensors
    "compile_cached",
    "run",
    "runner",
    "sync",
    # settings, logging, the state the front end keeps
    "log",
    "once_per_process",
    "register",
    "settings",
    # facts about ops, and the built-in backends' names
    "BUILTIN",
    "op_fact",
]


def op_fact(name: str):
    """A fact about ops (``op_facts.FACTS``: ``"may_alias"``, ``"host_reads"``...), as the
    core reads it: the front end names ops the way the core does, through the registry."""
    return op_facts.get(name)
