"""Runtime settings: one object read on the hot path. The bottom of the runtime: it imports
nothing of lazygen, and it never calls into the modules that read it (``config`` is the
public facade whose setters also refresh the caches a setting affects).

Debug verbosity comes from one environment variable, ``LAZYGEN_DEBUG``:
0 (default) silent; 1 records each IR node's source line; 2 also logs compiles and syncs.
"""

from __future__ import annotations

import os
import sys


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
        "early_results",
        "early_results_max_nodes",
        "device_type",
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
        self.early_results = _env_int("LAZYGEN_EARLY_RESULTS", 1) != 0
        # 2048 covers a small transformer's step (891 nodes: 40.9 -> 36.5 ms per step with
        # the split, docs/benchmarks.md); the walk costs ~3 us a node, so far larger steps,
        # mostly tracing, stay one graph.
        self.early_results_max_nodes = _env_int("LAZYGEN_EARLY_RESULTS_MAX_NODES", 2048)
        # The lazy device's name (PrivateUse1 renamed), fixed by ``init(device_name=...)``
        # before the first lazy tensor; every module reads it here.
        self.device_type = "lazygen"


settings = _Settings()


def log(level: int, message: str) -> None:
    """Print ``message`` to stderr when ``LAZYGEN_DEBUG`` is at least ``level``."""
    if settings.debug >= level:
        print(f"[lazygen] {message}", file=sys.stderr)
