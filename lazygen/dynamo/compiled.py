"""The callable that replaces one aten-level FX graph (a forward, backward or inference graph
from aot_autograd): captured once per input metadata, then replayed.

Steady state is one dict look-up on the inputs' metadata, the inputs put in the compiled
graph's parameter order, ``backend.execute`` and the outputs put back in the FX graph's
order: no per-op tracing, no functionalization, no shape inference. Host (CPU) tensors go
in and come out as they are when the backend's data device is the host; lazy tensors go in
as their device data and come out as lazy tensors.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable

import torch
import torch.fx
from torch.utils._python_dispatch import _disable_current_modes

from lazygen.runtime import LazyGraphError, metrics
from lazygen.runtime import capture_interface as runtime
from lazygen.runtime.capture_interface import LazyDevice, graph_key, log, settings

from . import asserts, partition, uploads
from .capture import ARG, FIXED, PASS, RESULT, VIEW, Capture, capture, host_type_of
from .lazy_data import lazy_data, lazy_results
from .partition import Eager, Partitioned
from .random_feeds import RandomFeeds
from .splice import Splice, settle_prelude, splice_refusal


class Compiled(weakref.WeakSet):
    """Every FX graph compiled since the last reset, for ``report()`` (a part of the
    runtime object; weakly: Dynamo owns them)."""


def _describe(a) -> object:
    """What a capture depends on in one argument: a tensor's dtype, sizes and whether it is
    lazy; the value of anything else (an int from a dynamic size is baked into the IR as an
    attribute)."""
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.shape, a.device.type)
    return a


def _static_tensors(gm: torch.fx.GraphModule) -> list[torch.Tensor | None]:
    """Per argument: Dynamo's example value when it is a tensor of static sizes and strides
    (Dynamo's guards admit only calls that match it: dtype, device, sizes and strides), else
    None."""
    static = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        fixed = isinstance(val, torch.Tensor) and all(
            type(s) is int for s in (*val.shape, *val.stride())
        )
        static.append(val if fixed else None)
    return static


def _varying(static: list) -> tuple[int, ...]:
    """Positions of the arguments whose metadata may differ between calls: all but the
    tensors of static sizes and strides (``_static_tensors``), so the look-up key reads just
    these; a graph with none is keyed by ()."""
    return tuple(i for i, val in enumerate(static) if val is None)


def _contiguous(static: list) -> frozenset[int]:
    """Positions of the arguments contiguous at every call: static strides that are."""
    return frozenset(i for i, val in enumerate(static) if val is not None and val.is_contiguous())


class Replay:
    """A captured graph compiled by the backend, and how to feed and unpack it."""

    __slots__ = (
        "executable",
        "run",
        "order",
        "template",
        "gather",
        "extras",
        "host_args",
        "host_args_checked",
        "lazy_args",
        "random",
        "results",
        "spec",
        "device",
        "copy_in",
        "copy_out",
        "lazy_out",
        "clones",
        "checked",
        "flat",
        "container",
        "mutations",
        "asserts",
        "native",
        "shapes",
        "written",
    )

    def __init__(
        self, cap: Capture, device: LazyDevice, executable, args, contiguous: frozenset[int]
    ) -> None:
        self.executable = executable
        self.run = None if executable is None else runtime.runner(device, executable)
        self.order = cap.order
        self.device = device
        self.template: list = [None] * len(cap.feeds)
        # host arguments fed as they are (contiguous at every call), and those checked
        self.host_args: list[tuple[int, int]] = []
        self.host_args_checked: list[tuple[int, int]] = []
        self.lazy_args: list[tuple[int, int]] = []
        self.random = RandomFeeds(cap.feeds)  # generators or seeds, fed at every call
        for position, (kind, payload) in enumerate(cap.feeds):
            if kind == ARG:
                if args[payload].device.type == settings.device_type:
                    self.lazy_args.append((position, payload))
                elif payload in contiguous:
                    self.host_args.append((position, payload))
                else:
                    self.host_args_checked.append((position, payload))
            elif kind == FIXED:
                self.template[position] = payload
        self.results = cap.results
        self.spec = cap.spec
        host = cap.host
        self.lazy_out = host is None
        #: The backend's data is not torch's (``Backend.torch_data``): host arguments go
        #: through ``to_data`` and results come back through ``from_data``.
        self.native = not device.backend.torch_data
        self.copy_in = host is not None and (host != device.backing.type or self.native)
        self.gather, self.extras = _gatherer(cap.feeds, len(args), self.host_args)
        self.copy_out = torch.device(host) if self.copy_in else None
        self.clones: tuple[int, ...] = ()
        self.checked = False
        self.container = _flat_container(cap.spec)
        self.flat = _flat_type(cap, self.container)
        self.mutations = cap.mutations
        self.asserts = cap.asserts
        self.shapes = [v.node.shapes[v.index] for v in cap.outputs]
        self.written = frozenset(i for i, _ in cap.mutations)  # arguments written back

    def __call__(self, args: list):
        metrics.count("DynamoGraphRun")
        inputs = self._inputs(args)
        native = None  # the backend's own results, when its data is not torch's
        if self.executable is None:  # every output is an argument or a constant
            results = []
        else:
            results = runtime.run(self.device, self.run, self.order, inputs)
            if self.native:  # host views of the backend's results (DLPack, no copy)
                native = results
                from_data_ = self.device.backend.from_data
                results = [from_data_(r, "cpu", copy=False) for r in results]
        if not self.checked:
            self._check(results, inputs)
        if self.asserts:  # before any result or write-back reaches the caller
            asserts.check(results, self.asserts)
        for i in self.clones:
            results[i] = results[i].clone()
        if self.mutations:
            _write_back(args, results, self.mutations, self.lazy_out or self.copy_in)
            if native is not None and self.copy_in:  # the next graph reads these arrays
                for i, r in self.mutations:
                    uploads.keep(args[i], native[r])
        if native is not None and self.copy_in:  # a later graph may read a result (a grad)
            for r, data in zip(results, native, strict=True):
                uploads.keep(r, data)
        if self.lazy_out:
            results = lazy_results(self.device, native, results, self.shapes)
        elif self.copy_out is not None:
            results = [r.to(self.copy_out) for r in results]
        else:
            results = [r if r.is_contiguous() else r.contiguous() for r in results]
        if self.flat is not None:  # the outputs are the results, in order
            return self.flat(results)
        out = []
        views = []
        for kind, payload in self.results:
            if kind == RESULT:
                out.append(results[payload])
            elif kind == PASS:
                out.append(args[payload])
            elif kind == VIEW:  # eager's view of an argument or of another output
                views.append((len(out), payload))
                out.append(None)
            elif isinstance(payload, torch.Tensor):
                out.append(payload.clone())
            else:
                out.append(payload)
        for position, (source, i, sizes, strides, offset) in views:
            base = args[i] if source == PASS else out[i]
            out[position] = base.as_strided(sizes, strides, offset)
        if self.container is not None:  # one flat tuple or list: no pytree to rebuild
            return self.container(out)
        return torch.utils._pytree.tree_unflatten(out, self.spec)

    def _inputs(self, args: list) -> list:
        """The program's inputs: host arguments uploaded (or passed), lazy arguments' data,
        random seeds."""
        if self.copy_in:
            inputs = self.template.copy()
            backend, backing = self.device.backend, self.device.backing
            written = self.written
            for position, i in self.host_args + self.host_args_checked:
                inputs[position] = uploads.upload(args[i], backend, backing, i in written)
        else:
            inputs = self.gather(args + self.extras)
            for position, i in self.host_args_checked:
                t = args[i]
                inputs[position] = t if t.is_contiguous() else t.contiguous()
        for position, i in self.lazy_args:
            inputs[position] = lazy_data(args[i], self.native)
        if self.random:
            self.random.fill(inputs)
        return inputs

    def _check(self, results: list, inputs: list) -> None:
        """On the first run: results that share memory with an input or with an earlier
        result (a lowering that returns a view, e.g. of a contiguous input) are cloned on
        every run, since callers own the FX graph's outputs and may write them."""
        self.checked = True
        seen = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor)}
        clones = []
        for i, r in enumerate(results):
            ptr = r.untyped_storage().data_ptr()
            if ptr in seen and r.numel():
                clones.append(i)
            seen.add(ptr)
        self.clones = tuple(clones)


