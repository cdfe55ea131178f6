"""``Mesh``: torch_xla's logical mesh of devices, and partition specs read against it.

A mesh arranges the global device ids (``0 .. global_device_count()-1``, every process's
devices under ``jax.distributed``) in a shape whose dimensions are named axes. A partition
spec gives, per tensor dimension, what splits it: an axis name, an axis index, ``None``
(not split), or a tuple of those (split over several axes, major first), as torch_xla's
``xs.mark_sharding`` takes it. ``Mesh.dims`` reads one into the axis names the runtime's
``Placement`` holds, with an error naming the entry that is wrong.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from lazygen.runtime.errors import LazygenRuntimeError
from lazygen.runtime.sharding import MeshLayout

#: Axis names given to a mesh made without names (torch_xla allows it; axes are then
#: referred to by index). ``sharding_of`` gives indexes back for them.
UNNAMED = "#"


class Mesh:
    """``device_ids`` (a sequence or array of global device ids, each once) arranged as
    ``mesh_shape``, with ``axis_names`` (one per mesh dimension; optional).

    Every device of the program must be in the mesh: one SPMD program spans them all."""

    def __init__(
        self,
        device_ids: Sequence[int] | np.ndarray,
        mesh_shape: Sequence[int],
        axis_names: Sequence[str] | None = None,
    ) -> None:
        ids = tuple(int(i) for i in np.asarray(device_ids).ravel())
        shape = tuple(int(s) for s in mesh_shape)
        if len(set(ids)) != len(ids):
            raise LazygenRuntimeError(f"lazygen.spmd.Mesh: device ids repeat: {ids}")
        if math.prod(shape) != len(ids):
            raise LazygenRuntimeError(
                f"lazygen.spmd.Mesh: mesh shape {shape} holds {math.prod(shape)} devices, "
                f"but {len(ids)} device ids were given"
            )
        if axis_names is None:
            names = tuple(f"{UNNAMED}{i}" for i in range(len(shape)))
        else:
            names = tuple(axis_names)
            if len(names) != len(shape) or len(set(names)) != len(names):
                raise LazygenRuntimeError(
                    f"lazygen.spmd.Mesh: axis names {names} must name each of the "
                    f"{len(shape)} mesh dimensions once"
                )
            wrong = [n for n in names if not isinstance(n, str) or n.startswith(UNNAMED)]
            if wrong:
                raise LazygenRuntimeError(
                    f"lazygen.spmd.Mesh: axis names must be strings not starting with "
                    f"{UNNAMED!r}: {wrong}"
                )
        self.device_ids = np.asarray(ids)
        self.mesh_shape = shape
        self.axis_names = None if axis_names is None else names
        self.layout = MeshLayout(ids, shape, names)

    def size(self) -> int:
        return len(self.layout.device_ids)

    def shape(self) -> OrderedDict:
        """Axis name (or index, for an unnamed mesh) -> size, as torch_xla's."""
        keys = self.axis_names or range(len(self.mesh_shape))
        return OrderedDict(zip(keys, self.mesh_shape, strict=True))

    def get_logical_mesh(self) -> np.ndarray:
        return self.device_ids.reshape(self.mesh_shape)

    def get_axis_name_idx(self, name: str) -> int | None:
        names = self.layout.axis_names
        return names.index(name) if name in names else None

    def dims(self, partition_spec: Sequence, what: str = "tensor") -> tuple[tuple[str, ...], ...]:
        """Per dimension, the axis names a partition spec splits it over (see the module
        docstring for the entries)."""
        if isinstance(partition_spec, (str, int)) or partition_spec is None:
            raise LazygenRuntimeError(
                f"lazygen.spmd: the partition spec of {what} must be a tuple with one entry "
                f"per dimension, got {partition_spec!r}"
            )
        return tuple(self._axes(entry, d, what) for d, entry in enumerate(partition_spec))

    def _axes(self, entry, dim: int, what: str) -> tuple[str, ...]:
        if entry is None:
            return ()
        if isinstance(entry, (tuple, list)):
            if any(isinstance(e, (tuple, list)) or e is None for e in entry):
                raise LazygenRuntimeError(
                    f"lazygen.spmd: entry {dim} of {what}'s partition spec, {entry!r}: a "
                    "tuple holds axis names or indexes only"
                )
            return tuple(a for e in entry for a in self._axes(e, dim, what))
        names = self.layout.axis_names
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            if not 0 <= entry < len(names):
                raise LazygenRuntimeError(
                    f"lazygen.spmd: entry {dim} of {what}'s partition spec is axis index "
                    f"{entry}, but the mesh has {len(names)} axes"
                )
            return (names[int(entry)],)
        if isinstance(entry, str) and entry in names:
            return (entry,)
        raise LazygenRuntimeError(
            f"lazygen.spmd: entry {dim} of {what}'s partition spec, {entry!r}, is not an "
            f"axis of the mesh (names {self.axis_names}, indexes 0..{len(names) - 1}) nor None"
        )

    def __repr__(self) -> str:
        return f"Mesh(shape={dict(self.shape())}, device_ids={list(self.layout.device_ids)})"


class HybridMesh(Mesh):
    """torch_xla's ``HybridMesh``: a mesh whose axis ``k`` has ``dcn_mesh_shape[k]``
    groups of ``ici_mesh_shape[k]`` devices, the groups being processes (the slow links
    between hosts, DCN) and the devices of a group one process's (the fast links, ICI).
    Global device ids are process-major (each process's devices contiguous), as
    ``jax.devices()`` orders them; without ``dcn_mesh_shape`` it is a plain ``Mesh``."""

    def __init__(
        self,
        *,
        ici_mesh_shape: Sequence[int],
        dcn_mesh_shape: Sequence[int] | None = None,
        axis_names: Sequence[str] | None = None,
    ) -> None:
        ici = tuple(int(s) for s in ici_mesh_shape)
        dcn = tuple(int(s) for s in dcn_mesh_shape) if dcn_mesh_shape else (1,) * len(ici)
        if len(dcn) != len(ici):
            raise LazygenRuntimeError(
                f"lazygen.spmd.HybridMesh: ici_mesh_shape {ici} and dcn_mesh_shape {dcn} "
                "must have one entry per mesh axis each"
            )
        ids = np.arange(math.prod(ici) * math.prod(dcn)).reshape(dcn + ici)
        rank = len(ici)
        interleaved = [k for d in range(rank) for k in (d, rank + d)]
        shape = tuple(d * i for d, i in zip(dcn, ici, strict=True))
        super().__init__(ids.transpose(interleaved).reshape(shape), shape, axis_names)


def spec_entry(axes: tuple[str, ...]):
    """How ``sharding_of`` writes one dimension: None, an axis name (index, for an unnamed
    mesh), or a tuple of them."""
    named = tuple(int(a[len(UNNAMED) :]) if a.startswith(UNNAMED) else a for a in axes)
    if not named:
        return None
    return named[0] if len(named) == 1 else named
