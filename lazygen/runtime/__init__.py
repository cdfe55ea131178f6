"""lazygen's runtime: the lazy device, lazy tensors, IR, graph executor, and backends.

The user API mirrors ``torch._lazy``::

    import lazygen.runtime as lr
    lr.init()                      # or lr.init(backend="inductor", device_name="mydev")
    x = torch.randn(3, device="lazygen")
    lr.mark_step()

This module is the composition root: ``init()`` wires the backend-neutral core (dispatch
table, eager fallback, device kernels, the PrivateUse1 device) to the chosen backend. No
other module outside ``backends/`` names a backend, and importing lazygen changes nothing
in torch until ``init()`` runs.
"""

from __future__ import annotations

import os
import re
import threading

import torch

# First: an unsupported torch is refused here, with one error naming the supported range.
from lazygen.runtime import torch_compat  # noqa: F401

from . import backend_interface as _backend_registry
from . import config, debug, devices, dispatch, distributed, ir_cache, metrics, ops, process, state
from . import privateuse1 as _privateuse1
from .backend_interface import Backend, KernelTables, make_backend, register_backend
from .backends import BUILTIN, default_backend
from .devices import all_devices, device_from
from .errors import GraphCutWarning, LazygenRuntimeError, LazyGraphError
from .execution import executor, shape_store, step_closures
from .graph import dynamic as _dynamic
from .graph.budget import RecompileLimitWarning
from .lowering_context import LoweringContext
from .privateuse1 import autograd_queue
from .state import is_lazy_device, settings
from .tracing.tensor import inner

_privateuse1.reserve_autograd_queue()

__all__ = [
    "Backend",
    "GraphCutWarning",
    "KernelTables",
    "LazyGraphError",
    "LazygenRuntimeError",
    "LoweringContext",
    "RecompileLimitWarning",
    "add_step_closure",
    "available_backends",
    "backend",
    "config",
    "debug",
    "device",
    "device_name",
    "distributed",
    "init",
    "ir_cache",
    "is_lazy_device",
    "mark_dynamic",
    "mark_step",
    "metrics",
    "register_backend",
    "reset",
    "set_device_backend",
    "state",
    "sync",
    "to_cpu",
    "wait_device_ops",
]

_init_lock = threading.Lock()
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def init(
    backend: str | Backend | None = None,
    device_name: str | None = None,
    dynamic_shapes: bool | None = None,
    device_count: int | None = None,
) -> None:
    """Set the lazy device up once per process.

    Later calls with no arguments, or the same ones, do nothing.

    ``backend``: a registered name (``"torchscript"``, the default; ``"jax"``, XLA through
    JAX, ``pip install lazygen[jax]``: device data are ``jax.Array``s, the way to run on
    XLA; ``"inductor"``; ``"fx"``; a third-party one), or a ``Backend`` instance; else
    ``LAZYGEN_BACKEND``. With neither, a torch where TorchScript does not work gets
    ``"fx"``, with one warning. For training, move the model there and compile the step
    (docs/guides/torch-compile.md): ``init(backend="jax")``, ``model.to("lazygen")``,
    ``torch.compile(step, backend="lazygen")``.
    ``device_name``: the torch device type of the lazy device (else ``LAZYGEN_DEVICE_NAME``,
    else the backend's ``device_name``, else ``"lazygen"``); torch allows one such device
    per process.
    ``dynamic_shapes``: trace sizes as graph inputs so that every graph compiles once for
    all sizes (else ``LAZYGEN_DYNAMIC_SHAPES``; ``mark_dynamic``).
    ``device_count``: how many lazy devices (``<device>:0`` ... ``<device>:<count-1>``) the
    process offers (else ``LAZYGEN_DEVICE_COUNT``, else ``devices.DEFAULT_DEVICE_COUNT``).
    """
    if dynamic_shapes is not None:
        settings.dynamic_shapes = bool(dynamic_shapes)
    if device_count is not None:
        devices.set_device_count(device_count)
    with _init_lock, process.collector_paused():
        if devices.default_backend() is not None:
            _check_same(backend, device_name or settings.device_type)
            return
        ops.define_ops()  # before any backend asks for the neutral ops by name
        requested = backend or os.environ.get("LAZYGEN_BACKEND")
        chosen = make_backend(requested, BUILTIN) if requested else default_backend()
        name = device_name or _env_device_name() or chosen.device_name or settings.device_type
        if not _NAME.match(name):
            raise ValueError(
                f"lazygen: device name {name!r} must be lowercase letters, digits and "
                "underscores, starting with a letter (torch device types are identifiers)"
            )
        tables = _backend_registry.kernel_tables_of(chosen)
        settings.device_type = name
        _privateuse1.install(name)
        dispatch.install()
        dispatch.register_tables(ops.runtime_tables())
        dispatch.install_tables(tables)
        dispatch.register_tables(KernelTables(kernels=distributed.install()))
        dispatch.install_refusals(chosen)
        devices.configure(chosen)  # the default backend, which marks the runtime initialised
        shape_store.load()  # the output shapes earlier processes computed
    process.apply_gc_effects()
    autograd_queue.check(device())


