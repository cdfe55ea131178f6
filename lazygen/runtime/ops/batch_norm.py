"""``native_batch_norm`` in training mode: the running statistics' update, for every backend.

The aten op updates ``running_mean``/``running_var`` in place although its schema does not
say so, so functionalization cannot see the update: a kernel that only records the op
(any op list's generated ``native_batch_norm``: PyTorch's, torch-mlir's, lazygen's own)
would leave the statistics' lazy tensors on their old values, and a graph would mutate
its input data, which two batch norms sharing statistics in one step then read in an
order nobody chose. ``with_running_stats_update`` wraps whichever kernel a backend
registers for the op (``KERNEL_WRAPPERS``, applied by ``dispatch``): in training mode with
lazy running statistics it records one ``NativeBatchNormUpdate`` node whose outputs 3 and 4
are the new statistics, and points the statistics' lazy tensors at them.
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from .. import kernel_support as rt
from ..ir import Node, Shape
from ..tracing.tensor import LazyTensor

aten = torch.ops.aten


class NativeBatchNormUpdate(Node):
    """``native_batch_norm`` in training mode, with the updated running statistics as
    outputs 3 and 4: the functional form of the op."""

    __slots__ = ()
    op_kind = "aten::native_batch_norm"
    op_name = "native_batch_norm"
    schema = (
        "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
        "Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, "
        "Tensor, Tensor running_mean_out, Tensor running_var_out)"
    )

    def lower(self, ctx):
        input_, weight, bias, running_mean, running_var = self.operands
        momentum, eps = self.attrs
        args = [ctx.tensor(input_), ctx.optional_tensor(weight), ctx.optional_tensor(bias)]
        args += [ctx.tensor(running_mean), ctx.tensor(running_var)]
        args += [ctx.constant(True), ctx.constant(momentum), ctx.constant(eps)]
        return ctx.call("aten::_native_batch_norm_legit_functional", args, {}, 5)


def with_running_stats_update(kernel):
    """Wrap a ``native_batch_norm`` kernel: in training mode with running statistics, the
    statistics' lazy tensors are pointed at their updated values, as eager updates them."""

    def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
        if (
            not training
            or type(running_mean) is not LazyTensor
            or type(running_var) is not LazyTensor
        ):
            return kernel(input, weight, bias, running_mean, running_var, training, momentum, eps)
        rt.count("lazy::native_batch_norm")
        device = rt.device_of(input)
        operands = (
            rt.tensor(input, device),
            rt.optional_tensor(weight, device),
            rt.optional_tensor(bias, device),
            rt.tensor(running_mean, device),
            rt.tensor(running_var, device),
        )
        shapes = rt.infer_shapes(
            aten.native_batch_norm.default,
            (input, weight, bias, running_mean, running_var, training, momentum, eps),
            {},
        )
        shapes += (
            Shape(running_mean.dtype, running_mean._sizes),
            Shape(running_var.dtype, running_var._sizes),
        )
        node = rt.make_node(NativeBatchNormUpdate, operands, (momentum, eps), shapes)
        out, mean, invstd, new_mean, new_var = rt.wrap_tuple(node, device)
        running_mean._value = new_mean._value
        running_var._value = new_var._value
        return out, mean, invstd

    return native_batch_norm


#: Wrappers ``dispatch`` puts around the kernel any backend's tables bring for the op.
KERNEL_WRAPPERS = MappingProxyType({aten.native_batch_norm.default: with_running_stats_update})
