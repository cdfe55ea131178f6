"""Lazy kernels of torch's functional collectives (``_c10d_functional::*``).

Traced on lazy tensors they record IR nodes (``nodes.py``), so a DDP step's all-reduces
run inside the step's graph when the device's backend says it can run functional
collectives (``Backend.collectives_in_graph``). Otherwise each one is a graph cut, counted
as ``DistributedGraphCut``: its input is materialised, the collective runs eagerly on the
device data with the data group (gloo / nccl), and the result is uploaded as device data.

Shapes are computed here (a collective's meta kernel would need the group): all-reduce and
broadcast keep the input's, all-gather multiplies dim 0 by the group size, reduce-scatter
divides it.
"""

from __future__ import annotations

import importlib

import torch
import torch.distributed as dist

from .. import kernel_support as rt
from ..errors import LazygenRuntimeError
from ..execution import executor
from ..ir import Shape
from ..op_registry import kind_counter, library_name
from ..tracing.tensor import LazyTensor, from_data, new_lazy
from . import peers
from .groups import data_group_name
from .nodes import AllGatherIntoTensor, AllReduce, Broadcast, ReduceScatterTensor

funcol = torch.ops._c10d_functional


def _collective(op, cls, input_: LazyTensor, attrs: tuple, sizes: tuple) -> LazyTensor:
    device = rt.device_of(input_)
    if not device.backend.collectives_in_graph:
        return _graph_cut(op, input_, attrs, device)
    rt.count(kind_counter(cls.op_name))
    shapes = (Shape(input_.dtype, sizes),)
    node = rt.make_node(cls, (rt.tensor(input_, device),), attrs, shapes)
    result = rt.wrap(node, device)
    with device.lock:  # a sync on another thread takes the list under this lock
        device.must_run.append(result)  # runs at the next sync even if this rank drops it
    return result


def _graph_cut(op, input_: LazyTensor, attrs: tuple, device) -> LazyTensor:
    """The collective outside the graph: sync its input, run it on the device data (a
    rank that died is named, as in a graph: ``peers``)."""
    rt.count("DistributedGraphCut")
    executor.sync([input_])
    data = input_._value.node.data
    try:
        result = funcol.wait_tensor(op(data, *attrs))
    except RuntimeError as error:
        explained = peers.explain(error)
        if explained is None:
            raise
        raise explained from error
    return from_data(result, device)


def all_reduce(input, reduce_op, group_name):
    attrs = (reduce_op, data_group_name(group_name))
    return _collective(funcol.all_reduce.default, AllReduce, input, attrs, input._sizes)


def broadcast(input, src, group_name):
    attrs = (src, data_group_name(group_name))
    return _collective(funcol.broadcast.default, Broadcast, input, attrs, input._sizes)


def all_gather_into_tensor(input, group_size, group_name):
    attrs = (group_size, data_group_name(group_name))
    sizes = (input._sizes[0] * group_size, *input._sizes[1:]) if input._sizes else (group_size,)
    op = funcol.all_gather_into_tensor.default
    return _collective(op, AllGatherIntoTensor, input, attrs, sizes)


def reduce_scatter_tensor(input, reduce_op, group_size, group_name):
    if not input._sizes or input._sizes[0] % group_size:
        raise LazygenRuntimeError(
            f"lazygen: reduce_scatter_tensor needs dim 0 of the input ({list(input._sizes)}) "
            f"to be a multiple of the group size {group_size}"
        )
    attrs = (reduce_op, group_size, data_group_name(group_name))
    sizes = (input._sizes[0] // group_size, *input._sizes[1:])
    op = funcol.reduce_scatter_tensor.default
    return _collective(op, ReduceScatterTensor, input, attrs, sizes)


def wait_tensor(tensor):
    """Every lazy collective waits inside its own node (or ran already, at a graph cut):
    the wait is the same value in a new tensor (functionalization wants a fresh output)."""
    return new_lazy(tensor._value, tensor._device)


def wrap_tensor_autograd(tensor):
    """funcol wraps an eager collective's result in an ``AsyncCollectiveTensor`` (waited on
    first use) through this op. A lazy collective waits inside its node, so the result is
    the value itself; wrapping a lazy tensor in that subclass broke views of it (torch's
    functionalization asserted on ``full_tensor()``'s ``view_as``)."""
    return new_lazy(tensor._value, tensor._device)


_FUNCTIONALIZATION = torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize) | (
    torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView)
)


def _through_functionalization(op):
    """The device-key kernel of a functional collective. torch runs a tensor subclass's
    ``__torch_dispatch__`` (DTensor's, on its lazy local tensors) with functionalization
    excluded, so the op would reach c10d's own kernel with lazy tensors, which no c10d
    backend holds ("No backend type associated with device type lazygen"): call it again
    with functionalization on, which brings it to the lazy kernel above."""

    def kernel(*args, **kwargs):
        if not any(torch._is_functional_tensor(a) for a in args if isinstance(a, torch.Tensor)):
            raise LazygenRuntimeError(f"lazygen: {op} reached the device without a lazy tensor")
        include = torch._C._dispatch_tls_local_include_set()
        exclude = torch._C._dispatch_tls_local_exclude_set()
        with torch._C._ForceDispatchKeyGuard(include, exclude - _FUNCTIONALIZATION):
            return op(*args, **kwargs)

    return kernel


def shard_dim_alltoall(input, gather_dim: int, shard_dim: int, group_name):
    """DTensor's ``Shard(gather_dim) -> Shard(shard_dim)`` (``_dtensor::shard_dim_alltoall``)
    on lazy tensors: an all-gather node of the graph, then this rank's chunk along
    ``shard_dim``, as DTensor computes it where the group has no all-to-all (gloo)."""
    group = dist.distributed_c10d._resolve_process_group(str(group_name))
    size, rank = group.size(), group.rank()
    include = torch._C._dispatch_tls_local_include_set()
    exclude = torch._C._dispatch_tls_local_exclude_set()
    with torch._C._ForceDispatchKeyGuard(include, exclude - _FUNCTIONALIZATION):
        gathered = funcol.all_gather_into_tensor(input.contiguous(), size, str(group_name))
        whole = torch.cat(funcol.wait_tensor(gathered).chunk(size), dim=gather_dim)
        return whole.chunk(size, dim=shard_dim)[rank].contiguous()


def register_device_kernels(device_key: str = "PrivateUse1") -> list:
    """Register ``_through_functionalization`` for every collective with a lazy kernel, and
    ``shard_dim_alltoall``; returns the libraries (a dropped library unregisters its
    kernels)."""
    library = torch.library.Library("_c10d_functional", "IMPL")
    for op in kernels():
        name = library_name(op)
        library.impl(name, _through_functionalization(op), device_key)
    dtensor = torch.library.Library("_dtensor", "IMPL")
    dtensor.impl("shard_dim_alltoall", shard_dim_alltoall, device_key)
    return [library, dtensor]


def kernels() -> dict:
    """The kernel table entries (a function: torch builds without distributed support have
    no ``_c10d_functional`` ops, and lazygen must still import there). torch defines
    ``_wrap_tensor_autograd`` in Python, in funcol's module."""
    importlib.import_module("torch.distributed._functional_collectives")
    return {
        funcol.all_reduce.default: all_reduce,
        funcol.broadcast.default: broadcast,
        funcol.all_gather_into_tensor.default: all_gather_into_tensor,
        funcol.reduce_scatter_tensor.default: reduce_scatter_tensor,
        funcol.wait_tensor.default: wait_tensor,
        funcol._wrap_tensor_autograd.default: wrap_tensor_autograd,
    }
