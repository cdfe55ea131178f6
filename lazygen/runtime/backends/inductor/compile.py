"""Compiling a lazy graph's ``torch.fx.GraphModule`` with Inductor, scalars kept as inputs.

Scalars. A wrapped scalar is a 0-dim tensor input that the graph reads with
``aten._local_scalar_dense`` (see ``lowering.py``). Inductor traces the graph under a
fake-tensor mode with a ``ShapeEnv``, so each read is an *unbacked* symbol (``zuf0`` for a
float, ``u0`` for an int): the compiled kernel takes the number as a runtime argument, and
the op keeps its ``Scalar`` overload, so type promotion stays eager's (an int tensor times a
float scalar is float32, not float64). Unbacked symbols never specialise silently: where a
decomposition or lowering branches on a value (``addmm``'s ``beta == 0``, ``add``'s
``alpha == 1``), tracing raises instead. Those scalars, and only those, are then compiled in
as constants (``CompiledGraph.fixed``) and their values are checked on every run: another
value compiles another variant (counted as ``InductorRecompile``). In practice they are
structural constants (``alpha=1``, ``beta=1``, a momentum), while values that change every
step (Adam's bias corrections, a scheduled lr) flow into arithmetic and stay runtime inputs:
``tests/runtime/backends/test_inductor_backend.py`` counts one compile for changing scalars.

Sizes. A graph the executor compiles for all sizes (``graph/dynamic.py``) is compiled
with symbolic sizes (``compile_for_all_sizes``): its tensor inputs' sizes and its size
inputs (the entries of size lists, fed as ints, not 0-dim tensors) are *backed* symbols of
one ``ShapeEnv``, whose values at the first call are their hints. Tracing may decide on a
size (a size of 1 broadcasts, two equal sizes become one symbol, a view's sizes must
multiply to its input's); each decision is a guard of the shape env, and the guards are
checked on every call with the call's sizes: a call they reject compiles another variant
(``InductorRecompile``, at most ``MAX_VARIANTS`` kept). Scalars read as numbers stay
unbacked, as above. Unlike ``torch.compile(dynamic=True)`` on the same GraphModule (tried
first), nothing read from an input is compiled in without a guard.

Per-call costs. Inductor's code is a Python function calling its kernels, allocating its
buffers and checking every tensor input's sizes and strides on every call
(``assert_size_stride``, ~0.4 us each: an optimizer graph of 180 inputs paid ~75 us a
step, a tenth of a small transformer's step). lazygen's graphs are compiled with
``LAZY_GRAPH_CONFIG``:

* ``cpp_wrapper``: the function is C++ (one call from Python a graph run; a small
  transformer's training step ~12% faster). A graph is compiled again with the Python
  wrapper (counted as ``InductorPythonWrapper``) when its C++ wrapper fails to compile,
  or when it calls a fallback kernel that has no C shim: the C++ wrapper then calls the
  op through the dispatcher with boxed arguments (``callBoxed``), which torch 2.13 gets
  wrong for some schemas (``upsample_bilinear2d``'s sizes arrive as a generic list and
  the run fails). Inductor's warning about each such kernel is not shown: lazygen acts
  on it.
* ``size_asserts`` off: what the checks test holds by construction. Every tensor a lazy
  graph is fed is contiguous (device data is made so when read, ``DeviceData.data``, and
  when uploaded, ``Backend.to_data``; the Dynamo replay feeds host arguments Dynamo
  guards as contiguous, or copies them contiguous), its sizes are the ones compiled (they
  are part of the graph key; a graph compiled for all sizes checks its ``SizeGuard``),
  and for a contiguous tensor of given sizes the strides the check compares are
  determined (it ignores the stride of a dimension of size 1). The same switch drops
  Inductor's checks of the strides its fallback kernels return against their meta
  kernels (torch's own consistency, which the inductor backend's conformance suite
  compares with eager).

Caching. Inductor's FX graph cache (on by default, under ``TORCHINDUCTOR_CACHE_DIR``,
default ``/tmp/torchinductor_<user>``) keys compiled code by graph and input metadata, so
a second process compiling the same lazy graph loads it from disk. lazygen's compile cache
keeps the ``CompiledGraph`` per backend in memory.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable
from types import MappingProxyType

import torch
import torch.fx
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import (
    SYMPY_INTERP,
    DimDynamic,
    ShapeEnv,
    StatelessSymbolicContext,
)

from ... import metrics
from ...backend_interface import outside_dispatch
from ...graph import recompiles
from ...state import log, settings
from . import variants
from .decompose import decompositions_for
from .direct import DirectCall, InnerCompiles, aot_cache_off, direct_call
from .lowering import READ_AS_SIZE

_READ = torch.ops.aten._local_scalar_dense.default
_EXECUTING = re.compile(r"While executing %(\w+)")
#: The op a ``LoweringException`` names (Inductor's lowering of it refused the value).
_LOWERING_TARGET = re.compile(r"^\s*target: \w+\.(\w+)\.\w+$", re.MULTILINE)
#: Inductor settings lazygen's graphs are compiled with (see "Per-call costs" above). Part of
#: Inductor's cache key, so its cached code for ``torch.compile``'s own graphs is not
#: shared with lazygen's.
LAZY_GRAPH_CONFIG = MappingProxyType({"size_asserts": False, "cpp_wrapper": True})
#: The same, but Inductor's Python wrapper (when the C++ one fails to compile).
PYTHON_WRAPPER_CONFIG = MappingProxyType({**LAZY_GRAPH_CONFIG, "cpp_wrapper": False})
#: Variants of one graph kept (for other values of its fixed scalars, or for sizes its
#: guards rejected).
MAX_VARIANTS = 16


class CompiledGraph:
    """Inductor's code for one lazy graph: ``graph(*inputs)`` returns a tuple of results.

    ``fixed`` are the indices of scalar inputs whose values are compiled in (see the module
    docstring); compiled variants are kept per tuple of their values.

    With ``dynamic``, the graph is compiled for all sizes: its tensor inputs' sizes are
    symbols, and its size inputs (scalars read as a ``SymInt``) are fed as ints and are
    symbols too (``compile_for_all_sizes``). Such a graph is compiled at its first call,
    from those inputs' sizes (the executor compiles it from a copy whose sizes are
    hidden). Each variant has the guards Inductor's tracing put on the sizes; a call whose
    sizes fail every variant's guards compiles another (``InductorRecompile``).

    ``direct=False`` keeps aot_autograd's runtime wrapper around Inductor's code
    (``direct.py``: the reference its direct call is tested against)."""

    def __init__(
        self,
        module: torch.fx.GraphModule,
        inputs: list | None,
        dynamic: bool = False,
        direct: bool = True,
    ) -> None:
        self.sizes: tuple[int, ...] = _size_inputs(module) if dynamic else ()
        self.module = _sizes_as_ints(module, self.sizes) if self.sizes else module
        self.dynamic = dynamic
        self.direct = direct
        self._scalar_inputs = _scalar_inputs(self.module)
        self._key = hashlib.sha256(self.module.code.encode()).hexdigest()
        remembered = _remembered_fixed().get(self._key, ())
        scalars = set(self._scalar_inputs.values())
        self.fixed: tuple[int, ...] = tuple(i for i in remembered if i in scalars)
        self.variants: dict[tuple, list[tuple[Callable | None, Callable]]] = {}
        self._count = 0
        if not dynamic:
            self._compile_fixing(inputs)

    def __call__(self, *inputs):
        if self.sizes:
            inputs = list(inputs)
            for i in self.sizes:
                inputs[i] = inputs[i].item()
        key = tuple([inputs[i].item() for i in self.fixed])
        for guard, compiled in self.variants.get(key, ()):
            if guard is None or guard(inputs):
                return compiled(*inputs)
        if self._count:
            metrics.count("InductorRecompile")
            if settings.explain_recompiles:
                self._explain(key, inputs)
        return self._compile_fixing(inputs)(*inputs)

    def _explain(self, key: tuple, inputs: list) -> None:
        """Report why no variant runs ``inputs`` (``variants.py``); best effort, as
        lazygen's own explanations."""
        try:
            if key in self.variants:  # their size guards rejected these sizes
                guard = next(g for g, _ in self.variants[key] if g is not None)
                parts = getattr(guard, "parts", [])  # none: compiled for its own sizes only
                explanation = variants.rejected_guard(self.module, parts, inputs)
            else:
                explanation = variants.changed_value(
                    self.module, self.fixed, key, list(self.variants)
                )
        except Exception as error:
            log(1, f"inductor: could not explain a recompile ({error!r})")
            return
        recompiles.report_explanation(explanation)

    def direct_runner(self) -> Callable[[list], list] | None:
        """``run(inputs)`` straight into Inductor's code when nothing is left to choose per
        call: one variant, compiled for these sizes, no scalar compiled in, called without
        aot's wrapper (``DirectCall``). Such a graph never compiles again (only another
        value of a fixed scalar, or sizes a guard rejects, do). None otherwise."""
        if self.dynamic or self.fixed or list(self.variants) != [()]:
            return None
        (guard, compiled), *others = self.variants[()]
        if others or guard is not None or not isinstance(compiled, DirectCall):
            return None
        return compiled.run

    def _compile_fixing(self, inputs: list) -> Callable:
        """Compile; while tracing stops at a value-dependent branch, fix the scalars that
        branch reads and try again."""
        while True:
            key = tuple([inputs[i].item() for i in self.fixed])
            try:
                with _fake_tensor_errors_unlogged():
                    compiled = self._compile(inputs, key)
                break
            except Exception as error:
                if not _is_data_dependent(error):
                    raise
                culprits = self._culprits(error) - set(self.fixed)
                if not culprits:  # the error named no scalar: fix them all, once
                    culprits = set(self._scalar_inputs.values()) - set(self.fixed)
                if not culprits:
                    raise
                metrics.count("InductorFixedScalar", len(culprits))
                log(2, f"inductor: fixing scalar inputs {sorted(culprits)}: {_first_line(error)}")
                self.fixed = tuple(sorted(set(self.fixed) | culprits))
        if self.fixed:
            _remember_fixed(self._key, self.fixed)
        return compiled

    def _compile(self, inputs: list, key: tuple) -> Callable:
        module = _with_constants(self.module, dict(zip(self.fixed, key, strict=True)))
        if not self.dynamic:
            compiled, guard = compile_graph_module(module, list(inputs), self.direct), None
        else:
            try:
                compiled, guard = compile_for_all_sizes(module, list(inputs), self.direct)
            except Exception as error:
                if _is_data_dependent(error):
                    raise
                # Inductor could not compile it for all sizes: these sizes only, guarded so.
                metrics.count("InductorStaticFallback")
                log(1, f"inductor: graph compiled for its own sizes only: {_first_line(error)}")
                compiled = compile_graph_module(module, list(inputs), self.direct)
                guard = functools.partial(_same_sizes, _sizes_of(inputs))
        if self._count >= MAX_VARIANTS:  # drop the oldest
            oldest = next(iter(self.variants))
            self.variants[oldest].pop(0)
            if not self.variants[oldest]:
                del self.variants[oldest]
        else:
            self._count += 1
        self.variants.setdefault(key, []).append((guard, compiled))
        return compiled

    def _culprits(self, error: BaseException) -> set[int]:
        """The scalar inputs read by the nodes of the op a failed trace names: by node name
        (this graph's, or, by op, a node of Inductor's own graph, in the error's text or in
        the frames it was raised through), by op (the target of a lowering that refused the
        value), or by the unbacked symbol it could not decide on (the input read as it).

        Every node of the failing op: a graph has many (one addmm per linear layer), and
        they would otherwise fail, and be fixed, one trace at a time. Never more: a scalar
        fixed that changes every step (an optimizer's bias correction) compiles a variant
        every step."""
        text = _full_text(error)
        nodes = {n.name: n for n in self.module.graph.nodes}
        found: set[int] = set()
        ops = set(_LOWERING_TARGET.findall(text))
        frame_nodes = _frame_nodes(error)
        needed = _symbol_reads(text, frame_nodes)  # the inputs whose values are needed
        for placeholder, i in self._scalar_inputs.items():
            if i in needed:
                found.add(i)
                ops |= {_op_name(user) for read in placeholder.users for user in read.users}
        for name in _EXECUTING.findall(text) + [n.name for n in frame_nodes]:
            node = nodes.get(name)
            if node is not None:
                found |= self._scalars_read_by(node)
            ops.add(_op_name(node) if node is not None else re.sub(r"_\d+$", "", name))
        for candidate in self.module.graph.nodes:
            if _op_name(candidate) in ops:
                found |= self._scalars_read_by(candidate)
        return found

    def _scalars_read_by(self, node: torch.fx.Node) -> set[int]:
        found = set()
        for operand in node.all_input_nodes:
            if operand.target is _READ and operand.args[0] in self._scalar_inputs:
                found.add(self._scalar_inputs[operand.args[0]])
        return found


