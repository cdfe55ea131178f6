"""One Inductor compile of a lazy graph's ``torch.fx.GraphModule``: for its own sizes
(``compile_graph_module``) or with symbolic sizes and the guards they need
(``compile_for_all_sizes``, ``SizeGuard``), with lazygen's wrapper settings
(``LAZY_GRAPH_CONFIG``, the Python wrapper as fallback) and without Inductor's log noise
that lazygen acts on itself. Apart from ``compile.py``, which decides what to compile
(which scalars are fixed, which variant runs); this module is how one compile is made.
"""

from __future__ import annotations

import contextlib
import logging
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
from ...dispatch_modes import outside_dispatch
from ...state import log
from ..fx.lowering import SCALAR_READ as _READ
from .culprits import first_line, needs_value
from .decompose import decompositions_for
from .direct import InnerCompiles, aot_cache_off, direct_call

#: Inductor settings lazygen's graphs are compiled with (see "Per-call costs" above). Part of
#: Inductor's cache key, so its cached code for ``torch.compile``'s own graphs is not
#: shared with lazygen's.
LAZY_GRAPH_CONFIG = MappingProxyType({"size_asserts": False, "cpp_wrapper": True})


#: The same, but Inductor's Python wrapper (when the C++ one fails to compile).
PYTHON_WRAPPER_CONFIG = MappingProxyType({**LAZY_GRAPH_CONFIG, "cpp_wrapper": False})


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


def fake_tensor_errors_unlogged():
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
        if needs_value(error):  # the caller fixes scalars and compiles again
            raise
        why = f"C++ wrapper failed: {first_line(error)}"
    if why is not None:
        metrics.count("InductorPythonWrapper")
        log(1, f"inductor: Python wrapper used ({why})")
        compiles, wrapped = compile_with(PYTHON_WRAPPER_CONFIG)
    if not direct:
        return wrapped
    try:
        call = direct_call(compiles, examples)
    except Exception as error:  # aot's metadata not as expected: keep its wrapper
        log(1, f"inductor: aot's runtime wrapper kept: {first_line(error)}")
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


def _copy(module: torch.fx.GraphModule) -> torch.fx.GraphModule:
    return with_constants(module, {})


def with_constants(module: torch.fx.GraphModule, values: dict[int, object]):
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
