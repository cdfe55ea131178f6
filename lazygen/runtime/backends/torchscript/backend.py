"""The TorchScript backend: lower a post-ordered IR graph to ``torch._C.Graph``, compile it
with ``torch._C._create_function_from_graph``, run it on the data device (the CPU, or CUDA
with ``LAZYGEN_BACKING_DEVICE=cuda``), synchronously or forked onto TorchScript's inter-op
thread pool (``launch``)."""

from __future__ import annotations

import ctypes
import re
import sys

import torch

from ... import process, state
from ...backend_interface import Backend, KernelTables
from ...builtin import tables as op_list
from ...dispatch_modes import without_autograd
from ...errors import LazygenRuntimeError
from ...ir import InputWrite, Node, Value
from ...state import settings
from .lowering import TSLoweringContext
from .passes import (
    fold_double_transposes,
    fold_filled_products,
    share_number_operands,
    transpose_products,
    write_in_place,
)


class _Executor:
    """Whether TorchScript's executor is configured: a process effect, so held for the
    process (``state.for_process``), beyond a reset."""

    __slots__ = ("configured",)

    def __init__(self) -> None:
        self.configured = False


def _configure_executor() -> None:
    """The profiling executor profiles the first calls of every graph (a cost of
    milliseconds each, docs/benchmarks.md); lazy graphs are shape-specialised already, so
    use the simple executor (``LAZYGEN_JIT_EXECUTOR=0`` leaves TorchScript's flags alone).
    Both are process-wide effects listed in ``process.EFFECTS``."""
    executor = state.for_process(_Executor)
    if not executor.configured:
        if process.enabled("jit_executor"):
            torch._C._jit_set_profiling_executor(False)
            torch._C._jit_set_profiling_mode(False)
        if process.enabled("malloc_tuning"):
            _keep_freed_buffers()
        executor.configured = True


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _keep_freed_buffers() -> None:
    """Graphs are functional: each run allocates fresh result buffers (eager updates
    parameters in place). glibc serves blocks above its mmap threshold with fresh pages, so
    every run page-faults on every large result (several times the eager update's cost,
    docs/benchmarks.md). Raise the thresholds so that freed buffers are reused, as a caching
    allocator would; ``LAZYGEN_MALLOC_TUNING=0`` leaves malloc alone."""
    if not sys.platform.startswith("linux"):
        return
    if torch.device(settings.backing_device).type != "cpu":
        return
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, 64 << 20)
    mallopt(_M_TRIM_THRESHOLD, 128 << 20)


class _unoptimized:
    """Run graphs without the graph executor's optimisation passes (a thread-local switch):
    lazy graphs are already minimal, and its shape propagation fails on valid graphs
    (``aten::sum(<0-dim>, dim=None)`` asserts)."""

    __slots__ = ("previous",)

    def __enter__(self):
        self.previous = torch._C._get_graph_executor_optimize()
        torch._C._set_graph_executor_optimize(False)

    def __exit__(self, *exc_info):
        torch._C._set_graph_executor_optimize(self.previous)


class TSExecutable:
    """A compiled graph: ``function`` runs it here and now; ``launcher`` starts it on
    TorchScript's inter-op thread pool and returns a ``torch.Future`` (see ``_launcher``)."""

    __slots__ = ("function", "launcher", "num_outputs", "graph")

    def __init__(self, function, launcher, num_outputs: int, graph) -> None:
        self.function = function
        self.launcher = launcher
        self.num_outputs = num_outputs
        self.graph = graph


_TENSOR_TYPE = torch._C.TensorType.get()
_BOOL_LIST = torch._C.ListType(torch._C.BoolType.get())


def _launcher(name: str, graph: torch._C.Graph):
    """A function that forks ``graph`` (``prim::fork``) and returns its future at once.

    The inputs are passed on as ``aten::detach`` aliases. The worker thread releases its
    references when the run ends, and releasing a tensor that Python also holds takes the
    GIL: with the caller's own tensors the run would stall until the tracing thread let go
    of the GIL (up to the 5 ms switch interval). A detached alias shares the storage but
    has no Python object, so the run never needs the GIL.
    """
    outer = torch._C.Graph()
    forwarded = []
    for value in graph.inputs():
        argument = outer.addInput()
        argument.setType(value.type())
        if value.type().isSubtypeOf(_TENSOR_TYPE):
            detach = outer.create("aten::detach", [argument], 1)
            outer.insertNode(detach)
            argument = detach.output()
        forwarded.append(argument)
    fork = outer.create("prim::fork", forwarded, 1)
    # ``graph`` itself, not a copy (~0.3 ms for 500 nodes at every graph's first compile
    # or load): TorchScript never changes a function's graph or a subgraph attribute in
    # place (its executors compile copies), so ``function`` and the fork share it.
    fork.g_("Subgraph", graph)
    fork.output().setType(torch._C.FutureType(next(graph.outputs()).type()))
    outer.insertNode(fork)
    outer.registerOutput(fork.output())
    return torch._C._create_function_from_graph(f"{name}_launch", outer)


