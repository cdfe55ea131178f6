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
import re
from dataclasses import dataclass, field
from types import MappingProxyType

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import _disable_current_modes

from lazygen.runtime import metrics
from lazygen.runtime.devices import LazyDevice
from lazygen.runtime.errors import LazygenRuntimeError
from lazygen.runtime.graph import post_order
from lazygen.runtime.ir import DeviceData, InputWrite, ScalarData, Value
from lazygen.runtime.kernel_support import GeneratorData, default_generator
from lazygen.runtime.ops.facts import HOST_READS, MAY_ALIAS_OPS
from lazygen.runtime.state import settings
from lazygen.runtime.tracing.tensor import fixed_scalars, from_data, inner, to_functional

from . import asserts

# How a graph input is fed at replay (``Capture.feeds`` entries are ``(kind, payload)``).
ARG = 0  # payload: index of the FX graph argument
FIXED = 1  # payload: a tensor fixed at capture (a scalar constant, a module constant)
GENERATOR = 2  # payload: the torch device whose default generator the op draws from

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


#: aot_autograd's wrappers of a random op recomputed in the backward (activation
#: checkpointing): ``run_and_save_rng_state(op, *args)`` returns the generator's state and
#: ``op(*args)``, ``run_with_rng_state(state, op, *args)`` runs ``op`` from that state. They
#: take the state of a torch device's generator, which a lazy graph cannot hand between
#: graphs: the capture runs them on the host, so the partition runs just these nodes
#: eagerly and every other node of the graph lazily.
RNG_STATE_OPS = frozenset(
    {torch.ops.higher_order.run_and_save_rng_state, torch.ops.higher_order.run_with_rng_state}
)

#: aten-level ops that aot_autograd's graphs contain but lazygen's op list names otherwise.
SUBSTITUTES = MappingProxyType(
    {
        torch.ops.prims.convert_element_type.default: lambda x, dtype: torch.ops.aten._to_copy(
            x, dtype=dtype
        ),
    }
)


_EAGER_WORK = ("aten::", "RandomSync::", "SyncedTensors", "TransferFromDevice")
#: Counters of values read on the host: a copy off the device (``TransferFromDevice``) and
#: the ops the fallback report lists as host reads (``.item()``, ``bool()``, ``torch.equal``).
_HOST_READS = frozenset({"TransferFromDevice"}) | HOST_READS


def _fallback_counts() -> dict[str, int]:
    """Eager-fallback (``aten::<op>``), value-dependent random (``RandomSync::<op>``), sync
    and host-read counters: their growth during an op names the ops that cut the capture."""
    return {
        name: value for name, value in metrics.counters().items() if name.startswith(_EAGER_WORK)
    }


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


