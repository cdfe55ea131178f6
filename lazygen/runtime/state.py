"""The runtime's process-wide mutable state, in one place, with one ``reset()``.

* ``settings``: the knobs read on the hot path (``config`` is their public facade, whose
  setters also refresh what a setting affects);
* ``kernel_table``: the kernel table, what ``LazyTensor.__torch_dispatch__`` runs (op -> kernel),
  filled in place by ``dispatch``;
* every other piece of mutable state (kernel tables, shape and IR caches, compile caches,
  counters, pending step closures) is owned by one module, which declares it here with
  ``register(module, reset, owns=(names...))``; ``owners()`` lists them;
* what must outlive a reset is declared with ``once_per_process(module, names, reason)``:
  what torch holds references into (patched originals, ``torch.library`` objects, streams
  handed out), what ``init()`` or an import fills once (the devices, the installed tables,
  registered backends), and memo tables of pure functions (overload lookups, scalar shapes,
  an op's mutated arguments: the same answers whatever happened before).

Every module-level mutable global of ``lazygen/runtime`` and ``lazygen/dynamo`` is named in
one of the two (``tests/architecture/test_state_ownership.py`` fails on one that is not);
constants are tuples, frozensets or ``MappingProxyType``s.

``reset()`` puts all of it back as ``init()`` left it: settings to their environment
defaults (the device name and backing device stay: they are fixed once tensors exist),
kernels to the installed tables, caches and counters empty. Tests use it instead of
clearing a module's globals by hand. What ``init()`` changes in torch and in the process
(PrivateUse1, patches, GC) is not state to reset: ``process`` lists it.

The bottom of the runtime: it imports nothing of lazygen and never calls into the modules
that read it, except through the resets they register.

Debug verbosity comes from one environment variable, ``LAZYGEN_DEBUG``:
0 (default) silent; 1 records each IR node's source line; 2 also logs compiles and syncs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable

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
        "explain_recompiles",
        "dynamic_shapes",
        "recompile_limit",
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
        self.restore()
        self.backing_device = os.environ.get("LAZYGEN_BACKING_DEVICE", "cpu")
        # The lazy device's name (PrivateUse1 renamed), fixed by ``init(device_name=...)``
        # before the first lazy tensor; every module reads it here.
        self.device_type = "lazygen"

    def restore(self) -> None:
        """Every knob ``config`` can change back to its default (from the environment),
        except the device name and backing device, which hold for the process."""
        self.debug = _env_int("LAZYGEN_DEBUG", 0)
        # LAZYGEN_SAVE_TENSORS_FILE (or LTC's LTC_SAVE_TENSORS_FILE): every synced graph's
        # IR is appended there (``debug``), with the user's line of each node when set
        # before the runtime starts (sources are then recorded).
        saving = os.environ.get("LAZYGEN_SAVE_TENSORS_FILE") or os.environ.get(
            "LTC_SAVE_TENSORS_FILE"
        )
        # LAZYGEN_EXPLAIN_RECOMPILES=1: say why each recompile happens (``recompiles``),
        # naming the user's line of the node that differs (so sources are recorded).
        self.explain_recompiles = _env_int("LAZYGEN_EXPLAIN_RECOMPILES", 0) != 0
        self.record_source = self.debug >= 1 or bool(saving) or self.explain_recompiles
        # LAZYGEN_DYNAMIC_SHAPES=1: sizes are graph inputs, and a graph seen with a second
        # set of sizes compiles once for all of them (``graph/dynamic.py``).
        self.dynamic_shapes = _env_int("LAZYGEN_DYNAMIC_SHAPES", 0) != 0
        # Compiles per step structure before a warning and a bounded behaviour (0: none).
        self.recompile_limit = _env_int("LAZYGEN_RECOMPILE_LIMIT", 8)
        self.reuse_ir = False
        self.force_fallback: frozenset[str] = frozenset()
        self.max_pending_nodes = _env_int("LAZYGEN_MAX_PENDING_NODES", 100_000)
        self.compile_cache_size = _env_int("LAZYGEN_COMPILE_CACHE_SIZE", 1024)
        self.shape_cache_size = _env_int("LAZYGEN_SHAPE_CACHE_SIZE", 50_000)
        self.async_execution = _env_int("LAZYGEN_ASYNC", 1) != 0
        self.early_results = _env_int("LAZYGEN_EARLY_RESULTS", 1) != 0
        # 2048 covers a small transformer's step (measured in docs/benchmarks.md); the walk
        # is cheap per node, so far larger steps, mostly tracing, stay one graph.
        self.early_results_max_nodes = _env_int("LAZYGEN_EARLY_RESULTS_MAX_NODES", 2048)


settings = _Settings()


def is_lazy_device(device) -> bool:
    """Whether ``device`` (a ``torch.device``, a string such as ``"lazygen:0"``) is the lazy
    device, under whatever name ``init(device_name=...)`` gave it."""
    if isinstance(device, str):
        return device.partition(":")[0] == settings.device_type
    return isinstance(device, torch.device) and device.type == settings.device_type


#: The dispatch table ``LazyTensor.__torch_dispatch__`` reads: ``torch.ops`` overload ->
#: kernel. ``dispatch`` fills it in place (never replaces it: readers hold a reference).
kernel_table: dict = {}

_resets: dict[str, list[Callable[[], None]]] = {}
_owned: dict[str, tuple[str, ...]] = {}  # module -> the globals its reset puts back
_kept: dict[str, dict[str, str]] = {}  # module -> {global: why a reset leaves it}


def register(owner: str, reset_fn: Callable[[], None], owns: Iterable[str] = ()) -> None:
    """Declare that module ``owner`` (its ``__name__``) keeps mutable state in its globals
    ``owns``, and how to put them back (``reset_fn``, called by ``reset()``). A module may
    register several pieces of state: each call adds its reset and its globals, so a
    second registration never silently drops the first one's."""
    resets = _resets.setdefault(owner, [])
    if reset_fn not in resets:
        resets.append(reset_fn)
    _owned[owner] = tuple(dict.fromkeys(_owned.get(owner, ()) + tuple(owns)))