class TSRun:
    """A graph run in flight: what ``TSBackend.launch`` returns."""

    __slots__ = ("future", "num_outputs")

    def __init__(self, future, num_outputs: int) -> None:
        self.future = future
        self.num_outputs = num_outputs

    def done(self) -> bool:
        return self.future.done()

    def wait(self) -> list:
        return _per_output(self.future.wait(), self.num_outputs)


def _per_output(result, num_outputs: int) -> list:
    """A graph's return value as one entry per output (several come back as a tuple, none
    as None)."""
    if num_outputs == 1:
        return [result]
    return list(result) if num_outputs else []


@state.process_memo
def unavailable_reason() -> str | None:
    """Why TorchScript does not work in this torch, or None when it does: a one-op graph
    is compiled and run, as every lazy graph would be. Torch deprecates TorchScript and
    plans builds without it; there this backend cannot run a graph, and the failure
    belongs at ``init``, named, rather than at the user's first ``mark_step``. Cached: the
    answer does not change within a process."""
    try:
        graph = torch._C.Graph()
        value = graph.addInput()
        value.setType(_TENSOR_TYPE)
        node = graph.create("aten::neg", [value], 1)
        graph.insertNode(node)
        graph.registerOutput(node.output())
        function = torch._C._create_function_from_graph("lazygen_probe", graph)
        if not torch.equal(function(torch.ones(1)), -torch.ones(1)):
            return "a TorchScript graph computed a wrong result"
    except Exception as error:  # noqa: BLE001 - whatever a build without TorchScript raises
        return f"{type(error).__name__}: {error}"
    return None


class TorchScriptBackend(Backend):
    """Graphs as TorchScript functions: the default backend."""

    name = "torchscript"
    asynchronous = True
    persistent_executables = True  # graphs kept as their text (``save_executable``)
    collectives_in_graph = True  # _c10d_functional ops are registered TorchScript operators
    size_generic = True  # sizes fed as ints; TorchScript graphs are shape-polymorphic
    #: An optimizer step's last op per parameter writes the parameter (``write_in_place``).
    writes_inputs = True

    def __init__(self) -> None:
        reason = unavailable_reason()
        if reason is not None:
            raise LazygenRuntimeError(
                f"lazygen: the torchscript backend needs TorchScript, which does not work "
                f"in this torch ({reason}). Choose another built-in backend: "
                "init(backend='fx') (no compiler needed) or init(backend='inductor'), or "
                "LAZYGEN_BACKEND=fx"
            )
        self._counter = 0

    def kernel_tables(self) -> KernelTables:
        return op_list.kernel_tables()

    def lowering_context(self, device: torch.device) -> TSLoweringContext:
        return TSLoweringContext(device)

    def lower(self, order: list[Node], outputs: list[Value], device) -> TSLoweringContext:
        ctx = super().lower(order, outputs, device)
        dtypes = _dtypes(ctx)  # before the passes: they destroy values
        transpose_products(ctx.graph)
        fold_double_transposes(ctx.graph)
        fold_filled_products(ctx.graph, dtypes)
        share_number_operands(ctx.graph, dtypes, ctx.device)
        write_in_place(ctx.graph, _same_dtype_writes(order, ctx))
        return ctx

    def compile(self, order: list[Node], outputs: list[Value], device) -> TSExecutable:
        _configure_executor()
        ctx = self.lower(order, outputs, device)
        self._counter += 1
        name = f"lazygen_graph_{self._counter}"
        function = torch._C._create_function_from_graph(name, ctx.graph)
        return TSExecutable(function, _launcher(name, ctx.graph), len(outputs), ctx.graph)

    def save_executable(self, executable: TSExecutable) -> bytes | None:
        """The graph's text, where parsing it gives the same graph back (values renamed);
        a graph with a constant the parser cannot read (a tensor) is not kept."""
        text = str(executable.graph)
        try:
            parsed = _parsed(text)
        except Exception:  # noqa: BLE001 - not parseable: not kept
            return None
        if _canonical(str(parsed)) != _canonical(text):
            return None
        return text.encode()

    def load_executable(self, payload: bytes, order, outputs, device) -> TSExecutable:
        _configure_executor()
        graph = _parsed(payload.decode())
        self._counter += 1
        name = f"lazygen_graph_{self._counter}"
        function = torch._C._create_function_from_graph(name, graph)
        return TSExecutable(function, _launcher(name, graph), len(outputs), graph)

    def execute(self, executable: TSExecutable, inputs: list[torch.Tensor]) -> list:
        with without_autograd(), _unoptimized():
            result = executable.function(*inputs)
        return _per_output(result, executable.num_outputs)

    def launch(self, executable: TSExecutable, inputs: list) -> TSRun:
        """Start the graph on another thread; the caller goes on tracing meanwhile."""
        with without_autograd(), _unoptimized():
            return TSRun(executable.launcher(*inputs), executable.num_outputs)

    def dump(self, order: list[Node], outputs: list[Value], device) -> str:
        return str(self.lower(order, outputs, device).graph)

    def describe(self, executable: TSExecutable) -> str:
        """The TorchScript graph it runs."""
        return str(executable.graph)

    def error_message(self, error: BaseException) -> str:
        """The message without the TorchScript interpreter's preamble."""
        text = str(error)
        if _TS_TRACEBACK in text:
            text = text.split(_TS_TRACEBACK, 1)[1].strip()
            for prefix in ("RuntimeError: ", "Error: "):
                if text.startswith(prefix):
                    text = text[len(prefix) :]
        return text

    def locate_failure(self, order: list[Node], inputs: list) -> tuple[Node, Exception] | None:
        """Run a graph that failed one node at a time: the first node that fails, and why."""
        _configure_executor()
        feed = iter(inputs)
        results: dict[Value, object] = {}
        device = next((i.device for i in inputs if isinstance(i, torch.Tensor)), None)
        for node in order:
            if node.is_input:
                results[Value(node, 0)] = next(feed)
                continue
            ctx = TSLoweringContext(device)
            operands = list(dict.fromkeys(node.inputs()))
            for value in operands:
                ctx.values[value] = ctx.graph.addInput()
                ctx.values[value].setType(_type_of(results[value]))
            try:
                ctx.lower_node(node)
                ctx.set_graph_outputs([Value(node, i) for i in range(len(node.shapes))])
                function = torch._C._create_function_from_graph("lazygen_node", ctx.graph)
                with without_autograd(), _unoptimized():
                    outputs = function(*[results[v] for v in operands])
            except Exception as error:  # the node that fails
                cause = error.__cause__ or error
                # Without its traceback: its frames would keep this graph (and, through
                # the callers' frames, the tensors being synced) alive in a cycle.
                return node, cause.with_traceback(None)
            outputs = outputs if len(node.shapes) > 1 else (outputs,)
            for index, output in enumerate(outputs):
                results[Value(node, index)] = output
        return None


