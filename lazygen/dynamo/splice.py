"""The replay of a graph whose tensors live on the lazy device: one node spliced into the
device's pending graph (``FragmentCall``), nothing run yet.

A step compiled with its model, optimizer state and batch on the lazy device calls its
forward, backward and optimizer graphs with lazy tensors. Each call adds one
``FragmentCall`` of its captured graph, reading the arguments' current IR values (device
data between steps, or what an earlier call of the step computes); its outputs are new lazy
tensors of the call's outputs, and the arguments the graph wrote in place (parameters,
optimizer state) are pointed at the call's outputs that hold their new values, as a
functionalized in-place op points them (``torch._functionalize_commit_update``, so views of
them follow, and the version counter bumped, so autograd sees the write).

The step's calls then run as one program when its results are needed: a host read (any
sync of a device with spliced calls materialises all its live tensors:
``executor.sync``), ``mark_step``, or the next step's first call (a fragment called again
while its previous call is pending starts a new step: the pending one is launched then,
``executor.cut``). The program's inputs are the parameters' and states' data, which the
optimizer's call replaces: the executor donates them (``liveness``), so a jax step updates
its ``jax.Array``s in place with nothing crossing to the host.

Per call this costs a look-up of each argument's value, one node and one lazy tensor per
output: no per-op recording, no functionalization, no shape inference.
"""

from __future__ import annotations

import torch

from lazygen.runtime import capture_interface as runtime
from lazygen.runtime import metrics
from lazygen.runtime.capture_interface import (
    Fragment,
    FragmentCall,
    LazyDevice,
    SeedData,
    Value,
    default_generator,
    draw_seeds,
    is_lazy,
    new_lazy,
    post_order,
    sync_apart,
)

from .capture import ARG, CONSTANT, FIXED, PASS, RESULT, SEED, Capture
from .host_writes import HostWrites

_sync = torch._functionalize_sync
_wrap = torch._to_functional_tensor
_inner = torch._from_functional_tensor
_commit = torch._functionalize_commit_update
_set_versions = torch._C._autograd._unsafe_set_version_counter


def splice_refusal(cap: Capture, args: list) -> str | None:
    """Why ``cap`` cannot be replayed as a spliced call (None: it can): its random ops must
    draw from seeds, nothing may be read on the host at every call (tensor assertions), and
    a host tensor it writes (an optimizer's step count on the CPU) must get its new value
    from host tensors alone (``HostWrites``)."""
    if cap.host is not None:
        return "its tensors are not on the lazy device"
    if HostWrites.reads_lazy_data(cap, args):
        return "it writes a host tensor with a value computed from lazy tensors"
    if cap.asserts:
        return "tensor assertions are checked on the host at every call"
    if any(kind not in (ARG, FIXED, SEED) for kind, _ in cap.feeds):
        return "a random op draws from a torch generator"
    if any(kind not in (RESULT, PASS, CONSTANT) for kind, _ in cap.results):
        return "an output is a view of an argument"
    return None


def settle_prelude(device: LazyDevice, args: list) -> int:
    """Materialise, in a graph of their own, the arguments of a graph's first spliced call
    that hold values recorded op by op (no spliced call in their graph); returns how many.

    An optimizer creates its state at its first step, eagerly, while Dynamo traces it
    (``torch.zeros_like`` of each parameter): left pending, those ops would be part of the
    first step's program only, whose structure would then differ from every later step's
    (where the state is device data), and the step would be compiled twice (issue #48:
    "no second compile when the optimizer state appears"). Run apart, the first step's
    program is the steady one. Values that read a spliced call (the forward's outputs the
    backward reads) stay pending: they are the step itself. Only at a graph's first call,
    so a step that records ops before its calls at every step is left as it is."""
    prelude = []
    for t in args:
        if not is_lazy(t):
            continue
        _sync(t)
        lazy = _inner(t)
        value = lazy._value
        if value.node.is_input:
            continue
        order, _ = post_order([value])
        if not any(type(node) is FragmentCall for node in order):
            prelude.append(lazy)
    if prelude:
        metrics.count("DynamoPreludeSynced", len(prelude))
        sync_apart(device, prelude)
    return len(prelude)


