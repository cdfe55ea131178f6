"""JAX's persistent compilation cache, on by default, in lazygen's cache directory.

XLA's compile of a training step's graph takes seconds (2.9 s each for an encoder +
AdamW's two graphs on a loaded 2-core machine); JAX can keep compiled programs on disk,
but only when given a directory (``jax_compilation_cache_dir``) and only for compiles
longer than ``jax_persistent_cache_min_compile_time_secs`` (1 s by default). ``enable()``
gives it lazygen's store ``jax`` (``persistent_cache``: one folder per CPU, JAX, jaxlib,
torch and lazygen version and ``XLA_FLAGS``, so a program compiled for other CPU
features or another XLA is never read) and keeps every compile.

The entries are lazygen's own files (``persistent_cache.Store``: written atomically,
checksummed, a corrupt one removed with one warning), handed to JAX as its cache object:
JAX's own file cache writes entries in place, where a process reading while another
writes would read a torn entry and warn on every later start. JAX has no public way to
give it the storage, so it is set on JAX's module (``jax._src.compilation_cache``); where
that fails, JAX's own file cache runs in the same directory.

A program that set ``jax_compilation_cache_dir`` itself keeps its setting.
``LAZYGEN_CACHE=0`` turns it off.
"""

from __future__ import annotations

import os

import jax
import jaxlib

from ...execution import persistent_cache

try:  # JAX's storage hook, private (see the module docstring)
    from jax._src import compilation_cache as _jax_cache
    from jax._src.compilation_cache_interface import CacheInterface
except ImportError:  # pragma: no cover - another JAX: its own file cache
    _jax_cache = None
    CacheInterface = object


class _Entries(CacheInterface):
    """JAX's cache interface over a lazygen store."""

    def __init__(self, store: persistent_cache.Store) -> None:
        self._store = store
        self._path = store.path

    def get(self, key: str) -> bytes | None:
        return self._store.get(key)

    def put(self, key: str, value: bytes) -> None:
        self._store.put(key, value)


def enable() -> None:
    """Turn the cache on (see the module docstring); idempotent."""
    if jax.config.jax_compilation_cache_dir is not None:
        return  # the program's own, or already on
    store = persistent_cache.store(
        "jax", jax.__version__, jaxlib.__version__, os.environ.get("XLA_FLAGS", "")
    )
    if store is None:
        return
    jax.config.update("jax_compilation_cache_dir", str(store.path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if _jax_cache is None:
        return
    try:
        with _jax_cache._cache_initialized_mutex:
            if _jax_cache._cache is None:
                _jax_cache._cache = _Entries(store)
                _jax_cache._cache_initialized = True
    except AttributeError:  # pragma: no cover - another JAX: its own file cache
        pass
