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
import os
import tempfile
from collections.abc import Callable

import torch
import torch.fx

from ... import metrics
from ...graph import recompiles
from ...state import log, settings
from ..fx.lowering import READ_AS_SIZE
from ..fx.lowering import SCALAR_READ as _READ
from . import culprits
from .culprits import first_line, needs_value
from .direct import DirectCall
from .trace import (
    compile_for_all_sizes,
    compile_graph_module,
    fake_tensor_errors_unlogged,
    with_constants,
)

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
        """Report why no variant runs ``inputs`` (``culprits.py``); best effort, as
        lazygen's own explanations."""
        try:
            if key in self.variants:  # their size guards rejected these sizes
                guard = next(g for g, _ in self.variants[key] if g is not None)
                parts = getattr(guard, "parts", [])  # none: compiled for its own sizes only
                explanation = culprits.rejected_guard(self.module, parts, inputs)
            else:
                explanation = culprits.changed_value(
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
                with fake_tensor_errors_unlogged():
                    compiled = self._compile(inputs, key)
                break
            except Exception as error:
                if not needs_value(error):
                    raise
                blamed = culprits.scalars_to_fix(self.module, self._scalar_inputs, error)
                blamed -= set(self.fixed)
                if not blamed:  # the error named no scalar: fix them all, once
                    blamed = set(self._scalar_inputs.values()) - set(self.fixed)
                if not blamed:
                    raise
                metrics.count("InductorFixedScalar", len(blamed))
                log(2, f"inductor: fixing scalar inputs {sorted(blamed)}: {first_line(error)}")
                self.fixed = tuple(sorted(set(self.fixed) | blamed))
        if self.fixed:
            _remember_fixed(self._key, self.fixed)
        return compiled

    def _compile(self, inputs: list, key: tuple) -> Callable:
        module = with_constants(self.module, dict(zip(self.fixed, key, strict=True)))
        if not self.dynamic:
            compiled, guard = compile_graph_module(module, list(inputs), self.direct), None
        else:
            try:
                compiled, guard = compile_for_all_sizes(module, list(inputs), self.direct)
            except Exception as error:
                if needs_value(error):
                    raise
                # Inductor could not compile it for all sizes: these sizes only, guarded so.
                metrics.count("InductorStaticFallback")
                log(1, f"inductor: graph compiled for its own sizes only: {first_line(error)}")
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