class Splice:
    """Replays one capture by splicing a ``FragmentCall`` into the pending graph."""

    __slots__ = (
        "fragment", "device", "template", "arg_inputs", "seeds", "results", "writes", "spec",
        "host_writes", "host_inputs", "container", "flat", "flat_results",
    )  # fmt: skip

    def __init__(self, cap: Capture, device: LazyDevice, args: list) -> None:
        self.device = device
        inputs = [node for node in cap.order if node.is_input]
        self.template: list = [Value(node, 0) for node in inputs]  # FIXED: the node itself
        self.arg_inputs: list[tuple[int, int]] = []  # (fragment input, FX argument)
        self.seeds: list[tuple[torch.device, list[int]]] = []  # per device, its seed inputs
        read_at: dict[int, int] = {}
        ranked: dict = {}
        for k, (kind, payload) in enumerate(cap.feeds):
            if kind == ARG:
                self.arg_inputs.append((k, payload))
                read_at.setdefault(payload, k)
            elif kind == SEED:
                seed_device, rank = payload
                ranked.setdefault(seed_device, []).append((rank, k))
        self.seeds = [(d, [k for _, k in sorted(pairs)]) for d, pairs in ranked.items()]
        written = {r: read_at[i] for i, r in cap.mutations if i in read_at and is_lazy(args[i])}
        self.fragment = Fragment(cap.order, cap.outputs, written)
        self.results = cap.results
        # (FX argument, fragment output) of the lazy tensors the graph writes
        self.writes = [(i, r) for i, r in cap.mutations if is_lazy(args[i])]
        self.host_writes = HostWrites(cap, args)
        self.host_inputs = [(k, i) for k, i in self.arg_inputs if not is_lazy(args[i])]
        self.arg_inputs = [(k, i) for k, i in self.arg_inputs if is_lazy(args[i])]
        self.spec = spec = cap.spec
        #: ``tuple`` or ``list`` when the outputs are one flat container (else a pytree)
        flat = spec.type in (tuple, list) and all(c.is_leaf() for c in spec.children())
        self.container = spec.type if flat else None
        #: the container again when, moreover, every output is a result of the call
        self.flat = self.container if all(k == RESULT for k, _ in cap.results) else None
        self.flat_results = [j for _, j in cap.results]

    def __call__(self, args: list):
        metrics.count("DynamoSplicedCall")
        device = self.device
        if self.fragment in device.spliced:  # called again: the pending step is complete
            metrics.count("DynamoStepLaunch")
            runtime.cut(device)
        operands = self.template.copy()
        for k, i in self.arg_inputs:
            t = args[i]
            _sync(t)
            operands[k] = _inner(t)._value
        for seed_device, positions in self.seeds:
            drawn = draw_seeds(default_generator(seed_device), len(positions))
            for k, seed in zip(positions, drawn, strict=True):
                operands[k] = Value(SeedData(seed, seed_device), 0)
        host_writes = self.host_writes
        for k, i in self.host_inputs:
            operands[k] = host_writes.device_value(i, args[i], device)
        call = FragmentCall(self.fragment, tuple(operands))
        device.spliced.add(self.fragment)
        if host_writes:
            host_writes(args, call, device)
        if self.writes:
            written = [args[i] for i, _ in self.writes]
            for t, (_, r) in zip(written, self.writes, strict=True):
                _inner(t)._value = Value(call, r)
                _commit(t)
            _set_versions(written, [t._version + 1 for t in written])
        if self.flat is not None:  # every output a result, in order (aot_autograd's graphs)
            return self.flat([_wrap(new_lazy(Value(call, j), device)) for j in self.flat_results])
        out = []
        for kind, payload in self.results:
            if kind == RESULT:
                out.append(_wrap(new_lazy(Value(call, payload), device)))
            elif kind == PASS:
                out.append(args[payload])
            elif isinstance(payload, torch.Tensor):
                out.append(payload.clone())
            else:
                out.append(payload)
        if self.container is not None:
            return self.container(out)
        return torch.utils._pytree.tree_unflatten(out, self.spec)