def _env_device_name() -> str | None:
    return os.environ.get("LAZYGEN_DEVICE_NAME") or None


def _check_same(backend, name: str) -> None:
    if name != settings.device_type:
        raise LazygenRuntimeError(
            f"lazygen: the lazy device is already named {settings.device_type!r}; torch "
            f"allows one such device per process, so it cannot also be {name!r}"
        )
    default = devices.default_backend()
    if backend is None or backend is default:
        return
    if isinstance(backend, str) and BUILTIN.get(backend, backend) == BUILTIN.get(
        default.name, default.name
    ):
        return
    raise LazygenRuntimeError(
        f"lazygen: already initialised with backend {default.name!r}; run another device "
        "index on another backend with lazygen.runtime.set_device_backend(index, backend)"
    )


def set_device_backend(index: int, backend: str | Backend) -> Backend:
    """Run ``<device>:<index>`` on another backend (before that index holds tensors).

    E.g. ``lazygen:0`` on TorchScript and ``lazygen:1`` on inductor. The two backends must
    trace with the same kernel tables (the built-in ones do). Returns the backend.
    """
    init()
    chosen = make_backend(backend, BUILTIN)
    dispatch.install_tables(_backend_registry.kernel_tables_of(chosen))
    dispatch.install_refusals(chosen)
    devices.set_device_backend(index, chosen)
    return chosen


def backend(index: int | None = None) -> Backend:
    """The backend running ``<device>:<index>`` (the current index by default)."""
    init()
    return devices.backend_of(devices.current_index() if index is None else index)


def available_backends() -> list[str]:
    """Names ``init(backend=...)`` accepts: registered, built-in and installed backends."""
    return _backend_registry.available_backends(BUILTIN)


def device_name() -> str:
    """The lazy device's torch device type (``"lazygen"`` unless ``init`` named it)."""
    return settings.device_type


def device(index: int = 0) -> torch.device:
    """The lazy device ``<device name>:<index>`` (initialising the runtime if needed)."""
    init()
    return torch.device(settings.device_type, index)


def mark_step(device: str = "", wait: bool = False) -> None:
    """Cut the trace: launch a graph materialising every live lazy tensor with pending IR.

    Then run step closures. The graph runs while the program goes on tracing (reads of its
    results wait for it); ``wait=True`` returns only once it ran, raising any failure.
    """
    executor.mark_step(device_from(device) if device else None, wait=wait)


