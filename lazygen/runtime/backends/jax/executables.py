"""XLA programs as bytes, for lazygen's store of compiled graphs (``execution/graph_store``).

JAX's persistent compilation cache (``compilation_cache.py``) skips XLA's compile, but a
new process still lowers each graph (lazygen's lowering, JAX's tracing and its StableHLO
lowering: ~0.6 s of an encoder + AdamW's first two steps once XLA's part is cached).
A compiled program serialised with ``jax.experimental.serialize_executable`` loads
without any of it. Its argument and result trees are rebuilt here (a flat tuple of
arguments, a tuple of results: what ``lowering.program_function`` takes and returns), so
only plain data is written beside XLA's payload: one line of JSON.

A loaded program runs arbitrary code of whoever wrote the cache's directory, as JAX's own
cache does: the directory is the user's own (made private by ``persistent_cache``).

JAX binds its CPU LAPACK kernels (the custom calls of LU, Cholesky, triangular solves, ...)
when it first lowers such an op; a program loaded without lowering anything called an
unbound kernel and the process died (SIGSEGV: ``linalg.det``'s gradient in a second
process). ``load`` binds them first (``_bind_cpu_kernels``).

Only a program XLA compiled in this process is written (``compile_program`` notes which). One that
JAX's persistent compilation cache served was itself deserialised, and jaxlib (0.10.2)
serialises such an XLA:CPU program again without some of its kernels: the next process
loaded it and its first run failed with ``NOT_FOUND: Function <fusion> not found (type id:
1)`` (a gradient conformance run after a forward run had filled JAX's cache with the same
programs under other graphs). A cache hit shows as JAX's public monitoring event
``/jax/compilation_cache/cache_hits``, recorded in the compiling thread.
"""

from __future__ import annotations

import json
import os
import threading

import jax
import jaxlib
from jax import monitoring
from jax._src.lax import linalg as jax_linalg
from jax.experimental import serialize_executable

from ...errors import LazygenRuntimeError
from ...state import for_process

_CACHE_HIT = "/jax/compilation_cache/cache_hits"


class _Compiling(threading.local):
    """Per thread: whether a compile is under way and whether JAX's persistent cache served
    it (a share of ``state.process``: JAX holds the listener that sets it, for the
    process)."""

    active = False
    served = False


def _note_cache_hit(event: str, **_) -> None:
    compiling = for_process(_Compiling)
    if event == _CACHE_HIT and compiling.active:
        compiling.served = True


monitoring.register_event_listener(_note_cache_hit)


def compile_program(lowered):
    """``lowered.compile()``, and whether XLA compiled it here (True) or JAX's persistent
    cache served a deserialised program (False: ``save`` must not write it again)."""
    compiling = for_process(_Compiling)
    compiling.active, compiling.served = True, False
    try:
        compiled = lowered.compile()
    finally:
        compiling.active = False
    return compiled, not compiling.served


def _trees(arguments: int, results: int):
    flat = jax.tree_util.tree_structure
    return flat((tuple(range(arguments)), {})), flat(tuple(range(results)))


def save(compiled, static: dict[int, int], donated, placed, fresh: bool) -> bytes | None:
    """``compiled`` (a ``jax.stages.Compiled``) with the numbers compiled into it (input
    position -> value), its donation and result order, or None when XLA did not compile it
    in this process (``fresh``: see ``compile_program``) or its trees are not the flat ones
    ``load`` rebuilds."""
    if not fresh:
        return None
    payload, in_tree, out_tree = serialize_executable.serialize(compiled)
    arguments, results = in_tree.num_leaves, out_tree.num_leaves
    if (in_tree, out_tree) != _trees(arguments, results):
        return None
    header = {
        "arguments": arguments,
        "results": results,
        "static": sorted(static.items()),
        "donated": sorted(donated),
        "placed": None if placed is None else list(placed),
    }
    return json.dumps(header).encode() + b"\n" + payload


def _bind_cpu_kernels() -> None:
    """Bind JAX's CPU LAPACK kernels, as its first lowering of a linear-algebra op does;
    without the (private) hook, refuse to load: the caller compiles the graph instead."""
    initialize = getattr(jax_linalg, "initialize_lapack", None)
    if initialize is None:
        raise LazygenRuntimeError(
            f"jax {jax.__version__} has no initialize_lapack: a loaded program could call "
            "unbound CPU kernels"
        )
    initialize()


def load(data: bytes):
    """The program, its numbers, donated inputs and result order, as ``save`` wrote them."""
    _bind_cpu_kernels()
    line, payload = data.split(b"\n", 1)
    header = json.loads(line)
    in_tree, out_tree = _trees(header["arguments"], header["results"])
    compiled = serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
    placed = header["placed"]
    static = {int(i): int(v) for i, v in header["static"]}
    placed = None if placed is None else tuple(placed)
    return compiled, static, frozenset(header["donated"]), placed


def fingerprint() -> tuple[str, ...]:
    """What a program depends on beyond lazygen: JAX's and jaxlib's versions, XLA's flags
    and the devices it was compiled for."""
    devices = jax.devices()
    described = f"{len(devices)} x {devices[0].platform} {devices[0].device_kind}"
    return jax.__version__, jaxlib.__version__, os.environ.get("XLA_FLAGS", ""), described
