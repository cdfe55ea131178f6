"""The dispatch stage: which kernel handles which ``torch.ops`` overload of a lazy tensor.

This package sits above tracing and execution: a lazy kernel traces (``tracing``), an op
without one is decomposed (``decompositions``) or run on the synced device data by the eager
``fallback`` (which runs pending IR through ``execution``), and a backend's ``refusals``
send the calls it cannot put in a graph there too. This module holds the table.

The table holds the kernels of the backends in use (``install_tables``, from each
backend's ``KernelTables``) and kernels added with ``register_kernels`` (tests, experiments).
``config.set_force_fallback`` removes names from the active table, so those ops reach the
eager fallback. An op without a kernel gets one the runtime builds (``decompositions``:
foreach ops per element, metadata-only ops, composite kernels), else the eager fallback.
The kernel of an op some installed backend refuses to run in a graph (``refusals``) is
wrapped, in the active table, by the check of the calling device's backend.
"""

from __future__ import annotations

import torch

from .. import metrics, state
from ..backend_interface import KernelTables
from ..errors import LazygenRuntimeError
from ..op_registry import library_name, names_match
from ..state import kernel_table, settings
from . import decompositions, refusals
from .fallback import eager_fallback


class _Installed:
    """The kernel tables ``init()`` installed, for the process (a share of
    ``state.process``): torch dispatches the lazy device's autograd kernels through
    ``autograd_library``, and each backend's tables are installed once, as a program imports
    them once; ``after_install`` is what every reset goes back to."""

    def __init__(self) -> None:
        """Nothing installed yet."""
        self.runtime_tables: list = []  # the runtime's own KernelTables (``register_tables``)
        #: the runtime's wrappers (``register_tables``): put around the kernel of their op
        #: that any tables installed later bring, whichever backend's they are
        self.runtime_wrappers: dict = {}
        self.tables: list = []  # backends' KernelTables installed so far, in order
        #: the kernels, autograd kernels and node classes after the last install
        self.after_install: tuple[dict, dict, dict] = ({}, {}, {})
        #: the autograd kernels registered with torch, by op (a ``torch.library`` cannot
        #: drop one: a reset registers again the ones the installed tables name otherwise)
        self.registered_autograd: dict = {}
        self.autograd_library = None


class _Active:
    """The kernels of this run (a part of the runtime object): the installed tables plus
    what ``register_kernels`` added since the last reset, and the ops known to have no
    runtime-built kernel. A reset starts again from ``_Installed.after_install``."""

    def __init__(self) -> None:
        """The installed tables as ``init()`` left them."""
        kernels, autograd_kernels, node_classes = state.for_process(_Installed).after_install
        #: the union of every installed ``KernelTables`` (the runtime's own, then each
        #: backend's: a generated registration's ``KERNELS``, ``AUTOGRAD_KERNELS`` and
        #: ``NODE_CLASSES``, the hand-written kernels, wrappers applied), itself a
        #: ``KernelTables``; the table the dispatcher runs (``state.kernel_table``) is made
        #: from its ``kernels`` by ``refresh``
        self.installed = KernelTables()
        self.installed.kernels.update(kernels)
        self.installed.autograd_kernels.update(autograd_kernels)
        self.installed.node_classes.update(node_classes)
        self.no_decomposition: set = set()

    def on_reset(self) -> _Active:
        """A reset: the installed tables as ``init()`` left them (kernels added with
        ``register_kernels`` since are gone), in a new part, and the dispatcher's table
        rebuilt from it. An autograd kernel registered with torch stays registered (a
        ``torch.library`` cannot drop one impl); where the tables have another for that op,
        it is registered again."""
        fresh = _Active()
        autograd_kernels = fresh.installed.autograd_kernels
        registered = state.for_process(_Installed).registered_autograd
        changed = {op: fn for op, fn in autograd_kernels.items() if registered.get(op) is not fn}
        if changed:
            _register_autograd(changed)
        _rebuild(fresh)
        return fresh


def installed() -> KernelTables:
    """The kernel tables of this run: what ``init()`` installed and ``register_kernels``
    added since the last reset."""
    return state.part(_Active).installed


def install_tables(tables) -> None:
    """Add a backend's kernel tables (``backend.KernelTables``). Two backends of one process
    share the table: their kernels for an op must be the same function."""
    held = state.for_process(_Installed)
    if any(existing is tables for existing in held.tables):
        return
    for op, kernel in tables.kernels.items():
        current = installed().kernels.get(op)
        if current is not None and current is not kernel and held.tables:
            raise LazygenRuntimeError(
                f"lazygen: two backends in this process trace {op} with different kernels; "
                "backends with different kernel tables cannot share a process"
            )
    held.tables.append(tables)
    _add(tables)


def kernel_modules() -> set[str]:
    """The modules whose functions the installed tables run as kernels (a backend's
    generated and hand-written kernels, wherever its package keeps their source): code that
    Dynamo must leave alone (``privateuse1.compile_inputs.skip_lazygen_frames``)."""
    modules, tables = set(), installed()
    for kernel in (*tables.kernels.values(), *tables.autograd_kernels.values()):
        while kernel is not None:
            module = getattr(kernel, "__module__", None)
            if module:
                modules.add(module)
            kernel = getattr(kernel, "__wrapped__", None)
    return modules