class _LazyInterpreter(torch.fx.Interpreter):
    """Runs the FX graph on lazy tensors: module constants become device data, and a
    ``device=`` naming the host (the FX graph was traced for host tensors) names the lazy
    device instead, so factories inside the graph are traced too."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        device: LazyDevice,
        host_type: str | None,
        bindings: dict | None = None,
    ):
        super().__init__(gm, garbage_collect_values=True)
        self.device = device
        self.host_type = host_type
        self.bindings = bindings or {}  # ``symbol_bindings``: this call's sizes
        self.constants: set = set()
        self.suspects: dict[str, str] = {}  # FX node name -> its target
        self.seen: set = set()
        self.generators: list = []
        self.asserts: list = []  # (lazy 0-d bool condition, message), in trace order
        self._memory_order: list[int] | None = None
        self._storage: tuple | None = None  # eager's layout of a storage-reading op's input
        self._source: str | None = None  # the user's line of the FX node being run

    def _lazy(self, value):
        if isinstance(value, torch.Tensor) and value.device.type != settings.device_type:
            detached = value.detach()
            if self.device.backend.torch_data:
                data = self.device.backend.to_data(detached, self.device.backing)
                lazy = from_data(data.clone() if data is detached else data, self.device)
            else:  # ``from_data`` hands a copy to the backend
                lazy = from_data(detached.clone(), self.device)
            self.constants.add(lazy._value.node)
            return to_functional(lazy)
        return value

    def get_attr(self, target, args, kwargs):
        return self._lazy(super().get_attr(target, args, kwargs))

    def _retarget(self, value):
        if isinstance(value, torch.device) and value.type == self.host_type:
            return self.device.torch_device
        return value

    def run_node(self, n: torch.fx.Node):
        if n.op != "call_function":
            return super().run_node(n)
        if n.target in _EAGER_STRIDE_QUERIES:  # eager's, not the lazy tensor's (contiguous)
            eager = _concrete(n.meta.get("val"), self.bindings)
            if eager is not None:
                return eager
        self._memory_order = _permuted_random_input(n, self.bindings)
        self._storage = _eager_layout(n, self.bindings)
        self._source = user_line(n) if self._storage is not None else self._source
        before = _fallback_counts()
        result = super().run_node(n)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        grown = {name for name, value in _fallback_counts().items() if value > before.get(name, 0)}
        self._source = user_line(n) if settings.record_source else None
        self._check(n, args, kwargs, result, bool(grown), bool(grown & _HOST_READS))
        return result

    def call_function(self, target, args, kwargs):
        if self.host_type is not None and "device" in kwargs:
            kwargs = {k: self._retarget(v) for k, v in kwargs.items()}
        substitute = SUBSTITUTES.get(target)
        if substitute is not None:
            return substitute(*args, **kwargs)
        if target in RNG_STATE_OPS:
            return self._on_host(target, args, kwargs)
        if target in asserts.ASSERT_OPS:
            cond, message, returned = asserts.trace(target, args, kwargs)
            if _is_lazy(cond):  # a graph result the replay checks (``asserts.check``)
                self.asserts.append((cond, message))
                return returned
        order = self._memory_order
        if order is not None:
            return _in_memory_order(target, args, kwargs, order)
        if self._storage is not None:
            return _on_eager_storage(target, args, kwargs, self._storage, self._source)
        return super().call_function(target, args, kwargs)

    def _on_host(self, target, args, kwargs):
        """Run an op on host copies of its lazy arguments (a read of their values, so the
        FX node is a cut: the partition runs it eagerly at every call) and go on tracing
        with its results as lazy tensors."""

        def host(value):
            return value.cpu() if _is_lazy(value) else value

        args, kwargs = torch.utils._pytree.tree_map(host, (args, kwargs))
        return torch.utils._pytree.tree_map(self._lazy, target(*args, **kwargs))

    def _check(
        self, n: torch.fx.Node, args, kwargs, result, eager_work: bool, host_read: bool
    ) -> None:
        """Sort the device data an op made. Without eager work (no fallback, no sync) it is
        a constant: a factory's result, an ``empty`` a kernel fills with IR, an uploaded
        host scalar; it replays as it is, unless it is the result of a random op (drawn
        eagerly: it must be drawn again at every call). With eager work the op is a cut
        when it read lazy inputs or drew random numbers, and a constant otherwise. An op
        that read values on the host (``tolist``, ``item``) may have built IR from them
        (slice bounds, sizes) without making device data: a cut when it read lazy inputs."""
        flat = torch.utils._pytree.tree_leaves(result)
        made = [inner(t)._value.node for t in flat if _is_lazy(t)]
        data = self._walk_new(made)
        fresh = [n for n in made if type(n) is DeviceData and n not in self.constants]
        seeded = isinstance(n.target, torch._ops.OpOverload) and (
            torch.Tag.nondeterministic_seeded in n.target.tags
        )
        if not eager_work and not (seeded and fresh):
            self.constants.update(data)
            return
        if not fresh and not data and not host_read:
            return
        reads = any(_is_lazy(a) for a in torch.utils._pytree.tree_leaves((args, kwargs)))
        if reads or seeded:
            self.suspects[n.name] = str(n.target)
        else:
            self.constants.update(fresh)
            self.constants.update(data)

    def _walk_new(self, roots) -> list:
        """Walk the IR an op added: record its generator inputs in the order they were
        made, and return the device data it reads that no earlier op made or read."""
        data = []
        stack = [n for n in roots if n not in self.seen]
        while stack:
            node = stack.pop()
            if node in self.seen:
                continue
            self.seen.add(node)
            if self._source is not None and not node.is_input:
                node.source = self._source  # the FX node's line, not the frame calling it
            if isinstance(node, GeneratorData):
                self.generators.append(node)
            elif type(node) is DeviceData and node not in self.constants:
                data.append(node)
            stack.extend(reversed([v.node for v in node.inputs() if v.node not in self.seen]))
        return data


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def user_line(n: torch.fx.Node) -> str | None:
    """``file:line`` of the user's code that traced an FX node: the innermost frame of its
    ``stack_trace`` (Dynamo records the user's frames only)."""
    frames = _FRAME.findall(n.meta.get("stack_trace") or "")
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def symbol_bindings(gm: torch.fx.GraphModule, args: list) -> dict:
    """The symbols of Dynamo's example values (a dynamic dimension's ``s0``, as a size or a
    stride of an argument or an int argument) -> this call's numbers, for ``layout``."""
    bindings = {}

    def bind(symbolic, concrete) -> None:
        if isinstance(symbolic, torch.SymInt) and symbolic.node.expr.is_Symbol:
            bindings[symbolic.node.expr] = concrete

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, arg in zip(placeholders, args, strict=False):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and isinstance(arg, torch.Tensor):
            sizes = (*val.shape, *val.stride())
            for symbolic, concrete in zip(sizes, (*arg.shape, *arg.stride()), strict=False):
                bind(symbolic, concrete)
            bind(val.storage_offset(), arg.storage_offset())
        elif isinstance(val, torch.SymInt) and type(arg) is int:
            bind(val, arg)
    return bindings


def _concrete(n, bindings: dict):
    """An example value's int, or its ``SymInt``s (a list of them too) evaluated with
    ``bindings``; None when a symbol is not bound."""
    if type(n) is int:
        return n
    if isinstance(n, (list, tuple)):
        values = [_concrete(v, bindings) for v in n]
        return None if None in values else type(n)(values)
    try:
        return int(n.node.expr.xreplace(bindings))
    except (TypeError, AttributeError):  # a symbol this call's arguments do not bind
        return None


#: Stride and offset queries in a graph with dynamic sizes (Longformer's ``_chunk`` reads
#: ``stride()`` for its ``as_strided``): answered with eager's layout from the example
#: values, as Dynamo bakes them in where sizes are static.
_EAGER_STRIDE_QUERIES = frozenset(
    {
        torch.ops.aten.sym_stride.int,
        torch.ops.aten.sym_stride.default,
        torch.ops.aten.sym_storage_offset.default,
    }
)


def layout(val: torch.Tensor, bindings: dict) -> tuple | None:
    """``(sizes, strides, storage_offset)`` of an example value in eager for this call: its
    symbolic sizes evaluated with ``bindings`` (None when one is not bound)."""
    eager = (
        _concrete(tuple(val.shape), bindings),
        _concrete(tuple(val.stride()), bindings),
        _concrete(val.storage_offset(), bindings),
    )
    return None if None in eager else eager


def _permuted_random_input(n: torch.fx.Node, bindings: dict) -> list[int] | None:
    """For an elementwise random op (results of its first argument's shape) whose first
    argument is, in eager, a dense tensor laid out in another order than its dimensions
    (a transpose): the dimensions from outermost to innermost in memory. Eager draws the
    random numbers in memory order; lazy tensors are contiguous, so the op is traced on the
    permuted tensor (whose logical order is eager's memory order) and permuted back."""
    if not isinstance(n.target, torch._ops.OpOverload) or not n.args:
        return None
    if torch.Tag.nondeterministic_seeded not in n.target.tags:
        return None
    first = n.args[0]
    val = first.meta.get("val") if isinstance(first, torch.fx.Node) else None
    eager = layout(val, bindings) if isinstance(val, torch.Tensor) else None
    if eager is None or val.dim() < 2 or _is_contiguous(*eager[:2]):
        return None
    sizes, strides, _ = eager
    outs = torch.utils._pytree.tree_leaves(n.meta.get("val"))
    if not outs or any(
        not isinstance(o, torch.Tensor) or (layout(o, bindings) or ((),))[0] != sizes for o in outs
    ):
        return None
    order = sorted(range(val.dim()), key=lambda d: (-strides[d], d))
    # dense: contiguous once its dimensions are put in memory order
    if not _is_contiguous([sizes[d] for d in order], [strides[d] for d in order]):
        return None
    return order


def _in_memory_order(target, args, kwargs, order: list[int]):
    inverse = sorted(range(len(order)), key=order.__getitem__)
    args = (args[0].permute(order), *args[1:])
    result = target(*args, **kwargs)
    return torch.utils._pytree.tree_map(
        lambda r: r.permute(inverse) if isinstance(r, torch.Tensor) else r, result
    )


_aten = torch.ops.aten
#: Ops whose sizes, strides and offset address their first argument's *storage*, as eager
#: lays it out, not its logical elements (``as_strided`` ignores its input's strides).
_STORAGE_READERS = frozenset(
    {_aten.as_strided.default, _aten.as_strided_copy.default, _aten.as_strided_scatter.default}
)


def _is_contiguous(sizes, strides) -> bool:
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides), strict=True):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _eager_layout(n: torch.fx.Node, bindings: dict) -> tuple | None:
    """For a storage-reading op whose first argument is, in eager, not a contiguous tensor
    at offset 0 (a transpose, a slice, a view of one: aot_autograd's graphs keep views as
    views), that argument's ``(sizes, strides, storage_offset)``. Lazy tensors hold their
    logical elements contiguously, so the op's strides would address other elements
    (Longformer's sliding-window chunks: ``as_strided`` of a view of a transpose)."""
    if n.target not in _STORAGE_READERS or not n.args:
        return None
    first = n.args[0]
    val = first.meta.get("val") if isinstance(first, torch.fx.Node) else None
    eager = layout(val, bindings) if isinstance(val, torch.Tensor) else None
    if eager is None:
        return None
    sizes, strides, offset = eager
    if (offset == 0 and _is_contiguous(sizes, strides)) or 0 in sizes:
        return None
    return eager


