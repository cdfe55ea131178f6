"""Capture: run an aten-level FX graph once through lazygen's kernels on lazy tensors and
keep the IR it builds, with what each graph input and output of the FX graph maps to.

This is the only place where the Dynamo path traces op by op: every generated kernel,
shape function and lowering is reused as the lazy device uses them. What comes out is a
``Capture``: the post-ordered IR graph, how to feed each of its inputs from the FX graph's
arguments, and how to rebuild the FX graph's outputs from the compiled graph's results.

A capture is *cut* when some value of the graph was computed eagerly while tracing (an op
without a lazy kernel went through the eager fallback, or a random op whose consumption
depends on values synced its inputs): that value is then data of this one call, not a
function of the arguments, and the graph must not be replayed. ``Capture.cuts`` names the
ops responsible; the caller runs those segments eagerly instead (see ``partition``).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import _disable_current_modes

from lazygen.runtime.capture_interface import (
    RANDOM_SYNC,
    DeviceData,
    GeneratorData,
    InputWrite,
    LazyDevice,
    LazyTensor,
    ScalarData,
    SeedData,
    Value,
    default_generator,
    fixed_scalars,
    from_data,
    inner,
    may_alias_input,
    post_order,
    sync,
    to_functional,
)

from .interpreter import LazyInterpreter, fallback_counts, is_lazy
from .layouts import (
    is_contiguous,
    layout,
    storage_extent,
    symbol_bindings,
)

# How a graph input is fed at replay (``Capture.feeds`` entries are ``(kind, payload)``).
ARG = 0  # payload: index of the FX graph argument
FIXED = 1  # payload: a tensor fixed at capture (a scalar constant, a module constant)
GENERATOR = 2  # payload: the torch device whose default generator the op draws from
# payload: (the torch device whose default generator draws the seed, the random op's rank in
# trace order); a seed backend's random op (``random_inputs.SeedData``), a fresh seed a call
SEED = 3

# How an FX graph output is rebuilt (``Capture.results`` entries are ``(kind, payload)``).
RESULT = 0  # payload: index into the compiled graph's results
PASS = 1  # payload: index of the FX graph argument returned as it is
CONSTANT = 2  # payload: a non-tensor output (None, an int), or a constant tensor (cloned)
# payload: (PASS or RESULT, index, sizes, strides, storage offset): eager returns a view of a
# host argument (PASS: its index) or of another output (RESULT: its position in the FX graph's
# outputs), which the replay returns too (``_views``)
VIEW = 3


@dataclass
class Capture:
    """One FX graph traced into IR for one set of input metadata."""

    order: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    feeds: list = field(default_factory=list)
    results: list = field(default_factory=list)
    cuts: list = field(default_factory=list)  # the ops that ran eagerly, or why it is cut
    eager_nodes: set = field(default_factory=set)  # FX nodes that ran through the fallback
    only_fallbacks: bool = True  # every cut is an FX node that ran eagerly (partitionable)
    spec: object = None  # the pytree spec of the FX graph's output
    generators: list = field(default_factory=list)  # GeneratorData in the order traced
    seeds: list = field(default_factory=list)  # SeedData in the order traced
    arguments: list = field(default_factory=list)  # DeviceData of the first call's arguments
    # (FX argument index, compiled graph result index): arguments the graph wrote in place
    # (``copy_`` of aot_autograd's kept inference mutations, an optimizer's ``add_``), with
    # the result holding each one's new value, written back into the argument at replay
    mutations: list = field(default_factory=list)
    # (compiled graph result index, message): tensor assertions, checked at each replay
    asserts: list = field(default_factory=list)
    host: str | None = None  # where results go back (``host_type_of``; None: lazy tensors)

    def release_arguments(self) -> None:
        """Drop the first call's argument data (replays are fed their own). Not before the
        graph is compiled: a backend may compile with example inputs (Inductor does)."""
        for node in self.arguments:
            node.deliver(None)
        self.arguments = []


@contextlib.contextmanager
def _generators_restored(devices):
    """Tracing a random op advances the real generator as eager would (``rt.generator``);
    a capture only builds IR, so the run that follows must start from the same state."""
    generators = list({id(g): g for g in (default_generator(d) for d in devices)}.values())
    states = [g.get_state() for g in generators]
    try:
        yield
    finally:
        for g, state in zip(generators, states, strict=True):
            g.set_state(state)


@contextlib.contextmanager
def _collectives_kept_in_capture(device: LazyDevice):
    """A collective traced on the lazy device is queued to run at the device's next sync
    (``LazyDevice.must_run``: every process must issue it even if it drops the result).
    Traced in a capture it is a node of the captured graph instead, issued each time the
    graph is replayed; left queued, the next ``mark_step`` would issue it once more on this
    process alone and pair it with another process's next collective."""
    with device.lock:
        queued_before = {id(t) for t in device.must_run}
    try:
        yield
    finally:
        with device.lock:
            device.must_run = [t for t in device.must_run if id(t) in queued_before]


