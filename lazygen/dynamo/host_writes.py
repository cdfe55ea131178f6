"""The host tensors a spliced graph writes in place (``HostWrites``): an optimizer's step
counts, which torch keeps on the CPU, get their new values on the host at each call.

Most such graphs only count: each step count becomes itself plus one (Adam and AdamW's
``state["step"] += 1``). Those run as one ``torch._foreach_add_`` of the counts in place
(``Increments``) instead of the graph's per-tensor ops and a copy of their results: ~3x
less host time per call, the same values (an in-place add of the same number to a tensor
of its result's dtype)."""

from __future__ import annotations

import numbers

import torch
import torch.fx

from lazygen.runtime import capture_interface as runtime
from lazygen.runtime import metrics
from lazygen.runtime.capture_interface import (
    BUILTIN,
    FragmentCall,
    LazyDevice,
    ScalarData,
    Value,
    device_data,
    is_lazy,
    make_backend,
    new_lazy,
    post_order,
)

from .capture import ARG, Capture


def _argument_of(cap: Capture) -> dict:
    """Each graph input node that stands for an FX argument, with that argument's index."""
    inputs = [node for node in cap.order if node.is_input]
    return {
        node: payload
        for node, (kind, payload) in zip(inputs, cap.feeds, strict=True)
        if kind == ARG
    }


def increment_of(module: torch.fx.GraphModule, feeds: list, targets: list[int]):
    """The number ``n`` when ``module``, fed ``feeds``, computes for each write target
    ``targets[j]`` exactly ``targets[j] + n`` (the ``count_increment`` op of that
    argument, alpha 1, the same ``n`` for all, each argument once), else None. The result's dtype is the
    argument's (checked per call by ``Increments``), so adding in place equals the graph's
    add followed by the copy into the argument."""
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(feeds) or len(set(targets)) != len(targets):
        return None
    argument = {
        p: payload for p, (is_arg, payload) in zip(placeholders, feeds, strict=True) if is_arg
    }
    output = next(n for n in module.graph.nodes if n.op == "output")
    results = output.args[0]
    if not isinstance(results, (tuple, list)) or len(results) != len(targets):
        return None
    increment = runtime.op_registry.get("count_increment")
    amount = None
    for result, target in zip(results, targets, strict=True):
        if not isinstance(result, torch.fx.Node) or result.target is not increment:
            return None
        if result.kwargs or len(result.args) not in (2, 3):
            return None
        source, number, alpha = (*result.args, 1)[:3]
        if argument.get(source) != target or alpha != 1 or type(number) not in (int, float):
            return None
        if amount is not None and (number != amount or type(number) is not type(amount)):
            return None
        amount = number
    return amount


class Increments:
    """``targets += n`` in place for every write target (see the module docstring)."""

    __slots__ = ("amount",)

    def __init__(self, amount: numbers.Number) -> None:
        self.amount = amount

    @staticmethod
    def keep_dtypes(amount: numbers.Number, targets: list[torch.Tensor]) -> bool:
        """Whether ``t + amount`` has ``t``'s dtype for every target: a float, or a non-bool
        integer plus an int (a bool count, or an integer one plus a float, would change
        dtype: the graph runs instead). Dynamo guards the arguments' dtypes, so one check
        at the capture holds for every call."""
        for t in targets:
            if t.dtype.is_floating_point:
                continue
            if isinstance(amount, float) or t.dtype is torch.bool or t.dtype.is_complex:
                return False
        return True

    def __call__(self, targets: list[torch.Tensor]) -> None:
        metrics.count("DynamoHostIncrements")
        with torch.no_grad():
            torch._foreach_add_(targets, self.amount)


class HostWrites:
    """The host tensors a spliced graph writes in place, with their new values computed on
    the host at each call: an optimizer's step counts, which torch keeps on the CPU
    (``state["step"]`` of Adam and AdamW unless ``capturable``). The graph reads the old
    values (uploaded, copied, at each call); these new ones, a function of host tensors
    and the graph's constants only (``step + 1``), run op by op on the host
    (``UncompiledGraph``), or as one in-place add (``Increments``), and are written into the
    caller's tensors, so nothing waits for the device."""

    __slots__ = ("targets", "outputs", "host", "graph", "feeds", "mirrors", "increments")

    def __init__(self, cap: Capture, args: list) -> None:
        writes = [(i, r) for i, r in cap.mutations if not is_lazy(args[i])]
        self.targets = [i for i, _ in writes]
        self.outputs = [r for _, r in writes]  # the call's outputs of their new values
        #: FX argument -> (id, version, lazy tensor): the device's copy of the value this
        #: replay wrote into a host tensor, which the next call reads instead of uploading
        #: it again while the tensor is unchanged
        self.mirrors: dict[int, tuple] = {}
        outputs = [cap.outputs[r] for _, r in writes]
        order, _ = post_order(outputs)
        self.host, self.graph = None, None
        if order:  # the fx backend's module of these ops: eager's kernels, called directly
            self.host = make_backend("fx", BUILTIN)
            self.graph = self.host.compile(order, outputs, torch.device("cpu"))
        argument_of = _argument_of(cap)
        self.feeds: list[tuple[bool, object]] = []  # (is an argument, its index or data)
        for node in order:
            if node.is_input:
                if node in argument_of:
                    self.feeds.append((True, argument_of[node]))
                else:
                    self.feeds.append((False, node.materialize()))
        self.increments = None
        if self.graph is not None:
            amount = increment_of(self.graph.module, self.feeds, self.targets)
            targets = [args[i] for i in self.targets]
            if amount is not None and Increments.keep_dtypes(amount, targets):
                self.increments = Increments(amount)

    def __bool__(self) -> bool:
        return bool(self.targets)

    @staticmethod
    def reads_lazy_data(cap: Capture, args: list) -> bool:
        """Whether a host tensor's new value reads a lazy tensor or data of the graph."""
        outputs = [cap.outputs[r] for i, r in cap.mutations if not is_lazy(args[i])]
        if not outputs:
            return False
        argument_of = _argument_of(cap)
        for node in post_order(outputs)[0]:
            if not node.is_input or isinstance(node, ScalarData):
                continue
            if node not in argument_of or is_lazy(args[argument_of[node]]):
                return True
        return False

    def device_value(self, i: int, tensor: torch.Tensor, device: LazyDevice) -> Value:
        """The IR value a call reads for host argument ``i``: the device's copy of what the
        last call wrote into it while it is unchanged since (one bump later: aot_autograd's
        runtime wrapper bumps every input its graph mutates before calling it), else an
        upload of a copy (the caller's tensor changes at the write)."""
        mirror = self.mirrors.get(i)
        if mirror is not None and mirror[0] == id(tensor) and mirror[1] + 1 == tensor._version:
            return mirror[2]._value
        return device_data(tensor.detach().clone(), device)

    def __call__(self, args: list, call: FragmentCall, device: LazyDevice) -> None:
        targets = [args[i] for i in self.targets]
        increments = self.increments
        if increments is not None:
            increments(targets)
        else:
            inputs = [args[payload] if is_arg else payload for is_arg, payload in self.feeds]
            results = self.host.execute(self.graph, inputs)
            with torch.no_grad():
                torch._foreach_copy_(targets, results)
        mirrors = self.mirrors
        for i, t, r in zip(self.targets, targets, self.outputs, strict=True):
            mirror = mirrors.get(i)
            if mirror is None:
                lazy = new_lazy(Value(call, r), device)
            else:  # the device's copy is ours alone: pointed at the new value, as a write
                lazy = mirror[2]
                lazy._value = Value(call, r)
            mirrors[i] = (id(t), t._version, lazy)