def _extent(sizes, strides, offset: int) -> int:
    """One past the last storage position a strided view reaches."""
    if 0 in sizes:
        return 0
    return (
        offset + sum((size - 1) * stride for size, stride in zip(sizes, strides, strict=True)) + 1
    )


def _strided_arguments(target, args, kwargs, offset: int) -> tuple:
    """``(size, stride, storage_offset)`` of an ``as_strided*`` call, its input's offset
    when none is given (eager's default), and the arguments before them."""
    head = 2 if target is _aten.as_strided_scatter.default else 1
    size, stride = args[head], args[head + 1]
    given = args[head + 2] if len(args) > head + 2 else kwargs.get("storage_offset")
    return args[:head], size, stride, offset if given is None else given


def _check_reads_within(target, layout, size, stride, storage_offset, extent, line) -> None:
    """Every storage position the op reads must be one of its input's elements: the rest
    of eager's storage (a base's elements a slice leaves out) is in no tensor of the graph."""
    if target is _aten.as_strided_scatter.default:
        return  # it reads back the input's own positions
    sizes, strides, offset = layout
    held = torch.zeros(extent, dtype=torch.bool)
    held.as_strided(sizes, strides, offset).fill_(True)
    if not bool(held.as_strided(size, stride, storage_offset).all()):
        raise LazygenRuntimeError(
            f"lazygen: {target} at {line or 'an unknown line'} reads storage its input "
            f"(sizes {list(sizes)}, strides {list(strides)}, offset {offset}) does not "
            "hold: the elements of its base tensor outside that view. lazygen cannot "
            "compile that (the graph runs eagerly); call it on the base tensor instead."
        )