def _gatherer(feeds: list, num_args: int, host_args: list) -> tuple[Callable, list]:
    """How a run builds the compiled graph's inputs from the FX graph's arguments, in one C
    call: ``gather(args + extras)`` is the list of, per position, the argument fed as it is
    (``host_args``), the constant (``FIXED``), or None where the run puts something else
    (lazy data, a contiguous copy, a generator). An optimizer's graph takes a few hundred
    arguments; a Python loop over them cost ~5-8 us a call."""
    direct = dict(host_args)
    extras: list = [None]
    sources = []
    for position, (kind, payload) in enumerate(feeds):
        if position in direct:
            sources.append(direct[position])
        elif kind == FIXED:
            sources.append(num_args + len(extras))
            extras.append(payload)
        else:
            sources.append(num_args)  # the None of extras
    if len(sources) == 1:
        (only,) = sources
        return (lambda values: [values[only]]), extras
    if not sources:
        return (lambda values: []), extras
    getter = operator.itemgetter(*sources)
    return (lambda values: list(getter(values))), extras


def _flat_container(spec):
    """``tuple`` or ``list`` when the FX graph returns one flat tuple or list (aot_autograd's
    graphs do): its outputs are then built without ``tree_unflatten`` (about 2 us a call).
    None otherwise."""
    if spec is None or spec.type not in (tuple, list):
        return None
    if any(not child.is_leaf() for child in spec.children()):
        return None
    return spec.type