class _DropRecords(logging.Filter):
    """Drops the log records whose message starts with or contains given words."""

    def __init__(self, starts: str = "", contains: str = "") -> None:
        super().__init__()
        self.starts, self.contains = starts, contains

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not (message.startswith(self.starts) and self.contains in message)


@contextlib.contextmanager
def _unlogged(logger_name: str, starts: str = "", contains: str = ""):
    """Inside the block, ``logger_name`` drops the records ``_DropRecords`` describes."""
    logger = logging.getLogger(logger_name)
    drop = _DropRecords(starts, contains)
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _fake_tensor_errors_unlogged():
    """While lazygen compiles: a failed meta kernel is an exception lazygen handles (a
    value-dependent branch fixes its scalars and compiles again) or reports itself (the
    graph's compile error names it), so fake-tensor's own ERROR log of it, a traceback on
    the user's stderr for something that went right, is dropped."""
    return _unlogged("torch._subclasses.fake_tensor", starts="failed while attempting to run meta")


def _unshimmed_kernels_unlogged():
    """Inductor's warning that a fallback kernel has no C shim: lazygen acts on it
    (``_boxed_dispatch`` sends such a graph to the Python wrapper), the user need not."""
    return _unlogged("torch._inductor.ir", contains="missing a c-shim implementation")


