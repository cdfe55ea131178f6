"""Runtime settings: one module-level object read on the hot path, set through functions.

Debug verbosity comes from one environment variable, ``LAZYGEN_DEBUG``:
0 (default) silent; 1 records each IR node's source line; 2 also logs compiles and syncs.
"""

from __future__ import annotations

import os
import sys

import torch


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class _Settings:
    """Mutable runtime settings; the hot path reads attributes of the single instance."""

    __slots__ = (
        "debug",
        "record_source",
        "reuse_ir",
        "force_fallback",
        "max_pending_nodes",
        "compile_cache_size",
        "shape_cache_size",
        "backing_device",
        "async_execution",
    )

    def __init__(self) -> None:
        self.debug = _env_int("LAZYGEN_DEBUG", 0)
        self.record_source = self.debug >= 1
        self.reuse_ir = False
        self.force_fallback: frozenset[str] = frozenset()
        self.max_pending_nodes = _env_int("LAZYGEN_MAX_PENDING_NODES", 100_000)
        self.compile_cache_size = _env_int("LAZYGEN_COMPILE_CACHE_SIZE", 1024)
        self.shape_cache_size = _env_int("LAZYGEN_SHAPE_CACHE_SIZE", 50_000)
        self.backing_device = os.environ.get("LAZYGEN_BACKING_DEVICE", "cpu")
        self.async_execution = _env_int("LAZYGEN_ASYNC", 1) != 0


settings = _Settings()


def log(level: int, message: str) -> None:
    """Print ``message`` to stderr when ``LAZYGEN_DEBUG`` is at least ``level``."""
    if settings.debug >= level:
        print(f"[lazygen] {message}", file=sys.stderr)


def set_debug(level: int) -> None:
    settings.debug = level
    settings.record_source = level >= 1


def set_reuse_ir(enabled: bool) -> None:
    """Reuse an equal IR node (same class, operands, attrs, shapes) instead of a new one."""
    settings.reuse_ir = bool(enabled)


def get_reuse_ir() -> bool:
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
        name = name.strip()
        names.add(name[len("aten::") :] if name.startswith("aten::") else name)
    settings.force_fallback = frozenset(names)
    from . import registry

    registry.refresh()


def get_force_fallback() -> frozenset[str]:
    return settings.force_fallback


def set_max_pending_nodes(count: int) -> None:
    """Cut the graph (as ``mark_step`` would) once this many nodes were traced since the last."""
    settings.max_pending_nodes = int(count)


def set_compile_cache_size(entries: int) -> None:
    """Keep at most this many compiled graphs (least recently used go first)."""
    settings.compile_cache_size = max(0, int(entries))
    from . import executor

    executor.trim_compile_cache()


def get_compile_cache_size() -> int:
    return settings.compile_cache_size


def set_shape_cache_size(entries: int) -> None:
    """Keep at most this many cached shape inferences (least recently used go first)."""
    settings.shape_cache_size = max(0, int(entries))
    from . import shape_inference

    shape_inference.trim_cache()


def get_shape_cache_size() -> int:
    return settings.shape_cache_size


def set_backing_device(device: str) -> None:
    """Where device data lives: ``"cpu"`` or ``"cuda"``; only before the first lazy tensor."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("lazygen: CUDA backing device requested but CUDA is not available")
    settings.backing_device = device


def set_async_execution(enabled: bool) -> None:
    """Let ``mark_step`` return while its graph runs (the default; ``LAZYGEN_ASYNC=0`` turns
    it off). Reads of the results wait for the run; a failed run raises on the first read
    or at the next ``mark_step``. ``mark_step(wait=True)`` runs synchronously either way."""
    settings.async_execution = bool(enabled)


def get_async_execution() -> bool:
    return settings.async_execution
