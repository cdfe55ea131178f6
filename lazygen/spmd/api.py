"""torch_xla's SPMD calls: ``use_spmd``, ``mark_sharding``, ``clear_sharding``, and
``sharding_of`` (what torch_xla spells ``torch_xla._XLAC._get_xla_sharding_spec``).

They run on the lazy device ``lazygen:0`` (the one ``backward()`` runs on) of a backend that
spreads one program over several devices: the jax backend. The runtime carries each
annotation (``lazygen.runtime.sharding``): a tensor holding device data is laid out at once,
a value computed in the pending graph gets a sharding constraint there.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

import lazygen.runtime as lr
from lazygen.runtime import devices, sharding
from lazygen.runtime.errors import LazygenRuntimeError

from .mesh import Mesh, spec_entry

_global_mesh: list[Mesh] = []


def use_spmd() -> None:
    """Run the lazy device as one program over every device of the jax backend.

    Initialises the lazy device on the jax backend if nothing did (``lr.init(backend=
    "jax")``); tensors already on it are replicated over every device. Call
    ``lazygen.spmd.initialize(...)`` first for several processes, and set the number of
    CPU devices (``jax.config.update("jax_num_cpu_devices", n)``) before it to emulate them.
    """
    try:
        lr.init(backend="jax")
    except LazygenRuntimeError as error:
        raise LazygenRuntimeError(
            f"lazygen.spmd.use_spmd(): the lazy device already runs another backend "
            f"({lr.backend(0).name!r}); SPMD runs on the jax backend: call use_spmd() (or "
            "lazygen.runtime.init(backend='jax')) before anything else initialises lazygen"
        ) from error
    sharding.start_spmd(devices.get_device(0))


def is_spmd() -> bool:
    """Whether ``use_spmd()`` ran (the lazy device's backend spans several devices)."""
    backend = devices.backend_of(0)
    return getattr(backend, "spmd", None) is not None


def global_device_count() -> int:
    """How many devices one program spans (every process's): the ids a ``Mesh`` holds."""
    _backend()
    return len(devices.backend_of(0).spmd_devices())


def _backend():
    if not is_spmd():
        raise LazygenRuntimeError(
            "lazygen.spmd: call lazygen.spmd.use_spmd() first (it runs the lazy device as "
            "one program over all devices)"
        )
    return devices.backend_of(0)


def _check_mesh(mesh: Mesh) -> None:
    count = len(_backend().spmd_devices())
    if sorted(mesh.layout.device_ids) != list(range(count)):
        raise LazygenRuntimeError(
            f"lazygen.spmd: {mesh!r} must hold each of the {count} devices of the program "
            f"once (ids 0..{count - 1}); lazygen.spmd.global_device_count() says how many"
        )


def _check_tensor(tensor: torch.Tensor, what: str) -> None:
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != lr.device_name():
        where = tensor.device if isinstance(tensor, torch.Tensor) else type(tensor).__name__
        raise LazygenRuntimeError(
            f"lazygen.spmd.{what}: the tensor is on {where}; move it to the lazy device first "
            f"(.to('{lr.device_name()}'))"
        )
    if tensor.device.index not in (None, 0):
        raise LazygenRuntimeError(
            f"lazygen.spmd.{what}: SPMD runs on {lr.device_name()}:0, the tensor is on "
            f"{tensor.device}"
        )


def mark_sharding(tensor: torch.Tensor, mesh: Mesh, partition_spec: Sequence) -> torch.Tensor:
    """Lay ``tensor`` out over ``mesh`` as ``partition_spec`` says (one entry per
    dimension: an axis name, an axis index, None, or a tuple of them) and return it.

    Device data (parameters, uploaded inputs) is split now; a value computed in the pending
    graph is constrained there (XLA's partitioner moves it). An all-``None`` spec asks for
    replication. A dimension must be a multiple of the pieces it is split into."""
    _check_tensor(tensor, "mark_sharding")
    _check_mesh(mesh)
    spec = tuple(partition_spec) if isinstance(partition_spec, (list, tuple)) else partition_spec
    dims = mesh.dims(spec, f"a tensor of shape {tuple(tensor.shape)}")
    if len(dims) != tensor.dim():
        raise LazygenRuntimeError(
            f"lazygen.spmd.mark_sharding: the partition spec {spec!r} has {len(dims)} "
            f"entries for a tensor of {tensor.dim()} dimensions {tuple(tensor.shape)}"
        )
    placement = sharding.normal_form(mesh.layout, dims, tuple(tensor.shape))
    with torch.no_grad():
        sharding.annotate(tensor, placement, mesh.layout)
    return tensor


class _WithGradients(torch.autograd.Function):
    """The identity, laid out as a partition spec both ways: its result in the forward,
    the gradient flowing back through it in the backward."""

    @staticmethod
    def forward(ctx, tensor, mesh, spec):
        ctx.mesh, ctx.spec = mesh, spec
        return mark_sharding(tensor.clone(), mesh, spec)

    @staticmethod
    def backward(ctx, grad):
        return mark_sharding(grad.clone(), ctx.mesh, ctx.spec), None, None


def mark_sharding_with_gradients(
    tensor: torch.Tensor, mesh: Mesh, partition_spec: Sequence
) -> torch.Tensor:
    """``tensor`` laid out as ``partition_spec``, and so is its gradient in the backward
    (torch_xla's ``xs.mark_sharding_with_gradients``). Returns a new tensor (a copy XLA
    removes): use it in place of ``tensor``."""
    _check_tensor(tensor, "mark_sharding_with_gradients")
    spec = tuple(partition_spec)
    return _WithGradients.apply(tensor, mesh, spec)


def to_device(tensor: torch.Tensor, mesh: Mesh, partition_spec: Sequence) -> torch.Tensor:
    """Host ``tensor`` on the lazy device, laid out as ``partition_spec``: each device is
    sent its piece only (``mark_sharding(tensor.to("lazygen"), ...)`` first copies the
    whole tensor to every device). For input batches, as torch_xla's loader with an
    ``input_sharding``; returns the new lazy tensor."""
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu":
        where = tensor.device if isinstance(tensor, torch.Tensor) else type(tensor).__name__
        raise LazygenRuntimeError(f"lazygen.spmd.to_device: takes a CPU tensor, got {where}")
    _check_mesh(mesh)
    spec = tuple(partition_spec)
    dims = mesh.dims(spec, f"a tensor of shape {tuple(tensor.shape)}")
    if len(dims) != tensor.dim():
        raise LazygenRuntimeError(
            f"lazygen.spmd.to_device: the partition spec {spec!r} has {len(dims)} entries "
            f"for a tensor of {tensor.dim()} dimensions {tuple(tensor.shape)}"
        )
    placement = sharding.normal_form(mesh.layout, dims, tuple(tensor.shape))
    return sharding.upload(tensor, placement, devices.get_device(0))


def clear_sharding(tensor: torch.Tensor) -> torch.Tensor:
    """Forget ``tensor``'s annotation: its data becomes replicated, a constrained value is
    left to the partitioner. Returns it."""
    _check_tensor(tensor, "clear_sharding")
    _backend()
    sharding.unannotate(tensor)
    return tensor


def sharding_of(tensor: torch.Tensor) -> tuple | None:
    """``tensor``'s layout: per dimension None, an axis name (an index on a mesh without
    names) or a tuple of them; all None when replicated (or unannotated). None when it is
    a value the pending graph computes without an annotation (its layout is the
    partitioner's choice, known once the graph compiled: after ``lr.mark_step()``)."""
    _check_tensor(tensor, "sharding_of")
    known, placement = sharding.placement_of(tensor)
    if not known:
        return None
    if placement is None:
        return (None,) * tensor.dim()
    return tuple(spec_entry(axes) for axes in placement.dims)


def set_global_mesh(mesh: Mesh) -> None:
    """The mesh the plans use when given none (torch_xla's ``xs.set_global_mesh``)."""
    _global_mesh[:] = [mesh]


def get_global_mesh() -> Mesh | None:
    return _global_mesh[0] if _global_mesh else None


def get_1d_mesh(axis_name: str | None = None) -> Mesh:
    """Every device on one axis (torch_xla's ``xs.get_1d_mesh``)."""
    count = global_device_count()
    return Mesh(range(count), (count,), None if axis_name is None else (axis_name,))