def _boxed_dispatch(compiles: InnerCompiles) -> str | None:
    """Why a C++-wrapped compile must not be used: its code calls a kernel through the
    dispatcher with boxed arguments (a fallback kernel without a C shim; read from the
    code, so a compile loaded from Inductor's cache is judged the same), else None."""
    for compiled, *_ in compiles.results:
        if "callBoxed" in (getattr(compiled, "source_code", None) or ""):
            return "a fallback kernel without a C shim"
    return None


def compile_graph_module(
    module: torch.fx.GraphModule, inputs: list, direct: bool = True
) -> Callable:
    """Inductor's compiled form of ``module`` (a callable taking the graph inputs
    positionally and returning a tuple or list), traced with ``inputs`` as example inputs;
    ``direct=False`` keeps aot_autograd's runtime wrapper around it (``direct.py``)."""
    fake_mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    # Static sizes: the graph key holds every shape, so a graph never sees others. Real
    # inputs given to a fake mode with a shape env would be fakified with symbolic (duck)
    # sizes, and Inductor then cannot prove that a view of a transposed product is valid.
    examples = [
        fake_mode.from_tensor(t, static_shapes=True) if isinstance(t, torch.Tensor) else t
        for t in inputs
    ]
    return _compile_fx(module, examples, fake_mode, direct)


