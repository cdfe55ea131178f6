"""Compiled graphs kept on disk, so the next process skips lowering and compiling them.

A graph's compile is lazygen's own per-graph work (lowering the IR to the backend's
program) plus the backend compiler's; in-process it is done once per structure (the
graph cache), but every new process redid it: a training step's first two steps are
mostly compiles. A backend that can serialise its executables (``Backend.save_executable``
/ ``load_executable``: torchscript, jax) gets them stored in lazygen's persistent store
``graphs`` (``persistent_cache``), under the graph's process-independent digest
(``graph/stable_key.py``) and what else the executable depends on: the device's name,
the backing device, dynamic shapes, the backend's class and ``cache_fingerprint()`` and
its package's source (the folder itself is per machine and lazygen/torch version). What
a lowering reads beyond these (a global flag a backend's lowering consults) is not in
the key: such a backend keeps ``persistent_executables`` off (the test suite runs with
``LAZYGEN_GRAPH_CACHE=0``: its fault-injection nodes switch behaviour by a class flag).

Safe by construction: a graph whose key has no process-independent encoding is never
stored; a stored graph that fails to load is compiled as before (one warning); a failure
to save is one warning. ``LAZYGEN_GRAPH_CACHE=0`` (or ``LAZYGEN_CACHE=0``) turns it off.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import metrics, state
from ..graph import GraphKey, stable_key
from ..state import settings
from . import persistent_cache, shape_store


class Stores(dict):
    """Each backend's store of compiled graphs, or None where it keeps nothing (a part of
    ``state.runtime``: a reset opens them again)."""


def compile_through_store(backend, key: GraphKey, order: list, outputs: list, device):
    """``key``'s executable: loaded from the store where it is kept there, else compiled by
    ``backend`` and stored for the next process. The graph's digest is computed once for
    both (it walks the whole graph: on a cold start it was computed twice per graph)."""
    store, name = _where(backend, key)
    executable = _load(backend, store, name, order, outputs, device)
    if executable is None:
        executable = backend.compile(order, outputs, device)
        _save(backend, store, name, executable)
        shape_store.compiled()  # the shapes its tracing computed, for the next process
    return executable


def _load(backend, store, name: str | None, order: list, outputs: list, device):
    """The stored executable named ``name``, or None (not stored, or not loadable)."""
    if name is None:
        return None
    payload = store.get(name)
    if payload is None:
        return None
    try:
        executable = backend.load_executable(payload, order, outputs, device)
    except Exception as error:  # noqa: BLE001 - a stored graph only saves time
        persistent_cache.warn(
            "unloadable",
            f"a compiled graph stored by {backend.name} could not be loaded "
            f"({type(error).__name__}: {error}); such graphs are compiled again",
        )
        return None
    metrics.count("PersistentGraphLoad")
    return executable


def _save(backend, store, name: str | None, executable) -> None:
    """Store ``executable`` for the next process, where the backend can serialise it."""
    if name is None:
        return
    try:
        payload = backend.save_executable(executable)
    except Exception as error:  # noqa: BLE001 - a stored graph only saves time
        persistent_cache.warn(
            "unsavable",
            f"{backend.name} could not serialise a compiled graph "
            f"({type(error).__name__}: {error}); it is not kept",
        )
        return
    if payload is not None:
        store.put(name, payload)
        metrics.count("PersistentGraphSave")


def _where(backend, key: GraphKey):
    """The backend's store and the graph's name in it, or (None, None)."""
    if not persistent_cache.graphs_enabled():
        return None, None
    if not getattr(backend, "persistent_executables", False):
        return None, None  # asked at every compile: a backend can stop keeping (jax's SPMD)
    stores = state.part(Stores)
    if backend not in stores:
        stores[backend] = _open(backend)
    store = stores[backend]
    if store is None:
        return None, None
    name = stable_key.digest(
        key, settings.device_type, str(settings.backing_device), str(settings.dynamic_shapes)
    )
    return (store, name) if name is not None else (None, None)


def _open(backend):
    if not getattr(backend, "persistent_executables", False):
        return None  # the backend keeps nothing
    cls = type(backend)
    module = sys.modules.get(cls.__module__)
    source = getattr(module, "__file__", None)
    # A class with no source file (``python -c``, a notebook) has no folder to fingerprint:
    # the current directory's parent, which this once walked, can be any tree at all.
    package = (
        persistent_cache.source_fingerprint(str(Path(source).resolve().parent)) if source else ""
    )
    return persistent_cache.store(
        "graphs",
        backend.name,
        f"{cls.__module__}.{cls.__qualname__}",
        package,
        *backend.cache_fingerprint(),
    )
