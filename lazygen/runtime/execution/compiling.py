"""Compiling a step's graph: carry out the graph layer's decision (``graph/policy.py``) of
which executable it gets, compile it through the device's backend, cache it.

Apart from the executor because compiling is one job with its own errors, timings and
profiler ranges; the executor only asks for the executable of a keyed graph.
"""

from __future__ import annotations

import time

from .. import metrics
from ..devices import LazyDevice, caches
from ..errors import LazyGraphError
from ..graph import GraphCache, dynamic, policy, recompiles
from ..graph.policy import Action
from ..graph.uncompiled import UncompiledGraph
from ..ir import Node, Value
from ..state import log, settings
from . import graph_store, profiling


def compile_cached(device: LazyDevice, key, order: list[Node], outputs: list[Value]):
    """The executable of ``key``'s graph, as the graph layer's policy decides
    (``graph/policy.py``): cached, or one serving every size of it (``graph/dynamic.py``),
    or compiled now, or, past the structure's recompile budget, an ``UncompiledGraph`` that runs
    it uncompiled (``graph/budget.py``). Here the decision is carried out and counted."""
    cache = device.cache
    backend = device.backend
    decision = policy.decide(cache, key, order, outputs, backend.name, backend.size_generic)
    if decision.action is Action.CACHED:
        metrics.count("CachedCompile")
        if decision.via_generic:
            metrics.count("DynamicShapeReuse")
            cache.put(key, decision.executable)
        return decision.executable
    if decision.action is Action.UNCOMPILED:
        metrics.count("UncompiledGraphRun")
        _explain(cache, key, order, decision)
        return UncompiledGraph(order, outputs, device.backing)
    metrics.count("UncachedCompile")
    executable, outcome = None, decision.outcome
    if decision.for_all_sizes:
        executable, refused = _compile_for_all_sizes(device, order, outputs)
        if executable is None:
            outcome = f"compiled for its own sizes only: {refused}"
            decision.refused_for_all_sizes()
    _explain(cache, key, order, decision, outcome)
    if executable is None:
        executable = _compile(device, key, order, outputs)
    else:
        cache.put(decision.generic, executable)
    cache.put(key, executable)
    return executable


def _explain(cache: GraphCache, key, order: list[Node], decision, outcome=None) -> None:
    if settings.explain_recompiles:
        outcome = outcome or decision.outcome
        recompiles.report(list(cache.executables), key, order, outcome, decision.generic)


def _compile(device: LazyDevice, key, order: list[Node], outputs: list[Value]):
    backend = device.backend
    start = time.perf_counter()
    try:
        with profiling.span("compile", f"{backend.name}, {profiling.graph_name(key, len(order))}"):
            executable = graph_store.compile_through_store(
                backend, key, order, outputs, device.backing
            )
    except LazyGraphError as error:
        raise error.described_by(backend) from error.__cause__
    except Exception as error:
        raise LazyGraphError("compilation", None, error, backend) from error
    metrics.add_time("CompileTime", time.perf_counter() - start)
    log(
        2,
        f"{backend.name} compiled graph {hash(key) & 0xFFFFFFFF:08x}: {len(order)} nodes, "
        f"{len(outputs)} outputs",
    )
    return executable


def _compile_for_all_sizes(device: LazyDevice, order: list[Node], outputs: list[Value]):
    """The graph compiled from a copy whose sizes are hidden, and None; or None and why
    not, when a lowering reads a size (or anything else fails: the graph is then compiled
    for its own sizes, whose errors are the ones to report)."""
    backend = device.backend
    start = time.perf_counter()
    hidden_order, hidden_outputs = dynamic.hidden_sizes(order, outputs)
    try:
        with profiling.span("compile", f"{backend.name}, all sizes, {len(order)} nodes"):
            executable = backend.compile(hidden_order, hidden_outputs, device.backing)
    except Exception as error:
        metrics.count("DynamicCompileFallback")
        why = dynamic.refusal(error)
        log(1, f"{backend.name}: graph compiled for its own sizes only ({why})")
        return None, why
    metrics.count("DynamicCompile")
    metrics.add_time("CompileTime", time.perf_counter() - start)
    log(2, f"{backend.name} compiled a graph for all sizes: {len(order)} nodes")
    return executable, None


def trim_compile_caches() -> None:
    """Drop least recently used graphs beyond ``config.set_compile_cache_size``."""
    for cache in caches():
        cache.trim()


def clear_compile_cache() -> None:
    for cache in caches():
        cache.clear()


def compile_cache_size() -> int:
    return sum(len(cache) for cache in caches())