def compile_for_all_sizes(
    module: torch.fx.GraphModule, inputs: list, direct: bool = True
) -> tuple[Callable, Callable[[list], bool] | None]:
    """``module`` compiled with symbolic sizes, and the guard telling whether other inputs
    may run it (None: any).

    Every tensor size is a symbol of one ``ShapeEnv`` (backed: the example's value is its
    hint), and so is every int input (a size list's entry), so Inductor can prove a view of
    those sizes valid from the values. Where its tracing decides on a size (a size of 1,
    two sizes equal, a view's product) the shape env records a guard; the guards on every
    input are returned, to check on every call."""
    from torch._dynamo.source import LocalSource  # slow to import, as torch._inductor

    shape_env = ShapeEnv()
    fake_mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    # Named as produce_guards_expression names its placeholders.
    sources = [LocalSource(f"t{i}") for i in range(len(inputs))]
    examples = [
        _symbolic(x, source, shape_env, fake_mode)
        for x, source in zip(inputs, sources, strict=True)
    ]
    compiled = _compile_fx(module, examples, fake_mode, direct)
    parts = shape_env.produce_guards(examples, sources, ignore_static=True)
    return compiled, SizeGuard(parts, len(examples)) if parts else None


class SizeGuard:
    """``guard(inputs)``: whether ``inputs`` satisfy a shape env's guards, expressions over
    ``L['t<i>']`` (``produce_guards``), joined and parsed once (the shape env's own
    ``evaluate_guards_expression`` parses them on every call). ``parts`` are kept to name
    the one a call breaks."""

    __slots__ = ("parts", "code", "_names", "_compiled")

    def __init__(self, parts: list[str], count: int) -> None:
        self.parts = list(parts)
        code = " and ".join(self.parts)
        self.code = code
        self._names = [f"t{i}" for i in range(count)]
        self._compiled = compile(code, "<lazygen size guards>", "eval")

    def __call__(self, inputs) -> bool:
        scope = {"L": dict(zip(self._names, inputs, strict=True))}
        return bool(eval(self._compiled, SYMPY_INTERP, scope))  # noqa: S307 (shape env's own)


