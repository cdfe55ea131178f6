"""The public settings API (``lr.config``, names as ``torch._lazy.config``).

Each setter writes ``settings`` and then refreshes what the setting affects (the dispatch
table, the compile and shape caches). The modules that own those caches read ``settings``
and never import this module, so the facade sits above them and no import runs backwards.
"""

from __future__ import annotations

import torch

from . import dispatch
from .errors import LazygenRuntimeError
from .execution import executor
from .graph import dynamic
from .op_registry import table_key
from .state import settings
from .tracing import ir_reuse, output_shapes

__all__ = [
    "get_async_execution",
    "get_early_results",
    "get_explain_recompiles",
    "get_dynamic_shapes",
    "get_recompile_limit",
    "get_compile_cache_size",
    "get_force_fallback",
    "get_reuse_ir",
    "get_shape_cache_size",
    "set_async_execution",
    "set_early_results",
    "set_backing_device",
    "set_compile_cache_size",
    "set_debug",
    "set_explain_recompiles",
    "set_dynamic_shapes",
    "set_recompile_limit",
    "set_force_fallback",
    "set_max_pending_nodes",
    "set_reuse_ir",
    "set_shape_cache_size",
    "settings",
]


def set_debug(level: int) -> None:
    """0 silent; 1 records each IR node's source line; 2 also logs compiles and syncs."""
    settings.debug = level
    settings.record_source = level >= 1


def set_explain_recompiles(enabled: bool) -> None:
    """Report why each recompile happens (see ``recompiles``); records source lines."""
    settings.explain_recompiles = bool(enabled)
    settings.record_source = bool(enabled) or settings.debug >= 1


def get_explain_recompiles() -> bool:
    """The current value ``set_explain_recompiles`` sets."""
    return settings.explain_recompiles


def set_dynamic_shapes(enabled: bool) -> None:
    """Trace sizes as graph inputs (``LAZYGEN_DYNAMIC_SHAPES=1``; see ``graph/dynamic.py``).

    Every graph then compiles once for all sizes (tensor sizes, size lists and the ``SymInt``
    attributes equal to a size are its inputs). Takes effect for ops traced from now on.
    Switching it off also undoes the recompile budget's switch (``graph/policy.py``).
    """
    settings.dynamic_shapes = bool(enabled)
    if not enabled:
        dynamic.switch_off()


def get_dynamic_shapes() -> bool:
    """Whether sizes are traced as graph inputs.

    True when set so, or when the recompile budget switched them on
    (``config.set_recompile_limit``).
    """
    return dynamic.on()


def set_recompile_limit(limit: int) -> None:
    """Compiles allowed per step structure before a warning and a bounded behaviour.

    A step structure is graphs with the same ops, whatever their sizes and attributes. The
    bounded behaviour: at most one more graph, for all sizes; the others run op by op
    uncompiled (``graph/budget.py``'s ``PAST_THE_LIMIT``). ``LAZYGEN_RECOMPILE_LIMIT`` sets it
    too; default 8, 0 means no limit.
    """
    limit = int(limit)
    if limit < 0:
        raise ValueError(f"lazygen: the recompile limit must be 0 (none) or positive, not {limit}")
    settings.recompile_limit = limit


def get_recompile_limit() -> int:
    """The current value ``set_recompile_limit`` sets."""
    return settings.recompile_limit


def set_reuse_ir(enabled: bool) -> None:
    """Reuse the last step's IR nodes where this step traces equal ones.

    Equal as in LTC's trie: same class, attrs, shapes and operands, inputs of the same kind
    and shape; see ``ir_reuse``. Switching it off forgets the remembered nodes.
    """
    settings.reuse_ir = bool(enabled)
    if not settings.reuse_ir:
        ir_reuse.reset()


def get_reuse_ir() -> bool:
    """The current value ``set_reuse_ir`` sets."""
    return settings.reuse_ir


def set_force_fallback(op_names) -> None:
    """Send these ops to the eager fallback even when a lazy kernel exists.

    Names are schema names with or without overload (``"add.Tensor"``, ``"add"``), with or
    without the ``aten::`` prefix. A single string may list several, comma-separated.
    """
    if isinstance(op_names, str):
        op_names = [n for n in op_names.split(",") if n.strip()]
    names = set()
    for name in op_names or ():
        names.add(table_key(name.strip()))
    settings.force_fallback = frozenset(names)
    dispatch.refresh()


def get_force_fallback() -> frozenset[str]:
    """The current value ``set_force_fallback`` sets."""
    return settings.force_fallback


def set_max_pending_nodes(count: int) -> None:
    """Cut the graph (as ``mark_step`` would) once this many nodes were traced since the last."""
    settings.max_pending_nodes = int(count)


def set_compile_cache_size(entries: int) -> None:
    """Keep at most this many compiled graphs per backend (least recently used go first)."""
    settings.compile_cache_size = max(0, int(entries))
    executor.trim_compile_caches()


def get_compile_cache_size() -> int:
    """The current value ``set_compile_cache_size`` sets."""
    return settings.compile_cache_size


def set_shape_cache_size(entries: int) -> None:
    """Keep at most this many cached shape inferences (least recently used go first)."""
    settings.shape_cache_size = max(0, int(entries))
    output_shapes.trim_cache()


def get_shape_cache_size() -> int:
    """The current value ``set_shape_cache_size`` sets."""
    return settings.shape_cache_size


def set_backing_device(device: str) -> None:
    """Where the built-in backends keep device data: ``"cpu"`` or ``"cuda"``.

    It can be set only before the first lazy tensor (``LAZYGEN_BACKING_DEVICE``). A backend
    may decide otherwise.
    """
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise LazygenRuntimeError(
            "lazygen: CUDA backing device requested but CUDA is not available"
        )
    settings.backing_device = device


def set_async_execution(enabled: bool) -> None:
    """Let ``mark_step`` return while its graph runs.

    This is the default; ``LAZYGEN_ASYNC=0`` turns it off. Reads of the results wait for the
    run; a failed run raises on the first read or at the next ``mark_step``.
    ``mark_step(wait=True)`` runs synchronously either way.
    """
    settings.async_execution = bool(enabled)


def get_async_execution() -> bool:
    """The current value ``set_async_execution`` sets."""
    return settings.async_execution


def set_early_results(enabled: bool) -> None:
    """Let ``mark_step`` run a step's single-element results (the loss) in their own graph.

    That graph runs ahead of the rest, so that reading them does not wait for the whole step
    (the default; ``LAZYGEN_EARLY_RESULTS=0`` turns it off). Costs a second compile per step
    structure.
    """
    settings.early_results = bool(enabled)


def get_early_results() -> bool:
    """The current value ``set_early_results`` sets."""
    return settings.early_results
