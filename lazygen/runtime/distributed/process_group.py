"""``LazyProcessGroup``: the c10d process group of the lazy device (backend ``lazygen``).

c10d cannot take a Python ``Backend`` (its C++ class has no Python constructor), so the lazy
device's backend is a Python ``ProcessGroup``, which c10d then uses as the whole group
(``init_process_group("lazygen")`` or ``"cpu:gloo,lazygen:lazygen"``, where torch gives
the group to the Python one). It owns a plain c10d group of the data device: gloo for CPU
data, nccl (and gloo for host tensors) for CUDA data, registered by name for the graph's
functional collectives.

* Lazy tensors: each collective is traced as a functional collective on the tensor
  (``collectives.py``: an IR node, or a graph cut when the backend cannot run it in a
  graph) and written back with ``copy_``, which functionalization turns into re-pointing
  the tensor and its views (DDP's gradient bucket views) at the result. The returned
  ``Work`` is complete at once: the collective runs with the graph, and every rank
  traces the same collectives in the same order.
* Host tensors (DDP's bucket indices and parameter checks, user CPU tensors) go to the data
  group as they are, once the traced collectives have run: c10d pairs collectives by
  issue order, so every process must issue them in program order.
"""

from __future__ import annotations

from types import MappingProxyType

import torch
import torch.distributed as dist

from ..devices import current_index, get_device
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..state import settings
from ..tracing.tensor import inner, is_lazy
from . import fsdp, groups, peers, state_dicts

C = torch._C._distributed_c10d
funcol = torch.ops._c10d_functional

_REDUCE_OPS = MappingProxyType(
    {
        dist.ReduceOp.RedOpType.SUM: "sum",
        dist.ReduceOp.RedOpType.AVG: "sum",  # then divided: gloo has no average
        dist.ReduceOp.RedOpType.PRODUCT: "product",
        dist.ReduceOp.RedOpType.MIN: "min",
        dist.ReduceOp.RedOpType.MAX: "max",
        dist.ReduceOp.RedOpType.BAND: "band",
        dist.ReduceOp.RedOpType.BOR: "bor",
        dist.ReduceOp.RedOpType.BXOR: "bxor",
    }
)


def _reduce_op(op) -> tuple[str, bool]:
    """The functional collective's name of ``op`` and whether to average afterwards."""
    kind = op.op if isinstance(op, dist.ReduceOp) else op
    name = _REDUCE_OPS.get(kind)
    if name is None:
        raise ValueError(f"lazygen: reduce op {kind} is not supported on lazy tensors")
    return name, kind == dist.ReduceOp.RedOpType.AVG


def _done(result) -> C.Work:
    """A completed ``Work`` whose future holds ``result`` (what DDP's reducer reads)."""
    future = torch.futures.Future()
    future.set_result(result)
    return C._create_work_from_future(future)


def _lazy(tensors) -> bool:
    """True when the tensors are lazy, False when none is; a mix is a user error."""
    flags = {is_lazy(t) for t in tensors}
    if len(flags) > 1:
        raise LazygenRuntimeError(
            f"lazygen: a collective got both {settings.device_type} and other tensors; "
            "move them to one device first"
        )
    return flags == {True}


def _run_rooted(outputs) -> None:
    """Run a rooted collective (gather, reduce) now, on every rank, in one graph with the
    root's outputs. Only the root keeps its result; had the others' dropped node run at
    their next sync while the root read its outputs later, in a graph of their own, the
    root's graph would hold the collective node once more (its outputs derive from it) and
    issue it twice: the ranks hung. Rooted collectives are rare in a step (DCP's plans)."""
    if outputs:
        executor.sync([inner(t) for t in outputs])  # the traced collectives first
    else:
        executor.run_must_run()


def data_group(store, rank: int, size: int, timeout, data_device: torch.device):
    """A c10d group of the data device: gloo for host tensors, and nccl for CUDA data."""
    group = C.ProcessGroup(store, rank, size)
    gloo = dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), rank, size, timeout)
    group._register_backend(torch.device("cpu"), C.ProcessGroup.BackendType.GLOO, gloo)
    default = C.ProcessGroup.BackendType.GLOO
    if data_device.type == "cuda":
        nccl_class = getattr(dist, "ProcessGroupNCCL", None)
        if nccl_class is None:
            raise LazygenRuntimeError("lazygen: CUDA data needs torch built with NCCL")
        options = nccl_class.Options()
        options._timeout = timeout
        nccl = nccl_class(dist.PrefixStore("nccl/", store), rank, size, options)
        group._register_backend(torch.device("cuda"), C.ProcessGroup.BackendType.NCCL, nccl)
        default = C.ProcessGroup.BackendType.NCCL
    group._set_default_backend(default)
    return group


