"""Calling Inductor's compiled code for a lazy graph without aot_autograd's runtime wrapper.

``compile_fx`` compiles a GraphModule through aot_autograd: aot traces it (functionalized,
decomposed with Inductor's table, under fake tensors), hands the inference graph to
``compile_fx_inner``, and wraps the compiled code in its runtime wrapper, which on every
call records a profiler range, turns grad mode off and on, counts outputs, applies input
mutations the graph returned instead of writing, regenerates outputs that alias inputs or
intermediates, and bumps the version counters of inputs the graph wrote. Under
``torch.compile(backend="lazygen")`` a lazy graph's replay already runs inside the wrapper
of Dynamo's own aot_autograd, so each graph paid the wrapper twice: about 3 us of a 4-10 us
optimizer or backward graph (``docs/benchmarks.md``, "Per call").

For a lazy graph the wrapper passes the compiled code's inputs and outputs through
unchanged: its graphs are functional but for the writes of optimizer results into their
inputs (``ir.InputWrite``, kept in the graph: ``keep_inference_input_mutations``), its
inputs are plain tensors and numbers, and it is compiled without grad or autocast. So
``compile_fx`` is given an ``inner_compile`` that keeps what ``compile_fx_inner`` returns
and aot's metadata of the graph it compiled (``InnerCompiles``); when that metadata shows
nothing for the wrapper to do but grad mode (and version bumps no one reads, see
``direct_call``), the compiled code is called directly (``DirectCall``, counted as
``InductorDirectCall``), else the wrapper stays (counted as ``InductorAotWrapped``). What aot does at compile time (functionalization,
decompositions, fake-tensor metadata, constants, symbolic sizes) is unchanged: the code
called is the code the wrapper would call.

aot_autograd's own cache (``AOTAutogradCache``) would load a graph's compiled code already
wrapped, never calling ``inner_compile``; lazygen's compiles turn it off
(``aot_cache_off``), and Inductor's FX graph cache, which ``compile_fx_inner`` reads,
still makes a warm compile a cache hit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

import torch
from torch._functorch import config as functorch_config

from ...dispatch_modes import without_autograd


class InnerCompiles:
    """The ``inner_compile`` given to ``compile_fx``: ``compile_fx_inner``, keeping each
    compiled result with its example inputs and aot's metadata of the graph."""

    def __init__(self, inner: Callable) -> None:
        self.inner = inner
        self.results: list[tuple[object, list, bool, object]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence, **kwargs):
        result = self.inner(gm, example_inputs, **kwargs)
        context = torch._guards.TracingContext.try_get()
        meta = context.fw_metadata if context is not None else None
        self.results.append((result, list(example_inputs), bool(kwargs.get("is_inference")), meta))
        return result


@contextlib.contextmanager
def aot_cache_off() -> Iterator[None]:
    """aot_autograd's cache off: a hit would skip ``inner_compile``."""
    with functorch_config.patch(enable_autograd_cache=False):
        yield


def direct_call(compiles: InnerCompiles, examples: list) -> DirectCall | None:
    """The compiled code of the one inference graph ``compile_fx`` compiled from
    ``examples``, callable without aot's runtime wrapper; None when the wrapper has work
    to do for this graph (or the compile is not the plain inference compile expected)."""
    if len(compiles.results) != 1:
        return None
    compiled, inner_examples, is_inference, meta = compiles.results[0]
    if not is_inference or meta is None or not callable(compiled):
        return None
    # aot gave the compiler the graph's own inputs (fakes of them): none deduplicated,
    # merged into a synthetic base, unwrapped from a subclass, or added (rng state, effect
    # tokens), each of which changes their number or kinds.
    if len(inner_examples) != len(examples) or not all(
        _same_kind(a, b) for a, b in zip(inner_examples, examples, strict=True)
    ):
        return None
    if (
        meta.num_mutated_inp_runtime_indices  # input writes applied by the wrapper
        or meta.num_intermediate_bases  # extra outputs the wrapper drops
        or meta.tokens
        or meta.grad_enabled_mutation is not None
        or torch._C._is_any_autocast_enabled()  # the wrapper would turn it off
    ):
        return None
    # Outputs aliasing inputs or other outputs: the wrapper regenerates them as views of
    # their bases, with the same values as the compiled code's (the replay clones outputs
    # that share memory, ``Replay._check``). Inputs the graph writes: the wrapper bumps
    # their version counters, which only matters to autograd graphs that saved them; a
    # lazy graph's inputs are device data no autograd graph saves (the lazy device's
    # tensors are wrappers with versions of their own), or, under torch.compile, the
    # arguments of Dynamo's graph, whose own aot wrapper bumps them.
    return DirectCall(compiled)


def _same_kind(inner, given) -> bool:
    """Whether aot's example input ``inner`` stands for the graph's input ``given``: both
    plain tensors of one dtype and rank, or both numbers of one type (sizes are not
    compared: symbolic ones would add guards)."""
    if isinstance(given, torch.Tensor):
        return (
            isinstance(inner, torch.Tensor)
            and inner.dtype == given.dtype
            and inner.dim() == given.dim()
        )
    return type(inner) is type(given)


class DirectCall:
    """``call(*inputs)``: the compiled code on a fresh list of the inputs (Inductor's boxed
    convention: it clears the list it is given), with grad mode off as the wrapper has it
    (Inductor's out= kernels refuse inputs that require grad otherwise)."""

    __slots__ = ("compiled",)

    def __init__(self, compiled: Callable) -> None:
        self.compiled = compiled

    def __call__(self, *inputs):
        return self.run(inputs)

    def run(self, inputs: Sequence) -> list:
        """The results for ``inputs`` (left as they are: the code gets a copy to clear)."""
        if torch.is_grad_enabled():
            with without_autograd():
                return list(self.compiled(list(inputs)))
        return list(self.compiled(list(inputs)))
