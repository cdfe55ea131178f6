"""Output shapes kept on disk: a warm process reads what the meta kernels answered before.

Tracing a step runs each op signature's meta kernel once per process
(``tracing/output_shapes.py``); in a process whose graphs all load from the graph store,
those meta kernels were a quarter of the first two steps (docs/benchmarks.md). ``load()``
(at ``init()``) reads the table an earlier process wrote into lazygen's persistent store
``shapes`` (``persistent_cache``: one folder per machine, Python, torch and lazygen source,
and here the lazy device's name) and makes it a part of the runtime; ``save()`` writes
back the table with what this process computed since, merged with what another process
wrote meanwhile (the last ``MAX_SHAPES`` kept). It runs after a compile (``compiled()``:
the first, then at most every ``SAVE_INTERVAL`` seconds: a compile costs more than the
write, but a process compiling graph after graph must not rewrite the table each time)
and at exit.

The table is JSON: ``{"format": 1, "shapes": {name: [[dtype, [sizes...]] | null, ...]}}``
(names: ``output_shapes.persistent_name``). A corrupt, unreadable or unexpected file is
ignored with one ``PersistentCacheWarning`` (the meta kernels run as before), never an
error. ``LAZYGEN_SHAPE_CACHE=0`` (or ``LAZYGEN_CACHE=0``) turns it off.
"""

from __future__ import annotations

import atexit
import json
import os
import time

import torch

from .. import state
from ..ir import Shape
from ..state import settings
from ..tracing.output_shapes import StoredShapes
from . import persistent_cache

_FORMAT = 1
_ENTRY = "table"
#: Shapes the table keeps (the oldest written go first); about 200 bytes each.
MAX_SHAPES = 20000
#: Seconds between two writes after compiles (``compiled()``).
SAVE_INTERVAL = 5.0


def enabled() -> bool:
    """Whether the store of output shapes is on (unless ``LAZYGEN_SHAPE_CACHE=0``)."""
    return persistent_cache.enabled() and os.environ.get("LAZYGEN_SHAPE_CACHE", "1") != "0"


class _Opened:
    """The store this runtime reads and writes (a part of the runtime: a reset forgets it)."""

    def __init__(self) -> None:
        self.store: persistent_cache.Store | None = None
        self.saved_at: float | None = None  # ``time.monotonic()`` of the last write

    def on_reset(self) -> _Opened:
        return self  # as ``init()`` left it: open


def load() -> None:
    """Read the stored table into the runtime (nothing when the store is off or unusable)."""
    if not enabled():
        return
    store = persistent_cache.store("shapes", settings.device_type)
    if store is None:
        return
    state.part(_Opened).store = store
    state.runtime.parts[StoredShapes] = StoredShapes(_read(store))
    if state.first_time("shape_store:atexit"):
        atexit.register(save)


def compiled() -> None:
    """A graph was compiled: write the new shapes, unless the last write was recent."""
    opened = state.runtime.parts.get(_Opened)
    saved_at = None if opened is None else opened.saved_at
    if saved_at is None or time.monotonic() - saved_at >= SAVE_INTERVAL:
        save()


def save() -> None:
    """Write the table back with this process's new shapes (nothing new: nothing written)."""
    stored = state.runtime.parts.get(StoredShapes)
    opened = state.runtime.parts.get(_Opened)
    if stored is None or opened is None or opened.store is None or not stored.fresh:
        return
    table = _read(opened.store)
    table.update(stored.take_fresh())
    if len(table) > MAX_SHAPES:
        table = dict(list(table.items())[-MAX_SHAPES:])
    entries = {name: [_encoded(s) for s in shapes] for name, shapes in table.items()}
    opened.store.put(_ENTRY, json.dumps({"format": _FORMAT, "shapes": entries}).encode())
    opened.saved_at = time.monotonic()


def _read(store: persistent_cache.Store) -> dict:
    payload = store.get(_ENTRY)
    if payload is None:
        return {}
    try:
        document = json.loads(payload)
        if document.get("format") != _FORMAT:
            raise ValueError(f"format {document.get('format')!r}, not {_FORMAT}")
        return {
            name: tuple(_decoded(s) for s in shapes) for name, shapes in document["shapes"].items()
        }
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        persistent_cache.warn(
            "unreadable shapes",
            f"the stored output shapes of {store.path} could not be read "
            f"({type(error).__name__}: {error}); they are computed again",
        )
        return {}


def _encoded(shape: Shape | None) -> list | None:
    return None if shape is None else [str(shape.dtype).removeprefix("torch."), list(shape.sizes)]


def _decoded(entry) -> Shape | None:
    if entry is None:
        return None
    name, sizes = entry
    dtype = getattr(torch, name, None)
    if type(dtype) is not torch.dtype or any(type(n) is not int for n in sizes):
        raise ValueError(f"no shape: {entry!r}")
    return Shape(dtype, tuple(sizes))
