"""torch's DTensor vocabulary on a single controller: placements and parallel styles as
shardings.

torch's DTensor is written for one process per device: a ``DeviceMesh`` needs a process
group of ``mesh.size()`` ranks (``init_device_mesh("lazygen", (4, 2))`` in one process
fails: its world has one rank), each DTensor holds *its rank's* local shard, and every
redistribution is a collective between those processes. A single controller holds the
*global* value of every tensor, which XLA splits, so torch's own ``distribute_tensor``
and ``parallelize_module`` cannot run here (not without patching torch). What carries
over is the description: which dimension each mesh dimension splits. This module reads
it:

* ``spec_from_placements(mesh, placements, ndim)``: ``[Shard(0), Replicate()]`` on a mesh
  ``("data", "model")`` is the partition spec ``("data", None)``;
* ``distribute_tensor(tensor, mesh, placements)``: the global lazy tensor annotated so
  (returned as it is, not as a ``DTensor``);
* ``parallelize_module(module, mesh, plan, axis)``: torch's ``ColwiseParallel`` /
  ``RowwiseParallel`` (on ``nn.Linear`` and ``nn.Embedding``) by module name pattern,
  splitting their parameters as torch would over mesh axis ``axis``. The styles' input
  and output layouts, and the activation-only styles (``SequenceParallel``,
  ``PrepareModuleInput``/``Output``), are left to XLA's partitioner, which lays out the
  activations from the parameters' layouts and inserts the collectives DTensor's hooks
  would run (a warning names the styles whose layouts it skipped).

``Partial`` (each rank holding an addend of the value) has no global value to hold: it is
refused. JAX expresses it only as ``unreduced`` axes of an ``Explicit`` mesh, which the
jax backend does not use.
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Mapping, Sequence

import torch
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, ParallelStyle, RowwiseParallel

from lazygen.runtime.errors import LazygenRuntimeError

from .api import mark_sharding
from .mesh import Mesh


def as_mesh(mesh) -> Mesh:
    """A ``Mesh`` from a ``Mesh`` or a torch ``DeviceMesh`` (its ranks are device ids)."""
    if isinstance(mesh, Mesh):
        return mesh
    ranks = getattr(mesh, "mesh", None)
    if isinstance(ranks, torch.Tensor):
        return Mesh(ranks.flatten().tolist(), tuple(ranks.shape), mesh.mesh_dim_names)
    raise LazygenRuntimeError(
        f"lazygen.spmd: expected a lazygen.spmd.Mesh or a torch DeviceMesh, got {type(mesh).__name__}"
    )


def spec_from_placements(mesh, placements: Sequence, ndim: int) -> tuple:
    """The partition spec of DTensor ``placements`` (one per mesh dimension) for a tensor
    of ``ndim`` dimensions; mesh dimensions splitting one tensor dimension split it in
    mesh order (major first), as DTensor does."""
    mesh = as_mesh(mesh)
    names = mesh.layout.axis_names
    if len(placements) != len(names):
        raise LazygenRuntimeError(
            f"lazygen.spmd: {len(placements)} placements for a mesh of {len(names)} "
            f"dimensions {names}: give one per mesh dimension"
        )
    axes: list[list] = [[] for _ in range(ndim)]
    for axis, placement in enumerate(placements):
        if isinstance(placement, Shard):
            dim = placement.dim + ndim if placement.dim < 0 else placement.dim
            if not 0 <= dim < ndim:
                raise LazygenRuntimeError(
                    f"lazygen.spmd: {placement} of a {ndim}-dimensional tensor"
                )
            axes[dim].append(axis if mesh.axis_names is None else names[axis])
        elif isinstance(placement, Partial):
            raise LazygenRuntimeError(
                f"lazygen.spmd: {placement} has no single-controller meaning: each device "
                "would hold an addend of a value no one holds (a reduction XLA's "
                "partitioner inserts itself); annotate the reduced value instead"
            )
        elif not isinstance(placement, Replicate):
            raise LazygenRuntimeError(f"lazygen.spmd: unknown placement {placement!r}")
    return tuple(None if not a else a[0] if len(a) == 1 else tuple(a) for a in axes)


def distribute_tensor(tensor: torch.Tensor, mesh, placements: Sequence) -> torch.Tensor:
    """Annotate the global lazy ``tensor`` as DTensor ``placements`` over ``mesh`` say;
    returns it (a single controller holds the whole value: no ``DTensor`` is made)."""
    mesh = as_mesh(mesh)
    return mark_sharding(tensor, mesh, spec_from_placements(mesh, placements, tensor.dim()))


def _parameter_placements(style: ParallelStyle, module: torch.nn.Module, name: str) -> dict:
    """Per parameter name of ``module``, the one-axis placement torch's ``style`` gives."""
    linear, embedding = isinstance(module, torch.nn.Linear), isinstance(module, torch.nn.Embedding)
    if not (linear or embedding):
        raise LazygenRuntimeError(
            f"lazygen.spmd.parallelize_module: {type(style).__name__} on {name!r}, a "
            f"{type(module).__name__}: torch's style supports nn.Linear and nn.Embedding only"
        )
    if isinstance(style, ColwiseParallel):
        return {"weight": Shard(1 if embedding else 0), "bias": Shard(0)}
    return {"weight": Shard(0 if embedding else 1), "bias": Replicate()}


def parallelize_module(
    module: torch.nn.Module, mesh, plan: Mapping[str, ParallelStyle], axis: str | None = None
) -> torch.nn.Module:
    """Split the parameters of ``module``'s submodules named by ``plan``'s patterns
    (``fnmatch`` on module names: ``"layers.*.attention.wq"``) as torch's
    ``ColwiseParallel`` / ``RowwiseParallel`` would over mesh axis ``axis`` (the mesh's
    only axis by default); returns ``module``. See the module docstring for what is
    left to the partitioner."""
    mesh = as_mesh(mesh)
    names = mesh.layout.axis_names
    if axis is None and len(names) != 1:
        raise LazygenRuntimeError(
            f"lazygen.spmd.parallelize_module: {mesh!r} has several axes {names}; name the "
            "tensor-parallel one (axis='model'), as torch slices device_mesh['tp']"
        )
    axis = axis or names[0]
    position = mesh.get_axis_name_idx(axis)
    if position is None:
        raise LazygenRuntimeError(f"lazygen.spmd.parallelize_module: no mesh axis {axis!r}")
    skipped, used = set(), set()
    for name, submodule in module.named_modules():
        for pattern, style in plan.items():
            if not fnmatch.fnmatchcase(name, pattern):
                continue
            used.add(pattern)
            if not isinstance(style, (ColwiseParallel, RowwiseParallel)):
                skipped.add(type(style).__name__)
                break
            for param, placement in _parameter_placements(style, submodule, name).items():
                tensor = getattr(submodule, param, None)
                if tensor is None:
                    continue
                on_mesh = [Replicate()] * len(names)
                on_mesh[position] = placement
                distribute_tensor(tensor, mesh, on_mesh)
            break
    unused = [p for p in plan if p not in used]
    if unused:
        raise LazygenRuntimeError(
            f"lazygen.spmd.parallelize_module: pattern(s) {unused} match no submodule of "
            f"{type(module).__name__}"
        )
    if skipped:
        warnings.warn(
            f"lazygen.spmd.parallelize_module: {sorted(skipped)} lay out activations only; "
            "on a single controller XLA's partitioner lays them out (not applied)",
            stacklevel=2,
        )
    return module