def host_type_of(args, gm: torch.fx.GraphModule | None = None) -> str | None:
    """Where the FX graph's tensors live in the caller's program (results go back there;
    ``device=`` of a factory naming it names the lazy device instead): the device type of
    the first tensor argument, None when it is lazy. A graph without tensor arguments
    (``torch.as_tensor([n])`` then ``clamp``, a ``randn``) has only its own factories: the
    device of Dynamo's example values, in ``gm``'s nodes (no example values: None)."""
    for a in args:
        if isinstance(a, torch.Tensor):
            return None if is_lazy(a) else a.device.type
    if gm is not None:
        for node in gm.graph.nodes:
            for val in torch.utils._pytree.tree_leaves(node.meta.get("val")):
                if isinstance(val, torch.Tensor):
                    return None if is_lazy(val) else val.device.type
    return None


def capture(
    gm: torch.fx.GraphModule,
    args: list,
    device: LazyDevice,
    writable: frozenset[int] = frozenset(),
) -> Capture:
    """Trace ``gm`` on lazy stand-ins of ``args`` (real data, so value-dependent kernels
    trace as they would) and describe the IR graph it builds. The graph writes the
    arguments in ``writable`` that it changes itself (``InputWrite`` nodes, after all
    others); the others it changes are written back by the replay (``Capture.mutations``)."""
    arg_of, lazy_args, stand_ins = _stand_ins(args, device)
    host = host_type_of(args, gm)
    bindings = symbol_bindings(gm, args)
    interpreter = LazyInterpreter(gm, device, host, bindings)
    interpreter.seen.update(arg_of)
    flat_out, spec, fell_back = _run(interpreter, device, lazy_args)
    result = Capture()
    values: dict[Value, int] = {}
    mutated, unwritable = _mutated_arguments(stand_ins, args, arg_of)
    now_in = {value: i for i, value in mutated.items()}  # the argument holds it after replay
    views = _views(gm, args, bindings) if host is not None else {}
    result.results = [
        _rebuilt(position, out, values, now_in, arg_of, mutated, interpreter.constants, views)
        for position, out in enumerate(flat_out)
    ]
    for cond, message in interpreter.asserts:
        result.asserts.append((values.setdefault(inner(cond)._value, len(values)), message))
    node_of = {i: node for node, i in arg_of.items()}
    in_graph = _written_in_graph(mutated, writable, node_of, list(values))
    writes = []
    for i, value in mutated.items():
        if i in in_graph:
            writes.append(InputWrite(Value(node_of[i], 0), value))
        else:
            result.mutations.append((i, values.setdefault(value, len(values))))
    result.outputs = list(values)
    roots = result.outputs + [v for write in writes for v in write.operands]
    result.order = _drawing_in_order(roots, interpreter.generators) if roots else []
    # Last: every node reading an argument's old value runs before any write.
    result.order += writes
    _feed(result, arg_of, interpreter.constants, device.backend.torch_data, interpreter.seeds)
    if result.cuts or interpreter.suspects:
        _name_cuts(result, interpreter.suspects, fell_back)
    if unwritable:
        result.cuts += unwritable
        result.only_fallbacks = False
    result.arguments = list(arg_of)
    result.host = host
    result.spec = spec
    result.generators = interpreter.generators
    result.seeds = interpreter.seeds
    _check_random_order(result)
    return result


def _rebuilt(position, out, values: dict, now_in, arg_of, mutated, constants, views) -> tuple:
    """How the replay rebuilds FX output ``out`` (at ``position``): ``(kind, payload)``; a
    computed value gets its index among the graph's outputs (``values``, filled here)."""
    if not isinstance(out, torch.Tensor):
        return (CONSTANT, out)
    value = inner(out)._value if is_lazy(out) else None
    if value is None:  # a host tensor made by an explicit device= elsewhere
        return (CONSTANT, out)
    if value in now_in:
        return (PASS, now_in[value])
    if value.node in arg_of and arg_of[value.node] not in mutated:
        return (PASS, arg_of[value.node])
    if value.node.is_input and value.node in constants:
        return (CONSTANT, value.node.data)
    if position in views:
        return (VIEW, views[position])
    return (RESULT, values.setdefault(value, len(values)))