def once_per_process(owner: str, names: Iterable[str], reason: str) -> None:
    """Declare that module ``owner``'s globals ``names`` hold what must outlive ``reset()``
    (``reason`` says why: torch holds references into it, ``init()`` fills it once, or it
    memoises a pure function)."""
    _kept.setdefault(owner, {}).update(dict.fromkeys(names, reason))


def owned_globals() -> dict[str, tuple[str, ...]]:
    """Module -> the globals ``reset()`` puts back (as ``register`` declared them)."""
    return dict(_owned)


def kept_globals() -> dict[str, dict[str, str]]:
    """Module -> {global: reason} of the globals declared once per process."""
    return {owner: dict(names) for owner, names in _kept.items()}


def owners() -> list[str]:
    """The modules that keep mutable state, in the order ``reset()`` resets them."""
    return list(_resets)


def reset() -> None:
    """Put the runtime's state back as ``init()`` left it (see the module docstring).
    Pending IR is not synced first: call ``mark_step()`` before, if tensors should keep
    their values."""
    settings.restore()
    for resets in list(_resets.values()):
        for reset_fn in list(resets):
            reset_fn()


once_per_process(
    __name__,
    ("_resets", "_owned", "_kept"),
    "the registry of owners itself, filled as modules are imported",
)
# Emptied first (in place: readers hold a reference); ``dispatch``'s reset, registered
# after this one, fills it again from the installed tables.
register(__name__, kernel_table.clear, owns=("kernel_table",))


def log(level: int, message: str) -> None:
    """Print ``message`` to stderr when ``LAZYGEN_DEBUG`` is at least ``level``."""
    if settings.debug >= level:
        print(f"[lazygen] {message}", file=sys.stderr)
