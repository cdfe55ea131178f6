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

import torch

from .. import executor
from .. import kernel_support as rt
from ..errors import LazygenRuntimeError
from ..ir import Shape
from ..tensor import LazyTensor, from_data, new_lazy
from .groups import data_group_name
from .nodes import AllGatherIntoTensor, AllReduce, Broadcast, ReduceScatterTensor

funcol = torch.ops._c10d_functional


def _collective(op, cls, input_: LazyTensor, attrs: tuple, sizes: tuple) -> LazyTensor:
    device = rt.device_of(input_)
    if not device.backend.collectives_in_graph:
        return _graph_cut(op, input_, attrs, device)
    rt.count(f"lazy::{cls.op_name}")
    shapes = (Shape(input_.dtype, sizes),)
    node = rt.make_node(cls, (rt.tensor(input_, device),), attrs, shapes)
    result = rt.wrap(node, device)
    with device.lock:  # a sync on another thread takes the list under this lock
        device.must_run.append(result)  # runs at the next sync even if this rank drops it
    return result


def _graph_cut(op, input_: LazyTensor, attrs: tuple, device) -> LazyTensor:
    """The collective outside the graph: sync its input, run it on the device data."""
    rt.count("DistributedGraphCut")
    executor.sync([input_])
    data = input_._value.node.data
    return from_data(funcol.wait_tensor(op(data, *attrs)), device)


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


def kernels() -> dict:
    """The kernel table entries (a function: torch builds without distributed support have
    no ``_c10d_functional`` ops, and lazygen must still import there)."""
    return {
        funcol.all_reduce.default: all_reduce,
        funcol.broadcast.default: broadcast,
        funcol.all_gather_into_tensor.default: all_gather_into_tensor,
        funcol.reduce_scatter_tensor.default: reduce_scatter_tensor,
        funcol.wait_tensor.default: wait_tensor,
    }
