"""The jax backend's single-controller SPMD: lazygen's placements as JAX shardings.

After ``JaxBackend.use_spmd()`` every graph is one XLA program over all of JAX's devices
(every process's, under ``jax.distributed``): device data is a global ``jax.Array``, an
unannotated one replicated on every device (``Spmd.replicated``), an annotated one split as
its ``Placement`` says (``Spmd.sharding``: a ``NamedSharding`` on the ``jax.sharding.Mesh``
of its ``MeshLayout``). The program's inputs are lowered with their shardings
(``ShapeDtypeStruct(sharding=...)``), ``ShardingConstraint`` nodes with
``jax.lax.with_sharding_constraint``, and the results get ``out_shardings``: a result that
replaces an input (a parameter's or an optimizer state's new value: ``replaced_inputs``)
keeps that input's layout, a constrained one its constraint's; the others are laid out by
the partitioner (Shardy), and lazygen reads their layout from the compiled program
(``Spmd.layouts``), so the next step's graph key holds it. One program's shardings share
one mesh (``Spmd.program_mesh``).

Host reads of split data gather the shards (``host_values``) and are never kept
(``DeviceData``): nothing of a sharded tensor stays on the host.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter, deque
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ... import op_registry
from ...ir import DeviceData, Node, Value
from ...sharding import MeshLayout, Placement, ShardingConstraint

#: The mesh axis of ``Spmd.replicated`` (a 1-D mesh of every device, in JAX's order).
EVERY_DEVICE = "lazygen_devices"

#: Collective instructions of a compiled (partitioned) XLA program, as its text names them.
COLLECTIVES = re.compile(
    r"\b(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
    r"collective-broadcast)(?:-start)?\("
)


@dataclass(frozen=True, slots=True)
class Layouts:
    """One SPMD executable's layouts: its inputs' and results' placements (results in the
    graph's order), the results (in its own order) and inputs it re-places so that every
    replicated value is laid out in JAX's device order outside and in its mesh's inside
    (``replicated``), and the ``Spmd`` that does it."""

    inputs: tuple
    outputs: tuple
    moved: tuple[int, ...]
    reordered: tuple[int, ...]
    replicated: NamedSharding
    spmd: Spmd


class Spmd:
    """The devices one program spans and the JAX shardings of lazygen's placements, made
    once each (a graph key compares placements; JAX compares the shardings it is fed)."""

    def __init__(self) -> None:
        self.devices = tuple(jax.devices())
        self.multi_process = jax.process_count() > 1
        #: XLA:CPU starts a program as soon as its inputs are ready, several at once, and
        #: between processes its collectives go through gloo: re-placements of independent
        #: arrays dispatched back to back deadlocked two processes in our runs (jax 0.10;
        #: blocking after each one did not). So there, each program finishes before the
        #: next starts (``in_order``); GPUs and TPUs run a device's programs in stream
        #: order. (The abort of mixed groups is another matter: ``mixed_axes``.)
        self.one_at_a_time = self.multi_process and self.devices[0].platform == "cpu"
        every = Mesh(np.array(self.devices, dtype=object), (EVERY_DEVICE,))
        #: Replicated on every device: what unannotated data is.
        self.replicated = NamedSharding(every, PartitionSpec())
        self._meshes: dict[MeshLayout, Mesh] = {}
        self._shardings: dict[Placement, NamedSharding] = {}
        self._layouts: dict[Mesh, MeshLayout] = {}
        self._placements: dict[tuple, Placement | None] = {}
        self._replicated_on: dict[Mesh, NamedSharding] = {}

    # Placements -> shardings ---------------------------------------------------------------

    def mesh(self, layout: MeshLayout) -> Mesh:
        mesh = self._meshes.get(layout)
        if mesh is None:
            devices = np.array([self.devices[i] for i in layout.device_ids], dtype=object)
            mesh = Mesh(devices.reshape(layout.shape), layout.axis_names)
            self._meshes[layout] = mesh
            self._layouts[mesh] = layout
            if self.one_at_a_time:
                _warn_mixed_groups(mesh)
        return mesh

    def sharding(self, placement: Placement | None, mesh: Mesh | None = None) -> NamedSharding:
        """The sharding of ``placement`` (None: replicated on every device, written on
        ``mesh``: one program's shardings must share one mesh)."""
        if placement is None:
            if mesh is None:
                return self.replicated
            sharding = self._replicated_on.get(mesh)
            if sharding is None:
                sharding = self._replicated_on[mesh] = NamedSharding(mesh, PartitionSpec())
            return sharding
        sharding = self._shardings.get(placement)
        if sharding is None:
            spec = PartitionSpec(
                *(None if not a else a[0] if len(a) == 1 else a for a in placement.dims)
            )
            sharding = self._shardings[placement] = NamedSharding(self.mesh(placement.mesh), spec)
        return sharding

    # Shardings -> placements ---------------------------------------------------------------

    def placement(self, sharding, ndim: int) -> Placement | None:
        """The placement of data laid out as ``sharding`` (JAX's, of a compiled result)."""
        key = (sharding, ndim)
        if key in self._placements:
            return self._placements[key]
        placement = None
        if not sharding.is_fully_replicated:
            if not isinstance(sharding, NamedSharding):
                raise TypeError(f"lazygen: a result laid out as {sharding}, not by mesh axes")
            layout = self._layout(sharding.mesh)
            spec = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
            dims = tuple(
                () if a is None else (a,) if isinstance(a, str) else tuple(a) for a in spec
            )
            dims = tuple(tuple(a for a in d if layout.axis_size(a) > 1) for d in dims)
            placement = Placement(layout, dims) if any(dims) else None
        self._placements[key] = placement
        return placement

    def _layout(self, mesh: Mesh) -> MeshLayout:
        layout = self._layouts.get(mesh)
        if layout is None:
            position = {d: i for i, d in enumerate(self.devices)}
            ids = tuple(position[d] for d in mesh.devices.flat)
            layout = MeshLayout(ids, tuple(mesh.devices.shape), tuple(mesh.axis_names))
            self._layouts[mesh] = layout
            self._meshes.setdefault(layout, mesh)
        return layout

    # Data ----------------------------------------------------------------------------------

    def upload(self, host, placement: Placement | None = None) -> jax.Array:
        """A global array of ``host`` (a numpy array or a one-device ``jax.Array``, the same
        on every process) laid out as ``placement``."""
        sharding = self.sharding(placement)
        if not self.multi_process:
            return jax.device_put(host, sharding)
        values = np.asarray(host)
        return jax.make_array_from_callback(values.shape, sharding, lambda index: values[index])

    def place(self, array: jax.Array, placement: Placement | None) -> jax.Array:
        """``array`` laid out as ``placement``, moved between devices by JAX (no host copy;
        ``jax.device_put`` reshards global arrays too, between meshes that list the
        devices in other orders, which a jitted identity refuses)."""
        sharding = self.sharding(placement)
        if array.sharding == sharding:
            return array
        return self.in_order(jax.device_put(array, sharding))

    def in_order(self, arrays):
        """``arrays`` (one or a pytree), finished first where programs with collectives
        must not overlap (``one_at_a_time``)."""
        if self.one_at_a_time:
            jax.block_until_ready(arrays)
        return arrays

    def host_values(self, array: jax.Array) -> np.ndarray:
        """The whole value of a global array on this host (a copy: gathered from the shards,
        from every process when some are elsewhere)."""
        if array.is_fully_addressable:
            return np.asarray(array)
        if array.is_fully_replicated:
            return np.asarray(array.addressable_data(0))
        return np.asarray(multihost_utils.process_allgather(array, tiled=True))

    # Programs ------------------------------------------------------------------------------

    def program_mesh(self, order: list[Node]) -> Mesh:
        """The one mesh a program's shardings are written on: the mesh of its placements
        (JAX lays out the results the partitioner chooses on its first input's mesh, and
        a replicated input on a 1-D mesh cannot express them), every device's without."""
        layouts = {
            n.attrs[0].mesh
            for n in order
            if n.attrs and (type(n) is ShardingConstraint or isinstance(n, DeviceData))
        }
        if len(layouts) > 1:
            raise ValueError(
                f"lazygen.spmd: one graph lays values out over several meshes {sorted(map(repr, layouts))}; "
                "annotate the tensors of one step over one mesh"
            )
        return self.mesh(layouts.pop()) if layouts else self.replicated.mesh

    def input_sharding(self, node: Node, mesh: Mesh) -> NamedSharding:
        return self.sharding(node.placement if isinstance(node, DeviceData) else None, mesh)

    def out_shardings(self, order: list[Node], outputs: list[Value], mesh: Mesh) -> list:
        """Per graph output, the sharding its result must have, or None (the partitioner
        chooses): an input handed back keeps its layout, a constrained value its
        constraint's, a value that replaces an input (``replaced_inputs``) that input's."""
        replaces = replaced_inputs(order, outputs)
        chosen: list = []
        for j, value in enumerate(outputs):
            node = value.node
            if isinstance(node, DeviceData):
                chosen.append(self.sharding(node.placement, mesh))
            elif type(node) is ShardingConstraint:
                chosen.append(self._constraint(node.placement))
            elif j in replaces:
                chosen.append(self.sharding(order[replaces[j]].placement, mesh))
            else:
                chosen.append(None)
        return chosen

    def _constraint(self, placement: Placement) -> NamedSharding:
        if placement.is_replicated:
            return self.sharding(None, self.mesh(placement.mesh))
        return self.sharding(placement)

    def constraint(self, placement: Placement):
        """``impl(shapes, x)``: ``x`` laid out as ``placement`` inside a program."""
        sharding = self._constraint(placement)

        def constrain(shapes, x):
            return jax.lax.with_sharding_constraint(x, sharding)

        return constrain

    def layouts(self, compiled, parameters: list[Node], shapes, placed, mesh: Mesh) -> Layouts:
        """What an executable needs to know about its layouts: ``compiled``'s inputs
        (``parameters``), its results (of ``shapes``, in the order it returns them;
        ``placed`` puts them in the graph's, see ``donation.placement``), on ``mesh``."""
        results, moved = [], []
        for k, (sharding, shape) in enumerate(zip(compiled.output_shardings, shapes, strict=True)):
            ndim = len(shape.sizes)
            results.append(self.placement(sharding, ndim))
            if results[-1] is None and not sharding.is_equivalent_to(self.replicated, ndim):
                moved.append(k)  # replicated in another device order: one layout for all
        outputs = tuple(results[k] for k in (placed or range(len(results))))
        inputs = tuple(n.placement if isinstance(n, DeviceData) else None for n in parameters)
        reordered = ()
        if tuple(mesh.devices.flat) != self.devices:  # replicated inputs: the mesh's order
            reordered = tuple(
                k for k, n in enumerate(parameters) if isinstance(n, DeviceData) and not n.attrs
            )
        replicated = self.sharding(None, mesh)
        return Layouts(inputs, outputs, tuple(moved), reordered, replicated, self)

    def replicate(self, results: list, moved: tuple[int, ...], sharding=None) -> list:
        """``results`` with those at ``moved`` laid out as ``sharding`` (None: replicated
        in JAX's device order)."""
        results = list(results)
        for k in moved:
            results[k] = self.in_order(jax.device_put(results[k], sharding or self.replicated))
        return results


def mixed_axes(mesh: Mesh) -> list[str]:
    """The axes of ``mesh`` along which a group of devices holds several devices of one
    process and devices of another (a group within one process, or one device per process,
    is not mixed)."""
    found = []
    processes = np.vectorize(lambda d: d.process_index, otypes=[int])(mesh.devices)
    for k, name in enumerate(mesh.axis_names):
        size = mesh.devices.shape[k]
        for group in np.moveaxis(processes, k, -1).reshape(-1, size):
            counts = Counter(group.tolist())
            if len(counts) > 1 and max(counts.values()) > 1:
                found.append(name)
                break
    return found


def _warn_mixed_groups(mesh: Mesh) -> None:
    """Warn of the XLA:CPU abort we observed (jax 0.10, gloo): programs whose collectives
    run over groups of two devices of each of two processes aborted both processes in
    about a third of fresh runs, in their first collective ("Received data size doesn't
    match expected size"), with and without XLA's all-reduce combiner; the same programs
    on meshes whose groups lie in one process or hold one device per process did not, in
    10 runs each (tests/spmd)."""
    mixed = mixed_axes(mesh)
    if mixed:
        warnings.warn(
            f"lazygen.spmd: on the CPU across processes, the groups of mesh axes {mixed} "
            "hold several devices of one process and devices of another; XLA:CPU's gloo "
            'collectives have aborted programs over such groups ("Received data size '
            "doesn't match expected size\"). List the mesh's devices so that each axis's "
            "groups lie in one process or hold one device per process (docs/spmd.md, "
            "Several processes); GPUs and TPUs are unaffected",
            RuntimeWarning,
            stacklevel=2,
        )


def collectives(program_text: str) -> dict[str, int]:
    """How many of each collective a compiled program's text holds (what the partitioner
    inserted: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute)."""
    return dict(Counter(m.group(1) for m in COLLECTIVES.finditer(program_text)))


def device_bytes(compiled) -> dict[str, int]:
    """What one device holds for a compiled program, as XLA reports it (its memory
    analysis of the partitioned program); empty where the platform reports nothing."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 - a platform without the analysis
        return {}
    if stats is None:
        return {}
    return {
        "arguments": int(stats.argument_size_in_bytes),
        "outputs": int(stats.output_size_in_bytes),
        "temporaries": int(stats.temp_size_in_bytes),
    }


#: Nodes one search from a result visits at most (the input it replaces is a few
#: elementwise ops away: ``param - lr * update``).
SEARCH_LIMIT = 64


def replaced_inputs(order: list[Node], outputs: list[Value]) -> dict[int, int]:
    """``{output index: position in order}``: the device data input whose layout each
    result takes. Foremost the input it replaces: the nearest one reached through
    elementwise ops of the result's sizes (every tensor operand of those sizes or a 0-dim
    number: ``param * decay - lr * update``), each input taken once, nearest first; a
    gradient (a layer's backward reads activations of other sizes) is never taken for the
    parameter. Else an input it is made like (``zeros_like(param)``: an optimizer's new
    state follows its parameter). A result with neither is laid out by the partitioner."""
    position = {id(n): i for i, n in enumerate(order) if type(n) is DeviceData}
    found, like = [], {}
    for j, value in enumerate(outputs):
        node = value.node
        if not node.is_input:
            sizes = node.shapes[value.index].sizes
            reached, made_like = _elementwise_inputs(node, sizes, position)
            found += [(d, j, i) for d, i in reached]
            if made_like:
                like[j] = min(made_like)[1]
    found.sort()
    paired: dict[int, int] = {}
    taken: set[int] = set()
    for _, j, i in found:
        if j not in paired and i not in taken:
            paired[j] = i
            taken.add(i)
    return {**like, **paired}


def _elementwise_inputs(root: Node, sizes, position: dict) -> tuple[list, list]:
    """``(distance, position)`` of the device data inputs of ``sizes`` that ``root`` reads
    through elementwise ops of ``sizes`` (see ``replaced_inputs``), breadth first; and of
    those it reaches as the operand of an op reading only their sizes."""
    # ops reading their operand's dtype and sizes only: an optimizer's first step makes its
    # state as ``zeros_like(param)``, which does not replace the parameter (it is laid out
    # like it: ``replaced_inputs``)
    found, like, seen, queue = [], [], {id(root)}, deque([(root, 0)])
    while queue and len(seen) < SEARCH_LIMIT:
        node, distance = queue.popleft()
        operands = node.inputs()
        if op_registry.has("metadata_only", node.op_kind):
            like += [
                (distance + 1, position[id(v.node)]) for v in operands if id(v.node) in position
            ]
            continue
        shapes = [
            v.node.shapes[v.index] if v.index < len(v.node.shapes) else None for v in operands
        ]
        if any(s is None or (s.sizes != sizes and s.sizes != ()) for s in shapes):
            continue  # not elementwise in these sizes: what it reads is not replaced
        for value, shape in zip(operands, shapes, strict=True):
            operand = value.node
            if shape.sizes != sizes or id(operand) in seen:
                continue
            seen.add(id(operand))
            if id(operand) in position:
                found.append((distance + 1, position[id(operand)]))
            elif not operand.is_input:
                queue.append((operand, distance + 1))
    return found, like