def _on_eager_storage(target, args, kwargs, layout, line=None):
    """Run a storage-reading op on eager's storage, rebuilt from the input's elements at
    the positions eager's layout gives them."""
    sizes, strides, offset = layout
    head, size, stride, storage_offset = _strided_arguments(target, args, kwargs, offset)
    x = head[0]
    extent = max(_extent(sizes, strides, offset), _extent(size, stride, storage_offset))
    _check_reads_within(target, layout, size, stride, storage_offset, extent, line)
    storage = torch.as_strided_scatter(x.new_zeros(extent), x, sizes, strides, offset)
    if target is _aten.as_strided_scatter.default:
        written = target(storage, head[1], size, stride, storage_offset)
        return _aten.as_strided_copy.default(written, sizes, strides, offset)
    return target(storage, size, stride, storage_offset)


def _is_lazy(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == settings.device_type


def host_type_of(args, gm: torch.fx.GraphModule | None = None) -> str | None:
    """Where the FX graph's tensors live in the caller's program (results go back there;
    ``device=`` of a factory naming it names the lazy device instead): the device type of
    the first tensor argument, None when it is lazy. A graph without tensor arguments
    (``torch.as_tensor([n])`` then ``clamp``, a ``randn``) has only its own factories: the
    device of Dynamo's example values, in ``gm``'s nodes (no example values: None)."""
    for a in args:
        if isinstance(a, torch.Tensor):
            return None if _is_lazy(a) else a.device.type
    if gm is not None:
        for node in gm.graph.nodes:
            for val in torch.utils._pytree.tree_leaves(node.meta.get("val")):
                if isinstance(val, torch.Tensor):
                    return None if _is_lazy(val) else val.device.type
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
    arg_of: dict = {}
    lazy_args = []
    stand_ins = []  # (FX argument index, its lazy stand-in)
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            t = inner(a) if _is_lazy(a) else None
            data = t._value.node.data if t is not None else a.detach()
            if device.backend.torch_data:
                lazy = from_data(device.backend.to_data(data, device.backing), device)
            else:  # a stand-in of its own: the backend's data may share memory (DLPack)
                lazy = from_data(data.clone(), device)
            arg_of[lazy._value.node] = i
            lazy_args.append(to_functional(lazy))
            stand_ins.append((i, lazy_args[-1]))
        else:
            lazy_args.append(a)
    host = host_type_of(args, gm)
    bindings = symbol_bindings(gm, args)
    interpreter = _LazyInterpreter(gm, device, host, bindings)
    interpreter.seen.update(arg_of)
    before = _fallback_counts()
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
    after = _fallback_counts()
    fell_back = sorted(name for name, n in after.items() if n > before.get(name, 0))
    result = Capture()
    values: dict[Value, int] = {}
    mutated, unwritable = _mutated_arguments(stand_ins, args, arg_of)
    now_in = {value: i for i, value in mutated.items()}  # the argument holds it after replay
    views = _views(gm, args, bindings) if host is not None else {}
    for position, out in enumerate(flat_out):
        if not isinstance(out, torch.Tensor):
            result.results.append((CONSTANT, out))
            continue
        value = inner(out)._value if _is_lazy(out) else None
        if value is None:  # a host tensor made by an explicit device= elsewhere
            result.results.append((CONSTANT, out))
        elif value in now_in:
            result.results.append((PASS, now_in[value]))
        elif value.node in arg_of and arg_of[value.node] not in mutated:
            result.results.append((PASS, arg_of[value.node]))
        elif value.node.is_input and value.node in interpreter.constants:
            result.results.append((CONSTANT, value.node.data))
        elif position in views:
            result.results.append((VIEW, views[position]))
        else:
            result.results.append((RESULT, values.setdefault(value, len(values))))
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
    for node in result.order:
        if not node.is_input:
            continue
        if node in arg_of:
            result.feeds.append((ARG, arg_of[node]))
        elif isinstance(node, ScalarData) and not device.backend.torch_data:
            result.feeds.append((FIXED, node.value))  # as the executor feeds scalars
        elif isinstance(node, ScalarData) or node in interpreter.constants:
            result.feeds.append((FIXED, node.materialize()))
        elif isinstance(node, GeneratorData):
            result.feeds.append((GENERATOR, node.device))
        else:  # data computed eagerly during this trace
            result.cuts.append("a value computed eagerly while tracing")
    if result.cuts or interpreter.suspects:
        result.eager_nodes = set(interpreter.suspects)
        result.only_fallbacks = bool(result.eager_nodes) and not any(
            name.startswith("RandomSync::") for name in fell_back
        )
        named = [f"{name} ({target})" for name, target in interpreter.suspects.items()]
        result.cuts = named + [n for n in fell_back if n.startswith("RandomSync::")]
        result.cuts = result.cuts or ["a value computed eagerly while tracing"]
    if unwritable:
        result.cuts += unwritable
        result.only_fallbacks = False
    result.arguments = list(arg_of)
    result.host = host
    result.spec = spec
    result.generators = interpreter.generators
    _check_random_order(result)
    return result


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
        if storage not in bases and offset == 0 and _is_contiguous(sizes, strides):
            bases[storage] = (RESULT, position, math.prod(sizes))
    views = {}
    for position, storage, eager in outputs:
        base = bases.get(storage)
        if base is None or base[:2] == (RESULT, position):
            continue
        if base[0] == RESULT and _extent(*eager) > base[2]:
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
        if tuple(stand_in.shape) != tuple(args[i].shape) or _is_lazy(args[i]):
            unwritable.append(f"argument {i} changed in place in a way a replay cannot write")
            continue
        mutated[i] = value
    return mutated, unwritable


def _written_in_graph(mutated: dict, writable: frozenset, node_of: dict, outputs: list) -> set:
    """The changed arguments the graph may write itself (``InputWrite``, after every other
    node). A lowering may make a view copy, ``clone``, ``_to_copy`` or ``copy`` share its
    input's storage (``MAY_ALIAS_OPS``): a value read from such a result, by a write or
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
        kind = node.op_kind  # "aten::slice_copy" (op_name holds the overload too)
        if not kind.startswith("aten::") or kind[6:] in MAY_ALIAS_OPS:
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