def _flat_type(cap: Capture, container):
    """``container`` when, moreover, the outputs are exactly the compiled graph's results,
    in order, and nothing is written back or checked: the replay then returns the results as they
    are. None otherwise."""
    if container is None:
        return None
    if (
        cap.mutations
        or cap.asserts
        or cap.results != [(RESULT, i) for i in range(len(cap.results))]
    ):
        return None
    return container


def _write_back(args: list, results: list, mutations: list, across_devices: bool) -> None:
    """The graph wrote these arguments in place: their new values go into the caller's
    tensors (the same objects, as eager's in-place ops leave them), without autograd
    recording the write (an optimizer's parameters are leaves that require grad). Results on
    the arguments' own device go in one ``_foreach_copy_`` (an optimizer step writes every
    parameter and state tensor: one call instead of one per tensor); lazy or other-device
    arguments one ``copy_`` each."""
    with torch.no_grad():
        if across_devices:
            for i, r in mutations:
                args[i].copy_(results[r])
        else:
            torch._foreach_copy_(
                [args[i] for i, _ in mutations], [results[r] for _, r in mutations]
            )


class CompiledGraph:
    """What lazygen's Dynamo backend returns for one FX graph. aot_autograd calls it with
    one list of arguments (the boxed convention, ``_boxed_call``: an instance attribute,
    so that Dynamo's ``disable`` wrapper around the backward copies it with the instance's
    ``__dict__``); called with the arguments themselves it works too (FX graph arguments
    are tensors and numbers, never a list)."""

    def __init__(self, gm: torch.fx.GraphModule, device: LazyDevice, name: str) -> None:
        self._boxed_call = True
        self.gm = gm
        self.device = device
        self.name = name
        self.entries: dict = {}
        self.eager_reasons: list[str] = []
        self.eager_segments: list[list[str]] = []
        self.segments: list[CompiledGraph] = []
        self.nodes = 0
        self.spliced = False  # replayed as calls spliced into the lazy device's graph
        self.unspliced: str | None = None  # why a graph of lazy tensors runs at each call
        static = _static_tensors(gm)
        self.varying = _varying(static)
        self.contiguous = _contiguous(static)
        if "/" not in name:  # segments are reported with the graph they belong to
            runtime.part(Compiled).add(self)

    def __call__(self, *args):
        args = args[0] if len(args) == 1 and type(args[0]) is list else list(args)
        key = tuple([_describe(args[i]) for i in self.varying]) if self.varying else ()
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = self._prepare(args)
        return entry(args)

    def _prepare(self, args: list):
        """Capture and compile for a new input metadata (the first call, or a new size of a
        dynamic dimension)."""
        metrics.count("DynamoCapture")
        device = self.device
        try:
            with device.lock:
                cap = capture(self.gm, args, device, self._writable(args))
        except Exception as error:  # a kernel or lowering bug must not fail the program
            metrics.count("DynamoEagerGraph")
            self.eager_reasons = [f"capture failed: {type(error).__name__}: {error}"]
            log(1, f"lazygen.dynamo: {self.name} runs eagerly: {self.eager_reasons[0]}")
            return Eager(self.gm, self.eager_reasons)
        try:
            return self._compile(cap, args)
        finally:
            cap.release_arguments()

    def _writable(self, args: list) -> frozenset[int]:
        """The arguments the compiled graph may write itself: its backend's graphs write
        their inputs (``Backend.writes_inputs``), and the replay feeds these as they are
        (host tensors on the backend's data device, contiguous at every call)."""
        device = self.device
        if not device.backend.writes_inputs or host_type_of(args) != device.backing.type:
            return frozenset()
        return self.contiguous

    def _compile(self, cap: Capture, args: list):
        """What runs this graph from now on, for a successful capture."""
        device = self.device
        if cap.cuts and cap.only_fallbacks:
            return self._partition(cap)
        if cap.cuts:
            metrics.count("DynamoEagerGraph")
            self.eager_reasons = cap.cuts
            log(1, f"lazygen.dynamo: {self.name} runs eagerly: {', '.join(cap.cuts)}")
            return Eager(self.gm, cap.cuts)
        if not cap.order:  # every output is an argument or a constant, and nothing written
            return Replay(cap, device, None, args, self.contiguous)
        if cap.host is None:  # the step's tensors live on the lazy device
            refusal = splice_refusal(cap, args)
            if refusal is None:
                self.nodes = sum(1 for n in cap.order if not n.is_input)
                self.spliced = True
                settle_prelude(device, args)
                return Splice(cap, device, args)
            metrics.count("DynamoUnsplicedGraph")
            self.unspliced = refusal
            log(1, f"lazygen.dynamo: {self.name} runs at each call: {refusal}")
        order = cap.order  # the order Replay feeds and runs (random ops in eager's order)
        position = {node: i for i, node in enumerate(order)}
        self.nodes = sum(1 for n in order if not n.is_input)
        key = graph_key(order, position, cap.outputs)
        try:
            # Not under the caller's dispatch modes: the first call runs inside
            # aot_autograd's runtime wrapper, whose mode broke Inductor's own tracing.
            with _disable_current_modes():
                executable = runtime.compile_cached(device, key, order, cap.outputs)
        except LazyGraphError as error:
            metrics.count("DynamoEagerGraph")
            self.eager_reasons = [f"compilation failed: {error}"]
            return Eager(self.gm, self.eager_reasons)
        return Replay(cap, device, executable, args, self.contiguous)

    def _partition(self, cap: Capture) -> Partitioned:
        """Split the graph around the ops that ran through the eager fallback."""
        metrics.count("DynamoPartitionedGraph")

        def make_lazy(gm: torch.fx.GraphModule, name: str) -> CompiledGraph:
            segment = CompiledGraph(gm, self.device, f"{self.name}/{name}")
            self.segments.append(segment)
            return segment

        parts, eager = partition.split(self.gm, cap.eager_nodes, make_lazy)
        metrics.count("DynamoEagerSegment", len(eager))
        self.eager_segments = eager
        log(1, f"lazygen.dynamo: {self.name} split around {', '.join(cap.cuts)}")
        return Partitioned(parts)

    def describe(self) -> str:
        if self.eager_reasons:
            return f"{self.name}: eager ({'; '.join(self.eager_reasons)})"
        if self.eager_segments:
            lines = [f"{self.name}: {len(self.eager_segments)} eager segment(s)"]
            lines += [f"  eager: {', '.join(nodes)}" for nodes in self.eager_segments]
            lines += [f"  {segment.describe()}" for segment in self.segments]
            return "\n".join(lines)
        how = ", spliced" if self.spliced else ""
        if self.unspliced:
            how = f", run at each call ({self.unspliced})"
        return f"{self.name}: {self.nodes} IR nodes, {len(self.entries)} input signature(s){how}"


def report() -> str:
    """One line per FX graph compiled in this process: captured or run eagerly, and why."""
    lines = [g.describe() for g in sorted(runtime.part(Compiled), key=lambda g: g.name)]
    return "\n".join(lines) + ("\n" if lines else "")