def _compile_fx(
    module: torch.fx.GraphModule, examples: list, fake_mode, direct: bool = True
) -> Callable:
    """``compile_fx``'s code for ``module``, called without aot_autograd's runtime wrapper
    where that wrapper has nothing to do (``direct.py``; ``direct=False`` keeps it)."""
    # Imported when first compiling: torch._inductor is slow to import (about a second
    # here), which the fx mode (same package) must not pay.
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    decompositions = decompositions_for(module)

    def compile_with(config: dict) -> tuple[InnerCompiles, Callable]:
        compiles = InnerCompiles(compile_fx_inner)
        context = torch._guards.TracingContext(fake_mode)
        cache_off = aot_cache_off() if direct else contextlib.nullcontext()
        settings = inductor_config.patch(dict(config))
        tracing = torch._guards.tracing(context)
        with outside_dispatch(), tracing, torch.no_grad(), cache_off, settings:
            # (a copy: compile_fx takes ownership of the module it is given)
            return compiles, compile_fx(
                _copy(module), examples, inner_compile=compiles, decompositions=decompositions
            )

    try:
        with _unshimmed_kernels_unlogged():
            compiles, wrapped = compile_with(LAZY_GRAPH_CONFIG)
        why = _boxed_dispatch(compiles)
    except Exception as error:
        if _is_data_dependent(error):  # the caller fixes scalars and compiles again
            raise
        why = f"C++ wrapper failed: {_first_line(error)}"
    if why is not None:
        metrics.count("InductorPythonWrapper")
        log(1, f"inductor: Python wrapper used ({why})")
        compiles, wrapped = compile_with(PYTHON_WRAPPER_CONFIG)
    if not direct:
        return wrapped
    try:
        call = direct_call(compiles, examples)
    except Exception as error:  # aot's metadata not as expected: keep its wrapper
        log(1, f"inductor: aot's runtime wrapper kept: {_first_line(error)}")
        call = None
    metrics.count("InductorAotWrapped" if call is None else "InductorDirectCall")
    return wrapped if call is None else call


def _symbolic(value, source, shape_env: ShapeEnv, fake_mode: FakeTensorMode):
    """The example input of a graph compiled for all sizes: a tensor with symbolic sizes,
    an int as a symbol (both guarded by ``source``)."""
    if isinstance(value, torch.Tensor):
        rank = value.dim()
        if rank == 0:
            # No source: the fake mode would make its number a backed (specialised) float
            # symbol; a scalar read in the graph stays unbacked, as in a static graph.
            return fake_mode.from_tensor(value, static_shapes=True)
        context = StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.DYNAMIC] * rank, constraint_sizes=[None] * rank
        )
        return fake_mode.from_tensor(value, source=source, symbolic_context=context)
    if type(value) is int:  # may be -1 (``view``'s inferred size)
        symbol = shape_env.create_symbol(value, source, DimDynamic.DYNAMIC, positive=None)
        return shape_env.create_symintnode(symbol, hint=value, source=source)
    return value


