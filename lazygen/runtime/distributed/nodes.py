"""IR nodes of collectives: torch's functional collectives (``_c10d_functional::*``) as
nodes of the step's graph.

Each node lowers, through the backend-neutral ``LoweringContext``, to the functional
collective followed by its ``wait_tensor``: the graph's result is the reduced tensor, and a
backend that can run ``_c10d_functional`` ops (TorchScript can: they are ordinary
registered operators) runs the collective inside the graph instead of cutting it. The
group attribute names a c10d process group of the *data* device (gloo for CPU data, nccl
for CUDA), registered by name so the op can find it from any thread without Python.
"""

from __future__ import annotations

from ..ir import Node


def _waited(ctx, results: list) -> list:
    """The functional collective's result after ``wait_tensor`` (required by c10d before any
    use: the op only enqueues the work)."""
    return ctx.call("_c10d_functional::wait_tensor", results, {}, 1)


class AllReduce(Node):
    """_c10d_functional::all_reduce, then wait_tensor."""

    __slots__ = ()
    op_kind = "_c10d_functional::all_reduce"
    op_name = "all_reduce"
    schema = "all_reduce(Tensor input, str reduce_op, Any group_name) -> Tensor"

    def lower(self, ctx):
        (input_,) = self.operands
        reduce_op, group_name = self.attrs
        args = [ctx.tensor(input_), ctx.constant(reduce_op), ctx.constant(group_name)]
        return _waited(ctx, ctx.call("_c10d_functional::all_reduce", args, {}, 1))


class AllGatherIntoTensor(Node):
    """_c10d_functional::all_gather_into_tensor, then wait_tensor."""

    __slots__ = ()
    op_kind = "_c10d_functional::all_gather_into_tensor"
    op_name = "all_gather_into_tensor"
    schema = "all_gather_into_tensor(Tensor input, int group_size, Any group_name) -> Tensor"

    def lower(self, ctx):
        (input_,) = self.operands
        group_size, group_name = self.attrs
        args = [ctx.tensor(input_), ctx.constant(group_size), ctx.constant(group_name)]
        return _waited(ctx, ctx.call("_c10d_functional::all_gather_into_tensor", args, {}, 1))


class ReduceScatterTensor(Node):
    """_c10d_functional::reduce_scatter_tensor, then wait_tensor."""

    __slots__ = ()
    op_kind = "_c10d_functional::reduce_scatter_tensor"
    op_name = "reduce_scatter_tensor"
    schema = (
        "reduce_scatter_tensor(Tensor input, str reduce_op, int group_size, Any group_name)"
        " -> Tensor"
    )

    def lower(self, ctx):
        (input_,) = self.operands
        reduce_op, group_size, group_name = self.attrs
        args = [ctx.tensor(input_), ctx.constant(reduce_op), ctx.constant(group_size)]
        args.append(ctx.constant(group_name))
        return _waited(ctx, ctx.call("_c10d_functional::reduce_scatter_tensor", args, {}, 1))


class Broadcast(Node):
    """_c10d_functional::broadcast, then wait_tensor."""

    __slots__ = ()
    op_kind = "_c10d_functional::broadcast"
    op_name = "broadcast"
    schema = "broadcast(Tensor input, int src, Any group_name) -> Tensor"

    def lower(self, ctx):
        (input_,) = self.operands
        src, group_name = self.attrs
        args = [ctx.tensor(input_), ctx.constant(src), ctx.constant(group_name)]
        return _waited(ctx, ctx.call("_c10d_functional::broadcast", args, {}, 1))