def _stand_ins(args: list, device: LazyDevice) -> tuple[dict, list, list]:
    """Lazy stand-ins of the FX graph's tensor arguments (real data, so value-dependent
    kernels trace as they would): the argument index of each stand-in's node, the
    arguments to run the graph with, and ``(index, stand-in)`` of each tensor."""
    arg_of: dict = {}
    lazy_args = []
    stand_ins = []  # (FX argument index, its lazy stand-in)
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            lazy_args.append(a)
            continue
        if is_lazy(a):
            lazy = LazyTensor(Value(_OnDemand.stand_in(inner(a), device), 0), device)
        elif device.backend.torch_data:
            lazy = from_data(device.backend.to_data(a.detach(), device.backing), device)
        else:  # a stand-in of its own: the backend's data may share memory (DLPack)
            lazy = from_data(a.detach().clone(), device)
        arg_of[lazy._value.node] = i
        lazy_args.append(to_functional(lazy))
        stand_ins.append((i, lazy_args[-1]))
    return arg_of, lazy_args, stand_ins


class _OnDemand:
    """The data of a lazy argument's stand-in, fetched only if a kernel reads values while
    tracing (a value-dependent op): the argument is then materialised. Most graphs read
    none, so a capture runs nothing, and a step whose later graphs read an earlier one's
    pending outputs is still compiled as one program."""

    __slots__ = ("tensor", "node", "native")

    @classmethod
    def stand_in(cls, tensor: LazyTensor, device: LazyDevice) -> DeviceData:
        fetch = cls()
        fetch.tensor = tensor
        fetch.native = not device.backend.torch_data
        backend = device.backend if fetch.native else None
        value = tensor._value
        fetch.node = DeviceData.pending(fetch, value.node.shapes[value.index], backend)
        return fetch.node

    def wait(self) -> None:
        tensor = self.tensor
        if not tensor._value.node.is_input:
            sync([tensor])
        node = tensor._value.node
        self.node.deliver(node.materialize() if self.native else node.data)


def _run(interpreter: LazyInterpreter, device: LazyDevice, lazy_args: list):
    """Run the FX graph on the stand-ins: its flat outputs, their pytree spec, and the ops
    that went through the eager fallback meanwhile."""
    before = fallback_counts()
    backing = {device.backing, torch.device("cpu")}
    # Without the caller's dispatch modes (aot_autograd runs a graph's first call under
    # one): they are not part of the graph, and a mode's redispatch excludes Functionalize
    # as a functionalization kernel's does, so factories would return bare lazy tensors.
    # The numbers the FX graph holds are its literals, the same at every replay: they are
    # the graph's constants (``FixedScalar``), which a backend may compile in.
    with (
        fixed_scalars(device),
        _disable_current_modes(),
        _generators_restored(backing),
        _collectives_kept_in_capture(device),
        torch.no_grad(),
    ):
        flat_out, spec = torch.utils._pytree.tree_flatten(interpreter.run(*lazy_args))
    after = fallback_counts()
    fell_back = sorted(name for name, n in after.items() if n > before.get(name, 0))
    return flat_out, spec, fell_back


def _feed(result: Capture, arg_of: dict, constants, torch_data: bool, seeds: list) -> None:
    """How the replay feeds each input of the captured graph (or, for data computed
    eagerly during this trace, a cut). A seed is fed fresh at every call, drawn in the order
    the random ops were traced (``seeds``)."""
    rank = {node: i for i, node in enumerate(seeds)}
    for node in result.order:
        if not node.is_input:
            continue
        if node in arg_of:
            result.feeds.append((ARG, arg_of[node]))
        elif isinstance(node, ScalarData) and not torch_data:
            result.feeds.append((FIXED, node.value))  # as the executor feeds scalars
        elif isinstance(node, ScalarData) or node in constants:
            result.feeds.append((FIXED, node.materialize()))
        elif isinstance(node, GeneratorData):
            result.feeds.append((GENERATOR, node.device))
        elif isinstance(node, SeedData):
            result.feeds.append((SEED, (node.device, rank[node])))
        else:  # data computed eagerly during this trace
            result.cuts.append("a value computed eagerly while tracing")


def _name_cuts(result: Capture, suspects: dict, fell_back: list[str]) -> None:
    """Name what cut the capture: the nodes computed eagerly, and random ops that synced."""
    result.eager_nodes = set(suspects)
    result.only_fallbacks = bool(result.eager_nodes) and not any(
        name.startswith(RANDOM_SYNC) for name in fell_back
    )
    named = [f"{name} ({target})" for name, target in suspects.items()]
    result.cuts = named + [n for n in fell_back if n.startswith(RANDOM_SYNC)]
    result.cuts = result.cuts or ["a value computed eagerly while tracing"]


