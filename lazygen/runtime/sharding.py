"""Shardings: how one value is laid out over the devices of a mesh (single-controller SPMD).

A backend that runs one program over many devices (``Backend.use_spmd``: the jax backend,
whose XLA partitioner inserts the collectives) needs to know, for each graph input and for
some values inside a graph, which dimension is split over which mesh axes. The core carries
that as a ``Placement``: a hashable description (mesh layout + the axes of each dimension)
that it never interprets. It is

* a property of device data: ``DeviceData.placement``, held in the node's ``attrs``, so the
  graph key, the template replay and the recompile explanation see it without knowing what
  it means (an input laid out otherwise is another graph, explained as a sharding change);
* a node inside a graph: ``ShardingConstraint``, an identity whose lowering asks the
  context to lay its value out so (``LoweringContext.constrain``; backends without devices
  to spread over keep the value as it is).

One normal form: a value laid out the same on every device is *replicated*, written
``None`` (never a ``Placement`` with no split dimension, nor one naming only axes of size
1), so the ways of spelling "replicated" (no annotation, ``(None, None)``, an axis of size
1) make one graph key, not a retrace each (what torch_xla's "" vs ``{replicated}`` did,
pytorch/xla#9755). ``normal_form`` is the one place that decides it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .devices import LazyDevice
from .errors import LazygenRuntimeError
from .execution import executor
from .ir import DeviceData, Node, Shape, Value
from .tracing.tensor import inner, new_lazy, to_functional


@dataclass(frozen=True, slots=True)
class MeshLayout:
    """A logical mesh: ``device_ids`` (global device numbers, in mesh order) arranged as
    ``shape`` (row-major), each dimension named by ``axis_names``."""

    device_ids: tuple[int, ...]
    shape: tuple[int, ...]
    axis_names: tuple[str, ...]

    def axis_size(self, name: str) -> int:
        return self.shape[self.axis_names.index(name)]

    def __repr__(self) -> str:
        axes = " x ".join(f"{n}={s}" for n, s in zip(self.axis_names, self.shape, strict=True))
        return f"mesh({axes})"


@dataclass(frozen=True, slots=True)
class Placement:
    """A value split over ``mesh``: ``dims[d]`` names the mesh axes dimension ``d`` is split
    over, major first (``()``: not split). Built through ``normal_form``; a constraint may
    hold a replicated one (every ``dims`` entry empty), which asks for replication."""

    mesh: MeshLayout
    dims: tuple[tuple[str, ...], ...]

    @property
    def is_replicated(self) -> bool:
        return not any(self.dims)

    def spec(self) -> tuple:
        """Per dimension: None, one axis name, or a tuple of them (torch_xla's spelling)."""
        return tuple(
            None if not axes else axes[0] if len(axes) == 1 else axes for axes in self.dims
        )

    def shards(self, dim: int) -> int:
        """Into how many pieces dimension ``dim`` is split."""
        return math.prod(self.mesh.axis_size(a) for a in self.dims[dim])

    def __repr__(self) -> str:
        return f"{self.spec()!r} over {self.mesh!r}"


def normal_form(mesh: MeshLayout, dims, sizes) -> Placement | None:
    """The placement splitting each dimension of a value of ``sizes`` over the axes
    ``dims[d]`` (tuples of axis names), or None when that is replication: axes of size 1
    split nothing and are dropped. Each axis may split one dimension at most, and a
    dimension must be a multiple of its number of pieces (``LazygenRuntimeError``)."""
    if len(dims) != len(sizes):
        raise LazygenRuntimeError(
            f"lazygen: a sharding of a {len(sizes)}-dimensional tensor needs one entry per "
            f"dimension, got {len(dims)}"
        )
    used: set[str] = set()
    kept = []
    for d, (axes, size) in enumerate(zip(dims, sizes, strict=True)):
        for axis in axes:
            if axis not in mesh.axis_names:
                raise LazygenRuntimeError(
                    f"lazygen: mesh axis {axis!r} (dimension {d}) is not one of "
                    f"{mesh.axis_names} of {mesh!r}"
                )
            if axis in used:
                raise LazygenRuntimeError(
                    f"lazygen: mesh axis {axis!r} splits two dimensions; each axis may "
                    "split one dimension of a tensor"
                )
            used.add(axis)
        axes = tuple(a for a in axes if mesh.axis_size(a) > 1)
        pieces = math.prod(mesh.axis_size(a) for a in axes)
        if size % pieces:
            raise LazygenRuntimeError(
                f"lazygen: dimension {d} of size {size} cannot be split into {pieces} equal "
                f"pieces (axes {axes} of {mesh!r}); shard a dimension whose size is a "
                "multiple of the pieces, or pad it"
            )
        kept.append(axes)
    if not any(kept):
        return None
    return Placement(mesh, tuple(kept))


@dataclass(frozen=True, slots=True)
class ProgramLayout:
    """What one compiled SPMD program does with its devices (``Backend.program_layout``):
    each input's and each result's placement (None: replicated; inputs in the backend's
    parameter order, results in the graph's), the collectives the partitioner inserted, by
    kind, as the compiled program holds them, and the bytes one device holds for it
    (``arguments``, ``outputs``, ``temporaries``, as the compiler reports them; empty when
    it does not)."""

    inputs: tuple
    outputs: tuple
    collectives: dict
    device_bytes: dict


class ShardingConstraint(Node):
    """Its operand, laid out as ``attrs[0]`` (a ``Placement``; a replicated one asks for
    replication): what annotating a value computed inside the graph records. The graph key
    holds the placement, so another layout is another graph."""

    __slots__ = ()
    op_kind = "lazygen::sharding_constraint"
    op_name = "sharding_constraint"

    def __init__(self, value: Value, placement: Placement) -> None:
        super().__init__((value,), (placement,), (value.node.shapes[value.index],))

    @property
    def placement(self) -> Placement:
        return self.attrs[0]

    def lower(self, ctx) -> list:
        return [ctx.constrain(ctx.tensor(self.operands[0]), self.attrs[0])]


def annotate(tensor: torch.Tensor, placement: Placement | None, mesh: MeshLayout) -> None:
    """Lay ``tensor`` out as ``placement`` (None: replicated over ``mesh``) from now on.

    Device data (a leaf: parameters, uploaded batches, results of an earlier step) is
    placed by the backend now (``Backend.place``); a value computed inside the pending
    graph gets a ``ShardingConstraint`` (a second annotation replaces the first)."""
    if tensor._base is not None:
        raise LazygenRuntimeError(
            "lazygen: cannot annotate the sharding of a view (it shares its base's data); "
            "annotate the base tensor, or a .clone() of the view"
        )
    lazy = inner(tensor)
    node = lazy._value.node
    if type(node) is DeviceData:
        _place(lazy, placement)
        return
    value = lazy._value
    if type(node) is ShardingConstraint:
        value = node.operands[0]
    if placement is None:
        placement = Placement(mesh, ((),) * len(node.shapes[value.index].sizes))
    lazy._value = Value(ShardingConstraint(value, placement), 0)


def _place(lazy, placement: Placement | None, again: bool = False) -> None:
    """Point inner tensor ``lazy`` (holding device data) at its data laid out so (``again``:
    even when its placement says it is)."""
    node = lazy._value.node
    if again or node.placement != placement:
        backend = lazy._device.backend
        data = backend.place(node.native, placement)
        lazy._value = Value(DeviceData(data, None, node.shapes[0], backend, placement), 0)


def start_spmd(device: LazyDevice) -> None:
    """Make ``device``'s backend run one program over all its devices (``use_spmd``):
    graphs compiled before for one device are dropped (their keys would match the same
    graphs with replicated inputs), and the device data its tensors hold now is replicated
    over every device (pending values are computed first)."""
    backend = device.backend
    backend.use_spmd()
    executor.mark_step(device, wait=True)
    device.cache.clear()
    for lazy in device.live_tensors():
        if type(lazy._value.node) is DeviceData:
            _place(lazy, lazy._value.node.placement, again=True)


def upload(tensor: torch.Tensor, placement: Placement | None, device: LazyDevice) -> torch.Tensor:
    """Host ``tensor`` as a new lazy tensor of ``device`` laid out as ``placement``: the
    backend sends each device its piece (``Backend.upload``), never a whole copy first."""
    host = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous()
    backend = device.backend
    data = backend.upload(host, placement)
    shape = Shape(host.dtype, tuple(host.shape))
    node = DeviceData(data, None, shape, None if backend.torch_data else backend, placement)
    return to_functional(new_lazy(Value(node, 0), device))


def unannotate(tensor: torch.Tensor) -> None:
    """Drop ``tensor``'s annotation: device data becomes replicated, a constrained value
    is left to the partitioner."""
    lazy = inner(tensor)
    node = lazy._value.node
    if type(node) is ShardingConstraint:
        lazy._value = node.operands[0]
    elif type(node) is DeviceData and node.placement is not None:
        mesh = node.placement.mesh
        annotate(tensor, None, mesh)


def placement_of(tensor: torch.Tensor) -> tuple[bool, Placement | None]:
    """``(known, placement)`` of ``tensor``'s value: known for device data (a pending
    result's layout is known once its graph compiled) and constrained values; a value
    computed without a constraint is laid out by the partitioner when its graph runs."""
    node = inner(tensor)._value.node
    if type(node) is DeviceData:
        return True, node.placement
    if type(node) is ShardingConstraint:
        placement = node.placement
        return True, None if placement.is_replicated else placement
    return False, None
