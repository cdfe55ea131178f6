"""The interpreter a capture runs an FX graph with: each node through lazygen's kernels on
lazy tensors, with what eager would see where it differs (strides and storages as eager's
layout, ``layouts.py``), ops on the host kept on the host, and the nodes whose values were
computed eagerly noted (``suspects``) so the capture can be cut there. Apart from
``capture.py``, which prepares the arguments and describes the graph the run built.
"""

from __future__ import annotations

from types import MappingProxyType

import torch
import torch.fx

from lazygen.runtime import metrics
from lazygen.runtime.capture_interface import (
    FALLBACK_COUNTER,
    RANDOM_SYNC,
    DeviceData,
    GeneratorData,
    LazyDevice,
    SeedData,
    from_data,
    host_read_counters,
    inner,
    settings,
    to_functional,
)

from . import asserts
from .layouts import (
    EAGER_STRIDE_QUERIES,
    concrete,
    eager_layout,
    in_memory_order,
    on_eager_storage,
    permuted_random_input,
    user_line,
)

#: aot_autograd's wrappers of a random op recomputed in the backward (activation
#: checkpointing): ``run_and_save_rng_state(op, *args)`` returns the generator's state and
#: ``op(*args)``, ``run_with_rng_state(state, op, *args)`` runs ``op`` from that state. They
#: take the state of a torch device's generator, which a lazy graph cannot hand between
#: graphs: the capture runs them on the host, so the partition runs just these nodes
#: eagerly and every other node of the graph lazily.
RNG_STATE_OPS = frozenset(
    {torch.ops.higher_order.run_and_save_rng_state, torch.ops.higher_order.run_with_rng_state}
)


#: aten-level ops that aot_autograd's graphs contain but lazygen's op list names otherwise.
SUBSTITUTES = MappingProxyType(
    {
        torch.ops.prims.convert_element_type.default: lambda x, dtype: torch.ops.aten._to_copy(
            x, dtype=dtype
        ),
    }
)


_EAGER_WORK = (FALLBACK_COUNTER, RANDOM_SYNC, "SyncedTensors", "TransferFromDevice")


#: Counters of values read on the host: a copy off the device (``TransferFromDevice``) and
#: the ops the fallback report lists as host reads (``.item()``, ``bool()``, ``torch.equal``).
_HOST_READS = frozenset({"TransferFromDevice"}) | host_read_counters()


def fallback_counts() -> dict[str, int]:
    """Eager-fallback (``aten::<op>``), value-dependent random (``RandomSync::<op>``), sync
    and host-read counters: their growth during an op names the ops that cut the capture."""
    return {
        name: value for name, value in metrics.counters().items() if name.startswith(_EAGER_WORK)
    }


