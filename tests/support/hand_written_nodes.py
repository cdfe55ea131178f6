"""IR nodes and kernels written by hand in the generated style (docs/architecture.md), to
exercise the lowering path before the generator exists."""

from __future__ import annotations

import torch

from lazygen.runtime import kernel_support as rt
from lazygen.runtime.ir import Node

aten = torch.ops.aten


class AddTensor(Node):
    """aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""

    __slots__ = ()
    op_kind = "aten::add"
    op_name = "add.Tensor"
    schema = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"

    def lower(self, ctx):
        self_, other, alpha = self.operands
        return ctx.call(
            "aten::add.Tensor",
            [ctx.tensor(self_), ctx.tensor(other)],
            {"alpha": ctx.scalar(alpha)},
            1,
        )


class MulTensor(Node):
    __slots__ = ()
    op_kind = "aten::mul"
    op_name = "mul.Tensor"
    schema = "mul.Tensor(Tensor self, Tensor other) -> Tensor"

    def lower(self, ctx):
        self_, other = self.operands
        return ctx.call("aten::mul.Tensor", [ctx.tensor(self_), ctx.tensor(other)], {}, 1)


class MulScalar(Node):
    __slots__ = ()
    op_kind = "aten::mul"
    op_name = "mul.Scalar"
    schema = "mul.Scalar(Tensor self, Scalar other) -> Tensor"

    def lower(self, ctx):
        self_, other = self.operands
        return ctx.call("aten::mul.Scalar", [ctx.tensor(self_), ctx.scalar(other)], {}, 1)


class Relu(Node):
    __slots__ = ()
    op_kind = "aten::relu"
    op_name = "relu"
    schema = "relu(Tensor self) -> Tensor"

    def lower(self, ctx):
        (self_,) = self.operands
        return ctx.call("aten::relu", [ctx.tensor(self_)], {}, 1)


class Mm(Node):
    __slots__ = ()
    op_kind = "aten::mm"
    op_name = "mm"
    schema = "mm(Tensor self, Tensor mat2) -> Tensor"

    def lower(self, ctx):
        self_, mat2 = self.operands
        return ctx.call("aten::mm", [ctx.tensor(self_), ctx.tensor(mat2)], {}, 1)


class Sum(Node):
    __slots__ = ()
    op_kind = "aten::sum"
    op_name = "sum"
    schema = "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"

    def lower(self, ctx):
        (self_,) = self.operands
        (dtype,) = self.attrs
        return ctx.call("aten::sum", [ctx.tensor(self_)], {"dtype": ctx.constant(dtype)}, 1)


class MaxDim(Node):
    __slots__ = ()
    op_kind = "aten::max"
    op_name = "max.dim"
    schema = "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"

    def lower(self, ctx):
        (self_,) = self.operands
        dim, keepdim = self.attrs
        return ctx.call(
            "aten::max.dim", [ctx.tensor(self_), ctx.constant(dim), ctx.constant(keepdim)], {}, 2
        )


class Cat(Node):
    __slots__ = ()
    op_kind = "aten::cat"
    op_name = "cat"
    schema = "cat(Tensor[] tensors, int dim=0) -> Tensor"

    def lower(self, ctx):
        (tensors,) = self.operands
        (dim,) = self.attrs
        return ctx.call("aten::cat", [ctx.tensor_list(tensors), ctx.constant(dim)], {}, 1)


class SplitCopyTensor(Node):
    __slots__ = ()
    op_kind = "aten::split_copy"
    op_name = "split_copy.Tensor"
    schema = "split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]"

    def lower(self, ctx):
        (self_,) = self.operands
        split_size, dim = self.attrs
        (parts,) = ctx.call(
            "aten::split.Tensor",
            [ctx.tensor(self_), ctx.constant(split_size), ctx.constant(dim)],
            {},
            1,
        )
        return ctx.unpack_list(parts, len(self.shapes))


def add_tensor(self, other, *, alpha=1):
    rt.count("lazy::add.Tensor")
    device = rt.device_of(self, other)
    operands = (rt.tensor(self, device), rt.tensor(other, device), rt.scalar(alpha, device))
    shapes = rt.infer_shapes(aten.add.Tensor, (self, other), {"alpha": alpha})
    return rt.wrap(rt.make_node(AddTensor, operands, (), shapes), device)


def mul_tensor(self, other):
    rt.count("lazy::mul.Tensor")
    device = rt.device_of(self, other)
    operands = (rt.tensor(self, device), rt.tensor(other, device))
    shapes = rt.infer_shapes(aten.mul.Tensor, (self, other), {})
    return rt.wrap(rt.make_node(MulTensor, operands, (), shapes), device)


def mul_scalar(self, other):
    rt.count("lazy::mul.Scalar")
    device = rt.device_of(self)
    operands = (rt.tensor(self, device), rt.scalar(other, device))
    shapes = rt.infer_shapes(aten.mul.Scalar, (self, other), {})
    return rt.wrap(rt.make_node(MulScalar, operands, (), shapes), device)


def relu(self):
    rt.count("lazy::relu")
    device = rt.device_of(self)
    shapes = rt.infer_shapes(aten.relu.default, (self,), {})
    return rt.wrap(rt.make_node(Relu, (rt.tensor(self, device),), (), shapes), device)


def mm(self, mat2):
    rt.count("lazy::mm")
    device = rt.device_of(self, mat2)
    operands = (rt.tensor(self, device), rt.tensor(mat2, device))
    shapes = rt.infer_shapes(aten.mm.default, (self, mat2), {})
    return rt.wrap(rt.make_node(Mm, operands, (), shapes), device)


def sum(self, *, dtype=None):
    rt.count("lazy::sum")
    device = rt.device_of(self)
    shapes = rt.infer_shapes(aten.sum.default, (self,), {"dtype": dtype})
    return rt.wrap(rt.make_node(Sum, (rt.tensor(self, device),), (dtype,), shapes), device)


def max_dim(self, dim, keepdim=False):
    rt.count("lazy::max.dim")
    device = rt.device_of(self)
    shapes = rt.infer_shapes(aten.max.dim, (self, dim, keepdim), {})
    node = rt.make_node(MaxDim, (rt.tensor(self, device),), (dim, keepdim), shapes)
    return rt.wrap_tuple(node, device)


def cat(tensors, dim=0):
    rt.count("lazy::cat")
    device = rt.device_of(tensors)
    shapes = rt.infer_shapes(aten.cat.default, (tensors, dim), {})
    return rt.wrap(rt.make_node(Cat, (rt.tensor_list(tensors, device),), (dim,), shapes), device)


def split_copy_tensor(self, split_size, dim=0):
    rt.count("lazy::split_copy.Tensor")
    device = rt.device_of(self)
    shapes = rt.infer_shapes(aten.split_copy.Tensor, (self, split_size, dim), {})
    node = rt.make_node(SplitCopyTensor, (rt.tensor(self, device),), (split_size, dim), shapes)
    return rt.wrap_list(node, device)


class FaultyNeg(Node):
    """``neg`` whose lowering can be told to raise, or to build a graph that fails to run."""

    __slots__ = ()
    op_kind = "aten::neg"
    op_name = "neg"
    schema = "neg(Tensor self) -> Tensor"
    mode = "ok"  # "ok" | "lowering" | "execution"

    def lower(self, ctx):
        (self_,) = self.operands
        if FaultyNeg.mode == "lowering":
            raise ValueError("injected lowering failure")
        if FaultyNeg.mode == "execution":  # [n] @ [n] as matrices: fails when run
            return ctx.call("aten::mm", [ctx.tensor(self_), ctx.tensor(self_)], {}, 1)
        return ctx.call("aten::neg", [ctx.tensor(self_)], {}, 1)


def faulty_neg(self):
    device = rt.device_of(self)
    shapes = rt.infer_shapes(aten.neg.default, (self,), {})
    return rt.wrap(rt.make_node(FaultyNeg, (rt.tensor(self, device),), (), shapes), device)


KERNELS = {
    aten.add.Tensor: add_tensor,
    aten.mul.Tensor: mul_tensor,
    aten.mul.Scalar: mul_scalar,
    aten.relu.default: relu,
    aten.mm.default: mm,
    aten.sum.default: sum,
    aten.max.dim: max_dim,
    aten.cat.default: cat,
    aten.split_copy.Tensor: split_copy_tensor,
}
NODE_CLASSES = {
    cls.op_name: cls
    for cls in (AddTensor, MulTensor, MulScalar, Relu, Mm, Sum, MaxDim, Cat, SplitCopyTensor)
}