def _add(tables) -> None:
    """Add ``tables`` and remember the result as what ``state.reset()`` goes back to."""
    held, current = state.for_process(_Installed), installed()
    current.kernels.update(tables.kernels)
    current.node_classes.update(tables.node_classes)
    if tables.autograd_kernels:
        current.autograd_kernels.update(tables.autograd_kernels)
        _register_autograd(tables.autograd_kernels)
    if not any(existing is tables for existing in held.runtime_tables):
        current.kernels.update(
            {
                op: wrap(tables.kernels[op])
                for op, wrap in held.runtime_wrappers.items()
                if op in tables.kernels
            }
        )
    current.kernels.update(
        {
            op: wrap(current.kernels[op])
            for op, wrap in tables.wrappers.items()
            if op in current.kernels
        }
    )
    metrics.add_counter_aliases(tables.counter_aliases)
    held.after_install = (
        dict(current.kernels),
        dict(current.autograd_kernels),
        dict(current.node_classes),
    )
    refresh()


def register_tables(tables) -> None:
    """Add the runtime's own kernel tables (``ops.runtime_tables()``): unlike
    ``install_tables``, a backend's tables installed later may replace any of them."""
    held = state.for_process(_Installed)
    if any(existing is tables for existing in held.runtime_tables):
        return
    held.runtime_tables.append(tables)
    held.runtime_wrappers.update(tables.wrappers)
    _add(tables)


def register_kernels(kernels: dict, autograd_kernels=None, node_classes=None) -> None:
    """Add (or replace) kernels keyed by ``torch.ops`` overload until the next reset;
    refreshes dispatch."""
    current = installed()
    current.kernels.update(kernels)
    if autograd_kernels:
        current.autograd_kernels.update(autograd_kernels)
        _register_autograd(autograd_kernels)
    if node_classes:
        current.node_classes.update(node_classes)
    refresh()


def unregister_kernels(ops) -> None:
    current = installed()
    for op in ops:
        current.kernels.pop(op, None)
    refresh()


def _register_autograd(kernels: dict) -> None:
    """Autograd kernels for the lazy device (the op list's ``autograd`` section)."""
    held = state.for_process(_Installed)
    if held.autograd_library is None:
        held.autograd_library = torch.library.Library("aten", "IMPL")
    for op, fn in kernels.items():
        held.autograd_library.impl(library_name(op), fn, "AutogradPrivateUse1", allow_override=True)
        held.registered_autograd[op] = fn


def forced(op) -> bool:
    forced = settings.force_fallback
    if not forced:
        return False
    return names_match(op, forced)


def refresh() -> None:
    """Rebuild the table ``__torch_dispatch__`` reads (in place: it holds a reference). The
    only change the table sees besides ``kernel_for``'s additions: ``__torch_dispatch__``
    keeps kernels under ``id(op)`` too, which must go with their op (see ``tracing.tensor``)."""
    _rebuild(state.part(_Active))


def _rebuild(current: _Active) -> None:
    """The dispatcher's table made from ``current``'s kernels (see ``refresh``)."""
    active = {
        op: refusals.guard(op, fn) for op, fn in current.installed.kernels.items() if not forced(op)
    }
    kernel_table.clear()
    kernel_table.update(active)  # ops only: ``__torch_dispatch__`` adds their ids as they run
    current.no_decomposition.clear()


def kernel_for(func):
    """The active kernel of ``func``, or one the runtime builds (cached), or None."""
    kernel = kernel_table.get(func)
    if kernel is None and func not in (missing := state.part(_Active).no_decomposition):
        kernel = None if forced(func) else decompositions.lookup(func, kernel_for)
        if kernel is None:
            missing.add(func)
        else:
            kernel = kernel_table[func] = refusals.guard(func, kernel)
    return kernel


def dispatch_missing(func, args, kwargs):
    """An op without an active kernel: a runtime-built kernel if one applies, else eager."""
    kernel = kernel_for(func)
    if kernel is None:
        return eager_fallback(func, args, kwargs)
    return kernel(*args, **kwargs)


def call(op, *args, **kwargs):
    """``op`` through its lazy (or runtime-built) kernel, else the eager fallback: what
    hand-written kernels use to reach another op."""
    kernel = kernel_for(op)
    return kernel(*args, **kwargs) if kernel is not None else eager_fallback(op, args, kwargs)


def install_refusals(backend) -> None:
    """Apply ``backend.refused_ops()`` (see ``refusals``) to the active table."""
    current = installed()
    refusals.install(backend, current.kernels.keys() | current.autograd_kernels.keys())
    refresh()


def install() -> None:
    """Route ops of lazy tensors without a kernel here (``init()`` calls it)."""
    kernel_table.missing = dispatch_missing
    refresh()
