"""The jax backend: lazy graphs lowered to ``jax.numpy`` / ``jax.lax`` and compiled by XLA.

Device data are ``jax.Array``s on JAX's default device (``Backend.torch_data`` false): they
stay there between steps; the core reads one only through ``from_data`` (DLPack, zero-copy
on the CPU) for the eager fallback, host reads and printing. Each lazy graph becomes one
program function (``lowering.py``) compiled ahead of time with ``jax.jit(...).lower(...)
.compile()`` and kept in lazygen's graph cache under the graph's key, so one XLA compile
serves every step with that graph. Random ops draw from seeds (``random_numbers =
"seed"``) with ``jax.random``. Ops the table lacks, or whose torch semantics JAX does not
give, are refused (``refusals.py``) and run eagerly.

With dynamic shapes on, a graph is compiled once for all sizes (``Backend.size_generic``):
lazygen's cache holds one graph, and XLA compiles it for each new set of sizes
(``all_sizes.py``; docs/jax-backend.md has the costs).

It runs on whatever JAX runs on: the CPU here; GPUs and TPUs with JAX's wheels for them
(untested by lazygen's suite).

``use_spmd()`` makes every graph one program over all of JAX's devices, data laid out by
lazygen's placements (``sharding.py``; the public surface is ``lazygen.spmd``).
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import torch

from ... import metrics
from ...backend_interface import Backend, KernelTables
from ...builtin import tables as op_list
from ...execution.liveness import unreferenced_inputs
from ...graph.dynamic import SizeHidden
from ...ir import Node, ScalarData, Value
from ...sharding import ProgramLayout
from . import compilation_cache, donation, executables
from .all_sizes import AllSizesExecutable, abstract, hides_sizes
from .decomposed import Decompositions
from .dtypes import check_supported, enable_x64, to_jax
from .lowering import JaxLoweringContext, program_function
from .ops import JAX_OPS
from .refusals import call_refused, refused_ops
from .sharding import Spmd, collectives, device_bytes
from .uploads import SmallUploads


class JaxExecutable:
    """One compiled graph: ``compiled(*inputs)`` returns its results as a tuple.

    Inputs read as ``SymInt``s are compiled in (``JaxLoweringContext.static_inputs``):
    each run checks them, and other numbers compile (once) a variant of their own."""

    __slots__ = ("compiled", "static", "variants", "make", "donated", "placed", "layouts", "fresh")

    def __init__(
        self, compiled, static: dict[int, int], make, donated=frozenset(), returned=None
    ) -> None:
        #: Under SPMD, the program's ``sharding.Layouts`` (its inputs' and results'
        #: placements, what it re-places); None otherwise.
        self.layouts = None
        self.compiled = compiled
        self.static = tuple(static.items())
        self.variants = {tuple(v for _, v in self.static): compiled}
        self.make = make  # numbers by position -> compiled variant
        #: Inputs the program donates (``jax.jit``'s ``donate_argnums``): XLA may write
        #: results into their buffers, and deletes the arrays passed there.
        self.donated = donated
        #: Where the program returns each of the graph's results (``donation.output_order``
        #: reorders them); None: in the graph's order.
        self.placed = donation.placement(returned)
        #: Whether XLA compiled ``compiled`` in this process (``executables.compile_program``):
        #: only such a program is written to lazygen's store.
        self.fresh = False

    def __call__(self, inputs: list, dead: frozenset[int] = frozenset()) -> list:
        if self.donated:
            inputs = donation.spare_live_inputs(inputs, self.donated, dead)
        layouts = self.layouts
        if layouts is not None and layouts.reordered:  # a mesh listing devices otherwise
            inputs = layouts.spmd.replicate(inputs, layouts.reordered, layouts.replicated)
        results = (self._variant(inputs) if self.static else self.compiled)(*inputs)
        if layouts is not None:
            results = layouts.spmd.in_order(results)
            if layouts.moved:
                results = layouts.spmd.replicate(results, layouts.moved)
        placed = self.placed
        if placed is None:
            return list(results)
        return [results[k] for k in placed]

    def _variant(self, inputs: list):
        numbers = tuple(inputs[i] for i, _ in self.static)
        compiled = self.variants.get(numbers)
        if compiled is None:
            metrics.count("JaxStaticInputCompile")
            values = {i: n for (i, _), n in zip(self.static, numbers, strict=True)}
            compiled = self.variants[numbers] = self.make(values)
        return compiled


class JaxBackend(Backend):
    """Lazy graphs as XLA programs through ``jax.jit``."""

    name = "jax"
    torch_data = False
    random_numbers = "seed"
    donates_inputs = True
    #: torch's functional collectives run inside the graph, as ordered host callbacks on the
    #: data's process group (``ops/collectives.py``).
    collectives_in_graph = True
    #: One lowering serves every size (sizes from operands and size inputs); XLA still
    #: compiles each new set of sizes, kept by the executable (``all_sizes.py``).
    size_generic = True

    def __init__(self) -> None:
        enable_x64()
        compilation_cache.enable()
        self.ops = dict(JAX_OPS)
        #: torch's formulas of the ops the table lacks (``decomposed.py``).
        self.decompositions = Decompositions(self.ops, call_refused)
        self._refused: dict | None = None
        #: Small uploads by content (``uploads.py``): one array per dtype, shape and bytes.
        self.small_uploads = SmallUploads()
        #: The devices and shardings of single-controller SPMD (``use_spmd``); None: every
        #: graph runs on JAX's default device.
        self.spmd: Spmd | None = None

    def kernel_tables(self) -> KernelTables:
        return op_list.kernel_tables()

    def refused_ops(self) -> dict:
        if self._refused is None:
            self._refused = refused_ops(self.kernel_tables(), self.ops, self.decompositions)
        return self._refused

    # One program over every device (``sharding.py``) ------------------------------------

    def use_spmd(self) -> None:
        """Every graph one program over all of JAX's devices (every process's): data
        uploaded from now on is replicated on each, annotated data is split."""
        if self.spmd is None:
            self.spmd = Spmd()
            uploads = SmallUploads(place=self.spmd.upload)
            uploads.ids |= self.small_uploads.ids  # handed out before: still never donated
            self.small_uploads = uploads

    def spmd_devices(self) -> tuple[int, ...]:
        return tuple(range(len(jax.devices())))

    def place(self, data: jax.Array, placement) -> jax.Array:
        return self.spmd.place(data, placement)

    def upload(self, tensor: torch.Tensor, placement) -> jax.Array:
        check_supported(tensor.dtype)
        if jnp.dtype(to_jax(tensor.dtype)) in _NUMPY_SHARED:
            return self.spmd.upload(tensor.numpy(), placement)  # numpy: each piece sent
        return self.spmd.upload(jax.dlpack.from_dlpack(tensor), placement)

    def output_placements(self, executable) -> tuple | None:
        layouts = getattr(executable, "layouts", None)
        return None if layouts is None else layouts.outputs

    def program_layout(self, executable) -> ProgramLayout | None:
        layouts = getattr(executable, "layouts", None)
        if layouts is None:
            return None
        text = executable.compiled.as_text()
        return ProgramLayout(
            layouts.inputs, layouts.outputs, collectives(text), device_bytes(executable.compiled)
        )

    # Data -------------------------------------------------------------------------------

    def data_device(self, index: int) -> torch.device:
        """Where the eager fallback runs on the data's host view: the CPU."""
        return torch.device("cpu")

    def to_data(self, tensor: torch.Tensor, device: torch.device) -> jax.Array:
        """A ``jax.Array`` of ``tensor`` (sharing its memory through DLPack where it can)."""
        check_supported(tensor.dtype)
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()
        tensor = tensor.resolve_conj().resolve_neg()  # DLPack carries neither bit
        kept = self.small_uploads.get(tensor)
        if kept is not None:
            return kept
        if not tensor.is_contiguous() or tensor.stride() != _contiguous_strides(tensor.shape):
            # torch calls size-1 dimensions of any stride contiguous; XLA takes a layout
            tensor = torch.empty(tensor.shape, dtype=tensor.dtype).copy_(tensor)
        try:
            data = jax.dlpack.from_dlpack(tensor)
        except Exception:  # a dtype or layout DLPack does not carry: copy through numpy
            data = jnp.asarray(tensor.numpy(), dtype=to_jax(tensor.dtype))
        return data if self.spmd is None else self.spmd.upload(data)

    def from_data(self, data: Any, device: torch.device | str = "cpu", copy: bool = True):
        """A torch tensor of ``data``: DLPack's view of the same memory with ``copy=False``
        (the core only reads it), a copy otherwise."""
        if self.spmd is not None and len(data.sharding.device_set) > 1:
            # one program's data over many devices: gathered (a copy of its own)
            data, copy = self.spmd.host_values(data), False
        if data.dtype in _NUMPY_SHARED:
            # numpy's view of the buffer: torch.from_dlpack of some XLA results (a constant
            # broadcast, sgn's gradient) dies with SIGSEGV (gradient conformance: sgn)
            if copy:
                tensor = torch.from_numpy(np.array(data))
            else:
                with warnings.catch_warnings():  # read-only: the core only reads it
                    warnings.simplefilter("ignore", UserWarning)
                    tensor = torch.from_numpy(np.asarray(data))
            return tensor if torch.device(device).type == "cpu" else tensor.to(device)
        try:
            tensor = torch.from_dlpack(data)
        except Exception:
            tensor = torch.from_numpy(np.array(data))
            copy = False
        if copy:
            tensor = tensor.clone()
        return tensor if torch.device(device).type == "cpu" else tensor.to(device)

    # Graphs -----------------------------------------------------------------------------

    def lowering_context(self, device: torch.device) -> JaxLoweringContext:
        ctx = JaxLoweringContext(device, self.ops)
        ctx.spmd = self.spmd
        ctx.decompose = self.decompositions.lower
        return ctx

    def _lowered(self, order, outputs, device, static_values=None, dead=(), inputs=None):
        """The graph lowered for ``jax.jit``, donating the inputs at positions ``dead`` (in
        ``order``) that a result can take over; returns the context, the lowered program,
        the donated argument indexes and the order the program returns results in. A graph
        compiled for all sizes is lowered for ``inputs``, one call's data."""
        ctx = self.lowering_context(device)
        ctx.static_values = dict(static_values or {})
        ctx.generic = inputs is not None
        ctx.lower_graph(order, outputs)
        parameter = {i: k for k, i in enumerate(i for i, n in enumerate(order) if n.is_input)}
        dead = [i for i in dead if parameter[i] not in ctx.static_inputs]
        paired = donation.pair(order, outputs, dead, any_sizes=ctx.generic)
        returned = donation.output_order(len(outputs), paired, parameter)
        ctx.output_refs = [ctx.output_refs[j] for j in returned]
        function = program_function(ctx)
        donate = tuple(sorted(parameter[i] for i in paired.values()))
        mesh = None
        if self.spmd is None:
            jitted = jax.jit(function, donate_argnums=donate)
        else:
            mesh = ctx.mesh = self.spmd.program_mesh(order)
            placed = self.spmd.out_shardings(order, outputs, mesh)
            placed = tuple(placed[j] for j in returned)
            jitted = jax.jit(function, donate_argnums=donate, out_shardings=placed)
        if inputs is None:
            lowered = jitted.lower(*ctx.abstract_parameters(mesh))
        else:
            lowered = jitted.lower(*[abstract(x) for x in inputs])
        return ctx, lowered, frozenset(donate), returned

    def compile(self, order: list[Node], outputs: list[Value], device):
        if hides_sizes(order):
            return self._compile_for_all_sizes(order, outputs, device)
        # Inputs nothing outside the graph reads (the old values of what the graph updates,
        # parameters and optimizer state in a training step) are donated: the graph's first
        # run decides, before lowering holds the nodes (later runs copy a donated input
        # that is still referenced: ``_spare_live_inputs``).
        dead = self._donatable(order)
        ctx, lowered, donated, returned = self._lowered(order, outputs, device, dead=dead)
        # Only a program with numbers compiled in needs to lower again: the closure holds
        # the graph's nodes, data included (it kept a first step's parameters referenced,
        # so the step after could not donate them: issue #48).
        variant = self._variants(order, outputs, device, dead) if ctx.static_inputs else None
        compiled, fresh = executables.compile_program(lowered)
        executable = JaxExecutable(compiled, ctx.static_inputs, variant, donated, returned)
        executable.fresh = fresh
        if self.spmd is not None:
            shapes = [outputs[j].node.shapes[outputs[j].index] for j in returned]
            executable.layouts = self.spmd.layouts(
                compiled, ctx.parameters, shapes, executable.placed, ctx.mesh
            )
        return executable

    def _donatable(self, order: list[Node]) -> list[int]:
        # A small upload (shared by content) is donated too: each run copies a kept one
        # it is passed (``execute_donating``). A first training step reads its small
        # parameters as such uploads; the steps after read its results, which the
        # program then donates (issue #48: one compile, full donation from step 0).
        return sorted(unreferenced_inputs(order, range(len(order))))

    def _variants(self, order, outputs, device, dead):
        """What compiles the graph for other numbers read as sizes (``JaxExecutable.make``)."""

        def variant(values: dict[int, int]):
            return self._lowered(order, outputs, device, values, dead)[1].compile()

        return variant

    def _compile_for_all_sizes(self, order, outputs, device) -> AllSizesExecutable:
        """One lowering for every size: it runs here once (an op that cannot serve every
        size raises ``SizeHidden`` now, and the executor compiles the graph for its own
        sizes); each new set of sizes then lowers and compiles with that call's inputs,
        donating what nothing read at the first call (``AllSizesExecutable``)."""
        if self.spmd is not None:
            raise SizeHidden("a program over several devices (SPMD) is compiled per size")
        ctx = self.lowering_context(device)
        ctx.generic = True
        ctx.lower_graph(order, outputs)
        static = tuple(sorted(ctx.static_inputs))
        arrays = tuple(
            k
            for k, n in enumerate(ctx.parameters)
            if not isinstance(n, ScalarData) and not getattr(n, "is_seed", False)
        )
        positions = [i for i, n in enumerate(order) if n.is_input]  # argument -> order

        def variant(numbers: dict[int, int], data: list, dead: frozenset[int]):
            kept = self.small_uploads.ids  # shared arrays: never donated
            dead = sorted(positions[k] for k in dead if id(data[k]) not in kept)
            _, lowered, donated, returned = self._lowered(
                order, outputs, device, numbers, dead, data
            )
            return lowered.compile(), donated, donation.placement(returned)

        return AllSizesExecutable(variant, static, arrays, len(order))

    @property
    def persistent_executables(self) -> bool:
        """XLA's programs are kept serialised (``executables.py``), except under SPMD: a
        program over a mesh carries layouts made at compile time for these devices."""
        return self.spmd is None

    def save_executable(self, executable) -> bytes | None:
        """XLA's compiled program (``jax.experimental.serialize_executable``) after a line
        of JSON: the numbers compiled in, the donated inputs and where results come back.
        Programs for all sizes are not kept."""
        if type(executable) is not JaxExecutable:
            return None
        static = dict(executable.static)
        compiled = executable.variants[tuple(static.values())]
        placed, fresh = executable.placed, executable.fresh
        return executables.save(compiled, static, executable.donated, placed, fresh)

    def load_executable(self, payload: bytes, order, outputs, device) -> JaxExecutable:
        compiled, static, donated, placed = executables.load(payload)
        variant = None
        if static:  # as ``compile``: only a program with numbers compiled in lowers again
            variant = self._variants(order, outputs, device, self._donatable(order))
        executable = JaxExecutable(compiled, static, variant, donated)
        executable.placed = placed
        return executable

    def cache_fingerprint(self) -> tuple[str, ...]:
        return executables.fingerprint()

    def execute(self, executable: JaxExecutable, inputs: list) -> list:
        return executable(inputs)

    def execute_donating(self, executable: JaxExecutable, inputs: list, dead) -> list:
        kept = self.small_uploads.ids
        if kept:  # a kept upload where the graph donates is in use: copied, not donated
            shared = {i for i in executable.donated if id(inputs[i]) in kept}
            if shared:
                dead = dead - shared
        return executable(inputs, dead)

    def runner(self, executable: JaxExecutable):
        return executable

    def dump(self, order: list[Node], outputs: list[Value], device) -> str:
        return str(self._lowered(order, outputs, device)[1].as_text())

    def describe(self, executable) -> str:
        if isinstance(executable, AllSizesExecutable):
            return executable.describe()
        return executable.compiled.as_text()


#: JAX dtypes numpy holds natively (``from_data`` shares their buffers through numpy).
_NUMPY_SHARED = frozenset(
    jnp.dtype(t)
    for t in (
        jnp.float32, jnp.float64, jnp.float16, jnp.int8, jnp.int16, jnp.int32, jnp.int64,
        jnp.uint8, jnp.uint16, jnp.uint32, jnp.uint64, jnp.bool_, jnp.complex64, jnp.complex128,
    )
)  # fmt: skip


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