class LazyProcessGroup(dist.ProcessGroup):
    """The lazy device's process group (see the module docstring)."""

    def __init__(self, store, rank: int, size: int, timeout, name: str) -> None:
        super().__init__(rank, size)
        self._name = name
        backing = get_device(current_index()).backing
        prefix = dist.PrefixStore(f"{settings.device_type}-data/", store)
        self._data = data_group(prefix, rank, size, timeout, backing)
        self._data_name = f"{name}/{settings.device_type}-data"
        self._data._set_group_name(self._data_name)
        C._register_process_group(self._data_name, self._data)
        groups.register(name, self._data_name)

    # c10d keeps a group's name (and description) on the backends registered with it and
    # reads it from the first one: a Python group has none, so ``group_name`` raised
    # "ProcessGroup name not set" (DeviceMesh and DTensor read it). The lazy group keeps them.

    def _set_group_name(self, name: str) -> None:
        if name != self._name:
            groups.forget(self._name)
            groups.register(name, self._data_name)
        self._name = name

    @property
    def group_name(self) -> str:
        return self._name

    def _set_group_desc(self, desc: str) -> None:
        self._desc = desc

    @property
    def group_desc(self) -> str:
        return getattr(self, "_desc", "undefined")

    @property
    def data_group(self):
        """The gloo / nccl group underneath (what graphs' collectives run on)."""
        return self._data

    @property
    def data_group_name(self) -> str:
        return self._data_name

    def getBackendName(self) -> str:  # noqa: N802 (c10d's name)
        return settings.device_type

    def _eager(self):
        """The data group, once every traced collective was issued and every graph in flight
        has run (see the module docstring)."""
        executor.run_must_run()
        executor.wait_device_ops()
        return self._data

    def _host(self, call):
        """``call(data group)``, a collective of host tensors, waited for here: a rank that
        died is then named (``peers``) rather than gloo's lost connection. Host tensors'
        collectives are small and rare in a lazy step (DDP's construction, metrics)."""
        work = call(self._eager())
        try:
            work.wait()
        except RuntimeError as error:
            explained = peers.explain(error)
            if explained is None:
                raise
            raise explained from error
        return work

    # Collectives ------------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        opts = dist.AllreduceOptions() if opts is None else opts
        if not _lazy(tensors):
            return self._host(lambda g: g.allreduce(tensors, opts))
        op, average = _reduce_op(opts.reduceOp)
        with torch.no_grad():
            for t in tensors:
                result = funcol.wait_tensor(funcol.all_reduce(t, op, self._data_name))
                t.copy_(result / self.size() if average else result)
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        options = dist.AllreduceOptions()
        if opts is not None:
            options.reduceOp = opts.reduceOp
        return self.allreduce(tensors, options)

    def broadcast(self, tensors, opts=None):
        opts = dist.BroadcastOptions() if opts is None else opts
        if not _lazy(tensors):
            return self._host(lambda g: g.broadcast(tensors, opts))
        with torch.no_grad():
            for t in tensors:
                t.copy_(funcol.wait_tensor(funcol.broadcast(t, opts.rootRank, self._data_name)))
        return _done(tensors)

    def _gathered(self, tensor):
        size, name = self.size(), self._data_name
        return funcol.wait_tensor(funcol.all_gather_into_tensor(tensor, size, name))

    def allgather(self, output_lists, inputs, opts=None):
        if not _lazy(inputs):
            opts = opts or dist.AllgatherOptions()
            return self._host(lambda g: g.allgather(output_lists, inputs, opts))
        with torch.no_grad():
            for outputs, t in zip(output_lists, inputs, strict=True):
                chunks = self._gathered(t.reshape(1, -1)).unbind(0)
                for out, chunk in zip(outputs, chunks, strict=True):
                    out.copy_(chunk.view(out.shape))
        return _done(output_lists)

    def _allgather_base(self, output, input, opts=None):
        if not _lazy([output, input]):
            opts = opts or dist.AllgatherOptions()
            return self._host(lambda g: g._allgather_base(output, input, opts))
        with torch.no_grad():
            output.copy_(self._gathered(input.reshape(1, -1)).view(output.shape))
        return _done([output])

    all_gather_single = _allgather_base  # the name torch 2.13's all_gather_into_tensor calls

    def _scattered(self, flat, opts):
        op, average = _reduce_op(opts.reduceOp)
        size, name = self.size(), self._data_name
        result = funcol.wait_tensor(funcol.reduce_scatter_tensor(flat, op, size, name))
        return result / size if average else result

    def reduce_scatter(self, outputs, input_lists, opts=None):
        opts = dist.ReduceScatterOptions() if opts is None else opts
        if not _lazy(outputs):
            return self._host(lambda g: g.reduce_scatter(outputs, input_lists, opts))
        with torch.no_grad():
            for out, inputs in zip(outputs, input_lists, strict=True):
                flat = torch.stack([t.reshape(-1) for t in inputs])
                out.copy_(self._scattered(flat, opts).view(out.shape))
        return _done(outputs)

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = dist.ReduceScatterOptions() if opts is None else opts
        if not _lazy([output, input]):
            return self._host(lambda g: g._reduce_scatter_base(output, input, opts))
        with torch.no_grad():
            flat = input.reshape(self.size(), -1)
            output.copy_(self._scattered(flat, opts).view(output.shape))
        return _done([output])

    reduce_scatter_single = _reduce_scatter_base  # what reduce_scatter_tensor calls

    def scatter(self, outputs, input_lists, opts=None):
        """The root's inputs broadcast as one stacked tensor, each rank keeping its row
        (DTensor's ``distribute_tensor`` scatters the root's chunks this way)."""
        opts = dist.ScatterOptions() if opts is None else opts
        if not _lazy(outputs):
            return self._host(lambda g: g.scatter(outputs, input_lists, opts))
        with torch.no_grad():
            for index, out in enumerate(outputs):
                if self.rank() == opts.rootRank:
                    stacked = torch.stack([t.reshape(-1) for t in input_lists[index]])
                else:
                    stacked = out.new_zeros((self.size(), out.numel()))
                name = self._data_name
                rows = funcol.wait_tensor(funcol.broadcast(stacked, opts.rootRank, name))
                out.copy_(rows[self.rank()].view(out.shape))
        return _done(outputs)

    def gather(self, output_lists, inputs, opts=None):
        """An all-gather of which the root keeps the rows (DCP gathers its save plans)."""
        opts = dist.GatherOptions() if opts is None else opts
        if not _lazy(inputs):
            return self._host(lambda g: g.gather(output_lists, inputs, opts))
        with torch.no_grad():
            rows = self._gathered(inputs[0].reshape(1, -1)).unbind(0)
            if self.rank() == opts.rootRank:
                for out, row in zip(output_lists[0], rows, strict=True):
                    out.copy_(row.view(out.shape))
        _run_rooted(output_lists[0] if self.rank() == opts.rootRank else [])
        return _done(output_lists)

    def reduce(self, tensors, opts=None):
        """An all-reduce of which only the root keeps the result."""
        opts = dist.ReduceOptions() if opts is None else opts
        if not _lazy(tensors):
            return self._host(lambda g: g.reduce(tensors, opts))
        options = dist.AllreduceOptions()
        options.reduceOp = opts.reduceOp
        if self.rank() == opts.rootRank:
            work = self.allreduce(tensors, options)
            _run_rooted(tensors)
            return work
        copies = [t.clone() for t in tensors]  # the others' tensors stay as they were
        self.allreduce(copies, options)
        _run_rooted([])
        return _done(tensors)

    # Point-to-point and all-to-all: host tensors only ------------------------------------

    def _host_only(self, what: str, tensors, call):
        if _lazy(tensors):
            raise LazygenRuntimeError(
                f"lazygen: {what} of {settings.device_type} tensors is not supported (no "
                "graph node for it yet); move them to the CPU first, or use all_gather / "
                "reduce_scatter"
            )
        return call(self._eager())

    def alltoall_base(self, output, input, output_splits, input_splits, opts=None):
        opts = dist.AllToAllOptions() if opts is None else opts
        return self._host_only(
            "all_to_all_single",
            [output, input],
            lambda g: g.alltoall_base(output, input, output_splits, input_splits, opts),
        )

    def alltoall(self, outputs, inputs, opts=None):
        opts = dist.AllToAllOptions() if opts is None else opts
        return self._host_only(
            "all_to_all", [*outputs, *inputs], lambda g: g.alltoall(outputs, inputs, opts)
        )

    def send(self, tensors, dst, tag=0):
        return self._host_only("send", tensors, lambda g: g.send(tensors, dst, tag))

    def recv(self, tensors, src, tag=0):
        return self._host_only("recv", tensors, lambda g: g.recv(tensors, src, tag))

    def barrier(self, opts=None):
        """Every rank reached this point, and every graph launched before it has run (its
        collectives included). Traced but unsynced lazy work is not forced: lazy results
        are made when they are read, on every rank in the same order."""
        opts = dist.BarrierOptions() if opts is None else opts
        self._host(lambda g: g.barrier(opts))
        return _done([])


def create(options, backend_options=None) -> LazyProcessGroup:
    """c10d's creator of the ``lazygen`` backend (``extended_api``: it gets the group's
    name, which the data group's name derives from). The first one adapts FSDP2 to lazy
    tensors (``fsdp.py``) and full state dicts to ranks that read them alone
    (``state_dicts.py``): only programs with a lazy process group pay their imports."""
    fsdp.install()
    state_dicts.install()
    default = options.group_id == "0"  # c10d names the default group "0"
    peers.watch(options.store, options.group_rank, options.group_size, default)
    return LazyProcessGroup(
        options.store, options.group_rank, options.group_size, options.timeout, options.group_id
    )


def register_c10d_backend() -> None:
    """Register the lazy device's c10d backend under the device's name (``lazygen`` unless
    ``init`` named it otherwise), for the lazy device type and host tensors. Idempotent."""
    name = settings.device_type
    if name.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(name, create, extended_api=True, devices=[name, "cpu"])