def reset(sync: bool = True) -> None:
    """Put the runtime back as ``init()`` left it, keeping the device and its backend.

    Compiled graphs, IR caches, counters, step closures and settings changed through
    ``config`` go back to their start: the runtime's state is one object, which
    ``state.reset()`` replaces (``tests/architecture/test_state_ownership.py`` keeps other
    module state to the documented few).
    Lazy tensors that exist keep their values: with ``sync=True`` (the default) the
    pending IR of every device is run first and waited for, so no tensor is left
    pointing at a graph the reset forgot. ``sync=False`` skips that, for a process that
    holds no lazy tensor it still needs (the tests' isolation).

    Args:
        sync: Run and wait for pending IR before resetting.
    """
    if sync:
        for lazy_device in all_devices():
            executor.mark_step(lazy_device, wait=True)
    state.reset()


def wait_device_ops(devices=None) -> None:
    """Wait for every graph in flight (raising the first failure) and for CUDA work if any."""
    for name in devices or [None]:
        executor.wait_device_ops(device_from(name) if name else None)
    if torch.cuda.is_available() and any(d.backing.type == "cuda" for d in all_devices()):
        torch.cuda.synchronize()


def _inner_tensors(tensors) -> list:
    return [inner(t) for t in _lazy(tensors)]


def sync(tensors) -> None:
    """Materialise these lazy tensors (only what they need)."""
    executor.sync(_inner_tensors(tensors))


def to_cpu(tensors, devices=None) -> list[torch.Tensor]:
    """CPU copies of lazy tensors; other objects pass through.

    ``devices`` (as in ``torch._lazy``): the lazy devices (names, ``torch.device`` objects or
    indices) whose tensors are synced together first, one graph per device, and whose
    graphs in flight are waited for; by default every device of the given tensors. A
    tensor on another lazy device is synced on its own when it is copied.
    """
    tensors = list(tensors)
    if devices is None:
        sync(tensors)
    else:
        indices = {device_from(_device_spec(d)).index for d in devices}
        sync([t for t in _lazy(tensors) if t.device.index in indices])
        wait_device_ops([_device_spec(d) for d in devices])
    return [t.to("cpu") if isinstance(t, torch.Tensor) else t for t in tensors]


def _device_spec(device) -> str | torch.device:
    """A ``devices`` entry as ``device_from`` takes it (an int is an index)."""
    return f"{settings.device_type}:{device}" if isinstance(device, int) else device


def _lazy(tensors) -> list[torch.Tensor]:
    return [
        t for t in tensors if isinstance(t, torch.Tensor) and t.device.type == settings.device_type
    ]


def mark_dynamic(tensor: torch.Tensor, dim: int) -> None:
    """Compile every graph reading ``tensor`` (as it is now) for all sizes at once.

    Use it when ``dim`` changes from step to step (Dynamo's ``torch._dynamo.mark_dynamic``),
    rather than compiling for its sizes first. Turns dynamic shapes on
    (``config.set_dynamic_shapes``). A graph is compiled for all sizes as a whole, so
    marking one dimension makes all of its sizes inputs; int attributes that are not sizes
    (a ``dim``) stay compiled in.
    """
    if not (isinstance(tensor, torch.Tensor) and tensor.device.type == settings.device_type):
        where = tensor.device if isinstance(tensor, torch.Tensor) else type(tensor).__name__
        raise TypeError(
            f"lazygen.mark_dynamic: expected a tensor on the {settings.device_type} device, "
            f"got {where}; move it there first (tensor.to('{settings.device_type}'))"
        )
    _dynamic.mark(inner(tensor)._value.node, _dynamic.check_dim(tensor, dim))
    settings.dynamic_shapes = True


def add_step_closure(closure, args=(), run_async: bool = False) -> None:
    """Run ``closure(*args)`` once the next ``mark_step``'s tensors are materialised.

    It runs in ``mark_step`` itself, or with ``run_async`` on lazygen's closure thread once
    the step's graphs ran, while the program goes on (an exception it raises comes out of
    the next ``mark_step`` or ``wait_device_ops``). See ``step_closures``.
    """
    step_closures.add(closure, args, run_async)
