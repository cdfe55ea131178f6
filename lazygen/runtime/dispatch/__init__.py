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
from ..op_registry.identity import library_name, names_match
from ..state import kernel_table, settings
from ..tracing import tensor as _tensor
from . import decompositions, refusals
from .fallback import eager_fallback

#: The union of every installed ``KernelTables`` (the runtime's own, then each backend's:
#: a generated registration's ``KERNELS``, ``AUTOGRAD_KERNELS`` and ``NODE_CLASSES``, the
#: hand-written kernels, wrappers applied), itself a ``KernelTables``. The kernel table
#: the dispatcher runs (``state.kernel_table``) is made from its ``kernels`` by ``refresh``.
installed = KernelTables()
_no_decomposition: set = set()
_autograd_library = None
_runtime_tables: list = []  # the runtime's own KernelTables (``register_tables``)
#: The runtime's wrappers (``register_tables``): put around the kernel of their op that
#: any tables installed later bring, whichever backend's they are.
_runtime_wrappers: dict = {}
_tables: list = []  # backends' KernelTables installed so far, in order
_after_install: tuple[dict, dict, dict] = ({}, {}, {})  # the three tables after the last install


def install_tables(tables) -> None:
    """Add a backend's kernel tables (``backend.KernelTables``). Two backends of one process
    share the table: their kernels for an op must be the same function."""
    if any(existing is tables for existing in _tables):
        return
    for op, kernel in tables.kernels.items():
        current = installed.kernels.get(op)
        if current is not None and current is not kernel and _tables:
            raise LazygenRuntimeError(
                f"lazygen: two backends in this process trace {op} with different kernels; "
                "backends with different kernel tables cannot share a process"
            )
    _tables.append(tables)
    _add(tables)


def kernel_modules() -> set[str]:
    """The modules whose functions the installed tables run as kernels (a backend's
    generated and hand-written kernels, wherever its package keeps their source): code that
    Dynamo must leave alone (``privateuse1.compile_inputs.skip_lazygen_frames``)."""
    modules = set()
    for kernel in (*installed.kernels.values(), *installed.autograd_kernels.values()):
        while kernel is not None:
            module = getattr(kernel, "__module__", None)
            if module:
                modules.add(module)
            kernel = getattr(kernel, "__wrapped__", None)
    return modules


def _add(tables) -> None:
    """Add ``tables`` and remember the result as what ``state.reset()`` goes back to."""
    global _after_install
    installed.kernels.update(tables.kernels)
    installed.node_classes.update(tables.node_classes)
    if tables.autograd_kernels:
        installed.autograd_kernels.update(tables.autograd_kernels)
        _register_autograd(tables.autograd_kernels)
    if not any(existing is tables for existing in _runtime_tables):
        installed.kernels.update(
            {
                op: wrap(tables.kernels[op])
                for op, wrap in _runtime_wrappers.items()
                if op in tables.kernels
            }
        )
    installed.kernels.update(
        {
            op: wrap(installed.kernels[op])
            for op, wrap in tables.wrappers.items()
            if op in installed.kernels
        }
    )
    metrics.add_counter_aliases(tables.counter_aliases)
    _after_install = (
        dict(installed.kernels),
        dict(installed.autograd_kernels),
        dict(installed.node_classes),
    )
    refresh()


def register_tables(tables) -> None:
    """Add the runtime's own kernel tables (``ops.runtime_tables()``): unlike
    ``install_tables``, a backend's tables installed later may replace any of them."""
    if any(existing is tables for existing in _runtime_tables):
        return
    _runtime_tables.append(tables)
    _runtime_wrappers.update(tables.wrappers)
    _add(tables)


def _reset() -> None:
    """Back to the installed tables: kernels added with ``register_kernels`` since go. An
    autograd kernel registered with torch stays registered (a ``torch.library`` cannot drop
    one impl); where the tables have one for that op, it is registered again."""
    kernels, autograd_kernels, node_classes = _after_install
    changed = {
        op: fn
        for op, fn in autograd_kernels.items()
        if installed.autograd_kernels.get(op) is not fn
    }
    for table, saved in (
        (installed.kernels, kernels),
        (installed.autograd_kernels, autograd_kernels),
    ):
        table.clear()
        table.update(saved)
    installed.node_classes.clear()
    installed.node_classes.update(node_classes)
    if changed:
        _register_autograd(changed)
    refresh()


def register_kernels(kernels: dict, autograd_kernels=None, node_classes=None) -> None:
    """Add (or replace) kernels keyed by ``torch.ops`` overload; refreshes dispatch."""
    installed.kernels.update(kernels)
    if autograd_kernels:
        installed.autograd_kernels.update(autograd_kernels)
        _register_autograd(autograd_kernels)
    if node_classes:
        installed.node_classes.update(node_classes)
    refresh()


def unregister_kernels(ops) -> None:
    for op in ops:
        installed.kernels.pop(op, None)
    refresh()


def _register_autograd(kernels: dict) -> None:
    """Autograd kernels for the lazy device (the op list's ``autograd`` section)."""
    global _autograd_library
    if _autograd_library is None:
        _autograd_library = torch.library.Library("aten", "IMPL")
    for op, fn in kernels.items():
        _autograd_library.impl(library_name(op), fn, "AutogradPrivateUse1", allow_override=True)


def forced(op) -> bool:
    forced = settings.force_fallback
    if not forced:
        return False
    return names_match(op, forced)


def refresh() -> None:
    """Rebuild the table ``__torch_dispatch__`` reads (in place: it holds a reference). The
    only change the table sees besides ``kernel_for``'s additions: ``__torch_dispatch__``
    keeps kernels under ``id(op)`` too, which must go with their op (see ``tracing.tensor``)."""
    active = {op: refusals.guard(op, fn) for op, fn in installed.kernels.items() if not forced(op)}
    kernel_table.clear()
    kernel_table.update(active)  # ops only: ``__torch_dispatch__`` adds their ids as they run
    _no_decomposition.clear()


def kernel_for(func):
    """The active kernel of ``func``, or one the runtime builds (cached), or None."""
    kernel = kernel_table.get(func)
    if kernel is None and func not in _no_decomposition:
        kernel = None if forced(func) else decompositions.lookup(func, kernel_for)
        if kernel is None:
            _no_decomposition.add(func)
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
    refusals.install(backend, installed.kernels.keys() | installed.autograd_kernels.keys())
    refresh()


def install() -> None:
    """Route ops of lazy tensors without a kernel here (``init()`` calls it)."""
    _tensor.set_fallback(dispatch_missing)
    refresh()


state.register(__name__, _reset, owns=("installed", "_no_decomposition"))
state.once_per_process(
    __name__,
    ("_runtime_tables", "_runtime_wrappers", "_tables", "_after_install"),
    "the tables init() installed, which a reset goes back to",
)
state.once_per_process(
    __name__,
    ("_autograd_library",),
    "the torch.library of the autograd kernels: torch dispatches through it",
)