def _views(gm: torch.fx.GraphModule, args: list, bindings: dict) -> dict[int, tuple]:
    """The FX graph's outputs that are, in eager, views of a tensor argument or of another
    output (Dynamo's example values share its storage), as ``VIEW`` payloads by position in
    the flat outputs, with this call's sizes. aot_autograd rebuilds such an output from its
    base with the view's metadata, read from the returned tensor once the view's sizes are
    symbolic: contiguous results in their place (lazy results are) addressed other elements
    of the base, or storage past it (Longformer after a second sequence length: its
    overlapping chunks, ``as_strided`` of an argument, and transposes of its padded
    diagonals). Another output is a base when eager lays it out contiguously from offset 0,
    as the replay returns it, and the view stays within its elements."""
    bases: dict = {}  # storage -> (PASS, argument index) or (RESULT, output position, numel)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, (node, arg) in enumerate(zip(placeholders, args, strict=False)):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and isinstance(arg, torch.Tensor):
            bases.setdefault(StorageWeakRef(val.untyped_storage()), (PASS, i))
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    outputs = []  # (position, storage, eager layout)
    for position, out in enumerate(torch.utils._pytree.tree_leaves(output.args[0])):
        val = out.meta.get("val") if isinstance(out, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor) or out.op == "placeholder":
            continue
        eager = layout(val, bindings)
        if eager is not None:
            outputs.append((position, StorageWeakRef(val.untyped_storage()), eager))
    for position, storage, (sizes, strides, offset) in outputs:
        if storage not in bases and offset == 0 and is_contiguous(sizes, strides):
            bases[storage] = (RESULT, position, math.prod(sizes))
    views = {}
    for position, storage, eager in outputs:
        base = bases.get(storage)
        if base is None or base[:2] == (RESULT, position):
            continue
        if base[0] == RESULT and storage_extent(*eager) > base[2]:
            continue
        views[position] = (base[0], base[1], *eager)
    return views


def _mutated_arguments(stand_ins: list, args: list, arg_of: dict) -> tuple[dict, list]:
    """The arguments the FX graph wrote in place, each with the value it holds at the end:
    its lazy stand-in (a functional tensor) then reads another IR value than the device
    data it started as. A graph that changed an argument's sizes or wrote a lazy argument
    is cut (a write-back into the caller's tensor of the same sizes is all a replay does):
    those come back as the second item, the cut reasons."""
    mutated, unwritable = {}, []
    for i, stand_in in stand_ins:
        value = inner(stand_in)._value
        if value.node in arg_of and arg_of[value.node] == i:
            continue
        if tuple(stand_in.shape) != tuple(args[i].shape):
            unwritable.append(f"argument {i} changed in place in a way a replay cannot write")
            continue
        mutated[i] = value
    return mutated, unwritable


def _written_in_graph(mutated: dict, writable: frozenset, node_of: dict, outputs: list) -> set:
    """The changed arguments the graph may write itself (``InputWrite``, after every other
    node). A lowering may make a view copy, ``clone``, ``_to_copy`` or ``copy`` share its
    input's storage (the op fact ``may_alias``): a value read from such a result, by a write or
    by the caller, after the argument is written would see the new data. So an argument
    qualifies only if no such op, no op outside aten and no other write reads it; the
    others are written back by the replay."""
    candidates = {i for i in mutated if i in writable}
    if not candidates:
        return set()
    order, _ = post_order(outputs + list(mutated.values()))
    aliased = {value.node for value in mutated.values()}  # a write reads it
    for node in order:
        if node.is_input:
            continue
        if may_alias_input(node):
            aliased.update(v.node for v in node.inputs())
    return {i for i in candidates if node_of[i] not in aliased}


def _drawing_in_order(outputs: list, generators: list) -> list:
    """The graph's nodes, operands first, with its random ops in the order they were traced:
    the compiled graph feeds each of them the live generator and runs its nodes in this
    order, so each draws the numbers its eager call drew. Each random op is a root visited
    before the outputs, in trace order; what it reads was traced before it, so the random
    ops among its operands are placed already."""
    order, _ = post_order(outputs)
    if len(generators) < 2:
        return order
    rank = {g: i for i, g in enumerate(generators)}
    draws = []
    for node in order:
        ranks = [rank[v.node] for v in node.inputs() if v.node in rank]
        if ranks and not node.is_input:
            draws.append((min(ranks), node))
    draws.sort(key=lambda draw: draw[0])
    return post_order([Value(node, 0) for _, node in draws] + list(outputs))[0]


def _check_random_order(result: Capture) -> None:
    """The compiled graph is fed the live generator and runs its nodes in post-order: it
    draws eager's numbers only if its random ops draw in the order the FX graph calls them
    (``_drawing_in_order`` orders them so); a graph that still would not is cut."""
    in_graph = set(result.order)
    generators = [g for g in result.generators if g in in_graph]
    if len(generators) < 2:
        return
    first_use = {}
    for position, node in enumerate(result.order):
        for v in node.inputs():
            if isinstance(v.node, GeneratorData):
                first_use.setdefault(v.node, position)
    uses = [first_use.get(g, -1) for g in generators]
    if uses != sorted(uses):
        result.cuts.append("random ops that the graph would run out of eager's order")
        result.only_fallbacks = False