def _sizes_of(inputs) -> tuple:
    """What a graph compiled for one set of sizes holds of its inputs: tensor sizes and
    strides, and the ints (sizes fed as ints are compiled in as constants)."""
    return tuple(
        (x.shape, x.stride()) if isinstance(x, torch.Tensor) else x if type(x) is int else None
        for x in inputs
    )


def _same_sizes(sizes: tuple, inputs) -> bool:
    return _sizes_of(inputs) == sizes


def _size_inputs(module: torch.fx.GraphModule) -> tuple[int, ...]:
    """Indices of the scalar inputs read only as sizes (``READ_AS_SIZE``)."""
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    return tuple(
        i
        for i, p in enumerate(placeholders)
        if p.meta.get(READ_AS_SIZE) and p.users and all(u.target is _READ for u in p.users)
    )


def _sizes_as_ints(module: torch.fx.GraphModule, sizes: tuple[int, ...]):
    """A copy of ``module`` taking the inputs ``sizes`` as ints, not 0-dim tensors read."""
    graph = torch.fx.Graph()
    result = graph.graph_copy(module.graph, {})
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for i in sizes:
        for read in list(placeholders[i].users):
            read.replace_all_uses_with(placeholders[i])
            graph.erase_node(read)
    graph.output(result)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _scalar_inputs(module: torch.fx.GraphModule) -> dict[torch.fx.Node, int]:
    """Placeholders read as numbers, with their input index."""
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    read = {n.args[0] for n in module.graph.nodes if n.target is _READ}
    return {p: i for i, p in enumerate(placeholders) if p in read}


def _copy(module: torch.fx.GraphModule) -> torch.fx.GraphModule:
    return _with_constants(module, {})


def _with_constants(module: torch.fx.GraphModule, values: dict[int, object]):
    """A copy of ``module`` whose reads of the scalar inputs in ``values`` are those values
    (compile_fx takes ownership of the module it is given, so always a copy)."""
    graph = torch.fx.Graph()
    result = graph.graph_copy(module.graph, {})
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    fixed = {placeholders[i]: value for i, value in values.items()}
    for node in list(graph.nodes):
        if node.target is _READ and node.args[0] in fixed:
            node.replace_all_uses_with(fixed[node.args[0]])
            graph.erase_node(node)
    graph.output(result)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    packet = getattr(target, "overloadpacket", None)
    return getattr(packet, "__name__", "") if packet is not None else ""


# Which scalars a graph needs fixed is found by failed traces (seconds each); it is kept
# next to Inductor's cache, keyed by the GraphModule's code, so a later process starts
# from it and its compile is a cache hit at once.
_FIXED_FILE = "lazygen_fixed_scalars.json"


def _fixed_path() -> str:
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return os.path.join(cache_dir(), _FIXED_FILE)


def _remembered_fixed() -> dict:
    try:
        with open(_fixed_path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember_fixed(key: str, fixed: tuple[int, ...]) -> None:
    """Add ``key -> fixed`` to the file (written whole and renamed: readers never see half
    a file; a concurrent writer may drop an entry, which only costs a retrace)."""
    data = _remembered_fixed()
    if data.get(key) == list(fixed):
        return
    data[key] = list(fixed)
    with contextlib.suppress(OSError):
        directory = os.path.dirname(_fixed_path())
        fd, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(temporary, _fixed_path())


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


def _is_data_dependent(error: BaseException) -> bool:
    text = _full_text(error)
    return any(words in text for words in _NEEDS_VALUE)


def _frame_nodes(error: BaseException) -> list[torch.fx.Node]:
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


def _symbol_reads(text: str, nodes: list[torch.fx.Node]) -> set[int]:
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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


def _full_text(error: BaseException) -> str:
    parts = []
    for raised in _chain(error):
        parts.append(str(raised))
        parts.extend(getattr(raised, "__notes__", ()))
    return "\n".join(parts)