def _dtypes(ctx: TSLoweringContext) -> dict:
    """Each lowered value's dtype, by its TorchScript value's ``unique()`` (TorchScript's
    own types say ``Tensor`` only): what a pass that must not change a dtype reads."""
    dtypes = {}
    for value, ts_value in ctx.values.items():
        shapes = value.node.shapes
        shape = shapes[value.index] if value.index < len(shapes) else None
        if shape is not None:  # a result that is no tensor has none
            dtypes[ts_value.unique()] = shape.dtype
    return dtypes


def _same_dtype_writes(order: list[Node], ctx: TSLoweringContext) -> list:
    """The ``aten::copy_`` nodes of the graph's input writes whose value has its input's
    dtype (a copy into another dtype converts; an out variant would compute in it)."""
    copies = []
    for node in order:
        if type(node) is InputWrite:
            target, value = node.operands
            if target.node.shapes[target.index].dtype == value.node.shapes[value.index].dtype:
                copies.append(ctx.values[Value(node, 0)].node())
    return copies


_TS_TRACEBACK = "Traceback of TorchScript (most recent call last):"
_VALUE_NAME = re.compile(r"%[A-Za-z0-9_.]+")


def _parsed(text: str) -> torch._C.Graph:
    """``text`` parsed back into a graph. TorchScript's parser reads a ``bool[]`` constant
    (``[True, False]``: layer norm's and convolution's output masks) as a list of ints, which
    the ops then refuse; each is made again from its values as bools."""
    graph = torch._C.parse_ir(text)
    if "bool[] = prim::Constant" not in text:  # most graphs: no walk over their nodes
        return graph
    for node in graph.findAllNodes("prim::Constant"):
        if node.output().type() == _BOOL_LIST:
            graph.setInsertPoint(node)
            fixed = graph.insertConstant([bool(v) for v in node.output().toIValue()])
            node.output().replaceAllUsesWith(fixed)
            node.destroy()
    return graph


def _canonical(text: str) -> str:
    """A graph's text with its values numbered in order of appearance (parsing renames
    them)."""
    names: dict[str, str] = {}
    return _VALUE_NAME.sub(lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), text)


def _type_of(result) -> torch._C.JitType:
    """The TorchScript type of a node's result fed to the next one-node graph: a tensor, or
    a constant's value (a ``SizeConstant`` is an int)."""
    if isinstance(result, torch.Tensor):
        return _TENSOR_TYPE
    inferred = torch._C._jit_try_infer_type(result)
    return inferred.type() if inferred.success() else _TENSOR_TYPE