class LazyInterpreter(torch.fx.Interpreter):
    """Runs the FX graph on lazy tensors: module constants become device data, and a
    ``device=`` naming the host (the FX graph was traced for host tensors) names the lazy
    device instead, so factories inside the graph are traced too."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        device: LazyDevice,
        host_type: str | None,
        bindings: dict | None = None,
    ):
        super().__init__(gm, garbage_collect_values=True)
        self.device = device
        self.host_type = host_type
        self.bindings = bindings or {}  # ``symbol_bindings``: this call's sizes
        self.constants: set = set()
        self.suspects: dict[str, str] = {}  # FX node name -> its target
        self.seen: set = set()
        self.generators: list = []  # GeneratorData, in trace order
        self.seeds: list = []  # SeedData (a seed backend's random ops), in trace order
        self.asserts: list = []  # (lazy 0-d bool condition, message), in trace order
        self._memory_order: list[int] | None = None
        self._storage: tuple | None = None  # eager's layout of a storage-reading op's input
        self._source: str | None = None  # the user's line of the FX node being run

    def _lazy(self, value):
        if isinstance(value, torch.Tensor) and value.device.type != settings.device_type:
            detached = value.detach()
            if self.device.backend.torch_data:
                data = self.device.backend.to_data(detached, self.device.backing)
                lazy = from_data(data.clone() if data is detached else data, self.device)
            else:  # ``from_data`` hands a copy to the backend
                lazy = from_data(detached.clone(), self.device)
            self.constants.add(lazy._value.node)
            return to_functional(lazy)
        return value

    def get_attr(self, target, args, kwargs):
        return self._lazy(super().get_attr(target, args, kwargs))

    def _retarget(self, value):
        if isinstance(value, torch.device) and value.type == self.host_type:
            return self.device.torch_device
        return value

    def run_node(self, n: torch.fx.Node):
        if n.op != "call_function":
            return super().run_node(n)
        if n.target in EAGER_STRIDE_QUERIES:  # eager's, not the lazy tensor's (contiguous)
            eager = concrete(n.meta.get("val"), self.bindings)
            if eager is not None:
                return eager
        self._memory_order = permuted_random_input(n, self.bindings)
        self._storage = eager_layout(n, self.bindings)
        self._source = user_line(n) if self._storage is not None else self._source
        before = fallback_counts()
        result = super().run_node(n)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        grown = {name for name, value in fallback_counts().items() if value > before.get(name, 0)}
        self._source = user_line(n) if settings.record_source else None
        self._check(n, args, kwargs, result, bool(grown), bool(grown & _HOST_READS))
        return result

    def call_function(self, target, args, kwargs):
        if self.host_type is not None and "device" in kwargs:
            kwargs = {k: self._retarget(v) for k, v in kwargs.items()}
        substitute = SUBSTITUTES.get(target)
        if substitute is not None:
            return substitute(*args, **kwargs)
        if target in RNG_STATE_OPS:
            return self._on_host(target, args, kwargs)
        if target in asserts.ASSERT_OPS:
            cond, message, returned = asserts.trace(target, args, kwargs)
            if is_lazy(cond):  # a graph result the replay checks (``asserts.check``)
                self.asserts.append((cond, message))
                return returned
        order = self._memory_order
        if order is not None:
            return in_memory_order(target, args, kwargs, order)
        if self._storage is not None:
            return on_eager_storage(target, args, kwargs, self._storage, self._source)
        return super().call_function(target, args, kwargs)

    def _on_host(self, target, args, kwargs):
        """Run an op on host copies of its lazy arguments (a read of their values, so the
        FX node is a cut: the partition runs it eagerly at every call) and go on tracing
        with its results as lazy tensors."""

        def host(value):
            return value.cpu() if is_lazy(value) else value

        args, kwargs = torch.utils._pytree.tree_map(host, (args, kwargs))
        return torch.utils._pytree.tree_map(self._lazy, target(*args, **kwargs))

    def _check(
        self, n: torch.fx.Node, args, kwargs, result, eager_work: bool, host_read: bool
    ) -> None:
        """Sort the device data an op made. Without eager work (no fallback, no sync) it is
        a constant: a factory's result, an ``empty`` a kernel fills with IR, an uploaded
        host scalar; it replays as it is, unless it is the result of a random op (drawn
        eagerly: it must be drawn again at every call). With eager work the op is a cut
        when it read lazy inputs or drew random numbers, and a constant otherwise. An op
        that read values on the host (``tolist``, ``item``) may have built IR from them
        (slice bounds, sizes) without making device data: a cut when it read lazy inputs."""
        flat = torch.utils._pytree.tree_leaves(result)
        made = [inner(t)._value.node for t in flat if is_lazy(t)]
        data = self._walk_new(made)
        fresh = [n for n in made if type(n) is DeviceData and n not in self.constants]
        seeded = isinstance(n.target, torch._ops.OpOverload) and (
            torch.Tag.nondeterministic_seeded in n.target.tags
        )
        if not eager_work and not (seeded and fresh):
            self.constants.update(data)
            return
        if not fresh and not data and not host_read:
            return
        reads = any(is_lazy(a) for a in torch.utils._pytree.tree_leaves((args, kwargs)))
        if reads or seeded:
            self.suspects[n.name] = str(n.target)
        else:
            self.constants.update(fresh)
            self.constants.update(data)

    def _walk_new(self, roots) -> list:
        """Walk the IR an op added: record its generator inputs in the order they were
        made, and return the device data it reads that no earlier op made or read."""
        data = []
        stack = [n for n in roots if n not in self.seen]
        while stack:
            node = stack.pop()
            if node in self.seen:
                continue
            self.seen.add(node)
            if self._source is not None and not node.is_input:
                node.source = self._source  # the FX node's line, not the frame calling it
            if isinstance(node, GeneratorData):
                self.generators.append(node)
            elif isinstance(node, SeedData):
                self.seeds.append(node)
            elif type(node) is DeviceData and node not in self.constants:
                data.append(node)
            stack.extend(reversed([v.node for v in node.inputs() if v.node not in self.seen]))
        return data


def is_lazy(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == settings.device_type
